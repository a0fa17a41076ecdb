"""The session memory built from typed events (ctxd.memory.context.session), on the real transcripts in
tests/contracts/real/ (README there). Expected values are read from the raw JSON here, not
through ctxd's importers."""

import json
import os
import re
from functools import partial

import pytest

from ctxd.memory.ingest import importing as im
from ctxd.memory.context import engine, fact_merge, facts, render, render_formats, session, session_text, session_tools, summary_cache
from ctxd.memory.store import items
from ctxd.memory.text import tokens
from ctxd.memory.store.db import Store
import ctxdtest

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
    assert [t for _i, t in mem.requests] == [session_text.clean(t, session.MAX_REQUEST) for t in reversed(typed)]
    assert mem.initial_request == typed[0] and mem.current == session_text.clean(typed[-1], session.MAX_REQUEST)


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
    assert failed.error == session_text.clean(failing[0][1].splitlines()[0], 160) and fix is None
    assert "- not fixed yet" not in session.sections(mem)["Errors and fixes"][0]
    assert session.sections(mem)["Errors and fixes"][0].endswith("— not fixed yet")


@pytest.mark.parametrize("rel", CLAUDE + CODEX)
def test_no_surface_shows_tool_plumbing(store, rel, tmp_path):
    imported(store, rel)
    ctx = engine.assemble(store, budget=4000)
    surfaces = {"markdown": render_formats.to_markdown(ctx), "text": render_formats.to_text(ctx),
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

ctxd = partial(ctxdtest.ctxd, timeout=300)  # importing the long rollout is slow on a loaded machine


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
    p = ctxd("chat", "hook", "claude", cwd=hex_project, input=payload)
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
        text = render_formats.to_markdown(ctx)
        assert tokens.ceiling(text, exact=False) <= budget
        if tokens.exact_available():
            assert tokens.count(text) <= budget


# -- facts come from what was said --------------------------------------------------------------

def test_greetings_and_filler_are_never_facts(store):
    for role, text in [("user", "How have you been?"), ("assistant", "Great, thanks! How are you doing?"),
                       ("user", "Can't wait."), ("user", "Thanks!"), ("user", "Sounds good, see you soon!"),
                       ("user", "Do not deploy on Fridays.")]:
        store.add(role, text)
    fact_merge.refresh_facts(store)
    assert [r["text"] for r in fact_merge.live_facts(store)] == ["Do not deploy on Fridays."]
    assert facts.is_filler("How have you been?") and not facts.is_filler("Should we add an index?")


def test_facts_never_come_from_tool_calls_results_or_meta(store):
    imported(store, "claude/tool_heavy.jsonl", "claude/subagent.jsonl", "claude/daaain/edge_cases.jsonl")
    fact_merge.refresh_facts(store)
    rows = fact_merge.live_facts(store, 4000)
    assert rows  # the prompts and replies have facts
    kinds = {store.kind_of(r["msg_id"]) for r in rows if r["kinds"] != "pointer"}
    assert kinds <= {"prompt", "reply", "summary"}, kinds
    # of a tool result, only where its offloaded output went: "Full output (N characters): PATH"
    assert all(r["text"].startswith("Full output (") for r in rows if r["kinds"] == "pointer")


def test_a_question_is_a_fact_while_it_is_open(store):
    c = dict(session="s", source="claude")
    store.add_many([items.user_record("Should we shard the orders table?", dedup="1", **c),
                    items.record("reply", "No: 40 GB fits one node.", dedup="2", **c),
                    items.user_record("Which region do we deploy to first?", dedup="3", **c)])
    ctx = engine.assemble(store, budget=2000, mode="hybrid")
    questions = [r for r in ctx.facts if r["tag"] == "question"]
    assert [r["text"] for r in questions] == ["Which region do we deploy to first?"]
    assert questions[0]["msg_id"] == 3 and questions[0]["ts"] > 0  # provenance kept
    assert "Open question: Which region do we deploy to first?" in render_formats.to_markdown(ctx)
    assert "Open question: Should we shard" not in render_formats.to_markdown(ctx)


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
    assert session_tools.test_counts(command, output) == counts


@pytest.mark.parametrize("command, output, subject", [
    ("git commit -m 'Fix the loader'", None, "Fix the loader"),
    ('git add -A && git commit -am "Bump to 1.2"', None, "Bump to 1.2"),
    ("git commit -m \"$(cat <<'EOF'\nAdd session memory\n\nLonger body.\nEOF\n)\"", None, "Add session memory"),
    ("git commit --amend --no-edit", "[main 1a2b3c4] Keep the real subject\n 1 file changed", "Keep the real subject"),
    ("git status", None, None),
])
def test_commit_subjects(command, output, subject):
    assert session_tools.commit_subject(command, output) == subject


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


# -- the end state, not history (issue 23): each false-line kind reproduced ---------------------
# Transcripts written line by line in the shape Claude Code and Codex write them (uuid, sessionId,
# timestamp, content blocks; tool results on user lines), imported by the real importer.

class Claude:
    """A Claude Code transcript being written: prompts, replies, tool calls with their results."""

    def __init__(self, session="s1", start=0):
        self.lines, self.n, self.session, self.t = [], 0, session, start

    def _line(self, kind, content, **extra):
        self.n += 1
        self.t += 1
        d = {"type": kind, "uuid": f"{self.session}-u{self.n}", "sessionId": self.session, "cwd": "/w/proj",
             "timestamp": f"2026-03-0{1 + self.t // 3600}T{(self.t // 60) % 24:02d}:{self.t % 60:02d}:00Z",
             "isSidechain": False, "message": {"role": "user" if kind == "user" else "assistant", "content": content}}
        d.update(extra)
        self.lines.append(d)
        return self

    def prompt(self, text, **extra):
        return self._line("user", text, **extra)

    def say(self, text):
        return self._line("assistant", [{"type": "text", "text": text}])

    def call(self, name, args, result="ok", is_error=False):
        cid = f"toolu_{self.session}_{self.n}"
        self._line("assistant", [{"type": "tool_use", "id": cid, "name": name, "input": args}])
        return self._line("user", [{"type": "tool_result", "tool_use_id": cid, "content": result,
                                    "is_error": is_error}])

    def write(self, path):
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(d) + "\n" for d in self.lines))
        return str(path)


