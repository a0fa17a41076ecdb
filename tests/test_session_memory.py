"""The session memory built from typed events (ctxd.memory.session), on the real transcripts in
tests/contracts/real/ (README there). Expected values are read from the raw JSON here, not
through ctxd's importers."""

import json
import os
import re
import subprocess
import sys

import pytest

from ctxd.integrations import importers as im
from ctxd.memory import engine, facts, items, render, session, tokens
from ctxd.memory.store import Store

REAL = os.path.join(os.path.dirname(__file__), "contracts", "real")
CLAUDE = ["claude/short.jsonl", "claude/tool_heavy.jsonl", "claude/subagent.jsonl", "claude/daaain/edge_cases.jsonl",
          "claude/daaain/representative_messages.jsonl", "claude/daaain/session_b.jsonl",
          "claude/daaain/todowrite_examples.jsonl"]
CODEX = sorted("codex/" + f for f in os.listdir(os.path.join(REAL, "codex")))

# what no rendered surface may show
NOISE = re.compile(r"^\s*(?:[-*]\s+)?(?:\{\s*\"|\[\s*\{\s*\")|\"\w+\":\s*[\[{\"]|\\[nt\"]|\x1b\[|</?output-file>|"
                   r"Output is being written to:|Read the output file|\[tool_(?:use|call|result) |^\s*\d+→|"
                   r"</?(?:local-command-stdout|command-name|system-reminder|turn_aborted|user_shell_command)>|"
                   r"Todos have been modified successfully|The user doesn't want to proceed")


def raw(rel):
    with open(os.path.join(REAL, rel), encoding="utf-8") as f:
        out = []
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out


@pytest.fixture
def store(tmp_path):
    s = Store(str(tmp_path / "ctx"))
    yield s
    s.close()


def imported(store, *rels):
    for rel in rels:
        im.import_file(store, os.path.join(REAL, rel))
    return store


# -- on the real transcripts --------------------------------------------------------------

def test_todos_are_the_last_todowrite_list_with_statuses(store):
    rel = "claude/daaain/todowrite_examples.jsonl"
    last = [c["input"]["todos"] for d in raw(rel) if d.get("type") == "assistant"
            for c in d["message"]["content"] if isinstance(c, dict) and c.get("name") == "TodoWrite"][-1]
    mem = session.session_memory(imported(store, rel))
    assert mem.todos == [(t["content"], t["status"]) for t in last]
    assert mem.in_progress == next(t["content"] for t in last if t["status"] == "in_progress")
    assert mem.next_step == next(t["content"] for t in last if t["status"] == "pending")
    secs = session.sections(mem)
    assert f"[~] {mem.in_progress} (in progress)" in secs["Pending tasks"]
    assert secs["Next step"] == [mem.next_step]


def test_requests_are_typed_prompts_newest_first(store):
    rel = "claude/tool_heavy.jsonl"
    typed = [d["message"]["content"] for d in raw(rel) if d.get("type") == "user"
             and isinstance(d["message"].get("content"), str) and not d.get("isMeta")
             and not d["message"]["content"].startswith(("<", "["))]
    mem = session.session_memory(imported(store, rel))
    assert [t for _i, t in mem.requests] == [session.clean(t, session.MAX_REQUEST) for t in reversed(typed)]
    assert mem.initial_request == typed[0] and mem.current == session.clean(typed[-1], session.MAX_REQUEST)


def test_codex_requests_follow_the_user_message_events(store):
    rel = CODEX[-1]
    stamps = [re.search(r"len=\d+ sha=\w+", d["payload"]["message"]).group(0) for d in raw(rel)
              if d.get("type") == "event_msg" and d["payload"].get("type") == "user_message"]
    mem = session.session_memory(imported(store, rel))
    got = [re.search(r"len=\d+ sha=\w+", t).group(0) for _i, t in mem.requests[:5]]
    assert got == list(dict.fromkeys(reversed(stamps)))[:5]


def test_edits_reads_and_commands_from_the_calls(store):
    rel = "claude/daaain/representative_messages.jsonl"
    uses = [c for d in raw(rel) if d.get("type") == "assistant" for c in d["message"]["content"]
            if isinstance(c, dict) and c.get("type") == "tool_use"]
    edited = [c["input"]["file_path"] for c in uses if c["name"] in ("Edit", "Write", "MultiEdit")]
    bash = [c["input"]["command"] for c in uses if c["name"] == "Bash"]
    mem = session.session_memory(imported(store, rel), "/tmp")
    assert mem.files == [(os.path.relpath(p, "/tmp"), edited.count(p)) for p in dict.fromkeys(edited)]
    assert [c.command for c in mem.commands] == bash and all(c.ok for c in mem.commands)
    assert session.command_line(mem.commands[0]) == f"`{bash[0]}`: ok"


