"""The store's table mixins (facts, tasks, concepts) against a real SQLite store.

The fact, tasks and knowledge modules run no SQL: these methods are all they
have, so their contracts (order, limits, NULL handling, index use) are tested here.
"""

import os

import pytest

from ctxd.errors import CtxdError
from ctxd.handoff import knowledge
from ctxd.memory.context import fact_merge, facts as facts_mod, tasks
from ctxd.memory.store.db import Store

REAL = "/work/shared/data/real-transcripts"


@pytest.fixture
def store(tmp_path):
    s = Store(str(tmp_path / "ctx"))
    yield s
    s.close()


def fact(store, msg_id, text, *, tag="constraint", kinds="constraint", topic="", priority=1.0, norm=None):
    return store.insert_fact(msg_id, 100.0 + msg_id, "user", tag, kinds, text, norm or facts_mod.normalize(text),
                             topic, priority)


def traced(store):
    """The SQL statements the store runs, with their parameters bound."""
    seen = []
    store.db.set_trace_callback(seen.append)
    return seen


# -- message reads for the engine ---------------------------------------------------

def test_message_reads(store):
    assert (store.first_id(), store.first_ts_from(0), store.last_ts_upto(10**9)) == (0, 0, 0)
    assert store.first_user_content(10**9) is None
    ids = [store.add(role, text, session=s, ts=ts) for role, text, s, ts in [
        ("assistant", "hello", "a", 10.0), ("user", "first ask", "a", 20.0), ("user", "second", "b", 30.0),
        ("user", "third", "a", 40.0), ("user", "fourth", "a", 50.0)]]
    assert store.first_id() == ids[0]
    assert store.first_ts_from(ids[1]) == 20.0 and store.last_ts_upto(ids[3]) == 40.0
    assert store.first_user_content(ids[0]) is None and store.first_user_content(ids[4]) == "first ask"
    assert store.count_after(ids[1]) == 3 and store.count_after(ids[1], cap=2) == 2
    assert store.count_between(ids[0], ids[3]) == 3
    assert store.user_turns_before("a", ids[4], 10) == 2  # "b" and later ids do not count
    assert store.user_turns_before("a", ids[4], 1) == 1  # counted up to the limit
    rows = store.fact_source_rows(ids[1], 2)
    assert [r["id"] for r in rows] == ids[2:4]
    assert set(rows[0].keys()) == {"id", "ts", "role", "content", "importance", "session", "source", "kind",
                                   "subtype"}
    assert store.has_session("b") and not store.has_session("c")


# -- facts ----------------------------------------------------------------------------

def test_watermark_roundtrip(store):
    assert store.facts_watermark() == 0
    with store.transaction():
        store.set_facts_watermark(41)
    store.set_facts_watermark(42)  # an upsert, not a second row
    assert store.facts_watermark() == 42


def test_fact_rows_and_supersession(store):
    a = fact(store, 1, "Use port 8080.", priority=2.0)
    b = fact(store, 2, "Use port 8443.", priority=5.0)
    c = fact(store, 3, "Never deploy on Fridays.", priority=2.0, topic="deploy")
    assert store.live_fact_with_norm(facts_mod.normalize("Use port 8080.")) ["id"] == a
    assert [r["id"] for r in store.live_facts(10)] == [b, a, c]  # priority, then id
    assert [r["id"] for r in store.live_facts(1)] == [b]
    store.supersede_fact(a, b)
    assert store.live_fact_with_norm(facts_mod.normalize("Use port 8080.")) is None
    assert [r["id"] for r in store.superseded_facts(5)] == [a] and store.superseded_count() == 1
    assert [r["id"] for r in store.live_facts_before(c, 3000)] == [b]
    assert [r["id"] for r in store.live_topic_facts_before("deploy", c + 1, 20)] == [c]
    assert store.live_topic_facts_before("deploy", c, 20) == []
    store.set_fact_text(b, "Use port 8443 (checked).")
    assert store.fact_text(b) == "Use port 8443 (checked)."
    assert store.live_fact_with_norm(facts_mod.normalize("Use port 8443."))["id"] == b  # norm kept
    store.promote_fact(b, "requirement", 1.0)  # priority only ever goes up
    store.promote_message_facts(3, "preference", 9.0)
    rows = {r["id"]: r for r in store.live_facts(10)}
    assert (rows[b]["tag"], rows[b]["priority"]) == ("requirement", 5.0)
    assert (rows[c]["tag"], rows[c]["priority"]) == ("preference", 9.0)
    assert store.message_fact_ids(3) == [c] and store.message_fact_ids(99) == []


