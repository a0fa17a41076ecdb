"""ctxd chat hook / ctxd chat install, run as whole processes.

The hooks get the payload samples in tests/contracts/hooks/ on stdin (Codex's
notify on argv), exactly as Claude Code, Gemini CLI and Codex run them, in a
tmp project with isolated user paths (conftest). Install runs against settings
files that already hold other hooks and keys.
"""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxd import paths
from ctxdtest import ctxd

CONTRACTS = Path(__file__).parent / "contracts" / "hooks"
CTXD = shutil.which("ctxd")
CLAUDE_SID = "3f6a2c1e-8b7d-4e2a-9c1f-5d4b3a2e1f00"
GEMINI_SID = "9d1e7b52-4c3a-4f6e-a1b2-c3d4e5f60718"
CODEX_SID = "019a9f2e-5b6c-7d8e-9f01-23456789abcd"

pytestmark = pytest.mark.skipif(CTXD is None, reason="the ctxd console script is not on PATH")


@pytest.fixture(autouse=True)
def no_tool_homes(monkeypatch):
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


def _esc(value):
    return json.dumps(str(value))[1:-1]


def payload(tool, name, project, transcript=None):
    text = (CONTRACTS / tool / name).read_text()
    return text.replace("__CWD__", _esc(project)).replace("__TRANSCRIPT__", _esc(transcript or ""))


def transcript(tool, name, project, tmp_path):
    """A copy of a sample transcript for this project (its cwd filled in)."""
    dest = tmp_path / "transcripts" / name
    dest.parent.mkdir(exist_ok=True)
    dest.write_text((CONTRACTS / tool / name).read_text().replace("__CWD__", _esc(project)))
    return dest


def hook(tool, stdin=b"", args=(), cwd=None):
    if isinstance(stdin, str):
        stdin = stdin.encode()
    return ctxd("chat", "hook", tool, *args, input=stdin, cwd=cwd, text=False, script=True)


def ok_quiet(r):
    """Exit 0, nothing on stdout, at most one short line on stderr."""
    assert r.returncode == 0, r.stderr
    assert r.stdout == b""
    assert len(r.stderr.decode().splitlines()) <= 1


def messages(project):
    from ctxd.memory.project import locate, open_store

    p = locate(str(project))
    if not os.path.exists(os.path.join(p.context_dir, "store.db")):
        return []
    with open_store(p, create=False) as s:
        return [dict(role=r["role"], content=r["content"], source=r["source"], session=r["session"],
                     dedup=r["dedup"]) for r in s.db.execute("SELECT * FROM messages ORDER BY id")]


def add_messages(project, items):
    from ctxd.memory.context import render
    from ctxd.memory.project import locate, open_store

    p = locate(str(project))
    with open_store(p) as s:
        s.add_many([dict(role=role, content=text, session="seed") for role, text in items])
        render.write(s, p.root)
    return p


def log_text():
    try:
        return Path(paths.log_file()).read_text()
    except FileNotFoundError:
        return ""