def test_a_call_the_user_stopped_is_not_an_error(store):
    mem = session.session_memory(imported(store, "claude/short.jsonl"))
    assert mem.errors == []
    assert [session.command_line(c) for c in mem.commands] == ["`mix phx.server 2>&1 | head -80`: stopped by the user"]


def test_a_failed_call_is_an_error_until_it_succeeds(store):
    mem = session.session_memory(imported(store, "claude/daaain/edge_cases.jsonl"))
    failing = [(c["tool_use_id"], c["content"]) for d in raw("claude/daaain/edge_cases.jsonl") if isinstance(d, dict) and d.get("type") == "user"
               and isinstance(d.get("message"), dict) and isinstance(d["message"].get("content"), list)
               for c in d["message"]["content"] if isinstance(c, dict) and c.get("is_error")]
    assert len(mem.errors) == len(failing) == 1
    failed, fix = mem.errors[0]
    assert failed.error == session.clean(failing[0][1].splitlines()[0], 160) and fix is None
    assert "- not fixed yet" not in session.sections(mem)["Errors and fixes"][0]
    assert session.sections(mem)["Errors and fixes"][0].endswith("— not fixed yet")


@pytest.mark.parametrize("rel", CLAUDE + CODEX)
def test_no_surface_shows_tool_plumbing(store, rel, tmp_path):
    imported(store, rel)
    ctx = engine.assemble(store, budget=4000)
    surfaces = {"markdown": engine.to_markdown(ctx), "text": engine.to_text(ctx),
                "context.md": render.render(store, str(tmp_path))}
    for name, text in surfaces.items():
        bad = [l for l in text.splitlines() if NOISE.search(l)]
        assert not bad, (name, bad[:3])
    # and what matters is there: every edited file, the newest request
    mem = ctx.memory
    for path, _n in mem.files[:10]:
        assert path in surfaces["markdown"] and path in surfaces["context.md"]
    if mem.requests:
        assert mem.requests[0][1] in surfaces["markdown"]


# -- budgets are hard caps --------------------------------------------------------------------

def ctxd(*args, cwd, stdin=None):
    return subprocess.run([sys.executable, "-m", "ctxd", *args], cwd=cwd, env=dict(os.environ, PWD=str(cwd)),
                          input=stdin, capture_output=True, text=True, timeout=300)


@pytest.fixture
def hex_project(tmp_path):
    """A project holding a redacted Codex rollout: text full of hex digests the estimator underrates."""
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    p = ctxd("chat", "import", os.path.join(REAL, CODEX[-1]), cwd=root)
    assert p.returncode == 0, p.stderr
    return root


@pytest.mark.parametrize("budget", [300, 1000, 4000])
def test_context_never_exceeds_its_budget_on_hex_heavy_text(hex_project, budget):
    p = ctxd("context", "--budget", str(budget), cwd=hex_project)
    assert p.returncode == 0, p.stderr
    assert tokens.count(p.stdout) <= budget
    assert "REDACTED_TEXT" in p.stdout  # not an empty answer


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_every_format_keeps_the_budget(hex_project, fmt):
    for budget in (64, 700):
        p = ctxd("context", "--budget", str(budget), "--format", fmt, "--mode", "hybrid", cwd=hex_project)
        assert p.returncode == 0, p.stderr
        assert tokens.count(p.stdout) <= budget + 1  # + the newline click.echo adds to json


def test_session_start_injection_stays_under_10000_characters(hex_project):
    payload = json.dumps({"session_id": "new", "transcript_path": str(hex_project / "none.jsonl"),
                          "cwd": str(hex_project), "hook_event_name": "SessionStart", "source": "startup"})
    p = ctxd("chat", "hook", "claude", cwd=hex_project, stdin=payload)
    assert p.returncode == 0, p.stderr
    text = json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
    assert 2000 < len(text) <= 10_000
    assert "**User messages**" in text


def test_the_fallback_count_is_never_low_on_real_text():
    if not tokens.exact_available():
        pytest.skip("needs the tokens extra to compare with")
    for rel in CLAUDE + CODEX:
        with open(os.path.join(REAL, rel), encoding="utf-8") as f:
            text = f.read()
        for i in range(0, min(len(text), 200_000), 6000):
            chunk = text[i:i + 6000]
            assert tokens.ceiling(chunk, exact=False) >= tokens.count(chunk), (rel, i)


def test_fit_with_the_fallback_count_keeps_the_cap(store):
    imported(store, CODEX[-1])
    for budget in (400, 1500):
        ctx = engine.assemble(store, budget=budget)
        ctx.exact = False
        text = engine.to_markdown(ctx)
        assert tokens.ceiling(text, exact=False) <= budget
        if tokens.exact_available():
            assert tokens.count(text) <= budget


# -- facts come from what was said --------------------------------------------------------------

