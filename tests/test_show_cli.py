"""`ctxd show`, `ctxd export` and the error boundary, as whole processes."""

import json
import os
import subprocess
import sys
from functools import partial

import pytest

import ctxdtest

ctxd = partial(ctxdtest.ctxd, check=0)


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / ".venv/bin").mkdir(parents=True)
    (root / ".venv/bin/activate").touch()
    (root / "pyproject.toml").touch()
    (root / "package.json").write_text("{}")
    (root / ".python-version").write_text("3.12.4\n")
    (root / "src").mkdir()
    return root


def test_show_json_schema(project):
    info = json.loads(ctxd("show", "--json", cwd=project / "src", extra_env={"NODE_ENV": "production"}).stdout)
    assert info["schema_version"] == 1
    assert info["directory"] == str(project / "src")
    assert info["root"] == str(project)
    assert info["active"] is False
    assert info["types"] == [{"name": "python", "markers": ["pyproject.toml"]},
                             {"name": "node", "markers": ["package.json"]}]
    assert {"tool": "python", "version": "3.12.4", "file": ".python-version"} in info["pins"]
    env = {e["name"]: e for e in info["env"]}
    assert env["VIRTUAL_ENV"]["value"] == str(project / ".venv")
    assert env["VIRTUAL_ENV"]["source"].startswith("python")
    assert env["CTXD_ROOT"]["value"] == str(project)
    assert env["CTXD_CONTEXT_DIR"]["value"] == info["context_dir"]
    assert [s["name"] for s in info["skipped"] if s["name"] == "NODE_ENV"] == ["NODE_ENV"]
    assert [p["entry"] for p in info["path"]] == [str(project / ".venv/bin"), str(project / "node_modules/.bin")]
    assert all(p["status"] == "added" for p in info["path"])
    assert str(project) in info["watch"]


def test_show_for_another_dir_and_text(project, tmp_path):
    out = ctxd("show", str(project), cwd=tmp_path).stdout
    assert f"project root {project}" in out
    assert "type         python   found pyproject.toml" in out
    assert f"PATH +       {project}/.venv/bin" in out
    plain = ctxd("show", "--json", cwd=tmp_path).stdout
    assert json.loads(plain)["root"] is None or not json.loads(plain)["root"].startswith(str(tmp_path))


def test_show_marks_active_state(project):
    code = ctxd("export", "bash", cwd=project).stdout
    line = [l for l in code.splitlines() if l.startswith("export CTXD_STATE=")][0]
    # the token is quoted for bash (JSON needs it): let bash read it
    token = subprocess.run(["bash", "-c", line + '\nprintf %s "$CTXD_STATE"'], capture_output=True,
                           text=True, check=True).stdout
    info = json.loads(ctxd("show", "--json", cwd=project, extra_env={"CTXD_STATE": token}).stdout)
    assert info["active"] is True and info["active_root"] == str(project)


def test_show_missing_dir_is_one_line_error(tmp_path):
    p = ctxd("show", str(tmp_path / "nope"), cwd=tmp_path, check=None)
    assert p.returncode == 4
    assert p.stderr.strip().splitlines() == [f"ctxd: no such directory: {tmp_path / 'nope'}"]


def test_export_is_empty_when_nothing_changed(project, tmp_path):
    assert ctxd("export", "bash", cwd=tmp_path).stdout == ""
    first = ctxd("export", "zsh", cwd=project).stdout
    env = {}
    for line in first.splitlines():
        if line.startswith("export "):
            name, _, value = line[len("export "):].partition("=")
            if value.startswith("$'"):
                value = value[2:-1].encode().decode("unicode_escape")
            env[name] = value
    # apply what the shell would have applied, then ask again: nothing to do
    assert ctxd("export", "zsh", cwd=project / "src", extra_env=env).stdout == ""


def test_export_corrupt_state_exits_6_with_one_message(project):
    p = ctxd("export", "bash", cwd=project, extra_env={"CTXD_STATE": "garbage"}, check=None)
    assert p.returncode == 6
    assert p.stdout.count("\n") == 1 and "ctxd: CTXD_STATE is corrupt" in p.stdout
    assert p.stderr == ""


def test_export_usage_errors(tmp_path):
    p = ctxd("export", "csh", cwd=tmp_path, check=None)
    assert p.returncode == 2 and p.stderr.startswith("ctxd: unsupported shell")
    p = ctxd("export", cwd=tmp_path, check=None)
    assert p.returncode == 2 and "usage" in p.stderr


def test_export_imports_nothing_heavy(project):
    code = ("import sys, os; sys.argv=['ctxd','export','bash']\n"
            "from ctxd.fastpath.export_entry import export_main\n"
            "try:\n    export_main()\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('click','psutil','shellingham','platformdirs','typing','dataclasses','hashlib','re','json','base64','tomllib')"
            " if m in sys.modules]\n"
            "sys.stderr.write('HEAVY=' + ','.join(heavy))\n")
    e = dict(os.environ, PWD=str(project))
    (project / ".contextrc").write_text('[env]\nFOO = "bar"\n')
    ctxd("allow", cwd=project)
    # the first run parses config.toml and .contextrc with tomllib and caches the result
    for _ in range(2):
        p = subprocess.run([sys.executable, "-I", "-S", "-c",
                            f"import sys; sys.path[:0]=[{os.path.dirname(os.path.dirname(__file__))!r}]\n" + code],
                           cwd=project, env=e, capture_output=True, text=True)
    assert "export FOO=bar" in p.stdout
    assert "export VIRTUAL_ENV=" in p.stdout
    assert p.stderr.strip() == "HEAVY="


def test_version_and_help():
    assert ctxd("--version").stdout.startswith("ctxd, version ")
    out = ctxd("--help").stdout
    for cmd in ("hook", "export", "show"):
        assert cmd in out


def test_setup_prints_then_writes_once(tmp_path):
    home = tmp_path / "h"
    home.mkdir()
    env = {"HOME": str(home)}
    out = ctxd("setup", "--shell", "zsh", extra_env=env, cwd=tmp_path).stdout
    assert 'eval "$(ctxd hook zsh)"' in out and "not there yet" in out
    ctxd("setup", "--shell", "zsh", "--write", extra_env=env, cwd=tmp_path)
    ctxd("setup", "--shell", "zsh", "--write", extra_env=env, cwd=tmp_path)
    rc = (home / ".zshrc").read_text()
    assert rc.count("# ctxd: project environments on cd") == 1  # written once
    assert rc.count("ctxd hook zsh") == 2  # on PATH, else the absolute fallback (one block)
    ctxd("setup", "--shell", "fish", "--write", extra_env=env, cwd=tmp_path)
    assert "ctxd hook fish | source" in (home / ".config/fish/config.fish").read_text()


def test_show_names_a_marker_above_home_that_does_not_count(tmp_path):
    home = tmp_path / "home"
    (home / "src").mkdir(parents=True)
    (tmp_path / "Makefile").write_text("all:\n")
    info = json.loads(ctxd("show", "--json", cwd=home / "src", extra_env={"HOME": str(home)}).stdout)
    assert info["root"] is None
    assert info["notes"] == [f"no project marker from here up to $HOME ({home}), where the search stops; "
                             f"{tmp_path}, above it, holds one but does not count here"]
    # outside $HOME the same marker is the root
    (tmp_path / "elsewhere").mkdir()
    info = json.loads(ctxd("show", "--json", cwd=tmp_path / "elsewhere", extra_env={"HOME": str(home)}).stdout)
    assert info["root"] == str(tmp_path)
