"""Conformance: every transcript the real AI CLIs wrote (tests/contracts/real, README there) imports
as typed items.

The expected numbers were counted from the raw files (jq-like Python over the JSON, the
markdown, the llm tables), not from the parser: prompts are what the user typed (for Codex
0.104, the user items Codex follows with an ``event_msg user_message``), tool calls are the
``tool_use`` blocks / ``function_call``/``custom_tool_call`` items / ``toolCalls`` entries /
``functionCall`` parts / tool_call parts and rows, and so on. Several facts are also
re-derived here from the raw JSON (call ids, paths, timestamps).
"""

import collections
import glob
import json
import os
import sqlite3

import pytest

from ctxd import isotime
from ctxd import agents
from ctxd.agents import codex_rollout, llm
from ctxd.agents.base import Malformed, ParseCursor
from ctxd.memory.ingest import importing as im
from ctxd.memory.store import items
from ctxd.memory.store.db import Store

REAL = os.path.join(os.path.dirname(__file__), "contracts", "real")

# path -> (format, {kind: count}, malformed line numbers)
EXPECTED = {
    "claude/short.jsonl": ("claude", {"prompt": 1, "reply": 1, "tool_call": 2, "tool_result": 2, "meta": 1}, []),
    "claude/tool_heavy.jsonl": ("claude", {"prompt": 2, "reply": 1, "tool_call": 6, "tool_result": 6, "meta": 4}, []),
    "claude/subagent.jsonl": ("claude", {"prompt": 1, "reply": 7, "tool_call": 16, "tool_result": 16, "meta": 2}, []),
    "claude/daaain/edge_cases.jsonl": (
        "claude", {"prompt": 4, "reply": 2, "tool_call": 3, "tool_result": 1, "meta": 3, "summary": 1},
        [10, 11, 13, 15, 16]),
    "claude/daaain/representative_messages.jsonl": (
        "claude", {"prompt": 4, "reply": 3, "tool_call": 2, "tool_result": 2, "summary": 1}, []),
    "claude/daaain/session_b.jsonl": ("claude", {"prompt": 2, "reply": 1}, []),
    "claude/daaain/todowrite_examples.jsonl": (
        "claude", {"prompt": 2, "reply": 3, "tool_call": 3, "tool_result": 3, "summary": 1}, []),
    "codex/derived-markers-rollout-2025-12-28T12-18-30-019b64e5-57fa-7463-b644-fba7e456f905.jsonl": (
        "codex", {"prompt": 2, "reply": 1, "meta": 3}, []),
    "codex/rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl": (
        "codex", {"prompt": 7, "reply": 52, "tool_call": 144, "tool_result": 143, "meta": 6}, []),
    "codex/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl": (
        "codex", {"prompt": 38, "reply": 255, "tool_call": 372, "tool_result": 365, "meta": 8, "summary": 1}, []),
    "gemini/session-2026-04-01T11-11-5cdd2021.json": (
        "gemini", {"prompt": 1, "reply": 3, "tool_call": 4, "tool_result": 4}, []),
    "gemini/legacy-one-line-5cdd2021.json": ("gemini", {"prompt": 1, "reply": 3, "tool_call": 4, "tool_result": 4}, []),
    "gemini/session-2026-04-01T11-11-5cdd2021.jsonl": (
        "gemini", {"prompt": 1, "reply": 3, "tool_call": 4, "tool_result": 4}, []),
    "gemini/session-compressed-5cdd2021.jsonl": (
        "gemini", {"prompt": 2, "reply": 4, "tool_call": 4, "tool_result": 4, "summary": 1}, []),
    "gemini/derived-checkpoint-hello.json": ("gemini", {"prompt": 1, "reply": 3, "tool_call": 4, "tool_result": 4}, []),
    "aider/AbdulAlkawasmeh+metadata-aider.aider.chat.history.md": (
        "aider", {"prompt": 12, "reply": 12, "tool_result": 14}, []),
    "aider/AndrewJacop+Simple-Calulator.aider.chat.history.md": (
        "aider", {"prompt": 35, "reply": 21, "tool_result": 34}, []),
    "aider/BeehiveInnovations+zen-mcp-server.aider.chat.history.md": ("aider", {"prompt": 8, "tool_result": 12}, []),
    "jsonl/openai-cookbook-toy_chat_fine_tuning.head4.jsonl": ("jsonl", {"prompt": 6, "reply": 7, "meta": 3}, []),
    "llm/logs-llm0.36.db": ("llm", {"prompt": 5, "reply": 6, "tool_call": 2, "tool_result": 2, "meta": 1}, []),
    "llm/logs-llm0.31.db": ("llm", {"prompt": 4, "reply": 5, "tool_call": 1, "tool_result": 1, "meta": 1}, []),
    "llm/logs-llm0.31-upgraded-to-0.36.db": (
        "llm", {"prompt": 5, "reply": 6, "tool_call": 1, "tool_result": 1, "meta": 1}, []),
}
# What the CLIs put on a user line themselves (checked without ctxd.memory.store.items, on the raw text)
INJECTED = ("[Request interrupted", "<command-", "<local-command", "Caveat: The messages below", "<task-notification",
            "<turn_aborted>", "<user_shell_command>", "<subagent_notification>", "<environment_context>",
            "<user_instructions>", "# AGENTS.md", "<permissions instructions>", "<hook_context>", "<state_snapshot>",
            "This session is being continued")


