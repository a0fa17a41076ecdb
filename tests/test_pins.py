"""Version pins activate what a version manager already installed (ctxd never installs).

Each manager's install tree is laid out as the manager writes it (directory
names, bin/ subdirectories, alias links), with an executable stand-in for the
binary, in a tmp HOME with the managers' variables pointed there.
"""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxd.activation import export, pins, planner
from ctxd.activation.detectors import Plan
from ctxdtest import ctxd

PINS_PY = Path(pins.__file__)
MANAGER_VARS = ("NVM_DIR", "FNM_DIR", "VOLTA_HOME", "ASDF_DATA_DIR", "MISE_DATA_DIR", "PYENV_ROOT",
                "UV_PYTHON_INSTALL_DIR", "RBENV_ROOT", pins.TOLD_VAR)


def exe(path, text="#!/bin/sh\necho stand-in\n", mode=0o755):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def link(path, target):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "home"
    h.mkdir()
    return h


@pytest.fixture
def env(home):
    """An environment with HOME in tmp and no manager variable from the real user."""
    e = {k: v for k, v in os.environ.items() if k not in MANAGER_VARS}
    # PATH holds no python3.X: a system python would satisfy a "3.12" pin (tested on its own)
    (home / "empty-bin").mkdir()
    e.update(HOME=str(home), XDG_DATA_HOME=str(home / ".local/share"), PATH=str(home / "empty-bin"))
    return e


def project(tmp_path, files, name="proj"):
    root = tmp_path / name
    root.mkdir()
    for rel, text in files.items():
        (root / rel).write_text(text)
    return root


def resolve(root, env, tool):
    [pin] = [p for p in pins.read(str(root)) if p.tool == tool]
    return pins.resolve(pin, env)


# -- layouts, one manager at a time --------------------------------------------

def test_nvm_partial_versions_pick_the_highest_that_fits(tmp_path, home, env):
    nvm = home / "nvm"
    env["NVM_DIR"] = str(nvm)
    for v in ("v18.19.0", "v20.1.0", "v20.1.3", "v20.11.1", "v21.0.0"):
        exe(nvm / "versions/node" / v / "bin/node")
        link(nvm / "versions/node" / v / "bin/npm", "../lib/node_modules/npm/bin/npm-cli.js")
    cases = {"20": "20.11.1", "v20": "20.11.1", "v20.1": "20.1.3", "20.1.0": "20.1.0", "18": "18.19.0",
             "node": "21.0.0", "stable": "21.0.0"}
    for written, found in cases.items():
        root = project(tmp_path, {".nvmrc": f"{written}\n"}, name=f"p-{written}")
        pin = resolve(root, env, "node")
        assert (pin.status, pin.manager, pin.found) == ("active", "nvm", found), written
        assert pin.bin == str(nvm / "versions/node" / f"v{found}" / "bin")
    missing = resolve(project(tmp_path, {".nvmrc": "22\n"}, name="p-22"), env, "node")
    assert missing.status == "missing" and missing.install == "nvm install 22"


def test_nvm_lts_aliases_use_nvms_alias_files_then_the_codename_table(tmp_path, home, env):
    nvm = home / ".nvm"  # the default NVM_DIR
    for v in ("v18.20.4", "v20.18.0", "v22.11.0", "v23.1.0"):
        exe(nvm / "versions/node" / v / "bin/node")
    # without nvm's alias files: lts/* is the highest even (LTS) line installed, codenames from the table
    root = project(tmp_path, {".nvmrc": "lts/*\n", ".node-version": "ignored\n"})
    assert resolve(root, env, "node").found == "22.11.0"
    iron = project(tmp_path, {".nvmrc": "lts/iron\n"}, name="iron")
    assert resolve(iron, env, "node").found == "20.18.0"
    # nvm writes alias/lts/<codename> (a version) and alias/lts/* (a codename) after ls-remote
    (nvm / "alias/lts").mkdir(parents=True)
    (nvm / "alias/lts/hydrogen").write_text("v18.20.4\n")
    (nvm / "alias/lts/*").write_text("lts/hydrogen\n")
    assert resolve(root, env, "node").found == "18.20.4"
    (nvm / "alias/default").write_text("lts/iron\n")  # a user alias pointing at an LTS alias
    assert resolve(project(tmp_path, {".nvmrc": "default\n"}, name="dflt"), env, "node").found == "20.18.0"
    odd = resolve(project(tmp_path, {".nvmrc": "lts/-1\n"}, name="minus"), env, "node")
    assert odd.status == "unresolved" and "lts/-1" in odd.reason
    rng = resolve(project(tmp_path, {".node-version": ">=20\n"}, name="rng"), env, "node")
    assert rng.status == "unresolved"
    system = resolve(project(tmp_path, {".nvmrc": "system\n"}, name="sys"), env, "node")
    assert system.status == "system" and system.bin is None
    # nothing installed: the install command keeps the alias where the manager understands it
    env["NVM_DIR"] = str(tmp_path / "no-nvm")
    (home / ".volta").mkdir()  # volta is the manager in use
    assert resolve(iron, env, "node").install == "volta install node@20"
    assert resolve(root, env, "node").install == "volta install node@lts"
    (home / ".volta").rmdir()
    assert resolve(root, env, "node").install == "nvm install --lts"
    assert resolve(iron, env, "node").install == "nvm install lts/iron"