def context_of(r):
    out = json.loads(r.stdout)  # exactly one JSON document, or this raises
    assert set(out) == {"hookSpecificOutput"}
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert set(out["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
    return out["hookSpecificOutput"]["additionalContext"]


# -- SessionStart ------------------------------------------------------------------------

@pytest.mark.parametrize("tool", ["claude", "codex"])
def test_session_start_empty_store_prints_nothing_and_creates_nothing(tool, project):
    from ctxd.memory.project import locate

    r = hook(tool, payload(tool, "session_start.json", project))
    ok_quiet(r)
    assert r.stderr == b""
    assert not os.path.exists(os.path.join(locate(str(project)).context_dir, "store.db"))
    assert log_text() == ""


def test_session_start_gemini_empty_store_prints_empty_object(project):
    r = hook("gemini", payload("gemini", "session_start.json", project))
    assert r.returncode == 0 and r.stderr == b""
    assert json.loads(r.stdout) == {}


@pytest.mark.parametrize("tool,name", [("claude", "session_start.json"), ("gemini", "session_start.json"),
                                       ("codex", "session_start.json"),
                                       ("codex", "session_start_no_transcript.json")])
def test_session_start_injects_context_as_one_json_object(tool, name, project):
    add_messages(project, [("user", "Use ruff, not flake8, in this repo"), ("assistant", "Noted: ruff it is.")])
    r = hook(tool, payload(tool, name, project))
    assert r.returncode == 0 and r.stderr == b""
    assert r.stdout.count(b"\n") == 1 and r.stdout.endswith(b"\n")
    ctx = context_of(r)
    assert "Use ruff, not flake8, in this repo" in ctx and "Noted: ruff it is." in ctx
    assert len(ctx) <= 10_000


def test_session_start_context_is_cut_to_10000_characters_keeping_the_newest(project):
    turns = [("user" if i % 2 == 0 else "assistant", f"turn-{i:03d} " + "lorem ipsum dolor " * 75) for i in range(60)]
    p = add_messages(project, turns)
    r = hook("claude", payload("claude", "session_start.json", project))
    ctx = context_of(r)
    assert len(ctx) <= 10_000
    # the newest turns verbatim; not all 60 fit (about 1,400 characters each)
    assert "turn-059 lorem" in ctx and "turn-058 lorem" in ctx
    assert sum(t[1].strip() in ctx for t in turns) < 10
    assert os.path.join(p.context_dir, "context.md") in ctx.splitlines()[-1]  # where the full file is
    assert ctx.startswith("# Conversation context: proj")


# -- Claude Code ---------------------------------------------------------------------------

def test_claude_user_prompt_is_recorded(project):
    r = hook("claude", payload("claude", "user_prompt_submit.json", project))
    ok_quiet(r)
    assert r.stderr == b""
    [m] = messages(project)
    assert (m["role"], m["content"], m["source"], m["session"]) == (
        "user", "Add a --json flag to the show command", "claude", CLAUDE_SID)
    from ctxd.memory.project import locate

    # the hook leaves context.md to the detached refresh the turn's end starts (test_hook_context_md)
    subprocess.run([CTXD, "chat", "refresh"], cwd=project, capture_output=True, check=True, timeout=60)
    assert "Add a --json flag" in Path(locate(str(project)).context_dir, "context.md").read_text()


def test_claude_same_prompt_twice_is_two_messages(project):
    for _ in range(2):
        ok_quiet(hook("claude", payload("claude", "user_prompt_submit.json", project)))
    assert [m["content"] for m in messages(project)] == ["Add a --json flag to the show command"] * 2
    from ctxd.agents.claude import claude_prompt_dedup

    text = "Add a --json flag to the show command"
    assert [m["dedup"] for m in messages(project)] == [claude_prompt_dedup(CLAUDE_SID, text, k) for k in (1, 2)]


@pytest.mark.parametrize("event", ["stop.json", "pre_compact.json", "session_end.json"])
def test_claude_stop_imports_the_transcript_once(event, project, tmp_path):
    t = transcript("claude", "transcript.jsonl", project, tmp_path)
    ok_quiet(hook("claude", payload("claude", "user_prompt_submit.json", project, t)))
    ok_quiet(hook("claude", payload("claude", event, project, t)))
    ms = messages(project)
    contents = [m["content"] for m in ms]
    assert contents.count("Add a --json flag to the show command") == 1  # the hook's and the import's: one
    assert "Done: show --json prints one JSON object with the resolved paths." in contents
    assert any(m["role"] == "tool" and "import click" in m["content"] for m in ms)
    assert all(m["session"] == CLAUDE_SID and m["source"] == "claude" for m in ms)
    ok_quiet(hook("claude", payload("claude", "stop.json", project, t)))  # again: nothing new
    assert messages(project) == ms
    ctx = context_of(hook("claude", payload("claude", "session_start.json", project, t)))
    assert "Done: show --json prints one JSON object" in ctx


def test_claude_stop_after_more_lines_imports_only_those(project, tmp_path):
    t = transcript("claude", "transcript.jsonl", project, tmp_path)
    ok_quiet(hook("claude", payload("claude", "stop.json", project, t)))
    n = len(messages(project))
    line = {"parentUuid": None, "isSidechain": False, "cwd": str(project), "sessionId": CLAUDE_SID, "type": "user",
            "message": {"role": "user", "content": "Now add a test for it"}, "uuid": "7c2e9a10-0005",
            "timestamp": "2026-11-30T10:01:00.000Z"}
    with open(t, "a") as f:
        f.write(json.dumps(line) + "\n")
    ok_quiet(hook("claude", payload("claude", "stop.json", project, t)))
    ms = messages(project)
    assert len(ms) == n + 1 and ms[-1]["content"] == "Now add a test for it"


def test_claude_events_ctxd_does_not_use_are_ignored(project):
    r = hook("claude", payload("claude", "pre_tool_use.json", project))
    ok_quiet(r)
    assert r.stderr == b"" and messages(project) == [] and log_text() == ""


def test_claude_stop_before_the_transcript_exists_is_nothing_yet(project, tmp_path):
    """Claude Code can fire Stop before it has written the transcript: not an error."""
    r = hook("claude", payload("claude", "stop.json", project, tmp_path / "gone.jsonl"))
    ok_quiet(r)
    assert r.stderr == b"" and log_text() == "" and messages(project) == []


def test_claude_stop_with_a_transcript_path_that_is_a_directory_logs_and_exits_0(project, tmp_path):
    (tmp_path / "adir.jsonl").mkdir()
    r = hook("claude", payload("claude", "stop.json", project, tmp_path / "adir.jsonl"))
    ok_quiet(r)
    assert "chat hook claude" in log_text() and "adir.jsonl" in log_text()


# -- Gemini CLI ----------------------------------------------------------------------------

def test_gemini_records_prompt_and_response_and_prints_json_only(project):
    for name in ("before_agent.json", "after_agent.json", "before_tool.json"):
        r = hook("gemini", payload("gemini", name, project))
        assert r.returncode == 0 and r.stderr == b""
        assert json.loads(r.stdout) == {}
    ms = messages(project)
    assert [(m["role"], m["content"][:30], m["source"], m["session"]) for m in ms] == [
        ("user", "Why does the build fail on CI?", "gemini", GEMINI_SID),
        ("assistant", "The lockfile is stale: uv.lock", "gemini", GEMINI_SID)]
    hook("gemini", payload("gemini", "after_agent.json", project))  # the same response again: one
    assert len(messages(project)) == 2
    assert "The lockfile is stale" in context_of(hook("gemini", payload("gemini", "session_start.json", project)))


@pytest.mark.parametrize("event", ["session_end.json", "pre_compress.json"])
def test_gemini_transcript_import_supersedes_the_live_records(event, project, tmp_path):
    t = transcript("gemini", "session.jsonl", project, tmp_path)
    for name in ("before_agent.json", "after_agent.json", event):
        r = hook("gemini", payload("gemini", name, project, t))
        assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
    ms = messages(project)
    contents = [m["content"] for m in ms]
    assert contents.count("Why does the build fail on CI?") == 1
    assert sum(c.startswith("The lockfile is stale") for c in contents) == 1
    assert any(m["role"] == "tool" and "lockfile needs to be updated" in m["content"] for m in ms)
    assert not any(m["dedup"].startswith("gemini-hook:") for m in ms)
    r = hook("gemini", payload("gemini", "session_end.json", project, t))
    assert json.loads(r.stdout) == {} and messages(project) == ms


def test_gemini_without_transcript_path_records_nothing(project):
    r = hook("gemini", payload("gemini", "session_end.json", project, ""))
    assert r.returncode == 0 and json.loads(r.stdout) == {} and messages(project) == []


# -- Codex ---------------------------------------------------------------------------------

def notify(project, **changes):
    data = json.loads(payload("codex", "notify.json", project))
    data.update(changes)
    return hook("codex-notify", args=[json.dumps(data)], stdin=b"")


def test_codex_notify_records_the_turn_idempotently(project):
    ok_quiet(notify(project))
    ms = messages(project)
    assert [(m["role"], m["content"], m["dedup"]) for m in ms] == [
        ("user", "Rename foo to bar in src/", f"codex:{CODEX_SID}:1:user:0"),
        ("assistant", "Renamed foo to bar in src/a.py and src/b.py.", f"codex:{CODEX_SID}:1:assistant")]
    assert all(m["source"] == "codex" and m["session"] == CODEX_SID for m in ms)
    ok_quiet(notify(project))
    assert messages(project) == ms
    ok_quiet(notify(project, **{"turn-id": "2", "input-messages": ["Now run the tests", "and lint"],
                                "last-assistant-message": "All 42 tests pass."}))
    assert [m["content"] for m in messages(project)[2:]] == ["Now run the tests", "and lint", "All 42 tests pass."]


def test_codex_notify_takes_numeric_ids(project):
    ok_quiet(notify(project, **{"turn-id": 7}))
    assert [m["dedup"] for m in messages(project)] == [f"codex:{CODEX_SID}:7:user:0", f"codex:{CODEX_SID}:7:assistant"]


def test_codex_notify_ignores_other_types(project):
    ok_quiet(notify(project, type="approval-requested"))
    assert messages(project) == [] and log_text() == ""


def test_codex_user_prompt_and_notify_store_the_prompt_once(project):
    ok_quiet(hook("codex", payload("codex", "user_prompt_submit.json", project)))
    ok_quiet(notify(project))
    assert [m["content"] for m in messages(project)].count("Rename foo to bar in src/") == 1


def test_codex_stop_without_transcript_does_nothing(project):
    ok_quiet(hook("codex", payload("codex", "stop_no_transcript.json", project)))
    assert messages(project) == [] and log_text() == ""


def test_codex_hooks_notify_and_rollout_import_keep_one_copy(project, tmp_path):
    t = transcript("codex", "rollout.jsonl", project, tmp_path)
    ok_quiet(hook("codex", payload("codex", "user_prompt_submit.json", project, t)))
    ok_quiet(hook("codex", payload("codex", "stop.json", project, t)))
    ok_quiet(notify(project))  # notify arrives after Stop
    ms = messages(project)
    contents = [m["content"] for m in ms]
    assert contents.count("Rename foo to bar in src/") == 1
    assert contents.count("Renamed foo to bar in src/a.py and src/b.py.") == 1
    assert any(m["role"] == "tool" and "src/a.py" in m["content"] for m in ms)
    assert not any("environment_context" in c for c in contents)
    ok_quiet(hook("codex", payload("codex", "stop.json", project, t)))
    ok_quiet(notify(project))
    assert messages(project) == ms


# -- never failing the AI CLI ------------------------------------------------------------------

GARBAGE = [
    b"",
    b"not json at all",
    b"[1, 2, 3]",
    b'"a string"',
    b'{"session_id": "s", "cwd": "',
    b"\xff\xfe\x00\x01 binary",
    b'{"hook_event_name": "SessionStart", "session_id": "s"}',
    b'{"hook_event_name": "SessionStart", "cwd": 42, "session_id": "s"}',
    b'{"cwd": "/tmp", "session_id": "s"}',
]


@pytest.mark.parametrize("data", GARBAGE, ids=range(len(GARBAGE)))
@pytest.mark.parametrize("tool", ["claude", "codex", "gemini"])
def test_garbage_payload_exits_0_quietly_and_logs(tool, data):
    r = hook(tool, data)
    assert r.returncode == 0
    assert len(r.stderr.decode().splitlines()) <= 1
    if tool == "gemini":
        assert json.loads(r.stdout) == {}
    else:
        assert r.stdout == b""
    assert f"chat hook {tool}" in log_text()
    assert "Traceback" in log_text()


@pytest.mark.parametrize("tool, data, reason", [
    ("claude", b"[1, 2, 3]", "the payload is a JSON list, not an object"),
    ("gemini", b'{"hook_event_name": "SessionStart", "session_id": "s"}', "the payload has no cwd"),
    ("codex", b"", "empty stdin: no hook payload"),
    ("claude", b'{"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "hi", '
               b'"cwd": "/nonexistent/ctxd-gone"}',
     "the payload's cwd /nonexistent/ctxd-gone does not exist"),
])
def test_a_failed_hook_says_why_in_one_line_and_logs_it_dated(tool, data, reason):
    """The line and the log entry come from the one error boundary (ctxd.boundary)."""
    r = hook(tool, data)
    log = paths.log_file()
    assert r.returncode == 0
    assert r.stderr.decode() == f"ctxd: chat hook {tool}: nothing recorded ({reason}); see {log}\n"
    heads = [line for line in log_text().splitlines() if line.startswith("--- ")]
    assert len(heads) == 1
    assert re.fullmatch(rf"--- \d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\dZ chat hook {tool}: {re.escape(reason)} \(pid \d+\)",
                        heads[0]), heads[0]
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600  # tracebacks can quote the conversation


@pytest.mark.parametrize("args", [[], ["{not json"], ["[]"], ['{"type": "agent-turn-complete"}']])
def test_codex_notify_garbage_exits_0_and_logs(args):
    r = hook("codex-notify", args=args)
    ok_quiet(r)
    assert "chat hook codex-notify" in log_text()


def test_unknown_tool_exits_0_and_logs(project):
    r = hook("cursor", payload("claude", "session_start.json", project))
    ok_quiet(r)
    assert "unknown tool 'cursor'" in log_text()


@pytest.mark.parametrize("tool", ["claude", "gemini", "codex"])
def test_corrupt_store_exits_0_with_nothing_injected(tool, project):
    p = add_messages(project, [("user", "hello")])
    db = Path(p.context_dir, "store.db")
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    for name in ("session_start.json", "before_agent.json" if tool == "gemini" else "user_prompt_submit.json"):
        r = hook(tool, payload(tool, name, project))
        assert r.returncode == 0
        assert r.stdout == (b"{}\n" if tool == "gemini" else b"")
    assert "corrupt" in log_text()


def test_unwritable_log_still_exits_0(project, monkeypatch, tmp_path):
    blocker = tmp_path / "state-is-a-file"
    blocker.write_text("")
    monkeypatch.setenv("CTXD_STATE_DIR", str(blocker / "sub"))
    r = hook("gemini", b"garbage")
    assert r.returncode == 0 and json.loads(r.stdout) == {}


# -- ctxd chat install -----------------------------------------------------------------------

def install(*args, cwd):
    return ctxd("chat", "install", *args, cwd=cwd, script=True)


CLAUDE_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": []},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/guard.sh",
                                                      "timeout": 10}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send 'Claude is done'"}]}],
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}],
    },
    "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"},
    "enabledPlugins": {"x@y": True},
}


