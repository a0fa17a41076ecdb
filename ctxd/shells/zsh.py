"""zsh: the bash escaping and statements; its own hook (chpwd + precmd)."""

import os

from ctxd.shells.base import check_name
from ctxd.shells.bash import Bash


class Zsh(Bash):
    name = "zsh"
    template = "ctxd.zsh"
    rc_file = "~/.zshrc"
    startup_files = (".zshrc", ".zprofile", ".zshenv", ".zlogin")

    def rc_candidates(self, environ):
        zdot = environ.get("ZDOTDIR") or self.home(environ)
        return [os.path.join(zdot, f) for f in self.startup_files]

    def set_flag(self, name, value):
        check_name(name)
        return f"\\builtin typeset -g {name}={self.quote(value)}"
