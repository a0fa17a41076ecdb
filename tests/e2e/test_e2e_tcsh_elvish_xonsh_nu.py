"""The core real-shell scenarios in tcsh, elvish, xonsh and nushell: enter and
leave a python project (VIRTUAL_ENV and PATH set and restored exactly, no
duplicates, the user's own changes kept), an untrusted .contextrc withheld
until allowed, a failing export (corrupt state, ctxd deleted) leaving the
shell working with one ctxd line, and the hook installed twice being one hook.

Each shell is a real interactive one driven through pexpect (tests/shellkit.py);
CI installs them all and fails when one is missing.
"""

import json
import os
import shutil
import subprocess

import pexpect
import pytest

from ctxd.shells import get_shell
from ctxdtest import ctxd
import e2ekit
from e2ekit import ctxd_lines, output_lines, path_list, plain_dir, python_project
from shellkit import (MORE_SETUP, MORE_SHELLS, PROMPT, ShellSession, base_env, more_literal,
                      more_source_line, require)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# what nu itself exports and changes after every command
NU_OWN = frozenset({"CMD_DURATION_MS", "LAST_EXIT_CODE"})


def comparable(env):
    return {k: v for k, v in e2ekit.comparable(env).items() if k not in NU_OWN}


@pytest.fixture(params=MORE_SHELLS)
def shell(request):
    return request.param


# -- each shell's own syntax, written independently of ctxd's escaping -----------

def set_var(shell, name, value):
    q = more_literal(shell, value)
    return {"tcsh": f"setenv {name} {q}", "elvish": f"set-env {name} {q}",
            "xonsh": f"${name} = {q[2:-1]}", "nu": f"$env.{name} = {q}"}[shell]


def prepend_path(shell, entry):
    q = more_literal(shell, entry)
    return {"tcsh": f'setenv PATH {q}:"$PATH"', "elvish": f"set paths = [{q} $@paths]",
            "xonsh": f"$PATH.insert(0, {q[2:-1]})", "nu": f"$env.PATH = ($env.PATH | prepend {q})"}[shell]


def cd(s, path):
    return s.cd(path)


source_hook_file = more_source_line


# -- scenarios ----------------------------------------------------------------------

def test_enter_leave_restores_exactly_without_duplicates(shell, sessions, tmp_path):
    py = python_project(tmp_path / "py")
    sub = plain_dir(os.path.join(py, "src", "deep"))
    out = plain_dir(tmp_path / "out")
    s = sessions(shell)
    assert cd(s, out) == ""
    before = comparable(s.env_dump())
    assert "VIRTUAL_ENV" not in before
    venv_bin = os.path.join(py, ".venv", "bin")
    for _ in range(3):
        assert cd(s, py) == ""
        env = s.env_dump()
        assert env["VIRTUAL_ENV"] == os.path.join(py, ".venv")
        assert env["CTXD_ROOT"] == py
        assert path_list(env) == [venv_bin] + path_list(before)
        assert cd(s, sub) == ""  # a subdirectory without markers: still the project
        assert s.run("echo still") == "still"
        assert comparable(s.env_dump()) == comparable(env) | {}
        assert cd(s, out) == ""
        assert comparable(s.env_dump()) == before


def test_users_own_changes_inside_are_kept(shell, sessions, tmp_path):
    py = python_project(tmp_path / "py")
    out = plain_dir(tmp_path / "out")
    s = sessions(shell)
    cd(s, out)
    before = s.env_dump()
    cd(s, py)
    venv_bin = os.path.join(py, ".venv", "bin")
    assert s.run(prepend_path(shell, "/opt/mine/bin")) == ""
    assert s.run(set_var(shell, "MY_OWN", "it's $mine `x` !x")) == ""
    env = s.env_dump()
    assert path_list(env)[:2] == ["/opt/mine/bin", venv_bin]
    assert cd(s, out) == ""
    env = s.env_dump()
    assert "VIRTUAL_ENV" not in env and not [k for k in env if k.startswith("CTXD_")]
    assert path_list(env) == ["/opt/mine/bin"] + path_list(before)
    assert env["MY_OWN"] == "it's $mine `x` !x"
    # and back in: the venv goes in front once, the user's entry stays
    cd(s, py)
    assert path_list(s.env_dump()) == [venv_bin, "/opt/mine/bin"] + path_list(before)


