"""bash: ``$'...'`` quoting (one line of ASCII that round-trips any bytes).

Everything printed here runs on bash 3.2 (macOS /bin/bash) as well as 5.x.
"""

import os

from ctxd.shells.base import Shell, check_name, check_value, to_bytes

_PLAIN = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./:,+@%=")


def ansi_c_quote(value, always=False):
    data = to_bytes(value)
    # zsh expands "=cmd" at the start of an assignment's value and after any ":"
    # in it (export X=a:=ls gives a:/usr/bin/ls), so those stay quoted
    if (not always and data and all(c in _PLAIN for c in data) and data[0] not in b"=%"
            and b":=" not in data):
        return value  # nothing in it means anything to the shell
    out = ["$'"]
    for c in data:
        if 0x20 <= c < 0x7F and c not in (0x27, 0x5C):  # printable, not ' or backslash
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
    out.append("'")
    return "".join(out)


class Bash(Shell):
    name = "bash"
    template = "ctxd.bash"
    restore_fn = "_ctxd_restore"
    fast_leave_var = "_ctxd_fast_leave"
    hook_fn = "_ctxd_hook"
    rc_file = "~/.bashrc"
    startup_files = (".bashrc", ".bash_profile", ".bash_login", ".profile")

    def rc_candidates(self, environ):
        return [os.path.join(self.home(environ), f) for f in self.startup_files]

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

    def set_var(self, name, value):
        check_name(name)
        check_value(name, value)
        return f"export {name}={self.quote(value)}"

    def unset_var(self, name):
        return f"\\builtin unset {check_name(name)}"

    def warn(self, message):
        # \builtin: a user's alias or function named printf cannot interfere
        return f"\\builtin printf '%s\\n' {self.quote(message)} >&2"

    def define_restore(self, statements):
        body = "; ".join(statements) if statements else ":"
        return f"{self.restore_fn}() {{ {body}; }}"

    def set_flag(self, name, value):
        check_name(name)
        return f"{name}={self.quote(value)}"

    def drop_restore(self):
        return f"\\builtin unset -f {self.restore_fn}"

    def if_value(self, name, value, statement):
        check_name(name)
        if value is None:
            return f"if [[ -z ${{{name}+x}} ]]; then {statement}; fi"
        check_value(name, value)  # $'\x00' would cut the value short: a false match
        return f'if [[ ${{{name}+x}} == x && "${name}" == {ansi_c_quote(value, always=True)} ]]; then {statement}; fi'