def test_norm_lookups_cross_the_chunk_boundary_and_use_the_norm_index(store):
    # more norms than one IN (...) holds: the lookups must chunk, and find facts in every chunk
    norms = [f"statement number {i:04d}" for i in range(1203)]
    with store.transaction():
        ids = [fact(store, i + 1, f"Statement {i}.", norm=n) for i, n in enumerate(norms)]
        for i in (0, 499, 500, 1202):
            store.supersede_fact(ids[i], ids[i] + 10_000)
        for i in (1, 501, 1000):
            store.set_fact_text(ids[i], f"Statement {i} {fact_merge.STALE_MARK}.")
        fact(store, 5000, "late", norm=norms[2])  # after the range: never counted
    seen = traced(store)
    assert store.superseded_norms(norms, 1203) == {norms[i] for i in (0, 499, 500, 1202)}
    assert store.superseded_norms(norms, 500) == {norms[i] for i in (0, 499)}
    rows = store.live_facts_containing(norms, 1203, fact_merge.STALE_MARK)
    assert sorted(r["norm"] for r in rows) == [norms[i] for i in (1, 501, 1000)]
    assert store.superseded_norms([], 10) == set() and store.live_facts_containing([], 10, "x") == []
    store.db.set_trace_callback(None)
    lookups = [s for s in seen if "norm IN" in s]
    assert len(lookups) == 9  # three lookups, three chunks each
    for sql in lookups:  # the unary + keeps the planner on facts_norm (the benchmarks depend on it)
        plan = " ".join(r[3] for r in store.db.execute("EXPLAIN QUERY PLAN " + sql))
        assert "facts_norm" in plan and "facts_live" not in plan and "facts_msg" not in plan


def test_refresh_is_atomic_per_batch(store, monkeypatch):
    for i in range(5):
        store.add("user", f"Use port {8000 + i} for service {i}.")
    calls = []
    real = fact_merge.merge_fact

    def failing(*args):
        calls.append(args)
        if len(calls) == 3:
            raise RuntimeError("killed halfway")
        return real(*args)

    monkeypatch.setattr(fact_merge, "merge_fact", failing)
    with pytest.raises(RuntimeError):
        fact_merge.refresh_facts(store)
    # nothing of the batch landed: neither its first facts nor the watermark
    assert store.facts_watermark() == 0 and not store.db.in_transaction
    assert store.live_facts(100) == [] and store.superseded_count() == 0
    monkeypatch.setattr(fact_merge, "merge_fact", real)
    assert fact_merge.refresh_facts(store, batch=2) == 5
    # the newest port supersedes the older ones (one topic): 1 live, 4 superseded
    assert store.facts_watermark() == store.recent(1)[0].id
    assert (len(store.live_facts(100)), store.superseded_count()) == (1, 4)


def test_refresh_skips_a_batch_another_process_did(store, tmp_path):
    for i in range(4):
        store.add("user", f"Budget at most {100 + i} USD for item {i}.")
    read = store.fact_source_rows
    raced = []

    def racing(upto, batch):  # another process (without the facts lock: an older ctxd) takes the
        rows = read(upto, batch)  # batch between our read and our write
        if rows and not raced:
            other = Store(str(tmp_path / "ctx"))
            try:
                raced.append(fact_merge._refresh_facts(other, 2000, None))
            finally:
                other.close()
        return rows

    store.fact_source_rows = racing
    assert fact_merge.refresh_facts(store) == 0 and raced == [4]
    assert store.facts_watermark() == store.recent(1)[0].id
    n = len(store.live_facts(100)) + store.superseded_count()
    assert n == 4  # each statement once: the batch was not merged a second time


