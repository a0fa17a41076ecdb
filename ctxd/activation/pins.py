"""Version pins: put an already installed toolchain's bin on PATH (never install).

All knowledge of the version managers lives here: where each keeps its
installs, how its directory names spell a version, which binary proves an
install works, and the command that would install a missing one.

    .nvmrc / .node-version   nvm, fnm, volta, asdf, mise
    .python-version          pyenv, uv, asdf, mise
    .ruby-version            rbenv, chruby, asdf, mise
    go.mod (toolchain / go)  ~/sdk/goX.Y.Z (golang.org/dl), asdf, mise
    .tool-versions           asdf, mise (any tool; the first installed version listed)

A partial version (``20``, ``3.12``, ``v20.1``) matches the highest installed
version that starts with it; across managers the highest wins, ties go to the
manager listed first. On the cd path: stdlib ``os`` only, one ``scandir`` per
manager directory and a few stats for the candidates that match.
"""

import os

# Exported, never restored: the pins already reported as missing in this shell
# session (space-separated tool@version keys), so each is reported once. The
# name lives in state.py: the export names it without loading this module.
from ctxd.activation.state import TOLD_VAR  # noqa: E402,F401

_TOLD_MAX = 64

# Node's LTS lines by codename (nvm's alias/lts/ files win when present).
_LTS = {"argon": 4, "boron": 6, "carbon": 8, "dubnium": 10, "erbium": 12, "fermium": 14,
        "gallium": 16, "hydrogen": 18, "iron": 20, "jod": 22, "krypton": 24}

# The executable that proves an install works, per tool.
_EXE = {"node": ("node",), "python": ("python3", "python"), "ruby": ("ruby",), "go": ("go",)}
# .tool-versions names -> ctxd's tool names (asdf plugin / mise short names)
_ALIASES = {"nodejs": "node", "golang": "go"}
_ASDF_NAME = {"node": "nodejs", "go": "golang"}  # asdf's plugin names
_PIN_FILES = ((".nvmrc", "node"), (".node-version", "node"), (".python-version", "python"),
              (".ruby-version", "ruby"))
# What a version (or tool name) may hold: it ends up in a command the user pastes
# (`pyenv install 3.12`), so nothing a shell would read as syntax or expand.
_SHAPE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-:/")


def shaped(text):
    """Whether *text* looks like a version or a tool name (``3.12``, ``lts/iron``, ``go1.23rc1``,
    ``latest:3.12``, ``miniconda3-4.7.12``): letters, digits, ``._+-:/``, a letter or digit first."""
    return 0 < len(text) <= 64 and text[0].isalnum() and text.isascii() and not set(text) - _SHAPE


def _shown(text):
    return text if shaped(text) else repr(text)


class Pin:
    """One pinned tool: what the pin asks for and what on this machine matches it."""

    __slots__ = ("tool", "version", "file", "manager", "found", "dir", "bin", "broken", "install",
                 "status", "reason", "notify", "alts")

    def __init__(self, tool, version, file, notify=True):
        self.tool = tool
        self.version = version  # as written in the pin file
        self.file = file  # pin file name, relative to the root
        self.manager = None  # which manager's install matched
        self.found = None  # the installed version that matched
        self.dir = None  # its install directory
        self.bin = None  # the directory put on PATH
        self.broken = []  # [(dir, manager, why)] matching installs skipped
        self.install = None  # suggested install command when nothing matched
        self.status = "missing"  # active | missing | system | unresolved
        self.reason = ""  # for unresolved: why
        self.notify = notify  # report a miss on cd (not for go.mod's minimum `go` line)
        self.alts = ()  # .tool-versions: further versions listed, tried in order after the first

    @property
    def key(self):
        return f"{self.tool}@{self.version}"

    def to_dict(self):
        return {"tool": self.tool, "version": self.version, "file": self.file, "status": self.status,
                "manager": self.manager, "match": self.found, "dir": self.dir, "bin": self.bin,
                "install": self.install, "reason": self.reason,
                "broken": [{"dir": d, "manager": m, "reason": r} for d, m, r in self.broken]}


