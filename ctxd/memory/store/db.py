"""The per-project conversation store: SQLite (WAL, FTS5 trigram), files 0600.

One database per project at ``<context dir>/store.db``. Every message is
redacted before it is stored; a content larger than the offload threshold is
written (redacted) to ``outputs/<hash>.txt`` and the row keeps a head/tail
preview naming that file. Imports are idempotent through a unique ``dedup``
key per message. The schema is versioned with ``PRAGMA user_version`` and
migrated forward on open.

Store is this module's connection and lifecycle plus one mixin per group of tables
(messages, facts, tasks, ...); schema holds the migrations and
errors the typed errors.
"""

import contextlib
import os
import sqlite3
import time

from ctxd.errors import ExitCode
from ctxd.memory.store.layout import DB_NAME
from ctxd.memory.store.concepts import ConceptsTables
from ctxd.memory.store.embed import EmbedTables
from ctxd.memory.store.errors import (StoreCorrupt, StoreError, StoreReadOnly, TimeUp, corrupt_message, typed_error,
                                      unavailable)
from ctxd.memory.store.facts import FactsTables
from ctxd.memory.store.messages import ROLES, MessagesTables
from ctxd.memory.store.schema import SCHEMA_VERSION, backfill_kinds, backfill_provenance, migrate
from ctxd.memory.store.session import SessionTables
from ctxd.memory.store.sync import SyncTables
from ctxd.memory.store.tasks import TasksTables

TYPE_CHECKING = False  # typing is not imported at run time: the hooks import the store
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

DEFAULT_OFFLOAD = 8192  # characters
BUSY_TIMEOUT = 30.0  # seconds a write waits for another process's lock (AI CLI hooks wait far less)


def _private(path):
    """No access for group and others; never adds a permission (a store made read-only stays so)."""
    try:
        mode = os.stat(path).st_mode & 0o777
        if mode & 0o077:
            os.chmod(path, mode & 0o700)
    except OSError:
        pass