def test_untrusted_contextrc_is_withheld_until_allowed(shell, sessions, tmp_path):
    proj = plain_dir(tmp_path / "proj")
    rc = os.path.join(proj, ".contextrc")
    with open(rc, "w") as f:
        f.write('[env]\nCT_FOO = "one"\n')
    s = sessions(shell, trust_tree=str(tmp_path / "elsewhere"))
    cd(s, tmp_path)
    before = s.env_dump()
    lines = output_lines(cd(s, proj))
    assert len(lines) == 1 and lines[0].startswith("ctxd: ") and "not trusted" in lines[0], lines
    env = s.env_dump()
    assert "CT_FOO" not in env
    assert s.run("echo quiet") == "quiet"  # not repeated at the next prompt
    assert output_lines(s.run("ctxd allow")) == [f"ctxd: allowed {rc}"]
    assert s.env_dump()["CT_FOO"] == "one"
    assert cd(s, tmp_path) == ""
    assert comparable(s.env_dump()) == comparable(before)


def test_corrupt_state_gives_one_line_and_a_clean_shell(shell, sessions, tmp_path):
    py = python_project(tmp_path / "py")
    out = plain_dir(tmp_path / "out")
    s = sessions(shell)
    cd(s, out)
    before = comparable(s.env_dump())
    cd(s, py)
    text = s.run(set_var(shell, "CTXD_STATE", "garbage"))
    text += "\n" + cd(s, out)
    assert len(ctxd_lines(text)) == 1, text
    assert comparable(s.env_dump()) == before
    assert s.run("echo works") == "works"
    assert cd(s, py) == ""
    assert s.env_dump()["VIRTUAL_ENV"] == os.path.join(py, ".venv")


