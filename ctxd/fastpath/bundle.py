"""The export bundle: the hot path's modules in one file, for the hooks' export process.

A first visit of a project is one `ctxd export` process, and a third of what
ctxd adds to Python's own start-up there was importlib finding, opening,
validating and unmarshalling some twenty small modules one by one (four
directory listings, three system calls a module). `ctxd hook SHELL` (and
`ctxd setup`) therefore also writes those modules' code objects, in the order
a first visit imports them, to one file per shell and installation
(:func:`bundle_path`), and the export command the hook runs
(:func:`ctxd.shells.base.export_command`) tries that file first:

- it is used only when its first field is this interpreter's bytecode magic
  number (anything else is never unmarshalled further), and then only when
  every module's source still has the size and nanosecond mtime it was
  compiled from: an upgrade, a reinstall or an edit of ctxd makes it stand
  down, as a stale ``.pyc`` would;
- a module already imported is never replaced, and a module body that fails
  takes back every module the bundle added; the export then imports as
  before. A missing, torn or foreign file costs one failed open or unmarshal,
  never an error (the export itself reports errors as always);
- nothing on the hot path writes it: `ctxd hook` rebuilds it, which the
  start-up lines run whenever ctxd changed (ctxd.fastpath.startup_copy). Until
  then, an export in a shell opened before an upgrade imports from disk.

Standard library only, and imported only by `ctxd hook`, `ctxd setup`,
`ctxd doctor` and the tests, never on the cd path.
"""

import marshal
import os
import sys

# ctxd's modules on the way into a project with no .contextrc and no pin file, each after
# the modules its top level imports (the order importlib finishes them in), then the shell's
# own (ctxd.shells.<name> and the shell modules its class derives from).
# tests/test_export_hot_path.py checks that a first visit through the bundle imports no ctxd
# module from disk, and what the path may import at all.
CORE = ("ctxd", "ctxd.fastpath", "ctxd.fastpath.export_entry", "ctxd.fastpath.posix_os", "ctxd.errors",
        "ctxd.shells", "ctxd.shells.base", "ctxd.activation", "ctxd.paths", "ctxd.activation.detectors",
        "ctxd.fastpath.minijson", "ctxd.activation.state", "ctxd.activation.envdiff", "ctxd.activation.export",
        "ctxd.activation.fileio", "ctxd.activation.config", "ctxd.activation.trust",
        "ctxd.activation.planner", "ctxd.activation.revisit")

FORMAT = 1  # of the tuple inside the file: (FORMAT, loader code, entries)

# Runs in the export process with E = the entries, before export_entry.hook_main(): what
# hook_process() would do first (ctxd.fastpath.posix_os as os) happens as the modules are
# made, so every module body sees the same world as with importlib.
LOADER = """\
def _load(E):
    import posix, sys
    for name, path, mtime_ns, size, is_pkg, code in E:
        st = posix.stat(path)
        if st.st_mtime_ns != mtime_ns or st.st_size != size:
            return
    mods = sys.modules
    module = type(sys)
    added = []
    try:
        for name, path, mtime_ns, size, is_pkg, code in E:
            if name in mods:
                continue
            m = module(name)
            m.__file__ = path
            if is_pkg:
                m.__path__ = [path.rpartition("/")[0]]
                m.__package__ = name
            else:
                m.__package__ = name.rpartition(".")[0]
            mods[name] = m
            added.append(name)
            exec(code, m.__dict__)
            parent, _, child = name.rpartition(".")
            if parent:
                setattr(mods[parent], child, m)
            if name == "ctxd.fastpath.posix_os":
                m.install()
    except BaseException:
        posix_os = mods.get("ctxd.fastpath.posix_os")
        for name in added:
            mods.pop(name, None)
        if posix_os is not None and "ctxd.fastpath.posix_os" in added and mods.get("os") is posix_os:
            del mods["os"], mods["os.path"]  # importing from disk installs its own
        raise


_load(E)
"""


