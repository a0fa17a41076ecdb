"""The conversation store against real SQLite files and real processes."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from ctxd.errors import ExitCode
from ctxd.memory.text.redact import Redactor
from ctxd.memory.store.db import Store, recover
from ctxd.memory.store.errors import StoreCorrupt, StoreError
from ctxd.memory.store.schema import SCHEMA_VERSION
from ctxdtest import ctxd

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_files_private_and_schema_versioned(tmp_path):
    s = Store(str(tmp_path / "ctx"), redactor=Redactor(), offload_threshold=100)
    s.add("tool", "x" * 500)
    s.close()
    assert oct(os.stat(tmp_path / "ctx").st_mode & 0o777) == "0o700"
    for f in os.listdir(tmp_path / "ctx"):
        p = tmp_path / "ctx" / f
        if p.is_file():
            assert oct(p.stat().st_mode & 0o777) == "0o600", f
    out = tmp_path / "ctx" / "outputs"
    assert oct(out.stat().st_mode & 0o777) == "0o700"
    assert all(oct(p.stat().st_mode & 0o777) == "0o600" for p in out.iterdir())
    db = sqlite3.connect(tmp_path / "ctx" / "store.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_newer_schema_is_refused(tmp_path):
    Store(str(tmp_path)).close()
    db = sqlite3.connect(tmp_path / "store.db")
    db.execute("PRAGMA user_version = 99")
    db.close()
    with pytest.raises(StoreError, match="newer ctxd"):
        Store(str(tmp_path))


def test_offload_preview_and_secret_never_written(tmp_path):
    s = Store(str(tmp_path), redactor=Redactor(), offload_threshold=1000)
    big = "HEAD " + "sk-abcdefghijklmnopqrstuvwx1234 " + "z" * 5000 + " TAIL"
    mid = s.add("tool", big)
    m = s.get(mid)
    assert m.output_path and m.output_chars == len(Redactor()(big)[0])
    assert m.content.startswith("HEAD ") and m.content.endswith(" TAIL") and len(m.content) < 2500
    assert m.output_path in m.content
    data = open(m.output_path).read()
    assert "sk-abcdefghijklmnopqrstuvwx1234" not in data and "[REDACTED:openai-key]" in data
    assert s.forget(mid=mid) == 1 and not os.path.exists(m.output_path)


def test_dedup_and_search_cjk(tmp_path):
    s = Store(str(tmp_path))
    assert s.add("user", "预算不超过三万美元", dedup="a") is not None
    assert s.add("user", "different", dedup="a") is None
    assert s.count() == 1
    assert [m.content for m in s.search("不超过")] == ["预算不超过三万美元"]
    assert [m.content for m in s.search("预算")] == ["预算不超过三万美元"]  # 2 chars: LIKE fallback
    assert s.search("100%") == []


def test_forget_variants(tmp_path):
    s = Store(str(tmp_path))
    s.add("user", "old", ts=1000.0, session="a")
    s.add("user", "new", session="b")
    s.add("user", "newer", session="b")
    assert s.forget(before=2000.0) == 1
    assert s.forget(session="b") == 2
    assert s.count() == 0


WRITER = r"""
import sys
sys.path.insert(0, {repo!r})
from ctxd.memory.store.db import Store
s = Store({d!r})
for i in range({n}):
    s.add("user", f"w{{sys.argv[1]}}-{{i}}", session=sys.argv[1])
