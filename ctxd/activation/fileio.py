"""Small file helpers for the hot path: hashing, atomic writes, locks, cached TOML.

TOML is parsed with tomllib, but importing tomllib costs ~15-20 ms, so the
validated result of each file is cached as JSON under the cache directory,
keyed by the SHA-256 of the file's bytes: a file is parsed once per content.
"""

import os

from ctxd import paths
from ctxd.fastpath import minijson
from ctxd.errors import CtxdError

CACHE_SCHEMA = 3  # 2: [context] recall_budget, recall_threshold; 3: [ctxd] inherit_root


def sha256_hex(data):
    try:  # the builtin module avoids loading OpenSSL through hashlib (~13 ms)
        from _sha256 import sha256
    except ImportError:  # pragma: no cover - 3.12 renamed it
        try:
            from _sha2 import sha256
        except ImportError:
            from hashlib import sha256
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    return sha256(data).hexdigest()


def _private_dirs(d):
    """Create *d* and its missing parents, every one of them 0700 (not just the last)."""
    if d and not os.path.isdir(d):
        old_umask = os.umask(0o077)
        try:
            os.makedirs(d, mode=0o700, exist_ok=True)
        finally:
            os.umask(old_umask)


def _fsync_dir(d):
    try:
        fd = os.open(d or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot fsync a directory; the rename is still atomic
    finally:
        os.close(fd)


def atomic_write(path, data, mode=0o600, *, exclusive=False):
    """Write *data* (bytes or str, UTF-8) to *path* so readers see the old file or the new one.

    The one write policy of ctxd: a temp file in the same directory (created
    with *mode*, which the umask can only narrow), write, fsync the file,
    rename it over *path*, fsync the directory (best effort). A crash leaves
    the old file or the new one, never a torn one; a failure removes the temp
    file. Missing directories on the way are created 0700.

    exclusive=True never replaces an existing file: the temp file is
    hard-linked to *path* instead of renamed, and FileExistsError is raised
    when *path* exists (two writers racing for one name: one wins, the other
    gets the error and nothing of its data is left behind).
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    d = os.path.dirname(path)
    _private_dirs(d)
    tmp = os.path.join(d, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if exclusive:
            os.link(tmp, path)  # unlike rename, link never replaces an existing file
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(d)


class Busy(CtxdError, BlockingIOError):
    """locked(..., blocking=False): another process holds the lock."""

    def __init__(self, path):
        super().__init__(f"{path} is locked by another process")
        self.path = path


class _Locked:
    def __init__(self, path, blocking):
        self.path = path
        self.blocking = blocking
        self.fd = None

    def __enter__(self):
        import fcntl  # lazily: the export path never locks

        _private_dirs(os.path.dirname(self.path))
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)  # not inherited by children (PEP 446)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if self.blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise Busy(self.path) from None
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return self

    def __exit__(self, *exc):
        import fcntl

        fd, self.fd = self.fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
        return False


def locked(path, *, blocking=True):
    """``with locked(path):`` holds an exclusive flock on the lock file *path*.

    The lock file is created 0600 (its directories 0700) and left in place;
    the lock goes when the block ends or the process dies. blocking=False
    raises Busy (a BlockingIOError) at once instead of waiting when another
    process holds it. Locks are per open file: a second ``locked()`` on the
    same path in the same process waits for the first like another process.
    """
    return _Locked(path, blocking)


def toml_error_location(text, exc):
    """(line, col, message) from a TOMLDecodeError's text."""
    msg = str(exc)
    line = col = 1
    marker = " (at line "
    if marker in msg:
        head, _, tail = msg.rpartition(marker)
        try:
            l, _, c = tail.rstrip(")").partition(", column ")
            line, col = int(l), int(c)
            msg = head
        except ValueError:
            pass
    elif msg.endswith("(at end of document)"):
        msg = msg[: -len(" (at end of document)")]
        line = text.count("\n") + 1
    return line, col, msg


def cached_parse(kind, data, parse):
    """parse(bytes) -> JSON-able value, memoised on disk by content hash.

    Only successful parses are cached; *parse* raises for invalid files.
    """
    digest = sha256_hex(data)
    path = os.path.join(paths.cache_dir(), "parsed", f"{kind}-{CACHE_SCHEMA}-{digest}.json")
    try:
        with open(path, encoding="utf-8") as f:
            return minijson.loads(f.read())
    except (OSError, ValueError, RecursionError):
        pass
    value = parse(data)
    try:
        atomic_write(path, minijson.dumps(value))
    except OSError:
        pass  # a read-only cache costs speed, never correctness
    return value
