"""Importers (ctxd.agents, ctxd.memory.ingest.importing) against the contract samples, and `ctxd chat import`."""

import json
import os
import pty
import shutil
import sqlite3
import subprocess
import sys

import pytest

from ctxd import agents
from ctxd.agents import claude, codex_rollout, gemini
from ctxd.agents.base import Forget, Malformed, ParseCursor, ReadFromStart
from ctxd.agents.claude import claude_prompt_dedup
from ctxd.agents.common import timestamp
from ctxd.memory.ingest import importing as im
from ctxd.memory.ingest.importing import import_file, import_transcript
from ctxd.memory.store import items
from ctxd.memory.text.redact import Redactor
from ctxd.memory.store.db import Store
from ctxdtest import ctxd

CONTRACTS = os.path.join(os.path.dirname(__file__), "contracts")
CLAUDE_SID = "7d3f0c2a-5b1e-4c8d-9a6f-2e4b8c1d0f3a"
CLAUDE = os.path.join(CONTRACTS, "claude", f"{CLAUDE_SID}.jsonl")
CODEX_SID = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
CODEX = os.path.join(CONTRACTS, "codex", f"rollout-2025-09-12T08-00-00-{CODEX_SID}.jsonl")
GEMINI_SID = "5b2f8e1a-3c4d-4e5f-9a8b-7c6d5e4f3a2b"
GEMINI = os.path.join(CONTRACTS, "gemini", "session-2025-10-01T09-00-5b2f8e1a.jsonl")
AIDER = os.path.join(CONTRACTS, "aider", ".aider.chat.history.md")
OPENAI = os.path.join(CONTRACTS, "jsonl", "openai.jsonl")
REDACTED = "[REDACTED:openai-key]"


@pytest.fixture
def store(tmp_path):
    s = Store(str(tmp_path / "ctx"), redactor=Redactor())
    yield s
    s.close()


def rows(store):
    return [(m.kind, m.content) for m in store.iter_all()]


def typed(store, *kinds):
    """(kind, tool, call_id, subtype, data) of the stored items of those kinds."""
    return [(m.kind, m.tool, m.call_id, m.subtype, m.data) for m in store.iter_all() if not kinds or m.kind in kinds]


def parsed(parser, path):
    """What a parser yields for *path*: the records, and the line numbers of the malformed lines."""
    with open(path, "rb") as f:
        out = list(parser(f, ParseCursor(path)))
    return [r for r in out if isinstance(r, dict)], [r.line_no for r in out if isinstance(r, Malformed)]


def llm_db(tmp_path, schema):
    path = tmp_path / f"logs-{schema}.db"
    db = sqlite3.connect(path)
    with open(os.path.join(CONTRACTS, "llm", f"logs-{schema}.sql"), encoding="utf-8") as f:
        db.executescript(f.read())
    db.commit()
    db.close()
    return str(path)


# -- the samples, record by record ------------------------------------------------

CLAUDE_ROWS = [
    ("summary", "Fix the flaky date parser test"),
    ("prompt", "The date parser test fails on CI but not locally. 日期解析测试在 CI 上失败了，帮我看看？"),
    ("reply", "I'll look at the test first."),
    ("tool_call", "Read /home/dev/proj/tests/test_dates.py"),
    ("tool_result", "     1\tdef test_parse():\n     2\t    assert parse('2025-01-01').hour == 0\n"),
    ("tool_call", "Bash: TZ=UTC pytest tests/test_dates.py -q"),
    ("tool_result", "FAILED tests/test_dates.py::test_parse - assert 8 == 0\n1 failed in 0.05s"),
    ("reply", "The test assumes the local timezone; parse() should return UTC. Shall I fix parse()?"),
    ("prompt", "continue"),
    ("reply", "Fixed: parse() now attaches timezone.utc."),
    ("prompt", "continue"),
    ("reply", "All 14 tests pass."),
    ("summary", "This session is being continued from a previous conversation. Summary: parse() "
                "returned local time; fixed to UTC; all tests pass."),
    ("tool_call", "Bash: cat .env"),
    ("tool_result", f"OPENAI_API_KEY={REDACTED}\nDEBUG=1"),
]
CLAUDE_TYPED = [  # the calls and results, with their fields
    ("tool_call", "Read", "toolu_01Read", None,
     {"args": {"file_path": "/home/dev/proj/tests/test_dates.py"}, "paths": ["/home/dev/proj/tests/test_dates.py"],
      "command": None}),
    ("tool_result", "Read", "toolu_01Read", None, {"is_error": False, "exit_code": None, "size": 73}),
    ("tool_call", "Bash", "toolu_01Bash", None,
     {"args": {"command": "TZ=UTC pytest tests/test_dates.py -q", "description": "Run the date tests in UTC"},
      "paths": [], "command": "TZ=UTC pytest tests/test_dates.py -q"}),
    ("tool_result", "Bash", "toolu_01Bash", None, {"is_error": True, "exit_code": None, "size": 72}),
    ("tool_call", "Bash", "toolu_01Env", None, {"args": {"command": "cat .env"}, "paths": [], "command": "cat .env"}),
    ("tool_result", "Bash", "toolu_01Env", None, {"is_error": False, "exit_code": None, "size": 63}),
]


