"""Simon Willison's llm ``logs.db`` (both schemas, tool calls included), read through
``ctxd.memory.store.llm`` (SQL stays in the store modules)."""

import json

from ctxd.agents.base import ImportFailed, TranscriptFormat
from ctxd.agents.common import call_record, dumps, record, result_record, timestamp, user_record


def _part_fields(row):
    """(kind, text or args, name, call id) of a part row of the message store (llm >= 0.32);
    kind is "text", "tool_call", "tool_result" or None (reasoning, empty attachments)."""
    ptype, text, payload, tool = row[:4]
    data = None
    if isinstance(payload, str) and payload:
        try:
            data = json.loads(payload)
        except ValueError:
            data = None
    if not isinstance(data, dict):
        data = {}
    cid = data.get("tool_call_id") if isinstance(data.get("tool_call_id"), str) else None
    if ptype in ("reasoning", "thinking"):
        return None, "", None, None
    if ptype == "tool_call":
        name = tool or data.get("name")
        args = data.get("arguments", data.get("args", data.get("input", {})))
        return "tool_call", args, name, cid
    if isinstance(text, str):
        body = text
    else:
        val = next((data[k] for k in ("text", "output", "content") if k in data), "")
        body = val if isinstance(val, str) else dumps(val)
    if ptype == "tool_result":
        return "tool_result", body, tool or data.get("name"), cid
    if ptype in ("attachment", "image") and not body:
        return None, "", None, None
    return "text", body, None, None


def _message_records(h, role, parts, session, ts):
    """The records of one message: its text (kind by role) and its tool calls and results.

    The first record keeps the message's key ``llm:msg:<hash>``; the others are
    ``llm:msg:<hash>:<position>``.
    """
    texts, tools = [], []
    for pos, prow in parts:
        kind, body, name, cid = _part_fields(prow)
        if kind == "text" and body.strip():
            texts.append(body)
        elif kind == "tool_call":
            tools.append(call_record(name, body, session, "llm", f"llm:msg:{h}:{pos}", ts, call_id=cid))
        elif kind == "tool_result" and body.strip():
            tools.append(result_record(body, session, "llm", f"llm:msg:{h}:{pos}", ts, tool=name, call_id=cid))
    out = []
    text = "\n".join(texts)
    key = f"llm:msg:{h}"
    if text.strip():
        if role == "user":
            out.append(user_record(text, session, "llm", key, ts))
        elif role == "system":
            out.append(record("meta", text, session, "llm", key, ts, subtype="system"))
        elif role == "tool":
            out.append(result_record(text, session, "llm", key, ts))
        else:
            out.append(record("reply", text, session, "llm", key, ts))
    elif tools:
        tools[0]["dedup"] = key
    return out + tools


def parse_llm(path, cursor):
    """Rows of llm's logs.db: the message store (threads/messages/parts) and the legacy responses table.

    Conversations llm >= 0.32 logged live in ``threads`` (id = the conversation
    id), whose ``tip_message_hash`` ends a chain of ``messages`` (hash,
    parent_hash, role) made of ``parts`` (message_hash, position, type, text,
    payload, tool_name). The legacy ``responses`` rows are imported too, except
    those also logged as turns (same id) during the dual-write releases.
    """
    from ctxd.memory.store.llm import DatabaseError, LlmLogs

    try:
        db = LlmLogs(path)
    except DatabaseError as e:
        raise ImportFailed(f"{path}: not a readable SQLite database ({e})") from None
    tables = db.tables
    try:
        new = ({"threads", "messages", "parts"} <= tables and "hash" in db.columns("messages")
               and "message_hash" in db.columns("parts"))
        if not new and "responses" not in tables:
            raise ImportFailed(f"{path}: not an llm logs.db (no responses or messages table)")
        total = 0
        if new:
            total += db.count("threads")
        if "responses" in tables:
            total += db.count("responses")
        progress = _RowProgress(cursor, total)
        turn_ids = set()
        if new:
            tcols = db.columns("turns") if "turns" in tables else set()
            if "id" in tcols:
                turn_ids = db.turn_ids()
            yield from _thread_records(db, tcols, progress)
        if "responses" in tables:
            yield from _response_records(db, turn_ids, progress)
    except DatabaseError as e:
        raise ImportFailed(f"{path}: cannot read it as an llm logs.db ({e})") from None
    finally:
        db.close()


