"""ctxd.activation.fileio: the one atomic writer and the one lock."""

import os
import stat
import subprocess
import sys
import textwrap

import pytest

from ctxd.activation import fileio
from ctxd.activation.fileio import Busy, atomic_write, locked

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def leftovers(d):
    return [n for n in os.listdir(d) if n.endswith(".tmp")]


def test_atomic_write_creates_0600_and_private_dirs(tmp_path):
    path = tmp_path / "a" / "b" / "store.json"
    atomic_write(str(path), "héllo")
    assert path.read_bytes() == "héllo".encode()
    assert mode(path) == 0o600
    assert mode(tmp_path / "a") == 0o700 and mode(tmp_path / "a" / "b") == 0o700
    assert leftovers(path.parent) == []


def test_atomic_write_replaces_and_keeps_0600(tmp_path):
    path = tmp_path / "conv.json"
    atomic_write(str(path), b"one")
    os.chmod(path, 0o600)
    atomic_write(str(path), b"two")
    assert path.read_bytes() == b"two" and mode(path) == 0o600


def test_atomic_write_honours_a_wider_mode_the_umask_allows(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write(str(tmp_path / "rc"), "x", mode=0o644)
        atomic_write(str(tmp_path / "secret"), "x")
    finally:
        os.umask(old)
    assert mode(tmp_path / "rc") == 0o644 and mode(tmp_path / "secret") == 0o600


class Boom(Exception):
    pass


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "conv.json"
    atomic_write(str(path), "old")

    def fail(*a):
        raise Boom()

    monkeypatch.setattr(fileio.os, "fsync", fail)
    with pytest.raises(Boom):
        atomic_write(str(path), "new")
    monkeypatch.undo()
    assert path.read_text() == "old" and leftovers(tmp_path) == []


def test_a_failed_rename_leaves_no_temp_file(tmp_path):
    target = tmp_path / "dir-in-the-way"
    target.mkdir()
    (target / "x").write_text("keep")  # a non-empty directory cannot be replaced by a file
    with pytest.raises(OSError):
        atomic_write(str(target), "data")
    assert leftovers(tmp_path) == [] and (target / "x").read_text() == "keep"


def test_exclusive_never_replaces(tmp_path):
    path = tmp_path / "s1_v1.json"
    atomic_write(str(path), "first", exclusive=True)
    with pytest.raises(FileExistsError):
        atomic_write(str(path), "second", exclusive=True)
    assert path.read_text() == "first" and mode(path) == 0o600 and leftovers(tmp_path) == []


HOLDER = textwrap.dedent("""
    import os, sys, time
    from ctxd.activation.fileio import locked
    lock, log, tag = sys.argv[1:4]
    with locked(lock):
        with open(log, "a") as f:
            f.write(tag + " in\\n")
        print("held", flush=True)
        sys.stdin.readline()  # hold until the test says so
        with open(log, "a") as f:
            f.write(tag + " out\\n")
""")


def holder(lock, log, tag):
    return subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), str(log), tag], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def test_two_processes_serialize(tmp_path):
    lock, log = tmp_path / "locks" / ".context.lock", tmp_path / "log"
    a = holder(lock, log, "a")
    assert a.stdout.readline() == "held\n"
    assert mode(lock) == 0o600 and mode(lock.parent) == 0o700
    b = holder(lock, log, "b")
    # b waits on the lock: it cannot say "held" until a lets go. Ask the lock itself, not the clock.
    with pytest.raises(Busy):
        with locked(str(lock), blocking=False):
            pass
    assert log.read_text() == "a in\n"
    a.stdin.write("\n")
    a.stdin.flush()
    assert b.stdout.readline() == "held\n"  # only now
    b.stdin.write("\n")
    b.stdin.flush()
    assert a.wait(timeout=60) == 0 and b.wait(timeout=60) == 0
    assert log.read_text() == "a in\na out\nb in\nb out\n"


def test_non_blocking_reports_busy_and_then_succeeds(tmp_path):
    lock = tmp_path / ".summary.lock"
    a = holder(lock, tmp_path / "log", "a")
    assert a.stdout.readline() == "held\n"
    with pytest.raises(Busy) as e:
        with locked(str(lock), blocking=False):
            raise AssertionError("the body must not run while another process holds the lock")
    assert isinstance(e.value, BlockingIOError) and str(lock) in str(e.value)
    a.stdin.write("\n")
    a.stdin.flush()
    assert a.wait(timeout=60) == 0
    with locked(str(lock), blocking=False) as held:
        assert held.path == str(lock)


def test_the_lock_is_released_when_the_block_raises(tmp_path):
    lock = str(tmp_path / "l")
    with pytest.raises(Boom):
        with locked(lock):
            raise Boom()
    with locked(lock, blocking=False):
        pass


def test_fileio_imports_nothing_heavy():
    # -S: without site, which loads tempfile, contextlib ... for .pth files and would hide them
    code = ("import sys; import ctxd.activation.fileio; "
            "print(sorted(m for m in ('fcntl', 'tempfile', 'contextlib', 'hashlib', 'random', 'shutil', 'json', "
            "'tomllib', 'datetime', 'click') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=REPO)).stdout
    assert out.strip() == "[]"