def test_claude_transcript(store):
    r = import_file(store, CLAUDE)
    assert r.format == "claude"
    assert rows(store) == CLAUDE_ROWS
    assert typed(store, "tool_call", "tool_result") == CLAUDE_TYPED
    assert [(m.kind, m.subtype) for m in store.iter_all() if m.kind == "summary"] == [
        ("summary", "title"), ("summary", "compaction")]
    assert (r.added, r.present, r.malformed, r.malformed_lines) == (15, 0, 2, [10, 19])
    msgs = list(store.iter_all())
    assert [m.role for m in msgs] == [items.ROLE_OF[m.kind] for m in msgs]
    assert {m.session for m in msgs} == {CLAUDE_SID}
    assert {m.source for m in msgs} == {"claude"}
    keys = [row[0] for row in store.db.execute("SELECT dedup FROM messages ORDER BY id")]
    assert keys[0] == f"claude:{CLAUDE_SID}:summary:0b6b7c1e-0000-4000-8000-000000000001"
    assert keys[1] == claude_prompt_dedup(CLAUDE_SID, CLAUDE_ROWS[1][1], 1)
    assert keys[2] == f"claude:{CLAUDE_SID}:c1a0e5d2-1111-4111-8111-000000000003:1"  # block 0 was thinking
    assert keys[8] == claude_prompt_dedup(CLAUDE_SID, "continue", 1)
    assert keys[10] == claude_prompt_dedup(CLAUDE_SID, "continue", 2)
    assert msgs[1].ts == pytest.approx(1756800845.512)  # 2025-09-02T08:14:05.512Z


def test_claude_subagent_transcript_keeps_its_sidechain_lines(store, tmp_path):
    path = tmp_path / "agent-5f3e2a1b.jsonl"
    shutil.copy(CLAUDE, path)
    import_file(store, str(path))
    assert ("reply", "(sub-agent) searching for other local-time uses") in rows(store)
    assert len(rows(store)) == 16


def test_claude_detected_after_snapshot_lines(tmp_path):
    lines = _lines_of(CLAUDE)
    path = tmp_path / "t.jsonl"
    path.write_bytes(lines[1] * 60 + lines[3])
    assert im.detect_format(str(path)) == "claude"


def test_claude_prompt_dedup_formula():
    import hashlib

    digest = hashlib.sha256("continue".encode()).hexdigest()[:16]
    assert claude_prompt_dedup("S", "continue", 3) == f"claude:S:prompt:{digest}:3"
    assert claude_prompt_dedup("S", "  continue\n", 3) == claude_prompt_dedup("S", "continue", 3)


def test_claude_prompt_recorded_by_the_hook_is_not_stored_twice(store):
    store.add("user", "continue", session=CLAUDE_SID, source="claude",
              dedup=claude_prompt_dedup(CLAUDE_SID, "continue", 1))
    r = import_file(store, CLAUDE)
    assert (r.added, r.present) == (14, 1)
    assert [c for role, c in rows(store) if c == "continue"] == ["continue", "continue"]


CODEX_ROWS = [
    ("prompt", "Add a --dry-run flag to the sync command"),
    ("tool_call", "shell: rg -l 'def sync' src"),
    ("tool_result", "src/sync.py\n"),
    ("tool_call", "apply_patch: Update src/sync.py"),
    ("tool_result", "Success. Updated the following files:\nM src/sync.py\n"),
    ("reply", "Added `--dry-run`: sync() now lists what it would copy without copying."),
    ("prompt", "谢谢，再加一个测试"),
    ("reply", "好的，已添加测试 test_sync_dry_run。"),
]
CODEX_PATCH = "*** Begin Patch\n*** Update File: src/sync.py\n@@\n-def sync(src, dst):\n" \
              "+def sync(src, dst, dry_run=False):\n*** End Patch\n"
CODEX_TYPED = [
    ("tool_call", "shell", "call_Xk3m", None,
     {"args": {"command": ["bash", "-lc", "rg -l 'def sync' src"], "workdir": "/home/dev/proj"}, "paths": [],
      "command": "rg -l 'def sync' src"}),
    ("tool_result", "shell", "call_Xk3m", None, {"is_error": False, "exit_code": 0, "size": 12}),
    ("tool_call", "apply_patch", "call_P9q2", None, {"args": CODEX_PATCH, "paths": ["src/sync.py"], "command": None}),
    ("tool_result", "apply_patch", "call_P9q2", None, {"is_error": False, "exit_code": 0, "size": 52}),
]


CODEX_T1, CODEX_T2 = "019a0c11-2a3b-7c4d-8e5f-6a7b8c9d0e1f", "019a0c12-5d6e-7f80-9a1b-2c3d4e5f6a7b"
CODEX_KEYS = [f"codex:{CODEX_SID}:{CODEX_T1}:user:0", f"codex:{CODEX_SID}:9", f"codex:{CODEX_SID}:10",
              f"codex:{CODEX_SID}:12", f"codex:{CODEX_SID}:13", f"codex:{CODEX_SID}:{CODEX_T1}:assistant",
              f"codex:{CODEX_SID}:{CODEX_T2}:user:0", f"codex:{CODEX_SID}:{CODEX_T2}:assistant"]


def test_codex_rollout(store):
    r = import_file(store, CODEX)
    assert r.format == "codex"
    assert rows(store) == CODEX_ROWS
    assert typed(store, "tool_call", "tool_result") == CODEX_TYPED
    assert (r.added, r.malformed, r.malformed_lines) == (8, 2, [16, 17])
    assert {m.session for m in store.iter_all()} == {CODEX_SID}
    # in turns with an id, prompts and the turn's last answer get the keys the Codex hooks and notify use
    assert [row[0] for row in store.db.execute("SELECT dedup FROM messages ORDER BY id")] == CODEX_KEYS


@pytest.mark.parametrize("cut", [6, 7, 13, 14, 19, 20])
def test_incremental_codex_keeps_turn_keys(store, tmp_path, cut):
    lines = _lines_of(CODEX)
    path = tmp_path / os.path.basename(CODEX)
    path.write_bytes(b"".join(lines[:cut]))
    import_transcript(store, str(path), "codex")
    path.write_bytes(b"".join(lines))
    import_transcript(store, str(path), "codex")
    assert rows(store) == CODEX_ROWS
    keys = [row[0] for row in store.db.execute("SELECT dedup FROM messages ORDER BY id")]
    assert keys == CODEX_KEYS


