"""Per-shell code generation: hook text, environment changes, escaping.

One small stateless object per shell. Importing this package is cheap; the
shell modules are loaded on demand.
"""

from ctxd.errors import UsageError

SUPPORTED = ("bash", "zsh", "fish", "tcsh", "elvish", "xonsh", "nu")


def get_shell(name):
    if name == "bash":
        from ctxd.shells.bash import Bash

        return Bash()
    if name == "zsh":
        from ctxd.shells.zsh import Zsh

        return Zsh()
    if name == "fish":
        from ctxd.shells.fish import Fish

        return Fish()
    if name == "tcsh":
        from ctxd.shells.tcsh import Tcsh

        return Tcsh()
    if name == "elvish":
        from ctxd.shells.elvish import Elvish

        return Elvish()
    if name == "xonsh":
        from ctxd.shells.xonsh import Xonsh

        return Xonsh()
    if name in ("nu", "nushell"):
        from ctxd.shells.nu import Nu

        return Nu()
    raise UsageError(f"unsupported shell {name!r} (supported: {', '.join(SUPPORTED)})")
