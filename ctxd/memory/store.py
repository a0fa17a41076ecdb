"""The per-project conversation store: SQLite (WAL, FTS5 trigram), files 0600.

One database per project at ``<context dir>/store.db``. Every message is
redacted before it is stored; a content larger than the offload threshold is
written (redacted) to ``outputs/<hash>.txt`` and the row keeps a head/tail
preview naming that file. Imports are idempotent through a unique ``dedup``
key per message. The schema is versioned with ``PRAGMA user_version`` and
migrated forward on open.
"""

import contextlib
import os
import sqlite3
import time

from ctxd.activation.fileio import atomic_write, sha256_hex
from ctxd.errors import CtxdError, ExitCode
from ctxd.isotime import format_utc
from ctxd.memory import tokens
from ctxd.memory.layout import DB_NAME, OUTPUTS
from ctxd.memory.store_concepts import ConceptsTables
from ctxd.memory.store_embed import EmbedTables
from ctxd.memory.store_facts import FactsTables
from ctxd.memory.store_session import SessionTables
from ctxd.memory.store_sync import SyncTables
from ctxd.memory.store_tasks import TasksTables

ROLES = ("user", "assistant", "system", "tool")
DEFAULT_OFFLOAD = 8192  # characters
PREVIEW_HEAD = 1000
PREVIEW_TAIL = 1000
BUSY_TIMEOUT = 30.0  # seconds a write waits for another process's lock (AI CLI hooks wait far less)

