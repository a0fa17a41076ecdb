"""What every shell shares: value checks, the hook template loader, and the
Shell base class: the one place that knows a shell's text (the hook, the
export code, the rc-file line, the commands a user types to undo ctxd).

Hot path: this package must import nothing heavy (no click, psutil,
shellingham, platformdirs, typing, re, json, base64, tomllib);
tests/test_shell_text.py checks it on the source.
"""

import os
import sys

from ctxd.errors import ValueRejected

TYPE_CHECKING = False  # typing is not imported at run time: this module is on the cd path
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence


def check_name(name):
    """Only plain identifiers ([A-Za-z_][A-Za-z0-9_]*) may reach eval as variable names.

    (isascii + isidentifier is exactly that set, without importing re.)
    """
    if not (isinstance(name, str) and name.isascii() and name.isidentifier()):
        raise ValueRejected(f"invalid environment variable name {name!r}")
    return name


def check_value(name, value):
    if "\0" in value:
        raise ValueRejected(f"{name}: a NUL byte cannot be stored in an environment variable")
    return value


def to_bytes(value):
    # os.environ decodes undecodable bytes with surrogateescape; undo that exactly
    return value.encode("utf-8", "surrogateescape")


def template_path(filename):
    """The hook template: ctxd/_shell/ in a wheel, ../shell/ in a source checkout."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for candidate in (
        os.path.join(here, "_shell", filename),
        os.path.join(os.path.dirname(here), "shell", filename),
    ):
        if os.path.isfile(candidate):
            return candidate
    raise FileNotFoundError(f"hook template {filename} not found next to {here}")


def export_command(shell_name=None, environ=None):
    """argv that runs `ctxd export` as fast as possible, immune to the project.

    The absolute interpreter (no version-manager shim), ``-I`` (ignore PYTHON*
    variables a project may set, and never import from the current directory)
    and ``-S`` (skip site: .pth files can cost tens of milliseconds), with the
    directories that hold ctxd and its import-time dependencies put back on
    sys.path explicitly: ctxd's first, platformdirs' (when elsewhere) last, so
    the standard library's modules are never looked up in it (listing a big
    site-packages costs the cd a few hundred microseconds). It imports
    ctxd.fastpath.export_entry itself, not the console script, and ends
    without the interpreter's teardown (export_entry.hook_main). Given the
    shell's name, it first tries that shell's export bundle (ctxd.fastpath.bundle)
    in *environ*'s cache dir, which `ctxd hook` writes.
    """
    import importlib.util

    import ctxd

    first = os.path.dirname(os.path.dirname(os.path.abspath(ctxd.__file__)))
    code = f"import sys;sys.path[:0]=[{first!r}];"
    # platformdirs is needed on the hot path only off Linux; find_spec locates
    # it without importing it
    spec = importlib.util.find_spec("platformdirs")
    if spec is not None and spec.origin:
        d = os.path.dirname(os.path.dirname(os.path.abspath(spec.origin)))
        if d != first:
            code += f"sys.path.append({d!r});"
    if shell_name is not None:
        from ctxd.fastpath import bundle

        code += bundle.load_code(bundle.bundle_path(shell_name, environ))
    return [sys.executable, "-I", "-S", "-c", code + EXPORT_CALL]


EXPORT_CALL = "from ctxd.fastpath.export_entry import hook_main;hook_main()"  # the end of export_command()'s code


def hook_cache_file(shell_name, environ=None):
    """Where the start-up copy of the hook for *shell_name* lives (see ctxd.fastpath.startup_copy)."""
    from ctxd import paths

    return os.path.join(paths.cache_dir(environ), "hook", f"ctxd.{shell_name}")


def console_script():
    """The absolute path of the ctxd console script of this installation: the
    one next to the interpreter (a venv's, pipx's or uv's bin/: stays valid
    across upgrades and reinstalls; never a version manager's shim), else the
    one on PATH, else None."""
    here = os.path.join(os.path.dirname(sys.executable), "ctxd")
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    import shutil

    found = shutil.which("ctxd")
    return os.path.abspath(found) if found else None


class Shell:
    """One shell's text. Callers: `ctxd hook` (hook), `ctxd export` (the
    primitives, fast_leave, join), `ctxd setup` (rc_file, install_line,
    rc_block, loads_hook), `ctxd doctor` (install_line, rc_candidates,
    loads_hook, drop_state_command; bash: prompt_command_order)."""

    name = ""
    template = ""
    restore_fn = ""       # the function the export defines to undo itself
    fast_leave_var = ""   # non-exported flag: the hook may leave without ctxd
    rc_file = ""          # where the install line goes, as shown to the user
    hook_cache = False    # rc lines source a start-up copy of the hook (cache_guard, rc_text's hook_file)
    revisit_var = ""      # non-exported: the test under which the hook may replay this export (env_check)
    # names this shell will not take as an exported variable (read-only, special, or of
    # another type): activation skips them with a warning (ctxd.activation.export.refuse)
    reserved = frozenset()

    # -- what the user puts in, or types into, the shell ---------------------
    @property
    def install_line(self) -> str:
        """The line that loads the hook (in the rc file, or typed now)."""
        return f'eval "$(ctxd hook {self.name})"'

    def rc_block(self, ctxd_path: str | None = None, hook_file: str | None = None) -> str:
        """What `ctxd setup --write` appends to the rc file: the hook line that
        works before the console script's directory is on PATH (a login shell
        whose ~/.profile sources the rc file first), with the absolute path of
        the console script as a fallback (*ctxd_path*; default: this one), and
        that drops an inherited project environment when ctxd cannot run.
        First of all it sources *hook_file* (default: this user's start-up copy
        of the hook, see ctxd.fastpath.startup_copy), which starts no process and
        stands down when it is not current."""
        if ctxd_path is None:
            ctxd_path = console_script()
        if not self.hook_cache:  # a shell without a start-up copy (no cache_guard)
            return (self._rc_header() + self.rc_text(ctxd_path))
        if hook_file is None:
            hook_file = hook_cache_file(self.name)
        return ("\n# ctxd: project environments on cd (written by `ctxd setup`; the copy of the hook\n"
                "# loads without starting ctxd and stands down when ctxd changed; the path is a fallback\n"
                "# for shells that start before it is on PATH; without ctxd, inherited state is dropped)\n"
                + self.rc_text(ctxd_path, hook_file))

    def _rc_header(self):
        return ("\n# ctxd: project environments on cd (written by `ctxd setup`; the path is a fallback\n"
                "# for shells that start before it is on PATH; without ctxd, inherited state is dropped)\n")

    def rc_text(self, ctxd_path: str | None, hook_file: str | None = None) -> str:
        """The guarded lines themselves (one of them loads_hook())."""
        raise NotImplementedError

    def cache_guard(self, dist_info: str | None, interpreter: str, sources: "Iterable[str]", own_path: str,
                    comment: str) -> str:
        """First lines of the start-up copy of the hook at *own_path*: status 1
        (nothing defined) unless *dist_info* (None: not checked) and the
        *interpreter* exist and no file of *sources* is newer than the copy.
        Builtins only: `[[ -nt ]]` is a stat, no process."""
        q = self.quote
        tests = [f"-x {q(interpreter)}"]
        if dist_info:
            tests.insert(0, f"-d {q(dist_info)}")
        tests += [f"-e {q(s)} && ! {q(s)} -nt {q(own_path)}" for s in sources]
        return (f"# {comment}\n"
                f"[[ {' && '.join(tests)} ]] || \\builtin return 1\n")

    def home_relative(self, path: str) -> str:
        """*path* as shell text, $HOME-relative when it is under $HOME."""
        home = os.path.expanduser("~").rstrip("/")
        if home and path.startswith(home + "/"):
            return self.home_word() + self.quote(path[len(home) + 1:])
        return self.quote(path)

    def home_word(self) -> str:
        return '"$HOME"/'

    def rc_candidates(self, environ: "Mapping[str, str]") -> list[str]:
        """Every startup file that may load the hook, in the order the shell reads them."""
        raise NotImplementedError

    def loads_hook(self, line: str) -> bool:
        """Whether one rc-file line loads ctxd's hook for this shell (comments do not)."""
        text = line.strip()
        if text.startswith("#") or "ctxd hook" not in text:
            return False
        return self.name in text or "ctxd hook)" in text or text.endswith("ctxd hook")

    def drop_state_command(self) -> str:
        """One line a user types to undo ctxd's changes (with the hook's restore
        function, when there is one) and drop its state; the hook re-activates at
        the next prompt."""
        raise NotImplementedError

    def home(self, environ: "Mapping[str, str]") -> str:
        return environ.get("HOME") or os.path.expanduser("~")

    # -- primitives each shell defines ------------------------------------
    def quote(self, value: str) -> str:
        raise NotImplementedError

    def set_var(self, name: str, value: str) -> str:
        raise NotImplementedError

    def unset_var(self, name: str) -> str:
        raise NotImplementedError

    def set_path(self, entries: "Sequence[str]") -> str:
        return self.set_var("PATH", ":".join(entries))

    def warn(self, message: str) -> str:
        raise NotImplementedError

    def warn_unless_listed(self, message: str, name: str, word: str) -> str:
        """warn(*message*) unless *word* is one of the space-separated words of
        the variable *name* (a shell with a revisit_var defines it)."""
        raise NotImplementedError

    def define_restore(self, statements: "Sequence[str]") -> str:
        raise NotImplementedError

    def drop_restore(self) -> str:
        raise NotImplementedError

    def if_value(self, name: str, value: str | None, statement: str) -> str:
        """Run *statement* only while *name* still holds *value* (None: unset)."""
        raise NotImplementedError

    def set_flag(self, name: str, value: str) -> str:
        """A plain (non-exported) global shell variable the hook reads."""
        raise NotImplementedError

    def env_check(self, pairs: "Iterable[tuple[str, str | None]]", files: "Iterable[str]" = ()) -> str:
        """A condition, as shell code, true while every (name, value) of
        *pairs* holds (value None: unset) and every path of *files* exists.
        See ctxd.activation.revisit."""
        raise NotImplementedError

    def fast_leave(self, allowed: bool) -> str:
        """Tell the hook whether it may undo this activation without ctxd
        (the restore function is exact when no on_leave hook has to run)."""
        return self.set_flag(self.fast_leave_var, "1" if allowed else "0")

    def join(self, statements: "Iterable[str]") -> str:
        return "".join(s + "\n" for s in statements)

    # -- the hook -----------------------------------------------------------
    def hook(self, markers: "Iterable[str]", command: "Iterable[str]") -> str:
        with open(template_path(self.template), encoding="utf-8") as f:
            text = f.read()
        if "@CTXD_STAMP_DIR@" in text:  # ctxd's private cache directory the export writes stamps to
            from ctxd import paths

            text = text.replace("@CTXD_STAMP_DIR@", self.quote(paths.stamp_dir()))
        return (
            text.replace("@CTXD_MARKERS@", " ".join(self.quote(m) for m in markers))
            .replace("@CTXD_MARKER_TEST@", self.marker_test(markers))
            .replace("@CTXD_COMMAND@", " ".join(self.quote(w) for w in command))
        )

    def marker_test(self, markers: "Iterable[str]") -> str:
        """Shell text for a template's @CTXD_MARKER_TEST@ (bash: one test of every marker)."""
        return ""