def memory_md(store, budget=4000):
    md = render_formats.to_markdown(engine.assemble(store, budget=budget, mode="hybrid", root="/w/proj"))
    return md.split("## Recent turns")[0]


def section(md, name):
    part = md.split(f"**{name}**", 1)
    if len(part) < 2:
        return []
    out = []
    for line in part[1].lstrip("\n").splitlines():
        if line.startswith("**") or line.startswith("#"):
            break
        if line.startswith("- "):
            out.append(line[2:])
    return out


def test_current_work_is_the_last_typed_request_not_the_first_nor_a_subagent_prompt(store, tmp_path):
    t = Claude().prompt("Add retries to the HTTP client in src/net.py").say("Done: retries added.")
    t.call("Task", {"description": "Research backoff", "prompt": "You are a research agent. Find backoff libraries."},
           result="tenacity is the standard")
    t.prompt("You are a research agent. Find backoff libraries.", isSidechain=True)
    t.prompt("Now make the retry count configurable via RETRIES").say("Made it configurable: RETRIES defaults to 3.")
    im.import_file(store, t.write(tmp_path / "t.jsonl"))
    md = memory_md(store)
    work = section(md, "Current work")
    assert work[0] == "Now make the retry count configurable via RETRIES"
    assert "Last report: Made it configurable: RETRIES defaults to 3." in work
    assert "research agent" not in md and "Add retries" not in " ".join(work)


def test_pending_is_open_todos_never_narration_or_completed_todos(store, tmp_path):
    t = Claude().prompt("Upgrade the parser and fix the flaky test")
    t.say("I need to fetch dependencies first:").call("Bash", {"command": "npm ci"}, "added 10 packages")
    t.call("TodoWrite", {"todos": [{"content": "Upgrade the parser", "status": "completed", "activeForm": "x"},
                                   {"content": "Fix the flaky test", "status": "in_progress", "activeForm": "y"},
                                   {"content": "Update the changelog", "status": "pending", "activeForm": "z"}]},
           "Todos have been modified successfully")
    t.say("I need to remove the duplicate definition.").say("Let me check the test again:")
    im.import_file(store, t.write(tmp_path / "t.jsonl"))
    md = memory_md(store)
    assert section(md, "Pending tasks") == ["[~] Fix the flaky test (in progress)", "[ ] Update the changelog (pending)"]
    assert "I need to" not in md and "Let me" not in md
    assert "Upgrade the parser (completed)" not in md
    assert section(md, "Next step") == ["Update the changelog"]