def parse(rel):
    """(records, malformed line numbers) the importer yields for a real file."""
    path = os.path.join(REAL, rel)
    fmt = im.detect_format(path)
    if fmt == "llm":
        out = list(llm.parse_llm(path, ParseCursor(path, size=os.path.getsize(path))))
    else:
        with open(path, "rb") as f:
            out = list(agents.named(fmt).parse(f, ParseCursor(path)))
    return fmt, [r for r in out if isinstance(r, dict)], [r.line_no for r in out if isinstance(r, Malformed)]


def raw_json_lines(rel):
    out = []
    with open(os.path.join(REAL, rel), encoding="utf-8") as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append(None)
    return out


def is_json_document(text):
    try:
        return isinstance(json.loads(text), (dict, list))
    except ValueError:
        return False


def walk(value):
    """Every dict inside a JSON value."""
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from walk(v)


def test_every_real_file_is_covered():
    """Every transcript is in EXPECTED; hooks/ holds the hook payloads (the hook adapters' tests)."""
    files = {os.path.relpath(p, REAL) for p in glob.glob(os.path.join(REAL, "**", "*"), recursive=True)
             if os.path.isfile(p) and not p.endswith("README.md") and not os.path.relpath(p, REAL).startswith("hooks")}
    assert files == set(EXPECTED)
    assert len(glob.glob(os.path.join(REAL, "hooks", "*", "*.json"))) == 16


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_kinds_counts_and_malformed_lines(rel):
    fmt, records, malformed = parse(rel)
    want_fmt, counts, bad = EXPECTED[rel]
    assert fmt == want_fmt
    assert dict(collections.Counter(r["kind"] for r in records)) == counts
    assert malformed == bad


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_records_are_typed_not_flattened(rel):
    _fmt, records, _bad = parse(rel)
    keys = [r["dedup"] for r in records]
    assert len(keys) == len(set(keys)), "dedup keys are unique"
    for r in records:
        assert r["kind"] in items.KINDS and r["role"] == items.ROLE_OF[r["kind"]]
        c = r["content"]
        assert isinstance(c, str)
        assert not c.startswith(("[tool_use ", "[tool_call ", "[summary]", "[error]", '{"file_path"')), c[:60]
        if r["kind"] == "prompt":
            assert not c.lstrip().startswith(INJECTED), c[:60]
        if r["kind"] == "tool_call":
            assert set(r["data"]) == {"args", "paths", "command"}
            assert c == items.describe_call(r["tool"], r["data"]["args"], r["data"]["paths"], r["data"]["command"])
            assert "\n" not in c and not c.lstrip().startswith("{") and not is_json_document(c)
        if r["kind"] == "tool_result":
            assert set(r["data"]) == {"is_error", "exit_code", "size"} and r["data"]["size"] == len(c)
        if r["kind"] == "meta":
            assert r["subtype"] in items.META_SUBTYPES
        if r["kind"] == "summary":
            assert r["subtype"] in items.SUMMARY_SUBTYPES