def test_fnm_default_and_fnm_dir(tmp_path, home, env):
    base = home / ".local/share/fnm"  # fnm's default base dir on Linux ($XDG_DATA_HOME/fnm)
    node = exe(base / "node-versions/v20.11.1/installation/bin/node")
    link(base / "aliases/default", str(node.parent.parent))
    root = project(tmp_path, {".node-version": "20\n"})
    pin = resolve(root, env, "node")
    assert (pin.manager, pin.found, pin.bin) == ("fnm", "20.11.1", str(node.parent))
    other = tmp_path / "fnm-elsewhere"
    exe(other / "node-versions/v20.12.2/installation/bin/node")
    env["FNM_DIR"] = str(other)
    assert resolve(root, env, "node").found == "20.12.2"


def test_volta_image_dir(tmp_path, home, env):
    node = exe(home / ".volta/tools/image/node/20.11.1/bin/node")
    (home / ".volta/tools/inventory/node").mkdir(parents=True)
    pin = resolve(project(tmp_path, {".nvmrc": "v20.11\n"}), env, "node")
    assert (pin.manager, pin.bin) == ("volta", str(node.parent))


def test_asdf_nodejs_and_golang_layouts(tmp_path, home, env):
    asdf = tmp_path / "asdf-data"
    env["ASDF_DATA_DIR"] = str(asdf)
    exe(asdf / "installs/nodejs/20.11.1/bin/node")
    go = exe(asdf / "installs/golang/1.22.1/go/bin/go")  # asdf-golang: bin paths "bin go/bin"
    (asdf / "installs/golang/1.22.1/bin").mkdir()  # GOBIN for `go install`ed tools, no go in it
    root = project(tmp_path, {".tool-versions": "nodejs 20.11.1\ngolang 1.22.1\n"})
    node = resolve(root, env, "node")
    assert (node.manager, node.file) == ("asdf", ".tool-versions")
    golang = resolve(root, env, "go")
    assert (golang.manager, golang.bin) == ("asdf", str(go.parent))
    missing = resolve(project(tmp_path, {".tool-versions": "nodejs 22\n"}, name="m"), env, "node")
    assert missing.install == "asdf install nodejs latest:22"


def test_mise_partial_links_and_tool_versions_fallbacks(tmp_path, home, env):
    installs = home / ".local/share/mise/installs"  # $MISE_DATA_DIR default
    exe(installs / "node/20.11.1/bin/node")
    exe(installs / "node/20.9.0/bin/node")
    # mise links partial versions and "latest" to the real install dir
    link(installs / "node/20", "./20.11.1")
    link(installs / "node/latest", "./20.11.1")
    py = exe(installs / "python/3.11.9/bin/python3")
    root = project(tmp_path, {".nvmrc": "20\n"})
    pin = resolve(root, env, "node")
    assert (pin.manager, pin.found, pin.dir) == ("mise", "20.11.1", str(installs / "node/20.11.1"))
    # .tool-versions: the first listed version installed wins (3.12.4 is not, 3.11.9 is)
    tv = project(tmp_path, {".tool-versions": "python 3.12.4 3.11.9\n"}, name="tv")
    pin = resolve(tv, env, "python")
    assert (pin.status, pin.found, pin.bin) == ("active", "3.11.9", str(py.parent))
    # a tool ctxd has no table for: any executable in bin/ proves the install
    exe(installs / "terraform/1.5.7/bin/terraform")
    (installs / "shellcheck/0.9.0/bin").mkdir(parents=True)  # installed but empty: broken
    other = project(tmp_path, {".tool-versions": "terraform 1.5\nshellcheck 0.9.0\n"}, name="other")
    assert resolve(other, env, "terraform").found == "1.5.7"
    sc = resolve(other, env, "shellcheck")
    assert sc.status == "missing" and sc.broken[0][2] == "bin/ holds no executable"
    latest = project(tmp_path, {".tool-versions": "nodejs latest:20\n"}, name="latest")
    assert resolve(latest, env, "node").found == "20.11.1"


