"""Per-shell code generation: hook text, environment changes, escaping.

One small stateless object per shell. Importing this package is cheap; the
shell modules are loaded on demand.
"""

from ctxd.errors import UsageError

SUPPORTED = ("bash", "zsh", "fish", "tcsh", "elvish", "xonsh", "nu")
ALIASES = {"nushell": "nu"}
_CLASSES = {"bash": ("bash", "Bash"), "zsh": ("zsh", "Zsh"), "fish": ("fish", "Fish"), "tcsh": ("tcsh", "Tcsh"),
            "elvish": ("elvish", "Elvish"), "xonsh": ("xonsh", "Xonsh"), "nu": ("nu", "Nu")}


def get_shell(name):
    """The Shell object for *name* (its module imported only now: the hook path loads one)."""
    where = _CLASSES.get(ALIASES.get(name, name))
    if where is None:
        raise UsageError(f"unsupported shell {name!r} (supported: {', '.join(SUPPORTED)})")
    module = __import__(f"ctxd.shells.{where[0]}", fromlist=[where[1]])
    return getattr(module, where[1])()
