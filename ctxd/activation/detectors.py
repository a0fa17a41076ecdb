"""The detector registry: which files make a project, and what each type sets.

One table, one source of truth: the marker list the shell hooks walk for is
generated from ``all_markers()``, so the shell and Python always agree on
where a project root is.
"""

import os

CONTEXTRC = ".contextrc"


class Plan:
    """What activating a project would do, with the reason for each change."""

    __slots__ = ("root", "types", "sets", "prepend", "append", "watch", "notes", "warnings",
                 "files", "trusted", "context", "on_enter", "on_leave", "timeout", "branch", "status", "pins")

    def __init__(self, root):
        self.root = root
        self.types = []  # [(type name, [markers found])]
        self.sets = []  # [(name, value or None for unset, source, only_if_unset)]
        self.prepend = []  # [(entry, source)] in the order they go in front of PATH
        self.append = []  # [(entry, source)] going to the end of PATH
        self.watch = []  # paths whose change means "export again"
        self.notes = []  # human-readable remarks for `ctxd show`
        self.warnings = []  # one-line notices for the user (shown once per root)
        self.files = []  # [(.contextrc path, trust status, error or None)] nearest first
        self.trusted = False  # may detected PATH entries and variables apply?
        self.context = {}  # merged [context] settings
        self.on_enter = []  # trusted hook commands
        self.on_leave = []
        self.timeout = 5.0
        self.branch = None  # current git branch when a [branch."glob"] section exists
        self.status = ""  # one-line summary for prompts (CTXD_STATUS)
        self.pins = []  # [pins.Pin]: version pins and the installs they matched

    def set(self, name, value, source, only_if_unset=False):
        self.sets.append((name, value, source, only_if_unset))

    def unset(self, name, source):
        self.sets.append((name, None, source, False))

    def path(self, entry, source):
        self.prepend.append((entry, source))


class Detector:
    __slots__ = ("name", "markers", "activate", "pins")

    def __init__(self, name, markers, activate=None, pins=()):
        self.name = name
        self.markers = tuple(markers)
        self.activate = activate  # fn(root, plan, environ) adding to the plan
        self.pins = tuple(pins)  # (tool, file, reader) tuples for read_pins (show, handoff)


# -- activation functions ---------------------------------------------------

def _python(root, plan, environ):
    for name in (".venv", "venv"):
        venv = os.path.join(root, name)
        bindir = os.path.join(venv, "bin")
        if os.path.isfile(os.path.join(bindir, "activate")):
            src = "python: " + name + "/bin/activate"
            plan.set("VIRTUAL_ENV", venv, src)
            plan.unset("PYTHONHOME", src)
            plan.set("PYTHONDONTWRITEBYTECODE", "1", src)
            plan.path(bindir, src)
            plan.watch.append(bindir)
            return
        if os.path.isdir(venv):  # being created: notice when activate appears
            plan.watch.append(venv)
            # bin/ may exist already: its mtime is not watched, activate itself is
            plan.watch.append(os.path.join(bindir, "activate"))
    plan.notes.append("python: no .venv/ or venv/ with bin/activate")


def _node(root, plan, environ):
    src = "node: package.json"
    plan.path(os.path.join(root, "node_modules", ".bin"), src)
    plan.set("NODE_ENV", "development", src, only_if_unset=True)


def _go(root, plan, environ):
    plan.set("GOFLAGS", "-mod=mod", "go: go.mod")


def _bin_dir(label, rel):
    def activate(root, plan, environ):
        d = os.path.join(root, rel)
        if os.path.isdir(d):
            plan.path(d, label)
        else:
            plan.notes.append(f"{label}: no {rel}/ yet")
    return activate


# -- version pins as listed by `ctxd show` and handoffs (never on the hot path; -----
# -- activation reads and resolves pins in ctxd/activation/pins.py) ----------------