GEMINI_ROWS = [
    ("prompt", "Why does `make test` hang on macOS?"),
    ("reply", "Let me check the Makefile."),
    ("tool_call", "read_file /home/dev/proj/Makefile"),
    ("tool_result", "test:\n\tpytest -n auto\n"),
    ("reply", "`pytest -n auto` starts one worker per core; on macOS the spawn start method makes each import "
              "the app, which waits on a lock."),
    ("prompt", "用 -n 2 代替 auto 可以吗？"),
    ("reply", "可以。`-n 2` 只启动两个进程，不会再卡住。"),
    ("meta", "[API Error: 429 Resource exhausted]"),
]
GEMINI_CALL = "read_file-1759309205000-a1"
GEMINI_TYPED = [
    ("tool_call", "read_file", GEMINI_CALL, None,
     {"args": {"absolute_path": "/home/dev/proj/Makefile"}, "paths": ["/home/dev/proj/Makefile"], "command": None}),
    ("tool_result", "read_file", GEMINI_CALL, None, {"is_error": False, "exit_code": None, "size": 22}),
    ("meta", None, None, "error", None),
]


def test_gemini_session(store):
    r = import_file(store, GEMINI)
    assert r.format == "gemini"
    # m2 written three times (upserts) counts once; m4 info and m12 warning skipped; m5, m6 rewound
    assert rows(store) == GEMINI_ROWS
    assert typed(store, "tool_call", "tool_result", "meta") == GEMINI_TYPED
    assert (r.added, r.malformed, r.malformed_lines) == (8, 2, [15, 16])
    assert {m.session for m in store.iter_all()} == {GEMINI_SID}
    keys = {row[0] for row in store.db.execute("SELECT dedup FROM messages")}
    assert f"gemini:{GEMINI_SID}:m1" in keys
    assert f"gemini:{GEMINI_SID}:m2:result:read_file-1759309205000-a1" in keys


def test_gemini_rewind_to_an_unknown_id_drops_everything_before(store, tmp_path):
    path = tmp_path / "session.jsonl"
    lines = open(GEMINI, encoding="utf-8").read().splitlines()
    path.write_text("\n".join(lines[:9] + ['{"$rewindTo":"nope"}', lines[12]]) + "\n", encoding="utf-8")
    import_file(store, str(path))
    assert rows(store) == [("prompt", "用 -n 2 代替 auto 可以吗？")]


AIDER_ROWS = [
    ("2024-05-01 10:00:00", "tool", "Aider v0.50.1\nMain model: gpt-4o with diff edit format\n"
                                    "Git repo: .git with 12 files\nRepo-map: using 1024 tokens"),
    ("2024-05-01 10:00:00", "user", "add a greet function to hello.py\nthat takes a name"),
    ("2024-05-01 10:00:00", "assistant", 'Here is the change:\n\nhello.py\n```python\n<<<<<<< SEARCH\n=======\n'
                                         'def greet(name):\n    return f"Hello, {name}!"\n>>>>>>> REPLACE\n```'),
    ("2024-05-01 10:00:00", "tool", "Tokens: 2.1k sent, 95 received. Cost: $0.0061 message, $0.0061 session.\n"
                                    "Applied edit to hello.py\nCommit 1a2b3c4 feat: add greet function"),
    ("2024-05-01 10:00:00", "user", "请把问候语改成中文"),
    ("2024-05-01 10:00:00", "assistant", 'hello.py\n```python\n<<<<<<< SEARCH\n    return f"Hello, {name}!"\n'
                                         '=======\n    return f"你好，{name}！"\n>>>>>>> REPLACE\n```'),
    ("2024-05-01 10:00:00", "tool", "Applied edit to hello.py"),
    ("2024-05-02 09:30:15", "tool", "Aider v0.50.1"),
    ("2024-05-02 09:30:15", "user", "/run pytest -q"),
    ("2024-05-02 09:30:15", "tool", "3 passed in 0.12s\nAdd command output to the chat? (Y)es/(N)o [Yes]: y"),
    ("2024-05-02 09:30:15", "user", "the tests pass, thanks"),
    ("2024-05-02 09:30:15", "assistant", "You're welcome! Let me know if you need anything else."),
]


def test_aider_history(store):
    r = import_file(store, AIDER)
    assert r.format == "aider"
    assert [(m.session, m.role, m.content) for m in store.iter_all()] == AIDER_ROWS
    assert [m.kind for m in store.iter_all()] == [items.kind_of_role(role) for _s, role, _c in AIDER_ROWS]
    assert (r.added, r.malformed) == (12, 0)


OPENAI_ROWS = [
    ("meta", "You are a terse shell assistant."),
    ("prompt", f"How do I list files by size? (my key is {REDACTED}, don't log it)"),
    ("reply", "Use `ls -lS`."),
    ("prompt", "用中文解释一下"),
    ("tool_call", "explain_flag flag=-S"),
    ("tool_result", "-S: sort by file size, largest first"),
    ("reply", "`ls -lS` 按文件大小从大到小列出文件。"),
    ("prompt", "thanks"),  # the last line, without its newline
]
OPENAI_TYPED = [
    ("meta", None, None, "system", None),
    ("tool_call", "explain_flag", "call_1", None, {"args": {"flag": "-S"}, "paths": [], "command": None}),
    ("tool_result", None, "call_1", None, {"is_error": False, "exit_code": None, "size": 36}),
]