def test_real_transcript_facts_do_not_depend_on_the_batch_size(tmp_path):
    from ctxd.memory.ingest import importing

    path = os.path.join(REAL, "claude", "tool_heavy.jsonl")
    results = []
    for batch in (3, 2000):
        s = Store(str(tmp_path / f"ctx{batch}"))
        try:
            importing.import_file(s, path)
            assert s.count() > 3
            assert fact_merge.backlog(s) == s.count()
            assert fact_merge.refresh_facts(s, batch=batch) == s.count()
            assert s.facts_watermark() == s.recent(1)[0].id and fact_merge.backlog(s) == 0
            results.append([(r["msg_id"], r["text"], r["superseded_by"] is None) for r in fact_merge.live_facts(s, 4000)])
        finally:
            s.close()
    assert results[0] and results[0] == results[1]


def test_keep_fact_and_merge_fact(store):
    mid = store.add("system", "Release notes go in CHANGES.md, never in the README.")
    fid = fact_merge.keep_fact(store, mid, "requirement", 5.0)
    [row] = [r for r in store.live_facts(10) if r["id"] == fid]
    assert (row["msg_id"], row["tag"], row["priority"]) == (mid, "requirement", 5.0)
    # a statement extraction finds nothing in becomes one fact, whole
    mid2 = store.add("system", "ok so we ship it")
    fid2 = fact_merge.keep_fact(store, mid2, "todo", 5.0)
    assert store.fact_text(fid2) == "ok so we ship it" and store.message_fact_ids(mid2) == [fid2]
    # the same text again is the same live fact, re-tagged, not a second one
    mid3 = store.add("system", "ok so we ship it")
    assert fact_merge.keep_fact(store, mid3, "requirement", 6.0) == fid2 and store.message_fact_ids(mid3) == []
    # merge_fact: an exact repeat of a live fact is not stored again
    msg = {"id": mid3, "ts": 1.0, "role": "system"}
    new = fact_merge.merge_fact(store, msg, "constraint", "constraint", "Do not use MongoDB.",
                            facts_mod.normalize("Do not use MongoDB."), "", 5.0)
    assert store.message_fact_ids(mid3) == [new]
    assert fact_merge.merge_fact(store, msg, "constraint", "constraint", "Do not use MongoDB!",
                             facts_mod.normalize("Do not use MongoDB!"), "", 5.0) is None


def test_terms_is_public():
    assert fact_merge.terms("The cutover moves to 2026-04-12 for payments") >= {"cutover", "moves", "payments"}
    assert "the" not in fact_merge.terms("the and for")


# -- tasks ----------------------------------------------------------------------------

def test_task_rows(store):
    assert store.open_task() is None
    tid = store.insert_task("migrate", 10.0)
    store.add_task_note(tid, "step one", 11.0)
    store.add_task_note(tid, "step two")
    t = store.open_task()
    assert (t["id"], t["name"], t["status"], t["started"]) == (tid, "migrate", "open", 10.0)
    assert store.task_notes(tid) == ["step one", "step two"] and store.task_notes(tid + 1) == []
    store.finish_task(tid, 12.0)
    assert store.open_task() is None
    row = store.db.execute("SELECT status, finished FROM tasks WHERE id = ?", (tid,)).fetchone()
    assert tuple(row) == ("done", 12.0)


def test_task_flow_through_the_store(store):
    tasks.start(store, "ship v2")
    with pytest.raises(CtxdError, match="still open"):
        tasks.start(store, "another")
    assert not store.db.in_transaction  # the refused start rolled back
    tasks.note(store, "tag the release")
    assert tasks.render_open(store).startswith("ship v2 (open since ")
    assert tasks.done(store) == ("ship v2", 1)
    assert store.recent(1)[0].content == "Task done: ship v2.\n- tag the release"
    assert tasks.current(store) is None


# -- concepts ---------------------------------------------------------------------------