@pytest.mark.parametrize("rel", sorted(k for k in EXPECTED if k.endswith((".jsonl", ".json"))))
def test_times_come_from_the_records(rel):
    _fmt, records, _bad = parse(rel)
    path = os.path.join(REAL, rel)
    if rel.endswith(".json"):
        docs = [json.load(open(path, encoding="utf-8"))]
    else:
        docs = [d for d in raw_json_lines(rel) if d is not None]
    stamps = {isotime.parse(d["timestamp"]) for doc in docs for d in walk(doc) if isinstance(d.get("timestamp"), str)}
    if not stamps:  # a /chat save checkpoint carries no times
        assert {r["ts"] for r in records} == {None}
        return
    for r in records:
        assert r["ts"] in stamps, (r["kind"], r["content"][:40])


@pytest.mark.parametrize("rel", sorted(k for k in EXPECTED if k.startswith("claude/")))
def test_claude_calls_results_and_paths(rel):
    _fmt, records, _bad = parse(rel)
    lines = [d for d in raw_json_lines(rel) if isinstance(d, dict) and not d.get("isSidechain")]
    blocks = [b for d in lines if d.get("type") in ("user", "assistant") and isinstance(d.get("message"), dict)
              and isinstance(d["message"].get("content"), list) for b in d["message"]["content"] if isinstance(b, dict)]
    uses = [b for b in blocks if b.get("type") == "tool_use"]
    calls = [r for r in records if r["kind"] == "tool_call"]
    assert [(r["call_id"], r["tool"], r["data"]["args"]) for r in calls] == [
        (b["id"], b["name"], b["input"]) for b in uses]
    edited = [b["input"]["file_path"] for b in uses if b["name"] in ("Edit", "Write", "MultiEdit")]
    assert [p for r in calls for p in items.edits_of(r["tool"], r["data"]["args"])] == edited
    results = [r for r in records if r["kind"] == "tool_result"]
    raw = [b for b in blocks if b.get("type") == "tool_result"]
    assert [(r["call_id"], r["data"]["is_error"]) for r in results] == [
        (b["tool_use_id"], b.get("is_error") is True) for b in raw if isinstance(b.get("tool_use_id"), str)]
    names = {r["call_id"]: r["tool"] for r in calls}
    for r in results:
        assert r["tool"] == names.get(r["call_id"])


def test_claude_known_facts():
    _f, records, _b = parse("claude/subagent.jsonl")
    assert [r["content"] for r in records if r["kind"] == "tool_call" and r["tool"] == "Write"] == [
        "Write /home/marco/projects/spotter/plan.md"]
    assert [(r["kind"], r["subtype"]) for r in records if r["kind"] != "tool_call" and r["kind"] != "tool_result"
            and r["kind"] != "reply"] == [("meta", "slash_command"), ("meta", "interrupt"), ("prompt", None)]
    _f, records, _b = parse("claude/tool_heavy.jsonl")
    assert [(r["subtype"], r["content"][:22]) for r in records if r["kind"] == "meta"] == [
        ("interrupt", "[Request interrupted b"), ("slash_command", "/mcp"),
        ("local_command", "<local-command-stdout>"), ("interrupt", "[Request interrupted b")]
    assert [r["content"] for r in records if r["kind"] == "tool_call"][:2] == [
        "Bash: mix phx.server", "Bash: tail -5 /tmp/claude-1000/-home-marco-projects-spotter/tasks/bae407b.output"]
    assert "WebSearch: xterm.js scroll not working embedded page captures scroll events" in [
        r["content"] for r in records]
    _f, records, _b = parse("claude/daaain/representative_messages.jsonl")
    assert [r["data"]["paths"] for r in records if r["tool"] == "Edit" and r["kind"] == "tool_call"] == [
        ["/tmp/decorator_example.py"]]
    _f, records, _b = parse("claude/daaain/edge_cases.jsonl")
    assert [r["data"]["is_error"] for r in records if r["kind"] == "tool_result"] == [True]
    assert [r["subtype"] for r in records if r["kind"] == "summary"] == ["title"]


