"""The store's SQL for sharing memory through git (a mixin of ctxd.memory.store.db.Store).

ctxd.memory.sync.sharing holds the logic (segments, git plumbing, merge); this module only
reads and writes the tables schema 7 added: ``tombstones`` (every deleted message by
its key, written by a trigger), ``private_sessions``, ``sync_blobs`` (segment blobs
imported, skipped or written here), ``sync_sent`` (tasks and handoffs sent, by digest),
the ``author`` / ``machine`` columns of messages and tasks (NULL: written here), and
the sync keys in ``meta``; schema 8's ``origin`` column (the sending store) and
``sync_tombs`` (received deletions, by key and origin).
"""

import time

TYPE_CHECKING = False  # typing is not imported at run time: the hooks import the store
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from sqlite3 import Row

MACHINE = "sync_machine"


class SyncTables:
    """Methods of Store over the sync tables; self.db is the connection."""

    # -- meta ---------------------------------------------------------------------
    def meta_get(self, key: str, default: str | int | None = None) -> str | int | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def meta_set(self, key: str, value: object) -> None:
        with self.transaction():
            if value is None:
                self.db.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                self.db.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                                "value = excluded.value", (key, str(value)))

    def machine_id(self) -> str:
        """This store's random machine id (made by migration 7): names rows without a dedup key."""
        mid = self.meta_get(MACHINE)
        if mid is None:  # a store recovered into a new file, say
            with self.transaction():
                self.db.execute("INSERT INTO meta(key, value) VALUES (?, lower(hex(randomblob(8)))) "
                                "ON CONFLICT DO NOTHING", (MACHINE,))
            mid = self.meta_get(MACHINE)
        return mid

    # -- what to send -------------------------------------------------------------
    _UNSENT = ("FROM sync_unsent u JOIN messages m ON m.id = u.id WHERE m.author IS NULL "
               "AND m.session NOT IN (SELECT session FROM private_sessions)")

    def assign_keys(self) -> None:
        """Give the unsent local rows without a dedup key a stable, unique one: m:<machine>:<random>."""
        mid = self.machine_id()
        with self.transaction():
            self.db.execute("UPDATE messages SET dedup = 'm:' || ? || ':' || lower(hex(randomblob(8))) "
                            f"WHERE dedup IS NULL AND id IN (SELECT m.id {self._UNSENT})", (mid,))

    def unsent_rows(self, batch: int = 5000) -> "Iterator[list[Row]]":
        """The messages written here and not sent yet, outside private sessions: batches of
        sqlite3.Row, by id."""
        last = 0
        while True:
            rows = self.db.execute(f"SELECT m.* {self._UNSENT} AND m.id > ? ORDER BY m.id LIMIT ?",
                                   (last, batch)).fetchall()
            if not rows:
                return
            yield rows
            last = rows[-1]["id"]

    def pending_count(self) -> int:
        return self.db.execute(f"SELECT count(*) {self._UNSENT}").fetchone()[0]

    def local_tombstones(self, after: int) -> "list[Row]":
        """Tombstones written here with ids above *after*: rows (id, key, ts), by id."""
        return self.db.execute("SELECT id, key, ts FROM tombstones WHERE id > ? AND author IS NULL ORDER BY id",
                               (after,)).fetchall()

    def max_tombstone_id(self) -> int:
        return self.db.execute("SELECT coalesce(max(id), 0) FROM tombstones").fetchone()[0]

    def kept_facts(self, ids: "Iterable[int]", min_priority: float) -> "list[Row]":
        """Facts recorded on purpose (priority >= *min_priority*) of the messages *ids*: rows
        (key, tag, priority)."""
        ids = list(ids)
        out = []
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            out += self.db.execute(
                "SELECT m.dedup AS key, f.tag AS tag, max(f.priority) AS priority FROM facts f "
                f"JOIN messages m ON m.id = f.msg_id WHERE m.id IN ({','.join('?' * len(chunk))}) "
                "AND m.dedup IS NOT NULL AND f.priority >= ? GROUP BY m.id ORDER BY m.id",
                chunk + [min_priority]).fetchall()
        return out

    def sync_tasks(self, key: str | None = None) -> list[dict]:
        """Every task (or the one with sync key *key*), each with its sync key (assigned now when
        missing) and notes: dicts (key, name, status, started, finished, notes)."""
        mid = self.machine_id()
        with self.transaction():
            self.db.execute("UPDATE tasks SET sync_key = 't:' || ? || ':' || id WHERE sync_key IS NULL", (mid,))
        rows = self.db.execute("SELECT * FROM tasks WHERE sync_key = ?", (key,)).fetchall() if key else \
            self.db.execute("SELECT * FROM tasks ORDER BY id").fetchall()
        out = []
        for t in rows:
            notes = [dict(ts=n["ts"], text=n["text"]) for n in self.db.execute(
                "SELECT ts, text FROM task_notes WHERE task_id = ? ORDER BY id", (t["id"],))]
            out.append(dict(key=t["sync_key"], name=t["name"], status=t["status"], started=t["started"],
                            finished=t["finished"], notes=notes))
        return out

    def sent_digests(self) -> dict[str, str]:
        return {r[0]: r[1] for r in self.db.execute("SELECT key, digest FROM sync_sent")}

    # -- after a segment is on the ref ----------------------------------------------
    def record_sent(self, *, ids: "Iterable[int]" = (), tomb_hwm: int | None = None,
                    sent: "Iterable[tuple[str, str]]" = (), blobs: "Iterable[tuple[str, str, int]]" = ()) -> None:
        """One transaction: the messages *ids* are sent, the tombstone high-water mark, what
        was sent by digest, the blobs written here."""
        now = time.time()
        ids = list(ids)
        with self.transaction():
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                self.db.execute(f"DELETE FROM sync_unsent WHERE id IN ({','.join('?' * len(chunk))})", chunk)
            if tomb_hwm is not None:
                self.meta_set("sync_tomb_hwm", tomb_hwm)
            self.db.executemany("INSERT INTO sync_sent(key, digest) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                                "digest = excluded.digest", list(sent))
            self.db.executemany("INSERT INTO sync_blobs(oid, path, status, items, ts) VALUES (?,?,?,?,?) "
                                "ON CONFLICT(oid) DO NOTHING", [(o, p, "own", n, now) for o, p, n in blobs])

    # -- receiving ------------------------------------------------------------------
    def known_blobs(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT oid FROM sync_blobs")}

    def record_blob(self, oid: str, path: str, status: str, items: int = 0) -> None:
        self.db.execute("INSERT INTO sync_blobs(oid, path, status, items, ts) VALUES (?,?,?,?,?) "
                        "ON CONFLICT(oid) DO UPDATE SET status = excluded.status, items = excluded.items, "
                        "ts = excluded.ts", (oid, path, status, items, time.time()))

    def blob_counts(self) -> dict[str, tuple[int, int]]:
        """{status: (blobs, items)} of the segment blobs this store knows."""
        return {r[0]: (r[1], r[2]) for r in self.db.execute(
            "SELECT status, count(*), coalesce(sum(items), 0) FROM sync_blobs GROUP BY status")}

    def skipped_blobs(self) -> "list[Row]":
        return self.db.execute("SELECT oid, path FROM sync_blobs WHERE status LIKE 'skipped%' ORDER BY path").fetchall()

    def apply_tombstones(self, tombs: "Iterable[tuple[str, float, str]]") -> int:
        """Record received tombstones [(key, ts, origin)] and delete the messages they name that
        came from that same origin (a deletion never reaches another sender's items, nor what was
        written here; the offloaded files no other message shares go too). How many were deleted."""
        tombs = [t for t in tombs if t[0] and t[2]]
        if not tombs:
            return 0
        with self.transaction():
            self.db.executemany("INSERT INTO sync_tombs(key, ts, origin) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                                tombs)
            before = self.max_tombstone_id()
            n = self._delete("dedup = ? AND origin = ?", [(t[0], t[2]) for t in tombs])
            # the delete trigger wrote them down as deletions made here: they are the sender's, not ours
            self.db.execute("DELETE FROM tombstones WHERE id > ? AND author IS NULL", (before,))
            return n

    def tombstoned(self, keys: "Iterable[str]", origin: str | None = None) -> set[str]:
        """The keys among *keys* deleted here, or deleted by *origin* (received tombstones)."""
        keys = list(keys)
        out = set()
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            marks = ','.join('?' * len(chunk))
            out |= {r[0] for r in self.db.execute(f"SELECT key FROM tombstones WHERE key IN ({marks})", chunk)}
            if origin is not None:
                out |= {r[0] for r in self.db.execute(
                    f"SELECT key FROM sync_tombs WHERE origin = ? AND key IN ({marks})", [origin] + chunk)}
        return out

    def set_authors(self, ids: "Iterable[int]", author: str, machine: str, origin: str | None = None) -> None:
        ids = list(ids)
        with self.transaction():
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                marks = ','.join('?' * len(chunk))
                self.db.execute(f"UPDATE messages SET author = ?, machine = ?, origin = ? WHERE id IN ({marks})",
                                [author, machine, origin] + chunk)
                self.db.execute(f"DELETE FROM sync_unsent WHERE id IN ({marks})", chunk)  # it came from there

    def ids_of_keys(self, keys: "Iterable[str]", origin: str | None = None) -> dict[str, int]:
        """{dedup key: message id} for the keys stored (*origin*: of the messages from that origin)."""
        keys = list(keys)
        out = {}
        mine = "" if origin is None else " AND origin = ?"
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            out.update({r[0]: r[1] for r in self.db.execute(
                f"SELECT dedup, id FROM messages WHERE dedup IN ({','.join('?' * len(chunk))}){mine}",
                chunk + ([] if origin is None else [origin]))})
        return out

    def upsert_task(self, t: dict, author: str, origin: str | None = None, label: str | None = None) -> None:
        """A received task (dict: key, name, status, started, finished, notes): inserted (as
        another machine's task: never the working task here until taken), or its status and the
        notes it lacks (by time) brought up to date when it is stored already; a note from another
        sender than the task's own starts with *label* ("[from ...] ")."""
        with self.transaction():
            row = self.db.execute("SELECT id, status, author FROM tasks WHERE sync_key = ?", (t["key"],)).fetchone()
            if row is None:
                tid = self.db.execute("INSERT INTO tasks(name, status, started, finished, sync_key, author, origin) "
                                      "VALUES (?,?,?,?,?,?,?)", (t["name"], t["status"], t["started"], t["finished"],
                                                                 t["key"], author, origin)).lastrowid
                have, mark = set(), ""
            else:
                tid = row["id"]
                if t["status"] == "done" and row["status"] != "done":
                    self.db.execute("UPDATE tasks SET status = 'done', finished = ? WHERE id = ?",
                                    (t["finished"], tid))
                have = {n["ts"] for n in self.db.execute("SELECT ts FROM task_notes WHERE task_id = ?", (tid,))}
                mark = f"[{label}] " if label and row["author"] != author else ""
            for n in t["notes"]:
                if n["ts"] not in have:
                    have.add(n["ts"])
                    self.db.execute("INSERT INTO task_notes(task_id, ts, text) VALUES (?,?,?)",
                                    (tid, n["ts"], mark + n["text"]))

    def shared_open_tasks(self) -> "list[Row]":
        """Open tasks received from other machines, newest first: rows (id, name, started, author)."""
        return self.db.execute("SELECT id, name, started, author FROM tasks WHERE status = 'open' "
                               "AND author IS NOT NULL ORDER BY id DESC").fetchall()

    def take_task(self, task_id: int) -> None:
        """Make a received task this machine's own (its working task; its sync key stays)."""
        with self.transaction():
            self.db.execute("UPDATE tasks SET author = NULL, origin = NULL WHERE id = ?", (task_id,))

    # -- private sessions -------------------------------------------------------------
    def set_private(self, session: str, private: bool = True) -> None:
        with self.transaction():
            if private:
                self.db.execute("INSERT INTO private_sessions(session, ts) VALUES (?, ?) ON CONFLICT DO NOTHING",
                                (session, time.time()))
            else:
                self.db.execute("DELETE FROM private_sessions WHERE session = ?", (session,))

    def private_sessions(self) -> "list[Row]":
        """Rows (session, ts, messages) of the sessions kept private, oldest mark first."""
        return self.db.execute(
            "SELECT p.session AS session, p.ts AS ts, (SELECT count(*) FROM messages m WHERE m.session = p.session) "
            "AS messages FROM private_sessions p ORDER BY p.ts").fetchall()

    def is_private(self, session: str) -> bool:
        return self.db.execute("SELECT 1 FROM private_sessions WHERE session = ?", (session,)).fetchone() is not None

    def session_count(self, session: str, sent: bool = False) -> int:
        """Messages of *session* (with *sent*: those written here that were sent already)."""
        if not sent:
            return self.db.execute("SELECT count(*) FROM messages WHERE session = ?", (session,)).fetchone()[0]
        return self.db.execute("SELECT count(*) FROM messages WHERE session = ? AND author IS NULL "
                               "AND id NOT IN (SELECT id FROM sync_unsent)", (session,)).fetchone()[0]

    def authors(self) -> "list[Row]":
        """Rows (author, machine, messages) of the items received, most first."""
        return self.db.execute("SELECT author, machine, count(*) AS n FROM messages WHERE author IS NOT NULL "
                               "GROUP BY author, machine ORDER BY n DESC").fetchall()

    def content_keys(self) -> "list[Row]":
        """(dedup, session, kind, content) of every message: what two synced stores must agree on."""
        return self.db.execute("SELECT dedup, session, kind, content FROM messages").fetchall()
