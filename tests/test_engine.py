"""The context engine against a real store: facts, supersession, budgets, modes."""

import json
import re
import os

import pytest

from ctxd.memory.context import engine, fact_merge, facts, render_formats
from ctxd.memory.store.db import Store
from ctxd.memory.text.tokens import estimate
from ctxdtest import ctxd


@pytest.mark.parametrize("sentence,kind", [
    ("The budget is at most 25,000 USD.", "money"),
    ("预算不超过 3 万元。", "money"),
    ("Keep p95 latency under 200 ms.", "number"),
    ("The deadline is 2026-03-15.", "date"),
    ("We are on Django 4.2.11 and jdk-17.", "version"),
    ("Edit /etc/nginx/conf.d/api.conf first.", "path"),
    ("Docs live at https://example.com/docs/v2.", "url"),
    ("Tracked in OPS-4821, discuss in #payments-oncall.", "identifier"),
    ("Do not use MongoDB.", "constraint"),
    ("不要使用 Redis。", "constraint"),
    ("Should we shard by tenant?", "question"),
    ("I prefer short answers with code.", "preference"),
    ("Next step: write the migration.", "todo"),
])
def test_fact_kinds(sentence, kind):
    [(tag, kinds, text, *_rest)] = facts.extract(1, 0.0, "user", sentence)
    assert kind in kinds.split(",") and text == sentence.strip()


def test_plain_prose_is_not_a_fact():
    assert facts.extract(1, 0.0, "user", "Sounds good, thanks for the explanation.") == []


def fill(store, turns):
    for role, text in turns:
        store.add(role, text)


@pytest.fixture
def store(tmp_path):
    s = Store(str(tmp_path / "ctx"))
    yield s
    s.close()


def test_correction_supersedes_and_context_shows_current(store):
    fill(store, [("user", "The deadline is 2026-03-15 for the launch."),
                 ("assistant", "OK, planning for that."),
                 ("user", "Actually the deadline moved to 2026-04-01.")])
    for i in range(40):
        fill(store, [("user", f"filler question number {i} about naming things"), ("assistant", "filler answer " * 30)])
    ctx = engine.assemble(store, budget=600, mode="hybrid")
    text = render_formats.to_text(ctx)
    assert "2026-04-01" in text
    for line in text.splitlines():
        if "2026-03-15" in line:
            assert "superseded" in line
    assert ctx.superseded == 1


def test_duplicates_are_kept_once(store):
    fill(store, [("user", "Never deploy on Fridays."), ("user", "never deploy on fridays!")])
    fact_merge.refresh_facts(store)
    assert store.db.execute("SELECT count(*) FROM facts").fetchone()[0] == 1


def test_refresh_is_incremental(store):
    fill(store, [("user", "Budget at most 100 USD.")] * 3)
    assert fact_merge.refresh_facts(store) == 3
    assert fact_merge.refresh_facts(store) == 0
    store.add("user", "Use port 8443.")
    assert fact_merge.refresh_facts(store) == 1


@pytest.mark.parametrize("budget", [200, 500, 1000, 4000])
def test_budget_is_respected_and_last_two_kept(store, budget):
    for i in range(120):
        fill(store, [("user", f"Question {i}: what about version v1.{i}.0 and the limit of {i} MB?"),
                     ("assistant", "An answer that goes on for a while. " * 12)])
    ctx = engine.assemble(store, budget=budget, mode="hybrid")
    assert len(ctx.recent) >= 2 and ctx.recent[-1].content.startswith("An answer")
    if budget >= 500:
        assert estimate(render_formats.to_text(ctx)) <= budget * 1.1


def test_modes(store):
    fill(store, [("user", f"turn {i} " + "words " * 40) for i in range(30)])
    zero = engine.assemble(store, budget=2000, mode="zero")
    assert [m.content for m in zero.recent] == [store.recent(1)[0].content] and zero.parts == []
    short = engine.assemble(store, budget=2000, mode="short")
    assert len(short.recent) <= 6
    long = engine.assemble(store, budget=100000, mode="long")
    assert len(long.recent) == 30
    summ = engine.assemble(store, budget=2000, mode="summary")
    assert len(summ.recent) <= 2