def without_ctxd(settings):
    """The settings with every ctxd hook (and what only held them) taken out, by hand."""
    s = json.loads(json.dumps(settings))
    for event in list(s.get("hooks", {})):
        groups = []
        for g in s["hooks"][event]:
            hooks = [h for h in g["hooks"] if "chat hook" not in h["command"]]
            if hooks:
                groups.append(dict(g, hooks=hooks))
        if groups:
            s["hooks"][event] = groups
        else:
            del s["hooks"][event]
    return s


def ctxd_groups(settings):
    return {event: [g for g in groups if any("chat hook" in h["command"] for h in g["hooks"])]
            for event, groups in settings.get("hooks", {}).items()
            if any("chat hook" in h["command"] for g in groups for h in g["hooks"])}


PORTABLE = "if command -v ctxd >/dev/null 2>&1; then ctxd chat hook {tool}; fi"


def test_install_claude_project_merges_and_keeps_everything_else(project):
    """The default project scope is Claude Code's personal settings.local.json (absolute path)."""
    path = project / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_text(json.dumps(CLAUDE_SETTINGS, indent=4))
    r = install("claude", cwd=project)
    assert r.returncode == 0, r.stderr
    assert str(path) in r.stdout
    assert not (project / ".claude" / "settings.json").exists()  # the committed file is not touched
    s = json.loads(path.read_text())
    assert without_ctxd(s) == CLAUDE_SETTINGS
    assert list(s) == list(CLAUDE_SETTINGS)  # key order kept
    mine = ctxd_groups(s)
    assert set(mine) == {"SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd", "CwdChanged",
                         "FileChanged"}
    for event, [group] in mine.items():
        [h] = group["hooks"]
        assert h["type"] == "command" and h["timeout"] == 30
        assert h["command"].endswith(" chat hook claude")
        assert os.path.isabs(h["command"].split()[0].strip("'"))
        assert group.get("matcher") == ("startup|resume|clear|compact" if event == "SessionStart" else None)
    assert s["hooks"]["Stop"][0] == CLAUDE_SETTINGS["hooks"]["Stop"][0]  # theirs first, then ctxd's
    assert s["hooks"]["SessionStart"][0] == CLAUDE_SETTINGS["hooks"]["SessionStart"][0]


