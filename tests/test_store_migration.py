"""Migration of stores written by the previous ctxd (schema 4) to the typed model (schema 5).

tests/data/stores/v4-real-imports.db was written by ctxd at commit 78bd3ba (schema 4)
importing three real transcripts from ../shared/data/real-transcripts (Claude
tool_heavy.jsonl, a Codex rollout, a Gemini session) plus one `chat add` message.
"""

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from ctxd.memory.store import items
from ctxd.memory.store.db import Store
from ctxd.memory.store.errors import StoreError
from ctxd.memory.store.schema import SCHEMA_VERSION

FIXTURE = os.path.join(os.path.dirname(__file__), "data", "stores", "v4-real-imports.db")


def _copy(tmp_path):
    d = tmp_path / "ctx"
    d.mkdir()
    shutil.copy(FIXTURE, d / "store.db")
    return d


def _raw(path):
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    return db


def test_fixture_is_schema_4():
    db = _raw(FIXTURE)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 4
    assert "kind" not in [r[1] for r in db.execute("PRAGMA table_info(messages)")]


def test_v4_store_migrates_with_nothing_lost(tmp_path):
    d = _copy(tmp_path)
    before = {r["id"]: dict(r) for r in _raw(d / "store.db").execute("SELECT * FROM messages")}
    with Store(str(d)) as st:
        assert st.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 13
        after = {r["id"]: dict(r) for r in st.db.execute("SELECT * FROM messages")}
        # every row is still there, with its session, role, time, source and dedup key
        assert set(after) == set(before) and len(after) == 384
        for mid, old in before.items():
            new = after[mid]
            for k in ("session", "role", "ts", "source", "dedup", "importance"):
                assert new[k] == old[k], (mid, k)
            assert new["kind"] in items.KINDS, (mid, new["kind"])
            assert items.ROLE_OF[new["kind"]] == new["role"] or new["legacy"] or new["kind"] == "meta", (mid, new)
            if new["content"] != old["content"]:
                assert not new["legacy"]  # content is only rewritten for what was re-parsed
        # the old importers' flattened tool calls are tool calls with their arguments now
        flattened = [mid for mid, old in before.items()
                     if old["content"].startswith(("[tool_use ", "[tool_call "))]
        assert len(flattened) == 154
        for mid in flattened:
            new = after[mid]
            assert new["kind"] == "tool_call", new
            assert new["tool"], new
            assert not new["content"].startswith(("[tool_use ", "[tool_call ")), new["content"]
        # a prompt stays a prompt; an interrupt Claude Code injected is not the user's words
        typed = [r for r in after.values() if r["content"] == "remember: the deploy window is 14:00 UTC"]
        assert len(typed) == 1 and typed[0]["kind"] == "prompt"
        interrupts = [r for r in after.values() if r["content"].startswith("[Request interrupted")]
        assert interrupts and all(r["kind"] == "meta" for r in interrupts)
        # the full-text index follows the rewritten contents
        st.db.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")
        assert st.search("deploy window")
    # opening again is a no-op
    with Store(str(d)) as st:
        assert {r["id"]: dict(r) for r in st.db.execute("SELECT * FROM messages")} == after


def test_migration_killed_halfway_leaves_the_old_store(tmp_path):
    """A real process is SIGKILLed in the middle of the migration: the store stays schema 4
    with every row as it was, and the next open migrates it fully."""
    d = _copy(tmp_path)
    digest = hashlib.sha256(repr(sorted(tuple(r) for r in _raw(d / "store.db").execute(
        "SELECT * FROM messages"))).encode()).hexdigest()
    code = f"""
import os, signal, sqlite3
real = sqlite3.connect
seen = [0]
def connect(*a, **kw):
    db = real(*a, **kw)
    def trace(sql):
        if sql.startswith("UPDATE messages SET kind"):
            seen[0] += 1
            if seen[0] == 200:  # half of the rows have their kinds: die here
                os.kill(os.getpid(), signal.SIGKILL)
    db.set_trace_callback(trace)
    return db
sqlite3.connect = connect
from ctxd.memory.store.db import Store
Store({str(d)!r})
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == -9, (p.returncode, p.stderr)
    db = _raw(d / "store.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == 4
    assert "kind" not in [r[1] for r in db.execute("PRAGMA table_info(messages)")]
    again = hashlib.sha256(repr(sorted(tuple(r) for r in db.execute("SELECT * FROM messages"))).encode()).hexdigest()
    assert again == digest
    db.close()
    with Store(str(d)) as st:
        assert st.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert st.db.execute("SELECT count(*) FROM messages WHERE kind = ''").fetchone()[0] == 0
        assert st.count() == 384


def test_store_from_a_newer_ctxd_is_refused_untouched(tmp_path):
    d = _copy(tmp_path)
    db = _raw(d / "store.db")
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()
    data = (d / "store.db").read_bytes()
    with pytest.raises(StoreError) as e:
        Store(str(d))
    assert "newer ctxd" in e.value.message and "\n" not in e.value.message
    assert (d / "store.db").read_bytes() == data


def test_typed_fields_round_trip(tmp_path):
    with Store(str(tmp_path / "ctx")) as st:
        ids = st.add_many([
            dict(kind="prompt", content="fix the parser", session="s", source="claude", dedup="a"),
            dict(kind="tool_call", content="Edit src/parse.py", tool="Edit", call_id="toolu_1",
                 data={"args": {"file_path": "src/parse.py"}, "paths": ["src/parse.py"], "command": None},
                 session="s", source="claude", dedup="b"),
            dict(kind="tool_result", content="ok", tool="Edit", call_id="toolu_1",
                 data={"is_error": False, "exit_code": None, "size": 2}, session="s", source="claude", dedup="c"),
            dict(role="assistant", content="done", session="s", dedup="d"),
        ])
        got = [st.get(i) for i in ids]
        assert [m.kind for m in got] == ["prompt", "tool_call", "tool_result", "reply"]
        assert [m.role for m in got] == ["user", "assistant", "tool", "assistant"]
        assert got[1].data["paths"] == ["src/parse.py"] and got[1].call_id == got[2].call_id == "toolu_1"
        assert got[2].data["is_error"] is False
        assert got[1].to_json()["kind"] == "tool_call"
        with pytest.raises(StoreError):
            st.add_many([dict(kind="thought", content="x")])


def test_secrets_in_tool_arguments_are_redacted(tmp_path):
    from ctxd.memory.text import redact

    with Store(str(tmp_path / "ctx"), redactor=redact.from_config({})) as st:
        secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
        (mid,) = st.add_many([dict(kind="tool_call", content=f"Bash: curl -H 'token {secret}'", tool="Bash",
                                   data={"args": {"command": f"curl -H 'token {secret}'"}, "paths": [],
                                         "command": f"curl -H 'token {secret}'"})])
        row = st.db.execute("SELECT content, data FROM messages WHERE id = ?", (mid,)).fetchone()
        assert secret not in row["content"] and secret not in row["data"]
