"""The store's SQL for the messages table (a mixin of ctxd.memory.store.db.Store): writing
(redacted, huge contents offloaded to ``outputs/``), reading, full-text and ranked matching,
deleting. Message is one row as the rest of ctxd reads it.
"""

import os
import sqlite3
import time

from ctxd.activation.fileio import atomic_write, sha256_hex
from ctxd.errors import ExitCode
from ctxd.isotime import format_utc
from ctxd.memory.text import tokens
from ctxd.memory.store.layout import OUTPUTS
from ctxd.memory.store.errors import StoreError, typed_error

TYPE_CHECKING = False  # typing is not imported at run time: the hooks import the store
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from sqlite3 import Row

    from ctxd.memory.store.items import Record

ROLES = ("user", "assistant", "system", "tool")
PREVIEW_HEAD = 1000
PREVIEW_TAIL = 1000

_LAYOUTS = {}


class Message:
    """One stored item: its kind (ctxd.memory.store.items.KINDS) and the fields that kind carries.

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
            self.data = load_data(self.data)

    def to_json(self) -> dict:
        d = {k: getattr(self, k) for k in self.__slots__ if k not in ("dedup",)}
        d["time"] = format_utc(self.ts)
        return d


def load_data(text: str) -> object:
    import json

    try:
        return json.loads(text)
    except ValueError:
        return None


def dump_data(value: object) -> str | None:
    import json

    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class MessagesTables:
    """Methods of Store over the messages table and its indexes; self.db is the connection."""

    # -- writing --------------------------------------------------------------
    def prepare(self, content: str, redact: bool = True) -> tuple[str, str | None, int | None]:
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

    def add(self, role: str, content: str, *, session: str = "", source: str = "cli", importance: float = 0.5,
            ts: float | None = None, dedup: str | None = None, redact: bool = True) -> int | None:
        """Store one message; return its id, or None when *dedup* was seen before."""
        ids = self.add_many([dict(role=role, content=content, session=session, source=source,
                                  importance=importance, ts=ts, dedup=dedup)], redact=redact)
        return ids[0] if ids else None

    def add_many(self, messages: "Iterable[Record]", redact: bool = True) -> list[int]:
        """Store messages in one transaction; return the ids of those added.

        Each message is a dict of the typed model (ctxd.memory.store.items): ``kind`` and the
        fields it carries (``tool``, ``call_id``, ``subtype``, ``data``), ``content``,
        ``session``, ``source``, ``ts`` (when it happened), ``importance``, ``dedup``.
        ``role`` follows from the kind; a dict with only a role gets the kind the role
        implies.
        """
        from ctxd.memory.store import items

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
                raise typed_error(e, self.path) from None
            data = m.get("data")
            if data is not None and redact and self.redactor is not None:
                data = load_data(self.redactor(dump_data(data))[0])  # secrets in arguments too
            subtype = m.get("subtype")
            settled = items.settle(dict(m, kind=kind, subtype=subtype))  # provenance; ctxd's text is no turn
            if settled[0] != kind:
                kind, role = settled[0], items.ROLE_OF[settled[0]]
            subtype, provenance = settled[1], settled[2]
            rows.append((m.get("session") or "", role, content, float(m.get("ts") or time.time()), imp,
                         m.get("source") or "cli", tokens.estimate(content), out_path, out_chars,
                         m.get("dedup"), kind, m.get("tool"), m.get("call_id"), subtype,
                         dump_data(data), 1 if m.get("legacy") else 0, provenance))
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
    def count(self) -> int:
        return self.db.execute("SELECT count(*) FROM messages").fetchone()[0]

    def get(self, mid: int) -> "Message | None":
        row = self.db.execute("SELECT * FROM messages WHERE id = ?", (mid,)).fetchone()
        return Message(row) if row else None

    def recent(self, n: int = 20, session: str | None = None) -> "list[Message]":
        """The last *n* messages by when they happened (not when they were stored), oldest first:
        files imported in any order, and live records reconciled later, keep their places."""
        if session is None:
            rows = self.db.execute("SELECT * FROM messages ORDER BY ts DESC, id DESC LIMIT ?", (n,)).fetchall()
        else:
            rows = self.db.execute("SELECT * FROM messages WHERE session = ? ORDER BY ts DESC, id DESC LIMIT ?",
                                   (session, n)).fetchall()
        return [Message(r) for r in reversed(rows)]

    def iter_all(self, session: str | None = None, batch: int = 1000) -> "Iterator[Message]":
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

    def search(self, query: str, limit: int = 20) -> "list[Message]":
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

    def containing(self, texts: "Iterable[str]", limit: int) -> dict[str, list[int]]:
        """{text: ids of the newest *limit* messages holding it, newest first} for each of *texts*
        (exact substrings: CJK words too short for the trigram index; only the messages holding
        CJK text are read, ``cjk_messages``). One pass over them for all of them, newest first,
        not one each; a text that has its *limit* drops out and the pass goes on for the others
        from where it was."""
        found = {t: [] for t in texts if t}
        todo, before = list(found), None
        while todo:
            has = ["instr(m.content, ?) > 0"] * len(todo)
            rows = self.db.execute(
                f"SELECT c.id, {', '.join(has)} FROM cjk_messages c JOIN messages m ON m.id = c.id "
                f"WHERE ({' OR '.join(has)}){'' if before is None else ' AND c.id < ?'} ORDER BY c.id DESC",
                [*todo, *todo] + ([] if before is None else [before]))
            full = False
            for row in rows:
                for t, hit in zip(todo, row[1:]):
                    if hit and len(found[t]) < limit:
                        found[t].append(row[0])
                        full = full or len(found[t]) == limit
                if full:
                    before = row[0]
                    break
            if not full:
                break
            todo = [t for t in todo if len(found[t]) < limit]
        return found

    # -- ranked recall (ctxd.memory.recall.ranked builds the MATCH expressions) ---------
    def match(self, expr: str, limit: int, *, index: str = "words") -> list[tuple[int, float]]:
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

    def offloaded(self, n: int) -> "list[Message]":
        """The newest *n* messages whose content was offloaded to a file, newest first."""
        return [Message(r) for r in self.db.execute(
            "SELECT * FROM messages WHERE output_path IS NOT NULL ORDER BY id DESC LIMIT ?", (n,))]

    def match_count(self, expr: str, cap: int = 100_000) -> int:
        """How many messages match an FTS5 expression of the word index (at most *cap*)."""
        try:
            return self.db.execute("SELECT count(*) FROM (SELECT 1 FROM messages_words WHERE messages_words MATCH ? "
                                   "LIMIT ?)", (expr, cap)).fetchone()[0]
        except sqlite3.OperationalError:
            return 0

    def messages(self, ids: "Iterable[int]") -> "list[Message]":
        """The messages with these ids, by id."""
        ids = list(ids)
        out = []
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            out += [Message(r) for r in self.db.execute(
                f"SELECT * FROM messages WHERE id IN ({','.join('?' * len(chunk))})", chunk)]
        return sorted(out, key=lambda m: m.id)

    def beside(self, m: "Message") -> "tuple[Message | None, Message | None]":
        """(the message before *m*, the message after it) in its session, by time, or None."""
        return self.step(m, 0), self.step(m, 1)

    def step(self, m: "Message", side: int) -> "Message | None":
        """The message just before (*side* 0) or after (1) *m* in its session, by time, or None."""
        if side:
            sql = ("SELECT * FROM messages WHERE session = ? AND (ts > ? OR (ts = ? AND id > ?)) "
                   "ORDER BY ts, id LIMIT 1")
        else:
            sql = ("SELECT * FROM messages WHERE session = ? AND (ts < ? OR (ts = ? AND id < ?)) "
                   "ORDER BY ts DESC, id DESC LIMIT 1")
        row = self.db.execute(sql, (m.session, m.ts, m.ts, m.id)).fetchone()
        return Message(row) if row else None

    def mark_injected(self, session: str, ids: "Iterable[int]") -> None:
        if not session or not ids:
            return
        now = time.time()
        with self.transaction():
            self.db.executemany("INSERT INTO injected(session, msg_id, ts) VALUES (?,?,?) ON CONFLICT DO NOTHING",
                                [(session, i, now) for i in ids])

    def injected_ids(self, session: str) -> set[int]:
        return {r[0] for r in self.db.execute("SELECT msg_id FROM injected WHERE session = ?", (session,))}

    def session_ids(self, session: str, limit: int = 20000) -> set[int]:
        """The ids of *session*'s own messages (the newest *limit*)."""
        return {r[0] for r in self.db.execute(
            "SELECT id FROM messages WHERE session = ? ORDER BY id DESC LIMIT ?", (session, limit))}

    def last_id_before(self, ts: float, mid: int) -> int:
        """The largest id of the messages that happened before (*ts*, *mid*), 0 when none did."""
        row = self.db.execute("SELECT max(id) FROM messages WHERE ts < ? OR (ts = ? AND id < ?)",
                              (ts, ts, mid)).fetchone()
        return row[0] or 0

    def newest_ts(self) -> float:
        row = self.db.execute("SELECT max(ts) FROM messages").fetchone()
        return row[0] if row and row[0] is not None else 0.0

    def has_dedup(self, key: str) -> bool:
        return self.db.execute("SELECT 1 FROM messages WHERE dedup = ?", (key,)).fetchone() is not None

    def dedup_range(self, prefixes: "Iterable[str]") -> "list[Row]":
        """Rows (id, role, content, dedup) whose dedup key starts with one of *prefixes*, by id."""
        rows = []
        for prefix in prefixes:
            hi = prefix[:-1] + chr(ord(prefix[-1]) + 1)  # every key that starts with prefix
            rows += self.db.execute("SELECT id, role, content, dedup FROM messages WHERE dedup >= ? AND dedup < ?"
                                    " ORDER BY id", (prefix, hi)).fetchall()
        return sorted(rows, key=lambda r: r["id"])

    def twins(self, session: str, role: str, content: str) -> "list[Row]":
        """Rows (id, dedup) of *session* with this role and content, by id."""
        return self.db.execute("SELECT id, dedup FROM messages WHERE session = ? AND role = ? AND content = ? "
                               "ORDER BY id", (session, role, content)).fetchall()

    def session_replies(self, session: str) -> "list[Row]":
        """Rows (id, content, dedup) of *session*'s replies, in the order they happened."""
        return self.db.execute("SELECT id, content, dedup FROM messages WHERE session = ? AND kind = 'reply' "
                               "ORDER BY ts, id", (session,)).fetchall()

    def last_session(self) -> str | None:
        row = self.db.execute("SELECT session FROM messages ORDER BY ts DESC, id DESC LIMIT 1").fetchone()
        return row[0] if row else None

    def sessions(self) -> list[str]:
        return [r[0] for r in self.db.execute(
            "SELECT session FROM messages GROUP BY session ORDER BY max(ts) DESC, max(id) DESC").fetchall()]

    # -- deleting -------------------------------------------------------------
    def forget(self, *, mid: int | None = None, before: float | None = None, session: str | None = None,
               everything: bool = False) -> int:
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

    def forget_dedup(self, keys: "Iterable[str]") -> int:
        """Delete the messages whose dedup key is one of *keys* or starts with key + ":".

        Importers use it when a transcript takes back what it said (a Gemini
        rewind). Offloaded files no other message shares go too. Returns how many.
        """
        keys = [k for k in keys if k]
        if not keys:
            return 0
        where = "dedup = ? OR (dedup >= ? AND dedup < ?)"  # the range: key + ":" ... key + ";"
        return self._delete(where, [(k, k + ":", k + ";") for k in keys])
