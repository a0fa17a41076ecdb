"""tcsh, elvish, xonsh and nushell: the prompt hook starts no process unless
the project root, CTXD_STATE or a watched file changed, and the root walk
stops at $HOME.

Proved without timing: the hook's embedded command is a wrapper that logs each
run, then execs ctxd. Each shell is a real interactive one (tests/shellkit.py).

tcsh reads mtimes in whole seconds, so its hook also asks ctxd again while a
watched file is from the second of ctxd's last run or later (see
shell/ctxd.tcsh). Where a test needs "nothing changed", it puts the files'
mtimes an hour back (as if the project had been there a while); a fresh edit
is asserted to be noticed at the next prompt in every shell, and to start
exactly one run in the shells that read finer times or contents.
"""

import os
import stat
import subprocess
import time

import pytest

from ctxd.activation.detectors import all_markers
from ctxd.shells import get_shell
from ctxd.shells.base import export_command
from e2ekit import path_list, plain_dir, python_project
from shellkit import MORE_SHELLS, more_literal, more_source_line


@pytest.fixture(params=MORE_SHELLS)
def shell(request):
    return request.param


def cd(s, path):
    return s.cd(path)


source_hook_file = more_source_line


def logged_session(shell, sessions, tmp_path, **kwargs):
    """A session whose hook runs ctxd through a wrapper logging each run, and
    a function counting the runs so far."""
    log = tmp_path / "runs.log"
    wrapper = tmp_path / "logging-python"
    cmd = export_command()
    wrapper.write_text(f'#!/bin/sh\necho "$PWD" >> {log}\nexec {cmd[0]} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    log.write_text("")
    hook = tmp_path / f"hook.{shell}"
    hook.write_text(get_shell(shell).hook(all_markers(), [str(wrapper)] + cmd[1:]))
    s = sessions(shell, hook=False, **kwargs)
    assert s.run(source_hook_file(shell, str(hook))) == ""
    return s, lambda: len(log.read_text().splitlines())


def age(*roots):
    """Every file and directory under *roots* (and the roots) an hour old."""
    t = time.time() - 3600
    for root in roots:
        for d, dirs, files in os.walk(str(root)):
            for name in dirs + files:
                os.utime(os.path.join(d, name), (t, t), follow_symlinks=False)
        os.utime(str(root), (t, t))


def age_watched(s):
    """Every path CTXD_WATCH names an hour old (the stamp too): as if the last
    run were long past the last edit."""
    lines = s.env_dump()["CTXD_WATCH"].split("\n")
    age(*[line[1:] for line in lines[1:] if line.startswith("+")])
    if lines[0]:
        age(lines[0])


def test_no_process_while_nothing_changed(shell, sessions, tmp_path, home):
    """The hook keeps the last run's root and state: prompts inside a project
    start no process until a watched file changes or the root does."""
    py = python_project(tmp_path / "py")
    src = plain_dir(os.path.join(py, "src"))
    out = plain_dir(tmp_path / "out")
    s, runs = logged_session(shell, sessions, tmp_path)
    age(py, home)
    cd(s, out)
    s.run("echo x")
    assert runs() == 0  # no project, no state: no process at all
    cd(s, py)
    assert s.env_dump()["VIRTUAL_ENV"] == os.path.join(py, ".venv")
    n = runs()
    assert n == 1
    s.run("echo x")
    s.run("echo y")
    cd(s, src)  # a subdirectory: the same root
    cd(s, py)
    assert runs() == n  # nothing changed
    with open(os.path.join(py, ".contextrc"), "w") as f:  # a watched path appears
        f.write('[env]\nCT_X = "1"\n')
    age(py)
    s.run("echo z")
    assert runs() == n + 1
    s.run("echo z")
    assert runs() == n + 1
    cd(s, out)
    assert "VIRTUAL_ENV" not in s.env_dump()
    assert runs() == n + 2
    s.run("echo x")
    assert runs() == n + 2


def test_watched_edits_are_noticed_at_the_next_prompt(shell, sessions, tmp_path, home):
    """A .venv appearing, a marker appearing and an edit of the .contextrc,
    each made between two prompts, apply at the next one; then the hook is
    quiet again."""
    proj = python_project(tmp_path / "proj", venv=False)
    rc = os.path.join(proj, ".contextrc")
    with open(rc, "w") as f:
        f.write('[env]\nCT_FOO = "one"\n')
    s, runs = logged_session(shell, sessions, tmp_path)
    assert s.run("ctxd allow " + more_literal(shell, proj)) == f"ctxd: allowed {rc}"  # (not logged: not the hook)
    age(proj, home)
    cd(s, proj)
    env = s.env_dump()
    assert (env["CT_FOO"], env["CTXD_ROOT"]) == ("one", proj) and "VIRTUAL_ENV" not in env
    assert runs() == 1
    s.run("echo quiet")
    assert runs() == 1

    def noticed(n):
        """At most one run in the shells that see the edit exactly; tcsh may
        ask again within the edit's second (its mtimes are whole seconds)."""
        if shell == "tcsh":
            assert runs() >= n + 1
        else:
            assert runs() == n + 1

    def settled():
        age_watched(s)
        m = runs()
        s.run("echo quiet")
        s.run("echo quiet")
        assert runs() == m

    # a venv appears (created between two prompts, as `python -m venv` in another terminal would)
    n = runs()
    os.makedirs(os.path.join(proj, ".venv", "bin"))
    with open(os.path.join(proj, ".venv", "bin", "activate"), "w") as f:
        f.write("# venv\n")
    s.run("echo next")
    noticed(n)
    env = s.env_dump()
    assert env["VIRTUAL_ENV"] == os.path.join(proj, ".venv")
    assert path_list(env)[0] == os.path.join(proj, ".venv", "bin")
    settled()

    # a marker appears: the root is now a node project too
    n = runs()
    with open(os.path.join(proj, "package.json"), "w") as f:
        f.write("{}\n")
    s.run("echo next")
    noticed(n)
    assert s.env_dump()["CTXD_TYPES"].split(",") == ["python", "node"]
    settled()

    # the .contextrc edited (and allowed again, outside this shell)
    n = runs()
    with open(rc, "w") as f:
        f.write('[env]\nCT_FOO = "two"\n')
    r = subprocess.run(["ctxd", "allow", proj], env=s.env, cwd=proj, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    s.run("echo next")
    noticed(n)
    assert s.env_dump()["CT_FOO"] == "two"
    settled()

    cd(s, tmp_path)
    env = s.env_dump()
    assert "VIRTUAL_ENV" not in env and "CT_FOO" not in env and "CTXD_ROOT" not in env


def test_home_is_the_ceiling_of_the_root_walk(shell, sessions, tmp_path, home):
    """A marker in $HOME's parent makes no project of a directory in $HOME;
    outside $HOME it is a root as before (the hook and ctxd agree)."""
    with open(tmp_path / "pyproject.toml", "w") as f:
        f.write("[project]\nname = 'above-home'\n")
    sub = plain_dir(home / "sub")
    other = plain_dir(tmp_path / "other")
    s, runs = logged_session(shell, sessions, tmp_path, cwd=sub)
    age(tmp_path)
    s.run("echo x")
    env = s.env_dump()
    assert "CTXD_ROOT" not in env and "CTXD_STATE" not in env
    assert runs() == 0  # no project in $HOME/sub: no process at the prompt
    cd(s, home)
    assert runs() == 0 and "CTXD_ROOT" not in s.env_dump()
    cd(s, other)
    assert s.env_dump()["CTXD_ROOT"] == str(tmp_path)
    n = runs()
    assert n == 1
    cd(s, sub)  # leaving for $HOME/sub: ctxd (which stops at $HOME too) unloads it
    env = s.env_dump()
    assert "CTXD_ROOT" not in env and "CTXD_STATE" not in env
    m = runs()
    s.run("echo x")
    cd(s, home)
    assert runs() == m


def test_a_symlinked_home_is_the_ceiling_where_it_resolves_to(shell, sessions, tmp_path, home):
    """$HOME a symlink to the real home directory, the shell in that directory's physical path
    (elvish's $pwd is always physical): that path is in $HOME too, so the marker above the
    real directory makes no project of it. elvish's walk stops there itself and starts no
    process; tcsh starts in the same directory named through $HOME (its $cwd is
    ~/sub), so neither does it. xonsh's and nushell's $PWD stays physical here (their
    `cd -P`): their walk runs ctxd once for the root above, and ctxd, which stops at the
    real directory too, applies nothing."""
    with open(tmp_path / "pyproject.toml", "w") as f:
        f.write("[project]\nname = 'above-home'\n")
    sub = plain_dir(home / "sub")
    link = tmp_path / "links" / "me"
    link.parent.mkdir()
    os.symlink(str(home), str(link))
    s, runs = logged_session(shell, sessions, tmp_path, cwd=sub, home=str(link))
    age(tmp_path)
    s.run("echo x")
    s.run("echo y")
    env = s.env_dump()
    assert "CTXD_ROOT" not in env and "CTXD_STATE" not in env, env.get("CTXD_ROOT")
    assert runs() == (0 if shell in ("elvish", "tcsh") else 1)


def test_home_itself_is_looked_at_and_trailing_slashes_do_not_count(shell, sessions, tmp_path, home):
    """$HOME with trailing slashes is $HOME: the walk still stops there, and a
    marker in $HOME itself makes it the root of its subdirectories."""
    with open(tmp_path / "pyproject.toml", "w") as f:
        f.write("[project]\nname = 'above-home'\n")
    sub = plain_dir(home / "sub" / "deep")
    s, runs = logged_session(shell, sessions, tmp_path, cwd=sub, home=str(home) + "//")
    assert s.env_dump()["HOME"] == str(home) + "//"
    s.run("echo x")
    assert "CTXD_ROOT" not in s.env_dump()
    assert runs() == 0
    with open(home / "go.mod", "w") as f:
        f.write("module example.com/home\n\ngo 1.22\n")
    s.run("echo x")
    # (counted before the dump, which writes a file into $HOME, the root now;
    # tcsh may ask again within the second go.mod was written in)
    assert runs() == 1 if shell != "tcsh" else runs() >= 1
    env = s.env_dump()
    assert (env["CTXD_ROOT"], env["CTXD_TYPES"]) == (str(home), "go")


def test_a_symlinked_marker_makes_a_root(shell, sessions, tmp_path):
    """The walk follows symlinks as ctxd's own does (os.path.exists): a marker
    that is a symlink (a shared pyproject.toml, a linked .venv) counts."""
    shared = plain_dir(tmp_path / "shared")
    with open(os.path.join(shared, "pyproject.toml"), "w") as f:
        f.write("[project]\nname = 'shared'\n")
    proj = plain_dir(tmp_path / "proj")
    os.symlink(os.path.join(shared, "pyproject.toml"), os.path.join(proj, "pyproject.toml"))
    s, runs = logged_session(shell, sessions, tmp_path)
    cd(s, proj)
    assert runs() >= 1
    env = s.env_dump()
    assert (env["CTXD_ROOT"], env["CTXD_TYPES"]) == (proj, "python")
