"""zsh: the bash escaping and statements; its own hook (chpwd + precmd)."""

from ctxd.shells.bash import Bash


class Zsh(Bash):
    name = "zsh"
    template = "ctxd.zsh"

    def set_flag(self, name, value):
        from ctxd.shells.base import check_name

        check_name(name)
        return f"typeset -g {name}={self.quote(value)}"
