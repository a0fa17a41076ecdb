"""ctxd doctor's AI-CLI lines: will Claude Code, Gemini CLI and Codex run ctxd's hooks?
(tests/realcli/test_real_clis.py checks the verdicts against the real CLIs.)"""

import json
import shutil
import subprocess

import pytest

from ctxdtest import ctxd

CTXD = shutil.which("ctxd")
pytestmark = pytest.mark.skipif(CTXD is None, reason="the ctxd console script is not on PATH")


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "work" / "proj"
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_TRUST_WORKSPACE", "GEMINI_CLI_TRUSTED_FOLDERS_PATH"):
        monkeypatch.delenv(var, raising=False)
    return root


def run(project, *args):
    return ctxd(*args, cwd=project, script=True)


def checks(project):
    r = run(project, "doctor", "--json")
    assert r.returncode in (0, 1), r.stderr
    return {c["name"]: c for c in json.loads(r.stdout)["checks"]}


def test_no_line_for_a_cli_without_ctxds_hooks(project):
    assert not [n for n in checks(project) if n.endswith(" hooks")]


def test_claude(project):
    assert run(project, "chat", "install", "claude").returncode == 0
    c = checks(project)["claude hooks"]
    assert c["status"] == "ok" and ".claude" in c["message"]


def test_claude_install_from_before_the_bash_tool_hooks_is_named(project):
    """An install an older ctxd made has no CwdChanged/FileChanged entries: the Bash tool keeps the
    environment it started with. doctor says so and how to add them (installing again keeps the rest)."""
    assert run(project, "chat", "install", "claude").returncode == 0
    path = project / ".claude" / "settings.local.json"
    data = json.loads(path.read_text())
    for event in ("CwdChanged", "FileChanged"):
        del data["hooks"][event]
    path.write_text(json.dumps(data, indent=2))
    c = checks(project)["claude hooks"]
    assert c["status"] == "warn" and "CwdChanged, FileChanged" in c["message"] and "Bash tool" in c["message"]
    assert "ctxd chat install claude" in (c.get("fix") or "")
    assert run(project, "chat", "install", "claude").returncode == 0
    assert checks(project)["claude hooks"]["status"] == "ok"


def test_codex_untrusted_then_trusted(project, isolated_paths):
    assert run(project, "chat", "install", "codex").returncode == 0
    c = checks(project)["codex hooks"]
    assert c["status"] == "warn" and "trust the folder" in c["message"] and "/hooks" in c["fix"]
    assert "SessionStart, UserPromptSubmit, Stop hooks until you trust them" in c["message"]
    hooks_json = project / ".codex" / "hooks.json"
    cfg = isolated_paths / ".codex" / "config.toml"
    cfg.parent.mkdir(exist_ok=True)
    state = "".join(f'[hooks.state."{hooks_json}:{e}:0:0"]\ntrusted_hash = "sha256:00"\n'
                    for e in ("session_start", "user_prompt_submit"))
    cfg.write_text(f'[projects."{project.parent}"]\ntrust_level = "trusted"\n\n' + state)
    c = checks(project)["codex hooks"]
    assert c["status"] == "warn" and "Stop hook until" in c["message"] and "trust the folder" not in c["message"]
    cfg.write_text(cfg.read_text() + f'[hooks.state."{hooks_json}:stop:0:0"]\ntrusted_hash = "sha256:00"\n')
    assert checks(project)["codex hooks"]["status"] == "ok"


def test_codex_deprecated_flag_is_a_warning(project, isolated_paths):
    assert run(project, "chat", "install", "codex", "--user").returncode == 0
    cfg = isolated_paths / ".codex" / "config.toml"
    cfg.write_text(cfg.read_text() + "\n[features]\ncodex_hooks = true\n")
    c = checks(project)["codex hooks"]
    assert c["status"] == "warn" and "`codex_hooks`" in c["message"] and "trust the folder" not in c["message"]


@pytest.mark.parametrize("rules, ok", [
    (None, False),
    ({}, False),
    ({"{proj}": "TRUST_FOLDER"}, True),
    ({"{proj}/x": "TRUST_PARENT"}, True),
    ({"{work}": "TRUST_FOLDER", "{proj}": "DO_NOT_TRUST"}, False),
    ({"{work}": "TRUST_FOLDER"}, True),
])
def test_gemini_folder_trust(project, isolated_paths, rules, ok):
    assert run(project, "chat", "install", "gemini").returncode == 0
    if rules is not None:
        d = isolated_paths / ".gemini"
        d.mkdir(exist_ok=True)
        text = json.dumps(rules).replace("{proj}", str(project)).replace("{work}", str(project.parent))
        (d / "trustedFolders.json").write_text(text)
    c = checks(project)["gemini hooks"]
    assert c["status"] == ("ok" if ok else "warn"), c
    if not ok:
        assert "trust the folder" in c["fix"]


def test_gemini_user_scope_needs_no_folder_trust(project):
    assert run(project, "chat", "install", "gemini", "--user").returncode == 0
    assert checks(project)["gemini hooks"]["status"] == "ok"