def test_openai_jsonl(store):
    r = import_file(store, OPENAI)
    assert r.format == "jsonl"
    assert rows(store) == OPENAI_ROWS
    assert typed(store, "meta", "tool_call", "tool_result") == OPENAI_TYPED
    assert (r.added, r.malformed, r.malformed_lines) == (8, 3, [9, 10, 11])
    assert r.malformed_message("openai.jsonl") == "openai.jsonl: 3 malformed lines skipped (lines 9, 10, 11)"
    assert {m.session for m in store.iter_all()} == {"openai"}


def test_jsonl_reads_back_what_chat_export_writes(store, tmp_path):
    path = tmp_path / "export.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "hi", "session": "s1", "source": "cli",
                                "time": "2026-01-02T03:04:05Z", "importance": 0.9}) + "\n")
    import_file(store, str(path))
    (m,) = store.iter_all()
    assert (m.session, m.importance, m.ts) == ("s1", 0.9, pytest.approx(1767323045.0))


def test_llm_logs_db_before_032(store, tmp_path):
    r = import_file(store, llm_db(tmp_path, "0.31"))
    assert r.format == "llm"
    assert [(m.session, m.kind, m.content) for m in store.iter_all()] == [
        ("01j9x2k4m5n6p7q8r9s0t1v2w3", "prompt", "Ten names for a pet pelican"),
        ("01j9x2k4m5n6p7q8r9s0t1v2w3", "reply",
         "Pelly, Scoop, Gulliver, Pouch, Captain Beak, Skipper, Splash, Marina, Flap, Admiral"),
        ("01j9x2k4m5n6p7q8r9s0t1v2w3", "prompt", "Which one is the funniest?"),
        ("01j9x2k4m5n6p7q8r9s0t1v2w3", "reply", "Captain Beak."),
        ("01j9x3a1b2c3d4e5f6g7h8j9k0", "meta", "You are a translator."),  # responses.system
        ("01j9x3a1b2c3d4e5f6g7h8j9k0", "prompt", "把这句话翻译成英文：今天天气很好"),
        ("01j9x3a1b2c3d4e5f6g7h8j9k0", "reply", "The weather is nice today."),
    ]
    keys = [row[0] for row in store.db.execute("SELECT dedup FROM messages ORDER BY id")]
    assert keys[:2] == ["llm:01j9x2k4m5n6p7q8r9s0t1v2w3:user", "llm:01j9x2k4m5n6p7q8r9s0t1v2w3:assistant"]
    assert list(store.iter_all())[0].ts == pytest.approx(1728136991.204531)


def test_llm_logs_db_message_store(store, tmp_path):
    r = import_file(store, llm_db(tmp_path, "0.32"))
    t1, t2 = "01k1thread10000000000000000", "01k1thread20000000000000000"
    CALL = "call_9"
    assert [(m.session, m.kind, m.content) for m in store.iter_all()] == [
        (t1, "meta", "You name pets."),
        (t1, "prompt", "Suggest a name for a pet pelican"),
        (t1, "reply", "Captain Pouch"),  # the reasoning part is left out
        (t1, "prompt", "现在几点？"),
        (t1, "reply", "Let me check the time."),
        (t1, "tool_call", "llm_time"),
        (t1, "tool_result", '{"utc_time": "2026-07-30 10:00:00 UTC"}'),
        (t1, "reply", "现在是 UTC 时间 10:00。"),
        (t2, "prompt", "A shorter one?"),  # the fork's shared first messages are imported once
        (t2, "reply", "Pouch"),
        ("01h0legacy0000000000000000", "prompt", "Capital of France?"),  # legacy row; the dual-written one is not
        ("01h0legacy0000000000000000", "reply", "Paris."),
    ]
    assert typed(store, "meta", "tool_call", "tool_result") == [
        ("meta", None, None, "system", None),
        ("tool_call", "llm_time", CALL, None, {"args": {}, "paths": [], "command": None}),
        ("tool_result", "llm_time", CALL, None, {"is_error": False, "exit_code": None, "size": 39}),
    ]
    assert (r.added, r.present) == (12, 0)
    keys = [row[0] for row in store.db.execute("SELECT dedup FROM messages ORDER BY id")]
    assert keys[0] == "llm:msg:b2:s1"


@pytest.mark.parametrize("path,fmt", [(CLAUDE, "claude"), (CODEX, "codex"), (GEMINI, "gemini"), (AIDER, "aider"),
                                      (OPENAI, "jsonl")])
def test_detect_format(path, fmt):
    assert im.detect_format(path) == fmt


def test_detect_format_of_llm_and_unknown(tmp_path):
    assert im.detect_format(llm_db(tmp_path, "0.31")) == "llm"
    odd = tmp_path / "notes.txt"
    odd.write_text('{"hello": "world"}\nplain text\n')
    with pytest.raises(im.ImportFailed, match="cannot tell which tool wrote it"):
        im.detect_format(str(odd))
    fake = tmp_path / "logs.db"
    fake.write_text("not sqlite")
    with pytest.raises(im.ImportFailed, match="not a SQLite database"):
        im.detect_format(str(fake))


# -- idempotence, malformed lines, redaction --------------------------------------

@pytest.mark.parametrize("path", [CLAUDE, CODEX, GEMINI, AIDER, OPENAI, "llm-0.31", "llm-0.32"])
def test_importing_twice_adds_nothing(store, tmp_path, path):
    if path.startswith("llm-"):
        path = llm_db(tmp_path, path[4:])
    first = import_file(store, path)
    n = store.count()
    again = import_file(store, path)
    assert (again.added, again.present) == (0, first.added)
    assert store.count() == n
    assert again.malformed == first.malformed