MIGRATIONS = [
    # 1: messages, full-text index, transcript offsets
    """
    CREATE TABLE IF NOT EXISTS messages(
        id INTEGER PRIMARY KEY,
        session TEXT NOT NULL DEFAULT '',
        role TEXT NOT NULL CHECK (role IN ('user','assistant','system','tool')),
        content TEXT NOT NULL,
        ts REAL NOT NULL,
        importance REAL NOT NULL DEFAULT 0.5 CHECK (importance >= 0 AND importance <= 1),
        source TEXT NOT NULL DEFAULT 'cli',
        tokens INTEGER NOT NULL DEFAULT 0,
        output_path TEXT,
        output_chars INTEGER,
        dedup TEXT UNIQUE
    );
    CREATE INDEX IF NOT EXISTS messages_session ON messages(session, id);
    CREATE INDEX IF NOT EXISTS messages_ts ON messages(ts);
    CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
        content, content='messages', content_rowid='id', tokenize='trigram');
    CREATE TRIGGER IF NOT EXISTS messages_ai AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    END;
    CREATE TRIGGER IF NOT EXISTS messages_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    END;
    CREATE TABLE IF NOT EXISTS offsets(
        path TEXT PRIMARY KEY,
        offset INTEGER NOT NULL,
        head TEXT NOT NULL DEFAULT '',
        updated REAL NOT NULL
    );
    """,
    # 2: structured facts extracted from messages (merged incrementally), key/value meta
    """
    CREATE TABLE IF NOT EXISTS facts(
        id INTEGER PRIMARY KEY,
        msg_id INTEGER NOT NULL,
        ts REAL NOT NULL,
        role TEXT NOT NULL,
        tag TEXT NOT NULL,
        kinds TEXT NOT NULL,
        text TEXT NOT NULL,
        norm TEXT NOT NULL,
        topic TEXT NOT NULL DEFAULT '',
        priority REAL NOT NULL DEFAULT 0,
        superseded_by INTEGER
    );
    CREATE INDEX IF NOT EXISTS facts_msg ON facts(msg_id);
    CREATE INDEX IF NOT EXISTS facts_topic ON facts(topic, id);
    CREATE INDEX IF NOT EXISTS facts_live ON facts(superseded_by, priority DESC, id);
    CREATE INDEX IF NOT EXISTS facts_norm ON facts(norm);
    CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TRIGGER IF NOT EXISTS messages_ad_facts AFTER DELETE ON messages BEGIN
        DELETE FROM facts WHERE msg_id = old.id;
    END;
    """,
    # 3: working memory: the task at hand and the notes attached to it
    """
    CREATE TABLE IF NOT EXISTS tasks(
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('open', 'done')),
        started REAL NOT NULL,
        finished REAL
    );
    CREATE TABLE IF NOT EXISTS task_notes(
        id INTEGER PRIMARY KEY,
        task_id INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
        ts REAL NOT NULL,
        text TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS tasks_status ON tasks(status, id);
    """,
    # 4: concepts a learner practises (ctxd.handoff.knowledge): mastery (EMA), errors,
    #    prerequisites (JSON list), the FSRS card (JSON) and its due time; observations
    #    remember which archive key point was already applied, so seeding is idempotent
    """
    CREATE TABLE IF NOT EXISTS concepts(
        key TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        mastery REAL NOT NULL DEFAULT 0 CHECK (mastery >= 0 AND mastery <= 1),
        practices INTEGER NOT NULL DEFAULT 0,
        errors INTEGER NOT NULL DEFAULT 0,
        last_practice REAL,
        prerequisites TEXT NOT NULL DEFAULT '[]',
        card TEXT,
        due REAL,
        created REAL NOT NULL
    );
    CREATE INDEX IF NOT EXISTS concepts_due ON concepts(due);
    CREATE INDEX IF NOT EXISTS concepts_last ON concepts(last_practice);
    CREATE TABLE IF NOT EXISTS concept_observations(
        concept TEXT NOT NULL,
        source TEXT NOT NULL,
        level TEXT NOT NULL,
        ts REAL NOT NULL,
        PRIMARY KEY (concept, source)
    );
    """,
    # 5: the typed model (ctxd.memory.items): each message has a kind (prompt, reply, tool_call,
    #    tool_result, summary, meta) and the fields that kind carries: the tool's name, the call id
    #    linking a result to its call, a subtype (for meta and summary) and a JSON object of the
    #    rest (a call's arguments, paths and command; a result's error status, exit code and size).
    #    Rows written before are re-parsed into kinds (_backfill_kinds); what cannot be re-parsed
    #    keeps its content, gets the kind its role implies and legacy = 1.
    """
    ALTER TABLE messages ADD COLUMN kind TEXT NOT NULL DEFAULT '';
    ALTER TABLE messages ADD COLUMN tool TEXT;
    ALTER TABLE messages ADD COLUMN call_id TEXT;
    ALTER TABLE messages ADD COLUMN subtype TEXT;
    ALTER TABLE messages ADD COLUMN data TEXT;
    ALTER TABLE messages ADD COLUMN legacy INTEGER NOT NULL DEFAULT 0;
    CREATE TRIGGER IF NOT EXISTS messages_au AFTER UPDATE OF content ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
        INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    END;
    """,
    "_backfill_kinds",
    """
    CREATE INDEX IF NOT EXISTS messages_kind ON messages(kind, id);
    CREATE INDEX IF NOT EXISTS messages_call ON messages(call_id) WHERE call_id IS NOT NULL;
    """,
    # 6: a word index for ranked recall (ctxd.memory.recall): unicode61 without diacritics,
    #    porter stemming for English; the trigram index (messages_fts) serves CJK and substrings.
    #    Both follow the messages table through triggers. ``injected``: which messages an AI CLI
    #    session was already given (its SessionStart context, earlier per-prompt recalls).
    """
    CREATE VIRTUAL TABLE IF NOT EXISTS messages_words USING fts5(
        content, content='messages', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2');
    CREATE TRIGGER IF NOT EXISTS messages_words_ai AFTER INSERT ON messages BEGIN
        INSERT INTO messages_words(rowid, content) VALUES (new.id, new.content);
    END;
    CREATE TRIGGER IF NOT EXISTS messages_words_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_words(messages_words, rowid, content) VALUES ('delete', old.id, old.content);
    END;
    CREATE TRIGGER IF NOT EXISTS messages_words_au AFTER UPDATE OF content ON messages BEGIN
        INSERT INTO messages_words(messages_words, rowid, content) VALUES ('delete', old.id, old.content);
        INSERT INTO messages_words(rowid, content) VALUES (new.id, new.content);
    END;
    INSERT INTO messages_words(messages_words) VALUES ('rebuild');
    CREATE INDEX IF NOT EXISTS messages_session_ts ON messages(session, ts, id);
    CREATE TABLE IF NOT EXISTS injected(
        session TEXT NOT NULL,
        msg_id INTEGER NOT NULL,
        ts REAL NOT NULL,
        PRIMARY KEY (session, msg_id)
    ) WITHOUT ROWID;
    CREATE TRIGGER IF NOT EXISTS messages_ad_injected AFTER DELETE ON messages BEGIN
        DELETE FROM injected WHERE msg_id = old.id;
    END;
    """,
    # 7: sharing through git (ctxd.memory.sync): who an item came from (author: git user.email,
    #    machine: its host; NULL for what was written here); ``sync_unsent``, the ids of the rows not
    #    written to a segment yet (a queue filled by a trigger: SQLite reuses the largest id after a
    #    delete, so an id high-water mark would miss rows); tombstones of every deleted message that
    #    has a dedup key (sent rows always have one), so deletions travel and stale segments never
    #    resurrect them (none for a private session's row that never left: its key would leave);
    #    sessions kept private; the segment blobs imported or written here; what was sent of tasks
    #    and handoffs (by digest).
    """
    ALTER TABLE messages ADD COLUMN author TEXT;
    ALTER TABLE messages ADD COLUMN machine TEXT;
    ALTER TABLE tasks ADD COLUMN sync_key TEXT;
    ALTER TABLE tasks ADD COLUMN author TEXT;
    CREATE UNIQUE INDEX IF NOT EXISTS tasks_sync_key ON tasks(sync_key) WHERE sync_key IS NOT NULL;
    INSERT INTO meta(key, value) VALUES ('sync_machine', lower(hex(randomblob(8)))) ON CONFLICT DO NOTHING;
    CREATE TABLE IF NOT EXISTS sync_unsent(id INTEGER PRIMARY KEY);
    INSERT INTO sync_unsent(id) SELECT id FROM messages;
    CREATE TRIGGER IF NOT EXISTS messages_ai_unsent AFTER INSERT ON messages BEGIN
        INSERT INTO sync_unsent(id) VALUES (new.id) ON CONFLICT DO NOTHING;
    END;
    CREATE TABLE IF NOT EXISTS tombstones(
        id INTEGER PRIMARY KEY,
        key TEXT NOT NULL UNIQUE,
        ts REAL NOT NULL,
        author TEXT
    );
    CREATE TABLE IF NOT EXISTS private_sessions(session TEXT PRIMARY KEY, ts REAL NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS sync_blobs(
        oid TEXT PRIMARY KEY,
        path TEXT NOT NULL,
        status TEXT NOT NULL,
        items INTEGER NOT NULL DEFAULT 0,
        ts REAL NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS sync_sent(key TEXT PRIMARY KEY, digest TEXT NOT NULL) WITHOUT ROWID;
    CREATE TRIGGER IF NOT EXISTS messages_ad_sync AFTER DELETE ON messages BEGIN
        INSERT INTO tombstones(key, ts) SELECT old.dedup, (julianday('now') - 2440587.5) * 86400.0
        WHERE old.dedup IS NOT NULL AND (old.session NOT IN (SELECT session FROM private_sessions)
                                         OR old.id NOT IN (SELECT id FROM sync_unsent))
        ON CONFLICT DO NOTHING;
        DELETE FROM sync_unsent WHERE id = old.id;
    END;
    """,
    # 8: where a received item came from (ctxd.memory.sync): ``origin``, the sending store (a hash of
    #    its git user.email and machine id; NULL: written here); ``sync_tombs``, received deletions by
    #    key and origin (a deletion removes only its sender's own items)
    """
    ALTER TABLE messages ADD COLUMN origin TEXT;
    ALTER TABLE tasks ADD COLUMN origin TEXT;
    CREATE TABLE IF NOT EXISTS sync_tombs(
        key TEXT NOT NULL,
        origin TEXT NOT NULL,
        ts REAL NOT NULL,
        PRIMARY KEY (key, origin)
    ) WITHOUT ROWID;
    """,
    # 9: provenance (ctxd.memory.items.PROVENANCES): who wrote each item, human | agent | subagent |
    #    injected | ctxd. Rows written before get theirs from their kind and text (_backfill_provenance):
    #    a stored "prompt" or system message that is ctxd's own text (a teach prompt) becomes meta.
    """
    ALTER TABLE messages ADD COLUMN provenance TEXT NOT NULL DEFAULT '';
    """,
    "_backfill_provenance",
    # 10: semantic recall (ctxd.memory.embed): one row per message the embedder has read, its
    #    vector (int8, ``scale`` back to unit length) and sign bits of the mean-centred vector for
    #    the scan; vec NULL for a kind that is not embedded. Rows go with their message.
    """
    CREATE TABLE IF NOT EXISTS embeddings(
        id INTEGER PRIMARY KEY,
        model TEXT NOT NULL,
        scale REAL,
        bits BLOB,
        vec BLOB
    );
    CREATE TRIGGER IF NOT EXISTS messages_ad_embeddings AFTER DELETE ON messages BEGIN
        DELETE FROM embeddings WHERE id = old.id;
    END;
    CREATE TRIGGER IF NOT EXISTS messages_au_embeddings AFTER UPDATE OF content ON messages BEGIN
        DELETE FROM embeddings WHERE id = old.id;
    END;
    """,
]
SCHEMA_VERSION = 10  # PRAGMA user_version after the last migration (some steps share a version)
# the user_version each step of MIGRATIONS brings the store to
_STEP_VERSION = [1, 2, 3, 4, 5, 5, 5, 6, 7, 8, 9, 9, 10]


