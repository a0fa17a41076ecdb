"""The state ctxd keeps in the shell's own environment.

``CTXD_STATE`` holds what the last activation changed: for every variable the
value it had before (the snapshot) and the value ctxd gave it, plus the PATH
entries ctxd added: one token, per shell, inherited by subshells, no daemon.
The token is compact ASCII JSON (ctxd.fastpath.minijson; the json module
would cost the hot path ~10 ms of imports). Earlier versions wrote JSON ->
zlib -> urlsafe base64 like direnv's DIRENV_DIFF; such a token (a shell
started before an upgrade) still decodes, but zlib and binascii are extension
modules (binascii loads libz) that cost every cd ~1 ms to load, to save a
fifth of a token of a few hundred bytes. A JSON token starts with ``{``; a
compressed one never does. Above COMPRESS_ABOVE (4 KB: a project setting
thousands of variables) encode() still compresses, since one environment
string longer than 128 KiB makes every command in the shell fail (E2BIG).
Fields at their defaults are left out.

``CTXD_WATCH`` is plain text the hooks read without starting a process: a
stamp file whose mtime is the newest watched mtime, a recheck flag, then one
watched path a line prefixed with ``+`` (existed) or ``-`` (did not).
"""

from ctxd.fastpath import minijson

from ctxd.errors import StateError

VERSION = 1
STATE_VAR = "CTXD_STATE"
WATCH_VAR = "CTXD_WATCH"
TOLD_VAR = "_CTXD_PINS_TOLD"  # the version pins reported missing in this shell session (see pins.py)


class State:
    __slots__ = ("root", "snap", "ours", "path_added", "path_was_unset", "shown", "leave", "enter_sig")

    def __init__(self, root=None, snap=None, ours=None, path_added=None, path_was_unset=False,
                 shown=None, leave=None, enter_sig=""):
        self.root = root
        self.snap = snap or {}  # name -> value before ctxd touched it (None: was unset)
        self.ours = ours or {}  # name -> value ctxd set (None: ctxd unset it)
        self.path_added = path_added or []  # PATH entries ctxd put in front
        self.path_was_unset = path_was_unset
        self.shown = shown or []  # notices already shown for this root (not repeated)
        self.leave = leave or {}  # trusted on_leave hooks: {"cmds", "timeout", "cwd"}
        self.enter_sig = enter_sig  # which on_enter commands already ran here

    def to_json(self):
        return {
            "v": VERSION,
            "root": self.root,
            "snap": self.snap,
            "ours": self.ours,
            "path": self.path_added,
            "path_unset": self.path_was_unset,
            "shown": self.shown,
            "leave": self.leave,
            "enter": self.enter_sig,
        }

    def __eq__(self, other):
        return isinstance(other, State) and self.to_json() == other.to_json()


_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")
_DEFAULTS = (("path_unset", False), ("shown", []), ("leave", {}), ("enter", ""))


def _sorted(obj):
    if isinstance(obj, dict):
        return {k: _sorted(obj[k]) for k in sorted(obj)}
    if isinstance(obj, list):
        return [_sorted(v) for v in obj]
    return obj


# Above this size the token is compressed after all (the zlib + base64 form decode() reads):
# Linux refuses to start any program whose environment holds a string longer than
# 128 KiB (MAX_ARG_STRLEN, E2BIG), so a project setting thousands of variables would
# otherwise make every command in the shell fail. Small tokens, the usual case, stay JSON.
COMPRESS_ABOVE = 4096
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")


def encode(state):
    """The CTXD_STATE value for *state*: one line of ASCII JSON (keys sorted), or the
    compressed form when that is longer than COMPRESS_ABOVE."""
    data = state.to_json()
    for key, default in _DEFAULTS:
        if data[key] == default:
            del data[key]  # decode() reads a missing one as its default
    text = minijson.dumps(_sorted(data))
    if len(text) <= COMPRESS_ABOVE:
        return text
    import binascii
    import zlib

    packed = binascii.b2a_base64(zlib.compress(text.encode("ascii"), 9), newline=False)
    return packed.translate(_TO_URLSAFE).decode("ascii")


def _legacy_json(token):
    """The JSON text of a token an earlier ctxd wrote (zlib + urlsafe base64)."""
    import binascii
    import zlib

    try:
        raw = token.encode("ascii").translate(_FROM_URLSAFE)
        return zlib.decompress(binascii.a2b_base64(raw)).decode("utf-8")
    except (zlib.error, binascii.Error) as e:
        raise _Undecodable(e.__class__.__name__) from None


class _Undecodable(ValueError):
    """A compressed token that is not base64 or not zlib (args[0]: which error said so)."""


def decode(token):
    """Parse a CTXD_STATE value; raise StateError when it is not one of ours."""
    try:
        data = minijson.loads(token if token.startswith("{") else _legacy_json(token))
    except (ValueError, UnicodeError, RecursionError) as e:
        what = e.args[0] if isinstance(e, _Undecodable) else e.__class__.__name__
        raise StateError(f"{STATE_VAR} is corrupt ({what})") from None
    if not isinstance(data, dict) or data.get("v") != VERSION:
        raise StateError(f"{STATE_VAR} has an unknown format")
    snap, ours, path = data.get("snap"), data.get("ours"), data.get("path")
    ok = (
        isinstance(snap, dict)
        and isinstance(ours, dict)
        and isinstance(path, list)
        and all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in snap.items())
        and all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in ours.items())
        and all(isinstance(p, str) for p in path)
        and (data.get("root") is None or isinstance(data.get("root"), str))
    )
    if not ok:
        raise StateError(f"{STATE_VAR} has an unknown format")
    shown, leave, enter = data.get("shown", []), data.get("leave", {}), data.get("enter", "")
    if not (isinstance(shown, list) and all(isinstance(x, str) for x in shown)
            and isinstance(leave, dict) and isinstance(enter, str)):
        raise StateError(f"{STATE_VAR} has an unknown format")
    return State(data.get("root"), snap, ours, path, bool(data.get("path_unset")), shown, leave, enter)
