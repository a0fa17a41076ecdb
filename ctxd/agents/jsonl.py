"""Plain chat JSONL: OpenAI-style ``{"role", "content"}`` messages, one a line, or a whole
``{"messages": [...]}`` conversation a line (fine-tuning files); also what ``ctxd chat export``
writes (its kind, fields, session, time, importance, source and key are kept, so the export
re-imports losslessly)."""

import os
import re

from ctxd.agents.base import Evidence, Malformed, TranscriptFormat
from ctxd.agents.common import (call_record, json_object, lines, record, result_record, sha, text_parts,
                                timestamp, user_record)
from ctxd.memory.store import items

_JSONL_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool",
                "developer": "system", "function": "tool"}


def _jsonl_text(content):
    if isinstance(content, list):
        return text_parts(content)
    if isinstance(content, str):
        return content
    return None


def _exported_output(obj):
    """The whole text of an exported message whose output the store had moved to a file (the
    exported content is then its preview, naming the file), or None.

    Only a file the store wrote is read: ``outputs/<sha256 of its text, 24 hex>.txt``, named in
    the preview; a line naming any other file gets its content as it is.
    """
    path = obj.get("output_path")
    content = obj.get("content")
    if not isinstance(path, str) or not path or not isinstance(content, str) or path not in content:
        return None
    name = os.path.basename(path)
    if os.path.basename(os.path.dirname(path)) != "outputs" or not re.fullmatch(r"[0-9a-f]{24}\.txt", name):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, ValueError):
        return None
    return text if sha(text)[:24] == name[:24] else None


def _jsonl_message(obj, n, key, session, default_ts=None, importance=None):
    """The records of one OpenAI-style message (or one ``ctxd chat export`` line), or a Malformed."""
    raw_role = obj.get("role")
    role = _JSONL_ROLES.get(raw_role) if isinstance(raw_role, str) else None
    kind = obj.get("kind") if obj.get("kind") in items.KINDS else None
    if role is None and kind is None:
        return Malformed(n, f"no usable role ({raw_role!r})")
    content = obj.get("content")
    text = _jsonl_text(content)
    if text is None and content is not None:
        return Malformed(n, f"content is a {type(content).__name__}")
    text = text or ""
    # "ts" (unix seconds, what ctxd chat export writes beside its whole-second "time") first
    ts = timestamp(obj.get("ts")) or timestamp(obj.get("time")) or timestamp(obj.get("timestamp")) or default_ts
    out = []
    if kind is not None:  # what ctxd chat export wrote: the typed fields as they were stored
        source = obj.get("source") if isinstance(obj.get("source"), str) and obj.get("source") else "jsonl"
        if isinstance(obj.get("dedup"), str) and obj.get("dedup"):
            key = obj["dedup"]  # the key it was stored under: an export imported anywhere is stored once
        full = _exported_output(obj)
        rec = record(kind, full if full is not None else text, session, source, key, ts, importance,
                     **{k: obj.get(k) if isinstance(obj.get(k), str) and obj.get(k) else None
                      for k in ("tool", "call_id", "subtype")})
        if isinstance(obj.get("data"), dict):
            rec["data"] = obj["data"]
        if obj.get("provenance") in items.PROVENANCES:
            rec["provenance"] = obj["provenance"]
        if role is not None:
            rec["role"] = role
        return [rec] if text.strip() or kind in ("tool_result", "tool_call") else []
    if role == "user":
        out.append(user_record(text, session, "jsonl", key, ts, importance))
    elif role == "assistant":
        out.append(record("reply", text, session, "jsonl", key, ts, importance))
    elif role == "tool":
        tool = obj.get("name") if isinstance(obj.get("name"), str) else None
        cid = obj.get("tool_call_id") if isinstance(obj.get("tool_call_id"), str) else None
        out.append(result_record(text, session, "jsonl", key, ts, tool=tool, call_id=cid))
    else:
        out.append(record("meta", text, session, "jsonl", key, ts, importance, subtype="system"))
    fc = obj.get("function_call")  # the OpenAI format before tool_calls
    if isinstance(fc, dict) and role == "assistant":
        out.append(call_record(fc.get("name"), fc.get("arguments", ""), session, "jsonl", f"{key}:call:0", ts))
    calls = obj.get("tool_calls")
    if isinstance(calls, list):
        for i, c in enumerate(calls):
            fn = c.get("function") if isinstance(c, dict) else None
            if isinstance(fn, dict):
                cid = c.get("id") if isinstance(c.get("id"), str) else None
                out.append(call_record(fn.get("name"), fn.get("arguments", ""), session, "jsonl", f"{key}:call:{i}", ts,
                                       call_id=cid))
    if content is None and len(out) == 1:
        return Malformed(n, "no content")
    out = [r for r in out if r["kind"] == "tool_call" or r["content"].strip()]
    if out and out[0]["kind"] == "tool_call" and not text.strip():
        out[0]["dedup"] = key  # a message that is only calls: its first call has the line's key
    return out


def parse_jsonl(f, cursor):
    """One message a line: ``{"role", "content"}`` (tool_calls, tool_call_id, name), what
    ``ctxd chat export`` writes (kind, tool, call_id, subtype, data, session, time, importance),
    or a whole conversation a line: ``{"messages": [...]}`` (fine-tuning files)."""
    for n, raw in lines(f, cursor):
        if not raw.strip():
            continue
        obj = json_object(n, raw)
        if isinstance(obj, Malformed):
            yield obj
            continue
        session = obj.get("session") if isinstance(obj.get("session"), str) and obj.get("session") else \
            cursor.default_session
        imp = obj.get("importance")
        imp = float(imp) if isinstance(imp, (int, float)) and not isinstance(imp, bool) and 0 <= imp <= 1 else None
        key = f"jsonl:{session}:{n}:{sha(raw)[:16]}"
        if "role" not in obj and "kind" not in obj and isinstance(obj.get("messages"), list):
            if not isinstance(obj.get("session"), str) or not obj.get("session"):
                session = f"{cursor.default_session}:{n}"  # each line is a conversation of its own
            ts = timestamp(obj.get("time")) or timestamp(obj.get("timestamp"))
            for i, m in enumerate(obj["messages"]):
                r = _jsonl_message(m, n, f"{key}:{i}", session, ts) if isinstance(m, dict) else \
                    Malformed(n, f"message {i} is not an object")
                if isinstance(r, Malformed):
                    yield Malformed(n, f"message {i}: {r.reason}")
                    break
                yield from r
            continue
        r = _jsonl_message(obj, n, key, session, None, imp)
        if isinstance(r, Malformed):
            yield r
        else:
            yield from r


class Jsonl(TranscriptFormat):
    name = "jsonl"

    def sniff_line(self, obj, n):
        if "role" in obj or ("kind" in obj and "content" in obj):
            return Evidence.SHAPE
        if isinstance(obj.get("messages"), list) and all(isinstance(m, dict) and "role" in m
                                                         for m in obj["messages"]):
            return Evidence.SHAPE  # {"messages": [...]} a line, as fine-tuning files are
        return None

    def parse(self, source, cursor):
        return parse_jsonl(source, cursor)