class _RowProgress:
    """Moves the cursor through the file's size as rows are read (a database has no line offsets)."""

    def __init__(self, cursor, total):
        self.cursor, self.total, self.done = cursor, total, 0
        self.size = cursor.size or 0

    def tick(self):
        self.done += 1
        self.cursor.pos = self.size * self.done // self.total if self.total else self.size


def _thread_records(db, tcols, progress):
    """The records of the message store (llm >= 0.32): each thread's chain of messages, oldest first."""
    when_col = next((c for c in ("datetime_utc", "started_at", "created_at", "timestamp") if c in tcols), None)
    pcols = db.columns("parts")
    order = "position" if "position" in pcols else "rowid"
    cols = [c if c in pcols else None for c in ("type", "text", "payload", "tool_name")]
    hcols = db.columns("threads")
    emitted = set()  # forks share their first messages: each is imported with the first thread
    for tid, tip, started in db.threads("datetime_utc" if "datetime_utc" in hcols else None):
        progress.tick()
        session = str(tid)
        when = {}
        if when_col and {"thread_id", "tip_message_hash"} <= tcols:
            pm = "parent_message_hash" if "parent_message_hash" in tcols else None
            for parent, tipm, w in db.turn_times(tid, pm, when_col):
                for h in (parent, tipm):
                    if h and h not in when:
                        when[h] = timestamp(w)
        chain, seen, h = [], set(), tip
        while h and h not in seen:
            seen.add(h)
            row = db.message(h)
            if row is None:
                break
            chain.append((h, row[1]))
            h = row[0]
        chain.reverse()
        # messages before the first turn's time (a system prompt) happened when the thread began
        ts = next((when[h] for h, _r in chain if when.get(h) is not None), None) or timestamp(started)
        for h, role in chain:
            ts = when.get(h) or ts
            if h in emitted:
                continue
            emitted.add(h)
            role = role if role in ("user", "assistant", "system", "tool") else "user"
            parts = [(r[0], r[1:]) for r in db.parts(h, order, cols)]
            yield from _message_records(h, role, parts, session, ts)


def _response_records(db, turn_ids, progress):
    """The records of the legacy ``responses`` table, but for rows also logged as turns (*turn_ids*)."""
    calls = db.legacy_tools("tool_calls", "arguments")
    results = db.legacy_tools("tool_results", "output")
    for rid, prompt, response, conv, when, system in db.responses(
            ("id", "prompt", "response", "conversation_id", "datetime_utc", "system")):
        progress.tick()
        if rid in turn_ids:
            continue
        session = str(conv) if conv else "llm"
        ts = timestamp(when)
        if isinstance(system, str) and system.strip():
            yield record("meta", system, session, "llm", f"llm:{rid}:system", ts, subtype="system")
        for tcid, name, output, cid in results.get(rid, ()):  # sent with this prompt
            if isinstance(output, str) and output.strip():
                yield result_record(output, session, "llm", f"llm:{rid}:tool_result:{tcid}", ts, tool=name,
                                    call_id=cid)
        if isinstance(prompt, str) and prompt.strip():
            yield user_record(prompt, session, "llm", f"llm:{rid}:user", ts)
        if isinstance(response, str) and response.strip():
            yield record("reply", response, session, "llm", f"llm:{rid}:assistant", ts)
        for tcid, name, args, cid in calls.get(rid, ()):  # what the model asked to run
            yield call_record(name, args if args is not None else {}, session, "llm",
                              f"llm:{rid}:tool_call:{tcid}", ts, call_id=cid)


class Llm(TranscriptFormat):
    name = "llm"
    magic = b"SQLite format 3\x00"
    magic_name = "SQLite database"
    extensions = (".db", ".sqlite", ".sqlite3")
    tails = False  # a database: imported whole each time (keys dedup)
    wants_path = True

    def parse(self, source, cursor):
        return parse_llm(source, cursor)
