"""The store's typed errors: what SQLite or the OS said, as busy, full, read-only or corrupt.

An AI CLI hook spools what it was given when the store is StoreUnavailable (ctxd.memory.ingest.spool);
the CLI reports the message, which says what to do.
"""

import os

from ctxd.errors import CtxdError, ExitCode


class StoreError(CtxdError):
    exit_code = ExitCode.ERROR


class StoreUnavailable(StoreError):
    """The store cannot take a write now (busy, full, read-only, corrupt): what an AI CLI hook
    was given goes to the spool (ctxd.memory.ingest.spool) instead."""

    short = "the store cannot be written"


class StoreBusy(StoreUnavailable):
    """Another process holds the store's write lock longer than the busy timeout (SQLITE_BUSY)."""

    short = "the store is busy"


class StoreFull(StoreUnavailable):
    """The disk (or quota) holding the store is full (SQLITE_FULL, ENOSPC, EDQUOT)."""

    short = "the disk is full"


class StoreReadOnly(StoreUnavailable):
    """The store cannot be written: its file, directory or file system is read-only
    (SQLITE_READONLY, EACCES, EPERM, EROFS). Reading works."""

    short = "the store is read-only"


class StoreIOError(StoreUnavailable):
    """The operating system failed a read or write of the store (SQLITE_IOERR) on a disk
    that is not full: not damage to the store itself."""

    short = "the store could not be read or written"


class StoreCorrupt(StoreUnavailable):
    short = "the store is corrupt"


class TimeUp(StoreError):
    """Store.deadline(): the time given ran out."""


_BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 5, 6, 8, 10, 11, 13, 14, 26  # SQLite
_PERM = 3


def unavailable(exc, path):
    """The typed error for *exc* (an sqlite3.Error or OSError met on the store at *path*), or None
    when it is none of busy, full, read-only, corrupt."""
    import errno

    if isinstance(exc, OSError):
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return StoreFull(_full_message(path, exc.strerror))
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return StoreReadOnly(_readonly_message(path, f"{exc.strerror}: {exc.filename or path}"))
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc)
    if primary in (_BUSY, _LOCKED) or (primary is None and "locked" in text):
        return StoreBusy(f"the conversation store {path} is busy: another process holds its write lock ({text})")
    if primary == _FULL:
        return StoreFull(_full_message(path, text))
    if primary in (_READONLY, _PERM):
        return StoreReadOnly(_readonly_message(path, text))
    if primary == _CANTOPEN:  # SQLite could not open the file, its -wal or its -shm
        readable = os.access(path, os.R_OK)
        if readable and (not os.access(os.path.dirname(path) or ".", os.W_OK) or not os.access(path, os.W_OK)):
            return StoreReadOnly(_readonly_message(path, text))
        return StoreUnavailable(f"the conversation store {path} cannot be opened ({text}); check the permissions "
                                f"of it, its -wal and -shm files and its directory")
    if primary in (_CORRUPT, _NOTADB):
        return StoreCorrupt(corrupt_message(path, text))
    if primary == _IOERR:  # a full disk often shows as one (growing the -shm, say): SQLite drops errno
        if _nearly_full(path):
            return StoreFull(_full_message(path, text))
        return StoreIOError(f"the conversation store {path} could not be read or written ({text}); the file "
                            f"system failed, not the store: nothing was written")
    return None


FULL_BELOW = 1 << 20  # bytes free under which an I/O error is taken for a full disk


def _nearly_full(path):
    try:
        st = os.statvfs(os.path.dirname(path) or ".")
    except OSError:
        return False
    free = st.f_bfree if os.geteuid() == 0 else st.f_bavail  # root may write into the reserve
    return free * st.f_frsize < FULL_BELOW


def corrupt_message(path, why):
    return (f"the conversation store {path} is corrupt ({why}). Nothing was changed. "
            f"Recover what can be read with: ctxd chat recover (the damaged file is kept)")


def _full_message(path, why):
    return (f"the disk holding the conversation store {path} is full ({why}); nothing was written. "
            f"Free some space; the store itself is intact")


def _readonly_message(path, why):
    return (f"the conversation store {path} is read-only ({why}); it can be read, not written. "
            f"Make it writable (file, directory and file system) to record again")


def typed_error(exc, path):
    """*exc* as the store's typed error when it is one (busy, full, read-only, corrupt), else itself."""
    return unavailable(exc, path) or exc
