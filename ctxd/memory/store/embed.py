"""The store's embeddings table (ctxd.memory.recall.embed): what is embedded, what is left, the vectors.
A message counts as embedded when it has a row of the current model (another model's row is
replaced when the embedder reaches it)."""

import sys

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

    def embed_blocks(self, model: str) -> "list[Row]":
        """[(first, last, ids, bits)] of *model*'s packed blocks, by first id."""
        return self.db.execute("SELECT first, last, ids, bits FROM embed_blocks WHERE model = ? ORDER BY first",
                               (model,)).fetchall()

    def embed_bits(self, model: str, size: int, ranges: "Iterable[tuple[int, int]] | None" = None) -> bytes:
        """The *size*-byte sign bits of every vector of *model* (with *ranges*, only those with an
        id in one of these (first, last) ranges: the gaps between packed blocks), concatenated in
        one blob (in no particular order; b"" when there are none): read in one step, not a row at
        a time (100,000 rows: ~15 ms, ~100 ms as rows)."""
        where, args = _within(ranges)
        by = "model" if ranges is None else "+model"  # the whole index, or the id ranges (not the index)
        blob = self.db.execute(f"SELECT CAST(group_concat(bits, '') AS BLOB) FROM embeddings "
                               f"WHERE {by} = ? AND bits IS NOT NULL{where}", (model, *args)).fetchone()[0] or b""
        if len(blob) % size:  # a row of another size (a damaged store): only the rows of this size
            blob = self.db.execute(f"SELECT CAST(group_concat(bits, '') AS BLOB) FROM embeddings "
                                   f"WHERE {by} = ? AND length(bits) = ?{where}", (model, size, *args)
                                   ).fetchone()[0] or b""
        return blob

    def embed_rows(self, model: str, at_most: int) -> "list[Row] | None":
        """[(id, scale, int8 bytes)] of every vector of *model*, or None when there are more than *at_most*."""
        rows = self.db.execute("SELECT id, scale, vec FROM embeddings WHERE model = ? AND vec IS NOT NULL LIMIT ?",
                               (model, at_most + 1)).fetchall()
        return rows if len(rows) <= at_most else None

    def embed_with_bits(self, model: str, values: "Iterable[bytes]",
                        ranges: "Iterable[tuple[int, int]] | None" = None) -> "list[Row]":
        """[(id, sign bits)] of the vectors of *model* (with *ranges*: with an id in one of them)
        whose sign bits are one of *values*."""
        out = []
        values = list(values)
        where, args = _within(ranges)
        for start in range(0, len(values), 500):
            chunk = values[start:start + 500]
            out += self.db.execute(f"SELECT id, bits FROM embeddings WHERE model = ? AND bits IN "
                                   f"({','.join('?' * len(chunk))}){where}", (model, *chunk, *args)).fetchall()
        return out

    def embed_loose(self, model: str, size: int, after: int, upto: int) -> "list[Row]":
        """[(id, bits)] by id of the vectors of *model* with *size*-byte bits in ids (after, upto]."""
        return self.db.execute("SELECT id, bits FROM embeddings WHERE id > ? AND id <= ? AND +model = ? "
                               "AND length(bits) = ? ORDER BY id", (after, upto, model, size)).fetchall()

    def embed_pack(self, model: str, size: int, first: int, last: int) -> int:
        """Pack the vectors of *model* with *size*-byte bits in ids [first, last] into one block
        (ids as 8-byte ints, then the bits a byte column after another), read and written in one
        transaction; drop other models' blocks. Returns how many vectors it holds."""
        import array

        with self.transaction() as db:
            db.execute("DELETE FROM embed_blocks WHERE model != ?", (model,))
            rows = self.embed_loose(model, size, first - 1, last)
            if not rows:
                return 0
            ids = array.array("q", [r[0] for r in rows])
            if sys.byteorder == "big":
                ids.byteswap()
            blob = b"".join(r[1] for r in rows)
            db.execute("INSERT OR REPLACE INTO embed_blocks(model, first, last, ids, bits) VALUES (?, ?, ?, ?, ?)",
                       (model, rows[0][0], rows[-1][0], ids.tobytes(), b"".join(blob[j::size] for j in range(size))))
            return len(rows)

    def embed_vectors(self, ids: "Iterable[int]") -> "list[Row]":
        """[(id, scale, int8 bytes)] of *ids*."""
        out = []
        ids = list(ids)
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            out += self.db.execute(f"SELECT id, scale, vec FROM embeddings WHERE id IN ({','.join('?' * len(chunk))})",
                                   chunk).fetchall()
        return out


def _within(ranges):
    """(SQL, args): ``AND`` the id is in one of the (first, last) *ranges* (None: any id). By the
    id (the rowid): a range is read as a range, not found by a scan."""
    if ranges is None:
        return "", ()
    ranges = list(ranges) or [(1, 0)]
    return " AND (" + " OR ".join(["id BETWEEN ? AND ?"] * len(ranges)) + ")", [x for r in ranges for x in r]