def test_install_twice_is_install_once_and_uninstall_restores(project):
    path = project / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_text(json.dumps(CLAUDE_SETTINGS, indent=2))
    original = path.read_bytes()
    assert install("claude", "--project", cwd=project).returncode == 0
    once = path.read_bytes()
    r = install("claude", cwd=project)
    assert r.returncode == 0 and "already" in r.stdout
    assert path.read_bytes() == once
    r = install("claude", "--uninstall", cwd=project)
    assert r.returncode == 0 and "removed 7" in r.stdout
    assert json.loads(path.read_text()) == CLAUDE_SETTINGS
    assert path.read_bytes() == original  # byte for byte
    r = install("claude", "--uninstall", cwd=project)
    assert r.returncode == 0 and "no ctxd hooks" in r.stdout


def test_install_updates_a_stale_ctxd_command_in_place(project):
    path = project / ".claude" / "settings.local.json"
    path.parent.mkdir()
    old = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo before"}]},
                              {"hooks": [{"type": "command", "command": "/old/venv/bin/ctxd chat hook claude",
                                          "timeout": 5}]},
                              {"hooks": [{"type": "command", "command": "echo after"}]}]}}
    path.write_text(json.dumps(old))
    assert install("claude", cwd=project).returncode == 0
    stop = json.loads(path.read_text())["hooks"]["Stop"]
    assert [g["hooks"][0]["command"] for g in stop][0::2] == ["echo before", "echo after"]
    assert stop[1]["hooks"][0]["command"].endswith("chat hook claude") and "/old/venv" not in json.dumps(stop)
    text = path.read_text().replace(stop[1]["hooks"][0]["command"], "/old/venv/bin/ctxd chat hook claude")
    assert text.replace('"timeout": 30', '"timeout": 5').startswith(json.dumps(old)[:-2])  # the rest as it was


def test_install_new_settings_file_is_0644_and_existing_mode_is_kept(project):
    assert install("claude", cwd=project).returncode == 0
    path = project / ".claude" / "settings.local.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    path.chmod(0o600)
    r = install("claude", "--uninstall", cwd=project)
    assert r.returncode == 0 and "removed the file" in r.stdout
    assert not path.exists() and not (project / ".claude").exists()  # ctxd made both; nothing else was there
    path.parent.mkdir()
    path.write_text('{"theme": "dark"}\n')
    path.chmod(0o600)
    assert install("claude", cwd=project).returncode == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert install("claude", "--uninstall", cwd=project).returncode == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == '{"theme": "dark"}\n'


def test_install_writes_through_a_symlinked_settings_file(project, isolated_paths):
    real = isolated_paths / "dotfiles" / "claude.json"
    real.parent.mkdir()
    real.write_text('{"theme": "dark"}')
    link = isolated_paths / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    assert install("claude", "--user", cwd=project).returncode == 0
    assert link.is_symlink()
    s = json.loads(real.read_text())
    assert s["theme"] == "dark" and "SessionStart" in s["hooks"]


@pytest.mark.parametrize("bad", ['{"hooks": {,}}', "[1, 2]", '{"hooks": []}', '{"hooks": {"Stop": {}}}',
                                 '// comment\n{"hooks": {}}'])
@pytest.mark.parametrize("uninstall", [False, True])
def test_invalid_settings_are_refused_untouched(bad, uninstall, project):
    path = project / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_text(bad)
    before = path.stat().st_mtime_ns
    r = install("claude", *(["--uninstall"] if uninstall else []), cwd=project)
    if uninstall and bad in ('{"hooks": []}', '{"hooks": {"Stop": {}}}'):
        assert r.returncode == 0  # nothing of ctxd's there to remove
    else:
        assert r.returncode == 3, r.stdout
        [line] = r.stderr.splitlines()
        assert line.startswith("ctxd: ") and str(path) in line
    assert path.read_text() == bad and path.stat().st_mtime_ns == before