class StoreError(CtxdError):
    exit_code = ExitCode.ERROR


class StoreUnavailable(StoreError):
    """The store cannot take a write now (busy, full, read-only, corrupt): what an AI CLI hook
    was given goes to the spool (ctxd.memory.spool) instead."""

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


_LAYOUTS = {}


class Message:
    """One stored item: its kind (ctxd.memory.items.KINDS) and the fields that kind carries.

    ``data`` is the kind's JSON object, decoded (a tool call's ``args``, ``paths`` and
    ``command``; a tool result's ``is_error``, ``exit_code`` and ``size``), or None.
    """

    __slots__ = ("id", "session", "role", "content", "ts", "importance", "source", "tokens",
                 "output_path", "output_chars", "kind", "tool", "call_id", "subtype", "data", "author",
                 "machine", "provenance", "legacy", "dedup")
    _COLUMNS = __slots__[:-2]

    def __init__(self, row):
        keys = tuple(row.keys())
        layout = _LAYOUTS.get(keys)
        if layout is None:  # where each field sits in rows of this shape (a few shapes per run)
            layout = _LAYOUTS[keys] = [(k, keys.index(k) if k in keys else None) for k in self.__slots__]
        for k, i in layout:
            setattr(self, k, None if i is None else row[i])
        self.legacy = bool(self.legacy)
        if isinstance(self.data, str):
            self.data = _loads(self.data)

    def to_json(self):
        d = {k: getattr(self, k) for k in self.__slots__ if k not in ("dedup",)}
        d["time"] = format_utc(self.ts)
        return d