def test_many_malformed_lines_are_listed_up_to_twenty(store, tmp_path):
    path = tmp_path / "bad.jsonl"
    lines = ['{"role": "user", "content": "ok"}'] + ["{broken"] * 25 + ['{"role": "assistant", "content": "fine"}']
    path.write_text("\n".join(lines) + "\n")
    r = import_file(store, str(path))
    assert (r.added, r.malformed) == (2, 25)
    assert r.malformed_lines == list(range(2, 22))
    assert r.malformed_message("bad.jsonl") == (
        "bad.jsonl: 25 malformed lines skipped (lines " + ", ".join(map(str, range(2, 22))) + ", ...)")


def test_one_malformed_line_message(store, tmp_path):
    path = tmp_path / "one.jsonl"
    path.write_text('{"role": "user", "content": "ok"}\n"just a string"\n')
    r = import_file(store, str(path))
    assert r.malformed_message("one.jsonl") == "one.jsonl: 1 malformed line skipped (line 2)"


def test_redaction_and_no_redaction(tmp_path):
    with Store(str(tmp_path / "a"), redactor=Redactor()) as redacting:
        import_file(redacting, OPENAI)
        assert "sk-proj-" not in "".join(c for _r, c in rows(redacting))
        assert REDACTED in rows(redacting)[1][1]
    with Store(str(tmp_path / "b"), redactor=None) as raw:
        import_file(raw, OPENAI)
        assert "sk-proj-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lm" in rows(raw)[1][1]


def test_session_override(store):
    import_file(store, CODEX, session="review")
    assert {m.session for m in store.iter_all()} == {"review"}


def test_a_file_that_cannot_be_opened(store, tmp_path):
    with pytest.raises(im.ImportFailed, match="cannot open it"):
        import_file(store, str(tmp_path / "missing.jsonl"), "claude")
    with pytest.raises(im.ImportFailed, match="cannot read it"):
        import_file(store, str(tmp_path / "missing.jsonl"))


def test_batches(store, tmp_path):
    path = tmp_path / "many.jsonl"
    with open(path, "w") as f:
        for i in range(1234):
            f.write(json.dumps({"role": "user" if i % 2 else "assistant", "content": f"message {i}"}) + "\n")
    seen, sizes = [], []
    add_many = store.add_many
    store.add_many = lambda batch, **kw: sizes.append(len(batch)) or add_many(batch, **kw)
    r = import_file(store, str(path), progress=seen.append)
    assert r.added == 1234 == store.count()
    assert sizes == [500, 500, 234]
    assert seen[-1] == os.path.getsize(path) and seen == sorted(seen) and len(seen) == 3


# -- incremental imports (the Stop/PreCompact hooks) ------------------------------

def _lines_of(path):
    with open(path, "rb") as f:
        return f.read().splitlines(keepends=True)


def test_incremental_claude(store, tmp_path):
    lines = _lines_of(CLAUDE)
    path = tmp_path / f"{CLAUDE_SID}.jsonl"
    # up to the first "continue" (line 12), plus half of line 13
    path.write_bytes(b"".join(lines[:12]) + lines[12][:40])
    added, malformed = import_transcript(store, str(path), "claude")
    assert (added, malformed) == (9, 1)
    assert rows(store) == CLAUDE_ROWS[:9]
    assert store.get_offset(str(path))[0] == len(b"".join(lines[:12]))  # not past the partial line
    assert import_transcript(store, str(path), "claude") == (0, 0)
    # the rest arrives: the partial line completes, the second "continue" gets k = 2
    path.write_bytes(b"".join(lines))
    added, malformed = import_transcript(store, str(path), "claude")
    assert (added, malformed) == (6, 1)
    assert rows(store) == CLAUDE_ROWS
    assert store.db.execute("SELECT count(*) FROM messages WHERE dedup = ?",
                            (claude_prompt_dedup(CLAUDE_SID, "continue", 2),)).fetchone()[0] == 1
    assert store.get_offset(str(path))[0] == os.path.getsize(path)


def test_incremental_after_truncation_or_rewrite(store, tmp_path):
    lines = _lines_of(CODEX)
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b"".join(lines))
    assert import_transcript(store, str(path), "codex") == (8, 2)
    # truncated (shrank): read again from the start, nothing duplicated
    path.write_bytes(b"".join(lines[:10]))
    assert import_transcript(store, str(path), "codex") == (0, 0)
    assert store.get_offset(str(path))[0] == os.path.getsize(path)
    # rewritten with another first line (same size or larger): from the start again
    other = [lines[0].replace(CODEX_SID.encode(), b"11111111-2222-3333-4444-555555555555")] + lines[1:]
    path.write_bytes(b"".join(other))
    added, _ = import_transcript(store, str(path), "codex")
    assert added == 8  # a new session id: new keys
    assert store.count() == 16


def test_incremental_gemini_rewind_forgets_what_was_imported(store, tmp_path):
    lines = _lines_of(GEMINI)
    path = tmp_path / "session-2025-10-01T09-00-5b2f8e1a.jsonl"
    path.write_bytes(b"".join(lines[:11]))  # up to m6, before the rewind
    import_transcript(store, str(path), "gemini")
    assert ("prompt", "Delete the whole tests folder then") in rows(store)
    path.write_bytes(b"".join(lines))
    added, malformed = import_transcript(store, str(path), "gemini")
    assert rows(store) == GEMINI_ROWS  # m5 and m6 are gone
    assert malformed == 2


def test_incremental_gemini_upsert_adds_the_tool_result(store, tmp_path):
    lines = _lines_of(GEMINI)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(lines[:5]))  # m2 with its tool call still executing
    import_transcript(store, str(path), "gemini")
    assert rows(store) == GEMINI_ROWS[:3]
    path.write_bytes(b"".join(lines[:8]))
    import_transcript(store, str(path), "gemini")
    assert rows(store) == GEMINI_ROWS[:5]


