"""Provenance: only what a human typed is the user's (issue 23).

Sub-agent prompts, text a CLI injected and ctxd's own generated text (teach and handoff
prompts, SessionStart context, recall) are never turns, never facts and never sync as turns.
Real transcripts from ../shared/data/real-transcripts; the real CLI and store.
"""

import json
import os
import sqlite3

import pytest

from ctxd.handoff import archive as arch
from ctxd.handoff import archive_schema
from ctxd.memory.ingest import importing as im
from ctxd.memory.store import items
from ctxd.memory.store.db import Store
from ctxd.memory.store.schema import SCHEMA_VERSION
from ctxdtest import ctxd

REAL = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "shared", "data", "real-transcripts")
if not os.path.isdir(REAL):
    REAL = "/work/shared/data/real-transcripts"
SUBAGENT = os.path.join(REAL, "claude", "subagent.jsonl")
TASK_PROMPT = "Draft bead content for setting up Credo, Dialyxir, and mix_audit"


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]


def _subagent_transcript(tmp_path):
    """The sub-agent's own transcript, as Claude Code 2.1 writes it to <session>/subagents/agent-<id>.jsonl:
    the lines the real main transcript carries in its agent_progress records, every one a sidechain."""
    out = []
    for d in _lines(SUBAGENT):
        data = d.get("data") if d.get("type") == "progress" else None
        if isinstance(data, dict) and data.get("type") == "agent_progress" and isinstance(data.get("message"), dict):
            m = dict(data["message"], isSidechain=True, sessionId=d["sessionId"], cwd=d["cwd"],
                     gitBranch=d.get("gitBranch"), agentId=data.get("agentId"))
            out.append(m)
    assert any(TASK_PROMPT in json.dumps(m) for m in out)
    path = tmp_path / d["sessionId"] / "subagents" / f"agent-{out[0]['agentId']}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(m) + "\n" for m in out), encoding="utf-8")
    return str(path)


@pytest.fixture
def store(tmp_path):
    s = Store(str(tmp_path / "ctx"))
    yield s
    s.close()


def _rows(store):
    return [dict(r) for r in store.db.execute("SELECT * FROM messages ORDER BY id")]


# -- sub-agents ------------------------------------------------------------------------

def test_subagent_transcript_prompt_is_not_the_users(store, tmp_path):
    im.import_file(store, _subagent_transcript(tmp_path))
    rows = _rows(store)
    assert rows and not [r for r in rows if r["kind"] == "prompt"]
    (task,) = [r for r in rows if TASK_PROMPT in r["content"]]
    assert (task["kind"], task["subtype"], task["provenance"], task["role"]) == ("meta", "subagent_prompt", "subagent",
                                                                             "system")
    assert {r["provenance"] for r in rows} == {"subagent"}


def test_main_transcript_prompts_are_human_and_task_inputs_are_not_turns(store):
    im.import_file(store, SUBAGENT)
    rows = _rows(store)
    prompts = [r for r in rows if r["kind"] == "prompt"]
    assert prompts and all(r["provenance"] == "human" for r in prompts)
    assert not [r for r in rows if TASK_PROMPT in r["content"] and r["kind"] != "tool_call"]
    assert {r["provenance"] for r in rows if r["kind"] in ("reply", "tool_call", "tool_result")} == {"agent"}
    assert all(r["provenance"] == "injected" for r in rows if r["kind"] == "meta")
    # where the session stood: the transcript's cwd and branch, on each prompt
    assert {(r["data"] and json.loads(r["data"]).get("cwd")) for r in prompts} == {"/home/marco/projects/spotter"}
    assert {json.loads(r["data"]).get("git_branch") for r in prompts} == {"master"}


@pytest.mark.parametrize("rel", sorted(
    os.path.relpath(os.path.join(d, f), REAL) for d, _s, fs in os.walk(REAL) for f in fs
    if f.endswith((".jsonl", ".json", ".md", ".db")) and f != "README.md"
    and not os.path.relpath(d, REAL).startswith("hooks")))
def test_every_real_transcript_has_an_origin_per_item(store, rel):
    im.import_file(store, os.path.join(REAL, rel))
    for r in _rows(store):
        assert r["provenance"] in items.PROVENANCES, r
        assert (r["kind"] == "prompt") == (r["provenance"] == "human"), r
        assert not (r["kind"] == "prompt" and items.generated_by_ctxd(r["content"])), r