def _loads(text):
    import json

    try:
        return json.loads(text)
    except ValueError:
        return None


def _dumps(value):
    import json

    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _private(path):
    """No access for group and others; never adds a permission (a store made read-only stays so)."""
    try:
        mode = os.stat(path).st_mode & 0o777
        if mode & 0o077:
            os.chmod(path, mode & 0o700)
    except OSError:
        pass


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
        return StoreCorrupt(_corrupt_message(path, text))
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


def _corrupt_message(path, why):
    return (f"the conversation store {path} is corrupt ({why}). Nothing was changed. "
            f"Recover what can be read with: ctxd chat recover (the damaged file is kept)")


def _full_message(path, why):
    return (f"the disk holding the conversation store {path} is full ({why}); nothing was written. "
            f"Free some space; the store itself is intact")


def _readonly_message(path, why):
    return (f"the conversation store {path} is read-only ({why}); it can be read, not written. "
            f"Make it writable (file, directory and file system) to record again")


def _typed(exc, path):
    """*exc* as the store's typed error when it is one (busy, full, read-only, corrupt), else itself."""
    return unavailable(exc, path) or exc


class Store(FactsTables, TasksTables, ConceptsTables, SessionTables, SyncTables, EmbedTables):
    def __init__(self, context_dir, *, redactor=None, offload_threshold=DEFAULT_OFFLOAD, create=True,
                 busy_timeout=BUSY_TIMEOUT):
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
                typed = StoreCorrupt(_corrupt_message(self.path, e))
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
        # one transaction for every step: a migration killed halfway leaves the store as it was
        db.execute("BEGIN IMMEDIATE")
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            for step, target in zip(MIGRATIONS, _STEP_VERSION):
                if target <= version:
                    continue
                if step.startswith("_"):
                    globals()[step](db)
                else:
                    for stmt in _statements(step):
                        db.execute(stmt)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def close(self):
        self.db.close()

    @contextlib.contextmanager
    def transaction(self):
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
            raise _typed(e, self.path) from None
        try:
            yield self.db
        except sqlite3.DatabaseError as e:
            self._rollback()
            raise _typed(e, self.path) from None
        except BaseException:
            self._rollback()
            raise
        try:
            self.db.execute("COMMIT")
        except sqlite3.DatabaseError as e:
            self._rollback()
            raise _typed(e, self.path) from None

    @contextlib.contextmanager
    def waiting(self, seconds):
        """Inside, a write waits at most *seconds* for another process's lock (0: not at all)."""
        self.db.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")
        try:
            yield
        finally:
            self.db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")

    def _rollback(self):
        if self.db.in_transaction:  # SQLite may have rolled back already (SQLITE_FULL, say)
            self.db.execute("ROLLBACK")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- writing --------------------------------------------------------------
    def prepare(self, content, redact=True):
        """(stored content, output_path, output_chars): redacted, offloaded if huge."""
        if redact and self.redactor is not None:
            content, _ = self.redactor(content)
        if len(content) <= self.offload_threshold:
            return content, None, None
        digest = sha256_hex(content)[:24]
        rel = os.path.join(OUTPUTS, f"{digest}.txt")
        full = os.path.join(self.dir, rel)
        if not os.path.exists(full):
            atomic_write(full, content, mode=0o600)
        omitted = len(content) - PREVIEW_HEAD - PREVIEW_TAIL
        preview = (f"{content[:PREVIEW_HEAD]}\n[... {omitted} characters omitted; full output "
                   f"({len(content)} characters): {full} ...]\n{content[-PREVIEW_TAIL:]}")
        return preview, full, len(content)

    def add(self, role, content, *, session="", source="cli", importance=0.5, ts=None, dedup=None,
            redact=True):
        """Store one message; return its id, or None when *dedup* was seen before."""
        ids = self.add_many([dict(role=role, content=content, session=session, source=source,
                                  importance=importance, ts=ts, dedup=dedup)], redact=redact)
        return ids[0] if ids else None

    def add_many(self, messages, redact=True):
        """Store messages in one transaction; return the ids of those added.

        Each message is a dict of the typed model (ctxd.memory.items): ``kind`` and the
        fields it carries (``tool``, ``call_id``, ``subtype``, ``data``), ``content``,
        ``session``, ``source``, ``ts`` (when it happened), ``importance``, ``dedup``.
        ``role`` follows from the kind; a dict with only a role gets the kind the role
        implies.
        """
        from ctxd.memory import items

        rows = []
        for m in messages:
            kind, role = m.get("kind"), m.get("role")
            if kind is None:
                if role not in ROLES:
                    raise StoreError(f"unknown role {role!r} (one of {', '.join(ROLES)})", ExitCode.USAGE)
                kind = items.kind_of_role(role)
            elif kind not in items.KINDS:
                raise StoreError(f"unknown kind {kind!r} (one of {', '.join(items.KINDS)})", ExitCode.USAGE)
            if role is None:
                role = items.ROLE_OF[kind]
            elif role not in ROLES:
                raise StoreError(f"unknown role {role!r} (one of {', '.join(ROLES)})", ExitCode.USAGE)
            imp = float(m.get("importance", 0.5) if m.get("importance") is not None else 0.5)
            if not 0.0 <= imp <= 1.0:
                raise StoreError(f"importance must be between 0 and 1 (got {imp})", ExitCode.USAGE)
            try:
                content, out_path, out_chars = self.prepare(m["content"], redact=redact)
            except OSError as e:  # the offloaded output could not be written: disk full, read-only
                raise _typed(e, self.path) from None
            data = m.get("data")
            if data is not None and redact and self.redactor is not None:
                data = _loads(self.redactor(_dumps(data))[0])  # secrets in arguments too
            subtype = m.get("subtype")
            settled = items.settle(dict(m, kind=kind, subtype=subtype))  # provenance; ctxd's text is no turn
            if settled[0] != kind:
                kind, role = settled[0], items.ROLE_OF[settled[0]]
            subtype, provenance = settled[1], settled[2]
            rows.append((m.get("session") or "", role, content, float(m.get("ts") or time.time()), imp,
                         m.get("source") or "cli", tokens.estimate(content), out_path, out_chars,
                         m.get("dedup"), kind, m.get("tool"), m.get("call_id"), subtype,
                         _dumps(data), 1 if m.get("legacy") else 0, provenance))
        added = []
        if not rows:
            return added
        with self.transaction():
            for r in rows:
                cur = self.db.execute(
                    "INSERT INTO messages(session, role, content, ts, importance, source, tokens, output_path,"
                    " output_chars, dedup, kind, tool, call_id, subtype, data, legacy, provenance)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(dedup) DO NOTHING", r)
                if cur.rowcount:
                    added.append(cur.lastrowid)
        return added

    # -- reading --------------------------------------------------------------
    def count(self):
        return self.db.execute("SELECT count(*) FROM messages").fetchone()[0]

    def get(self, mid):
        row = self.db.execute("SELECT * FROM messages WHERE id = ?", (mid,)).fetchone()
        return Message(row) if row else None

    def recent(self, n=20, session=None):
        """The last *n* messages by when they happened (not when they were stored), oldest first:
        files imported in any order, and live records reconciled later, keep their places."""
        if session is None:
            rows = self.db.execute("SELECT * FROM messages ORDER BY ts DESC, id DESC LIMIT ?", (n,)).fetchall()
        else:
            rows = self.db.execute("SELECT * FROM messages WHERE session = ? ORDER BY ts DESC, id DESC LIMIT ?",
                                   (session, n)).fetchall()
        return [Message(r) for r in reversed(rows)]

    def iter_all(self, session=None, batch=1000):
        last = 0
        while True:
            if session is None:
                rows = self.db.execute("SELECT * FROM messages WHERE id > ? ORDER BY id LIMIT ?",
                                       (last, batch)).fetchall()
            else:
                rows = self.db.execute("SELECT * FROM messages WHERE id > ? AND session = ? ORDER BY id LIMIT ?",
                                       (last, session, batch)).fetchall()
            if not rows:
                return
            for r in rows:
                yield Message(r)
            last = rows[-1]["id"]

    def search(self, query, limit=20):
        """Full-text search (trigram: works for CJK too); newest first."""
        query = query.strip()
        if not query:
            return []
        if len(query) >= 3:
            phrase = '"' + query.replace('"', '""') + '"'
            rows = self.db.execute(
                "SELECT m.* FROM messages_fts f JOIN messages m ON m.id = f.rowid "
                "WHERE messages_fts MATCH ? ORDER BY m.id DESC LIMIT ?", (phrase, limit)).fetchall()
        else:  # trigrams need 3 characters; short queries scan
            like = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            rows = self.db.execute("SELECT * FROM messages WHERE content LIKE ? ESCAPE '\\' ORDER BY id DESC "
                                   "LIMIT ?", (like, limit)).fetchall()
        return [Message(r) for r in rows]

    # -- ranked recall (ctxd.memory.recall builds the MATCH expressions) ---------
    def match(self, expr, limit, *, index="words"):
        """[(id, bm25)] of the messages matching an FTS5 expression, best first (bm25 is
        negative: lower is better). *index*: "words" (stemmed words) or "trigrams" (CJK,
        substrings). An expression FTS5 cannot parse matches nothing."""
        table = {"words": "messages_words", "trigrams": "messages_fts"}[index]
        try:
            return [(r[0], r[1]) for r in self.db.execute(
                f"SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH ? ORDER BY bm25({table}) LIMIT ?",
                (expr, limit))]
        except sqlite3.OperationalError:
            return []

    def offloaded(self, n):
        """The newest *n* messages whose content was offloaded to a file, newest first."""
        return [Message(r) for r in self.db.execute(
            "SELECT * FROM messages WHERE output_path IS NOT NULL ORDER BY id DESC LIMIT ?", (n,))]

    def match_count(self, expr, cap=100_000):
        """How many messages match an FTS5 expression of the word index (at most *cap*)."""
        try:
            return self.db.execute("SELECT count(*) FROM (SELECT 1 FROM messages_words WHERE messages_words MATCH ? "
                                   "LIMIT ?)", (expr, cap)).fetchone()[0]
        except sqlite3.OperationalError:
            return 0

    def messages(self, ids):
        """The messages with these ids, by id."""
        ids = list(ids)
        out = []
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            out += [Message(r) for r in self.db.execute(
                f"SELECT * FROM messages WHERE id IN ({','.join('?' * len(chunk))})", chunk)]
        return sorted(out, key=lambda m: m.id)

    def beside(self, m):
        """(the message before *m*, the message after it) in its session, by time, or None."""
        return self.step(m, 0), self.step(m, 1)

    def step(self, m, side):
        """The message just before (*side* 0) or after (1) *m* in its session, by time, or None."""
        if side:
            sql = ("SELECT * FROM messages WHERE session = ? AND (ts > ? OR (ts = ? AND id > ?)) "
                   "ORDER BY ts, id LIMIT 1")
        else:
            sql = ("SELECT * FROM messages WHERE session = ? AND (ts < ? OR (ts = ? AND id < ?)) "
                   "ORDER BY ts DESC, id DESC LIMIT 1")
        row = self.db.execute(sql, (m.session, m.ts, m.ts, m.id)).fetchone()
        return Message(row) if row else None

    @contextlib.contextmanager
    def deadline(self, seconds):
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

    def mark_injected(self, session, ids):
        if not session or not ids:
            return
        now = time.time()
        with self.transaction():
            self.db.executemany("INSERT INTO injected(session, msg_id, ts) VALUES (?,?,?) ON CONFLICT DO NOTHING",
                                [(session, i, now) for i in ids])

    def injected_ids(self, session):
        return {r[0] for r in self.db.execute("SELECT msg_id FROM injected WHERE session = ?", (session,))}

    def session_ids(self, session, limit=20000):
        """The ids of *session*'s own messages (the newest *limit*)."""
        return {r[0] for r in self.db.execute(
            "SELECT id FROM messages WHERE session = ? ORDER BY id DESC LIMIT ?", (session, limit))}

    def last_id_before(self, ts, mid):
        """The largest id of the messages that happened before (*ts*, *mid*), 0 when none did."""
        row = self.db.execute("SELECT max(id) FROM messages WHERE ts < ? OR (ts = ? AND id < ?)",
                              (ts, ts, mid)).fetchone()
        return row[0] or 0

    def newest_ts(self):
        row = self.db.execute("SELECT max(ts) FROM messages").fetchone()
        return row[0] if row and row[0] is not None else 0.0

    def has_dedup(self, key):
        return self.db.execute("SELECT 1 FROM messages WHERE dedup = ?", (key,)).fetchone() is not None

    def dedup_range(self, prefixes):
        """Rows (id, role, content, dedup) whose dedup key starts with one of *prefixes*, by id."""
        rows = []
        for prefix in prefixes:
            hi = prefix[:-1] + chr(ord(prefix[-1]) + 1)  # every key that starts with prefix
            rows += self.db.execute("SELECT id, role, content, dedup FROM messages WHERE dedup >= ? AND dedup < ?"
                                    " ORDER BY id", (prefix, hi)).fetchall()
        return sorted(rows, key=lambda r: r["id"])

    def twins(self, session, role, content):
        """Rows (id, dedup) of *session* with this role and content, by id."""
        return self.db.execute("SELECT id, dedup FROM messages WHERE session = ? AND role = ? AND content = ? "
                               "ORDER BY id", (session, role, content)).fetchall()

    def session_replies(self, session):
        """Rows (id, content, dedup) of *session*'s replies, in the order they happened."""
        return self.db.execute("SELECT id, content, dedup FROM messages WHERE session = ? AND kind = 'reply' "
                               "ORDER BY ts, id", (session,)).fetchall()

    def last_session(self):
        row = self.db.execute("SELECT session FROM messages ORDER BY ts DESC, id DESC LIMIT 1").fetchone()
        return row[0] if row else None

    def sessions(self):
        return [r[0] for r in self.db.execute(
            "SELECT session FROM messages GROUP BY session ORDER BY max(ts) DESC, max(id) DESC").fetchall()]

    # -- deleting -------------------------------------------------------------
    def forget(self, *, mid=None, before=None, session=None, everything=False):
        """Delete messages (and their offloaded files); return how many."""
        if everything:
            where, args = "1", ()
        elif mid is not None:
            where, args = "id = ?", (mid,)
        elif before is not None:
            where, args = "ts < ?", (before,)
        elif session is not None:
            where, args = "session = ?", (session,)
        else:
            raise StoreError("say what to forget: --id, --before, --session or --all", ExitCode.USAGE)
        return self._delete(where, [args])

    def _delete(self, where, arg_sets):
        """Delete the rows matching *where* for each argument tuple, in one transaction,
        and the offloaded files no remaining message shares. Returns how many rows."""
        n, paths_ = 0, []
        with self.transaction():
            for args in arg_sets:
                paths_ += [r[0] for r in self.db.execute(
                    f"SELECT output_path FROM messages WHERE ({where}) AND output_path IS NOT NULL", args)]
                n += self.db.execute(f"DELETE FROM messages WHERE {where}", args).rowcount
            still = {r[0] for r in self.db.execute(
                "SELECT output_path FROM messages WHERE output_path IS NOT NULL")} if paths_ else set()
        for p in set(paths_) - still:  # an identical output may be shared by another message
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
        return n

    # -- transcript offsets ---------------------------------------------------
    def get_offset(self, path):
        row = self.db.execute("SELECT offset, head FROM offsets WHERE path = ?", (path,)).fetchone()
        return (row[0], row[1]) if row else (0, "")

    def set_offset(self, path, offset, head):
        self.db.execute("INSERT INTO offsets(path, offset, head, updated) VALUES (?,?,?,?) "
                        "ON CONFLICT(path) DO UPDATE SET offset = excluded.offset, head = excluded.head, "
                        "updated = excluded.updated", (path, offset, head, time.time()))

    def integrity(self):
        """"ok", or the problems PRAGMA integrity_check reports (pages so damaged that the check
        itself cannot read them are such a problem too: SQLite's own message)."""
        try:
            return self.db.execute("PRAGMA integrity_check").fetchone()[0]
        except sqlite3.DatabaseError as e:
            return str(e)

    # -- spool markers (ctxd.memory.spool) ----------------------------------------
    def spool_marked(self, key):
        return self.db.execute("SELECT 1 FROM meta WHERE key = ?", (key,)).fetchone() is not None

    def mark_spool(self, key):
        """Inside the transaction that stored a spooled entry: it is stored."""
        self.db.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT DO NOTHING", (key, str(time.time())))

    def forget_spool_mark(self, key):
        with self.transaction():
            self.db.execute("DELETE FROM meta WHERE key = ?", (key,))

    # -- deleting by import key -----------------------------------------------
    def forget_dedup(self, keys):
        """Delete the messages whose dedup key is one of *keys* or starts with key + ":".

        Importers use it when a transcript takes back what it said (a Gemini
        rewind). Offloaded files no other message shares go too. Returns how many.
        """
        keys = [k for k in keys if k]
        if not keys:
            return 0
        where = "dedup = ? OR (dedup >= ? AND dedup < ?)"  # the range: key + ":" ... key + ";"
        return self._delete(where, [(k, k + ":", k + ";") for k in keys])