def test_concept_rows(store):
    assert store.concept("recursion") is None and store.concepts() == []
    store.ensure_concept("recursion", "Recursion", 5.0)
    store.ensure_concept("recursion", "RECURSION", 6.0)  # exists: unchanged
    store.ensure_concept("big o", "Big O", 5.0)
    assert [r["key"] for r in store.concepts()] == ["big o", "recursion"]
    r = store.concept("recursion")
    assert (r["name"], r["created"], r["practices"], r["prerequisites"]) == ("Recursion", 5.0, 0, "[]")
    assert {r["key"] for r in store.due_concepts(0.0, 0.0)} == {"big o", "recursion"}  # never practised
    store.record_practice("recursion", 0.7, True, 100.0, '{"card": 1}', 500.0)
    store.record_practice("recursion", 0.8, False, 50.0, '{"card": 2}', 600.0)  # earlier: last_practice stays
    r = store.concept("recursion")
    assert (r["mastery"], r["practices"], r["errors"], r["last_practice"], r["card"], r["due"]) == \
        (0.8, 2, 1, 100.0, '{"card": 2}', 600.0)
    assert "recursion" not in {r["key"] for r in store.due_concepts(599.0, 99.0)}
    assert "recursion" in {r["key"] for r in store.due_concepts(600.0, 99.0)}  # due
    assert "recursion" in {r["key"] for r in store.due_concepts(0.0, 100.0)}  # stale
    store.set_concept_prerequisites("recursion", '["Big O"]')
    assert store.concept("recursion")["prerequisites"] == '["Big O"]'
    assert store.observation_level("recursion", "h1") is None
    store.record_observation("recursion", "h1", "low", 1.0)
    store.record_observation("recursion", "h1", "high", 2.0)  # same source: updated, not added
    assert store.observation_level("recursion", "h1") == "high"
    assert store.db.execute("SELECT count(*) FROM concept_observations").fetchone()[0] == 1


def test_knowledge_writes_are_one_transaction(store):
    archive = {"session_id": "s", "created_at": 1000.0, "key_points": [
        {"concept": "Closures", "mastery_level": "high", "prerequisites": ["Scope"]},
        {"concept": "Scope", "mastery_level": "nonsense"}]}
    assert knowledge.observe_archive(store, archive, source="h1") == 1
    assert knowledge.observe_archive(store, archive, source="h1") == 0  # applied once per source
    rec = knowledge.get(store, "closures")
    assert rec["mastery"] == 0.85 and rec["prerequisites"] == ["Scope"] and rec["practices"] == 1
    with pytest.raises(CtxdError):
        knowledge.practice(store, "  ", 0.5)
    assert not store.db.in_transaction
    knowledge.practice(store, "Closures", 0.1, error=True, now=2000.0)
    rec = knowledge.get(store, "Closures")
    assert rec["practices"] == 2 and rec["errors"] == 1 and rec["last_practice"] == 2000.0
    assert knowledge.set_prerequisites(store, "Closures", ["Scope", "closures", "scope", "Functions"])[
        "prerequisites"] == ["Scope", "Functions"]


def test_a_capped_refresh_does_not_queue_behind_another_refresher(store, tmp_path):
    """Hooks and ctxd context cap their refresh; while another process holds the facts lock (a
    detached `ctxd chat refresh` catching up on a big import) they skip it instead of waiting."""
    import subprocess
    import sys

    from ctxd.memory.store.layout import MemoryPaths

    store.add("user", "Budget at most 100 USD.")
    lock = MemoryPaths(store.dir).facts_lock
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from ctxd.activation.fileio import locked\n"
        f"with locked({lock!r}):\n    print('held', flush=True); time.sleep(30)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert fact_merge.refresh_facts(store, limit=2000) == 0  # skipped, not waited for
        assert store.facts_watermark() == 0
    finally:
        holder.kill()
        holder.wait()
    assert fact_merge.refresh_facts(store, limit=2000) == 1  # the lock is free again: it reads


