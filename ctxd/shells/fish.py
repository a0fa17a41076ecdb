"""fish: single quotes escape only ' and backslash, so control bytes go outside
quotes as ``\\xHH``; PATH is a list."""

import os

from ctxd.shells.base import Shell, check_name, check_value, to_bytes


def fish_quote(value):
    data = to_bytes(value)
    if not data:
        return "''"
    out = []
    quoted = []  # the run inside the current single-quoted segment

    def flush():
        if quoted:
            out.append("'" + "".join(quoted) + "'")
            quoted.clear()

    text = data.decode("utf-8", "surrogateescape")
    if text.isprintable():  # no control character, no undecodable byte: one quoted run
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
    for ch in text:
        o = ord(ch)
        if 0xDC80 <= o <= 0xDCFF:  # an undecodable byte: fish's \xHH is a raw byte
            flush()
            out.append("\\x%02x" % (o - 0xDC00))
        elif o < 0x20 or o == 0x7F:
            flush()
            out.append("\\x%02x" % o)
        elif ch in "'\\":
            quoted.append("\\" + ch)
        else:
            quoted.append(ch)
    flush()
    return "".join(out)


class Fish(Shell):
    name = "fish"
    template = "ctxd.fish"
    restore_fn = "__ctxd_restore"
    fast_leave_var = "__ctxd_fast_leave"
    rc_file = "~/.config/fish/config.fish"
    hook_cache = True
    revisit_var = "__ctxd_revisit_ok"
    # `set -gx` fails on these ("Tried to change the read-only variable"); argv, umask,
    # COLUMNS, LINES and CMD_DURATION are fish's own
    reserved = frozenset(
        "CMD_DURATION COLUMNS FISH_VERSION LINES PWD SHLVL _ argv fish_kill_signal fish_killring fish_pid "
        "history hostname pipestatus status status_generation umask version".split())

    @property
    def install_line(self):
        return "ctxd hook fish | source"

    def home_word(self):
        return "$HOME/"

    def rc_text(self, ctxd_path, hook_file=None):
        # config.fish runs in every fish process (fish -c, scripts, tide's
        # prompt workers): only an interactive fish loads the hook. The
        # start-up copy first (see Bash.rc_text).
        lines = ["if status is-interactive"]
        if hook_file:
            f = self.home_relative(hook_file)
            lines += [f"    if test -r {f}; and source {f}", "    else if command -q ctxd"]
        else:
            lines += ["    if command -q ctxd"]
        lines += ["        ctxd hook fish | source"]
        if ctxd_path:
            p = self.home_relative(ctxd_path)
            lines += [f"    else if test -x {p}", f"        {p} hook fish | source"]
        lines += ["    else", f"        {self.drop_inherited_command()}", "    end", "end"]
        return "".join(line + "\n" for line in lines)

    def drop_inherited_command(self):
        """See Bash.drop_inherited_command."""
        return ('set -e _CTXD_HOOK; set -q CTXD_STATE; and begin; if test -n "$CTXD_ROOT"; '
                'set -l _ctxd_re "^"(string escape --style=regex -- "$CTXD_ROOT/"); '
                'string match -q -r -- $_ctxd_re "$VIRTUAL_ENV"; and set -e VIRTUAL_ENV; '
                'set -gx PATH (string match -v -r -- $_ctxd_re $PATH); '
                'set -e CTXD_ROOT CTXD_TYPES CTXD_CONTEXT_DIR CTXD_STATUS; '
                f"end; {self.drop_state_command()}; end")

    def cache_guard(self, dist_info, interpreter, sources, own_path, comment):
        """See Shell.cache_guard (fish's test has -nt too)."""
        q = self.quote
        tests = [f"test -x {q(interpreter)}"]
        if dist_info:
            tests.insert(0, f"test -d {q(dist_info)}")
        tests += [f"test -e {q(s)}; and not test {q(s)} -nt {q(own_path)}" for s in sources]
        return f"# {comment}\n{'; and '.join(tests)}; or return 1\n"

    def rc_candidates(self, environ):
        home = self.home(environ)
        cfg = environ.get("XDG_CONFIG_HOME", "")
        cfg = cfg if cfg.startswith("/") else os.path.join(home, ".config")
        fish = os.path.join(cfg, "fish")
        found = [os.path.join(fish, "config.fish")]
        try:
            found += sorted(os.path.join(fish, "conf.d", f) for f in os.listdir(os.path.join(fish, "conf.d"))
                            if f.endswith(".fish"))
        except OSError:
            pass
        return found

    def drop_state_command(self):
        return (f"builtin functions -q {self.restore_fn}; and {self.restore_fn}; "
                "set -e CTXD_STATE CTXD_WATCH")

    def quote(self, value):
        return fish_quote(value)

    def set_var(self, name, value):
        check_name(name)
        check_value(name, value)
        return f"set -gx {name} {self.quote(value)}"

    def set_path(self, entries):
        for e in entries:
            check_value("PATH", e)
        return "set -gx PATH " + " ".join(self.quote(e) for e in entries)

    def unset_var(self, name):
        return f"set -e -g {check_name(name)}"

    def warn(self, message):
        return f"builtin printf '%s\\n' {self.quote(message)} >&2"

    def warn_unless_listed(self, message, name, word):
        check_name(name)
        return (f"builtin contains -- {self.quote(word)} (builtin string split -n ' ' -- \"${name}\"); "
                f"or {self.warn(message)}")

    def define_restore(self, statements):
        body = "; ".join(statements) if statements else "true"
        return f"function {self.restore_fn}; {body}; end"

    def set_flag(self, name, value):
        check_name(name)
        return f"set -g {name} {self.quote(value)}"

    def drop_restore(self):
        return f"builtin functions -e {self.restore_fn}"

    def env_check(self, pairs, files=()):
        # a path variable (PATH, MANPATH, ...) in double quotes joins with ":",
        # as the environment holds it; any other one has one element here
        tests = [f"test -e {self.quote(f)}" for f in files]
        for name, value in pairs:
            check_name(name)
            if value is None:
                tests.append(f"not set -q {name}")
            else:
                check_value(name, value)
                tests.append(f'set -q {name}; and test "${name}" = {self.quote(value)}')
        return "; and ".join(tests) if tests else "true"

    def if_value(self, name, value, statement):
        check_name(name)
        if value is None:
            return f"if not set -q {name}; {statement}; end"
        check_value(name, value)
        return f'if set -q {name}; and test "${name}" = {self.quote(value)}; {statement}; end'