CODEX = sorted(k for k in EXPECTED if k.startswith("codex/"))


# Codex wraps an attached image in "<image>" and "</image>" text parts; the redacted files keep
# their length and sha256 prefix, which is all it takes to put them back.
IMAGE_TAGS = {"[REDACTED_TEXT len=7 sha=92b00aa2]": "<image>", "[REDACTED_TEXT len=8 sha=74dc9557]": "</image>"}


def test_the_redacted_image_tags_are_what_they_say():
    import hashlib

    for redacted, tag in IMAGE_TAGS.items():
        assert redacted == f"[REDACTED_TEXT len={len(tag)} sha={hashlib.sha256(tag.encode()).hexdigest()[:8]}]"


@pytest.mark.parametrize("rel", CODEX)
def test_codex_prompts_calls_and_links(rel, tmp_path):
    with open(os.path.join(REAL, rel), encoding="utf-8") as f:
        text = f.read()
    for redacted, tag in IMAGE_TAGS.items():
        text = text.replace(redacted, tag)
    copy = tmp_path / os.path.basename(rel)
    copy.write_text(text, encoding="utf-8")
    with open(copy, "rb") as f:
        records = [r for r in codex_rollout.parse_codex(f, ParseCursor(str(copy))) if isinstance(r, dict)]
    lines = raw_json_lines(rel)
    pay = [(d.get("type"), d.get("payload") or {}) for d in lines]
    events = [p["message"] for t, p in pay if t == "event_msg" and p.get("type") == "user_message"]
    prompts = [r["content"] for r in records if r["kind"] == "prompt"]
    if events:  # what Codex recorded as typed by the user; redacted files keep the same len/sha in both
        assert [p.replace("[REDACTED_TEXT", "[REDACTED_MESSAGE") for p in prompts] == events
    items_ = [p for t, p in pay if t == "response_item"]
    raw_calls = [p for p in items_ if p.get("type") in ("function_call", "custom_tool_call", "local_shell_call",
                                                         "web_search_call")]
    calls = [r for r in records if r["kind"] == "tool_call"]
    assert [(r["call_id"], r["tool"]) for r in calls] == [
        (p.get("call_id"), p.get("name", "web_search" if p["type"] == "web_search_call" else None)) for p in raw_calls]
    searches = [r for r in calls if r["tool"] == "web_search"]
    assert [r["content"] for r in searches] == [f"web_search: {p['action']['query']}" for p in raw_calls
                                                if p["type"] == "web_search_call"]
    outputs = [p for p in items_ if p.get("type") in ("function_call_output", "custom_tool_call_output")]
    results = [r for r in records if r["kind"] == "tool_result"]
    assert [r["call_id"] for r in results] == [p["call_id"] for p in outputs]
    names = {p.get("call_id"): p.get("name") for p in raw_calls}
    assert [r["tool"] for r in results] == [names.get(p["call_id"]) for p in outputs]
    # every turn's prompt is filed under the turn task_started opened (the turn_context comes after it)
    turns = [p["turn_id"] for t, p in pay if t == "event_msg" and p.get("type") == "task_started"]
    keyed = [r["dedup"].split(":")[2] for r in records if r["kind"] == "prompt" and r["dedup"].count(":") == 4]
    if turns:
        assert set(keyed) <= set(turns) and keyed[0] == turns[0]
        starts = collections.Counter(keyed)
        assert sum(starts.values()) == len(prompts)