def test_auto_mode_hysteresis_and_decision_log(store, tmp_path):
    log = str(tmp_path / "log")
    fill(store, [("user", "hello there"), ("assistant", "hi")])
    first = engine.assemble(store, budget=4000, log_dir=log)
    assert first.mode == "long"
    for _ in range(60):
        fill(store, [("user", "Please look at that earlier point about it " + "x " * 60), ("assistant", "y " * 80)])
    second = engine.assemble(store, budget=1000, log_dir=log)  # long cannot hold it: switches at once
    assert second.mode == "hybrid"
    store.add("user", "ok")
    # a calm turn would suggest another mode; one call is not enough to flip back
    modes = [engine.assemble(store, budget=1000, log_dir=log).mode for _ in range(3)]
    assert modes[0] == "hybrid"
    lines = [json.loads(l) for l in open(os.path.join(log, "decisions.jsonl"))]
    assert len(lines) == 5
    for d in lines:
        assert {"mode", "reason", "window", "tokens", "budget"} <= set(d)


def test_json_format_is_openai_messages(store):
    fill(store, [("user", "Budget at most 5 USD."), ("assistant", "ok"), ("tool", "output")])
    msgs = render_formats.to_messages(engine.assemble(store, budget=2000, mode="hybrid"))
    assert msgs[0]["role"] == "system" and all(m["role"] in ("system", "user", "assistant") for m in msgs)


def test_query_pulls_older_turns(store):
    store.add("user", "The secret codename is BLUEFALCON for the migration.")
    for i in range(200):
        fill(store, [("user", f"unrelated chatter {i} " + "z " * 30)])
    ctx = engine.assemble(store, budget=800, mode="hybrid", query="BLUEFALCON")
    assert "BLUEFALCON" in render_formats.to_text(ctx)


def test_system_block_compact_when_large(store):
    fill(store, [("user", "hi"), ("assistant", "hello")])
    big = "Rule one is short.\n\n" + "Long elaboration. " * 400
    ctx = engine.assemble(store, budget=1000, mode="hybrid", system=big, system_compact="Rule one is short.")
    assert ctx.parts[0].name == "system" and ctx.parts[0].text == "Rule one is short."


def test_context_command(tmp_path):
    (tmp_path / "Makefile").touch()
    p = ctxd("context", cwd=tmp_path)
    assert p.returncode == 4 and p.stderr.startswith("ctxd: no conversation recorded")
    assert ctxd("chat", "add", "Do not use MongoDB; budget at most 25,000 USD.", cwd=tmp_path).returncode == 0
    p = ctxd("context", "--budget", "500", "--format", "text", "--explain", cwd=tmp_path)
    assert p.returncode == 0 and "25,000 USD" in p.stdout
    assert "mode " in p.stderr and "budget 500 tokens" in p.stderr
    msgs = json.loads(ctxd("context", "--format", "json", cwd=tmp_path).stdout)
    assert msgs[-1]["role"] == "user"
    p = ctxd("context", "--budget", "500", "--model", "gpt-4o", cwd=tmp_path)
    assert p.returncode == 2


def test_task_working_memory(tmp_path):
    (tmp_path / "Makefile").touch()
    assert ctxd("chat", "add", "hello", cwd=tmp_path).returncode == 0
    assert ctxd("task", "start", "Migrate the loader", cwd=tmp_path).returncode == 0
    p = ctxd("task", "start", "Another", cwd=tmp_path)
    assert p.returncode == 2 and "still open" in p.stderr
    assert ctxd("task", "note", "keep BOM handling in src/loader.py", cwd=tmp_path).returncode == 0
    out = ctxd("context", "--budget", "800", "--format", "text", cwd=tmp_path).stdout
    assert "Current task (working memory):\nMigrate the loader" in out and "keep BOM handling" in out
    assert "1 note kept" in ctxd("task", "done", cwd=tmp_path).stdout
    out = ctxd("context", "--budget", "800", "--format", "text", cwd=tmp_path).stdout
    assert "Current task" not in out
    log = [json.loads(l) for l in ctxd("chat", "log", "--json", cwd=tmp_path).stdout.splitlines()]
    assert log[-1]["role"] == "system" and "keep BOM handling in src/loader.py" in log[-1]["content"]
    assert ctxd("task", "done", cwd=tmp_path).returncode == 4