def test_codex_subagent_rollout(store, tmp_path):
    objs = _lines(os.path.join(REAL, "codex", "derived-markers-rollout-2025-12-28T12-18-30-019b64e5-57fa-7463-b644-"
                                      "fba7e456f905.jsonl"))
    meta = next(o for o in objs if o.get("type") == "session_meta")
    path = tmp_path / "rollout-sub.jsonl"
    meta["payload"]["source"] = {"subagent": "review"}
    path.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    im.import_file(store, str(path), "codex")
    rows = _rows(store)
    assert rows and not [r for r in rows if r["kind"] == "prompt"]
    assert {r["provenance"] for r in rows} == {"subagent"}


# -- ctxd's own text ---------------------------------------------------------------------

def _teach_prompt():
    from ctxd.handoff import teach

    a = archive_schema.empty("rust", "2026-11-01T12:00:00Z", "en")
    a["topic"] = {"title": "Rust ownership", "current_subtopic": "Borrowing", "stage": "learning"}
    a["questions"] = [{"question": "Why can't I have two &mut to the same Vec?", "status": "open",
                       "created_at": "2026-11-01T12:00:00Z"}]
    return teach.build_prompt(archive_schema.validate(a))


@pytest.mark.parametrize("text", [
    _teach_prompt(),
    "# 教学会话：TCP 协议学习\n\n你是学习者的导师。",
    "# Handoff: Fix the login test\n\n`cli_v1` · session `cli` · created 2026-11-01T12:00:00Z · schema 2.0\n",
    "Relevant earlier turns of this project (ctxd recall for this prompt):\n[user] the deploy window is 14:00",
    '{\n "schema_version": "2.0",\n "id": "cli_v1",\n "version": 1,\n "session_id": "cli"\n}',
])
def test_generated_text_is_never_a_prompt(store, text):
    assert items.generated_by_ctxd(text)
    rec = items.user_record(text, session="s", source="claude", dedup="k")
    assert rec["kind"] == "meta"
    store.add_many([dict(kind="prompt", content=text, session="s", source="codex", dedup="k2")])  # a hook saying prompt
    assert [(r["kind"], r["provenance"]) for r in _rows(store)] == [("meta", "ctxd")]


@pytest.mark.parametrize("text", ["# Handoff notes for the team", "Teaching session: what did we cover?",
                                  "schema_version 2.0 is what the handoff says", "Relevant earlier turns please"])
def test_typed_text_that_looks_alike_stays_a_prompt(text):
    assert not items.generated_by_ctxd(text)
    assert items.user_record(text, session="s", source="claude", dedup="k")["kind"] == "prompt"


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").touch()
    from ctxd.memory.project import locate

    return root, locate(str(root), dict(os.environ, PWD=str(root))).context_dir


def test_teach_and_handoff_preview_record_nothing_a_coding_context_renders(project):
    root, ctx = project
    assert ctxd("chat", "add", "--role", "user", "Please fix the flaky login test in tests/test_auth.py",
                cwd=root).returncode == 0
    assert ctxd("chat", "add", "--role", "assistant", "Fixed: the retry now waits for the token.",
                cwd=root).returncode == 0
    before = ctxd("chat", "log", "--json", cwd=root).stdout
    h = ctxd("handoff", "--format", "markdown", cwd=root)
    assert h.returncode == 0, h.stderr
    t = ctxd("teach", cwd=root)
    assert t.returncode == 0 and "You are the learner's tutor" in t.stdout
    assert ctxd("chat", "log", "--json", cwd=root).stdout == before  # nothing recorded
    context = ctxd("context", "--budget", "4000", cwd=root).stdout
    assert "tutor" not in context and "Teaching session" not in context and "# Handoff" not in context
    assert "flaky login test" in context


def _hook(tool, payload, cwd):
    return ctxd("chat", "hook", tool, cwd=cwd, input=json.dumps(payload))