def test_install_gemini_user_uses_milliseconds(project, isolated_paths):
    path = isolated_paths / ".gemini" / "settings.json"
    path.parent.mkdir()
    theirs = {"theme": "GitHub", "hooksConfig": {"enabled": True},
              "mcpServers": {"docs": {"command": "docs-mcp", "args": [], "timeout": 30000}},
              "hooks": {"BeforeTool": [{"matcher": "run_shell_command",
                                        "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5000}]}]}}
    path.write_text(json.dumps(theirs, indent=2))
    r = install("gemini", "--user", cwd=project)
    assert r.returncode == 0, r.stderr
    s = json.loads(path.read_text())
    assert without_ctxd(s) == theirs
    mine = ctxd_groups(s)
    assert set(mine) == {"SessionStart", "BeforeAgent", "AfterAgent", "PreCompress", "SessionEnd"}
    for [g] in mine.values():
        assert "matcher" not in g
        [h] = g["hooks"]
        assert h["timeout"] == 30000 and h["command"].endswith(" chat hook gemini") and h["name"] == "ctxd"
    assert not (project / ".gemini").exists()
    assert install("gemini", "--user", "--uninstall", cwd=project).returncode == 0
    assert json.loads(path.read_text()) == theirs


def test_installed_command_runs_the_hook(project):
    add_messages(project, [("user", "remember: deploys go through make release")])
    assert install("claude", cwd=project).returncode == 0
    s = json.loads((project / ".claude" / "settings.local.json").read_text())
    command = ctxd_groups(s)["SessionStart"][0]["hooks"][0]["command"]
    r = subprocess.run(["/bin/sh", "-c", command], input=payload("claude", "session_start.json", project).encode(),
                       capture_output=True, cwd=project, timeout=60)
    assert "deploys go through make release" in context_of(r)


def _lines_kept(original, installed):
    """Every line of *original* is in *installed*, in order and indented as it was (a line may
    gain the comma before ctxd's new entries)."""
    rest = iter(l.rstrip(",\r") for l in installed.split("\n"))
    return all(any(l.rstrip(",\r") == r for r in rest) for l in original.split("\n"))


REAL_LOOKING = {
    "2-space": json.dumps(CLAUDE_SETTINGS, indent=2) + "\n",
    "4-space, no final newline": json.dumps(CLAUDE_SETTINGS, indent=4),
    "tabs": json.dumps(CLAUDE_SETTINGS, indent="\t") + "\n",
    "hand-written": '{\n  "model": "opus",\n  "permissions": {"allow": ["Bash(npm test:*)"], "deny": []},\n'
                    '  "statusLine": { "type": "command", "command": "~/.claude/statusline.sh" }\n}\n',
    "crlf": json.dumps(CLAUDE_SETTINGS, indent=2).replace("\n", "\r\n") + "\r\n",
}


@pytest.mark.parametrize("layout", sorted(REAL_LOOKING))
@pytest.mark.parametrize("scope,name", [("--project", "settings.local.json"), ("--shared", "settings.json")])
def test_install_and_uninstall_touch_only_ctxds_entries(layout, scope, name, project):
    path = project / ".claude" / name
    path.parent.mkdir()
    original = REAL_LOOKING[layout]
    path.write_bytes(original.encode())
    r = install("claude", scope, cwd=project)
    assert r.returncode == 0, r.stderr
    installed = path.read_bytes().decode()
    assert _lines_kept(original, installed), installed
    theirs = without_ctxd(json.loads(installed))
    if "hooks" not in json.loads(original) and theirs.get("hooks") == {}:
        del theirs["hooks"]
    assert theirs == json.loads(original)
    r = install("claude", scope, "--uninstall", cwd=project)
    assert r.returncode == 0 and "removed 7" in r.stdout, r.stdout + r.stderr
    assert path.read_bytes() == original.encode()


def test_shared_install_writes_a_command_that_works_on_any_machine(project, tmp_path):
    add_messages(project, [("user", "remember: deploys go through make release")])
    r = install("claude", "--shared", cwd=project)
    assert r.returncode == 0, r.stderr
    assert "shared" in r.stdout and not (project / ".claude" / "settings.local.json").exists()
    text = (project / ".claude" / "settings.json").read_text()
    assert str(Path(CTXD).parent) not in text and os.path.expanduser("~") not in text  # no machine's path
    mine = ctxd_groups(json.loads(text))
    assert {g[0]["hooks"][0]["command"] for g in mine.values()} == {PORTABLE.format(tool="claude")}
    command = PORTABLE.format(tool="claude")
    payload_in = payload("claude", "session_start.json", project).encode()
    # a machine with ctxd on PATH
    env = dict(os.environ, PATH=f"{Path(CTXD).parent}:/usr/bin:/bin")
    r = subprocess.run(["/bin/sh", "-c", command], input=payload_in, capture_output=True, cwd=project, env=env,
                       timeout=60)
    assert r.returncode == 0 and "deploys go through make release" in context_of(r)
    # a machine without it: nothing, quietly
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    env = dict(os.environ, PATH=str(bare))
    r = subprocess.run(["/bin/sh", "-c", command], input=payload_in, capture_output=True, cwd=project, env=env,
                       timeout=60)
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    r = subprocess.run(["/bin/sh", "-c", PORTABLE.format(tool="gemini").replace("; fi", "; else echo '{}'; fi")],
                       input=b"{}", capture_output=True, cwd=project, env=env, timeout=60)
    assert (r.returncode, json.loads(r.stdout), r.stderr) == (0, {}, b"")  # Gemini reads stdout as JSON


def test_a_personal_install_says_when_the_shared_file_runs_ctxd_too(project):
    assert install("claude", "--shared", cwd=project).returncode == 0
    r = install("claude", cwd=project)
    assert r.returncode == 0
    [note] = [l for l in r.stdout.splitlines() if "twice" in l]
    assert str(project / ".claude" / "settings.json") in note and "--shared --uninstall" in note


def test_personal_settings_file_is_kept_out_of_git(project):
    shutil.rmtree(project / ".git")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    assert install("claude", cwd=project).returncode == 0
    status = subprocess.run(["git", "-C", str(project), "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True).stdout
    assert "settings.local.json" not in status
    assert install("claude", "--shared", cwd=project).returncode == 0
    status = subprocess.run(["git", "-C", str(project), "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True).stdout
    assert ".claude/settings.json" in status  # the shared one is the team's to commit


def test_gemini_project_install_says_folder_trust_and_is_removed_whole(project):
    r = install("gemini", cwd=project)
    assert r.returncode == 0, r.stderr
    [note] = [l for l in r.stdout.splitlines() if "trust" in l]
    assert "Gemini CLI" in note and str(project) in note
    path = project / ".gemini" / "settings.json"
    mine = ctxd_groups(json.loads(path.read_text()))
    assert set(mine) == {"SessionStart", "BeforeAgent", "AfterAgent", "PreCompress", "SessionEnd"}
    assert {g[0]["hooks"][0]["command"] for g in mine.values()} == {
        PORTABLE.format(tool="gemini").replace("; fi", "; else echo '{}'; fi")}
    r = install("gemini", "--uninstall", cwd=project)
    assert r.returncode == 0 and "removed the file" in r.stdout
    assert not (project / ".gemini").exists()


def test_a_created_file_someone_else_wrote_into_is_kept(project):
    assert install("gemini", cwd=project).returncode == 0
    path = project / ".gemini" / "settings.json"
    data = json.loads(path.read_text())
    data["ui"] = {"theme": "GitHub"}
    path.write_text(json.dumps(data, indent=2) + "\n")
    r = install("gemini", "--uninstall", cwd=project)
    assert r.returncode == 0 and "removed the file" not in r.stdout
    assert path.read_text() == '{\n  "ui": {\n    "theme": "GitHub"\n  }\n}\n'


GEMINI_WITH_COMMENTS = """// Project settings for Gemini CLI
{
  "general": {
    "vimMode": true // my editor habits
  },
  /* tools ctxd must not touch */
  "hooks": {
    "BeforeTool": [
      {"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5000}]}
    ]
  }
}
"""


def test_gemini_settings_with_comments_keep_them(project):
    path = project / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text(GEMINI_WITH_COMMENTS)
    r = install("gemini", cwd=project)
    assert r.returncode == 0, r.stderr
    installed = path.read_text()
    assert _lines_kept(GEMINI_WITH_COMMENTS, installed)
    assert "// my editor habits" in installed and "/* tools ctxd must not touch */" in installed
    assert install("gemini", cwd=project).stdout.startswith("ctxd: Gemini CLI hooks already installed")
    r = install("gemini", "--uninstall", cwd=project)
    assert r.returncode == 0 and "removed 5" in r.stdout
    assert path.read_text() == GEMINI_WITH_COMMENTS


@pytest.mark.parametrize("bad", ['{"a": 1,}\n', '// only a comment\n', '{"hooks": {} /* open\n'])
def test_gemini_settings_that_are_not_json_with_comments_are_refused_untouched(bad, project):
    path = project / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text(bad)
    r = install("gemini", cwd=project)
    assert r.returncode == 3
    [line] = r.stderr.splitlines()
    assert line.startswith(f"ctxd: {path}") and "not valid JSON" in line and "nothing was changed" in line
    assert path.read_text() == bad


CODEX_CONFIG = '''# Codex configuration, kept by hand
model = "gpt-5-codex"   # the default model
approval_policy = "on-request"

# Servers ctxd must not touch
[mcp_servers.docs]
command = "docs-mcp"
args = ["--stdio"]  # a trailing comment

[features]
codex_hooks = true
'''


def test_install_codex_project_writes_hooks_json_only(project, isolated_paths):
    r = install("codex", cwd=project)
    assert r.returncode == 0, r.stderr
    s = json.loads((project / ".codex" / "hooks.json").read_text())
    mine = ctxd_groups(s)
    assert set(mine) == {"SessionStart", "UserPromptSubmit", "Stop"}
    for [g] in mine.values():  # a project's .codex is shared: the command names no machine's path
        assert g["hooks"][0]["timeout"] == 30 and g["hooks"][0]["command"] == PORTABLE.format(tool="codex")
    assert not (isolated_paths / ".codex" / "config.toml").exists()
    # Codex 0.171: the feature is `hooks`, on by default (never recommend the deprecated codex_hooks);
    # the folder and each hook must be trusted before Codex runs them: say so, with the step
    assert "codex_hooks" not in r.stdout and "/hooks" in r.stdout and "trust the folder" in r.stdout


def test_install_codex_user_adds_notify_keeping_comments(project, isolated_paths):
    cfg = isolated_paths / ".codex" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text(CODEX_CONFIG)
    r = install("codex", "--user", cwd=project)
    assert r.returncode == 0, r.stderr
    assert "`codex_hooks` under [features]" in r.stdout and "deprecated" in r.stdout  # the old name: say so
    text = cfg.read_text()
    doc = tomllib.loads(text)
    assert doc["notify"][1:] == ["chat", "hook", "codex-notify"] and os.path.isabs(doc["notify"][0])
    del doc["notify"]
    assert doc == tomllib.loads(CODEX_CONFIG)
    lines = text.splitlines()
    rest = iter(lines)
    assert all(any(l == r for r in rest) for l in CODEX_CONFIG.splitlines())  # every line kept, in order
    n = next(i for i, l in enumerate(lines) if l.startswith("notify = "))
    assert n < lines.index("# Servers ctxd must not touch") and n > lines.index('approval_policy = "on-request"')
    assert json.loads((isolated_paths / ".codex" / "hooks.json").read_text())["hooks"]["Stop"]
    r = install("codex", "--user", cwd=project)
    assert r.returncode == 0 and cfg.read_text() == text  # idempotent
    r = install("codex", "--user", "--uninstall", cwd=project)
    assert r.returncode == 0, r.stderr
    assert cfg.read_text() == CODEX_CONFIG  # byte for byte
    assert not (isolated_paths / ".codex" / "hooks.json").exists()  # ctxd created it: gone with its entries


def test_codex_user_install_in_a_fresh_home_is_undone_whole(project, isolated_paths):
    home = isolated_paths / ".codex"
    assert not home.exists()
    r = install("codex", "--user", cwd=project)
    assert r.returncode == 0, r.stderr
    assert (home / "hooks.json").exists() and "codex-notify" in (home / "config.toml").read_text()
    r = install("codex", "--user", "--uninstall", cwd=project)
    assert r.returncode == 0, r.stderr
    assert not home.exists(), sorted(p.name for p in home.iterdir())  # ctxd made it all: nothing left


@pytest.mark.parametrize("original", ["", 'model = "o3"\n', "[features]\ncodex_hooks = true\n",
                                      'model = "o3"\nnotify_extra = [\n  ["a"],\n]\n[profiles.x]\nmodel = "y"\n'])
def test_codex_notify_insertion_round_trips(original, project, isolated_paths):
    cfg = isolated_paths / ".codex" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text(original)
    assert install("codex", "--user", cwd=project).returncode == 0
    doc = tomllib.loads(cfg.read_text())
    assert doc.pop("notify")[-1] == "codex-notify" and doc == tomllib.loads(original)
    assert install("codex", "--user", "--uninstall", cwd=project).returncode == 0
    assert cfg.read_text() == original


def test_codex_foreign_notify_is_left_alone(project, isolated_paths):
    cfg = isolated_paths / ".codex" / "config.toml"
    cfg.parent.mkdir()
    original = 'notify = ["terminal-notifier", "-title", "Codex"]  # mine\n' + CODEX_CONFIG
    cfg.write_text(original)
    r = install("codex", "--user", cwd=project)
    assert r.returncode == 0, r.stderr
    assert cfg.read_text() == original
    [line] = [l for l in r.stdout.splitlines() if "notify" in l]
    assert "not ctxd's" in line and "terminal-notifier" in line
    assert ctxd_groups(json.loads((isolated_paths / ".codex" / "hooks.json").read_text()))
    r = install("codex", "--user", "--uninstall", cwd=project)
    assert r.returncode == 0 and cfg.read_text() == original


def test_codex_invalid_config_toml_refused_before_anything_is_written(project, isolated_paths):
    cfg = isolated_paths / ".codex" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text("model = \n")
    r = install("codex", "--user", cwd=project)
    assert r.returncode == 3
    [line] = r.stderr.splitlines()
    assert line.startswith("ctxd: ") and "config.toml" in line
    assert cfg.read_text() == "model = \n"
    assert not (isolated_paths / ".codex" / "hooks.json").exists()


# What a config.toml that has lived a while looks like: comments everywhere, dotted keys,
# inline tables, arrays of tables, multi-line strings and arrays, a table defined out of order.
LIVED_IN_CONFIG = '''# ~/.codex/config.toml -- see https://github.com/openai/codex/blob/main/docs/config.md
model = "gpt-5-codex"            # what I use most
model_reasoning_effort = "high"
shell_environment_policy.inherit = "core"   # a dotted key at the top level

# Profiles: `codex --profile fast`
[profiles.fast]
model = "gpt-5-mini"
approval_policy = "never"

[mcp_servers.docs]
command = "npx"
args = [
  "-y",               # no prompt
  "@acme/docs-mcp",
]
env = { DOCS_TOKEN = "not-a-secret", REGION = "eu" }   # inline table

[[tui.notifications]]
kind = "agent-turn-complete"

[history]
persistence = "save-all"
banner = """
Hello from
[not a table]
"""

[profiles.slow]   # out of order: profiles again after other tables
model = "o3"
'''


def test_codex_lived_in_config_round_trips_byte_for_byte(project, isolated_paths):
    cfg = isolated_paths / ".codex" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text(LIVED_IN_CONFIG)
    os.chmod(cfg, 0o640)
    r = install("codex", "--user", cwd=project)
    assert r.returncode == 0, r.stderr
    text = cfg.read_text()
    doc = tomllib.loads(text)
    assert doc.pop("notify")[1:] == ["chat", "hook", "codex-notify"]
    assert doc == tomllib.loads(LIVED_IN_CONFIG)
    lines = text.splitlines()
    # a paragraph of its own, above the comment that belongs to the first table
    n = next(i for i, l in enumerate(lines) if l.startswith("notify = "))
    assert lines[n - 1] == "" and lines[n + 1] == "" and lines[n + 2] == "# Profiles: `codex --profile fast`"
    assert [l for i, l in enumerate(lines) if i not in (n, n + 1)] == LIVED_IN_CONFIG.splitlines()
    assert stat.S_IMODE(os.stat(cfg).st_mode) == 0o640  # the file's mode is kept
    r = install("codex", "--user", "--uninstall", cwd=project)
    assert r.returncode == 0, r.stderr
    assert cfg.read_bytes() == LIVED_IN_CONFIG.encode()


def test_codex_notify_keeps_crlf_line_ends(project, isolated_paths):
    cfg = isolated_paths / ".codex" / "config.toml"
    cfg.parent.mkdir()
    original = b'model = "o3"\r\n\r\n[features]\r\ncodex_hooks = true\r\n'
    cfg.write_bytes(original)
    assert install("codex", "--user", cwd=project).returncode == 0
    raw = cfg.read_bytes()
    assert raw.count(b"\n") == raw.count(b"\r\n") and b"codex-notify" in raw
    assert install("codex", "--user", "--uninstall", cwd=project).returncode == 0
    assert cfg.read_bytes() == original


def test_codex_notify_after_a_last_line_without_newline(project, isolated_paths):
    cfg = isolated_paths / ".codex" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text('model = "o3"')
    assert install("codex", "--user", cwd=project).returncode == 0
    assert tomllib.loads(cfg.read_text())["model"] == "o3"
    assert install("codex", "--user", "--uninstall", cwd=project).returncode == 0
    assert cfg.read_text() == 'model = "o3"\n'  # the line break ctxd needed stays: the only difference


def test_codex_old_ctxd_notify_is_updated_in_place(project, isolated_paths):
    cfg = isolated_paths / ".codex" / "config.toml"
    cfg.parent.mkdir()
    original = ('model = "o3"\n'
                'notify = ["/old/venv/bin/ctxd", "chat", "hook", "codex-notify"]   # set by ctxd\n'
                'approval_policy = "never"\n\n[features]\ncodex_hooks = true\n')
    cfg.write_text(original)
    r = install("codex", "--user", cwd=project)
    assert r.returncode == 0, r.stderr
    assert "updated" in r.stdout
    lines = cfg.read_text().splitlines()
    assert lines[0] == 'model = "o3"' and lines[2] == 'approval_policy = "never"'
    assert lines[1].startswith("notify = [") and lines[1].endswith("]   # set by ctxd")
    assert "/old/venv" not in lines[1]
    assert tomllib.loads(cfg.read_text())["notify"][1:] == ["chat", "hook", "codex-notify"]
    assert install("codex", "--user", "--uninstall", cwd=project).returncode == 0
    assert cfg.read_text() == 'model = "o3"\napproval_policy = "never"\n\n[features]\ncodex_hooks = true\n'


def test_codex_notify_installed_then_edited_by_the_user_still_uninstalls(project, isolated_paths):
    cfg = isolated_paths / ".codex" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text(CODEX_CONFIG)
    assert install("codex", "--user", cwd=project).returncode == 0
    edited = cfg.read_text().replace('model = "gpt-5-codex"', 'model = "o4"') + '\n[history]\npersistence = "none"\n'
    cfg.write_text(edited)
    assert install("codex", "--user", "--uninstall", cwd=project).returncode == 0
    assert cfg.read_text() == (CODEX_CONFIG.replace('model = "gpt-5-codex"', 'model = "o4"')
                               + '\n[history]\npersistence = "none"\n')


def test_codex_invalid_config_toml_refused_by_uninstall_untouched(project, isolated_paths):
    cfg = isolated_paths / ".codex" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text(CODEX_CONFIG)
    assert install("codex", "--user", cwd=project).returncode == 0
    broken = cfg.read_text() + "[features\n"
    cfg.write_text(broken)
    r = install("codex", "--user", "--uninstall", cwd=project)
    assert r.returncode == 3
    [line] = r.stderr.splitlines()
    assert line.startswith("ctxd: ") and "config.toml" in line and "not valid TOML" in line
    assert cfg.read_text() == broken


def test_codex_home_is_honoured(project, tmp_path, monkeypatch):
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    assert install("codex", "--user", cwd=project).returncode == 0
    assert (home / "hooks.json").exists() and "codex-notify" in (home / "config.toml").read_text()


# -- the pieces, in process -------------------------------------------------------------------

TOP_LINES = ['model = "o3"', "# a comment", "", "x.y = 1   # dotted", "x.z = 2", 'inline = { a = 1, "b c" = [2] }',
             'multi = [\n  "a",  # one\n  "b",\n]', 'text = """\n[not a header]\n"""', "   # indented comment"]
TABLE_LINES = ["[t{n}]", "[[aot{n}]]", "[deep.t{n}]   # header comment", 'k{n} = "v"', "# about the next table", ""]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(TOP_LINES), max_size=6), st.lists(st.sampled_from(TABLE_LINES), max_size=8),
       st.booleans())
def test_notify_add_then_remove_gives_the_text_back(top, rest, final_newline):
    from ctxd.integrations.notify_toml import add_notify, remove_notify

    lines = top + [line.format(n=i) for i, line in enumerate(rest)]
    if any(line.startswith("[") for line in lines):
        # keys after the first header belong to a table: only a header may start that part
        first = next(i for i, line in enumerate(lines) if line.startswith("["))
        lines = [line for i, line in enumerate(lines) if i < first or not line.startswith("k")]
    text = "\n".join(lines) + ("\n" if final_newline and lines else "")
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return  # only valid files are edited
    words = ["/opt/my tools/ctxd", "chat", "hook", "codex-notify"]
    new = add_notify(text, words)
    assert new is not None, text
    after = tomllib.loads(new)
    assert after.pop("notify") == words and after == before
    restored = remove_notify(new)
    # the one difference allowed: the line break a last line without one needs before notify is appended
    assert restored == text or (restored == text + "\n" and new.splitlines()[-1].startswith("notify = ")), text
    assert add_notify(new, words) == new  # installing again changes nothing



def test_merge_and_remove_leave_foreign_shapes_alone():
    from ctxd.integrations import install as inst

    s = {"hooks": {"enabled": True, "Stop": [{"hooks": [{"type": "command", "command": "x"}]}, "odd"]}}
    groups = {"Stop": inst._group("Stop", None, "ctxd chat hook claude", 30, {})}
    assert inst.merge_hooks(s, groups)
    assert not inst.merge_hooks(s, groups)
    assert s["hooks"]["Stop"][:2] == [{"hooks": [{"type": "command", "command": "x"}]}, "odd"]
    assert inst.remove_hooks(s) == 1
    assert s == {"hooks": {"enabled": True, "Stop": [{"hooks": [{"type": "command", "command": "x"}]}, "odd"]}}


def test_a_group_shared_with_other_hooks_keeps_them():
    from ctxd.integrations import install as inst

    s = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "ctxd chat hook claude"},
                                       {"type": "command", "command": "say done"}]}]}}
    assert inst.remove_hooks(s) == 1
    assert s == {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}