class Store(MessagesTables, FactsTables, TasksTables, ConceptsTables, SessionTables, SyncTables, EmbedTables):
    def __init__(self, context_dir: str, *, redactor: "Callable[[str], tuple[str, dict]] | None" = None,
                 offload_threshold: int = DEFAULT_OFFLOAD, create: bool = True, busy_timeout: float = BUSY_TIMEOUT):
        self.dir = context_dir
        self.path = os.path.join(context_dir, DB_NAME)
        self.redactor = redactor
        self.offload_threshold = offload_threshold
        self.busy_timeout = busy_timeout
        if not create and not os.path.exists(self.path):
            raise StoreError(f"no conversation store yet at {self.path}", ExitCode.NOT_FOUND)
        os.makedirs(context_dir, mode=0o700, exist_ok=True)
        self.db = self._connect()

    # -- opening --------------------------------------------------------------
    def _connect(self):
        self._sidecars_follow()
        old_umask = os.umask(0o077)  # the db, -wal and -shm files are born 0600
        db = None
        try:
            db = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
            db.row_factory = sqlite3.Row
            db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                try:
                    db.execute("PRAGMA journal_mode = WAL")
                except sqlite3.OperationalError as e:  # a read-only store is read as it is
                    if not isinstance(unavailable(e, self.path), StoreReadOnly):
                        raise
            db.execute("PRAGMA synchronous = NORMAL")
            self._migrate(db)
        except (sqlite3.DatabaseError, OSError) as e:
            if db is not None:
                db.close()
            typed = unavailable(e, self.path)
            if typed is None and isinstance(e, sqlite3.DatabaseError):
                typed = StoreCorrupt(corrupt_message(self.path, e))
            if typed is None:
                raise
            if isinstance(typed, StoreReadOnly):
                db = self._connect_unchanging()
                if db is not None:
                    return db
            raise typed from None
        finally:
            os.umask(old_umask)
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.path + suffix):
                _private(self.path + suffix)
        return db

    def _connect_unchanging(self):
        """A connection that only reads, for a store in a read-only directory or file system
        (SQLite cannot make its -wal and -shm there, so nothing can change it): None when a
        -wal with writes in it is there (they would be missed) or it cannot be read."""
        wal = self.path + "-wal"
        if os.path.exists(wal) and os.path.getsize(wal) > 0:
            return None
        from urllib.parse import quote

        try:
            db = sqlite3.connect(f"file:{quote(self.path)}?mode=ro&immutable=1", uri=True, isolation_level=None)
            db.row_factory = sqlite3.Row
            if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                db.close()
                return None
        except sqlite3.DatabaseError:
            return None
        return db

    def _sidecars_follow(self):
        """SQLite makes the -wal and -shm files with the database's mode: opened while the store
        was read-only, they stay read-only once it is writable again and every write would fail.
        A writable store gets writable ones (they are ours: 0600)."""
        for suffix in ("-wal", "-shm"):
            side = self.path + suffix
            if os.path.exists(side) and not os.access(side, os.W_OK) and os.access(self.path, os.W_OK):
                try:
                    os.chmod(side, 0o600)
                except OSError:
                    pass

    def _migrate(self, db):
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path} was written by a newer ctxd (schema {version}); upgrade ctxd")
        if version == SCHEMA_VERSION:
            return
        migrate(db)

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def transaction(self) -> "Iterator[sqlite3.Connection]":
        """One write transaction (BEGIN IMMEDIATE ... COMMIT; ROLLBACK on any exception).

        Re-entrant: inside an open transaction it joins it, so store methods that
        write can be combined into one atomic unit by their caller.
        """
        if self.db.in_transaction:
            yield self.db
            return
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as e:
            raise typed_error(e, self.path) from None
        try:
            yield self.db
        except sqlite3.DatabaseError as e:
            self._rollback()
            raise typed_error(e, self.path) from None
        except BaseException:
            self._rollback()
            raise
        try:
            self.db.execute("COMMIT")
        except sqlite3.DatabaseError as e:
            self._rollback()
            raise typed_error(e, self.path) from None

    @contextlib.contextmanager
    def waiting(self, seconds: float) -> "Iterator[None]":
        """Inside, a write waits at most *seconds* for another process's lock (0: not at all)."""
        self.db.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")
        try:
            yield
        finally:
            self.db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")

    def _rollback(self):
        if self.db.in_transaction:  # SQLite may have rolled back already (SQLITE_FULL, say)
            self.db.execute("ROLLBACK")

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def deadline(self, seconds: float) -> "Iterator[None]":
        """Queries inside give up (match nothing, read nothing) once *seconds* have passed."""
        end = time.monotonic() + seconds
        self.db.set_progress_handler(lambda: 1 if time.monotonic() > end else 0, 2000)
        try:
            yield
        except sqlite3.OperationalError as e:
            if "interrupt" not in str(e):
                raise
            raise TimeUp(f"gave up after {seconds * 1000:.0f} ms") from None
        finally:
            self.db.set_progress_handler(None, 0)
        if time.monotonic() > end:
            raise TimeUp(f"gave up after {seconds * 1000:.0f} ms")

    # -- transcript offsets ---------------------------------------------------
    def get_offset(self, path: str) -> tuple[int, str]:
        row = self.db.execute("SELECT offset, head FROM offsets WHERE path = ?", (path,)).fetchone()
        return (row[0], row[1]) if row else (0, "")

    def set_offset(self, path: str, offset: int, head: str) -> None:
        self.db.execute("INSERT INTO offsets(path, offset, head, updated) VALUES (?,?,?,?) "
                        "ON CONFLICT(path) DO UPDATE SET offset = excluded.offset, head = excluded.head, "
                        "updated = excluded.updated", (path, offset, head, time.time()))

    def integrity(self) -> str:
        """"ok", or the problems PRAGMA integrity_check reports (pages so damaged that the check
        itself cannot read them are such a problem too: SQLite's own message)."""
        try:
            return self.db.execute("PRAGMA integrity_check").fetchone()[0]
        except sqlite3.DatabaseError as e:
            return str(e)

    # -- spool markers (ctxd.memory.ingest.spool) ----------------------------------------
    def spool_marked(self, key: str) -> bool:
        return self.db.execute("SELECT 1 FROM meta WHERE key = ?", (key,)).fetchone() is not None

    def mark_spool(self, key: str) -> None:
        """Inside the transaction that stored a spooled entry: it is stored."""
        self.db.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT DO NOTHING", (key, str(time.time())))

    def forget_spool_mark(self, key: str) -> None:
        with self.transaction():
            self.db.execute("DELETE FROM meta WHERE key = ?", (key,))


class Recovery:
    """What ``recover`` did: *healthy* (the store passed its integrity check and was left as it
    is), else the messages *salvaged*, the ids found *unreadable* (None: how many were lost cannot
    be told, the table's structure itself is unreadable) and the *backup* the damaged file was
    moved to."""

    __slots__ = ("healthy", "salvaged", "unreadable", "backup", "problem")

    def __init__(self, healthy=False, salvaged=0, unreadable=0, backup=None, problem=""):
        self.healthy, self.salvaged, self.unreadable, self.backup, self.problem = (
            healthy, salvaged, unreadable, backup, problem)