def test_teach_prompt_pasted_into_claude_is_ctxds_not_the_users(project):
    root, ctx = project
    arch.save(ctx, archive_schema.validate(dict(archive_schema.empty("rust", "2026-11-01T12:00:00Z", "en"),
                                      topic={"title": "Rust ownership", "current_subtopic": "", "stage": "learning"})))
    prompt = ctxd("teach", cwd=root).stdout
    base = {"session_id": "s1", "transcript_path": "", "cwd": str(root), "permission_mode": "default"}
    p = _hook("claude", dict(base, hook_event_name="UserPromptSubmit", prompt=prompt), root)
    assert p.returncode == 0, p.stderr
    p = _hook("claude", dict(base, hook_event_name="UserPromptSubmit", prompt="What is a borrow checker?"), root)
    log = [json.loads(l) for l in ctxd("chat", "log", "--json", cwd=root).stdout.splitlines()]
    assert [(m["kind"], m["provenance"]) for m in log] == [("meta", "ctxd"), ("prompt", "human")]
    start = _hook("claude", dict(base, session_id="s2", hook_event_name="SessionStart", source="startup"), root)
    out = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "tutor" not in out and "Teaching session" not in out and "borrow checker" in out


def test_sync_push_does_not_carry_generated_text(project, tmp_path):
    root, ctx = project
    st = Store(ctx)
    st.add_many([dict(kind="prompt", content="remember: the deploy window is 14:00 UTC", session="s", source="cli"),
                 dict(kind="prompt", content=_teach_prompt(), session="s", source="claude")])
    st.close()
    from ctxd.memory.core import ProjectMemory
    from ctxd.memory.sync.sharing import Sync

    with ProjectMemory.at(str(root)) as mem:
        sent = [it for it in Sync(mem).pending_items({}) if it["t"] == "msg"]
    assert [it["content"] for it in sent] == ["remember: the deploy window is 14:00 UTC"]
    assert sent[0]["provenance"] == "human"


# -- the store migration -----------------------------------------------------------------

def test_schema_8_store_gets_provenance_and_teach_prompts_stop_being_turns(tmp_path):
    d = tmp_path / "ctx"
    with Store(str(d)) as st:
        pass
    db = sqlite3.connect(str(d / "store.db"))
    db.execute("ALTER TABLE messages DROP COLUMN provenance")
    teach = _teach_prompt()
    rows = [("s", "user", "prompt", None, "remember: the deploy window is 14:00 UTC", "claude"),
            ("s", "system", "meta", None, teach, "teach"),  # what `ctxd teach` recorded before
            ("s", "user", "prompt", None, teach, "claude"),  # the same prompt piped into Claude Code
            ("s", "assistant", "reply", None, "Noted.", "claude"),
            ("s", "system", "meta", "interrupt", "[Request interrupted by user]", "claude")]
    for i, (sess, role, kind, sub, content, src) in enumerate(rows):
        db.execute("INSERT INTO messages(session, role, kind, subtype, content, ts, source) VALUES (?,?,?,?,?,?,?)",
                   (sess, role, kind, sub, content, 1000.0 + i, src))
    db.execute("PRAGMA user_version = 8")
    db.commit()
    db.close()
    with Store(str(d)) as st:
        assert st.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        got = [(r["role"], r["kind"], r["subtype"], r["provenance"]) for r in
               st.db.execute("SELECT * FROM messages ORDER BY id")]
    assert got == [("user", "prompt", None, "human"), ("system", "meta", "ctxd", "ctxd"),
                   ("system", "meta", "ctxd", "ctxd"), ("assistant", "reply", None, "agent"),
                   ("system", "meta", "interrupt", "injected")]


# -- the handoff of a coding session ---------------------------------------------------------

def _handoff(root, transcript):
    assert ctxd("chat", "import", transcript, cwd=root).returncode == 0
    p = ctxd("handoff", cwd=root)
    assert p.returncode == 0, p.stderr
    with open(p.stdout.strip(), encoding="utf-8") as f:
        a = json.load(f)
    md = ctxd("handoff", "show", cwd=root).stdout
    return a, md


def test_coding_handoff_carries_the_sessions_end_state_cwd_and_branch(project):
    from ctxd.memory.context import facts

    root, _ctx = project
    a, md = _handoff(root, SUBAGENT)
    end = a["end_state"]
    assert (end["cwd"], a["environment"]["git_branch"]) == ("/home/marco/projects/spotter", "master")
    assert a["environment"]["processes"] == [] and a["environment"]["project_types"] == []  # not this shell's
    assert end["last_request"] == a["topic"]["current_subtopic"] == a["progress"]["in_progress"] == "create the beads"
    assert end["last_report"].startswith("Beads Created.") and "|" not in end["last_report"]
    assert "(stage:" not in md and "**Now**: —" not in md
    assert "- Last request: create the beads" in md and "working directory (recorded): /home/marco/projects/spotter" in md
    assert a["key_points"] == []
    said = [f["text"] for f in a["facts"]] + a["progress"]["next_up"]
    assert not [t for t in said if facts.is_narration(t)]
    assert not [f for f in a["facts"] if f["tag"] == "requirement"]  # the user stated none; the agent's are no requirements