def modules_for(shell_name):
    """The bundle's module names for *shell_name*, in load order."""
    from ctxd.shells import get_shell

    own = [c.__module__ for c in reversed(type(get_shell(shell_name)).__mro__)
           if c.__module__.startswith("ctxd.shells.") and c.__module__ != "ctxd.shells.base"]
    return CORE + tuple(dict.fromkeys(own))  # last: nu's imports minijson


def bundle_path(shell_name, environ=None):
    """Where the bundle for *shell_name* of this installation (interpreter + ctxd directory) lives."""
    from ctxd import paths
    from ctxd.activation.fileio import sha256_hex

    import ctxd

    install = f"{sys.executable}\0{os.path.dirname(os.path.abspath(ctxd.__file__))}"
    key = sha256_hex(install.encode("utf-8", "surrogateescape"))[:16]
    tag = sys.implementation.cache_tag or "python"
    return os.path.join(paths.cache_dir(environ), "hook", f"export-{shell_name}-{tag}-{key}.bin")


def source_file(name):
    """The source file of ctxd module *name* (a package's __init__.py)."""
    import ctxd

    pkg = os.path.dirname(os.path.abspath(ctxd.__file__))
    parts = name.split(".")[1:]
    as_pkg = os.path.join(pkg, *parts, "__init__.py")
    return as_pkg if os.path.isfile(as_pkg) else os.path.join(pkg, *parts) + ".py"


def entries(names):
    """(name, source path, mtime_ns, size, is_pkg, code) for each module in *names*.

    The code comes from the source as it is now; its stat is taken before the
    read, so a file changed while this runs leaves a bundle that stands down."""
    out = []
    for name in names:
        path = source_file(name)
        is_pkg = os.path.basename(path) == "__init__.py"
        st = os.stat(path)
        with open(path, "rb") as f:
            source = f.read()
        # optimize=0: what importlib compiles for the hook's `-I` process, whatever -O or
        # PYTHONOPTIMIZE this one runs with
        code = compile(source, path, "exec", dont_inherit=True, optimize=0)
        out.append((name, path, st.st_mtime_ns, st.st_size, is_pkg, code))
    return tuple(out)


def magic():
    """This interpreter's bytecode magic number (what a .pyc header starts with)."""
    return sys.modules["_frozen_importlib_external"].MAGIC_NUMBER


def write(shell_name, environ=None):
    """Write the bundle for *shell_name*; its path, or None when it cannot be written
    (a read-only cache, a source that cannot be read): the export then imports as before."""
    from ctxd.activation.fileio import atomic_write

    path = bundle_path(shell_name, environ)
    names = modules_for(shell_name)
    try:
        if current(path, names):
            return path  # shells without a start-up copy run `ctxd hook` at every start
        body = marshal.dumps((FORMAT, compile(LOADER, "<ctxd export bundle>", "exec"), entries(names)))
        atomic_write(path, marshal.dumps((magic(), body)), mode=0o644)
    except (OSError, SyntaxError, ValueError):
        return None
    return path


def current(path, names):
    """Whether the bundle at *path* is one the export would use now, of exactly *names*."""
    try:
        with open(path, "rb") as f:
            m, body = marshal.loads(f.read())
        if m != magic():
            return False
        v, _, old = marshal.loads(body)
        if v != FORMAT or tuple(e[0] for e in old) != tuple(names):
            return False
        for name, path_, mtime_ns, size, _, _ in old:
            st = os.stat(path_)
            if (st.st_mtime_ns, st.st_size) != (mtime_ns, size) or path_ != source_file(name):
                return False
    except (OSError, EOFError, ValueError, TypeError):
        return False
    return True


def load_code(path):
    """The Python the export command runs before hook_main() to use the bundle at *path*:
    one line (every shell quotes it as one argument), the statements in a string."""
    body = ("try:\n"
            " import marshal\n"
            f" with open({path!r},'rb') as f:m,b=marshal.loads(f.read())\n"
            " if m==sys.modules['_frozen_importlib_external'].MAGIC_NUMBER:\n"
            "  v,c,E=marshal.loads(b)\n"
            f"  if v=={FORMAT}:exec(c,{{'E':E}})\n"
            "except Exception:pass\n")
    return f"exec({body!r});"
