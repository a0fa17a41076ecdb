"""context.md off the hooks' path: a hook marks it stale, the detached `ctxd chat refresh`
the turn's end starts renders it; SessionStart still injects the current context.

Whole `ctxd chat hook` processes with the contract payloads (tests/contracts/hooks), a real
store in a tmp project; the detached refresh is a real process, waited for by polling the file.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ctxdtest

CONTRACTS = Path(__file__).parent / "contracts" / "hooks"
CTXD = shutil.which("ctxd")
CLAUDE_SID = "3f6a2c1e-8b7d-4e2a-9c1f-5d4b3a2e1f00"
PROMPT = {"claude": "Add a --json flag to the show command", "codex": "Rename foo to bar everywhere",
          "gemini": "Why does the build fail on CI?"}

pytestmark = pytest.mark.skipif(CTXD is None, reason="the ctxd console script is not on PATH")


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


def payload(tool, name, project, transcript=None, **extra):
    text = (CONTRACTS / tool / name).read_text()
    text = text.replace("__CWD__", json.dumps(str(project))[1:-1])
    doc = json.loads(text.replace("__TRANSCRIPT__", json.dumps(str(transcript or ""))[1:-1]))
    doc.update(extra)
    return json.dumps(doc)


def hook(tool, stdin):
    r = ctxdtest.ctxd("chat", "hook", tool, input=stdin.encode(), text=False, script=True, check=0)
    assert b"Traceback" not in r.stderr, r.stderr
    return r


def ctxd(project, *args):
    return ctxdtest.ctxd(*args, cwd=project, script=True, check=0)


def paths(project):
    from ctxd.memory.store.layout import MemoryPaths
    from ctxd.memory.project import locate

    return MemoryPaths(locate(str(project)).context_dir)


def seeded(project):
    """A store holding one note and the context.md a command rendered for it at once."""
    ctxd(project, "chat", "add", "The staging database is pg-staging-7.")
    p = paths(project)
    assert "pg-staging-7" in Path(p.context_file).read_text() and not os.path.exists(p.context_stale)
    return p


def wait_current(p, needle, timeout=90):
    """context.md holds *needle* and is not marked stale (the detached refresh ran)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not os.path.exists(p.context_stale) and needle in Path(p.context_file).read_text():
            return True
        time.sleep(0.05)
    return False


def session_start(tool, project, session):
    r = hook(tool, payload(tool, "session_start.json", project, session_id=session))
    return json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]


def transcript(project, tmp_path):
    dest = tmp_path / "transcript.jsonl"
    dest.write_text((CONTRACTS / "claude" / "transcript.jsonl").read_text()
                    .replace("__CWD__", json.dumps(str(project))[1:-1]))
    return dest


def prompt_payload(tool, project):
    name = "before_agent.json" if tool == "gemini" else "user_prompt_submit.json"
    return payload(tool, name, project, prompt=PROMPT[tool])


@pytest.mark.parametrize("tool", ["claude", "codex", "gemini"])
def test_the_prompt_hook_leaves_context_md_as_it_was_and_marks_it_stale(tool, project):
    p = seeded(project)
    before = Path(p.context_file).read_bytes()
    hook(tool, prompt_payload(tool, project))
    assert Path(p.context_file).read_bytes() == before  # the previous render, whole
    assert os.path.exists(p.context_stale)
    from ctxd.memory.core import ProjectMemory

    with ProjectMemory.at(str(project)) as mem:
        assert PROMPT[tool] in [m.content for m in mem.recent(5)]


@pytest.mark.parametrize("case", ["claude-stop", "claude-stop-before-the-transcript", "claude-session-end",
                                  "codex-stop", "gemini-after-agent"])
def test_the_turn_end_makes_context_md_current_in_the_background(case, project, tmp_path):
    tool = case.split("-")[0]
    p = seeded(project)
    hook(tool, prompt_payload(tool, project))
    if case == "claude-stop":
        hook(tool, payload(tool, "stop.json", project, transcript(project, tmp_path)))
    elif case == "claude-stop-before-the-transcript":  # Claude Code may fire Stop before writing it
        hook(tool, payload(tool, "stop.json", project, tmp_path / "not-yet.jsonl"))
    elif case == "claude-session-end":
        hook(tool, payload(tool, "session_end.json", project, transcript(project, tmp_path)))
    elif case == "codex-stop":
        hook(tool, payload(tool, "stop.json", project, tmp_path / "no-rollout.jsonl"))
    else:
        hook(tool, payload(tool, "after_agent.json", project))
    assert wait_current(p, PROMPT[tool]), Path(p.context_file).read_text()


def test_a_turn_end_hook_does_not_render_but_starts_the_refresh(project, tmp_path, monkeypatch):
    """In process, so the hook's own work is seen apart from the refresh it starts."""
    from ctxd.agents import ai_cli
    from ctxd.integrations import agent_hooks
    from ctxd.memory.context import summarizer

    p = seeded(project)
    started = []
    monkeypatch.setattr(summarizer, "spawn_refresh", lambda project, store=None, now=False: started.append(now))
    before = Path(p.context_file).read_bytes()
    agent_hooks.handle(ai_cli("claude"), json.loads(payload("claude", "stop.json", project, transcript(project, tmp_path))))
    assert Path(p.context_file).read_bytes() == before
    assert os.path.exists(p.context_stale) and started == [True]