def _statements(script):
    buf = []
    for line in script.strip().splitlines():
        buf.append(line)
        joined = "\n".join(buf)
        if line.rstrip().endswith(";") and sqlite3.complete_statement(joined):
            yield joined
            buf = []
    if buf and "\n".join(buf).strip():
        yield "\n".join(buf)


def _batches(db, sql, batch):
    """The rows of *sql* (``... WHERE id > ? ...``, without ORDER BY or LIMIT) in batches of *batch*,
    by ascending id: a backfill can change the rows of a batch before it reads the next."""
    last = 0
    while True:
        rows = db.execute(f"{sql} ORDER BY id LIMIT ?", (last, batch)).fetchall()
        if not rows:
            return
        yield rows
        last = rows[-1]["id"]


def _backfill_kinds(db, batch=2000):
    """Migration 5: give every existing row its kind, re-parsed from the text the old
    importers flattened (``[tool_use Edit] {...}`` -> a tool_call with its arguments and
    paths). Runs inside the migration's transaction: all rows or none."""
    from ctxd.memory import items

    for rows in _batches(db, "SELECT id, role, content, source FROM messages WHERE id > ? AND kind = ''", batch):
        for r in rows:
            f = items.reparse_legacy(r["role"], r["content"], r["source"])
            content = f.get("content", r["content"])
            db.execute("UPDATE messages SET kind = ?, tool = ?, call_id = ?, subtype = ?, data = ?, legacy = ?"
                       " WHERE id = ?", (f["kind"], f.get("tool"), f.get("call_id"), f.get("subtype"),
                                         _dumps(f.get("data")), 1 if f.get("legacy") else 0, r["id"]))
            if content != r["content"]:  # the FTS index follows (messages_au)
                db.execute("UPDATE messages SET content = ?, tokens = ? WHERE id = ?",
                           (content, tokens.estimate(content), r["id"]))