def test_pyenv_prefixes_names_and_pypy(tmp_path, home, env):
    root_dir = home / ".pyenv"
    for v in ("3.11.9", "3.12.1", "3.12.4", "3.13.0t", "pypy3.10-7.3.12", "miniconda3-latest"):
        exe(root_dir / "versions" / v / "bin/python3")
    link(root_dir / "versions/myenv", str(root_dir / "versions/3.11.9"))  # pyenv-virtualenv style name
    want = {"3.12": "3.12.4", "3.12.1": "3.12.1", "3": "3.12.4", "3.13t": "3.13.0t",
            "pypy3.10-7.3.12": "pypy3.10-7.3.12", "miniconda3-latest": "miniconda3-latest", "myenv": "myenv"}
    for written, found in want.items():
        pin = resolve(project(tmp_path, {".python-version": f"# pinned\n{written}\n3.11\n"}, name=f"p{written}"),
                      env, "python")
        assert (pin.manager, pin.found) == ("pyenv", found), written
    env["PYENV_ROOT"] = str(tmp_path / "nowhere")
    assert resolve(project(tmp_path, {".python-version": "3.12\n"}, name="gone"), env, "python").status == "missing"


def test_a_system_python_on_path_satisfies_a_minor_pin(tmp_path, home, env):
    sysbin = tmp_path / "usr-bin"
    exe(sysbin / "python3.12")
    env["PATH"] = f"{tmp_path / 'nothing'}:relative:{sysbin}"
    root = project(tmp_path, {"pyproject.toml": "", ".python-version": "3.12\n"})
    pin = resolve(root, env, "python")
    assert (pin.status, pin.bin) == ("system", None)
    assert pin.reason == f"python3.12 on PATH: {sysbin / 'python3.12'}"
    assert export.transition(env, str(root)).warnings == []
    # a patch-level pin cannot be told from the name alone: still reported
    exact = resolve(project(tmp_path, {".python-version": "3.12.4\n"}, name="exact"), env, "python")
    assert exact.status == "missing"


def test_uv_managed_pythons(tmp_path, home, env):
    d = home / ".local/share/uv/python"
    system = {"darwin": "macos"}.get(os.uname().sysname.lower(), os.uname().sysname.lower())
    full = d / f"cpython-3.12.4-{system}-x86_64-gnu"
    exe(full / "bin/python3.12")
    link(full / "bin/python3", "python3.12")
    link(full / "bin/python", "python3.12")
    link(d / f"cpython-3.12-{system}-x86_64-gnu", full.name)  # uv's minor-version link
    exe(d / f"cpython-3.13.0+freethreaded-{system}-x86_64-gnu/bin/python3")
    (d / ".lock").write_text("")
    pin = resolve(project(tmp_path, {".python-version": "3.12\n"}), env, "python")
    assert (pin.manager, pin.dir) == ("uv", str(full))
    assert resolve(project(tmp_path, {".python-version": "3.13\n"}, name="ft"), env, "python").status == "missing"
    ft = resolve(project(tmp_path, {".python-version": "3.13t\n"}, name="ft2"), env, "python")
    assert ft.status == "active" and "freethreaded" in ft.dir
    env["UV_PYTHON_INSTALL_DIR"] = str(tmp_path / "empty")
    miss = resolve(project(tmp_path, {".python-version": "3.12\n"}, name="e"), env, "python")
    assert miss.status == "missing"


def test_rbenv_and_chruby(tmp_path, home, env):
    exe(home / ".rbenv/versions/3.2.2/bin/ruby")
    ruby = exe(home / ".rubies/ruby-3.3.0/bin/ruby")
    exe(home / ".rubies/jruby-9.4.5.0/bin/ruby")
    pin = resolve(project(tmp_path, {".ruby-version": "3.3\n"}), env, "ruby")
    assert (pin.manager, pin.bin) == ("chruby", str(ruby.parent))
    assert resolve(project(tmp_path, {".ruby-version": "ruby-3.2.2\n"}, name="b"), env, "ruby").manager == "rbenv"
    assert resolve(project(tmp_path, {".ruby-version": "jruby-9.4\n"}, name="j"), env, "ruby").found == "jruby-9.4.5.0"
    miss = resolve(project(tmp_path, {".ruby-version": "3.4.1\n"}, name="m"), env, "ruby")
    assert miss.install == "rbenv install 3.4.1"  # ~/.rbenv exists: the manager in use here


