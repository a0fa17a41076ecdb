"""zsh: the bash escaping and statements; its own hook (chpwd + precmd)."""

from ctxd.shells.bash import Bash


class Zsh(Bash):
    name = "zsh"
    template = "ctxd.zsh"