"""


def test_eight_concurrent_writers_lose_and_duplicate_nothing(tmp_path):
    d = str(tmp_path / "ctx")
    Store(d).close()
    code = WRITER.format(repo=REPO, d=d, n=500)
    procs = [subprocess.Popen([sys.executable, "-c", code, str(w)]) for w in range(8)]
    assert [p.wait(timeout=300) for p in procs] == [0] * 8
    s = Store(d)
    rows = [m.content for m in s.iter_all()]
    assert len(rows) == 4000 and len(set(rows)) == 4000
    for w in range(8):
        assert sorted(int(m.content.split("-")[1]) for m in s.iter_all(session=str(w))) == list(range(500))


def test_sigkill_mid_write_leaves_a_store_that_opens(tmp_path):
    d = str(tmp_path / "ctx")
    Store(d).close()
    code = WRITER.format(repo=REPO, d=d, n=10**6)
    p = subprocess.Popen([sys.executable, "-c", code, "k"])
    deadline = time.time() + 60
    while time.time() < deadline:  # let it write for a while
        time.sleep(0.2)
        try:
            if Store(d).count() > 300:
                break
        except Exception:
            pass
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    s = Store(d)
    assert s.integrity() == "ok"
    got = sorted(int(m.content.split("-")[1]) for m in s.iter_all())
    assert got == list(range(len(got)))  # a prefix: nothing in the middle lost
    assert s.add("user", "after") is not None


def test_corrupt_store_is_reported_then_recovered_never_recreated(tmp_path):
    d = tmp_path / "ctx"
    s = Store(str(d))
    for i in range(2000):
        s.add("user", f"message {i} " + "p" * 200)
    s.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    # the messages table's pages in the middle (where the tables' pages interleave depends on the schema)
    leaves = [r[0] for r in s.db.execute("SELECT pageno FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf' "
                                         "ORDER BY pageno")]
    page_size = s.db.execute("PRAGMA page_size").fetchone()[0]
    s.close()
    db = d / "store.db"
    with open(db, "r+b") as f:  # damage pages in the middle, keep the header
        f.seek((leaves[len(leaves) // 2] - 1) * page_size)
        f.write(os.urandom(8192))
    original = db.read_bytes()
    try:
        s = Store(str(d))
        s.count()
        list(s.iter_all())
        corrupt_seen = s.integrity() != "ok"
    except (StoreCorrupt, sqlite3.DatabaseError):
        corrupt_seen = True
    assert corrupt_seen
    assert db.read_bytes() == original  # opening never rewrites a damaged store
    r = recover(str(d))
    n, lost, backup = r.salvaged, r.unreadable, r.backup
    assert os.path.exists(backup) and open(backup, "rb").read() == original
    assert 0 < n < 2000 or lost > 0
    s = Store(str(d))
    assert s.integrity() == "ok" and s.count() == n


def test_header_garbage_raises_store_corrupt_with_recovery_hint(tmp_path):
    (tmp_path / "store.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreCorrupt) as e:
        Store(str(tmp_path))
    assert "ctxd chat recover" in e.value.message
    assert (tmp_path / "store.db").read_bytes() == b"this is not sqlite" * 100


def test_chat_cli_round_trip(tmp_path):
    (tmp_path / "pyproject.toml").touch()
    assert ctxd("chat", "add", "the budget is at most 25,000 USD", cwd=tmp_path).stdout.strip() == "1"
    assert ctxd("chat", "add", "--role", "assistant", "-", cwd=tmp_path, input="noted 你好").returncode == 0
    big = "L" * 20000
    assert ctxd("chat", "add", "--role", "tool", "-", cwd=tmp_path, input=big).returncode == 0
    log = ctxd("chat", "log", "--json", cwd=tmp_path).stdout.splitlines()
    assert [json.loads(l)["role"] for l in log] == ["user", "assistant", "tool"]
    assert ctxd("chat", "output", "3", cwd=tmp_path).stdout.rstrip("\n") == big
    assert ctxd("chat", "output", "3", "--range", "5:8", cwd=tmp_path).stdout == "LLL\n"
    hits = ctxd("chat", "search", "25,000", "--json", cwd=tmp_path).stdout.splitlines()
    assert len(hits) == 1 and json.loads(hits[0])["id"] == 1
    exported = [json.loads(l) for l in ctxd("chat", "export", cwd=tmp_path).stdout.splitlines()]
    assert exported[1] == {**exported[1], "role": "assistant", "content": "noted 你好"}
    info = json.loads(ctxd("show", "--json", cwd=tmp_path).stdout)
    md = open(os.path.join(info["context_dir"], "context.md")).read()
    assert "the budget is at most 25,000 USD" in md and "ctxd chat output 3" in md
    p = ctxd("chat", "forget", "--all", cwd=tmp_path)
    assert p.returncode == ExitCode.USAGE and p.stderr.startswith("ctxd: --all")
    assert ctxd("chat", "forget", "--all", "--yes", cwd=tmp_path).stdout.strip() == "ctxd: forgot 3 messages"
    p = ctxd("chat", "add", "--importance", "2", "x", cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    p = ctxd("chat", "output", "99", cwd=tmp_path)
    assert p.returncode == 4 and p.stderr.strip() == "ctxd: no message #99"


def test_project_store_is_git_excluded(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".contextrc").write_text('[context]\nstore = "project"\n')
    assert ctxd("allow", cwd=tmp_path).returncode == 0
    assert ctxd("chat", "add", "hi", cwd=tmp_path).returncode == 0
    assert (tmp_path / ".ctxd" / "store.db").exists()
    assert "/.ctxd/" in (tmp_path / ".git/info/exclude").read_text()
    st = subprocess.run(["git", "status", "--porcelain"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert ".ctxd" not in st


def test_recover_of_a_file_that_is_not_sqlite_keeps_it_and_starts_clean(tmp_path):
    (tmp_path / "store.db").write_bytes(b"garbage, not sqlite" * 1000)
    r = recover(str(tmp_path))
    n, backup = r.salvaged, r.backup
    assert n == 0 and open(backup, "rb").read() == b"garbage, not sqlite" * 1000
    assert Store(str(tmp_path)).integrity() == "ok"


def test_order_is_when_it_happened_not_when_it_was_imported(tmp_path):
    """Two sessions imported newest first: the recent turns, the last session and the summary's
    dates follow the messages' own times."""
    from ctxd.memory.context import engine

    s = Store(str(tmp_path / "ctx"))
    day = 86400
    later = [dict(kind="prompt", content=f"later session prompt {i}", session="b", ts=1_770_000_000 + day + i,
                  dedup=f"b{i}") for i in range(30)]
    earlier = [dict(kind="prompt", content=f"earlier session prompt {i}", session="a", ts=1_770_000_000 + i,
                    dedup=f"a{i}") for i in range(30)]
    s.add_many(later)
    s.add_many(earlier)  # imported last, happened first
    assert [m.content for m in s.recent(2)] == ["later session prompt 28", "later session prompt 29"]
    assert s.last_session() == "b" and s.sessions() == ["b", "a"]
    ctx = engine.assemble(s, budget=300, mode="hybrid")
    assert ctx.recent[-1].content == "later session prompt 29"
    summary = next(p.text for p in ctx.parts if p.name == "summary")
    assert "2026-02-02 to 2026-02-03" in summary  # not "2026-02-03 to 2026-02-02"
    assert "Initial request: earlier session prompt 0" in summary
    s.close()
