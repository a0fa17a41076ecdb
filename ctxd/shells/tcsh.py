"""tcsh: single quotes hold everything but ``'`` (closed, ``\\'``, reopened),
``!`` (``\\!``: history) and a newline (backslash-newline). The export code
is *sourced* from a file by the hook, never ``eval``-ed from backquotes: a
backquote substitution turns newlines into word breaks, so multi-line
values and ``if``/``endif`` blocks could not survive it.

The restore "function" is a shell variable holding tcsh code (tcsh has no
functions); the hook writes it to its private file and sources it.
"""

import os

from ctxd.shells.base import Shell, check_name, check_value, template_path, to_bytes

_PLAIN = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./:,+@%")


def tcsh_quote(value):
    data = to_bytes(value)
    if data and all(c in _PLAIN for c in data):
        return value
    out = ["'"]
    for c in data:
        if c == 0x27:
            out.append("'\\''")
        elif c == 0x21:
            out.append("\\!")
        elif c == 0x0A:
            out.append("\\\n")
        else:
            out.append(chr(c) if c < 0x80 else chr(0xDC00 + c))  # bytes back via surrogateescape
    out.append("'")
    return "".join(out)


class Tcsh(Shell):
    name = "tcsh"
    template = "ctxd.tcsh"
    restore_fn = "_ctxd_restore"       # a shell variable holding code, see the module doc
    fast_leave_var = "_ctxd_fast_leave"
    rc_file = "~/.tcshrc"
    startup_files = (".tcshrc", ".cshrc", ".login")

    @property
    def install_line(self):
        return "eval \"`ctxd hook tcsh`\""

    def home_word(self):
        return "$HOME:q/"

    def rc_candidates(self, environ):
        return [os.path.join(self.home(environ), f) for f in self.startup_files]

    def rc_text(self, ctxd_path, hook_file=None):
        # interactive shells only (every tcsh script reads ~/.tcshrc too); the
        # console script on PATH, else the absolute path `ctxd setup` saw (a
        # login shell may read this before ~/.local/bin is on PATH)
        lines = ["if ( $?prompt ) then",
                 "  set _ctxd_h = `sh -c 'command -v ctxd'`"]
        if ctxd_path:
            p = self.quote(ctxd_path)
            lines.append(f'  if ( "$_ctxd_h" == "" && -x {p} ) set _ctxd_h = {p}')
        lines += ['  if ( "$_ctxd_h" != "" ) then',
                  '    eval "`$_ctxd_h:q hook tcsh`"',
                  "  else"]
        lines += ["    " + line for line in self.drop_inherited_lines()]
        lines += ["  endif", "  unset _ctxd_h", "endif"]
        return "".join(line + "\n" for line in lines)

    def drop_inherited_lines(self):
        """Without ctxd in a shell that inherited a project's environment: drop
        the VIRTUAL_ENV and PATH entries inside CTXD_ROOT, ctxd's variables and
        its state (see Bash.drop_inherited_command)."""
        return ["unsetenv _CTXD_HOOK",
                "if ( $?CTXD_STATE && $?CTXD_ROOT ) then",
                "  if ( $?VIRTUAL_ENV ) then",
                '    if ( "$VIRTUAL_ENV" =~ "$CTXD_ROOT"/* ) unsetenv VIRTUAL_ENV',
                "  endif",
                "  set _ctxd_p = ()",
                "  foreach _ctxd_e ( $path:q )",
                '    if ( "$_ctxd_e" !~ "$CTXD_ROOT"/* ) set _ctxd_p = ( $_ctxd_p:q "$_ctxd_e" )',
                "  end",
                "  set path = ( $_ctxd_p:q )",
                "  unset _ctxd_p _ctxd_e",
                "endif",
                "unsetenv CTXD_STATE CTXD_WATCH CTXD_ROOT CTXD_TYPES CTXD_CONTEXT_DIR CTXD_STATUS"]

    def loads_hook(self, line):
        # the rc block calls the console script through a variable: `$_ctxd_h:q hook tcsh`
        text = line.strip()
        return super().loads_hook(line) or (not text.startswith("#") and " hook tcsh`" in text)

    def drop_state_command(self):
        return ("if ( $?_ctxd_restore ) source $_ctxd_file:q restore; "
                "unsetenv CTXD_STATE; unsetenv CTXD_WATCH")

    # -- primitives ----------------------------------------------------------
    def quote(self, value):
        return tcsh_quote(value)

    def set_var(self, name, value):
        check_name(name)
        check_value(name, value)
        return f"setenv {name} {self.quote(value)}"

    def unset_var(self, name):
        return f"unsetenv {check_name(name)}"

    def warn(self, message):
        # >& sends stdout and stderr to the terminal's stderr; \printf: no alias
        return f"\\printf '%s\\n' {self.quote(message)} >& /dev/stderr"

    def define_restore(self, statements):
        body = self.join(statements) if statements else ":\n"
        return f"set {self.restore_fn} = {self.quote(body)}"

    def drop_restore(self):
        return f"unset {self.restore_fn}"

    def set_flag(self, name, value):
        check_name(name)
        return f"set {name} = {self.quote(value)}"

    def if_value(self, name, value, statement):
        check_name(name)
        if value is None:
            return f"if ( ! $?{name} ) then\n{statement}\nendif"
        check_value(name, value)
        # $X:q is one word whatever X holds (newlines too); == compares
        # strings; the x in front keeps a value like -z or an empty one from
        # reading as an operator
        return (f"if ( $?{name} ) then\nif ( x${name}:q == {self.quote('x' + value)} ) then\n"
                f"{statement}\nendif\nendif")

    def hook(self, markers, command):
        """One line for ``eval "`ctxd hook tcsh`"``: the command and markers as
        lists, then the readable template is sourced by absolute path."""
        q = self.quote
        return (f"set _ctxd_cmd = ( {' '.join(q(w) for w in command)} ); "
                f"set _ctxd_markers = ( {' '.join(q(m) for m in markers)} ); "
                f"set _ctxd_file = {q(template_path(self.template))}; "
                "source $_ctxd_file:q install\n")