def test_markdown_is_a_session_memory(store):
    """The 9-part layout, filled from typed events: the edits, the failing and the fixing test
    run, the commit, the todo list; questions a reply answered are no longer open."""
    from ctxd.memory.store import items

    c = dict(session="s1", source="claude")
    n = iter(range(100))

    def k():
        return f"k{next(n)}"

    edit = {"file_path": "/w/proj/src/app/models.py", "old_string": "a = 1", "new_string": "a = 2"}
    store.add_many([
        items.user_record("Please always answer in English. Do not use MongoDB.", dedup=k(), **c),
        items.record("reply", "Using Django 4.2.11.", dedup=k(), **c),
        items.call_record("Edit", edit, call_id="e1", dedup=k(), **c),
        items.result_record("The file has been updated.", tool="Edit", call_id="e1", dedup=k(), **c),
        items.call_record("Bash", {"command": "pytest -q"}, call_id="b1", dedup=k(), **c),
        items.result_record("E   AssertionError: boom\n1 failed, 3 passed in 0.21s", tool="Bash", call_id="b1",
                            is_error=True, exit_code=1, dedup=k(), **c),
        items.call_record("Edit", edit, call_id="e2", dedup=k(), **c),
        items.result_record("The file has been updated.", tool="Edit", call_id="e2", dedup=k(), **c),
        items.call_record("Bash", {"command": "pytest -q"}, call_id="b2", dedup=k(), **c),
        items.result_record("....\n4 passed in 0.30s", tool="Bash", call_id="b2", dedup=k(), **c),
        items.call_record("Bash", {"command": "git commit -am 'Add the index on orders'"}, call_id="b3", dedup=k(), **c),
        items.result_record("[main 1a2b3c4] Add the index on orders\n 1 file changed", tool="Bash", call_id="b3",
                            dedup=k(), **c),
        items.call_record("TodoWrite", {"todos": [{"content": "Write the migration", "status": "in_progress"},
                                                  {"content": "Update the docs", "status": "pending"}]},
                          call_id="t1", dedup=k(), **c),
        items.user_record("Should we add an index?", dedup=k(), **c),
        items.record("reply", "Yes, on orders.created_at.", dedup=k(), **c),
        items.user_record("The tests are done now and merged in PR-12.", dedup=k(), **c),
        items.user_record("Can we drop the CSV export?", dedup=k(), **c),
    ])
    md = render_formats.to_markdown(engine.assemble(store, budget=2000, mode="hybrid", root="/w/proj"))
    for section in ("Initial request", "Key technical points", "Files touched", "Errors and fixes", "Problem solving",
                    "User messages", "Pending tasks", "Current work", "Next step"):
        assert f"**{section}**" in md, section
    assert md.index("**Initial request**") < md.index("**Key technical points**") < md.index("**Files touched**") \
        < md.index("**Errors and fixes**") < md.index("**Problem solving**") < md.index("**User messages**") \
        < md.index("**Pending tasks**") < md.index("**Current work**") < md.index("**Next step**")
    assert "- Please always answer in English. Do not use MongoDB." in md
    assert "- `src/app/models.py` (edited 2×)" in md
    assert "- `pytest -q` failed: E AssertionError: boom — fixed: `pytest -q`: 4 passed, 0 failed" in md
    assert re.search(r"- Committed \d{4}-\d\d-\d\d: Add the index on orders", md)  # dated
    assert "- [~] Write the migration (in progress)" in md and "- [ ] Update the docs (pending)" in md
    assert "- Should we add an index?" in md  # a request, shown as typed ...
    assert "Open question: Should we add an index?" not in md  # ... but answered: no longer an open question
    assert "- Open question: Can we drop the CSV export?" in md
    memory = md.split("## Recent turns")[0]
    assert "In progress: Write the migration" in memory and "- Update the docs" in memory.split("**Next step**")[1]
    assert '{"' not in md and "\\n" not in md and "todos=" not in md


def test_correction_names_the_value_it_replaces_and_keeps_other_details(store):
    fill(store, [("user", "The API has returned 502s since about 14:05 UTC on Django 4.2.11."),
                 ("user", "The alert channel fired at 14:30 UTC again."),
                 ("user", "Correction: the first 502s were at 13:52 UTC, not 14:05 UTC.")])
    fact_merge.refresh_facts(store)
    rows = {r["id"]: r for r in store.db.execute("SELECT * FROM facts")}
    first = rows[1]
    assert first["superseded_by"] is None  # it still carries Django 4.2.11
    assert "14:05 UTC (superseded, no longer current)" in first["text"] and "Django 4.2.11" in first["text"]
    assert "superseded" not in rows[2]["text"]  # the other time was not touched


def test_restating_a_value_is_not_a_correction(store):
    fill(store, [("user", "Update: the defense moves to 2026-06-16."),
                 ("assistant", "Noted, the defense was moved to 2026-06-16.")])
    fact_merge.refresh_facts(store)
    assert store.db.execute("SELECT count(*) FROM facts WHERE superseded_by IS NOT NULL").fetchone()[0] == 0


