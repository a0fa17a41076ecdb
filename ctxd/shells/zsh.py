"""zsh: the bash escaping and statements; its own hook (chpwd + precmd)."""

import os

from ctxd.shells.base import check_name
from ctxd.shells.bash import Bash


class Zsh(Bash):
    name = "zsh"
    # zsh's special parameters (zshparam(1), zsh/parameter, and the modules an interactive
    # zsh often loads: datetime, mapfile, system, terminfo, zle) that an `export NAME=value`
    # cannot simply set: arrays and hashes stop the whole eval ("inconsistent type for
    # assignment"), read-only ones too; the integer ones evaluate the value as arithmetic
    # (UID=0 calls setuid) and the dynamic ones override it; IFS would change how the hook
    # splits words. The special scalars (HOME, LANG, TERM, PS1, FPATH, MANPATH ...) are plain
    # variables to set and not listed; PATH is ctxd's own.
    reserved = frozenset(
        "ARGC COLUMNS EGID EUID FUNCNEST GID HISTCMD HISTSIZE IFS KEYBOARD_HACK LINENO LINES OPTIND PPID "
        "RANDOM SAVEHIST SECONDS SHLVL TRY_BLOCK_ERROR TRY_BLOCK_INTERRUPT TTYIDLE UID USERNAME "
        "ZSH_EVAL_CONTEXT ZSH_SUBSHELL _ aliases argv builtins cdpath commands dirstack dis_aliases "
        "dis_builtins dis_functions dis_functions_source dis_galiases dis_patchars dis_reswords dis_saliases "
        "fignore fpath funcfiletrace funcsourcetrace funcstack functions functions_source functrace galiases "
        "history historywords jobdirs jobstates jobtexts keymaps mailpath manpath module_path modules "
        "nameddirs options parameters patchars path pipestatus psvar reswords saliases status termcap "
        "terminfo userdirs usergroups watch widgets zsh_eval_context zsh_scheduled_events "
        "EPOCHREALTIME EPOCHSECONDS epochtime mapfile sysparams errnos".split())
    template = "ctxd.zsh"
    rc_file = "~/.zshrc"
    startup_files = (".zshrc", ".zprofile", ".zshenv", ".zlogin")

    def rc_candidates(self, environ):
        zdot = environ.get("ZDOTDIR") or self.home(environ)
        return [os.path.join(zdot, f) for f in self.startup_files]

    def set_flag(self, name, value):
        check_name(name)
        return f"\\builtin typeset -g {name}={self.quote(value)}"
