"""The store's schema: its migrations, run forward in one transaction when a store is opened.

A step is SQL or the name of a function here that rewrites rows (a backfill); PRAGMA user_version
records how far a store has come.
"""

import sqlite3

from ctxd.memory.text import tokens
from ctxd.memory.store.messages import dump_data

# a message holds CJK text: the ranges of ctxd.memory.recall.ranked's CJK runs (kana, CJK ideographs
# and their extension A and compatibility block, hangul), as a GLOB character class
CJK_GLOB = "*[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]*"

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
    # 5: the typed model (ctxd.memory.store.items): each message has a kind (prompt, reply, tool_call,
    #    tool_result, summary, meta) and the fields that kind carries: the tool's name, the call id
    #    linking a result to its call, a subtype (for meta and summary) and a JSON object of the
    #    rest (a call's arguments, paths and command; a result's error status, exit code and size).
    #    Rows written before are re-parsed into kinds (backfill_kinds); what cannot be re-parsed
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
    "backfill_kinds",
    """
    CREATE INDEX IF NOT EXISTS messages_kind ON messages(kind, id);
    CREATE INDEX IF NOT EXISTS messages_call ON messages(call_id) WHERE call_id IS NOT NULL;
    """,
    # 6: a word index for ranked recall (ctxd.memory.recall.ranked): unicode61 without diacritics,
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
    # 7: sharing through git (ctxd.memory.sync.sharing): who an item came from (author: git user.email,
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
    # 8: where a received item came from (ctxd.memory.sync.sharing): ``origin``, the sending store (a hash of
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
    # 9: provenance (ctxd.memory.store.items.PROVENANCES): who wrote each item, human | agent | subagent |
    #    injected | ctxd. Rows written before get theirs from their kind and text (_backfill_provenance):
    #    a stored "prompt" or system message that is ctxd's own text (a teach prompt) becomes meta.
    """
    ALTER TABLE messages ADD COLUMN provenance TEXT NOT NULL DEFAULT '';
    """,
    "backfill_provenance",
    # 10: semantic recall (ctxd.memory.recall.embed): one row per message the embedder has read, its
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
    # 11: the sign bits in an index of their own: a query's scan of every vector's bits reads ~60
    #     bytes a row there instead of the row with its int8 vector (~450)
    """
    CREATE INDEX IF NOT EXISTS embeddings_bits ON embeddings(model, bits);
    """,
    # 12: the sign bits packed in blocks (ctxd.memory.recall.embed.pack): a block holds the ids and
    #     the bits (a byte column after another) of every vector of its model in [first, last]; a
    #     query reads a block as one value instead of its rows one by one. Any write to a vector
    #     in a block's range drops the block (the triggers), so a block never disagrees with the
    #     rows; the rows outside every block are read as before.
    """
    CREATE TABLE IF NOT EXISTS embed_blocks(
        model TEXT NOT NULL,
        first INTEGER NOT NULL,
        last INTEGER NOT NULL,
        ids BLOB NOT NULL,
        bits BLOB NOT NULL,
        PRIMARY KEY (model, first)
    );
    CREATE TRIGGER IF NOT EXISTS embeddings_ai_blocks AFTER INSERT ON embeddings BEGIN
        DELETE FROM embed_blocks WHERE first <= new.id AND last >= new.id;
    END;
    CREATE TRIGGER IF NOT EXISTS embeddings_au_blocks AFTER UPDATE ON embeddings BEGIN
        DELETE FROM embed_blocks WHERE (first <= old.id AND last >= old.id) OR (first <= new.id AND last >= new.id);
    END;
    CREATE TRIGGER IF NOT EXISTS embeddings_ad_blocks AFTER DELETE ON embeddings BEGIN
        DELETE FROM embed_blocks WHERE first <= old.id AND last >= old.id;
    END;
    """,
    # 13: the ids of the messages holding CJK text (ctxd.memory.store.messages.containing): a
    #     Chinese question's two-character words, which the trigram index cannot see, are looked
    #     for in those only, not by a scan of every message (an English history has none).
    #     A superset is harmless (instr finds nothing there); the triggers never leave one out.
    f"""
    CREATE TABLE IF NOT EXISTS cjk_messages(id INTEGER PRIMARY KEY);
    CREATE TRIGGER IF NOT EXISTS messages_ai_cjk AFTER INSERT ON messages WHEN new.content GLOB '{CJK_GLOB}' BEGIN
        INSERT OR IGNORE INTO cjk_messages(id) VALUES (new.id);
    END;
    CREATE TRIGGER IF NOT EXISTS messages_au_cjk AFTER UPDATE OF content ON messages BEGIN
        DELETE FROM cjk_messages WHERE id = old.id;
        INSERT OR IGNORE INTO cjk_messages(id) SELECT new.id WHERE new.content GLOB '{CJK_GLOB}';
    END;
    CREATE TRIGGER IF NOT EXISTS messages_ad_cjk AFTER DELETE ON messages BEGIN
        DELETE FROM cjk_messages WHERE id = old.id;
    END;
    INSERT OR IGNORE INTO cjk_messages(id) SELECT id FROM messages WHERE content GLOB '{CJK_GLOB}';
    """,
]
SCHEMA_VERSION = 13  # PRAGMA user_version after the last migration (some steps share a version)
# the user_version each step of MIGRATIONS brings the store to
STEP_VERSION = [1, 2, 3, 4, 5, 5, 5, 6, 7, 8, 9, 9, 10, 11, 12, 13]


def migrate(db):
    """Run the steps *db* has not had, all in one transaction: a migration killed halfway leaves
    the store as it was."""
    db.execute("BEGIN IMMEDIATE")
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        for step, target in zip(MIGRATIONS, STEP_VERSION):
            if target <= version:
                continue
            if step.isidentifier():
                globals()[step](db)
            else:
                for stmt in _statements(step):
                    db.execute(stmt)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


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


def backfill_kinds(db, batch=2000):
    """Migration 5: give every existing row its kind, re-parsed from the text the old
    importers flattened (``[tool_use Edit] {...}`` -> a tool_call with its arguments and
    paths). Runs inside the migration's transaction: all rows or none."""
    from ctxd.memory.store import items

    for rows in _batches(db, "SELECT id, role, content, source FROM messages WHERE id > ? AND kind = ''", batch):
        for r in rows:
            f = items.reparse_legacy(r["role"], r["content"], r["source"])
            content = f.get("content", r["content"])
            db.execute("UPDATE messages SET kind = ?, tool = ?, call_id = ?, subtype = ?, data = ?, legacy = ?"
                       " WHERE id = ?", (f["kind"], f.get("tool"), f.get("call_id"), f.get("subtype"),
                                         dump_data(f.get("data")), 1 if f.get("legacy") else 0, r["id"]))
            if content != r["content"]:  # the FTS index follows (messages_au)
                db.execute("UPDATE messages SET content = ?, tokens = ? WHERE id = ?",
                           (content, tokens.estimate(content), r["id"]))


def backfill_provenance(db, batch=2000):
    """Migration 9: give every row without a provenance the one its kind and text imply
    (items.settle); ctxd's own text stored as a prompt or system message becomes meta."""
    from ctxd.memory.store import items

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
