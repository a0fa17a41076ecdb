"""The store's SQL for the facts tables (a mixin of ctxd.memory.store.db.Store).

Only the store modules (ctxd/memory/store/) run SQL; everything else calls
their methods. The engine (ctxd.memory.context.engine) holds the logic: what a fact is,
which one supersedes which; these methods only read and write rows. The
writing ones do not open a transaction of their own: the engine calls them
inside ``store.transaction()`` so a batch of facts and its watermark land
together.
"""

TYPE_CHECKING = False  # typing is not imported at run time: the hooks import the store
if TYPE_CHECKING:
    from collections.abc import Iterable
    from sqlite3 import Row

# norms per IN (...) query: well under SQLite's bound-variable limit
NORM_CHUNK = 500


class FactsTables:
    """Methods of Store over the facts tables; self.db is the connection."""

    # -- the watermark: the last message id whose facts were extracted ----------
    def facts_watermark(self) -> int:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'facts_upto'").fetchone()
        return int(row[0]) if row else 0

    def set_facts_watermark(self, upto: int) -> None:
        self.db.execute("INSERT INTO meta(key, value) VALUES ('facts_upto', ?) "
                        "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (str(upto),))

    # -- writing facts -------------------------------------------------------------
    def insert_fact(self, msg_id: int, ts: float, role: str, tag: str, kinds: str, text: str, norm: str,
                    topic: str | None, priority: float) -> int:
        """Add one fact (live); return its id."""
        return self.db.execute("INSERT INTO facts(msg_id, ts, role, tag, kinds, text, norm, topic, priority) "
                               "VALUES (?,?,?,?,?,?,?,?,?)",
                               (msg_id, ts, role, tag, kinds, text, norm, topic, priority)).lastrowid

    def supersede_fact(self, old_id: int, new_id: int) -> None:
        self.db.execute("UPDATE facts SET superseded_by = ? WHERE id = ?", (new_id, old_id))

    def set_fact_text(self, fact_id: int, text: str) -> None:
        """Rewrite a fact's text (its norm stays: the source sentence)."""
        self.db.execute("UPDATE facts SET text = ? WHERE id = ?", (text, fact_id))

    def promote_fact(self, fact_id: int, tag: str, priority: float) -> None:
        """Give a fact *tag* and at least *priority* (a fact stated on purpose, e.g. over MCP)."""
        self.db.execute("UPDATE facts SET tag = ?, priority = max(priority, ?) WHERE id = ?",
                        (tag, priority, fact_id))

    def promote_message_facts(self, msg_id: int, tag: str, priority: float) -> None:
        """promote_fact for every fact of message *msg_id*."""
        self.db.execute("UPDATE facts SET tag = ?, priority = max(priority, ?) WHERE msg_id = ?",
                        (tag, priority, msg_id))

    # -- reading facts -------------------------------------------------------------
    def live_fact_with_norm(self, norm: str) -> "Row | None":
        """(id, msg_id) of a live fact with this norm, or None."""
        return self.db.execute("SELECT id, msg_id FROM facts WHERE norm = ? AND superseded_by IS NULL LIMIT 1",
                               (norm,)).fetchone()

    def message_fact_ids(self, msg_id: int) -> list[int]:
        """The ids of message *msg_id*'s facts, oldest first (index facts_msg)."""
        return [r[0] for r in self.db.execute("SELECT id FROM facts WHERE msg_id = ? ORDER BY id", (msg_id,))]

    def fact_text(self, fact_id: int) -> str:
        return self.db.execute("SELECT text FROM facts WHERE id = ?", (fact_id,)).fetchone()["text"]

    def live_facts_before(self, fact_id: int, limit: int = 3000) -> "list[Row]":
        """(id, kinds, text) of the live facts older than *fact_id*, newest first."""
        return self.db.execute("SELECT id, kinds, text FROM facts WHERE superseded_by IS NULL AND id < ? "
                               "ORDER BY id DESC LIMIT ?", (fact_id, limit)).fetchall()

    def live_topic_facts_before(self, topic: str, fact_id: int, limit: int = 20) -> "list[Row]":
        """(id, kinds, norm) of the live facts about *topic* older than *fact_id*, newest first."""
        return self.db.execute("SELECT id, kinds, norm FROM facts WHERE topic = ? AND superseded_by IS NULL "
                               "AND id < ? ORDER BY id DESC LIMIT ?", (topic, fact_id, limit)).fetchall()

    # a fact's source message's author and machine: set when it came through ctxd sync
    _WHO = ("SELECT f.*, m.author AS author, m.machine AS machine, m.kind AS msg_kind, m.source AS msg_source FROM (SELECT * FROM facts WHERE {} "
            "ORDER BY {} LIMIT ?) f LEFT JOIN messages m ON m.id = f.msg_id ORDER BY {}")

    def live_facts(self, limit: int) -> "list[Row]":
        """Live facts, highest priority first (index facts_live: the cost follows *limit*), with
        their message's author, machine, kind and source (a ``meta`` from ``mcp``: recorded on purpose)."""
        return self.db.execute(self._WHO.format("superseded_by IS NULL", "priority DESC, id ASC",
                                                "f.priority DESC, f.id ASC"), (limit,)).fetchall()

    def superseded_facts(self, limit: int) -> "list[Row]":
        """Superseded facts, newest first, with their message's author and machine."""
        return self.db.execute(self._WHO.format("superseded_by IS NOT NULL", "id DESC", "f.id DESC"),
                               (limit,)).fetchall()

    def superseded_count(self) -> int:
        return self.db.execute("SELECT count(*) FROM facts WHERE superseded_by IS NOT NULL").fetchone()[0]

    # Looked up by norm (facts_norm). The unary + keeps the planner off facts_live and
    # facts_msg, which would scan every fact of the history.
    def superseded_norms(self, norms: "Iterable[str]", upto: int) -> set[str]:
        """The norms among *norms* of superseded facts from messages up to *upto*."""
        out = set()
        for chunk in _chunks(norms):
            marks = ",".join("?" * len(chunk))
            out.update(r[0] for r in self.db.execute(
                f"SELECT norm FROM facts WHERE norm IN ({marks}) AND +superseded_by IS NOT NULL AND +msg_id <= ?",
                (*chunk, upto)))
        return out

    def live_facts_containing(self, norms: "Iterable[str]", upto: int, mark: str) -> "list[Row]":
        """(norm, text, priority, id) of live facts with one of *norms*, from messages up
        to *upto*, whose text contains *mark* (a LIKE pattern piece, not escaped)."""
        rows = []
        for chunk in _chunks(norms):
            marks = ",".join("?" * len(chunk))
            rows += self.db.execute(
                f"SELECT norm, text, priority, id FROM facts WHERE norm IN ({marks}) AND +superseded_by IS NULL "
                "AND +msg_id <= ? AND text LIKE ?", (*chunk, upto, f"%{mark}%")).fetchall()
        return rows

    # -- message reads for the engine --------------------------------------------------
    # Generic reads of the messages table the engine needs (the store owner may move
    # them next to the other message reads in db.py).
    def user_turns_before(self, session: str, msg_id: int, limit: int) -> int:
        """How many user messages of *session* precede *msg_id*, counted up to *limit*."""
        return self.db.execute("SELECT count(*) FROM (SELECT 1 FROM messages WHERE session = ? AND role = 'user' "
                               "AND id < ? LIMIT ?)", (session, msg_id, limit)).fetchone()[0]

    def count_after(self, upto: int, cap: int | None = None) -> int:
        """How many messages have an id above *upto* (at most *cap*: a capped count stops early)."""
        if cap is None:
            return self.db.execute("SELECT count(*) FROM messages WHERE id > ?", (upto,)).fetchone()[0]
        return self.db.execute("SELECT count(*) FROM (SELECT 1 FROM messages WHERE id > ? LIMIT ?)",
                               (upto, cap)).fetchone()[0]

    def count_between(self, after: int, upto: int) -> int:
        """How many messages have after < id <= upto."""
        return self.db.execute("SELECT count(*) FROM messages WHERE id > ? AND id <= ?", (after, upto)).fetchone()[0]

    def first_id(self) -> int:
        """The smallest message id (0 when there is none)."""
        return self.db.execute("SELECT min(id) FROM messages").fetchone()[0] or 0

    def first_ts_from(self, first: int) -> float:
        """The earliest time of the messages with id >= *first* (0 when there is none): when they
        happened, whatever order they were stored in."""
        row = self.db.execute("SELECT min(ts) FROM messages WHERE id >= ?", (first,)).fetchone()
        return row[0] if row and row[0] is not None else 0

    def last_ts_upto(self, upto: int) -> float:
        """The latest time of the messages with id <= *upto* (0 when there is none)."""
        row = self.db.execute("SELECT max(ts) FROM messages WHERE id <= ?", (upto,)).fetchone()
        return row[0] if row and row[0] is not None else 0

    def first_user_content(self, upto: int) -> str | None:
        """The content of the first user message written here with id <= *upto*, or None."""
        row = self.db.execute("SELECT content FROM messages WHERE role = 'user' AND +id <= ? AND +author IS NULL "
                              "ORDER BY ts, id "
                              "LIMIT 1", (upto,)).fetchone()  # +id: walk messages_ts from the oldest
        return row[0] if row else None

    def has_session(self, session: str) -> bool:
        """Whether any message belongs to *session*."""
        return self.db.execute("SELECT 1 FROM messages WHERE session = ? LIMIT 1", (session,)).fetchone() is not None


def _chunks(items, size=NORM_CHUNK):
    items = list(items)
    for i in range(0, len(items), size):
        yield items[i:i + size]