def test_incremental_jsonl_keeps_line_numbers(store, tmp_path):
    path = tmp_path / "chat.jsonl"
    one = json.dumps({"role": "user", "content": "same"}) + "\n"
    path.write_text(one)
    assert import_transcript(store, str(path), "jsonl") == (1, 0)
    path.write_text(one * 3)  # the same text on lines 2 and 3 is new
    assert import_transcript(store, str(path), "jsonl") == (2, 0)
    assert import_file(store, str(path)).added == 0


def test_incremental_nothing_yet(store, tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert import_transcript(store, str(path), "claude") == (0, 0)
    path.write_bytes(b'{"type":"user"')
    assert import_transcript(store, str(path), "claude") == (0, 0)


def test_peak_memory_stays_small_on_a_big_file(tmp_path):
    """A 100 MB transcript is streamed: the importer's peak RSS stays far below the file size."""
    path = tmp_path / "big.jsonl"
    filler = (b" " * 1023 + b"\n") * 1024  # 1 MB of blank lines (read and skipped, like any line)
    with open(path, "wb") as f:
        for i in range(100):
            f.write(json.dumps({"role": "user", "content": f"chunk {i} 大"}).encode() + b"\n")
            f.write(filler)
    # VmHWM (peak RSS of this address space), not getrusage's ru_maxrss: Linux keeps
    # ru_maxrss across exec, so a child forked from a big pytest process inherits its peak.
    code = ("import sys\n"
            "from ctxd.memory.store.db import Store\n"
            "from ctxd.memory.ingest.importing import import_file\n"
            "s = Store(sys.argv[2])\n"
            "r = import_file(s, sys.argv[1])\n"
            "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
            "print(r.added, hwm)\n")
    out = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "ctx")], capture_output=True,
                         text=True, check=True).stdout.split()
    assert int(out[0]) == 100
    assert int(out[1]) < 100 * 1024  # KB: well under 100 MB (the file is 100 MB)


# -- the command, as a whole process ----------------------------------------------

@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


def test_chat_import_command(project, tmp_path):
    missing = tmp_path / "missing.jsonl"
    p = ctxd("chat", "import", CLAUDE, str(missing), OPENAI, cwd=project)
    assert p.returncode == 4, p.stderr
    assert p.stdout.splitlines() == [
        f"{CLAUDE}: 15 added, 0 already present, 2 malformed (claude)",
        f"{OPENAI}: 8 added, 0 already present, 3 malformed (jsonl)",
    ]
    err = p.stderr.splitlines()
    assert f"ctxd: {CLAUDE}: 2 malformed lines skipped (lines 10, 19)" in err
    assert f"ctxd: {OPENAI}: 3 malformed lines skipped (lines 9, 10, 11)" in err
    assert any(line.startswith(f"ctxd: {missing}: cannot") for line in err)
    assert "%" not in p.stderr and "[#" not in p.stderr  # no progress bar off a terminal
    log = [json.loads(line) for line in ctxd("chat", "log", "-n", "100", "--json", cwd=project).stdout.splitlines()]
    assert len(log) == 23
    assert log[-1]["content"] == "thanks" and log[-1]["source"] == "jsonl"
    assert REDACTED in log[-7]["content"]
    from ctxd.memory.project import locate

    context_md = os.path.join(locate(str(project)).context_dir, "context.md")
    assert "thanks" in open(context_md, encoding="utf-8").read()
    again = ctxd("chat", "import", CLAUDE, OPENAI, cwd=project)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == f"{CLAUDE}: 0 added, 15 already present, 2 malformed (claude)"


def test_chat_import_options(project, tmp_path):
    sample = tmp_path / "chat.log"  # a name that tells nothing
    shutil.copy(OPENAI, sample)
    p = ctxd("chat", "import", str(sample), cwd=project)
    assert p.returncode == 0 and "(jsonl)" in p.stdout
    p = ctxd("chat", "import", "--session", "mine", str(sample), cwd=project)
    assert p.stdout.startswith(f"{sample}: 0 added, 8 already present")  # --session does not make it new
    p = ctxd("chat", "import", "--format", "jsonl", "--session", "mine", "--no-redact", OPENAI, cwd=project)
    assert p.returncode == 0, p.stderr
    log = [json.loads(line) for line in ctxd("chat", "log", "-n", "100", "--json", cwd=project).stdout.splitlines()]
    assert len(log) == 16
    assert {m["session"] for m in log[8:]} == {"mine"}
    assert "sk-proj-Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lm" in log[9]["content"]
    assert REDACTED in log[1]["content"]
    odd = tmp_path / "notes.txt"
    odd.write_text("hello\n")
    p = ctxd("chat", "import", str(odd), cwd=project)
    assert p.returncode == 2
    assert p.stderr.strip() == f"ctxd: {odd}: cannot tell which tool wrote it; name the format with --format"


def test_chat_import_progress_bar_on_a_terminal(project):
    master, slave = pty.openpty()
    try:
        e = dict(os.environ, PWD=str(project))
        p = subprocess.run([sys.executable, "-m", "ctxd", "chat", "import", CODEX], cwd=project, env=e,
                           stdout=subprocess.PIPE, stderr=slave, text=True, timeout=60)
        os.close(slave)
        slave = None
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    assert p.returncode == 0
    assert "8 added" in p.stdout
    text = out.decode("utf-8", "replace")
    assert os.path.basename(CODEX) in text and "100%" in text


REAL = os.path.join(CONTRACTS, "real")


