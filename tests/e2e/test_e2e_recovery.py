"""When ctxd cannot help: not on PATH, uninstalled mid-session, corrupt state.

The shell must end up clean, say so in exactly one "ctxd:" line, and go on
working."""

import os
import shutil

from ctxdtest import ctxd
from e2ekit import (
    cd, comparable, ctxd_lines, enter_nested, leave_nested, node_project, output_lines, path_list,
    plain_dir, python_project, quote, set_path, set_var,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_ctxd_off_path_still_activates(shell, sessions, tmp_path):
    py = python_project(tmp_path / "py")
    s = sessions(shell)
    s.run(set_path(shell, ["/usr/local/bin", "/usr/bin", "/bin"]))
    assert s.run("command -v ctxd") == ""
    cd(s, tmp_path)
    before = s.env_dump()
    assert cd(s, py) == ""
    env = s.env_dump()
    assert env["VIRTUAL_ENV"] == os.path.join(py, ".venv")
    assert path_list(env) == [os.path.join(py, ".venv", "bin"), "/usr/local/bin", "/usr/bin", "/bin"]
    assert cd(s, tmp_path) == ""
    assert comparable(s.env_dump()) == comparable(before)


def _hook_from_copy(shell, tmp_path):
    """Hook text rendered by a copy of ctxd, so deleting the copy uninstalls it."""
    copy = tmp_path / "ctxd-copy"
    shutil.copytree(os.path.join(REPO, "ctxd"), copy / "ctxd", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(os.path.join(REPO, "shell"), copy / "shell")
    env = dict(os.environ, PYTHONPATH=str(copy))
    text = ctxd("hook", shell, env=env, cwd=tmp_path, check=0).stdout
    assert repr(str(copy)) in text or str(copy) in text
    assert repr(REPO) not in text  # the checkout itself is not importable by the hook
    hook = tmp_path / f"hook.{shell}"
    hook.write_text(text)
    return copy, str(hook)


def test_ctxd_deleted_mid_session(shell, sessions, tmp_path):
    py = python_project(tmp_path / "py")
    node = node_project(tmp_path / "node")
    out = plain_dir(tmp_path / "out")
    copy, hook = _hook_from_copy(shell, tmp_path)
    s = sessions(shell, hook=False)
    s.run(set_var(shell, "NODE_ENV", ""))
    s.run(set_var(shell, "PYTHONHOME", "/opt/python"))
    line = f"source {quote(shell, hook)}" if shell == "fish" else f'eval "$(cat {quote(shell, hook)})"'
    assert s.run(line) == ""
    cd(s, out)
    before = s.env_dump()
    assert cd(s, py) == ""
    env = s.env_dump()
    assert env["VIRTUAL_ENV"] == os.path.join(py, ".venv") and "PYTHONHOME" not in env

    shutil.rmtree(copy)
    # leaving for a plain dir needs no ctxd: the restore function does it, quietly
    assert cd(s, out) == ""
    env = s.env_dump()
    assert comparable(env) == comparable(before)
    assert "VIRTUAL_ENV" not in env and env["PYTHONHOME"] == "/opt/python"
    assert os.path.join(py, ".venv", "bin") not in path_list(env)
    assert not [k for k in env if k.startswith("CTXD_")]

    # the shell goes on working, quietly: no notice on every prompt
    assert s.run("true") == ""
    assert cd(s, tmp_path) == ""
    assert s.status_after(f"cd {quote(shell, out)}; false") == 1
    # entering another project needs ctxd: exactly one notice, nothing applied, then quiet
    text = cd(s, node)
    assert len(ctxd_lines(text)) == 1, text
    assert output_lines(text) == ctxd_lines(text)  # no traceback
    assert s.run("true") == ""
    assert comparable(s.env_dump()) == comparable(before)
    assert cd(s, out) == ""
    assert comparable(s.env_dump()) == comparable(before)


def test_corrupt_state_recovers(shell, sessions, tmp_path):
    py = python_project(tmp_path / "py")
    node = node_project(tmp_path / "node")
    out = plain_dir(tmp_path / "out")
    s = sessions(shell)
    s.run(set_var(shell, "PYTHONHOME", ""))
    cd(s, out)
    before = s.env_dump()

    # corrupted inside a project, then leave
    cd(s, py)
    text = s.run(set_var(shell, "CTXD_STATE", "garbage"))
    text += "\n" + cd(s, out)
    assert len(ctxd_lines(text)) == 1, text
    assert comparable(s.env_dump()) == comparable(before)
    assert cd(s, py) == ""
    assert s.env_dump()["VIRTUAL_ENV"] == os.path.join(py, ".venv")

    # corrupted and left on the same command line
    text = s.run(set_var(shell, "CTXD_STATE", "not*base64!") + "; cd " + quote(shell, out))
    assert len(ctxd_lines(text)) == 1, text
    assert comparable(s.env_dump()) == comparable(before)

    # valid base64 and zlib, not a state: while moving between two projects
    cd(s, node)
    text = s.run(set_var(shell, "CTXD_STATE", "eJyrVipTslKwtNRRUCrKzy8BspX0K5RqAUfXBhg=")
                 + "; cd " + quote(shell, py))
    assert len(ctxd_lines(text)) == 1, text
    env = s.env_dump()
    assert env["CTXD_ROOT"] == py and "NODE_ENV" not in env
    assert os.path.join(node, "node_modules", ".bin") not in path_list(env)
    assert cd(s, out) == ""
    assert comparable(s.env_dump()) == comparable(before)

    # corrupt state in a shell that never activated anything (inherited garbage)
    text = s.run(set_var(shell, "CTXD_STATE", "garbage"))
    assert len(ctxd_lines(text)) == 1, text
    assert cd(s, out) == ""
    assert comparable(s.env_dump()) == comparable(before)
    assert cd(s, node) == ""
    assert s.env_dump()["NODE_ENV"] == "development"
    assert cd(s, out) == ""
    assert comparable(s.env_dump()) == comparable(before)


def test_ctxd_deleted_while_a_subshell_is_in_a_project(shell, sessions, tmp_path):
    """The subshell inherited the activation, not the parent's restore function."""
    py = python_project(tmp_path / "py")
    out = plain_dir(tmp_path / "out")
    copy, hook = _hook_from_copy(shell, tmp_path)
    line = f"source {quote(shell, hook)}" if shell == "fish" else f'eval "$(cat {quote(shell, hook)})"'
    s = sessions(shell, hook=False)
    assert s.run(line) == ""
    cd(s, out)
    before = comparable(s.env_dump())
    cd(s, py)
    inside = comparable(s.env_dump())
    assert inside["VIRTUAL_ENV"] == os.path.join(py, ".venv")

    enter_nested(s)
    assert s.run(line) == ""
    assert comparable(s.env_dump()) == inside
    shutil.rmtree(copy)
    # the subshell got the restore function on its first run: it leaves without ctxd
    assert cd(s, out) == ""
    assert comparable(s.env_dump()) == before
    leave_nested(s)
    # the parent still holds its own activation, and its own way back
    assert comparable(s.env_dump()) == inside
    assert cd(s, out) == ""
    assert comparable(s.env_dump()) == before
    # moving between projects needs ctxd: one notice, the shell stays clean
    text = cd(s, py)
    assert len(ctxd_lines(text)) == 1 and output_lines(text) == ctxd_lines(text), text
    assert comparable(s.env_dump()) == before