def test_codex_known_facts():
    rel = CODEX[2]
    _f, records, _b = parse(rel)
    sid = "019c8a59-e9dd-71f0-9ae3-4079fe9726a9"
    assert {r["session"] for r in records} == {sid}
    assert [r["tool"] for r in records if r["kind"] == "tool_call"].count("apply_patch") == 49
    (summary,) = [r for r in records if r["kind"] == "summary"]
    assert (summary["subtype"], summary["dedup"]) == ("compaction", f"codex:{sid}:1788")
    # a turn in which the user typed three messages (steering mid-turn): user:0, user:1 and user:2
    assert f"codex:{sid}:019c8be4-5580-7d82-9b0f-87e3b5d70c56:user:2" in {r["dedup"] for r in records}
    _f, records, _b = parse(CODEX[0])
    assert [(r["kind"], r["subtype"]) for r in records] == [
        ("prompt", None), ("reply", None), ("meta", "interrupt"), ("meta", "local_command"),
        ("meta", "task_notification"), ("prompt", None)]


@pytest.mark.parametrize("rel", sorted(k for k in EXPECTED if k.startswith("gemini/")))
def test_gemini_calls_and_results(rel):
    _fmt, records, _bad = parse(rel)
    calls = [r for r in records if r["kind"] == "tool_call"]
    assert [(r["tool"], r["data"]["paths"]) for r in calls] == [
        ("write_file", ["hello.txt"]), ("write_file", ["hello.py"]), ("generalist", []), ("cli_help", [])]
    results = [r for r in records if r["kind"] == "tool_result"]
    assert [r["call_id"] for r in results] == [r["call_id"] for r in calls] == [
        "9y4yn8tb", "xldstmif", "ip8uyj0a", "ep9jbppf"]
    if "checkpoint" not in rel:  # the session files keep each call's status: the two write_file calls failed
        assert [r["data"]["is_error"] for r in results] == [True, True, False, False]
    assert [r["content"] for r in records if r["kind"] == "prompt"][0] == "create 2 hello world files"


def test_gemini_session_forms_agree():
    """The legacy JSON (pretty and on one line) and the JSONL of one session give the same records,
    keyed alike: importing one after another adds nothing."""
    forms = ["gemini/session-2026-04-01T11-11-5cdd2021.json", "gemini/legacy-one-line-5cdd2021.json",
             "gemini/session-2026-04-01T11-11-5cdd2021.jsonl"]
    got = [[(r["kind"], r["content"], r["dedup"], r["ts"]) for r in parse(rel)[1]] for rel in forms]
    assert got[0] == got[1] == got[2]
    _f, records, _b = parse("gemini/session-compressed-5cdd2021.jsonl")
    (summary,) = [r for r in records if r["kind"] == "summary"]
    assert summary["content"].startswith("<state_snapshot>") and summary["subtype"] == "compaction"
    assert records[-1]["content"] == "ok try run_shell_command instead"


def test_aider_headings_in_replies_are_not_prompts():
    _f, records, _b = parse("aider/AndrewJacop+Simple-Calulator.aider.chat.history.md")
    assert not [r for r in records if r["kind"] == "prompt" and "If you're using" in r["content"]]
    assert any("#### If you're using **npm**:" in r["content"] for r in records if r["kind"] == "reply")


