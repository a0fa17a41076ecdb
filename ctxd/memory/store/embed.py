"""The store's embeddings table (ctxd.memory.recall.embed): what is embedded, what is left, the vectors.
A message counts as embedded when it has a row of the current model (another model's row is
replaced when the embedder reaches it)."""

TYPE_CHECKING = False  # typing is not imported at run time: the hooks import the store
if TYPE_CHECKING:
    from collections.abc import Iterable
    from sqlite3 import Row


class EmbedTables:
    def embed_backlog(self, model: str) -> int:
        return self.db.execute("SELECT count(*) FROM messages m WHERE NOT EXISTS "
                               "(SELECT 1 FROM embeddings e WHERE e.id = m.id AND e.model = ?)",
                               (model,)).fetchone()[0]

    def embed_lag(self, model: str) -> int:
        """Message ids past the newest one embedded (cheap: index lookups)."""
        return self.db.execute("SELECT (SELECT coalesce(max(id), 0) FROM messages) - "
                               "(SELECT coalesce(max(id), 0) FROM embeddings WHERE model = ?)",
                               (model,)).fetchone()[0]

    def embed_progress(self, model: str) -> tuple[int, int]:
        total = self.db.execute("SELECT count(*) FROM messages").fetchone()[0]
        done = self.db.execute("SELECT count(*) FROM embeddings e WHERE e.model = ? AND EXISTS "
                               "(SELECT 1 FROM messages m WHERE m.id = e.id)", (model,)).fetchone()[0]
        return done, total

    def embed_todo(self, model: str, n: int, after: int = 0) -> "list[Row]":
        """[(id, kind, content)] of the oldest *n* messages past id *after* without a row of *model*."""
        return self.db.execute("SELECT m.id, m.kind, m.content FROM messages m WHERE m.id > ? AND NOT EXISTS "
                               "(SELECT 1 FROM embeddings e WHERE e.id = m.id AND e.model = ?) ORDER BY m.id LIMIT ?",
                               (after, model, n)).fetchall()

    def embed_before(self, ids: "Iterable[int]", kinds: "Iterable[str]") -> dict[int, tuple[int, str]]:
        """{id: (id, content)} of the turn before each of *ids* in its session, among *kinds*."""
        out = {}
        marks = ",".join("?" * len(kinds))
        for mid in ids:
            row = self.db.execute(f"SELECT p.id, p.content FROM messages m JOIN messages p ON p.session = m.session "
                                  f"AND p.id < m.id AND p.kind IN ({marks}) WHERE m.id = ? "
                                  f"ORDER BY p.id DESC LIMIT 1", (*kinds, mid)).fetchone()
            if row is not None:
                out[mid] = (row[0], row[1])
        return out

    def embed_put(self, rows: "Iterable[tuple]", read: dict[int, str]) -> None:
        """Store *rows* (id, model, scale, bits, vec) of the messages whose content is still
        what was embedded (*read*: {id: content}); one deleted or edited meanwhile gets none."""
        with self.transaction() as db:
            live = {i for i, c in db.execute(
                f"SELECT id, content FROM messages WHERE id IN ({','.join('?' * len(read))})", list(read))
                if read.get(i) == c}
            db.executemany("INSERT OR REPLACE INTO embeddings(id, model, scale, bits, vec) VALUES (?, ?, ?, ?, ?)",
                           [r for r in rows if r[0] in live])

    def embed_any(self, model: str) -> bool:
        return self.db.execute("SELECT 1 FROM embeddings WHERE model = ? AND vec IS NOT NULL LIMIT 1",
                               (model,)).fetchone() is not None

    def embed_bits(self, model: str, size: int) -> bytes:
        """The *size*-byte sign bits of every vector of *model*, concatenated in one blob (in no
        particular order; b"" when there are none): read from their index in one step, not a row
        at a time (100,000 rows: ~15 ms, ~100 ms as rows)."""
        blob = self.db.execute("SELECT CAST(group_concat(bits, '') AS BLOB) FROM embeddings "
                               "WHERE model = ? AND bits IS NOT NULL", (model,)).fetchone()[0] or b""
        if len(blob) % size:  # a row of another size (a damaged store): only the rows of this size
            blob = self.db.execute("SELECT CAST(group_concat(bits, '') AS BLOB) FROM embeddings "
                                   "WHERE model = ? AND length(bits) = ?", (model, size)).fetchone()[0] or b""
        return blob

    def embed_rows(self, model: str, at_most: int) -> "list[Row] | None":
        """[(id, scale, int8 bytes)] of every vector of *model*, or None when there are more than *at_most*."""
        rows = self.db.execute("SELECT id, scale, vec FROM embeddings WHERE model = ? AND vec IS NOT NULL LIMIT ?",
                               (model, at_most + 1)).fetchall()
        return rows if len(rows) <= at_most else None

    def embed_with_bits(self, model: str, values: "Iterable[bytes]") -> "list[Row]":
        """[(id, sign bits)] of the vectors of *model* whose sign bits are one of *values*."""
        out = []
        values = list(values)
        for start in range(0, len(values), 500):
            chunk = values[start:start + 500]
            out += self.db.execute(f"SELECT id, bits FROM embeddings WHERE model = ? AND bits IN "
                                   f"({','.join('?' * len(chunk))})", (model, *chunk)).fetchall()
        return out

    def embed_vectors(self, ids: "Iterable[int]") -> "list[Row]":
        """[(id, scale, int8 bytes)] of *ids*."""
        out = []
        ids = list(ids)
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            out += self.db.execute(f"SELECT id, scale, vec FROM embeddings WHERE id IN ({','.join('?' * len(chunk))})",
                                   chunk).fetchall()
        return out