def test_task_create_and_task_update_are_a_todo_list(store, tmp_path):
    t = Claude().prompt("Ship the export feature")
    for i, subject in enumerate(["Write the exporter", "Add CLI flag", "Drop the old path"], 1):
        t.call("TaskCreate", {"subject": subject, "description": subject, "activeForm": subject},
               f"Task #{i} created successfully: {subject}")
    t.call("TaskUpdate", {"taskId": "1", "status": "completed"}, "Updated task #1 status")
    t.call("TaskUpdate", {"taskId": "2", "status": "in_progress"}, "Updated task #2 status")
    t.call("TaskUpdate", {"taskId": "3", "status": "deleted"}, "Updated task #3 deleted")
    im.import_file(store, t.write(tmp_path / "t.jsonl"))
    mem = session.session_memory(store)
    assert mem.todos == [("Write the exporter", "completed"), ("Add CLI flag", "in_progress")]
    md = memory_md(store)
    assert section(md, "Pending tasks") == ["[~] Add CLI flag (in progress)"]
    assert "In progress: Add CLI flag" in section(md, "Current work")


def test_an_error_is_open_only_while_its_last_run_fails(store, tmp_path):
    t = Claude().prompt("Make the build and the tests pass")
    t.call("Bash", {"command": "cd /w/proj && make build"}, "make: *** [build] Error 2\nerror: missing header",
           is_error=True)
    t.call("Bash", {"command": "make build"}, "built")  # the same command without the cd: fixed
    t.call("Bash", {"command": "pytest tests/test_io.py -q"}, "F\n1 failed, 3 passed in 0.2s", is_error=True)
    t.call("Bash", {"command": "pytest -q"}, "....\n12 passed in 0.9s")  # the suite green again: fixed
    t.call("Read", {"file_path": "/w/proj/nope.txt"}, "", is_error=True)  # says nothing: no entry
    t.call("Bash", {"command": "ruff check ."}, "E501 line too long\nFound 1 error.", is_error=True)
    t.say("The build and tests pass; ruff still reports one long line.")
    im.import_file(store, t.write(tmp_path / "t.jsonl"))
    errors = section(memory_md(store), "Errors and fixes")
    still = [e for e in errors if "not fixed" in e]
    assert len(still) == 1 and still[0].startswith("`ruff check .` still fails") and "1 error" in still[0]
    assert not any("make build" in e and "not fixed" in e for e in errors)
    assert not any("pytest" in e and "not fixed" in e for e in errors)
    assert not any(e.startswith("`Read") for e in errors)


COMPACT = """This session is being continued from a previous conversation that ran out of context. The \
conversation is summarized below:
<analysis>
Let me go through the conversation chronologically. I need to look at every step.
</analysis>

<summary>
1. Primary Request and Intent:
   The user asked to port the dialyzer checks.

2. Key Technical Concepts:
   - **Dialyzer** PLT caching in `_build/plts`
   - Credo strict mode stays off
   - [Tool output: 14162 characters omitted; full output (16162 characters): /home/u/.claude/outputs/x.txt ...]

3. Files and Code Sections:
   - `mix.exs`
      ```elixir
      {:dialyxir, "~> 1.4"}
      ```

7. Pending Tasks:
   - Commit the dialyzer config

8. Current Work:
   Fixing the dialyzer false positive and committing.

9. Optional Next Step:

</summary>
If you need specific details from before compaction (like exact code snippets), read the full transcript at: \
/home/u/.claude/projects/p/s1.jsonl
Please continue the conversation from where we left it off without asking the user any further questions."""


def test_a_compaction_summary_gives_points_never_plumbing_or_xml(store, tmp_path):
    t = Claude().prompt("Port the dialyzer checks")
    t.prompt(COMPACT, isCompactSummary=True)
    t.call("Bash", {"command": "mix dialyzer"}, "done (passed successfully)")
    t.say("All done: dialyzer passes and the config is committed.")
    im.import_file(store, t.write(tmp_path / "t.jsonl"))
    md = memory_md(store)
    points = section(md, "Key technical points")
    assert "Dialyzer PLT caching in `_build/plts`" in points and "Credo strict mode stays off" in points
    bad = re.compile(r"characters omitted|/outputs/|full transcript|before compaction|</?\w+>|</summary|"
                     r"Optional Next Step|\*\*(?!\w+\*\*)|Let me go through")
    assert not [l for l in md.splitlines() if l.startswith("- ") and bad.search(l)], md
    assert "Commit the dialyzer config" not in section(md, "Pending tasks")  # the summary's list is history