# -- reading pin files -------------------------------------------------------

def _lines(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            data = f.read(65536)
    except OSError:
        return None
    return [ln.split("#", 1)[0].strip() for ln in data.splitlines()]


def _go_mod(path):
    """(toolchain version or None, go line version or None) of a go.mod."""
    lines = _lines(path)
    if lines is None:
        return None, None
    go = toolchain = None
    for ln in lines:
        parts = ln.split("//", 1)[0].split()
        if len(parts) == 2 and parts[0] == "go":
            go = parts[1]
        elif len(parts) == 2 and parts[0] == "toolchain" and parts[1].startswith("go"):
            toolchain = parts[1][2:]
    return toolchain, go


def read(root, enabled=None):
    """The pins at *root*, one per tool: [Pin] (.tool-versions wins, as with asdf)."""
    pins = {}
    enabled = enabled or {}
    tv = os.path.join(root, ".tool-versions")
    for ln in _lines(tv) or ():
        parts = ln.split()
        if len(parts) >= 2:
            tool = _ALIASES.get(parts[0], parts[0])
            if tool not in pins:
                p = Pin(tool, parts[1], ".tool-versions")
                p.alts = tuple(parts[2:])
                pins[tool] = p
    for name, tool in _PIN_FILES:
        if tool in pins:
            continue
        lines = _lines(os.path.join(root, name))
        first = next((ln for ln in lines or () if ln), None)
        if first:
            pins[tool] = Pin(tool, first.split()[0], name)
    if "go" not in pins:
        toolchain, go = _go_mod(os.path.join(root, "go.mod"))
        if toolchain:
            pins["go"] = Pin("go", toolchain, "go.mod")
        elif go:
            # the `go` line is a minimum the go command can satisfy itself (GOTOOLCHAIN):
            # used when installed, never reported as missing
            pins["go"] = Pin("go", go, "go.mod", notify=False)
    return [p for t, p in pins.items() if enabled.get(t) is not False]


# -- where the managers keep installs -------------------------------------------

def _home(environ):
    return environ.get("HOME") or os.path.expanduser("~")


def _data_home(environ):
    d = environ.get("XDG_DATA_HOME", "")
    return d if d.startswith("/") else os.path.join(_home(environ), ".local", "share")


def _nvm_dir(environ):
    return environ.get("NVM_DIR") or os.path.join(_home(environ), ".nvm")


def _fnm_dir(environ):
    if environ.get("FNM_DIR"):
        return environ["FNM_DIR"]
    legacy = os.path.join(_home(environ), ".fnm")
    return legacy if os.path.isdir(legacy) else os.path.join(_data_home(environ), "fnm")


def _asdf_dir(environ):
    return environ.get("ASDF_DATA_DIR") or os.path.join(_home(environ), ".asdf")


def _mise_dir(environ):
    return environ.get("MISE_DATA_DIR") or os.path.join(_data_home(environ), "mise")


def _uname():
    try:
        return os.uname().sysname.lower()
    except AttributeError:  # pragma: no cover - not POSIX
        return ""


def _entries(d):
    try:
        with os.scandir(d) as it:
            return [e.name for e in it if not e.name.startswith(".")]
    except OSError:
        return []


def _strip_v(name):
    return name[1:] if name[:1] in ("v", "V") and name[1:2].isdigit() else name


# Each lister: environ, tool -> (manager, container dir, [(name, flavor, version, install dir)], root)
# where *root* is the manager's own directory (its presence says "this manager is used here").

def _nvm(environ, tool):
    base = os.path.join(_nvm_dir(environ), "versions", "node")
    return "nvm", base, [(n, "", _strip_v(n), os.path.join(base, n)) for n in _entries(base)], _nvm_dir(environ)


def _fnm(environ, tool):
    root = _fnm_dir(environ)
    base = os.path.join(root, "node-versions")
    return "fnm", base, [(n, "", _strip_v(n), os.path.join(base, n, "installation")) for n in _entries(base)], root


def _volta(environ, tool):
    root = environ.get("VOLTA_HOME") or os.path.join(_home(environ), ".volta")
    base = os.path.join(root, "tools", "image", "node")
    return "volta", base, [(n, "", n, os.path.join(base, n)) for n in _entries(base)], root


def _asdf(environ, tool):
    root = _asdf_dir(environ)
    base = os.path.join(root, "installs", _ASDF_NAME.get(tool, tool))
    return "asdf", base, [_flavored(tool, n, base) for n in _entries(base)], root


def _mise(environ, tool):
    root = _mise_dir(environ)
    base = os.path.join(root, "installs", tool)
    return "mise", base, [_flavored(tool, n, base) for n in _entries(base)], root


def _pyenv(environ, tool):
    root = environ.get("PYENV_ROOT") or os.path.join(_home(environ), ".pyenv")
    base = os.path.join(root, "versions")
    return "pyenv", base, [_flavored(tool, n, base) for n in _entries(base)], root


def _uv(environ, tool):
    base = environ.get("UV_PYTHON_INSTALL_DIR") or os.path.join(_data_home(environ), "uv", "python")
    system = {"darwin": "macos"}.get(_uname(), _uname())
    found = []
    for n in _entries(base):
        # cpython-3.12.4-linux-x86_64-gnu, cpython-3.13.0+freethreaded-macos-aarch64-none
        parts = n.split("-")
        if len(parts) < 3 or (system and parts[2] != system):
            continue
        impl, ver = parts[0], parts[1]
        ver, _, variant = ver.partition("+")
        flavor = impl if impl != "cpython" else ""
        if variant:
            flavor += "+" + variant
        found.append((n, flavor, ver, os.path.join(base, n)))
    return "uv", base, found, os.path.dirname(base)


def _rbenv(environ, tool):
    root = environ.get("RBENV_ROOT") or os.path.join(_home(environ), ".rbenv")
    base = os.path.join(root, "versions")
    return "rbenv", base, [_flavored(tool, n, base) for n in _entries(base)], root


def _chruby(environ, tool):
    # chruby's default RUBIES: /opt/rubies/* and ~/.rubies/*
    found = []
    bases = (os.path.join(_home(environ), ".rubies"), "/opt/rubies")
    for base in bases:
        found += [_flavored(tool, n, base) for n in _entries(base)]
    return "chruby", bases, found, bases[0]


def _go_sdk(environ, tool):
    base = os.path.join(_home(environ), "sdk")  # golang.org/dl: `go1.22.1 download`
    found = [(n, "", n[2:], os.path.join(base, n)) for n in _entries(base) if n.startswith("go") and n[2:3].isdigit()]
    return "go", base, found, base


def _flavored(tool, name, base):
    """(name, flavor, version, dir) for names like 3.12.4, ruby-3.3.0, jruby-9.4.5.0, pypy3.10-7.3.12."""
    flavor, ver = "", _strip_v(name)
    if tool in ("ruby", "python") and not ver[:1].isdigit():
        head, sep, rest = ver.partition("-")
        if sep and rest[:1].isdigit():
            flavor, ver = head, rest
        else:
            flavor, ver = name, ""
        if tool == "ruby" and flavor == "ruby":
            flavor = ""
    if tool == "python" and ver.endswith("t") and ver[:-1].replace(".", "").isdigit():
        flavor, ver = "+freethreaded", ver[:-1]
    return name, flavor, ver, os.path.join(base, name)


_MANAGERS = {
    ".nvmrc": (_nvm, _fnm, _volta, _asdf, _mise),
    ".node-version": (_nvm, _fnm, _volta, _asdf, _mise),
    ".python-version": (_pyenv, _uv, _asdf, _mise),
    ".ruby-version": (_rbenv, _chruby, _asdf, _mise),
    "go.mod": (_go_sdk, _asdf, _mise),
    ".tool-versions": (_asdf, _mise),
}


def _install_cmd(manager, tool, want, written):
    """The command that would install what *want* asks for with *manager*."""
    v = _strip_v(written)
    if tool == "go" and v.startswith("go"):
        v = v[2:]
    lts = want.install  # node aliases: "node" (latest), "--lts", "lts/<codename>"
    if lts and manager in ("nvm", "fnm"):
        if lts == "node":
            return "nvm install node" if manager == "nvm" else "fnm install --latest"
        return f"{manager} install {lts}"
    if lts:  # volta, asdf, mise take a version or `lts` / `latest`
        v = {"node": "latest", "--lts": "lts"}.get(lts) or str(want.prefix[0])
    if manager in ("nvm", "fnm", "pyenv", "rbenv"):
        return f"{manager} install {v}"
    if manager == "volta":
        return f"volta install node@{v}"
    if manager == "asdf":
        name = _ASDF_NAME.get(tool, tool)
        exact = v.count(".") >= 2 or not v[:1].isdigit()
        return f"asdf install {name} {v}" if exact else f"asdf install {name} latest:{v}"
    if manager == "mise":
        return f"mise install {tool}@{v}"
    if manager == "uv":
        return f"uv python install {v}"
    if manager == "chruby":  # chruby's companion installer
        return f"ruby-install ruby {v}"
    full = v + ".0" if v.count(".") < 2 and _nums(v) else v  # go: golang.org/dl (go1.22.0, go1.23rc1)
    return f"go install golang.org/dl/go{full}@latest && go{full} download"


# -- matching --------------------------------------------------------------

def _nums(ver):
    """(20, 11, 1) for "20.11.1"; None when not plain dotted numbers."""
    parts = ver.split(".")
    if not ver or not all(p.isdigit() and p.isascii() for p in parts):
        return None
    return tuple(int(p) for p in parts)


class _Want:
    """What a pin asks for: a numeric prefix (and flavor), a name, or "the highest"."""

    __slots__ = ("prefix", "flavor", "name", "minimum", "even_major", "install")

    def __init__(self, prefix=None, flavor="", name=None, minimum=None, even_major=False, install=None):
        self.prefix, self.flavor, self.name = prefix, flavor, name
        self.minimum, self.even_major, self.install = minimum, even_major, install

    def score(self, name, flavor, ver):
        """A sort key for a matching candidate, or None when it does not match."""
        if self.name is not None:
            return (2,) if name == self.name else None
        if flavor != self.flavor:
            return None
        n = _nums(ver)
        if n is None:
            return None
        if self.prefix is not None and n[:len(self.prefix)] != self.prefix:
            return None
        if self.minimum is not None and n < self.minimum:
            return None
        if self.even_major and (n[0] % 2 or n[0] < 4):
            return None
        # the highest version; at equal value the most specific name (20.11.1 over a `20` link)
        return (1, n + (0,) * (4 - len(n)), len(n))


def _want(pin, environ):
    """(_Want, None) or (None, reason it cannot be resolved); (None, "system") for `system`."""
    v = pin.version.strip()
    low = v.lower()
    if not shaped(pin.tool) or not (shaped(v) or (pin.file == ".tool-versions" and low.startswith("path:/"))
                                    or low in ("lts/*", "lts-*")):
        return None, "not a version (only letters, digits and ._+-:/ are)"
    if low == "system":
        return None, "system"
    if pin.file == ".tool-versions" and low.startswith("latest"):  # asdf/mise: latest, latest:3.12
        n = _nums(low[7:]) if low[6:7] == ":" else ()
        if n is None:
            return None, f"{v!r} is not a version ctxd can match"
        return _Want(prefix=n or None), None
    if pin.file == ".tool-versions" and low.startswith("path:"):  # asdf: a custom install directory
        return _Want(name=v[5:]), None
    if pin.tool == "node":
        if low in ("node", "stable", "latest", "current"):
            return _Want(install="node"), None
        for _ in range(5):  # nvm aliases may point at aliases
            if not (low.startswith("lts/") or low.startswith("lts-")) and _nums(_strip_v(low)) is None:
                target = _read_alias(os.path.join(_nvm_dir(environ), "alias", low))
                if target is None:
                    break
                low = target.lower()
            else:
                break
        if low.startswith("lts/") or low.startswith("lts-"):
            code = low[4:]
            if code in ("*", "latest"):
                star = _read_alias(os.path.join(_nvm_dir(environ), "alias", "lts", "*"))
                code = star.lower()[4:] if star and star.lower().startswith("lts/") else ""
                if not code:
                    return _Want(even_major=True, install="--lts"), None
            target = _read_alias(os.path.join(_nvm_dir(environ), "alias", "lts", code))
            major = _nums(_strip_v(target).split(".")[0]) if target else None
            if major is None and code in _LTS:
                major = (_LTS[code],)
            if major is None:
                return None, f"unknown Node LTS line {v!r}"
            return _Want(prefix=major[:1], install=f"lts/{code}"), None
        n = _nums(_strip_v(low))
        if n is None:
            return None, f"{v!r} is not a version ctxd can match (a range or an unknown alias)"
        return _Want(prefix=n), None
    if pin.tool == "go":
        n = _nums(low[2:] if low.startswith("go") else low)
        if n is None:
            return _Want(name=low if low.startswith("go") else "go" + low), None  # go1.23rc1: that SDK only
        if not pin.notify and len(n) >= 3:  # `go 1.22.1`: at least that, same minor
            return _Want(prefix=n[:2], minimum=n), None
        return _Want(prefix=n), None
    name, flavor, ver, _ = _flavored(pin.tool, _strip_v(v), "")
    n = _nums(ver)
    if n is None:
        return _Want(name=v), None  # pyenv/rbenv names: miniconda3-latest, my-venv, ...
    return _Want(prefix=n, flavor=flavor), None


def _read_alias(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(200).strip() or None
    except OSError:
        return None


def _bin_for(tool, d):
    """(bin dir, None) for a working install at *d*, or (None, why it is broken)."""
    if not os.path.isdir(d):
        return None, "not a directory"
    exes = _EXE.get(tool)
    subdirs = ("bin", "go/bin") if tool == "go" else ("bin",)  # asdf-golang: go/bin
    why = "no bin/"
    for sub in subdirs:
        b = os.path.join(d, sub)
        if not os.path.isdir(b):
            continue
        if exes is None:  # a tool only asdf/mise know: any executable in bin/ will do
            if any(os.access(os.path.join(b, n), os.X_OK) and os.path.isfile(os.path.join(b, n))
                   for n in _entries(b)):
                return b, None
            why = f"{sub}/ holds no executable"
            continue
        for exe in exes:
            p = os.path.join(b, exe)
            if os.path.isfile(p):
                if os.access(p, os.X_OK):
                    return b, None
                return None, f"{sub}/{exe} is not executable"
        why = f"no {sub}/{exes[0]}"
    return None, why


def resolve(pin, environ, watch=None):
    """Fill in what on this machine matches *pin*; add the directories to watch."""
    want, why = _want(pin, environ)
    if why == "system":
        pin.status, pin.reason = "system", "the pin says so"
        return pin
    wants = [want] if want else []
    for extra in pin.alts if want else ():  # asdf uses the first listed version that is installed
        w, _ = _want(Pin(pin.tool, extra, pin.file), environ)
        if w:
            wants.append(w)
    listers = _MANAGERS.get(pin.file, (_asdf, _mise))
    seen, matches = [], []
    for index, lister in enumerate(listers):
        manager, base, cands, root = lister(environ, pin.tool)
        seen.append((manager, root))
        if watch is not None:
            watch.extend(base if isinstance(base, tuple) else (base,))
        if want and want.name and want.name.startswith("/") and manager == "asdf":
            cands = cands + [(want.name, "", "", want.name)]
        for rank, w in enumerate(wants):
            for name, flavor, ver, d in cands:
                s = w.score(name, flavor, ver)
                if s is not None:
                    matches.append(((-rank,) + s, -index, name, manager, d))
    if why:
        pin.status, pin.reason = "unresolved", why
    done = set()
    for _s, _m, name, manager, d in sorted(matches, reverse=True):
        real = os.path.realpath(d)
        if real in done:
            continue
        done.add(real)
        b, broken = _bin_for(pin.tool, d)
        if b is None:
            pin.broken.append((d, manager, broken))
            continue
        pin.status, pin.manager, pin.dir, pin.bin = "active", manager, d, b
        pin.found = _strip_v(name) if manager != "go" else name[2:]
        break
    if pin.status == "missing" and pin.tool == "python" and want.prefix and len(want.prefix) == 2 \
            and not want.flavor:
        # `uv python pin` writes "3.12": a python3.12 already on PATH (the system's) satisfies it
        exe = _on_path(environ, "python%d.%d" % want.prefix)
        if exe:
            pin.status, pin.reason = "system", f"python{want.prefix[0]}.{want.prefix[1]} on PATH: {exe}"
            return pin
    if pin.status == "missing" and not (want.name or "").startswith("/"):
        # the first of the pin's managers that is in use here, else the first one
        pick = next((m for m, r in seen if os.path.isdir(r)), seen[0][0])
        pin.install = _install_cmd(pick, pin.tool, want, pin.version)
    return pin


def _on_path(environ, name):
    for d in environ.get("PATH", "").split(":"):
        p = os.path.join(d, name)
        if d.startswith("/") and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def activate(root, plan, environ, enabled=None):
    """Add each resolved pin's bin to *plan* (behind the project's own bins) and watch its sources."""
    for pin in read(root, enabled):
        plan.watch.append(os.path.join(root, pin.file))
        resolve(pin, environ, plan.watch)
        plan.pins.append(pin)
        if pin.status == "active":
            plan.path(pin.bin, f"{pin.tool}: {pin.file} {pin.version} -> {pin.manager} {pin.found}")


def describe(pin, trusted=True):
    """`ctxd show`'s account of one pin: what matched, or why nothing did."""
    head = f"{_shown(pin.version)} ({pin.file})"
    if pin.status == "active":
        extra = "" if trusted else "  (withheld: root not trusted)"
        return f"{head}: {pin.manager} {pin.found}  {pin.bin}{extra}"
    if pin.status == "system":
        return f"{head}: the system's own {pin.tool}, nothing activated ({pin.reason})"
    if pin.status == "unresolved":
        return f"{head}: cannot resolve: {pin.reason}"
    how = f"; install it with: {pin.install}" if pin.install else ""
    if not pin.notify:
        return f"{head}: no matching install (a minimum: the go command fetches it itself){how}"
    return f"{head}: not installed{how}"


def message(pin):
    """The one line a missing or unresolvable pin gets on cd."""
    if pin.status == "unresolved":
        return f"ctxd: {pin.file} pins {_shown(pin.tool)} {_shown(pin.version)}: {pin.reason}; nothing activated for it"
    broken = f" ({len(pin.broken)} broken install(s) skipped, see ctxd show)" if pin.broken else ""
    if pin.install:
        return (f"ctxd: {pin.file} pins {pin.tool} {pin.version}, which is not installed{broken}; "
                f"ctxd never installs. Install it with: {pin.install}")
    return f"ctxd: {pin.file} pins {pin.tool} {pin.version}, which is not installed{broken}"


def notices(plan, environ):
    """([lines not yet shown in this shell session], new TOLD_VAR value or None if unchanged)."""
    keyed, told = keyed_notices(plan, environ)
    return [line for _key, line in keyed], told


def keyed_notices(plan, environ):
    """notices(), each line with the TOLD_VAR key that marks it shown: [(key, line)], told."""
    if not plan or not plan.trusted or not plan.pins:
        return [], None
    told = environ.get(TOLD_VAR, "").split()
    out = []
    for pin in plan.pins:
        if pin.status in ("missing", "unresolved") and pin.notify and pin.key not in told:
            out.append((pin.key, message(pin)))
            told.append(pin.key)
    if not out:
        return [], None
    return out, " ".join(told[-_TOLD_MAX:])