def test_coding_handoff_todos_by_status_of_the_last_list(project):
    root, _ctx = project
    a, md = _handoff(root, os.path.join(REAL, "claude", "daaain", "todowrite_examples.jsonl"))
    end = a["end_state"]
    assert end["in_progress"] == ["Add comprehensive tests"] == [a["progress"]["in_progress"]]
    assert a["progress"]["next_up"] == end["open_todos"] == ["Write user documentation", "Perform code review",
                                                             "Conduct security review and penetration testing"]
    assert a["progress"]["completed"] == ["Design the feature architecture", "Implement core functionality"]
    assert end["last_request"] == "Can you add a task for security review as well?"
    assert "- In progress: Add comprehensive tests" in md


@pytest.mark.parametrize("text,limit", [("The readiness probe passes while the pool is empty and nobody knows why", 30),
                                        ("Supercalifragilisticexpialidocious words everywhere", 20),
                                        ("First sentence ends here. Second sentence goes on and on and on.", 40)])
def test_cut_never_ends_inside_a_word(text, limit):
    from ctxd.handoff.endstate import cut

    out = cut(text, limit)
    assert len(out) <= limit + 1 and out.endswith("…")
    kept = out.rstrip("… ")
    assert text.startswith(kept) and (len(kept) == len(text) or not text[len(kept)].isalnum() or " " not in kept)


def test_codex_notify_and_gemini_hook_context_keep_only_the_typed_words(project):
    root, _ctx = project
    teach_text = _teach_prompt()
    payload = {"type": "agent-turn-complete", "thread-id": "t1", "turn-id": "u1", "cwd": str(root),
               "input-messages": [teach_text], "last-assistant-message": "Let's begin with borrowing."}
    p = ctxd("chat", "hook", "codex-notify", json.dumps(payload), cwd=root)
    assert p.returncode == 0, p.stderr
    before = {"session_id": "g1", "cwd": str(root), "hook_event_name": "BeforeAgent", "timestamp": "2026-12-01T00:00:00Z",
              "prompt": "<hook_context># Conversation context: proj\n- x</hook_context>\nwhy is the pool empty?"}
    assert _hook("gemini", before, root).returncode == 0
    log = [json.loads(l) for l in ctxd("chat", "log", "--json", cwd=root).stdout.splitlines()]
    got = [(m["kind"], m["provenance"], m["content"][:22]) for m in log]
    assert ("meta", "ctxd", teach_text[:22]) in got and ("reply", "agent", "Let's begin with borro") in got
    assert ("prompt", "human", "why is the pool empty?") in got
    assert [m for m in log if m["kind"] == "prompt"] == [m for m in log if m["provenance"] == "human"]


def test_a_subagents_last_reply_and_todo_list_are_not_the_sessions_end_state(store, tmp_path):
    from ctxd.memory.context import session as session_mod

    path = _subagent_transcript(tmp_path)
    last_ts = max(d["timestamp"] for d in _lines(SUBAGENT) if d.get("timestamp"))
    late = last_ts[:-5] + "59.9Z" if last_ts.endswith("Z") else last_ts
    tail = _lines(path)[-1]
    extra = [dict(tail, type="assistant", uuid="sub-late-1", timestamp=late,
                  message={"role": "assistant", "content": [
                      {"type": "tool_use", "id": "toolu_sub_todo", "name": "TodoWrite",
                       "input": {"todos": [{"content": "Subagent-only chore", "status": "in_progress",
                                            "activeForm": "Doing the subagent chore"}]}}]}),
             dict(tail, type="assistant", uuid="sub-late-2", timestamp=late,
                  message={"role": "assistant", "content": [
                      {"type": "text", "text": "Subagent final report: drafted three beads."}]})]
    with open(path, "a", encoding="utf-8") as f:
        f.writelines(json.dumps(m) + "\n" for m in extra)
    im.import_file(store, SUBAGENT)
    im.import_file(store, path)
    mem = session_mod.session_memory(store)
    assert "Subagent final report" not in (mem.report or "")
    assert "Subagent-only chore" not in [t for t, _s in mem.todos]
    assert mem.last_request and TASK_PROMPT not in mem.last_request
