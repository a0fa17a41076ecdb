"""nushell: nu cannot evaluate a string, so ``ctxd export nu`` prints JSON
(as direnv and mise do for nu) that the hook applies with ``load-env`` /
``hide-env``; PATH is a list there. Each statement is one operation, a JSON
array; the export is ``{"ctxd": 1, "ops": [...]}``:

    ["set", NAME, VALUE]   ["unset", NAME]   ["path", [ENTRY, ...]]
    ["warn", MESSAGE]      ["restore", [OP, ...]]   ["drop_restore"]
    ["if", NAME, VALUE or null, [OP]]   ["flag", NAME, VALUE]

nu strings are UTF-8: a value holding an undecodable byte cannot be set in
nu at all, so it is rejected (ValueRejected), as NUL is in every shell.
"""

import os

from ctxd.fastpath.minijson import dumps
from ctxd.errors import ValueRejected
from ctxd.shells.base import Shell, check_name, check_value, template_path

PROTOCOL = 1


def check_utf8(name, value):
    check_value(name, value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueRejected(f"{name}: nushell strings are UTF-8; this value holds bytes that are not") from None
    return value


def nu_quote(value):
    """A nu string literal: single quotes hold anything but ' (raw); else
    double quotes with nu's escapes (\\u{HH} for control characters)."""
    if "'" not in value and all(0x20 <= ord(c) != 0x7F for c in value):
        return "'" + value + "'"
    out = ['"']
    for ch in value:
        o = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif o < 0x20 or o == 0x7F:
            out.append("\\u{%x}" % o)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


class Nu(Shell):
    name = "nu"
    template = "ctxd.nu"
    restore_fn = "_ctxd_restore"
    fast_leave_var = "_ctxd_fast_leave"
    rc_file = "~/.config/nushell/config.nu"
    reserved = frozenset(("PWD", "FILE_PWD", "CURRENT_FILE"))  # nu sets them itself and refuses others

    @property
    def install_line(self):
        # nu reads every file in its autoload dir after config.nu: the hook is on from the next shell
        return "ctxd hook nu | save -f ($nu.user-autoload-dirs | first | path join ctxd.nu)"

    def rc_candidates(self, environ):
        home = self.home(environ)
        cfg = environ.get("XDG_CONFIG_HOME", "")
        cfg = cfg if cfg.startswith("/") else os.path.join(home, ".config")
        d = os.path.join(cfg, "nushell")
        return [os.path.join(d, "config.nu"), os.path.join(d, "env.nu"), os.path.join(d, "autoload", "ctxd.nu")]

    def rc_text(self, ctxd_path, hook_file=None):
        # config.nu runs before nu reads its autoload dir: writing the hook
        # there loads it in this very shell and keeps it current across
        # upgrades. The console script on PATH, else the absolute path setup saw.
        alt = nu_quote(ctxd_path) if ctxd_path else "''"
        return ("if $nu.is-interactive {\n"
                f"  let _ctxd_bin = (which ctxd | get -o 0.path | default {alt})\n"
                "  let _ctxd_dir = ($nu.user-autoload-dirs | first)\n"
                "  if ($_ctxd_bin != '' and ($_ctxd_bin | path exists)) {\n"
                "    mkdir $_ctxd_dir\n"
                "    ^$_ctxd_bin hook nu | save -f ($_ctxd_dir | path join ctxd.nu)\n"
                "  } else {\n"
                "    rm -f ($_ctxd_dir | path join ctxd.nu)\n"
                f"    {self.drop_inherited_command()}\n"
                "  }\n"
                "}\n")

    def drop_inherited_command(self):
        """Without ctxd: drop the VIRTUAL_ENV and PATH entries inside
        CTXD_ROOT, ctxd's variables and its state (see Bash.drop_inherited_command)."""
        return ("hide-env -i _CTXD_HOOK; if ('CTXD_STATE' in $env) and ('CTXD_ROOT' in $env) { "
                "let r = $'($env.CTXD_ROOT)/'; "
                "if ($env.VIRTUAL_ENV? | default '' | str starts-with $r) { hide-env -i VIRTUAL_ENV }; "
                "$env.PATH = ($env.PATH | where {|p| not ($p | str starts-with $r) }) }; "
                "hide-env -i CTXD_STATE CTXD_WATCH CTXD_ROOT CTXD_TYPES CTXD_CONTEXT_DIR CTXD_STATUS")

    def loads_hook(self, line):
        text = line.strip()
        return super().loads_hook(line) or (not text.startswith("#") and " hook nu " in text + " ")

    def drop_state_command(self):
        return "_ctxd_drop_state"

    # -- primitives: JSON operations -------------------------------------------
    def quote(self, value):
        return nu_quote(value)

    def set_var(self, name, value):
        check_name(name)
        check_utf8(name, value)
        return dumps(["set", name, value])

    def unset_var(self, name):
        return dumps(["unset", check_name(name)])

    def set_path(self, entries):
        for e in entries:
            check_utf8("PATH", e)
        return dumps(["path", list(entries)])

    def warn(self, message):
        try:
            message.encode("utf-8")
        except UnicodeEncodeError:
            message = message.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        return dumps(["warn", message])

    def define_restore(self, statements):
        return '["restore",[' + ",".join(statements) + "]]"

    def drop_restore(self):
        return '["drop_restore"]'

    def set_flag(self, name, value):
        check_name(name)
        return dumps(["flag", name, value])

    def if_value(self, name, value, statement):
        check_name(name)
        if value is not None:
            check_utf8(name, value)
        return '["if",' + dumps(name) + "," + dumps(value) + ",[" + statement + "]]"

    def join(self, statements):
        return '{"ctxd":%d,"ops":[' % PROTOCOL + ",".join(statements) + "]}\n"

    def hook(self, markers, command):
        with open(template_path(self.template), encoding="utf-8") as f:
            text = f.read()
        return (text.replace("@CTXD_MARKERS@", " ".join(nu_quote(m) for m in markers))
                .replace("@CTXD_COMMAND@", " ".join(nu_quote(w) for w in command)))
