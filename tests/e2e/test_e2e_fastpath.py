"""The hook starts no process unless something can have changed.

Proved without timing: the hook's embedded command is routed through a
wrapper that logs each run."""

import os
import time

from e2ekit import cd, make_wrapper, plain_dir, python_project, runs, wrap_command


def _age(*paths):
    """Put mtimes well in the past, so any later change is newer whatever the clock."""
    t = time.time() - 3600
    for p in paths:
        os.utime(p, (t, t))


def _age_watched(watch):
    """Age every watched path below the stamp and the stamp below now (CTXD_WATCH:
    the stamp on the first line, then +path / -path lines)."""
    lines = watch.split("\n")
    _age(*[line[1:] for line in lines[1:] if line.startswith("+")])
    if lines[0]:
        t = time.time() - 1800
        os.utime(lines[0], (t, t))


def test_no_process_outside_projects_or_within_one(shell, sessions, tmp_path):
    a = plain_dir(tmp_path / "plain" / "a")
    b = plain_dir(tmp_path / "plain" / "b" / "deep")
    py = python_project(tmp_path / "py")
    sub = plain_dir(os.path.join(py, "src", "pkg"))
    wrapper, log = make_wrapper(tmp_path)
    s = sessions(shell)
    s.run(wrap_command(shell, wrapper))

    for d in (a, b, tmp_path, "/", a, str(tmp_path / "plain")):
        assert cd(s, d) == ""
    s.run("true")
    assert runs(log) == 0

    cd(s, py)
    assert runs(log) == 1
    assert s.env_dump()["CTXD_ROOT"] == py
    for d in (sub, py, os.path.join(py, "src"), sub):
        cd(s, d)
    s.run("true")
    s.run("echo hi")
    assert runs(log) == 1

    cd(s, a)  # leaving for a plain dir: the shell's restore function, no process
    assert runs(log) == 1
    env = s.env_dump()
    assert "CTXD_ROOT" not in env and "VIRTUAL_ENV" not in env and "CTXD_STATE" not in env
    assert os.path.join(py, ".venv", "bin") not in env["PATH"].split(":")
    for d in (b, a, "/"):
        cd(s, d)
    assert runs(log) == 1

    # back in the project, nothing changed: the revisit cache applies it, no process
    # (tests/e2e/test_e2e_revisit.py has what makes it run ctxd again)
    cd(s, py)
    assert runs(log) == 1
    assert s.env_dump()["VIRTUAL_ENV"] == os.path.join(py, ".venv")
    # a PATH the user changed inside needs ctxd to leave (to keep the user's entry)
    s.run("export PATH=/my/bin:$PATH" if shell != "fish" else "set -gx PATH /my/bin $PATH")
    cd(s, a)
    assert runs(log) == 2
    path = s.env_dump()["PATH"].split(":")
    assert "/my/bin" in path and os.path.join(py, ".venv", "bin") not in path


def test_watched_files_trigger_one_export(shell, sessions, tmp_path):
    # no .venv at all yet
    p1 = python_project(tmp_path / "p1", venv=False)
    # .venv/bin already there, activate still missing (a venv being created)
    p2 = python_project(tmp_path / "p2", venv=False)
    os.makedirs(os.path.join(p2, ".venv", "bin"))
    _age(os.path.join(p2, ".venv", "bin"), os.path.join(p2, ".venv"), p2, p1)
    wrapper, log = make_wrapper(tmp_path)
    s = sessions(shell)
    s.run(wrap_command(shell, wrapper))

    for p in (p1, p2):
        n = runs(log)
        cd(s, p)
        assert runs(log) == n + 1
        env = s.env_dump()
        assert env["CTXD_ROOT"] == p and "VIRTUAL_ENV" not in env
        s.run("true")
        assert runs(log) == n + 1

        # the next prompt notices the new venv and exports once
        assert s.run("mkdir -p .venv/bin; touch .venv/bin/activate") == ""
        assert runs(log) == n + 2
        env = s.env_dump()
        assert env["VIRTUAL_ENV"] == os.path.join(p, ".venv"), p
        assert env["PATH"].split(":")[0] == os.path.join(p, ".venv", "bin")
        s.run("true")
        assert runs(log) == n + 2

        # a watched file touched in the active project: one export, same result
        _age_watched(s.env_dump()["CTXD_WATCH"])
        s.run("true")
        n = runs(log)
        s.run("touch .venv/bin")
        assert runs(log) == n + 1
        assert s.env_dump()["VIRTUAL_ENV"] == os.path.join(p, ".venv")
        s.run("true")
        assert runs(log) == n + 1

        cd(s, tmp_path)
        assert "VIRTUAL_ENV" not in s.env_dump()
