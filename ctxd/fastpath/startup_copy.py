"""The start-up copy of the hook (issue 13, item 4).

Running Python (and click) at every shell start costs ~65 ms. So `ctxd hook`
also writes what it prints to a file in the cache dir (:func:`cache_file`),
behind a first line that checks, with shell builtins only, that the copy
still belongs to the installed ctxd: this version's ``ctxd-X.Y.dist-info``
is there, the interpreter is, and no file the text is made from (template,
shell modules, detectors, the entry point) is newer than the copy. The rc
lines `ctxd setup` writes source that copy, and run `ctxd hook SHELL` (which
writes it again) only when it is missing or stands down: an upgrade,
reinstall or edit of ctxd never leaves a stale hook in a new shell.
Callers: ctxd.commands.hook, ctxd.commands.setup.
"""

import os
import sys

from ctxd.shells.base import hook_cache_file

CACHE_HEADER = "ctxd hook cache"  # on the copy's first line; `ctxd doctor` may look for it


def cache_file(shell_name, environ=None):
    """Where the start-up copy of the hook for *shell_name* lives."""
    return hook_cache_file(shell_name, environ)


def hook_text(sh, environ=None):
    """What `ctxd hook SHELL` prints (its export command tries the shell's export
    bundle first: write_bundle() writes it)."""
    from ctxd.activation.detectors import all_markers
    from ctxd.shells.base import export_command

    return sh.hook(all_markers(), export_command(sh.name, environ))


def write_bundle(sh, environ=None):
    """Write the export bundle hook_text()'s command tries (ctxd.fastpath.bundle); its path or None."""
    from ctxd.fastpath import bundle

    return bundle.write(sh.name, environ)


def dist_info():
    """This version's dist-info directory (its name changes with every version), or None."""
    import ctxd

    name = f"ctxd-{ctxd.__version__}.dist-info"
    site = os.path.dirname(os.path.dirname(os.path.abspath(ctxd.__file__)))
    for d in [site] + sys.path:
        p = os.path.join(d or ".", name)
        if d and os.path.isdir(p):
            return os.path.abspath(p)
    return None


def sources(sh):
    """The files the hook text is made from: any of them newer than the copy makes it stale."""
    import ctxd
    from ctxd.shells.base import template_path

    pkg = os.path.dirname(os.path.abspath(ctxd.__file__))
    mods = ["__init__.py", os.path.join("fastpath", "console_entry.py"),
            os.path.join("fastpath", "export_entry.py"), os.path.join("fastpath", "startup_copy.py"),
            os.path.join("activation", "detectors.py"), os.path.join("shells", "base.py")]
    mods += [os.path.join("shells", f"{c.__module__.rsplit('.', 1)[-1]}.py")
             for c in type(sh).__mro__ if c.__module__.startswith("ctxd.shells.") and c.__module__ != "ctxd.shells.base"]
    # the export bundle's modules too: an edit of one makes the bundle stand down, and
    # the stale copy makes the next shell run `ctxd hook`, which writes it again
    from ctxd.fastpath.bundle import modules_for, source_file

    mods += [os.path.relpath(source_file(m), pkg) for m in modules_for(sh.name)]
    mods.append(os.path.join("fastpath", "bundle.py"))
    found = [template_path(sh.template)]
    found += [p for p in (os.path.join(pkg, m) for m in dict.fromkeys(mods)) if os.path.isfile(p)]
    return found


INTERPRETER_LINE = "# interpreter: "


def cached_hook(sh, text, path):
    """*text* behind the no-process check that it is still current (see module doc)."""
    import ctxd

    return (INTERPRETER_LINE + sys.executable + "\n"
            + sh.cache_guard(dist_info(), sys.executable, sources(sh), path,
                             f"{CACHE_HEADER} (ctxd {ctxd.__version__}): `ctxd hook {sh.name}` writes it")
            + text)


def another_install_owns(path, environ=None):
    """Whether the copy at *path* belongs to another ctxd installation that
    should keep it: its interpreter still exists and the `ctxd` first on PATH
    is not this one (with two installs, the one on PATH wins, as when the rc
    lines ran `ctxd hook` at every shell start)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            first = f.readline()
    except OSError:
        return False
    if not first.startswith(INTERPRETER_LINE):
        return False
    other = first[len(INTERPRETER_LINE):].rstrip("\n")
    if other == sys.executable or not os.path.exists(other):
        return False
    import shutil

    env = os.environ if environ is None else environ
    found = shutil.which("ctxd", path=env.get("PATH"))
    ours = os.path.join(os.path.dirname(sys.executable), "ctxd")
    return not (found and os.path.realpath(found) == os.path.realpath(ours))


def write_cache(sh, text, environ=None, force=False):
    """Write the start-up copy of *text*; the path, or None when it was not
    written (cannot be, or another installation owns it and *force* is false:
    `ctxd setup --write` forces, a plain `ctxd hook` does not)."""
    from ctxd.activation.fileio import atomic_write

    if not sh.hook_cache:
        return None
    path = cache_file(sh.name, environ)
    if not force and another_install_owns(path, environ):
        return None
    try:
        atomic_write(path, cached_hook(sh, text, path), mode=0o644)
    except OSError:
        return None  # no copy: the rc lines keep running `ctxd hook`, never an error
    return path
