"""ctxd and the real direnv in the same directory (issue 13, item 2), in real
bash, zsh and fish, with ctxd's line before and after direnv's.

What a user expects, and what ctxd does: both tools' changes coexist and both
undo cleanly, whatever the order. direnv's changes are the user's own to ctxd
(never undone by it); ctxd's undo also reaches direnv's snapshot
(DIRENV_DIFF), so direnv's revert cannot bring ctxd's PATH entries back; a
direnv reload (which reverts PATH to that snapshot) makes ctxd put its entries
back at once when it runs after direnv, and finds them kept when it ran
first.
"""

import os
import subprocess

import pytest

from coexistkit import require_debian, vendored_bash_preexec
from e2ekit import comparable, path_list, python_project, set_path
from shellkit import base_env

ORDERS = ("direnv-line-first", "ctxd-line-first")
USER_DIR = "/opt/users-own/bin"


def hook_lines(shell, direnv):
    if shell == "fish":
        return f"'{direnv}' hook fish | source", "ctxd hook fish | source"
    return f'eval "$(\'{direnv}\' hook {shell})"', f'eval "$(ctxd hook {shell})"'


def envrc_project(tmp_path, home):
    """A Python project (.venv) with an allowed .envrc that sets FOO and puts bin/ on PATH."""
    direnv = require_debian("direnv")
    proj = python_project(tmp_path / "proj")
    os.makedirs(os.path.join(proj, "bin"))
    with open(os.path.join(proj, ".envrc"), "w") as f:
        f.write("export FOO=from-envrc\nPATH_add bin\n")
    r = subprocess.run([direnv, "allow", proj], env=base_env(home), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return direnv, proj


def start(sessions, shell, order, direnv, pre=()):
    s = sessions(shell, hook=False, env={"DIRENV_LOG_FORMAT": ""})
    for line in pre:
        s.run(line)
    d_line, c_line = hook_lines(shell, direnv)
    for line in ((d_line, c_line) if order == "direnv-line-first" else (c_line, d_line)):
        s.run(line)
    # the user's own PATH edit, made before entering: it must survive everything
    s.run(set_path(shell, [USER_DIR] + path_list(s.env_dump())))
    s.run("true")
    return s


def check_inside(env, proj, what):
    venv = os.path.join(proj, ".venv")
    entries = path_list(env)
    assert env.get("VIRTUAL_ENV") == venv, what
    assert env.get("FOO") == "from-envrc", what
    assert entries.count(os.path.join(venv, "bin")) == 1, (what, entries)
    assert entries.count(os.path.join(proj, "bin")) == 1, (what, entries)
    assert entries.count(USER_DIR) == 1, (what, entries)
    assert len(entries) == len(set(entries)), (what, entries)  # nothing doubled


def check_left(env, before, what):
    assert comparable(env) == comparable(before), what
    assert "VIRTUAL_ENV" not in env and "FOO" not in env and "DIRENV_DIFF" not in env, what


@pytest.mark.parametrize("order", ORDERS)
def test_enter_reload_leave_with_direnv(shell, order, sessions, tmp_path, home):
    direnv, proj = envrc_project(tmp_path, home)
    enter_reload_leave(start(sessions, shell, order, direnv), direnv, proj, tmp_path)


@pytest.mark.parametrize("order", ORDERS)
def test_direnv_and_bash_preexec_together(order, sessions, tmp_path, home):
    """bash-it/atuin users with direnv: ctxd runs among the precmd functions,
    direnv's hook in PROMPT_COMMAND after them."""
    direnv, proj = envrc_project(tmp_path, home)
    s = start(sessions, "bash", order, direnv, pre=[f"source '{vendored_bash_preexec()}'"])
    s.run("true")
    out = s.run('\\builtin printf "%s\\n" "${precmd_functions[@]}"')
    assert out.splitlines()[0] == "_ctxd_hook", out
    enter_reload_leave(s, direnv, proj, tmp_path)


def enter_reload_leave(s, direnv, proj, tmp_path):
    before = s.env_dump()
    for round_ in range(2):
        s.cd(proj)
        check_inside(s.env_dump(), proj, f"enter {round_}")
        assert f"direnv has {os.path.join(proj, '.envrc')} loaded" in s.run("ctxd show")

        s.run(f"'{direnv}' reload")  # the prompt after it reloads; the next command sees the result
        check_inside(s.env_dump(), proj, f"direnv reload {round_}")

        st = os.stat(os.path.join(proj, ".envrc"))  # an edit of .envrc: direnv reloads by itself
        os.utime(os.path.join(proj, ".envrc"), (st.st_atime + 5 + round_, st.st_mtime + 5 + round_))
        s.run("true")
        check_inside(s.env_dump(), proj, f"touch .envrc {round_}")

        s.cd(tmp_path)
        check_left(s.env_dump(), before, f"leave {round_}")


@pytest.mark.parametrize("order", ORDERS)
def test_envrc_one_level_up_stays_loaded_across_projects(shell, order, sessions, tmp_path, home):
    """direnv's .envrc one level up (~/work/.envrc) stays loaded while the user
    moves between projects below it: ctxd's entries never end up in direnv's
    snapshot, so leaving the whole tree is clean."""
    direnv = require_debian("direnv")
    work = tmp_path / "work"
    work.mkdir()
    (work / ".envrc").write_text("export FOO=from-envrc\nPATH_add tools\n")
    (work / "tools").mkdir()
    r = subprocess.run([direnv, "allow", str(work)], env=base_env(home), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    a = python_project(work / "a")
    b = python_project(work / "b")
    s = start(sessions, shell, order, direnv)
    before = s.env_dump()
    s.cd(a)
    env = s.env_dump()
    assert env["VIRTUAL_ENV"] == os.path.join(a, ".venv") and env["FOO"] == "from-envrc"
    s.cd(b)  # ctxd switches projects, direnv stays loaded
    env = s.env_dump()
    entries = path_list(env)
    assert env["VIRTUAL_ENV"] == os.path.join(b, ".venv")
    assert os.path.join(a, ".venv", "bin") not in entries
    assert entries.count(os.path.join(b, ".venv", "bin")) == 1
    assert entries.count(str(work / "tools")) == 1
    s.cd(work)  # out of ctxd's projects, still under direnv's .envrc
    env = s.env_dump()
    assert "VIRTUAL_ENV" not in env and env["FOO"] == "from-envrc"
    assert not any(e.endswith("/.venv/bin") for e in path_list(env)), path_list(env)
    s.run(f"'{direnv}' reload")
    env = s.env_dump()
    assert not any(e.endswith("/.venv/bin") for e in path_list(env)), path_list(env)
    s.cd(tmp_path)
    check_left(s.env_dump(), before, "leave the tree")


@pytest.mark.parametrize("order", ORDERS)
def test_envrc_setting_virtual_env_too_is_undone_on_leaving(shell, order, sessions, tmp_path, home):
    """Both tools set VIRTUAL_ENV (the .envrc's `layout python`-style line):
    inside, the project's .venv ctxd activates wins, whatever the order (the
    prompt after direnv's change asks ctxd again); leaving, neither survives."""
    direnv, proj = envrc_project(tmp_path, home)
    with open(os.path.join(proj, ".envrc"), "a") as f:
        f.write("export VIRTUAL_ENV=/opt/envrc-venv\n")
    subprocess.run([direnv, "allow", proj], env=base_env(home), check=True, capture_output=True)
    s = start(sessions, shell, order, direnv)
    before = s.env_dump()
    s.cd(proj)
    env = s.env_dump()
    assert env["VIRTUAL_ENV"] == os.path.join(proj, ".venv")
    assert env["FOO"] == "from-envrc"
    assert path_list(env).count(os.path.join(proj, ".venv", "bin")) == 1
    s.cd(tmp_path)
    check_left(s.env_dump(), before, "leave")