def test_hook_command_quotes_the_program():
    from ctxd.integrations.install import hook_command

    assert hook_command("claude", ["/opt/my tools/ctxd"]) == "'/opt/my tools/ctxd' chat hook claude"


def test_hook_path_does_not_import_click(project):
    code = ("import sys, io; sys.argv = ['ctxd', 'chat', 'hook', 'codex-notify', '{}'];"
            "from ctxd.fastpath import console_entry\n"
            "try:\n    console_entry.main()\nexcept SystemExit:\n    pass\n"
            "print('click' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip().splitlines()[-1] == "False", r.stderr


def test_gemini_after_agent_turn_is_replaced_by_the_imported_replies(project, tmp_path):
    """Real files: Gemini's AfterAgent prompt_response is the whole turn's replies joined with
    newlines; once the session file is imported, the live record goes (one copy of each reply)."""
    real = Path(__file__).parent / "contracts" / "real"
    session = tmp_path / "session.jsonl"
    session.write_text((real / "gemini" / "session-2026-04-01T11-11-5cdd2021.jsonl").read_text())
    for name in ("before_agent.json", "after_agent.json", "session_end.json"):
        d = json.loads((real / "hooks" / "gemini" / name).read_text())
        d.update(cwd=str(project), transcript_path=str(session))
        r = hook("gemini", json.dumps(d))
        assert r.returncode == 0 and json.loads(r.stdout) == {}, r.stderr
    ms = messages(project)
    assert not any(m["dedup"].startswith("gemini-hook:") for m in ms)
    contents = [m["content"] for m in ms]
    assert contents.count('I will create two "Hello World" files, one in text format and one in Python.') == 1
    assert contents.count("create 2 hello world files") == 1
