"""What the real CLIs wrote in tests/realcli/test_real_clis.py, kept as samples, so the fixes they
showed stay tested where the CLIs are not installed (these tests need only ctxd).

samples/ (written by Codex 0.171.0 and Gemini CLI 0.61.0 against the stub model):
- codex-0.171-exec-then-resume.jsonl: ``codex exec`` then ``codex exec resume --last``, one
  rollout. 0.171 follows a typed prompt with ``event_msg item_completed`` of a ``UserMessage``
  item (no ``user_message`` event any more).
- codex-0.171-hook-payloads.jsonl: the hook payloads of those two runs, in order (SessionStart,
  UserPromptSubmit, Stop per run). Stop carries ``turn_id`` and ``last_assistant_message``, and
  runs before the rollout holds the end of the turn.
- gemini-0.61-session.jsonl: one ``gemini -p`` session; its first ``$set`` messages hold Gemini's
  own ``<session_context>`` setup turn as a user message.
"""

import json
import os
import subprocess

import ctxdtest

SAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "samples")
ROLLOUT = os.path.join(SAMPLES, "codex-0.171-exec-then-resume.jsonl")
PAYLOADS = os.path.join(SAMPLES, "codex-0.171-hook-payloads.jsonl")
GEMINI = os.path.join(SAMPLES, "gemini-0.61-session.jsonl")
PROMPTS = ["Remember: the codename is walrus-77", "and the port is 8123"]


def project(tmp_path, name="proj"):
    root = tmp_path / name
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def ctxd(root, *args, stdin=None):
    return ctxdtest.ctxd(*args, cwd=root, input=stdin, script=True, check=0)


def log(root):
    out = ctxd(root, "chat", "log", "-n", "100000", "--json").stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def talk(rows):
    return [(r["kind"], r["role"], r["content"]) for r in rows if r["kind"] in ("prompt", "reply")]


EXPECTED = [("prompt", "user", PROMPTS[0]), ("reply", "assistant", "OK"),
            ("prompt", "user", PROMPTS[1]), ("reply", "assistant", "OK")]


def test_codex_0171_rollout_imports_its_prompts_as_prompts(tmp_path):
    root = project(tmp_path)
    out = ctxd(root, "chat", "import", ROLLOUT).stdout
    assert ": 4 added," in out, out
    rows = log(root)
    assert talk(rows) == EXPECTED
    # the typed prompts are not also (or instead) stored as Codex's environment context
    assert not [r for r in rows if r["kind"] == "meta" and r["content"] in PROMPTS]
    assert ": 0 added," in ctxd(root, "chat", "import", ROLLOUT).stdout


def _turn_ends(lines):
    """Line indexes of each turn's task_complete event."""
    return [i for i, line in enumerate(lines)
            if json.loads(line).get("type") == "event_msg"
            and json.loads(line)["payload"].get("type") == "task_complete"]


def test_codex_0171_hooks_store_each_turn_once_and_the_rollout_adds_nothing(tmp_path):
    """The hooks replayed as Codex ran them; at each Stop the rollout is what Codex had written
    then (the turn not closed yet). Each prompt and answer is stored once, and importing the
    finished rollout afterwards adds nothing."""
    root = project(tmp_path)
    with open(ROLLOUT) as f:
        lines = f.readlines()
    ends = _turn_ends(lines)
    assert len(ends) == 2
    live = tmp_path / "rollout-live.jsonl"
    with open(PAYLOADS) as f:
        payloads = [json.loads(line) for line in f if line.strip()]
    stops = 0
    for p in payloads:
        p.update(cwd=str(root), transcript_path=str(live))
        if p["hook_event_name"] == "Stop":
            live.write_text("".join(lines[:ends[stops]]))  # the turn is not closed yet
            stops += 1
        ctxd(root, "chat", "hook", "codex", stdin=json.dumps(p))
    assert stops == 2
    rows = log(root)
    assert talk(rows) == EXPECTED
    live.write_text("".join(lines))
    out = ctxd(root, "chat", "import", str(live)).stdout
    assert ": 0 added," in out, out
    assert talk(log(root)) == EXPECTED


def test_gemini_061_session_context_turn_is_not_a_prompt(tmp_path):
    root = project(tmp_path)
    ctxd(root, "chat", "import", GEMINI)
    rows = log(root)
    assert talk(rows) == [("prompt", "user", PROMPTS[0]), ("reply", "assistant", "OK")]
    setup = [r for r in rows if r["content"].startswith("<session_context>")]
    assert setup and all(r["kind"] == "meta" and r["role"] != "user" for r in setup), setup