def test_llm_tool_calls_and_system_prompts():
    _f, records, _b = parse("llm/logs-llm0.36.db")
    db = sqlite3.connect(os.path.join(REAL, "llm/logs-llm0.36.db"))
    parts = db.execute("SELECT type, tool_name, payload FROM parts WHERE type IN ('tool_call', 'tool_result') "
                       "ORDER BY message_hash, position").fetchall()
    calls = [(n, json.loads(p)["tool_call_id"]) for t, n, p in parts if t == "tool_call"]
    assert sorted((r["tool"], r["call_id"]) for r in records if r["kind"] == "tool_call") == sorted(calls)
    assert sorted(r["call_id"] for r in records if r["kind"] == "tool_result") == sorted(c for _n, c in calls)
    (system,) = [r for r in records if r["kind"] == "meta"]
    assert (system["subtype"], system["content"]) == ("system", "you are terse")
    times = {isotime.parse(w) for (w,) in db.execute("SELECT datetime_utc FROM turns")}
    assert system["ts"] in times  # the thread's time, not the import's
    assert all(r["ts"] in times for r in records)
    _f, records, _b = parse("llm/logs-llm0.31.db")
    db = sqlite3.connect(os.path.join(REAL, "llm/logs-llm0.31.db"))
    (name, args), = db.execute("SELECT name, arguments FROM tool_calls").fetchall()
    assert [(r["tool"], r["data"]["args"]) for r in records if r["kind"] == "tool_call"] == [(name, json.loads(args))]
    assert [r["content"] for r in records if r["kind"] == "tool_result"] == [
        db.execute("SELECT output FROM tool_results").fetchone()[0]]
    assert [r["content"] for r in records if r["kind"] == "meta"] == [
        s for (s,) in db.execute("SELECT system FROM responses WHERE system != '' ORDER BY rowid")]


# -- into a real store ---------------------------------------------------------------

@pytest.fixture
def store(tmp_path):
    s = Store(str(tmp_path / "ctx"))
    yield s
    s.close()


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_import_then_import_again_adds_nothing(store, rel):
    path = os.path.join(REAL, rel)
    first = im.import_file(store, path)
    _fmt, records, _bad = parse(rel)
    assert first.added == len(records) == store.count()
    again = im.import_file(store, path)
    assert (again.added, again.present) == (0, first.added)
    stored = {m.dedup: m for m in store.iter_all()}
    for r in records:  # the typed fields reach the store
        m = stored[r["dedup"]]
        assert (m.kind, m.tool, m.call_id, m.subtype) == (r["kind"], r["tool"], r["call_id"], r["subtype"])


@pytest.mark.parametrize("rel", [k for k in EXPECTED if k.endswith(".jsonl") and not k.startswith(("jsonl/",))])
def test_a_live_transcript_imported_in_pieces_gives_the_same_records(store, tmp_path, rel):
    """The Stop hook imports what a transcript gained since the last time: cut anywhere, the
    records and their keys are the ones a whole import gives."""
    with open(os.path.join(REAL, rel), "rb") as f:
        lines = [line.rstrip(b"\n") + b"\n" for line in f]  # a live writer ends each line (one file lacks its last)
    path = tmp_path / os.path.basename(rel)
    n = len(lines)
    for cut in sorted({1, n // 5, n // 3, n // 2, (2 * n) // 3, n - 1, n}):
        path.write_bytes(b"".join(lines[:cut]))
        im.import_transcript(store, str(path), im.detect_format(os.path.join(REAL, rel)))
    def seen(s):  # an offloaded output's preview names its file: compare its size instead
        return sorted((m.dedup, m.kind, m.tool, m.call_id, m.output_chars if m.output_path else m.content)
                      for m in s.iter_all())

    pieces = seen(store)
    with Store(str(tmp_path / "whole")) as whole:
        im.import_file(whole, str(path))
        assert pieces == seen(whole)


@pytest.mark.parametrize("indent", [2, None])
def test_a_gemini_legacy_json_rewritten_by_the_cli_imports_as_it_grows(store, tmp_path, indent):
    """Gemini CLI rewrites a legacy session file whole (JSON.stringify, no final newline; pretty
    or on one line); the hooks import it each time it grew."""
    src = os.path.join(REAL, "gemini/session-2026-04-01T11-11-5cdd2021.json")
    doc = json.load(open(src, encoding="utf-8"))
    path = tmp_path / "session-2026-04-01T11-11-5cdd2021.json"
    path.write_text(json.dumps(dict(doc, messages=doc["messages"][:2]), indent=indent))
    added, _ = im.import_transcript(store, str(path), "gemini")
    assert added == 6  # the prompt; the reply, its two calls and their results
    path.write_text(json.dumps(doc, indent=indent))
    added, _ = im.import_transcript(store, str(path), "gemini")
    assert store.count() == 12 and added == 6
    assert im.import_transcript(store, str(path), "gemini") == (0, 0)