def test_refresh_renders_a_stale_context_md_and_keeps_the_session_start_injection(project):
    p = seeded(project)
    hook("claude", prompt_payload("claude", project))
    ctxd(project, "chat", "refresh")
    assert PROMPT["claude"] in Path(p.context_file).read_text() and not os.path.exists(p.context_stale)
    kept = json.loads(Path(p.injection).read_text())
    assert PROMPT["claude"] in kept["text"] and kept["shown"]


def test_a_refresh_asked_for_while_one_runs_is_another_round_not_a_process(project, monkeypatch):
    """A burst of hooks during a long fact extraction must not queue a process each."""
    from ctxd.activation.fileio import locked
    from ctxd.memory.context import summarizer
    from ctxd.memory.project import locate

    p = seeded(project)
    with locked(p.refresh_lock):  # a refresh is running
        r = ctxd(project, "chat", "refresh")
        assert "another refresh is running" in r.stdout and os.path.exists(p.refresh_again)
        os.unlink(p.refresh_again)
        started = []
        monkeypatch.setattr(summarizer.subprocess, "Popen", lambda *a, **k: started.append(a))
        assert summarizer.spawn_refresh(locate(str(project)), now=True)
        assert started == [] and os.path.exists(p.refresh_again)
    assert summarizer.spawn_refresh(locate(str(project)), now=True) and len(started) == 1


def test_a_refresh_asked_again_runs_once_more_and_at_most_refresh_rounds(project, monkeypatch):
    from ctxd.memory.context.summarizer import REFRESH_ROUNDS
    from ctxd.memory.core import ProjectMemory

    p = seeded(project)
    calls = []

    def asked_again_once(self):
        calls.append(1)
        if len(calls) == 1:  # a hook asks while the first round runs
            Path(p.refresh_again).touch()
        return 1, "ok"

    monkeypatch.setattr(ProjectMemory, "_refresh_once", asked_again_once)
    with ProjectMemory.at(str(project)) as mem:
        assert mem.refresh() == (2, "ok")
    assert len(calls) == 2 and not os.path.exists(p.refresh_again)

    def always_asked(self):
        calls.append(1)
        Path(p.refresh_again).touch()
        return 0, "ok"

    calls.clear()
    monkeypatch.setattr(ProjectMemory, "_refresh_once", always_asked)
    with ProjectMemory.at(str(project)) as mem:
        mem.refresh()
    assert len(calls) == REFRESH_ROUNDS  # bounded; the marker left starts the next refresh's round


def _without_time(text):
    return "\n".join(line for line in text.splitlines() if " · updated " not in line)


def test_session_start_injects_what_the_refresh_kept_and_marks_it_injected(project):
    p = seeded(project)
    hook("claude", prompt_payload("claude", project))
    ctxd(project, "chat", "refresh")
    kept = json.loads(Path(p.injection).read_text())
    assert session_start("claude", project, "s-new") == kept["text"]
    from ctxd.memory.project import locate, open_store

    with open_store(locate(str(project)), create=False) as s:
        assert s.injected_ids("s-new") == set(kept["shown"])
    os.unlink(p.injection)  # rendered now, from the store: the same context
    assert _without_time(session_start("claude", project, "s-other")) == _without_time(kept["text"])


@pytest.mark.parametrize("tool", ["claude", "codex", "gemini"])
def test_session_start_right_after_a_prompt_injects_that_prompt(tool, project):
    """The refresh has not run: SessionStart renders from the store, not from what was kept."""
    p = seeded(project)
    ctxd(project, "chat", "refresh")
    assert os.path.exists(p.injection)
    hook(tool, prompt_payload(tool, project))
    if tool == "gemini":
        r = hook(tool, payload(tool, "session_start.json", project))
        text = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    else:
        text = session_start(tool, project, "s-next")
    assert PROMPT[tool] in text and "pg-staging-7" in text


def test_a_render_that_fails_leaves_context_md_stale(project, monkeypatch):
    from ctxd.memory.context import render
    from ctxd.memory.core import ProjectMemory

    p = seeded(project)
    hook("claude", prompt_payload("claude", project))

    def broken(*a, **kw):
        raise OSError("disk gone")

    monkeypatch.setattr(render, "render", broken)
    with ProjectMemory.at(str(project)) as mem, pytest.raises(OSError):
        mem.write_context_file(injection=True)
    assert os.path.exists(p.context_stale)  # the next refresh renders it


def test_the_prompt_hook_imports_no_context_engine(project):
    """Rendering (the engine, facts, session memory: hundreds of regexes) is the refresh's."""
    seeded(project)
    code = ("import sys, io; sys.argv = ['ctxd', 'chat', 'hook', 'claude'];"
            f"sys.stdin = io.TextIOWrapper(io.BytesIO({prompt_payload('claude', project).encode()!r}))\n"
            "from ctxd.fastpath import console_entry\n"
            "try:\n    console_entry.main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('ctxd.memory.context.engine', 'ctxd.memory.context.fact_merge', 'ctxd.memory.context.modes',"
            " 'ctxd.memory.context.summary_cache', 'ctxd.memory.context.render_formats', 'ctxd.memory.context.facts',"
            " 'ctxd.memory.context.session', 'ctxd.memory.context.summarizer', 'subprocess', 'click') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip().splitlines()[-1] == "[]", r.stdout + r.stderr
    from ctxd.memory.core import ProjectMemory

    with ProjectMemory.at(str(project)) as mem:  # the hook did its work
        assert PROMPT["claude"] in [m.content for m in mem.recent(5)]
