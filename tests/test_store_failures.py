"""A store that cannot take a write: locked by another process, on a full disk, read-only, corrupt.

Run as whole processes against real SQLite files: the AI CLI hooks exit 0, queue what
they were given in the spool (redacted), log one line, and the next writer stores it,
once. The three failures are told apart, reads work on a read-only store, and
``ctxd chat recover`` never moves a store that passes its integrity check.

Disk full is a real SQLITE_FULL: the hook process runs with ``PRAGMA max_page_count``
set to the store's size on every connection it opens (tests/failing_hook.py).
Read-only is a real EACCES: the store file is 0400 and, when the tests run as root,
the hook runs without CAP_DAC_OVERRIDE (setpriv), so the kernel refuses the write.
No timing is asserted here: benchmarks/bench_store_failures.py measures it.
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from ctxd import paths
import ctxdtest

CTXD = shutil.which("ctxd")
HERE = Path(__file__).parent
SID = "3f6a2c1e-8b7d-4e2a-9c1f-5d4b3a2e1f00"
SECRET = "sk-abcdefghijklmnopqrstuvwx1234"

pytestmark = pytest.mark.skipif(CTXD is None, reason="the ctxd console script is not on PATH")


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


def context_dir(project):
    from ctxd.memory.project import locate

    return Path(locate(str(project)).context_dir)


def seed(project, texts=("the cutover is on Friday",)):
    from ctxd.memory.context import render
    from ctxd.memory.project import locate, open_store

    p = locate(str(project))
    with open_store(p) as s:
        s.add_many([dict(role="user", content=t, session="seed") for t in texts])
        render.write(s, p.root)
    return Path(p.context_dir) / "store.db"


def contents(project):
    db = context_dir(project) / "store.db"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [r[0] for r in con.execute("SELECT content FROM messages ORDER BY id")]
    finally:
        con.close()


def spooled(project):
    d = context_dir(project) / "spool"
    return sorted(p for p in d.glob("*.json")) if d.is_dir() else []


def log_text():
    try:
        return Path(paths.log_file()).read_text()
    except FileNotFoundError:
        return ""


def prompt_payload(project, text, event="UserPromptSubmit"):
    return json.dumps({"session_id": SID, "cwd": str(project), "hook_event_name": event, "prompt": text})


def hook(stdin, tool="claude", prefix=(), env=None):
    return ctxd("chat", "hook", tool, input=stdin.encode(), text=False, env=env, prefix=prefix)


ctxd = partial(ctxdtest.ctxd, script=True)


class Holder:
    """Another process holding the store: a write transaction open (readers still read, as in
    WAL mode they do), or with ``exclusive`` the whole file (readers are refused too)."""

    def __init__(self, db, exclusive=False):
        code = ("import sqlite3, sys\n"
                "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                + ("db.execute('PRAGMA locking_mode = EXCLUSIVE')\n"
                   "db.execute('BEGIN EXCLUSIVE')\n"
                   "db.execute(\"INSERT INTO meta(key, value) VALUES ('held', '1') ON CONFLICT DO NOTHING\")\n"
                   "db.execute('COMMIT')\n" if exclusive else "db.execute('BEGIN IMMEDIATE')\n")
                + "print('held', flush=True)\nsys.stdin.read()\n")
        self.p = subprocess.Popen([sys.executable, "-c", code, str(db)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        assert self.p.stdout.readline().strip() == "held"

    def release(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.p.poll() is None:
            self.release()


def queued_lines(text):
    return [l for l in text.splitlines() if "queued in" in l]


# -- locked ------------------------------------------------------------------------------

def test_a_prompt_on_a_locked_store_is_queued_redacted_then_stored_once(project):
    db = seed(project)
    with Holder(db):
        r = hook(prompt_payload(project, f"deploy with key {SECRET} please"))
        assert r.returncode == 0 and r.stdout == b""
        assert len(r.stderr.decode().splitlines()) == 1 and "queued" in r.stderr.decode()
        [entry] = spooled(project)
        assert oct(entry.stat().st_mode & 0o777) == "0o600"
        raw = entry.read_text()
        assert SECRET not in raw and "[REDACTED:openai-key]" in raw  # never on disk raw
        assert not any("deploy with key" in c for c in contents(project))
        [line] = queued_lines(log_text())
        assert "busy" in line and "UserPromptSubmit" in line
        assert "Traceback" not in log_text()
    # the next writer (here: the next hook) stores it first, then its own
    r = hook(prompt_payload(project, "and the second prompt"))
    assert r.returncode == 0
    got = contents(project)
    assert got[-2:] == ["deploy with key [REDACTED:openai-key] please", "and the second prompt"]
    assert spooled(project) == []
    assert "spool: 1 queued hook event(s) stored" in log_text()


def test_session_start_on_a_store_held_against_readers_injects_the_last_rendered_context(project):
    db = seed(project, ["the cutover is on Friday"])
    with Holder(db, exclusive=True):
        r = hook(json.dumps({"session_id": SID, "cwd": str(project), "hook_event_name": "SessionStart",
                             "source": "startup"}))
    assert r.returncode == 0
    ctx = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "the cutover is on Friday" in ctx
    assert "SessionStart: the store is busy" in log_text()


def test_a_prompt_on_a_store_held_against_readers_is_queued(project):
    db = seed(project)
    with Holder(db, exclusive=True):
        r = hook(prompt_payload(project, "while it is held"))
        assert r.returncode == 0 and len(spooled(project)) == 1
    assert ctxd("chat", "add", "by hand", cwd=project).returncode == 0  # any write command replays
    assert contents(project)[-2:] == ["while it is held", "by hand"]
    assert spooled(project) == []


def test_concurrent_hooks_on_a_locked_store_each_queue_their_own_entry(project):
    db = seed(project)
    with Holder(db):
        procs = [subprocess.Popen([CTXD, "chat", "hook", "gemini"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE) for _ in range(8)]
        outs = [p.communicate(prompt_payload(project, f"parallel prompt {i}", "BeforeAgent").encode(), timeout=60)
                for i, p in enumerate(procs)]
        assert all(p.returncode == 0 for p in procs)
        assert all(json.loads(out) == {} for out, _err in outs)  # Gemini: exactly one JSON object
        entries = spooled(project)
        assert len(entries) == 8 and all(json.loads(e.read_text())["records"] for e in entries)
    assert ctxd("chat", "add", "after", cwd=project).returncode == 0
    got = contents(project)
    assert sorted(c for c in got if c.startswith("parallel")) == [f"parallel prompt {i}" for i in range(8)]
    assert got[-1] == "after" and spooled(project) == []


def test_doctor_names_a_busy_store_and_queued_events_and_refresh_stores_them(project):
    db = seed(project)
    with Holder(db, exclusive=True):
        assert hook(prompt_payload(project, "queued for doctor")).returncode == 0
        r = ctxd("doctor", "--json", cwd=project)
        checks = {c["name"]: c for c in json.loads(r.stdout)["checks"]}
        assert "busy" in checks["store"]["message"] and "recover" not in (checks["store"]["fix"] or "")
    checks = {c["name"]: c for c in json.loads(ctxd("doctor", "--json", cwd=project).stdout)["checks"]}
    assert checks["store spool"]["status"] == "warn" and "ctxd chat refresh" in checks["store spool"]["fix"]
    assert ctxd("chat", "refresh", cwd=project).returncode == 0
    assert contents(project)[-1] == "queued for doctor" and spooled(project) == []


@pytest.mark.parametrize("tool,event", [("claude", "UserPromptSubmit"), ("gemini", "BeforeAgent"),
                                        ("codex", "UserPromptSubmit")])
def test_identical_prompts_queued_and_replayed_twice_are_two_records(project, tool, event):
    db = seed(project)
    with Holder(db):
        for _ in range(2):
            r = hook(prompt_payload(project, "run the tests", event), tool=tool)
            assert r.returncode == 0
        assert len(spooled(project)) == 2
    assert ctxd("chat", "add", "done", cwd=project).returncode == 0
    assert contents(project).count("run the tests") == 2 and spooled(project) == []


def test_a_replay_killed_after_its_commit_stores_nothing_twice(project):
    """The replaying process dies between storing an entry and removing its file: the next
    replay finds the entry's marker and only removes the file."""
    db = seed(project)
    with Holder(db):
        assert hook(prompt_payload(project, "same words")).returncode == 0
        assert hook(prompt_payload(project, "same words")).returncode == 0
    first = spooled(project)[0]
    crash = ("import os, sys\n"
             "real = os.unlink\n"
             "def unlink(p, *a, **k):\n"
             "    if str(p).endswith('.json'): os._exit(9)\n"
             "    return real(p, *a, **k)\n"
             "os.unlink = unlink\n"
             "from ctxd.memory.core import ProjectMemory\n"
             "ProjectMemory.at(sys.argv[1]).store()\n")
    p = subprocess.run([sys.executable, "-c", crash, str(project)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 9, p.stderr
    assert first.exists() and contents(project).count("same words") == 1  # stored, file still there
    assert ctxd("chat", "add", "after", cwd=project).returncode == 0
    assert contents(project).count("same words") == 2 and spooled(project) == []


def test_a_transcript_event_on_a_locked_store_is_imported_later(project, tmp_path):
    seed(project)
    t = tmp_path / "t.jsonl"
    t.write_text((HERE / "contracts/hooks/claude/transcript.jsonl").read_text().replace(
        "__CWD__", json.dumps(str(project))[1:-1]))
    stop = json.dumps({"session_id": SID, "cwd": str(project), "hook_event_name": "Stop",
                       "transcript_path": str(t)})
    db = context_dir(project) / "store.db"
    before = len(contents(project))
    with Holder(db):
        r = hook(stop)
        assert r.returncode == 0 and len(spooled(project)) == 1
        assert len(contents(project)) == before
    assert ctxd("chat", "add", "x", cwd=project).returncode == 0
    assert len(contents(project)) > before + 1 and spooled(project) == []
    assert hook(stop).returncode == 0  # imported once: the same transcript adds nothing more
    n = len(contents(project))
    assert ctxd("chat", "import", str(t), cwd=project).returncode == 0 and len(contents(project)) == n


# -- disk full ---------------------------------------------------------------------------

FULL_HOOK = HERE / "failing_hook.py"


def test_a_prompt_on_a_full_disk_is_queued_and_the_store_is_not_called_corrupt(project):
    seed(project)
    big = "a long prompt that needs new pages " * 150
    r = subprocess.run([sys.executable, str(FULL_HOOK), "claude"], input=prompt_payload(project, big).encode(),
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    [line] = queued_lines(log_text())
    assert "is full" in line and "corrupt" not in line
    assert len(spooled(project)) == 1 and big not in contents(project)
    p = ctxd("chat", "recover", cwd=project)
    assert p.returncode == 0 and "passes its integrity check" in p.stdout
    assert not list(context_dir(project).glob("store.db.corrupt-*"))
    assert ctxd("chat", "add", "space again", cwd=project).returncode == 0
    assert contents(project)[-2:] == [big, "space again"]


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs holding the user's data dir (the store), or a skip where mounting is not
    allowed (the max_page_count tests above cover the same code there)."""
    data = Path(os.environ["XDG_DATA_HOME"])
    data.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(data)],
                      capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs is not allowed here")
    try:
        yield data
    finally:
        subprocess.run(["umount", "-l", str(data)], capture_output=True)


def fill(disk, leave):
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with open(disk / "filler", "wb") as f:
        try:
            f.write(b"\0" * max(free - leave, 0))
        except OSError:
            pass


def test_a_real_full_disk_is_called_full_and_recover_leaves_the_store(project, small_disk):
    db = seed(project, ["the cutover is on Friday"])
    before = db.read_bytes()
    fill(small_disk, 16384)
    r = hook(prompt_payload(project, "a prompt on a full disk " * 200))
    assert r.returncode == 0 and "the disk is full" in r.stderr.decode()
    [line] = queued_lines(log_text())
    assert "is full" in line and "corrupt" not in line
    # the context dir's disk had no room for the spool either: it went to the state dir's
    assert len(list(Path(paths.state_dir()).glob("spool/*/*.json"))) == 1
    add = ctxd("chat", "add", "y" * 6000, cwd=project)
    assert add.returncode == 1 and "is full" in add.stderr and "corrupt" not in add.stderr
    rec = ctxd("chat", "recover", cwd=project)
    assert "is full" in rec.stderr and "Traceback" not in rec.stderr
    assert not list(db.parent.glob("store.db.corrupt-*")) and db.read_bytes() == before
    (small_disk / "filler").unlink()
    assert ctxd("chat", "add", "space again", cwd=project).returncode == 0
    assert contents(project) == ["the cutover is on Friday", "a prompt on a full disk " * 200, "space again"]


def test_a_full_disk_is_reported_as_full_by_write_commands(project):
    seed(project)
    r = subprocess.run([sys.executable, str(FULL_HOOK), "--cli", "chat", "add", "x" * 6000],
                       capture_output=True, text=True, timeout=60, cwd=project, env=dict(os.environ, PWD=str(project)))
    assert r.returncode == 1
    assert r.stderr.startswith("ctxd: the disk holding the conversation store ") and "is full" in r.stderr
    assert "corrupt" not in r.stderr and "internal error" not in r.stderr


# -- read-only ---------------------------------------------------------------------------

def unprivileged():
    """The command prefix that makes the kernel enforce file modes: as root, no CAP_DAC_OVERRIDE
    (nor DAC_READ_SEARCH, FOWNER: a 0400 file owned by root is then read-only to root too)."""
    if os.geteuid() != 0:
        return ()
    return ("setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--")


def test_a_read_only_store_is_read_not_called_corrupt_and_hooks_queue(project):
    db = seed(project, ["the cutover is on Friday"])
    mode = db.stat().st_mode
    db.chmod(0o400)
    try:
        low = unprivileged()
        log = ctxd("chat", "log", cwd=project, prefix=low)
        assert log.returncode == 0 and "the cutover is on Friday" in log.stdout
        add = ctxd("chat", "add", "x", cwd=project, prefix=low)
        assert add.returncode == 1 and "read-only" in add.stderr and "corrupt" not in add.stderr
        assert "Traceback" not in add.stderr
        r = hook(prompt_payload(project, "while read-only"), prefix=low)
        assert r.returncode == 0 and len(spooled(project)) == 1
        [line] = queued_lines(log_text())
        assert "read-only" in line
        rec = ctxd("chat", "recover", cwd=project, prefix=low)
        assert rec.returncode == 0 and "passes its integrity check" in rec.stdout, rec.stderr
        assert "Traceback" not in rec.stderr
        assert not list(db.parent.glob("store.db.corrupt-*"))
        assert oct(db.stat().st_mode & 0o777) == "0o400"  # ctxd never makes it writable by itself
    finally:
        db.chmod(mode)
    add = ctxd("chat", "add", "writable again", cwd=project, prefix=unprivileged())
    assert add.returncode == 0, add.stderr
    assert contents(project)[-2:] == ["while read-only", "writable again"]


def test_a_store_in_a_read_only_directory_is_read_and_hooks_queue_under_the_state_dir(project):
    db = seed(project, ["the cutover is on Friday"])
    d = db.parent
    d.chmod(0o500)
    try:
        low = unprivileged()
        log = ctxd("chat", "log", cwd=project, prefix=low)
        assert log.returncode == 0 and "the cutover is on Friday" in log.stdout, log.stderr
        add = ctxd("chat", "add", "x", cwd=project, prefix=low)
        assert add.returncode == 1 and "read-only" in add.stderr and "corrupt" not in add.stderr
        r = hook(prompt_payload(project, f"key {SECRET} while the directory is read-only"), prefix=low)
        assert r.returncode == 0
        [entry] = Path(paths.state_dir()).glob("spool/*/*.json")
        assert SECRET not in entry.read_text()
        [line] = queued_lines(log_text())
        assert "read-only" in line and str(entry) in line
        rec = ctxd("chat", "recover", cwd=project, prefix=low)
        assert "Traceback" not in rec.stderr and not list(d.glob("store.db.corrupt-*"))
    finally:
        d.chmod(0o700)
    assert ctxd("chat", "add", "writable again", cwd=project, prefix=unprivileged()).returncode == 0
    assert contents(project)[-2:] == ["key [REDACTED:openai-key] while the directory is read-only", "writable again"]
    assert not list(Path(paths.state_dir()).glob("spool/*/*.json"))


def test_an_unreadable_store_is_neither_corrupt_nor_moved_by_recover(project):
    db = seed(project, ["kept"])
    db.chmod(0o000)
    try:
        low = unprivileged()
        log = ctxd("chat", "log", cwd=project, prefix=low)
        assert log.returncode == 1 and "cannot be opened" in log.stderr and "corrupt" not in log.stderr
        rec = ctxd("chat", "recover", cwd=project, prefix=low)
        assert rec.returncode == 1 and "Traceback" not in rec.stderr
        assert not list(db.parent.glob("store.db.corrupt-*"))
    finally:
        db.chmod(0o600)
    assert contents(project) == ["kept"]


# -- corrupt -----------------------------------------------------------------------------

def test_a_prompt_on_a_corrupt_store_is_queued_and_stored_after_recover(project):
    db = seed(project)
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    r = hook(prompt_payload(project, "said while corrupt"))
    assert r.returncode == 0 and len(spooled(project)) == 1
    [line] = queued_lines(log_text())
    assert "corrupt" in line
    rec = ctxd("chat", "recover", cwd=project)
    assert rec.returncode == 0 and "recovered 0 messages" in rec.stdout
    assert ctxd("chat", "add", "after recover", cwd=project).returncode == 0
    assert contents(project) == ["said while corrupt", "after recover"]


def test_recover_never_moves_a_healthy_store(project):
    db = seed(project, ["one", "two"])
    before = db.read_bytes()
    p = ctxd("chat", "recover", cwd=project)
    assert p.returncode == 0 and "passes its integrity check" in p.stdout
    assert db.read_bytes() == before and contents(project) == ["one", "two"]
    assert not list(db.parent.glob("store.db.corrupt-*"))


def test_recover_of_a_truncated_store_reports_real_counts_and_leaves_no_wal_or_shm(project):
    db = seed(project, [f"message {i}" for i in range(5)])
    with open(db, "r+b") as f:
        f.truncate(20 * 4096)
    p = ctxd("chat", "recover", cwd=project)
    assert p.returncode == 0, p.stderr
    assert "10000" not in p.stdout and "unknown number" in p.stdout
    backups = sorted(x.name for x in db.parent.glob("store.db.corrupt-*"))
    assert len(backups) == 1 and not backups[0].endswith(("-wal", "-shm"))
    assert not any(db.parent.glob("store.db-*")) or all(
        x.stat().st_size == 0 for x in db.parent.glob("store.db-wal"))
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