def test_chat_export_jsonl_reimports_losslessly(project, tmp_path):
    """`ctxd chat export --format jsonl` of real imports, imported into another project, gives the
    same typed items (kind, role, tool, call id, subtype, data, time, session, source), whole
    offloaded outputs included; importing it again adds nothing."""
    for rel in ("claude/tool_heavy.jsonl", "claude/subagent.jsonl", "gemini/session-compressed-5cdd2021.jsonl",
                "codex/derived-markers-rollout-2025-12-28T12-18-30-019b64e5-57fa-7463-b644-fba7e456f905.jsonl",
                "llm/logs-llm0.36.db"):
        p = ctxd("chat", "import", os.path.join(REAL, rel), cwd=project)
        assert p.returncode == 0, p.stderr
    exported = ctxd("chat", "export", "--format", "jsonl", cwd=project)
    assert exported.returncode == 0, exported.stderr
    path = tmp_path / "export.jsonl"
    path.write_text(exported.stdout, encoding="utf-8")
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    p = ctxd("chat", "import", str(path), cwd=other)
    assert p.returncode == 0, p.stderr
    n = len(exported.stdout.splitlines())
    assert p.stdout.strip() == f"{path}: {n} added, 0 already present (jsonl)"

    def items_of(cwd):
        log = ctxd("chat", "log", "-n", "100000", "--json", cwd=cwd)
        out = []
        for m in map(json.loads, log.stdout.splitlines()):
            if m.get("output_path"):  # the preview names the project's own copy of the output
                m["content"] = m["content"].replace(m["output_path"], "OUT")
                m.pop("tokens")  # of the preview, path included
                with open(m.pop("output_path"), encoding="utf-8") as f:
                    m["whole"] = f.read()
            m.pop("id", None)
            out.append(m)
        return out

    a, b = items_of(project), items_of(other)
    assert len(a) == n > 50
    assert {m["kind"] for m in a} == {"prompt", "reply", "tool_call", "tool_result", "summary", "meta"}
    assert any("whole" in m for m in a)  # a big tool output was offloaded, and travels whole
    assert a == b
    again = ctxd("chat", "import", str(path), cwd=other)
    assert again.stdout.startswith(f"{path}: 0 added, {n} already present")


def _real_lines(rel):
    with open(os.path.join(REAL, rel), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _write_jsonl(path, objs):
    path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs), encoding="utf-8")


@pytest.mark.parametrize("parts", [
    [{"text": "<hook_context>\n# Conversation context: proj\n- budget 30,000\n</hook_context>\n\n"
              "create 2 hello world files"}],
    [{"text": "<hook_context>\n# Conversation context: proj\n- budget 30,000\n</hook_context>"},
     {"text": "create 2 hello world files"}],
])
def test_gemini_prompt_keeps_only_what_the_user_typed(store, tmp_path, parts):
    """Headless Gemini CLI writes ctxd's SessionStart context in front of the prompt: it is kept
    apart (data.injected), the prompt is what the user typed, under the record's usual key."""
    objs = _real_lines("gemini/session-2026-04-01T11-11-5cdd2021.jsonl")
    objs[1]["content"] = parts
    path = tmp_path / "session-2026-04-01T11-11-5cdd2021.jsonl"
    _write_jsonl(path, objs)
    records, _bad = parsed(gemini.parse_gemini, str(path))
    first = records[0]
    assert (first["kind"], first["content"]) == ("prompt", "create 2 hello world files")
    assert first["data"] == {"injected": "<hook_context>\n# Conversation context: proj\n- budget 30,000\n"
                                         "</hook_context>"}
    assert first["dedup"] == "gemini:5cdd2021-574a-483d-8a4b-1b97e8bbce88:1fc0bc7e-faa7-4e70-8d24-42555feb2b35"
    import_file(store, str(path))
    (m,) = [m for m in store.iter_all() if m.kind == "prompt"]
    assert (m.content, m.data["injected"].startswith("<hook_context>")) == ("create 2 hello world files", True)


@pytest.mark.parametrize("text,kind,subtype", [
    ("Your task is to create a detailed summary of the conversation so far, paying close attention to the "
     "user's explicit requests and your previous actions.\nThis summary should be thorough...", "meta",
     "compaction_prompt"),
    ("<task-notification>\n<task-id>bae407b</task-id>\n<status>completed</status>\n</task-notification>", "meta",
     "task_notification"),
    ("# Conversation context: spotter\n\n## Facts\n- the server runs on port 4000", "meta", "injected_context"),
    ("mix phx.server doesnt seem to start", "prompt", None),
])
def test_claude_text_the_cli_injected_is_meta(store, tmp_path, text, kind, subtype):
    """On a real transcript's user line: Claude Code's compaction-agent prompt, a background task's
    notification and ctxd's own context are not what the user typed; they keep the prompt key."""
    objs = _real_lines("claude/short.jsonl")
    objs[3]["message"]["content"] = text
    path = tmp_path / "short.jsonl"
    _write_jsonl(path, objs)
    records, _bad = parsed(claude.parse_claude, str(path))
    (r,) = [r for r in records if r["dedup"].startswith("claude:55604662-cf2a-4331-851a-ec234028f8ca:prompt:")
            and r["content"] == text]
    assert (r["kind"], r["subtype"], r["role"]) == (kind, subtype, items.ROLE_OF[kind])
    assert r["dedup"] == claude_prompt_dedup("55604662-cf2a-4331-851a-ec234028f8ca", text, 1)
    assert r["ts"] == pytest.approx(timestamp(objs[3]["timestamp"]))