def _first_line(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                return line
    return None


def _go_mod(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "go":
                return parts[1]
    return None


def _rust_toolchain_toml(path):
    import tomllib

    with open(path, "rb") as f:
        data = tomllib.load(f)
    return (data.get("toolchain") or {}).get("channel")


DETECTORS = (
    Detector("python", ("pyproject.toml", "requirements.txt", "setup.py", "setup.cfg", "Pipfile"),
             _python, pins=(("python", ".python-version", _first_line),)),
    Detector("node", ("package.json",), _node,
             pins=(("node", ".nvmrc", _first_line), ("node", ".node-version", _first_line))),
    Detector("go", ("go.mod",), _go, pins=(("go", "go.mod", _go_mod),)),
    Detector("rust", ("Cargo.toml",), None,
             pins=(("rust", "rust-toolchain.toml", _rust_toolchain_toml),
                   ("rust", "rust-toolchain", _first_line))),
    Detector("ruby", ("Gemfile",), _bin_dir("ruby: Gemfile binstubs", "bin"),
             pins=(("ruby", ".ruby-version", _first_line),)),
    Detector("java", ("pom.xml", "build.gradle", "build.gradle.kts"), None,
             pins=(("java", ".java-version", _first_line),)),
    Detector("php", ("composer.json",), _bin_dir("php: composer.json", "vendor/bin")),
    Detector("deno", ("deno.json", "deno.jsonc"), None),
    Detector("elixir", ("mix.exs",), None),
    Detector("make", ("Makefile", "GNUmakefile", "makefile"), None),
)

# Files that define a root without being a type marker.
EXTRA_MARKERS = (CONTEXTRC,)

# Every file ctxd.activation.pins.read() looks at (tests/test_pins.py checks the two agree).
PIN_FILES = (".tool-versions", ".nvmrc", ".node-version", ".python-version", ".ruby-version", "go.mod")


def all_markers():
    """Every file name that makes a directory a project root, in table order."""
    seen = []
    for d in DETECTORS:
        for m in d.markers:
            if m not in seen:
                seen.append(m)
    for m in EXTRA_MARKERS:
        if m not in seen:
            seen.append(m)
    return seen


def is_root(path, markers=None):
    # exists() follows symlinks, like the shells' `-e` test the hooks use
    for m in markers or all_markers():
        if os.path.exists(os.path.join(path, m)):
            return True
    return False


def ceiling(start, environ=None):
    """The last directory a root walk from *start* looks at: $HOME when *start* is $HOME or
    below it (a marker above your home directory does not make a directory in it a project),
    or the directory a symlinked $HOME resolves to when *start* is in that; else None (the
    walk goes up to /). The shell hooks stop at the same place."""
    env = os.environ if environ is None else environ
    home = (env.get("HOME") or "").rstrip("/")
    if not home:
        return None
    if start == home or start.startswith(home + "/"):
        return home
    # A physical path under a symlinked $HOME (elvish's $pwd, a `cd -P`, a process's
    # getcwd()): the ceiling is the directory $HOME resolves to.
    real = os.path.realpath(home)
    if real != home and real != "/" and (start == real or start.startswith(real + "/")):
        return real
    return None


def ancestors(start, environ=None):
    """*start* (logical, as the shell's $PWD has it), then each parent, up to the ceiling or /."""
    d = start.rstrip("/") or "/"
    top = ceiling(d, environ)
    while True:
        yield d or "/"
        if d in ("", "/") or d == top:
            return
        d = d.rsplit("/", 1)[0]


def find_root(start, markers=None, environ=None):
    """The nearest directory at or above *start* holding a marker, or None.

    Walks the logical path (as the shell's $PWD has it), exactly as the shell
    hooks do, so a symlinked project is found under the name the user used;
    under $HOME it stops at $HOME (see ceiling()).
    """
    markers = markers or all_markers()
    for d in ancestors(start, environ):
        if is_root(d, markers):
            return d
    return None


def detect(root, environ, plan=None, enabled=None, apply=True):
    """Add every matching detector's type (and, if *apply*, its environment) to a plan.

    *enabled* maps detector names to on/off (from .contextrc [detect]).
    """
    plan = plan or Plan(root)
    plan.watch.append(root)  # entries appearing or vanishing (.venv, markers)
    at = root.rstrip("/") + "/"  # os.path.join(root, m) for these plain names, without its cost
    for det in DETECTORS:
        if enabled is not None and enabled.get(det.name) is False:
            continue
        found = [m for m in det.markers if os.path.exists(at + m)]
        if not found:
            continue
        plan.types.append((det.name, found))
        if apply and det.activate is not None:
            det.activate(root, plan, environ)
    # version pins: their bins go behind the project's own (venv, node_modules); pins.py
    # (the largest module of the cd path) loads only for a root that holds a pin file
    if apply and any(os.path.exists(at + f) for f in PIN_FILES):
        from ctxd.activation import pins

        pins.activate(root, plan, environ, enabled)
    return plan


def read_pins(root):
    """Version pins found at *root*: [(tool, version, file)]. Also .tool-versions."""
    pins = []
    for det in DETECTORS:
        for tool, rel, reader in det.pins:
            path = os.path.join(root, rel)
            if os.path.isfile(path):
                try:
                    version = reader(path)
                except Exception as e:  # a broken pin file must not break `show`
                    version = f"<unreadable: {e.__class__.__name__}>"
                if version:
                    pins.append((tool, str(version), rel))
    tv = os.path.join(root, ".tool-versions")
    if os.path.isfile(tv):
        with open(tv, encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split("#", 1)[0].split()
                if len(parts) >= 2:
                    pins.append((parts[0], " ".join(parts[1:]), ".tool-versions"))
    return pins


def rc_chain(root, environ=None):
    """contextrc.chain(): (the .contextrc files at and above *root*, nearest first;
    every path probed), up to the same ceiling as the root walk. Here, not in
    contextrc.py, so a project without a .contextrc never loads its parser."""
    files, probed = [], []
    for d in ancestors(root, environ):
        p = os.path.join(d, CONTEXTRC) if d != "/" else "/" + CONTEXTRC
        probed.append(p)
        if os.path.isfile(p):
            files.append(p)
    return files, probed
