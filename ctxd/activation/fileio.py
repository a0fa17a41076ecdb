"""Small file helpers for the hot path: hashing, atomic writes, cached TOML.

TOML is parsed with tomllib, but importing tomllib costs ~15-20 ms, so the
validated result of each file is cached as JSON under the cache directory,
keyed by the SHA-256 of the file's bytes: a file is parsed once per content.
"""

import os

from ctxd import paths
from ctxd.activation import minijson

CACHE_SCHEMA = 1


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


def atomic_write(path, data, mode=0o600):
    """Write *data* (bytes or str) to *path* via a temp file and rename."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    d = os.path.dirname(path)
    if not os.path.isdir(d):
        old_umask = os.umask(0o077)  # every directory created on the way is private, not just the last
        try:
            os.makedirs(d, mode=0o700, exist_ok=True)
        finally:
            os.umask(old_umask)
    tmp = os.path.join(d, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


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