def test_go_sdk_toolchain_and_go_line(tmp_path, home, env):
    for v in ("go1.21.13", "go1.22.1", "go1.22.5"):
        exe(home / "sdk" / v / "bin/go")
    (home / "sdk/gotip").mkdir()
    mod = "module example.com/m\n\ngo 1.22.1\n\ntoolchain go1.22.1\n\nrequire golang.org/x/mod v0.17.0\n"
    pin = resolve(project(tmp_path, {"go.mod": mod}), env, "go")
    assert (pin.manager, pin.found, pin.bin) == ("go", "1.22.1", str(home / "sdk/go1.22.1/bin"))
    # only a `go` line: a minimum; the highest install of that minor at or above it
    line = resolve(project(tmp_path, {"go.mod": "module m\ngo 1.22.2\n"}, name="line"), env, "go")
    assert (line.found, line.notify) == ("1.22.5", False)
    older = resolve(project(tmp_path, {"go.mod": "module m\ngo 1.21\n"}, name="old"), env, "go")
    assert older.found == "1.21.13"
    miss = resolve(project(tmp_path, {"go.mod": "module m\ngo 1.21\ntoolchain go1.23.4\n"}, name="m"), env, "go")
    assert miss.status == "missing" and miss.notify
    assert miss.install == "go install golang.org/dl/go1.23.4@latest && go1.23.4 download"


# -- broken installs ---------------------------------------------------------

def test_broken_installs_are_skipped_and_named(tmp_path, home, env):
    nvm = home / ".nvm/versions/node"
    good = exe(nvm / "v20.9.0/bin/node")
    (nvm / "v20.11.1").mkdir(parents=True)  # no bin/ (an interrupted install)
    exe(nvm / "v20.10.0/bin/node", mode=0o644)  # not executable
    exe(nvm / "v20.10.5/bin/npm")  # bin/ without node
    pin = resolve(project(tmp_path, {".nvmrc": "20\n"}), env, "node")
    assert pin.bin == str(good.parent)
    assert pin.broken == [(str(nvm / "v20.11.1"), "nvm", "no bin/"),
                          (str(nvm / "v20.10.5"), "nvm", "no bin/node"),
                          (str(nvm / "v20.10.0"), "nvm", "bin/node is not executable")]
    good.chmod(0o644)
    pin = resolve(project(tmp_path, {".nvmrc": "20\n"}, name="all-broken"), env, "node")
    assert pin.status == "missing" and len(pin.broken) == 4
    assert "4 broken install(s) skipped" in pins.message(pin)


# -- in the plan: PATH order, trust, watch, notices ------------------------------

def full_project(tmp_path):
    root = project(tmp_path, {"package.json": "{}", "pyproject.toml": "", ".nvmrc": "20\n"})
    (root / ".venv/bin").mkdir(parents=True)
    (root / ".venv/bin/activate").write_text("")
    return root


def test_pin_bin_goes_behind_the_projects_own_bins(tmp_path, home, env):
    node = exe(home / ".nvm/versions/node/v20.11.1/bin/node")
    root = full_project(tmp_path)
    (root / ".contextrc").write_text('[path]\nprepend = ["tools"]\n')
    ctxd("allow", str(root), env=env, check=0)
    plan = planner.build(str(root), env, env)
    assert [e for e, _ in plan.prepend] == [str(root / "tools"), str(root / ".venv/bin"),
                                            str(root / "node_modules/.bin"), str(node.parent)]
    assert dict(plan.prepend)[str(node.parent)] == "node: .nvmrc 20 -> nvm 20.11.1"
    # the pin file and every manager directory searched are watched
    assert str(root / ".nvmrc") in plan.watch
    assert str(home / ".nvm/versions/node") in plan.watch
    assert str(home / ".local/share/mise/installs/node") in plan.watch
    t = export.transition(env, str(root))
    assert t.target["PATH"].split(":")[:4] == [e for e, _ in plan.prepend]
    assert t.warnings == []


