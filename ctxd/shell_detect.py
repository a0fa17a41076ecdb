"""Which shell ctxd runs under: for `ctxd hook`, `ctxd setup`, `ctxd completion`.

Kept out of ctxd/shells/ on purpose: that package is on the hot path and must
not import shellingham (its process-tree walk costs milliseconds).
"""

import os

from ctxd.errors import UsageError
from ctxd.shells import ALIASES, SUPPORTED


def detect_shell():
    """The shell ctxd runs under (shellingham), or a UsageError saying so."""
    import shellingham

    try:
        name, _path = shellingham.detect_shell()
    except shellingham.ShellDetectionFailure:
        name = os.path.basename(os.environ.get("SHELL", ""))
        if not name:
            raise UsageError(f"cannot detect the shell; name it: ctxd hook {'|'.join(SUPPORTED)}") from None
    name = os.path.basename(name).lstrip("-")
    name = ALIASES.get(name, name)
    if name not in SUPPORTED:
        raise UsageError(f"unsupported shell {name!r}; name one: ctxd hook {'|'.join(SUPPORTED)}")
    return name