def check(path: str) -> str:
    """"ok", or the damage SQLite's integrity check found (pages it cannot even read, a file that
    is not a database); reads only, and leaves no -wal/-shm behind that was not there. A store
    that cannot be checked now (busy, a full disk, an I/O error, unreadable) raises its
    StoreUnavailable: that is no damage."""
    try:
        with _read_only(path) as db:
            return db.execute("PRAGMA integrity_check").fetchone()[0]
    except sqlite3.DatabaseError as e:
        typed = unavailable(e, path)
        if isinstance(typed, StoreCorrupt):
            return str(e)
        raise typed or StoreError(f"the conversation store {path} cannot be checked now ({e}); "
                                  f"it was left as it is") from None


@contextlib.contextmanager
def _read_only(path):
    """A read-only connection to *path*; the -wal and -shm files SQLite makes for it are removed
    on the way out (those that were there before are kept: a -wal holds committed writes)."""
    had = {s for s in ("-wal", "-shm") if os.path.exists(path + s)}
    from urllib.parse import quote

    db = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        yield db
    finally:
        db.close()
        for s in {"-wal", "-shm"} - had:
            try:
                os.unlink(path + s)
            except OSError:
                pass


def recover(context_dir: str) -> Recovery:
    """Salvage a damaged store: move it aside and copy every readable message into a new one.

    A store that passes ``PRAGMA integrity_check`` is never moved (``Recovery.healthy``): a full
    disk or a read-only store is not damage. Nothing is deleted.
    """
    path = os.path.join(context_dir, DB_NAME)
    if not os.path.exists(path):
        raise StoreError(f"no store at {path}", ExitCode.NOT_FOUND)
    problem = check(path)
    if problem == "ok":
        return Recovery(healthy=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    backup = f"{path}.corrupt-{stamp}"
    try:
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.replace(path + suffix, backup + suffix)
    except OSError as e:
        raise unavailable(e, path) or StoreError(f"cannot move {path} aside: {e.strerror}") from None
    salvaged, lost = _salvage(backup)
    new = Store(context_dir)
    stored = 0
    with new.transaction():
        for r in salvaged:
            data = r.get("data")
            try:
                stored += new.db.execute(
                    "INSERT INTO messages(id, session, role, content, ts, importance, source, tokens, output_path,"
                    " output_chars, dedup, kind, tool, call_id, subtype, data, legacy)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
                    (r.get("id"), r.get("session") or "", r.get("role") if r.get("role") in ROLES else "system",
                     r.get("content") or "", r.get("ts") or 0.0,
                     min(max(float(r.get("importance") or 0.5), 0), 1), r.get("source") or "recovered",
                     r.get("tokens") or 0, r.get("output_path"), r.get("output_chars"), r.get("dedup"),
                     r.get("kind") or "", r.get("tool"), r.get("call_id"), r.get("subtype"),
                     data if isinstance(data, str) else None, 1 if r.get("legacy") else 0)).rowcount
            except (sqlite3.DatabaseError, TypeError, ValueError):
                lost = None if lost is None else lost + 1  # a row read but not storable
        backfill_kinds(new.db)  # rows salvaged from an older schema get their kinds
        backfill_provenance(new.db)
    new.close()
    return Recovery(salvaged=stored, unreadable=lost, backup=backup, problem=problem)


def _salvage(backup):
    """(the readable rows of messages, how many ids could not be read; None when unknown)."""
    salvaged, lost = [], 0
    try:
        with _read_only(backup) as old:
            try:
                hi = old.execute("SELECT max(id) FROM messages").fetchone()[0] or 0
            except sqlite3.DatabaseError:
                # the table (or the schema naming it) cannot be read: how many rows it held is unknown
                return _scan_unbounded(old), None
            for lo in range(1, hi + 1, 500):
                try:
                    salvaged += [dict(r) for r in old.execute(
                        "SELECT * FROM messages WHERE id BETWEEN ? AND ?", (lo, lo + 499))]
                except sqlite3.DatabaseError:
                    for i in range(lo, min(lo + 500, hi + 1)):
                        try:
                            salvaged += [dict(r) for r in old.execute("SELECT * FROM messages WHERE id = ?", (i,))]
                        except sqlite3.DatabaseError:
                            lost += 1  # this id's page cannot be read (there may have been no row)
    except sqlite3.DatabaseError:
        return salvaged, None
    return salvaged, lost


def _scan_unbounded(old, step=500, give_up=20):
    """The rows readable by id range when max(id) is not: stop after *give_up* empty ranges."""
    rows, empty, lo = [], 0, 1
    while empty < give_up:
        try:
            got = [dict(r) for r in old.execute("SELECT * FROM messages WHERE id BETWEEN ? AND ?",
                                                (lo, lo + step - 1))]
        except sqlite3.DatabaseError:
            got = []
        rows += got
        empty = 0 if got else empty + 1
        lo += step
    return rows