def test_untrusted_root_gets_no_pin_and_no_notice(tmp_path, home, env):
    (Path(env["XDG_CONFIG_HOME"]) / "ctxd/config.toml").write_text("")  # trusts no tree
    exe(home / ".nvm/versions/node/v20.11.1/bin/node")
    root = project(tmp_path, {"package.json": "{}", ".nvmrc": "20\n", ".python-version": "3.99\n"})
    t = export.transition(env, str(root))
    assert str(home / ".nvm/versions/node/v20.11.1/bin") not in t.target["PATH"]
    assert not [w for w in t.warnings if "pins" in w] and pins.TOLD_VAR not in t.target
    assert [p.status for p in t.plan.pins] == ["active", "missing"]  # still explained by `ctxd show`


def test_a_missing_pin_is_reported_once_per_shell_session(tmp_path, home, env):
    root = project(tmp_path, {"package.json": "{}", ".nvmrc": "20\n"})
    other = project(tmp_path, {"package.json": "{}", ".nvmrc": "20\n"}, name="other")
    t = export.transition(env, str(root))
    line = "ctxd: .nvmrc pins node 20, which is not installed; ctxd never installs. Install it with: nvm install 20"
    assert t.warnings == [line]
    assert t.target[pins.TOLD_VAR] == "node@20"
    # the shell now holds what render printed: the same pin elsewhere, or here again, says nothing
    code = export.render(__import__("ctxd.shells", fromlist=["get_shell"]).get_shell("bash"), env, t)
    assert f"export {pins.TOLD_VAR}=node@20" in code and line in code
    shell_env = dict(t.target)
    shell_env["CTXD_STATE"] = export.encode(t.state)
    assert export.transition(shell_env, str(other)).warnings == []
    left = export.transition(shell_env, str(tmp_path))  # out of every project: the memory stays
    assert left.target[pins.TOLD_VAR] == "node@20"
    # a new shell session (no variable) is told again; another pin is told too
    (other / ".nvmrc").write_text("21\n")
    t2 = export.transition(shell_env, str(other))
    assert t2.warnings == [line.replace("20", "21")]
    assert t2.target[pins.TOLD_VAR] == "node@20 node@21"
    assert export.transition(env, str(root)).warnings == [line]


def test_go_line_alone_never_reports(tmp_path, env):
    root = project(tmp_path, {"go.mod": "module m\n\ngo 1.22\n"})
    t = export.transition(env, str(root))
    assert t.warnings == [] and pins.TOLD_VAR not in t.target
    assert str(root / "go.mod") in t.plan.watch


def test_disabled_detector_disables_its_pins(tmp_path, home, env):
    exe(home / ".nvm/versions/node/v20.11.1/bin/node")
    root = project(tmp_path, {"package.json": "{}", ".nvmrc": "20\n", ".contextrc": "[detect]\nnode = false\n"})
    ctxd("allow", str(root), env=env, check=0)
    plan = planner.build(str(root), env, env)
    assert plan.pins == [] and not [e for e, _ in plan.prepend if ".nvm" in e]


def test_show_names_pin_match_manager_and_broken_dirs(tmp_path, home, env):
    nvm = home / ".nvm/versions/node"
    exe(nvm / "v20.9.0/bin/node")
    (nvm / "v20.11.1").mkdir()
    root = project(tmp_path, {"package.json": "{}", ".nvmrc": "20\n", ".python-version": "3.12\n"})
    e = dict(env, PWD=str(root))
    out = ctxd("show", cwd=root, env=e, check=0).stdout
    assert f"toolchain    node     20 (.nvmrc): nvm 20.9.0  {nvm}/v20.9.0/bin" in out
    assert f"skipped      node     {nvm}/v20.11.1  (nvm: no bin/; broken install)" in out
    assert "toolchain    python   3.12 (.python-version): not installed; install it with: pyenv install 3.12" in out
    assert f"PATH +       {nvm}/v20.9.0/bin  <- node: .nvmrc 20 -> nvm 20.9.0" in out
    info = json.loads(ctxd("show", "--json", cwd=root, env=e, check=0).stdout)
    [node] = [p for p in info["toolchains"] if p["tool"] == "node"]
    assert (node["status"], node["manager"], node["match"]) == ("active", "nvm", "20.9.0")
    assert node["broken"] == [{"dir": str(nvm / "v20.11.1"), "manager": "nvm", "reason": "no bin/"}]