def test_greetings_and_filler_are_never_facts(store):
    for role, text in [("user", "How have you been?"), ("assistant", "Great, thanks! How are you doing?"),
                       ("user", "Can't wait."), ("user", "Thanks!"), ("user", "Sounds good, see you soon!"),
                       ("user", "Do not deploy on Fridays.")]:
        store.add(role, text)
    engine.refresh_facts(store)
    assert [r["text"] for r in engine.live_facts(store)] == ["Do not deploy on Fridays."]
    assert facts.is_filler("How have you been?") and not facts.is_filler("Should we add an index?")


def test_facts_never_come_from_tool_calls_results_or_meta(store):
    imported(store, "claude/tool_heavy.jsonl", "claude/subagent.jsonl", "claude/daaain/edge_cases.jsonl")
    engine.refresh_facts(store)
    rows = engine.live_facts(store, 4000)
    assert rows  # the prompts and replies have facts
    kinds = {store.kind_of(r["msg_id"]) for r in rows}
    assert kinds <= {"prompt", "reply", "summary"}, kinds


def test_a_question_is_a_fact_while_it_is_open(store):
    c = dict(session="s", source="claude")
    store.add_many([items.user_record("Should we shard the orders table?", dedup="1", **c),
                    items.record("reply", "No: 40 GB fits one node.", dedup="2", **c),
                    items.user_record("Which region do we deploy to first?", dedup="3", **c)])
    ctx = engine.assemble(store, budget=2000, mode="hybrid")
    questions = [r for r in ctx.facts if r["tag"] == "question"]
    assert [r["text"] for r in questions] == ["Which region do we deploy to first?"]
    assert questions[0]["msg_id"] == 3 and questions[0]["ts"] > 0  # provenance kept
    assert "Open question: Which region do we deploy to first?" in engine.to_markdown(ctx)
    assert "Open question: Should we shard" not in engine.to_markdown(ctx)


# -- parsing outputs and commands ------------------------------------------------------------------

@pytest.mark.parametrize("command, output, counts", [
    ("python -m pytest -q", "F..\n=========== 1 failed, 2 passed in 0.12s ===========", (2, 1)),
    ("pytest", "============================== 5 passed in 0.03s ===============================", (5, 0)),
    ("npx jest", "Tests:       1 failed, 5 passed, 6 total\nTime:        1.2 s", (5, 1)),
    ("npx vitest run", " Test Files  1 passed (1)\n      Tests  3 passed | 1 failed (4)", (3, 1)),
    ("go test ./...", "ok  \texample.com/a\t0.01s\n--- FAIL: TestB (0.00s)\nFAIL\texample.com/b\t0.02s", (1, 2)),
    ("cargo test", "test result: ok. 7 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out", (7, 0)),
    ("ls -la", "total 0", (None, None)),
    ("cat notes.txt", "All 3 passed the review; 1 failed to show up.", (None, None)),  # not a test run
    ("cat .pytest.log", "====== 3 passed, 1 failed in 0.12s ======", (3, 1)),  # a runner's summary line
])
def test_test_counts(command, output, counts):
    assert session.test_counts(command, output) == counts


@pytest.mark.parametrize("command, output, subject", [
    ("git commit -m 'Fix the loader'", None, "Fix the loader"),
    ('git add -A && git commit -am "Bump to 1.2"', None, "Bump to 1.2"),
    ("git commit -m \"$(cat <<'EOF'\nAdd session memory\n\nLonger body.\nEOF\n)\"", None, "Add session memory"),
    ("git commit --amend --no-edit", "[main 1a2b3c4] Keep the real subject\n 1 file changed", "Keep the real subject"),
    ("git status", None, None),
])
def test_commit_subjects(command, output, subject):
    assert session.commit_subject(command, output) == subject


def test_paths_are_relative_to_the_root_and_failed_edits_do_not_count(store):
    c = dict(session="s", source="claude")
    e = {"file_path": "/w/p/src/a.py", "old_string": "x", "new_string": "y"}
    store.add_many([
        items.user_record("Tidy src/a.py", dedup="0", **c),
        items.call_record("Edit", e, call_id="1", dedup="1", **c),
        items.result_record("ok", tool="Edit", call_id="1", dedup="2", **c),
        items.call_record("Edit", e, call_id="2", dedup="3", **c),
        items.result_record("String not found in file", tool="Edit", call_id="2", is_error=True, dedup="4", **c),
        items.call_record("Write", {"file_path": "/w/p/docs/b.md", "content": "z"}, call_id="3", dedup="5", **c),
        items.result_record("ok", tool="Write", call_id="3", dedup="6", **c),
        items.call_record("Read", {"file_path": "/w/p/README.md"}, call_id="4", dedup="7", **c),
        items.result_record("text", tool="Read", call_id="4", dedup="8", **c),
    ])
    mem = session.session_memory(store, "/w/p")
    assert mem.files == [("docs/b.md", 1), ("src/a.py", 1)] or mem.files == [("src/a.py", 1), ("docs/b.md", 1)]
    assert mem.reads == ["README.md"]
    assert [f"{failed.tool}" for failed, _fix in mem.errors] == ["Edit"]