def test_a_catch_up_extracts_facts_outside_the_write_lock_in_short_batches(store, monkeypatch):
    """A hook's write waits at most 0.2 s for the store; a catch-up over a big import must not
    hold the write lock while it runs the fact rules (2,000 messages held it ~500 ms)."""
    from ctxd.memory.context import facts as facts_mod

    for i in range(fact_merge.BATCH + 5):
        store.add("user", f"We must keep the budget under {i} USD.")
    inside, batches = [], []
    extract = facts_mod.extract

    def watched(*args):
        inside.append(store.db.in_transaction)
        return extract(*args)

    rows = store.fact_source_rows
    monkeypatch.setattr(facts_mod, "extract", watched)
    monkeypatch.setattr(store, "fact_source_rows", lambda upto, n: batches.append(n) or rows(upto, n))
    monkeypatch.setattr(fact_merge.time, "sleep", lambda s: None)
    assert fact_merge.refresh_facts(store) == fact_merge.BATCH + 5
    assert len(inside) == fact_merge.BATCH + 5 and not any(inside)
    assert batches[0] == fact_merge.BATCH and len(batches) == 3  # two batches, then nothing left
    assert any("under 204 USD" in r["text"] for r in fact_merge.live_facts(store))  # merged all the same


# -- CJK words the trigram index cannot see --------------------------------------------

def test_cjk_messages_glob_holds_the_same_characters_as_recall_s_cjk_runs():
    """The store's test for "holds CJK text" (a GLOB class in the schema) and recall's CJK runs
    (a regex) must agree on every range edge, or a message would be left out of the search."""
    import re
    import sqlite3

    from ctxd.memory.recall import ranked
    from ctxd.memory.store import schema

    runs, db = re.compile(ranked._CJK_RUN), sqlite3.connect(":memory:")
    edges = [int(x, 16) for x in re.findall(r"\\u([0-9a-f]{4})", ranked._CJK_RUN)]
    for code in sorted({c + d for c in edges for d in (-1, 0, 1)}):
        text = f"x{chr(code)}y"
        assert bool(runs.search(text)) == db.execute("SELECT ? GLOB ?", (text, schema.CJK_GLOB)).fetchone()[0], hex(code)


def test_containing_finds_cjk_words_in_added_edited_and_migrated_messages(tmp_path):
    """``containing`` reads only the messages holding CJK text (``cjk_messages``, kept by
    triggers): it finds what a scan of every message finds after adds, edits that add or take
    away Chinese, deletions, and in a store written before the table existed (the migration
    fills it)."""
    def scan(s, words, limit):
        rows = s.db.execute("SELECT id, content FROM messages ORDER BY id DESC").fetchall()
        return {w: [i for i, c in rows if w in c][:limit] for w in words}

    words = ["部署", "测试", "周末", "日志"]
    texts = ["部署脚本在周末失败了", "the deploy failed again", "测试通过，日志在 /tmp", "カタカナ and 测试",
             "plain English only", "周末 we ship"] * 5
    with Store(str(tmp_path / "ctx")) as s:
        ids = s.add_many([dict(kind="prompt", content=t, session="s", dedup=f"d{i}") for i, t in enumerate(texts)])
        assert s.containing(words, 4) == scan(s, words, 4) and s.containing(words, 99) == scan(s, words, 99)
        with s.transaction() as db:
            db.execute("UPDATE messages SET content = '没有日志' WHERE id = ?", (ids[1],))  # English -> Chinese
            db.execute("UPDATE messages SET content = 'no longer Chinese' WHERE id = ?", (ids[0],))
            db.execute("DELETE FROM messages WHERE id = ?", (ids[2],))
        assert s.containing(words, 99) == scan(s, words, 99)
        assert ids[1] in s.containing(["日志"], 99)["日志"] and ids[0] not in s.containing(["部署"], 99)["部署"]
        assert s.db.execute("SELECT count(*) FROM cjk_messages").fetchone()[0] == sum(
            1 for (c,) in s.db.execute("SELECT content FROM messages") if not c.isascii())
        with s.transaction() as db:  # as a store of schema 12 was: no table, no triggers
            db.execute("DROP TABLE cjk_messages")
            for t in ("messages_ai_cjk", "messages_au_cjk", "messages_ad_cjk"):
                db.execute(f"DROP TRIGGER {t}")
            db.execute("PRAGMA user_version = 12")
        expected = scan(s, words, 99)
    with Store(str(tmp_path / "ctx")) as s:
        assert s.db.execute("PRAGMA user_version").fetchone()[0] == 13
        assert s.containing(words, 99) == expected and any(expected.values())