def test_claude_slash_command_from_the_hook_and_the_transcript_is_stored_once(store):
    """Claude Code's UserPromptSubmit hook sends "/name args"; the transcript writes the command as
    <command-message>/<command-name>/<command-args>: both get the key of "/name args"."""
    with open(os.path.join(REAL, "hooks", "claude", "user_prompt_submit_slash.json"), encoding="utf-8") as f:
        hook = json.load(f)
    sid, typed = hook["session_id"], hook["prompt"]
    store.add("user", typed, session=sid, source="claude", dedup=claude_prompt_dedup(sid, typed, 1))
    r = import_file(store, os.path.join(REAL, "claude", "subagent.jsonl"))
    assert r.present == 1
    assert [m.content for m in store.iter_all()].count(typed) == 1
    assert not [m for m in store.iter_all() if "<command-name>" in m.content]
    records, _bad = parsed(claude.parse_claude, os.path.join(REAL, "claude", "subagent.jsonl"))
    slash = records[0]
    assert (slash["kind"], slash["subtype"], slash["content"]) == ("meta", "slash_command", typed)
    assert slash["data"] == {"command": "/handgemacht:create-beads", "args": typed[len("/handgemacht:create-beads "):]}


# -- whatever a file holds, a parser reports it and goes on -------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(
    ["", "user", "assistant", "tool_use", "tool_result", "text", "message", "function_call", "gemini", "summary",
     "event_msg", "response_item", "task_started", "user_message", "turn_context", "[Request interrupted by user]",
     "<command-name>/x</command-name>", "*** Begin Patch\n*** Update File: a.py\n*** End Patch", "2026-01-02T03:04:05Z",
     "call_1", "<hook_context>x</hook_context>\nhi"]) | st.text(max_size=10)
_keys = st.sampled_from(["type", "role", "content", "message", "payload", "id", "name", "input", "text",
                         "tool_use_id", "is_error", "call_id", "arguments", "output", "toolCalls", "args", "result",
                         "status", "sessionId", "uuid", "timestamp", "isMeta", "isCompactSummary", "summary",
                         "turn_id", "tool_calls", "function", "kind", "data", "messages", "$set", "$rewindTo",
                         "action", "command"])
_values = st.recursive(_scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(_keys, c, max_size=5),
                       max_leaves=15)
_lines = st.lists(st.one_of(st.dictionaries(_keys, _values, max_size=6).map(json.dumps),
                            st.sampled_from(["", "not json", "[1, 2]", '"x"', "{"])), max_size=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_lines, fmt=st.sampled_from(["jsonl", "claude", "codex", "gemini", "aider"]), start=st.integers(0, 3))
def test_parsers_never_raise(tmp_path, lines, fmt, start):
    path = tmp_path / "fuzz.jsonl"
    data = "\n".join(lines).encode("utf-8") + b"\n"
    path.write_bytes(data)
    offset = len(b"".join(line.encode("utf-8") + b"\n" for line in lines[:start])) if start <= len(lines) else 0
    for ctx in (ParseCursor(str(path)), ParseCursor(str(path), start=offset, line_no=start + 1, complete_only=True)):
        with open(path, "rb") as f:
            try:
                out = list(agents.named(fmt).parse(f, ctx))
            except ReadFromStart:  # an incremental import that must start over: import_transcript does
                continue
        for r in out:
            assert isinstance(r, (dict, Malformed, Forget))
            if isinstance(r, dict):
                assert r["kind"] in items.KINDS and isinstance(r["content"], str) and isinstance(r["dedup"], str)
                json.dumps(r["data"])


def test_an_exported_line_names_no_file_but_its_own_offloaded_output(store, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("private")
    line = {"role": "tool", "kind": "tool_result", "content": f"preview ... {secret} ...", "output_path": str(secret),
            "session": "s", "data": {"is_error": False, "exit_code": None, "size": 7}}
    path = tmp_path / "export.jsonl"
    path.write_text(json.dumps(line) + "\n")
    import_file(store, str(path))
    assert [m.content for m in store.iter_all()] == [f"preview ... {secret} ..."]


@pytest.mark.parametrize("output,expected", [
    ('{"output":"src/sync.py\\n","metadata":{"exit_code":0,"duration_seconds":0.1}}', ("src/sync.py\n", 0, None)),
    ('{"output":"boom\\n","metadata":{"exit_code":2}}', ("boom\n", 2, None)),
    ("Chunk ID: 3f2a\nWall time: 0.4 seconds\nProcess exited with code 1\nOriginal token count: 9\nOutput:\nFAILED",
     ("Chunk ID: 3f2a\nWall time: 0.4 seconds\nProcess exited with code 1\nOriginal token count: 9\nOutput:\nFAILED",
      1, None)),
    ({"content": [{"type": "input_text", "text": "done"}], "success": False}, ("done", None, False)),
    ("plain text", ("plain text", None, None)),
    ("{not json", ("{not json", None, None)),
    (None, ("", None, None)),
])
def test_codex_outputs_and_their_exit_codes(output, expected):
    """What function_call_output.output holds, in the shapes Codex versions wrote: JSON with
    metadata.exit_code, unified exec's text header, structured content with success."""
    assert codex_rollout.tool_output(output) == expected


def test_codex_failed_command_is_an_error_result(tmp_path):
    lines = _lines_of(CODEX)
    bad = json.loads(lines[9])
    bad["payload"]["output"] = json.dumps({"output": "error: no such file\n", "metadata": {"exit_code": 2}})
    path = tmp_path / os.path.basename(CODEX)
    path.write_bytes(b"".join(lines[:9]) + json.dumps(bad).encode() + b"\n" + b"".join(lines[10:]))
    records, _bad = parsed(codex_rollout.parse_codex, str(path))
    (r,) = [r for r in records if r["call_id"] == "call_Xk3m" and r["kind"] == "tool_result"]
    assert (r["content"], r["tool"], r["data"]) == ("error: no such file\n", "shell",
                                                    {"is_error": True, "exit_code": 2, "size": 20})
