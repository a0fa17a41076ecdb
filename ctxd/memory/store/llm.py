"""Reading llm's own logs.db (Simon Willison's llm), read-only: the store layer's reader of a
foreign database, so that the importer (ctxd.agents.llm) runs no SQL.

Both schemas: up to 0.31 ``responses`` (+ ``tool_calls`` / ``tool_results``); from 0.32 also
``threads``, ``turns``, ``messages`` (hash, parent_hash, role) and ``parts``.
"""

import os
import sqlite3
from urllib.parse import quote

DatabaseError = sqlite3.DatabaseError


class LlmLogs:
    """An llm logs.db opened read-only. Raises DatabaseError when it is not SQLite."""

    def __init__(self, path):
        self.db = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True)
        try:
            self.tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except BaseException:
            self.db.close()
            raise

    def close(self):
        self.db.close()

    def columns(self, table):
        return {r[1] for r in self.db.execute(f"PRAGMA table_info([{table}])")}

    def count(self, table):
        return self.db.execute(f"SELECT count(*) FROM [{table}]").fetchone()[0]

    def turn_ids(self):
        return {r[0] for r in self.db.execute("SELECT id FROM turns")}

    def threads(self, when_col):
        """[(id, tip_message_hash, when)] by rowid (*when_col* a column name or None)."""
        return self.db.execute(
            f"SELECT id, tip_message_hash, {when_col or 'NULL'} FROM threads ORDER BY rowid").fetchall()

    def turn_times(self, thread_id, parent_col, when_col):
        """[(parent message hash, tip message hash, when)] of a thread's turns."""
        return self.db.execute(f"SELECT {parent_col or 'NULL'}, tip_message_hash, {when_col} FROM turns "
                               "WHERE thread_id = ?", (thread_id,)).fetchall()

    def message(self, h):
        """(parent_hash, role) of message *h*, or None."""
        return self.db.execute("SELECT parent_hash, role FROM messages WHERE hash = ?", (h,)).fetchone()

    def parts(self, h, order, cols):
        """[(position, *cols)] of message *h*'s parts (missing columns as NULL)."""
        sel = ", ".join(c or "NULL" for c in cols)
        return self.db.execute(f"SELECT {order}, {sel} FROM parts WHERE message_hash = ? ORDER BY {order}",
                               (h,)).fetchall()

    def legacy_tools(self, table, value):
        """response id -> [(row id, name, value, tool_call_id)] of llm's tool_calls / tool_results."""
        if table not in self.tables:
            return {}
        cols = self.columns(table)
        if not {"id", "response_id"} <= cols:
            return {}
        sel = ", ".join(c if c in cols else "NULL" for c in ("response_id", "id", "name", value, "tool_call_id"))
        out = {}
        for rid, tid, name, val, cid in self.db.execute(f"SELECT {sel} FROM [{table}] ORDER BY id"):
            out.setdefault(rid, []).append((tid, name, val, cid))
        return out

    def responses(self, cols, batch=200):
        """The legacy responses rows (the given columns, missing ones as NULL), in batches."""
        have = self.columns("responses")
        sel = ", ".join(c if c in have else "NULL" for c in cols)
        cur = self.db.execute(f"SELECT {sel} FROM responses ORDER BY rowid")
        while True:
            rows = cur.fetchmany(batch)
            if not rows:
                return
            yield from rows