def test_pins_module_stays_on_the_hot_path_budget():
    """Imported on every cd into a root with a pin file: the standard library's os (and
    state.py, for the TOLD_VAR name) only (no re, json, tomllib, click ...)."""
    mods = set()
    for node in ast.walk(ast.parse(PINS_PY.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            mods |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            mods.add(node.module or "")
    assert mods == {"os", "ctxd.activation.state"}


def test_plan_has_pins_even_without_a_detector_type(tmp_path, home, env):
    exe(home / ".pyenv/versions/3.12.4/bin/python3")
    root = project(tmp_path, {"Makefile": "", ".python-version": "3.12\n"})
    plan = Plan(str(root))
    pins.activate(str(root), plan, env)
    assert [e for e, _ in plan.prepend] == [str(home / ".pyenv/versions/3.12.4/bin")]


def test_every_file_pins_read_looks_at_is_in_the_detectors_probe(tmp_path, monkeypatch):
    # detectors.detect() loads this module only for a root holding one of PIN_FILES: a pin
    # file read() knows that the probe misses would silently never activate
    from ctxd.activation import detectors

    opened = []
    real_lines = pins._lines
    monkeypatch.setattr(pins, "_lines", lambda path: opened.append(os.path.basename(path)) or real_lines(path))
    pins.read(str(tmp_path))
    assert opened and set(opened) == set(detectors.PIN_FILES)


def test_a_root_without_pin_files_never_loads_this_module(tmp_path, home, env):
    exe(home / ".nvm/versions/node/v20.1.0/bin/node")
    plain = project(tmp_path, {"package.json": "{}"}, name="plain")
    pinned = project(tmp_path, {"package.json": "{}", ".nvmrc": "20\n"}, name="pinned")
    code = ("import sys; from ctxd.activation import export; from ctxd.shells import get_shell; "
            "export.export(get_shell('bash'), dict(__import__('os').environ), sys.argv[1]); "
            "print('ctxd.activation.pins' in sys.modules)")
    for root, loaded in ((plain, "False"), (pinned, "True")):
        out = subprocess.run([sys.executable, "-c", code, str(root)], env=env, capture_output=True, text=True,
                             cwd=str(root), check=True).stdout.split()
        assert out == [loaded], root


# -- pin text reaches a command the user pastes: version-shaped only ------------------------

@pytest.mark.parametrize("files,tool", [
    ({"go.mod": "module m\ngo 1.22\ntoolchain go$(touch${IFS}/tmp/pwned)\n"}, "go"),
    ({".python-version": "3.12;rm\n"}, "python"),
    ({".nvmrc": "`id`\n"}, "node"),
    ({".ruby-version": "3.3|sh\n"}, "ruby"),
    ({".node-version": "-rf\n"}, "node"),
    ({".tool-versions": "nodejs 20&&id\n"}, "node"),
    ({".tool-versions": "$(id) 1.2\n"}, "$(id)"),
    ({".tool-versions": "rust 1.7\x1b]52;c;AAAA\x07\n"}, "rust"),
])
def test_a_pin_that_is_not_version_shaped_offers_no_command(tmp_path, home, env, files, tool):
    root = project(tmp_path, files)
    [pin] = [p for p in pins.read(str(root)) if p.tool == tool]
    pins.resolve(pin, env)
    assert pin.status == "unresolved" and pin.install is None
    line = pins.message(pin)
    assert "Install it with" not in line and "not a version" in line
    bad = pin.version if not pins.shaped(pin.version) else pin.tool
    assert repr(bad) in line and "\x1b" not in line  # quoted as data, its controls escaped
    assert pins.shaped(pin.version) or repr(bad) in pins.describe(pin)


def test_version_shaped_pins_still_offer_their_command(tmp_path, home, env):
    for i, (files, tool, cmd) in enumerate([
        ({"go.mod": "module m\ntoolchain go1.23rc1\n"}, "go", "go install golang.org/dl/go1.23rc1@latest"),
        ({".python-version": "miniconda3-4.7.12\n"}, "python", "pyenv install miniconda3-4.7.12"),
        ({".nvmrc": "lts/iron\n"}, "node", "nvm install lts/iron"),
        ({".tool-versions": "python latest:3.12\n"}, "python", "asdf install python latest:3.12"),
        ({".ruby-version": "jruby-9.4.5.0\n"}, "ruby", "rbenv install jruby-9.4.5.0"),
    ]):
        root = project(tmp_path, files, name=f"p{i}")
        [pin] = [p for p in pins.read(str(root)) if p.tool == tool]
        pins.resolve(pin, env)
        assert pin.install and pin.install.startswith(cmd), (files, pin.install)
