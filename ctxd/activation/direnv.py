"""Living next to direnv in the same shell (issue 13, item 2).

direnv keeps what it changed in ``DIRENV_DIFF``: JSON ``{"p": previous,
"n": next}`` -> zlib -> URL-safe base64 (with padding), the same shape as
ctxd's own state. On unload (and before every reload) direnv deletes the keys
of ``n`` and puts back the values of ``p`` verbatim: it does not merge, so a
PATH that held ctxd's entries when direnv loaded comes back with them, even
after ctxd removed them (``.venv/bin`` on PATH with ``VIRTUAL_ENV`` unset).

ctxd never edits what direnv changed (direnv's changes are the user's own
changes to ctxd). When ctxd undoes an activation it applies the same undo to
direnv's snapshot ``p``: its PATH entries leave ``p``'s PATH, and a variable
``p`` holds with ctxd's value gets the value it had before ctxd. Whatever the
order the two hooks run in, direnv's revert then lands on the environment
without ctxd. Only keys ``p`` already has are touched, so direnv reverts
nothing it did not change itself.

The other half lives in the shell hooks: a changed ``DIRENV_DIFF`` makes the
hook ask ctxd again (a direnv reload reverts PATH to its snapshot, which may
predate ctxd's entries; ctxd then puts them back), and the shell-side fast
leave is not used while direnv has a diff (it cannot rewrite this one).
"""

import binascii
import zlib

from ctxd.fastpath import minijson

VAR = "DIRENV_DIFF"
PATH = "PATH"

_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


def decode(token):
    """The diff as {"p": {...}, "n": {...}}, or None when it is not one direnv wrote."""
    try:
        raw = token.encode("ascii").translate(_FROM_URLSAFE)
        raw += b"=" * (-len(raw) % 4)  # Go's URLEncoding pads; be lenient anyway
        data = minijson.loads(zlib.decompress(binascii.a2b_base64(raw)).decode("utf-8"))
    except (ValueError, zlib.error, UnicodeError, binascii.Error, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    for key in ("p", "n"):
        part = data.get(key)
        if part is None:
            data[key] = {}
        elif not (isinstance(part, dict) and all(isinstance(v, str) for v in part.values())):
            return None
    return data


def encode(data):
    raw = minijson.dumps(data).encode("ascii")
    return binascii.b2a_base64(zlib.compress(raw), newline=False).translate(_TO_URLSAFE).decode("ascii")


def scrub(token, state, keep_path=()):
    """*token* with ctxd's activation *state* undone in direnv's snapshot.

    Returns the new DIRENV_DIFF value, or None when there is nothing to change
    (no state, a diff that is not direnv's, or a snapshot ctxd is not in).
    Entries in *keep_path* stay (ctxd re-activates the same root and keeps
    them where they are, in the shell's PATH as in direnv's snapshot).
    """
    if not token or state is None:
        return None
    data = decode(token)
    if data is None:
        return None
    prev = data["p"]
    changed = False
    for name, old in state.snap.items():
        if name == PATH or name not in prev:
            continue
        if prev[name] == state.ours.get(name):
            if old is None:
                del prev[name]  # direnv's revert deletes the keys of "n", restores those of "p"
            else:
                prev[name] = old
            changed = True
    if PATH in prev and state.path_added:
        drop = [e for e in state.path_added if e not in keep_path]
        entries = prev[PATH].split(":") if prev[PATH] else []
        kept = list(entries)
        for e in drop:
            if e in kept:
                kept.remove(e)  # once, like envdiff.remove_once: a copy the user made survives
        if kept != entries:
            prev[PATH] = ":".join(kept)
            changed = True
    return encode(data) if changed else None
