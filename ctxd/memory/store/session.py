"""The store's SQL for the session memory (a mixin of ctxd.memory.store.db.Store).

Only the store modules (ctxd/memory/store/) run SQL; everything else calls
their methods. ctxd.memory.context.session builds the session memory (requests, files,
commands, commits, errors, todos) from the typed rows these methods return.
"""

TYPE_CHECKING = False  # typing is not imported at run time: the hooks import the store
if TYPE_CHECKING:
    from collections.abc import Iterable
    from sqlite3 import Row

# A tool result is read as its head and its tail: what a session memory needs of it
# (a commit's "[main abc123] subject" line, a test run's "3 passed, 1 failed") is there.
RESULT_HEAD = 1500
RESULT_TAIL = 1500
_TYPED = ("prompt", "reply", "tool_call", "tool_result", "summary")


class SessionTables:
    """Methods of Store for ctxd.memory.context.session; self.db is the connection."""

    def session_rows(self, limit: int = 3000, session: str | None = None, local: bool = False) -> "list[Row]":
        """The newest *limit* typed rows (prompt, reply, tool_call, tool_result, summary; of meta
        only interrupts: they tell a call the user stopped from one that failed), oldest first, as
        rows with id, session, kind, tool, call_id, subtype, data (JSON text), ts, source, provenance
        and content (a tool result's cut to its head and tail). *local*: only rows written here (none
        received through ctxd sync)."""
        cols = ("id, session, kind, role, tool, call_id, subtype, data, ts, source, output_path, provenance, "
                "CASE WHEN kind = 'tool_result' AND length(content) > ? "
                "THEN substr(content, 1, ?) || char(10) || substr(content, -?) ELSE content END AS content")
        marks = ",".join("?" * len(_TYPED))
        args = [RESULT_HEAD + RESULT_TAIL, RESULT_HEAD, RESULT_TAIL, *_TYPED]
        if session is None:
            # +kind: walk messages_ts from the newest (the kind index would sort the whole history)
            sql = f"SELECT {cols} FROM messages WHERE +kind IN ({marks}, 'meta') ORDER BY ts DESC, id DESC LIMIT ?"
        else:
            sql = (f"SELECT {cols} FROM messages WHERE +kind IN ({marks}, 'meta') AND session = ? "
                   "ORDER BY ts DESC, id DESC LIMIT ?")
            args.append(session)
        if local:
            sql = sql.replace(" ORDER BY", " AND +author IS NULL ORDER BY")
        args.append(limit)
        rows = self.db.execute(sql, args).fetchall()
        return [r for r in reversed(rows) if r["kind"] != "meta" or r["subtype"] == "interrupt"]

    def first_prompt(self, session: str | None = None, local: bool = False) -> "Row | None":
        """The first typed prompt (of *session*, else of the whole store; *local*: written here) as
        a row, or None."""
        mine = " AND +author IS NULL" if local else ""
        if session is None:
            return self.db.execute("SELECT id, session, ts, content FROM messages WHERE +kind = 'prompt'"
                                   f"{mine} ORDER BY ts, id LIMIT 1").fetchone()  # +kind: walk messages_ts
        return self.db.execute("SELECT id, session, ts, content FROM messages WHERE kind = 'prompt' AND session = ?"
                               f"{mine} ORDER BY ts, id LIMIT 1", (session,)).fetchone()

    def kind_of(self, msg_id: int) -> str | None:
        """The kind of message *msg_id*, or None."""
        row = self.db.execute("SELECT kind FROM messages WHERE id = ?", (msg_id,)).fetchone()
        return row[0] if row else None

    def fact_source_rows(self, upto: int, batch: int) -> "list[Row]":
        """The next *batch* messages after id *upto*, with the columns fact extraction reads and
        their kind and subtype (facts come from prompts, replies and summaries only)."""
        return self.db.execute("SELECT id, ts, role, content, importance, session, source, kind, subtype "
                               "FROM messages WHERE id > ? ORDER BY id LIMIT ?", (upto, batch)).fetchall()

    def answered(self, msg_ids: "Iterable[int]") -> set[int]:
        """The ids among *msg_ids* that a later reply of the same session follows."""
        out = set()
        for i in msg_ids:
            row = self.db.execute(
                "SELECT 1 FROM messages m JOIN messages q ON q.id = ? WHERE m.session = q.session AND m.id > q.id "
                "AND m.kind = 'reply' LIMIT 1", (i,)).fetchone()
            if row:
                out.add(i)
        return out

    def history_rows(self, edit_tools: "Iterable[str]", limit: int = 4000) -> "list[tuple[Row, Row | None]]":
        """What the project's earlier sessions changed: the newest *limit* tool calls that edit
        files (a tool of *edit_tools*, a patch) or commit (``git … commit``), oldest first, each
        with its result's head (``result``, ``result_data``; None when none was recorded)."""
        marks = ",".join("?" * len(edit_tools))
        rows = self.db.execute(
            f"SELECT id, session, kind, tool, call_id, data, ts, content FROM messages WHERE kind = 'tool_call' "
            f"AND (tool IN ({marks}) OR content LIKE 'apply_patch:%' OR content LIKE '%*** Begin Patch%' "
            "OR (content LIKE '%git%' AND content LIKE '%commit%')) ORDER BY id DESC LIMIT ?",
            (*edit_tools, limit)).fetchall()
        out = []
        for r in reversed(rows):
            res = None
            if r["call_id"]:
                res = self.db.execute(
                    "SELECT substr(content, 1, ?) AS content, data FROM messages WHERE call_id = ? AND session = ? "
                    "AND kind = 'tool_result' ORDER BY id LIMIT 1", (RESULT_HEAD, r["call_id"], r["session"])).fetchone()
            out.append((r, res))
        return out

    def last_prompt(self, session: str | None = None, local: bool = False) -> "Row | None":
        """The newest typed prompt (of *session*, else of the whole store; *local*: written here)
        as a row, or None."""
        if session is None:
            mine = " AND +author IS NULL" if local else ""
            return self.db.execute("SELECT id, session, ts, content FROM messages WHERE +kind = 'prompt'"
                                   f"{mine} ORDER BY ts DESC, id DESC LIMIT 1").fetchone()
        return self.db.execute("SELECT id, session, ts, content FROM messages WHERE kind = 'prompt' AND session = ? "
                               "ORDER BY ts DESC, id DESC LIMIT 1", (session,)).fetchone()