def test_gemini_state_snapshot_parts_are_parsed_not_pasted(store):
    text = ("<state_snapshot>\n  <overall_goal>Create hello.txt and hello.py</overall_goal>\n"
            "  <key_knowledge>\n    - write_file is not available\n    - the generalist agent hit the daily quota\n"
            "  </key_knowledge>\n  <current_plan>\n    1. [DONE] Check the tools\n    2. [IN PROGRESS] Create hello.txt"
            "\n    3. [TODO] Create hello.py\n  </current_plan>\n</state_snapshot>")
    parts = session_tools.summary_parts(text)
    assert parts["overall_goal"] == ["Create hello.txt and hello.py"]
    assert parts["key_knowledge"] == ["- write_file is not available", "- the generalist agent hit the daily quota"]
    c = dict(session="g", source="gemini")
    store.add_many([items.record("summary", text, subtype="compaction", dedup="1", **c),
                    items.user_record("ok try run_shell_command instead", dedup="2", **c)])
    mem = session.session_memory(store)
    assert "Goal: Create hello.txt and hello.py" in mem.points and "write_file is not available" in mem.points
    assert mem.todos == [("Check the tools", "completed"), ("Create hello.txt", "in_progress"),
                         ("Create hello.py", "pending")]
    assert not any("<" in p for p in mem.points)


@pytest.mark.parametrize("text, limit, want", [
    ("Fixed the dialyzer false positive and committed the config. Then ran the suite.", 70,
     "Fixed the dialyzer false positive and committed the config. …"),
    ("word " * 30, 40, "word word word word word word word …"),
    ("short", 40, "short"),
])
def test_cuts_fall_on_sentence_or_word_boundaries(text, limit, want):
    got = session_text.cut(text, limit)
    assert got == want.strip() and len(got) <= limit


@pytest.mark.parametrize("line", [
    "[Tool output: 14162 characters omitted; full output (16162 characters): /h/.claude/outputs/a.txt ...]",
    "If you need specific details from before compaction, read the full transcript at: /h/p.jsonl",
    "</summary", "**", "Optional Next Step:",
])
def test_plumbing_and_empty_labels_are_never_shown(line):
    assert session_text.tidy(line) == ""


@pytest.mark.parametrize("line", ["Let me check the test again:", "Now I'll run the linter.", "I need to fetch deps.",
                                  "Okay, let me look.", "Now let me close the task and move to the next one:"])
def test_narration_is_recognised(line):
    assert session_text.is_narration(line)


def test_replies_narration_never_becomes_a_point_or_a_task(store):
    c = dict(session="s", source="claude")
    store.add_many([items.user_record("Please fix the login bug; we must not change the API.", dedup="1", **c),
                    items.record("reply", "I need to fetch dependencies first: the build needs version 2.3.1.",
                                 dedup="2", **c),
                    items.record("reply", "Now let me close the task and move to the next one:", dedup="3", **c),
                    items.record("reply", "Now let me close the task and move to the next one:", dedup="4", **c),
                    items.record("reply", "ialyzer false positive and commit the fix in version 2.3.1", dedup="5",
                                 **c)])
    md = memory_md(store, 2000)
    for section_name in ("Key technical points", "Pending tasks", "Errors and fixes", "Next step"):
        for line in section(md, section_name):
            assert not session_text.is_narration(line) and not line.startswith("ialyzer"), (section_name, line)


def _commit_session(t, n_cmds, subject):
    for i in range(n_cmds):
        t.call("Bash", {"command": f"bd ready --step {i}"}, "ok")
    t.call("Bash", {"command": f"git commit -am '{subject}'"}, f"[main abc{n_cmds:04d}] {subject}\n 1 file changed")


