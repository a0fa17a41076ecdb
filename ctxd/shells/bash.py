"""bash: ``$'...'`` quoting (one line of ASCII that round-trips any bytes).

Everything printed here runs on bash 3.2 (macOS /bin/bash) as well as 5.x.
"""

import os

from ctxd.shells.base import Shell, check_name, check_value, to_bytes

_PLAIN = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./:,+@%=")


_PLAIN_BYTES = bytes(sorted(_PLAIN))
_PLAIN_TEXT = _PLAIN_BYTES.decode("ascii")


def _escapes(text):
    """For str.translate over the latin-1 decoding of a value (the loop runs in C, ~20x a
    Python loop): each character of *text* that cannot stay as is inside $'...' (all but
    printable ASCII other than ' and backslash) -> \\xHH. Only those *text* holds: a table
    of all 256 would cost every cd more than the few it quotes."""
    return {o: "\\x%02x" % o for o in map(ord, set(text)) if not 0x20 <= o < 0x7F or o in (0x27, 0x5C)}


def ansi_c_quote(value, always=False):
    if value.isascii() and value.isprintable() and "'" not in value and "\\" not in value:
        # printable ASCII but ' and backslash: the same inside $'...' (the usual path or name)
        if always or not value or value[0] in "=%" or ":=" in value or value.strip(_PLAIN_TEXT):
            return "$'" + value + "'"
        return value
    data = to_bytes(value)
    # zsh expands "=cmd" at the start of an assignment's value and after any ":"
    # in it (export X=a:=ls gives a:/usr/bin/ls), so those stay quoted
    if (not always and data and not data.translate(None, _PLAIN_BYTES) and data[0] not in b"=%"
            and b":=" not in data):
        return value  # nothing in it means anything to the shell
    text = data.decode("latin-1")
    table = _escapes(text)
    if len(table) > 6:
        return "$'" + text.translate(table) + "'"
    # a few kinds (the newlines of CTXD_WATCH; the quotes of a replay test): one C scan each
    # beats translate's lookup per character. Backslash first: the others' \xHH adds some.
    for o in sorted(table, key=lambda o: o != 0x5C):
        text = text.replace(chr(o), table[o])
    return "$'" + text + "'"


