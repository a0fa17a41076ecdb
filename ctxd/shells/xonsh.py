"""xonsh: the export code is Python (xonsh's Python mode) the hook runs with
``execx`` in a namespace of its own. Values are Python string literals with
every character outside printable ASCII escaped (``\\xHH``, ``\\uHHHH``,
``\\UHHHHHHHH``; lone surrogates too: an undecodable byte in os.environ is one,
and xonsh hands it to child processes as that byte again). Nothing in a
Python-mode string literal is expanded ($, backticks, !, globs).
"""

import os

from ctxd.shells.base import Shell, check_name, check_value


def py_quote(value):
    out = ["'"]
    for ch in value:
        o = ord(ch)
        if 0x20 <= o < 0x7F and ch not in "'\\":
            out.append(ch)
        elif o < 0x100:
            out.append("\\x%02x" % o)
        elif o < 0x10000:
            out.append("\\u%04x" % o)
        else:
            out.append("\\U%08x" % o)
    out.append("'")
    return "".join(out)


def _indent(statement):
    return "".join("    " + line + "\n" for line in statement.split("\n"))


class Xonsh(Shell):
    name = "xonsh"
    template = "ctxd.xsh"
    restore_fn = "_ctxd_restore"
    fast_leave_var = "_ctxd_fast_leave"
    rc_file = "~/.xonshrc"

    @property
    def install_line(self):
        return "execx($(ctxd hook xonsh))"

    def rc_candidates(self, environ):
        home = self.home(environ)
        cfg = environ.get("XDG_CONFIG_HOME", "")
        cfg = cfg if cfg.startswith("/") else os.path.join(home, ".config")
        return [os.path.join(home, ".xonshrc"), os.path.join(cfg, "xonsh", "rc.xsh")]

    def rc_text(self, ctxd_path, hook_file=None):
        # interactive xonsh only; the console script on PATH, else the absolute
        # path `ctxd setup` saw (a login shell may read this before ~/.local/bin is on PATH)
        alt = py_quote(ctxd_path) if ctxd_path else "None"
        return ("if __xonsh__.env.get('XONSH_INTERACTIVE'):\n"
                "    import shutil as _ctxd_m, os as _ctxd_os, subprocess as _ctxd_sp\n"
                f"    _ctxd_h = _ctxd_m.which('ctxd') or ({alt} if {alt} and _ctxd_os.access({alt}, _ctxd_os.X_OK) else None)\n"
                "    if _ctxd_h:\n"
                "        execx(_ctxd_sp.run([_ctxd_h, 'hook', 'xonsh'], capture_output=True, text=True).stdout)\n"
                "    else:\n"
                + _indent(_indent(self.drop_inherited_command())).rstrip("\n") + "\n"
                "    del _ctxd_m, _ctxd_os, _ctxd_sp, _ctxd_h\n")

    def drop_inherited_command(self):
        """Without ctxd: drop the VIRTUAL_ENV and PATH entries inside
        CTXD_ROOT, ctxd's variables and its state (see Bash.drop_inherited_command)."""
        return ("__xonsh__.env.pop('_CTXD_HOOK', None)\n"
                "if 'CTXD_STATE' in __xonsh__.env and __xonsh__.env.get('CTXD_ROOT'):\n"
                "    _ctxd_r = __xonsh__.env['CTXD_ROOT'] + '/'\n"
                "    if str(__xonsh__.env.get('VIRTUAL_ENV', '')).startswith(_ctxd_r):\n"
                "        __xonsh__.env.pop('VIRTUAL_ENV', None)\n"
                "    __xonsh__.env['PATH'] = [p for p in __xonsh__.env['PATH'] if not p.startswith(_ctxd_r)]\n"
                "for _ctxd_v in ('CTXD_STATE', 'CTXD_WATCH', 'CTXD_ROOT', 'CTXD_TYPES', 'CTXD_CONTEXT_DIR', 'CTXD_STATUS'):\n"
                "    __xonsh__.env.pop(_ctxd_v, None)")

    def loads_hook(self, line):
        text = line.strip()
        return super().loads_hook(line) or (not text.startswith("#") and "'hook', 'xonsh'" in text)

    def drop_state_command(self):
        return "_ctxd_drop_state()"

    # -- primitives ----------------------------------------------------------
    def quote(self, value):
        return py_quote(value)

    def set_var(self, name, value):
        check_name(name)
        check_value(name, value)
        return f"__xonsh__.env[{name!r}] = {self.quote(value)}"

    def unset_var(self, name):
        return f"__xonsh__.env.pop({check_name(name)!r}, None)"

    def set_path(self, entries):
        for e in entries:
            check_value("PATH", e)
        return "__xonsh__.env['PATH'] = [" + ", ".join(self.quote(e) for e in entries) + "]"

    def warn(self, message):
        # bytes straight to fd 2: no encoding error, no buffering, whatever the message holds
        return f"__import__('os').write(2, ({self.quote(message)} + '\\n').encode('utf-8', 'surrogateescape'))"

    def define_restore(self, statements):
        body = "".join(_indent(s) for s in statements) or "    pass\n"
        return f"def {self.restore_fn}():\n{body}".rstrip("\n")

    def drop_restore(self):
        return f"{self.restore_fn} = None"

    def set_flag(self, name, value):
        check_name(name)
        return f"{name} = {self.quote(value)}"

    def if_value(self, name, value, statement):
        check_name(name)
        if value is None:
            return f"if {name!r} not in __xonsh__.env:\n{_indent(statement).rstrip(chr(10))}"
        check_value(name, value)
        # detype(): the text a child process would see (PATH is a list in xonsh)
        return (f"if __xonsh__.env.detype().get({name!r}) == {self.quote(value)}:\n"
                f"{_indent(statement).rstrip(chr(10))}")

    def hook(self, markers, command):
        from ctxd.shells.base import template_path

        with open(template_path(self.template), encoding="utf-8") as f:
            text = f.read()
        return (text.replace("@CTXD_MARKERS@", ", ".join(self.quote(m) for m in markers))
                .replace("@CTXD_COMMAND@", ", ".join(self.quote(w) for w in command)))