def _backfill_provenance(db, batch=2000):
    """Migration 9: give every row without a provenance the one its kind and text imply
    (items.settle); ctxd's own text stored as a prompt or system message becomes meta."""
    from ctxd.memory import items

    sql = "SELECT id, kind, subtype, content, source FROM messages WHERE id > ? AND provenance = ''"
    for rows in _batches(db, sql, batch):
        for r in rows:
            kind, subtype = r["kind"], r["subtype"]
            if r["source"] == "teach" or (kind == "meta" and not subtype and items.generated_by_ctxd(r["content"])):
                kind, subtype, provenance = "meta", "ctxd", "ctxd"
            else:
                kind, subtype, provenance = items.settle({"kind": kind, "subtype": subtype, "content": r["content"]})
            db.execute("UPDATE messages SET kind = ?, subtype = ?, provenance = ? WHERE id = ?",
                       (kind, subtype, provenance, r["id"]))
            if kind != r["kind"]:
                db.execute("UPDATE messages SET role = ? WHERE id = ?", (items.ROLE_OF[kind], r["id"]))


class Recovery:
    """What ``recover`` did: *healthy* (the store passed its integrity check and was left as it
    is), else the messages *salvaged*, the ids found *unreadable* (None: how many were lost cannot
    be told, the table's structure itself is unreadable) and the *backup* the damaged file was
    moved to."""

    __slots__ = ("healthy", "salvaged", "unreadable", "backup", "problem")

    def __init__(self, healthy=False, salvaged=0, unreadable=0, backup=None, problem=""):
        self.healthy, self.salvaged, self.unreadable, self.backup, self.problem = (
            healthy, salvaged, unreadable, backup, problem)


def check(path):
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


def recover(context_dir):
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
        _backfill_kinds(new.db)  # rows salvaged from an older schema get their kinds
        _backfill_provenance(new.db)
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