def _hook_from_copy(shell, tmp_path):
    """Hook text rendered by a copy of ctxd, so deleting the copy uninstalls it."""
    copy = tmp_path / "ctxd-copy"
    shutil.copytree(os.path.join(REPO, "ctxd"), copy / "ctxd", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(os.path.join(REPO, "shell"), copy / "shell")
    env = dict(os.environ, PYTHONPATH=str(copy), XDG_CACHE_HOME=str(tmp_path / "cache"))
    text = ctxd("hook", shell, env=env, cwd=tmp_path, check=0).stdout
    assert str(copy) in text
    hook = tmp_path / f"hook.{shell}"
    hook.write_text(text)
    return copy, str(hook)


def test_ctxd_deleted_mid_session_leaves_the_shell_working(shell, sessions, tmp_path):
    py = python_project(tmp_path / "py")
    py2 = python_project(tmp_path / "py2")
    out = plain_dir(tmp_path / "out")
    copy, hook = _hook_from_copy(shell, tmp_path)
    s = sessions(shell, hook=False)
    assert s.run(source_hook_file(shell, hook)) == ""
    cd(s, out)
    before = comparable(s.env_dump())
    assert cd(s, py) == ""
    assert s.env_dump()["VIRTUAL_ENV"] == os.path.join(py, ".venv")
    shutil.rmtree(copy)
    # leaving needs ctxd, which is gone: the restore code undoes it, one line at most
    text = cd(s, out)
    assert len(ctxd_lines(text)) <= 1 and output_lines(text) == ctxd_lines(text), text
    assert comparable(s.env_dump()) == before
    # entering another project: exactly one line, nothing applied, then quiet
    text = cd(s, py2)
    assert len(ctxd_lines(text)) == 1 and output_lines(text) == ctxd_lines(text), text
    assert "VIRTUAL_ENV" not in s.env_dump()
    assert s.run("echo works") == "works"
    assert cd(s, out) == ""
    assert comparable(s.env_dump()) == before


def test_hook_installed_twice_is_one_hook(shell, sessions, tmp_path):
    py = python_project(tmp_path / "py")
    out = plain_dir(tmp_path / "out")
    s = sessions(shell)
    assert s.install_hook() == ""
    cd(s, out)
    before = comparable(s.env_dump())
    text = cd(s, py)
    assert text == "", text
    env = s.env_dump()
    assert path_list(env).count(os.path.join(py, ".venv", "bin")) == 1
    assert cd(s, out) == ""
    assert comparable(s.env_dump()) == before


def test_drop_state_command_restores_and_the_hook_activates_again(shell, sessions, tmp_path):
    """What `ctxd doctor` tells a user to type: the restore code runs, the
    state goes, and the next prompt activates the project once more, exactly."""
    py = python_project(tmp_path / "py")
    s = sessions(shell)
    cd(s, py)
    inside = comparable(s.env_dump())
    assert s.run(get_shell(shell).drop_state_command()) == ""
    env = comparable(s.env_dump())
    assert path_list(env).count(os.path.join(py, ".venv", "bin")) == 1
    assert env == inside


def test_values_from_contextrc_round_trip(shell, sessions, tmp_path):
    """A trusted .contextrc's values reach the shell byte for byte, and never run."""
    proj = plain_dir(tmp_path / "proj")
    values = {"CT_Q": "it's \"q\" `touch X` $(touch X) $HOME !! \\ \\n", "CT_U": "\u00e9\u4e2d\U0001f600",
              "CT_NL": "a\nb\n", "CT_E": ""}
    with open(os.path.join(proj, ".contextrc"), "w", encoding="utf-8") as f:
        f.write("[env]\n" + "".join(f"{k} = {json.dumps(v.replace('$', '$$'), ensure_ascii=False)}\n" for k, v in values.items()))
    s = sessions(shell)
    s.run("ctxd allow " + more_literal(shell, proj))
    cd(s, proj)
    env = s.env_dump()
    for k, v in values.items():
        assert env[k] == v, k
    assert not os.path.exists(os.path.join(proj, "X"))


# -- the lines `ctxd setup --write` puts in each shell's rc file ------------------------

RC_PRELUDE = {  # a known prompt, as a user's rc file sets one
    "tcsh": MORE_SETUP["tcsh"] + "\n",
    "elvish": MORE_SETUP["elvish"] + "\n",
    "xonsh": MORE_SETUP["xonsh"] + "\n",
    "nu": MORE_SETUP["nu"] + "\n",
}
WITH_RC = {"tcsh": ["-i"], "elvish": ["-i"], "xonsh": ["-i", "--shell-type=readline"], "nu": ["-i"]}


def _setup_shell(shell, home, env, cwd):
    """ctxd setup --write for *shell* in *home*, then an interactive shell reading it."""
    sh = get_shell(shell)
    rc = os.path.expanduser(sh.rc_file.replace("~", str(home), 1))
    os.makedirs(os.path.dirname(rc), exist_ok=True)
    with open(rc, "w") as f:
        f.write(RC_PRELUDE[shell])
    r = ctxd("setup", "--shell", shell, "--write", env=env)
    assert r.returncode == 0 and r.stderr == "", r.stdout + r.stderr
    child = pexpect.spawn(require(shell), WITH_RC[shell], env=env, cwd=cwd, encoding="utf-8",
                          codec_errors="replace", timeout=30, dimensions=(50, 400))
    s = ShellSession.__new__(ShellSession)
    s.shell, s.home, s.timeout, s.env, s.child, s._n = shell, str(home), 30, env, child, 0
    s._expect(PROMPT)  # (nu: answering its line editor's cursor queries)
    s.run("echo ready")
    return s


def test_setup_lines_load_the_hook(shell, home, tmp_path):
    py = python_project(tmp_path / "py")
    env = base_env(home)
    s = _setup_shell(shell, home, env, str(tmp_path))
    try:
        assert cd(s, py) == ""
        got = s.env_dump()
        assert got["VIRTUAL_ENV"] == os.path.join(py, ".venv") and got["CTXD_ROOT"] == py
        assert cd(s, tmp_path) == ""
        assert "VIRTUAL_ENV" not in s.env_dump()
    finally:
        s.close()


def test_setup_lines_without_ctxd_drop_an_inherited_project(shell, home, tmp_path):
    py = python_project(tmp_path / "py")
    env = base_env(home)
    # the environment a shell inside the project had: ctxd's own export, applied by bash
    code = subprocess.run(["ctxd", "export", "bash"], env=env, cwd=py, capture_output=True, text=True).stdout
    dump = subprocess.run(["bash", "--norc", "-c", code + "\nenv -0"], env=env, cwd=py, capture_output=True).stdout
    inherited = dict(os.fsdecode(x).split("=", 1) for x in dump.split(b"\0") if x)
    assert inherited["VIRTUAL_ENV"] == os.path.join(py, ".venv")
    # no ctxd anywhere: not on PATH, and the fallback path `ctxd setup` wrote is gone
    inherited["PATH"] = os.pathsep.join([os.path.join(py, ".venv", "bin"), "/usr/bin", "/bin"])
    inherited.pop("PWD", None)
    s = None
    try:
        s = _setup_shell_without_ctxd(shell, home, inherited, str(tmp_path))
        got = s.env_dump()
        assert "VIRTUAL_ENV" not in got and not [k for k in got if k.startswith("CTXD_")], got
        assert path_list(got) == ["/usr/bin", "/bin"]
    finally:
        if s:
            s.close()


def _setup_shell_without_ctxd(shell, home, env, cwd):
    sh = get_shell(shell)
    rc = os.path.expanduser(sh.rc_file.replace("~", str(home), 1))
    os.makedirs(os.path.dirname(rc), exist_ok=True)
    with open(rc, "w") as f:
        f.write(RC_PRELUDE[shell] + sh.rc_block(os.path.join(str(home), "gone", "bin", "ctxd")))
    child = pexpect.spawn(require(shell), WITH_RC[shell], env=env, cwd=cwd, encoding="utf-8",
                          codec_errors="replace", timeout=30, dimensions=(50, 400))
    s = ShellSession.__new__(ShellSession)
    s.shell, s.home, s.timeout, s.env, s.child, s._n = shell, str(home), 30, env, child, 0
    s._expect(PROMPT)  # (nu: answering its line editor's cursor queries)
    s.run("echo ready")
    return s


def test_an_edit_of_the_contextrc_applies_at_the_next_prompt(shell, sessions, tmp_path):
    proj = python_project(tmp_path / "proj")  # a root without the .contextrc too
    rc = os.path.join(proj, ".contextrc")
    with open(rc, "w") as f:
        f.write('[env]\nCT_FOO = "one"\n')
    s = sessions(shell)
    s.run("ctxd allow " + more_literal(shell, proj))
    cd(s, proj)
    assert s.env_dump()["CT_FOO"] == "one"
    with open(rc, "w") as f:
        f.write('[env]\nCT_FOO = "two"\nCT_BAR = "new"\n')
    s.run("ctxd allow")
    env = s.env_dump()
    assert (env["CT_FOO"], env["CT_BAR"]) == ("two", "new")
    os.unlink(rc)  # gone: its variables go at the next prompt, the project stays
    s.run("echo x")
    env = s.env_dump()
    assert "CT_FOO" not in env and "CT_BAR" not in env and env["CTXD_ROOT"] == proj
