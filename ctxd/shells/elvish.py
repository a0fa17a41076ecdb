"""elvish: double-quoted strings never expand anything; every byte outside
printable ASCII (and ``"`` and ``\\``) is written as ``\\xHH``, which elvish
reads as that raw byte, so any value round-trips on one ASCII line.

The hook evaluates ctxd's output with ``eval &ns=...`` in a namespace that
holds only three helpers of its own (the restore closure and the fast-leave
flag live in the hook's closure, not in the user's namespace):
``ctxd-set-restore {|| ...}``, ``ctxd-drop-restore``, ``ctxd-set-flag NAME VALUE``.
"""

import os

from ctxd.shells.base import Shell, check_name, check_value, to_bytes


def elvish_quote(value):
    out = ['"']
    for c in to_bytes(value):
        if 0x20 <= c < 0x7F and c not in (0x22, 0x5C):
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
    out.append('"')
    return "".join(out)


class Elvish(Shell):
    name = "elvish"
    template = "ctxd.elv"
    restore_fn = "ctxd-restore"
    fast_leave_var = "_ctxd_fast_leave"
    rc_file = "~/.config/elvish/rc.elv"

    @property
    def install_line(self):
        return "eval (ctxd hook elvish | slurp)"

    def home_word(self):
        return "$E:HOME/"

    def home_relative(self, path):
        home = os.path.expanduser("~").rstrip("/")
        if home and path.startswith(home + "/"):
            return "$E:HOME" + self.quote(path[len(home):])  # a compound word: "$E:HOME""/rest"
        return self.quote(path)

    def rc_candidates(self, environ):
        home = self.home(environ)
        cfg = environ.get("XDG_CONFIG_HOME", "")
        cfg = cfg if cfg.startswith("/") else os.path.join(home, ".config")
        return [os.path.join(cfg, "elvish", "rc.elv"), os.path.join(home, ".elvish", "rc.elv")]

    def rc_text(self, ctxd_path, hook_file=None):
        # the console script on PATH, else the absolute path `ctxd setup` saw
        # (a login shell may read rc.elv before ~/.local/bin is on PATH)
        lines = ["use str", "var _ctxd_bin = (if (has-external ctxd) { put ctxd } else { put '' })"]
        if ctxd_path:
            p = self.quote(ctxd_path)
            lines.append(f"if (and (eq $_ctxd_bin '') (has-external {p})) {{ set _ctxd_bin = {p} }}")
        lines += ["if (not-eq $_ctxd_bin '') {",
                  "  eval ((external $_ctxd_bin) hook elvish | slurp)",
                  "} else {",
                  "  " + self.drop_inherited_command(),
                  "}"]
        return "".join(line + "\n" for line in lines)

    def drop_inherited_command(self):
        """Without ctxd: drop the VIRTUAL_ENV and PATH entries inside
        CTXD_ROOT, ctxd's variables and its state (see Bash.drop_inherited_command)."""
        return ("unset-env _CTXD_HOOK; if (and (has-env CTXD_STATE) (has-env CTXD_ROOT)) { "
                "var r = (get-env CTXD_ROOT)/; "
                "if (and (has-env VIRTUAL_ENV) (str:has-prefix (get-env VIRTUAL_ENV) $r)) { unset-env VIRTUAL_ENV }; "
                "set paths = [(each {|p| if (not (str:has-prefix $p $r)) { put $p } } $paths)] }; "
                "each {|v| unset-env $v } [CTXD_STATE CTXD_WATCH CTXD_ROOT CTXD_TYPES CTXD_CONTEXT_DIR CTXD_STATUS]")

    def loads_hook(self, line):
        text = line.strip()
        return super().loads_hook(line) or (not text.startswith("#") and ") hook elvish" in text)

    def drop_state_command(self):
        # the hook's own command; without the hook loaded, drop the state alone
        return "ctxd-drop-state"

    # -- primitives ----------------------------------------------------------
    def quote(self, value):
        return elvish_quote(value)

    def set_var(self, name, value):
        check_name(name)
        check_value(name, value)
        return f"set-env {name} {self.quote(value)}"

    def unset_var(self, name):
        return f"unset-env {check_name(name)}"

    def warn(self, message):
        return f"echo {self.quote(message)} >&2"

    def define_restore(self, statements):
        body = "; ".join(statements) if statements else "nop"
        return f"ctxd-set-restore {{|| {body} }}"

    def drop_restore(self):
        return "ctxd-drop-restore"

    def set_flag(self, name, value):
        check_name(name)
        return f"ctxd-set-flag {name} {self.quote(value)}"

    def if_value(self, name, value, statement):
        check_name(name)
        if value is None:
            return f"if (not (has-env {name})) {{ {statement} }}"
        check_value(name, value)
        return f"if (and (has-env {name}) (eq (get-env {name}) {self.quote(value)})) {{ {statement} }}"
