"""The state ctxd keeps in the shell's own environment.

``CTXD_STATE`` holds what the last activation changed: for every variable the
value it had before (the snapshot) and the value ctxd gave it, plus the PATH
entries ctxd added. It is JSON -> zlib -> urlsafe base64 (like direnv's
DIRENV_DIFF): one opaque token, per shell, inherited by subshells, no daemon.
(JSON through ctxd.activation.minijson and base64 through binascii: the
json and base64 modules would cost the hot path ~10 ms of imports.)

``CTXD_WATCH`` is plain text the hooks read without starting a process: a
stamp file whose mtime is the newest watched mtime, a recheck flag, then one
watched path a line prefixed with ``+`` (existed) or ``-`` (did not).
"""

import binascii
import zlib

from ctxd.activation import minijson

from ctxd.errors import StateError

VERSION = 1
STATE_VAR = "CTXD_STATE"
WATCH_VAR = "CTXD_WATCH"


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


_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


def _sorted(obj):
    if isinstance(obj, dict):
        return {k: _sorted(obj[k]) for k in sorted(obj)}
    if isinstance(obj, list):
        return [_sorted(v) for v in obj]
    return obj


def encode(state):
    raw = minijson.dumps(_sorted(state.to_json())).encode("ascii")
    return binascii.b2a_base64(zlib.compress(raw, 9), newline=False).translate(_TO_URLSAFE).decode("ascii")


def decode(token):
    """Parse a CTXD_STATE value; raise StateError when it is not one of ours."""
    try:
        raw = token.encode("ascii").translate(_FROM_URLSAFE)
        data = minijson.loads(zlib.decompress(binascii.a2b_base64(raw)).decode("utf-8"))
    except (ValueError, zlib.error, UnicodeError, binascii.Error, RecursionError) as e:
        raise StateError(f"{STATE_VAR} is corrupt ({e.__class__.__name__})") from None
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
