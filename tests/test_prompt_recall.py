"""Per-prompt recall: UserPromptSubmit (Claude, Codex) and BeforeAgent (Gemini) return the earlier
turns relevant to the prompt, from the real hook payload shapes in ../shared/data/real-transcripts/hooks."""

import json
import os
import shutil
from pathlib import Path

import pytest

from ctxd import paths
from ctxd.memory.core import ProjectMemory
from ctxdtest import ctxd

HOOKS = Path(__file__).resolve().parents[2] / "shared" / "data" / "real-transcripts" / "hooks"
CTXD = shutil.which("ctxd")

OLD = [("prompt", "When is the database cutover scheduled?"),
       ("reply", "The cutover is scheduled for 2026-04-12 at 14:00 UTC, after the freeze."),
       ("prompt", "Use uv for every Python install, never pip."),
       ("reply", "Noted: uv only.")]


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    with ProjectMemory.at(str(root)) as mem:
        mem.record([dict(kind=k, content=c, session="earlier", source="claude", ts=1_700_000_000 + i,
                         dedup=f"old{i}") for i, (k, c) in enumerate(OLD)])
    return root


def real(tool, name, project, **changes):
    d = json.loads((HOOKS / tool / name).read_text())
    d.update(cwd=str(project), **changes)
    return d


def run(tool, payload):
    """The hook of *tool* on *payload*, as the AI tool runs it (bytes out)."""
    return ctxd("chat", "hook", tool, input=json.dumps(payload).encode(), text=False, script=CTXD is not None,
                check=0)


def injected(p, event="UserPromptSubmit"):
    if not p.stdout.strip():
        return None
    out = json.loads(p.stdout)
    if out == {}:
        return None
    assert set(out) == {"hookSpecificOutput"}
    assert out["hookSpecificOutput"]["hookEventName"] == event
    return out["hookSpecificOutput"]["additionalContext"]


def stored_prompts(project):
    with ProjectMemory.at(str(project)) as mem:
        return [m.content for m in mem.iter_all() if m.kind == "prompt"]


@pytest.mark.parametrize("tool", ["claude", "codex"])
def test_a_prompt_comes_with_what_is_relevant_to_it(tool, project):
    name = "user_prompt_submit.json"
    payload = real("claude", name, project, prompt="when is the database cutover again?",
                   session_id="s-new", hook_event_name="UserPromptSubmit")
    text = injected(run(tool, payload))
    assert text and "2026-04-12" in text and "When is the database cutover scheduled?" in text
    assert "uv" not in text  # not relevant: not injected
    assert len(text) <= 10_000
    assert "when is the database cutover again?" in stored_prompts(project)  # recorded as typed


def test_gemini_before_agent_gets_it_as_json_only(project):
    payload = real("gemini", "before_agent.json", project, prompt="should I install packages with pip?")
    p = run("gemini", payload)
    text = injected(p, "BeforeAgent")
    assert text and "never pip" in text


def test_nothing_for_a_prompt_with_no_relevant_history(project):
    payload = real("claude", "user_prompt_submit.json", project, prompt="mix phx.server doesnt seem to start")
    assert injected(run("claude", payload)) is None


def test_never_what_the_session_already_holds(project):
    base = real("claude", "user_prompt_submit.json", project, session_id="s2")
    first = injected(run("claude", dict(base, prompt="database cutover date?")))
    assert "2026-04-12" in first
    again = injected(run("claude", dict(base, prompt="the database cutover date, once more?")))
    assert again is None or "2026-04-12" not in again  # given once per session
    # the session's own turns are never recalled to it, nor the prompt itself
    third = injected(run("claude", dict(base, prompt="database cutover date?")))
    assert third is None or "database cutover date?" not in third


def test_session_start_context_is_not_given_again(project):
    start = real("claude", "session_start.json", project, session_id="s3")
    p = run("claude", start)
    ctx = json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "2026-04-12" in ctx
    text = injected(run("claude", real("claude", "user_prompt_submit.json", project, session_id="s3",
                                        prompt="when is the database cutover?")))
    assert text is None or "2026-04-12" not in text


def test_it_gives_up_rather_than_take_long(project):
    with ProjectMemory.at(str(project)) as mem:
        assert mem.prompt_context("s4", "database cutover", time_limit=0.0) == ""
    assert "per-prompt recall for session s4: nothing injected (gave up after 0 ms)" in \
        Path(paths.log_file()).read_text()


def test_a_corrupt_store_injects_nothing_and_the_cli_goes_on(project):
    with ProjectMemory.at(str(project)) as mem:
        store = mem.paths.store
    with open(store, "r+b") as f:
        f.write(b"not sqlite" * 100)
    p = run("claude", real("claude", "user_prompt_submit.json", project, prompt="database cutover?"))
    assert p.stdout == b"" and len(p.stderr.decode().splitlines()) <= 1
    assert os.path.getsize(store) > 0


@pytest.mark.parametrize("prompt", ['"', "NEAR(", "*", "-", "content:", "", "😀", "x" * 50_000])
def test_any_prompt_text(prompt, project):
    p = run("claude", real("claude", "user_prompt_submit.json", project, prompt=prompt))
    text = injected(p)
    assert text is None or len(text) <= 10_000


def test_gemini_prompt_is_stored_without_ctxd_own_injection(project):
    """Headless Gemini puts the SessionStart context in front of the prompt as <hook_context>: the
    stored prompt is what was typed, so it does not grow session after session."""
    start = real("gemini", "session_start.json", project, session_id="g1")
    ctx = json.loads(run("gemini", start).stdout)["hookSpecificOutput"]["additionalContext"]
    typed = "create 2 hello world files"
    for session in ("g1", "g2", "g3"):
        wrapped = f"<hook_context>{ctx}</hook_context>\n\n{typed}"
        run("gemini", real("gemini", "before_agent.json", project, session_id=session, prompt=wrapped))
    prompts = stored_prompts(project)
    assert prompts.count(typed) == 3 and not [p for p in prompts if "hook_context" in p]
