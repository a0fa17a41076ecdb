"""Helpers tests import by name (a module of its own: two conftest.py files would clash).

``ctxd(...)`` runs the command line in a child process: every test that needs a whole ctxd
process calls it (or binds its options once with functools.partial). ``write_config`` writes
the isolated user's config; ``write_files``, ``allow_all``, ``plan_of`` and ``plan_sets`` make a
project with .contextrc files, trust them and plan its environment.
"""

import os
import shutil
import subprocess
import sys


def write_config(home, text):
    """Write the isolated user's ~/.config/ctxd/config.toml."""
    d = home / ".config" / "ctxd"
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.toml").write_text(text)


def write_files(root, files):
    """Write {relative path: text} under *root*, making the directories."""
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def allow_all(root):
    """Trust every .contextrc under *root* as it is now."""
    from ctxd.activation import trust
    from ctxd.activation.fileio import sha256_hex

    for rc in root.rglob(".contextrc"):
        trust.allow(str(rc), sha256_hex(rc.read_bytes()))


def plan_of(root, env=None):
    """The planner's Plan for *root* from a minimal environment (HOME=/h, PATH=/usr/bin), *env* on top."""
    from ctxd.activation import planner

    base = {"HOME": "/h", "PATH": "/usr/bin"}
    base.update(env or {})
    return planner.build(str(root), base, base)


def plan_sets(plan):
    """{name: (value, source)} of what *plan* sets."""
    return {n: (v, s) for n, v, s, _ in plan.sets}


def ctxd_script():
    """The ctxd console script of the interpreter running the tests (what a user's shell and an AI
    tool's hook run; not a version manager's shim, a shell script that would confuse detection),
    else the one on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "ctxd")
    if os.access(here, os.X_OK):
        return here
    found = shutil.which("ctxd")
    assert found, "ctxd is not installed (pip install -e .)"
    return found


def ctxd_argv(*args, script=False):
    """The command line of ``ctxd ARGS``: this interpreter's ``python -m ctxd``, or with *script*
    the console script."""
    return [ctxd_script(), *args] if script else [sys.executable, "-m", "ctxd", *args]


def ctxd(*args, cwd=None, env=None, extra_env=None, input=None, stdin=None, check=None, script=False,
         prefix=(), timeout=120, text=True):
    """Run ``ctxd ARGS`` in a child process; return its CompletedProcess, stdout and stderr captured.

    cwd: where it runs; PWD is set to it as well, as a shell sets it.
    env: the child's whole environment (default: this process's, which conftest.py isolates);
    extra_env: variables set on top of it (and of PWD).
    input: what it reads on stdin; stdin: its stdin otherwise (inherited by default).
    check: the exit status it must end with (asserted); None takes any.
    script: run the console script instead of ``python -m ctxd``; prefix: a command running it
    (setpriv, a wrapper).
    text: False for bytes in and out.
    """
    e = dict(os.environ if env is None else env)
    if cwd is not None:
        e["PWD"] = str(cwd)
    e.update(extra_env or {})
    p = subprocess.run([*prefix, *ctxd_argv(*args, script=script)], cwd=cwd, env=e, input=input, stdin=stdin,
                       capture_output=True, text=text, timeout=timeout)
    if check is not None:
        assert p.returncode == check, (args, p.returncode, p.stdout, p.stderr)
    return p


def plant_vector(db_path, model, dim):
    """One vector of *model* (dim floats) for message 1 and the mean its sign bits are taken
    from, written straight into the store: as if that model had embedded the store."""
    import json
    import sqlite3

    with sqlite3.connect(db_path) as c:
        c.execute("INSERT INTO embeddings(id, model, scale, bits, vec) VALUES (1, ?, 0.01, ?, ?)",
                  (model, bytes(dim // 8), bytes(dim)))
        c.execute("INSERT INTO meta(key, value) VALUES ('embed_mean', ?)",
                  (json.dumps({"model": model, "mean": [0.0] * dim}),))
    c.close()  # the with block commits; it does not close