def test_teach_prompts_are_not_facts(store):
    store.add("system", "# Teaching session: TCP\nDo not skip the handshake. Budget at most 5 USD.", source="teach")
    store.add("user", "# Teaching session: TCP\nNever use UDP here, at most 3 paragraphs.")
    store.add("user", "Do not use MongoDB.")
    fact_merge.refresh_facts(store)
    assert [r["text"] for r in store.db.execute("SELECT text FROM facts")] == ["Do not use MongoDB."]


def test_refresh_limit_leaves_a_backlog_for_later(store):
    fill(store, [("user", f"Budget item {i} is at most {i} USD.") for i in range(50)])
    assert fact_merge.backlog(store) == 50
    assert fact_merge.refresh_facts(store, batch=10, limit=20) == 20
    assert fact_merge.backlog(store) == 30
    assert fact_merge.refresh_facts(store) == 30 and fact_merge.backlog(store) == 0


def test_old_summary_cache_files_are_pruned(store, tmp_path):
    for i in range(30):
        fill(store, [("user", f"turn {i} " + "words " * 80)])
        engine.assemble(store, budget=600, mode="hybrid")
    cache = os.path.join(store.dir, "cache")
    assert len([f for f in os.listdir(cache) if f.startswith("summary-")]) <= 8


def test_query_keeps_only_the_memory_and_facts_that_bear_on_it(store):
    fill(store, [("user", "Let us plan the launch together."), ("assistant", "Happy to help."),
                 ("user", "The deadline is 2026-03-15 for the launch."), ("assistant", "Noted.")])
    for i in range(5):
        fill(store, [("user", f"early filler {i} about naming things"), ("assistant", "early answer " * 20)])
    fill(store, [("user", "Do not use MongoDB for the session cache."), ("assistant", "Understood, Redis it is.")])
    for i in range(60):
        fill(store, [("user", f"filler question number {i} about naming things"), ("assistant", "filler answer " * 20)])
    plain = render_formats.to_text(engine.assemble(store, budget=2000, mode="hybrid"))
    assert "2026-03-15" in plain and "MongoDB" in plain  # no question: the facts as before
    for q in ("which store for the session cache?", "会话缓存用什么？"):
        ctx = engine.assemble(store, budget=2000, mode="hybrid", query=q)
        text = render_formats.to_text(ctx)
        assert "2026-03-15" not in text, q  # shares no term with the question: its budget goes to recall
        assert text.count("Do not use MongoDB") == 1, q  # in recall's turns, not repeated as a fact
        assert not re.search(r"^(Facts to keep|Session memory)[^\n]*:\n(\n|$)", text, re.M), q  # no empty header
        md = render_formats.to_markdown(ctx)
        assert "2026-03-15" not in md and md.count("Do not use MongoDB") == 1, q


def test_query_keeps_a_relevant_fact_recall_does_not_hold(store):
    fill(store, [("user", "Budget: the staging cluster costs at most 400 USD a month."), ("assistant", "ok")])
    for i in range(60):
        fill(store, [("user", f"staging chatter {i} " + "z " * 30)])
    ctx = engine.assemble(store, budget=300, mode="hybrid", query="staging cluster budget")
    held = {h for p in ctx.parts if p.name == "query" for h in re.findall(r"#(\d+)", p.text)}
    text = render_formats.to_text(ctx)
    assert "400 USD" in text and estimate(text) <= 300
    assert held or ctx.facts


@pytest.mark.parametrize("budget", [300, 600, 2000])
def test_query_fills_the_budget_and_keeps_the_last_two_turns(store, budget):
    for i in range(120):
        fill(store, [("user", f"how did the kiwi harvest go in week {i}?"),
                     ("assistant", f"week {i}: the kiwi harvest went fine, " + "crates " * 12)])
    fill(store, [("user", "and the weather tomorrow?"), ("assistant", "sunny, light wind")])
    ctx = engine.assemble(store, budget=budget, mode="hybrid", query="kiwi harvest")
    text = render_formats.to_text(ctx)
    from ctxd.memory.text import tokens
    assert tokens.ceiling(text) <= budget
    assert "and the weather tomorrow?" in text and "sunny, light wind" in text  # the last two turns stay
    assert tokens.ceiling(text) >= 0.9 * budget  # recall takes what the other parts leave