def test_small_budgets_keep_commits_over_old_command_results(store, tmp_path):
    t = Claude().prompt("Close out the release tasks")
    for k in range(6):
        _commit_session(t, 6, f"Release step {k}: tidy module {k}")
    t.say("All done: six commits.")
    im.import_file(store, t.write(tmp_path / "t.jsonl"))
    md = memory_md(store, 2000)
    commits = [l for l in section(md, "Problem solving") if l.startswith("Committed")]
    assert len(commits) == 6 and commits[0].endswith("Release step 5: tidy module 5")  # newest first
    for budget in (300, 700):
        ctx = engine.assemble(store, budget=budget, root="/w/proj")
        out = render_formats.to_markdown(ctx)
        assert tokens.ceiling(out) <= budget
        if "**Problem solving**" in out:
            first = section(out, "Problem solving")[0]
            assert first.startswith("Committed"), first


def test_files_and_commits_come_from_earlier_sessions_too(store, tmp_path):
    old = Claude("old")
    old.prompt("Refactor the loader")
    for i in range(12):
        old.call("Edit", {"file_path": f"/w/proj/src/m{i % 4}.py", "old_string": "a", "new_string": "b"},
                 "The file has been updated.")
    old.call("Bash", {"command": "git commit -am 'Refactor the loader'"}, "[main 1a2b3c4] Refactor the loader")
    new = Claude("new", start=40000)
    new.prompt("Now document it")
    for i in range(40):
        new.call("Read", {"file_path": f"/w/proj/docs/r{i}.md"}, "text")
    new.call("Edit", {"file_path": "/w/proj/README.md", "old_string": "a", "new_string": "b"}, "ok")
    im.import_file(store, old.write(tmp_path / "old.jsonl"))
    im.import_file(store, new.write(tmp_path / "new.jsonl"))
    mem = session.session_memory(store, "/w/proj", scan=60)  # the old session lies beyond the rows read
    assert {p for p, _n in mem.files} == {"src/m0.py", "src/m1.py", "src/m2.py", "src/m3.py", "README.md"}
    assert mem.files[0][1] == 3  # most edited first
    assert [s for _d, s in mem.commits] == ["Refactor the loader"] and mem.commits[0][0].startswith("2026-03-0")
    assert mem.current == "Now document it"


def test_codex_shell_command_and_exec_command_are_commands(store, tmp_path):
    lines = [{"timestamp": "2026-03-01T00:00:00Z", "type": "session_meta", "payload": {"id": "cx", "cwd": "/w/proj"}}]

    def add(t, kind, payload):
        lines.append({"timestamp": f"2026-03-01T00:00:{t:02d}Z", "type": kind, "payload": payload})

    add(1, "event_msg", {"type": "user_message", "message": "run the tests"})
    add(2, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run the tests"}]})
    for t, (name, key) in enumerate([("shell", "command"), ("shell_command", "command"), ("exec_command", "cmd")]):
        args = {key: ["bash", "-lc", "pytest -q"] if name == "shell" else "pytest -q"}
        add(3 + 2 * t, "response_item", {"type": "function_call", "name": name, "arguments": json.dumps(args),
                                         "call_id": f"c{t}"})
        out = "Exit code: 1\nOutput:\n1 failed, 2 passed in 0.1s" if t < 2 else "Exit code: 0\nOutput:\n3 passed in 0.1s"
        add(4 + 2 * t, "response_item", {"type": "function_call_output", "call_id": f"c{t}", "output": out})
    path = tmp_path / "rollout-2026-03-01T00-00-00-cx.jsonl"
    path.write_text("".join(json.dumps(l) + "\n" for l in lines))
    im.import_file(store, str(path))
    mem = session.session_memory(store)
    assert [(c.command, c.ok) for c in mem.commands] == [("pytest -q", False), ("pytest -q", False), ("pytest -q", True)]
    assert [fix is not None for _f, fix in mem.errors] == [True]  # fixed by the exec_command run


def test_a_configured_summarizer_is_held_to_the_same_rules(store):
    for i in range(30):
        store.add("user" if i % 2 == 0 else "assistant", f"Message {i} about the loader and its cache.")
    llm = {"upto": 20, "text": "- The loader caches parsed files in `.cache/`.\n- Let me summarise the rest:\n"
                               "<summary>\n[Tool output: 900 characters omitted; full output (1200 characters): "
                               "/h/.claude/outputs/a.txt]\n**Decided:** keep the cache off in CI."}
    text = summary_cache.summary_block(store, 20, 500, str(store.dir) + "/cache", llm=llm)
    assert "- The loader caches parsed files in `.cache/`." in text and "Decided: keep the cache off in CI." in text
    assert "Let me" not in text and "omitted" not in text and "<summary>" not in text and "**" not in text