class Bash(Shell):
    name = "bash"
    # read-only ones fail (`UID: readonly variable`); the dynamic ones ignore or override
    # the value; IFS would change how the hook itself splits words
    reserved = frozenset(
        "BASHOPTS BASH_VERSINFO EUID PPID SHELLOPTS UID BASHPID BASH_ALIASES BASH_ARGC BASH_ARGV "
        "BASH_ARGV0 BASH_CMDS BASH_COMMAND BASH_LINENO BASH_REMATCH BASH_SOURCE BASH_SUBSHELL "
        "DIRSTACK EPOCHREALTIME EPOCHSECONDS FUNCNAME GROUPS HISTCMD IFS LINENO OPTIND PIPESTATUS "
        "RANDOM SECONDS SRANDOM _".split())
    template = "ctxd.bash"
    restore_fn = "_ctxd_restore"
    fast_leave_var = "_ctxd_fast_leave"
    hook_fn = "_ctxd_hook"
    rc_file = "~/.bashrc"
    hook_cache = True
    revisit_var = "_ctxd_revisit_ok"
    startup_files = (".bashrc", ".bash_profile", ".bash_login", ".profile")

    def rc_candidates(self, environ):
        return [os.path.join(self.home(environ), f) for f in self.startup_files]

    def rc_text(self, ctxd_path, hook_file=None):
        # the start-up copy of the hook first (no process; it returns 1 when
        # ctxd changed since it was written), then the console script on PATH
        # (whatever the user installed last; it writes the copy again), then
        # the absolute path `ctxd setup` saw: a login shell sources the rc
        # file before ~/.local/bin is on PATH; a missing one prints nothing
        alt = ""
        if ctxd_path:
            p = self.home_relative(ctxd_path)
            alt = f" || {{ [ -x {p} ] && {p} hook {self.name}; }}"
        first = ""
        if hook_file:
            f = self.home_relative(hook_file)
            first = f"if [ -r {f} ] && . {f}; then :\nel"
        return (f"{first}if _ctxd_h=$({{ command -v ctxd >/dev/null && ctxd hook {self.name}; }}{alt}); then\n"
                '  eval "$_ctxd_h"\n'
                "else\n"
                f"  {self.drop_inherited_command()}\n"
                "fi\nunset _ctxd_h\n")

    def drop_inherited_command(self):
        """Without ctxd (gone, or not on PATH) in a shell that inherited a
        project's environment: drop what ctxd set there, as far as the shell
        can tell without ctxd (CTXD_STATE cannot be read): the VIRTUAL_ENV and
        PATH entries inside CTXD_ROOT, ctxd's own variables, and its state."""
        return ('unset _CTXD_HOOK; [ -z "${CTXD_STATE-}" ] || { '
                'if [ -n "${CTXD_ROOT-}" ]; then '
                'case ${VIRTUAL_ENV-} in "$CTXD_ROOT"/*) unset VIRTUAL_ENV;; esac; '
                '_ctxd_p=$PATH: _ctxd_n=; '
                'while [ -n "$_ctxd_p" ]; do _ctxd_e=${_ctxd_p%%:*}; _ctxd_p=${_ctxd_p#*:}; '
                'case $_ctxd_e in "$CTXD_ROOT"/*) ;; *) _ctxd_n=${_ctxd_n:+$_ctxd_n:}$_ctxd_e;; esac; done; '
                'PATH=$_ctxd_n; unset _ctxd_p _ctxd_n _ctxd_e CTXD_ROOT CTXD_TYPES CTXD_CONTEXT_DIR CTXD_STATUS; '
                f"fi; {self.drop_state_command()}; }}")

    def drop_state_command(self):
        return f"{self.restore_fn} 2>/dev/null; unset CTXD_STATE CTXD_WATCH"

    def prompt_command_order(self, value):
        """Where the hook stands in PROMPT_COMMAND as exported (an array arrives
        joined by spaces): (runs_hook, the first command there or "")."""
        first = value.strip().split(";", 1)[0].split()
        first = first[0] if first else ""
        return self.hook_fn in value.replace(";", " ").split(), first

    def quote(self, value):
        return ansi_c_quote(value)

    def marker_test(self, markers):
        # the inside of one [[ ]]: is any marker in $_ctxd_d (see _ctxd_find_root)
        return " || ".join(f"-e ${{_ctxd_d}}/{ansi_c_quote(m)}" for m in markers) or "-n ''"

    def set_var(self, name, value):
        check_name(name)
        check_value(name, value)
        return f"export {name}={self.quote(value)}"

    def unset_var(self, name):
        return f"\\builtin unset {check_name(name)}"

    def warn(self, message):
        # \builtin: a user's alias or function named printf cannot interfere
        return f"\\builtin printf '%s\\n' {self.quote(message)} >&2"

    def warn_unless_listed(self, message, name, word):
        check_name(name)
        return f'[[ " ${{{name}-}} " == *" "{ansi_c_quote(word, always=True)}" "* ]] || {self.warn(message)}'

    def define_restore(self, statements):
        body = "; ".join(statements) if statements else ":"
        return f"{self.restore_fn}() {{ {body}; }}"

    def set_flag(self, name, value):
        check_name(name)
        return f"{name}={self.quote(value)}"

    def drop_restore(self):
        return f"\\builtin unset -f {self.restore_fn}"

    def env_check(self, pairs, files=()):
        tests = [f"-e {ansi_c_quote(f)}" for f in files]
        for name, value in pairs:
            check_name(name)
            if value is None:
                tests.append(f"-z ${{{name}+x}}")
            else:
                check_value(name, value)
                tests.append(f'${{{name}+x}} == x && "${name}" == {ansi_c_quote(value, always=True)}')
        return f"[[ {' && '.join(tests)} ]]" if tests else "true"

    def if_value(self, name, value, statement):
        check_name(name)
        if value is None:
            return f"if [[ -z ${{{name}+x}} ]]; then {statement}; fi"
        check_value(name, value)  # $'\x00' would cut the value short: a false match
        return f'if [[ ${{{name}+x}} == x && "${name}" == {ansi_c_quote(value, always=True)} ]]; then {statement}; fi'
