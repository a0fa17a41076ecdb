"""Importers: what other AI CLIs recorded -> typed items in the conversation store.

One streaming parser per format. Each is a generator over a binary file
object that yields, line by line (a file is never read whole, except a Gemini
session written as one JSON document):

- records of the typed model (:mod:`ctxd.memory.items`) for ``Store.add_many``:
  ``kind`` (prompt, reply, tool_call, tool_result, summary, meta) and the
  fields it carries (``tool``, ``call_id``, ``subtype``, ``data``), ``role``,
  ``content`` (readable text, never a JSON dump), ``session``, ``source``
  (the format), ``ts`` (when it happened, from the record; or None),
  ``importance`` (None) and ``dedup``: a key that is unique and stable across
  re-imports, so importing a file twice adds nothing;
- ``Malformed(line_no, reason)`` for a line it cannot use (counted and
  reported, never fatal);
- ``Forget(keys)`` when messages imported earlier must go (a Gemini rewind):
  the rows whose dedup key is one of *keys*, or starts with key + ":".

Formats (real samples of each in tests/contracts/real, README there):

- ``jsonl``: OpenAI-style ``{"role", "content"}`` messages, one a line, or a
  whole ``{"messages": [...]}`` conversation a line; also what ``ctxd chat
  export`` writes (its kind, fields, session, time, importance, source and
  key are kept, so the export re-imports losslessly).
- ``claude``: a Claude Code transcript (content blocks: text, tool_use,
  tool_result); prompts get :func:`claude_prompt_dedup` keys so the
  UserPromptSubmit hook and an import store a prompt once.
- ``codex``: a Codex rollout file (response items; turns from task_started and
  turn_context).
- ``gemini``: a Gemini CLI session: the JSONL upsert log (a record id may be
  written several times, the last version counts; ``$rewindTo`` drops that
  record and everything after it, as Gemini CLI itself does; ``$set`` message
  lists), the legacy one-document ``session-*.json``, a ``/chat save``
  checkpoint.
- ``aider``: ``.aider.chat.history.md``.
- ``llm``: Simon Willison's llm ``logs.db`` (both schemas, tool calls included).

``import_file`` imports a whole file (the ``ctxd chat import`` command);
``import_transcript`` imports what a live transcript gained since its last
call (the Stop/PreCompact hooks). Both insert in batches of ``BATCH``.

This module is imported by the AI CLI hooks: standard library only at the top.
"""

import json
import os
import re
from collections import namedtuple

from ctxd.errors import CtxdError, ExitCode
from ctxd.memory import items as _items

FORMATS = ("jsonl", "claude", "codex", "gemini", "aider", "llm")
BATCH = 500
SHOW_LINES = 20  # malformed line numbers listed in a report
_SNIFF_LINES = 50
_SNIFF_LINE_BYTES = 1 << 20
_WHOLE_JSON_BYTES = 64 << 20  # a session file written as one JSON document is read whole up to this size


Malformed = namedtuple("Malformed", "line_no reason")  # a line that could not be used
Forget = namedtuple("Forget", "keys")  # dedup keys (and their "key:..." children) to delete


class ImportFailed(CtxdError):
    """A whole file could not be imported (missing, unreadable, unknown format)."""

    exit_code = ExitCode.NOT_FOUND


class _Rescan(Exception):
    """An incremental import met something only a pass over the whole file can apply."""


# -- shared helpers ---------------------------------------------------------------

def _sha(data):
    from ctxd.activation.fileio import sha256_hex

    return sha256_hex(data)


def claude_prompt_dedup(session, text, k):
    """The dedup key of the *k*-th (1-based) occurrence of prompt *text* in Claude session *session*.

    Shared by the transcript importer and the UserPromptSubmit hook, so a prompt
    the hook recorded is not stored again when the transcript is imported. The
    text is compared with surrounding whitespace stripped.
    """
    return f"claude:{session}:prompt:{_sha(text.strip())[:16]}:{k}"


def _ts(value):
    """ISO 8601 text (naive = UTC) or a number (seconds, or milliseconds) -> unix seconds, or None."""
    from ctxd.isotime import parse

    return parse(value)


def _rec(kind, content, session, source, dedup, ts=None, importance=None, **typed):
    """A record of the typed model (ctxd.memory.items): kind, content and the fields the kind carries."""
    return _items.record(kind, content, session=session, source=source, dedup=dedup, ts=ts,
                         importance=importance, **typed)


def _user(text, session, source, dedup, ts=None, importance=None):
    """Text on a user line: a prompt, or meta/summary when the CLI injected it (items.user_record)."""
    return _items.user_record(text, session=session, source=source, dedup=dedup, ts=ts, importance=importance)


def _call(name, args, session, source, dedup, ts=None, call_id=None):
    return _items.call_record(name, args, call_id=call_id, session=session, source=source, dedup=dedup, ts=ts)


def _result(text, session, source, dedup, ts=None, *, tool=None, call_id=None, is_error=False, exit_code=None):
    return _items.result_record(text, tool=tool, call_id=call_id, is_error=is_error, exit_code=exit_code,
                                session=session, source=source, dedup=dedup, ts=ts)


def _dumps(value):
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _text_parts(parts, types=("text", "input_text", "output_text")):
    """The text of a list of content parts (dicts with "text"); other parts are left out."""
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, dict) and isinstance(p.get("text"), str) and p.get("type", "text") in types:
            out.append(p["text"])
    return "\n".join(out)


class Ctx:
    """Where a parse starts and how far it got.

    ``pos`` is the byte offset just after the last line consumed; with
    ``complete_only`` a last line without its newline is not consumed (a
    writer may be in the middle of it).
    """

    def __init__(self, path, *, start=0, line_no=1, complete_only=False, size=None):
        self.path = path
        self.start = start
        self.first_line_no = line_no
        self.complete_only = complete_only
        self.pos = start
        self.size = size
        stem = os.path.basename(path)
        for ext in (".jsonl", ".json", ".md", ".db"):
            if stem.endswith(ext):
                stem = stem[: -len(ext)]
        self.default_session = stem or "import"


def _lines(f, ctx, start=None, line_no=None, end=None):
    """(line number, line without its newline) from byte *start* up to byte *end*."""
    pos = ctx.start if start is None else start
    n = ctx.first_line_no if line_no is None else line_no
    f.seek(pos)
    while end is None or pos < end:
        raw = f.readline()
        if not raw:
            return
        if not raw.endswith(b"\n") and ctx.complete_only:
            return
        pos += len(raw)
        ctx.pos = pos
        if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        yield n, raw.rstrip(b"\n").rstrip(b"\r")
        n += 1


def _parse_json(n, raw):
    """The dict on line *n*, or Malformed."""
    try:
        obj = json.loads(raw)
    except ValueError as e:  # UnicodeDecodeError is a ValueError too
        return Malformed(n, f"invalid JSON: {e}")
    if not isinstance(obj, dict):
        return Malformed(n, f"a JSON {type(obj).__name__}, not an object")
    return obj


def _json_lines(f, ctx, **kw):
    """(line number, dict or Malformed) for each line; blank lines are skipped."""
    for n, raw in _lines(f, ctx, **kw):
        if raw.strip():
            yield n, _parse_json(n, raw)


def _first_json(f):
    """The first line of *f* as a dict (or None); the file position is kept."""
    here = f.tell()
    try:
        f.seek(0)
        line = f.readline(_SNIFF_LINE_BYTES)
        if line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        obj = json.loads(line)
        return obj if isinstance(obj, dict) else None
    except ValueError:
        return None
    finally:
        f.seek(here)


# -- jsonl: OpenAI-style messages -------------------------------------------------

_JSONL_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool",
                "developer": "system", "function": "tool"}


def _jsonl_text(content):
    if isinstance(content, list):
        return _text_parts(content)
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
    return text if _sha(text)[:24] == name[:24] else None


def _jsonl_message(obj, n, key, session, default_ts=None, importance=None):
    """The records of one OpenAI-style message (or one ``ctxd chat export`` line), or a Malformed."""
    raw_role = obj.get("role")
    role = _JSONL_ROLES.get(raw_role) if isinstance(raw_role, str) else None
    kind = obj.get("kind") if obj.get("kind") in _items.KINDS else None
    if role is None and kind is None:
        return Malformed(n, f"no usable role ({raw_role!r})")
    content = obj.get("content")
    text = _jsonl_text(content)
    if text is None and content is not None:
        return Malformed(n, f"content is a {type(content).__name__}")
    text = text or ""
    # "ts" (unix seconds, what ctxd chat export writes beside its whole-second "time") first
    ts = _ts(obj.get("ts")) or _ts(obj.get("time")) or _ts(obj.get("timestamp")) or default_ts
    out = []
    if kind is not None:  # what ctxd chat export wrote: the typed fields as they were stored
        source = obj.get("source") if isinstance(obj.get("source"), str) and obj.get("source") else "jsonl"
        if isinstance(obj.get("dedup"), str) and obj.get("dedup"):
            key = obj["dedup"]  # the key it was stored under: an export imported anywhere is stored once
        full = _exported_output(obj)
        rec = _rec(kind, full if full is not None else text, session, source, key, ts, importance,
                   **{k: obj.get(k) if isinstance(obj.get(k), str) and obj.get(k) else None
                      for k in ("tool", "call_id", "subtype")})
        if isinstance(obj.get("data"), dict):
            rec["data"] = obj["data"]
        if obj.get("provenance") in _items.PROVENANCES:
            rec["provenance"] = obj["provenance"]
        if role is not None:
            rec["role"] = role
        return [rec] if text.strip() or kind in ("tool_result", "tool_call") else []
    if role == "user":
        out.append(_user(text, session, "jsonl", key, ts, importance))
    elif role == "assistant":
        out.append(_rec("reply", text, session, "jsonl", key, ts, importance))
    elif role == "tool":
        tool = obj.get("name") if isinstance(obj.get("name"), str) else None
        cid = obj.get("tool_call_id") if isinstance(obj.get("tool_call_id"), str) else None
        out.append(_result(text, session, "jsonl", key, ts, tool=tool, call_id=cid))
    else:
        out.append(_rec("meta", text, session, "jsonl", key, ts, importance, subtype="system"))
    fc = obj.get("function_call")  # the OpenAI format before tool_calls
    if isinstance(fc, dict) and role == "assistant":
        out.append(_call(fc.get("name"), fc.get("arguments", ""), session, "jsonl", f"{key}:call:0", ts))
    calls = obj.get("tool_calls")
    if isinstance(calls, list):
        for i, c in enumerate(calls):
            fn = c.get("function") if isinstance(c, dict) else None
            if isinstance(fn, dict):
                cid = c.get("id") if isinstance(c.get("id"), str) else None
                out.append(_call(fn.get("name"), fn.get("arguments", ""), session, "jsonl", f"{key}:call:{i}", ts,
                                 call_id=cid))
    if content is None and len(out) == 1:
        return Malformed(n, "no content")
    out = [r for r in out if r["kind"] == "tool_call" or r["content"].strip()]
    if out and out[0]["kind"] == "tool_call" and not text.strip():
        out[0]["dedup"] = key  # a message that is only calls: its first call has the line's key
    return out


def parse_jsonl(f, ctx):
    """One message a line: ``{"role", "content"}`` (tool_calls, tool_call_id, name), what
    ``ctxd chat export`` writes (kind, tool, call_id, subtype, data, session, time, importance),
    or a whole conversation a line: ``{"messages": [...]}`` (fine-tuning files)."""
    for n, raw in _lines(f, ctx):
        if not raw.strip():
            continue
        obj = _parse_json(n, raw)
        if isinstance(obj, Malformed):
            yield obj
            continue
        session = obj.get("session") if isinstance(obj.get("session"), str) and obj.get("session") else \
            ctx.default_session
        imp = obj.get("importance")
        imp = float(imp) if isinstance(imp, (int, float)) and not isinstance(imp, bool) and 0 <= imp <= 1 else None
        key = f"jsonl:{session}:{n}:{_sha(raw)[:16]}"
        if "role" not in obj and "kind" not in obj and isinstance(obj.get("messages"), list):
            if not isinstance(obj.get("session"), str) or not obj.get("session"):
                session = f"{ctx.default_session}:{n}"  # each line is a conversation of its own
            ts = _ts(obj.get("time")) or _ts(obj.get("timestamp"))
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


# -- Claude Code transcripts ------------------------------------------------------

def _claude_prompt(content):
    """The text of a plain user prompt, or None when the line carries tool results."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return None
        return _text_parts(content, types=("text",))
    return None


_CLAUDE_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_CLAUDE_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)


def _claude_slash(text):
    """(what the user typed, name, args) of the line Claude Code writes for a slash command
    (``<command-message>``/``<command-name>``/``<command-args>``), or None: ``/name args``, the
    text its UserPromptSubmit hook sends, so the hook's record and the import share one key."""
    m = _CLAUDE_COMMAND.search(text) if "<command-name>" in text else None
    if not m or not text.lstrip().startswith(("<command-name>", "<command-message>", "<command-args>")):
        return None
    name = m.group(1).strip()
    if not name:
        return None
    name = name if name.startswith("/") else "/" + name
    a = _CLAUDE_ARGS.search(text)
    args = a.group(1).strip() if a else ""
    return f"{name} {args}".strip(), name, args


def _claude_user_line(text, sid, ts, counts):
    """The record of a user line's text: its key counts the occurrences of what the user typed."""
    slash = _claude_slash(text)
    typed = slash[0] if slash else text
    key = (sid, _sha(typed.strip()))
    counts[key] = counts.get(key, 0) + 1
    dedup = claude_prompt_dedup(sid, typed, counts[key])
    if slash:
        return _rec("meta", typed, sid, "claude", dedup, ts, subtype="slash_command",
                    data={"command": slash[1], "args": slash[2]})
    return _user(text, sid, "claude", dedup, ts)


def _claude_result_text(block):
    c = block.get("content")
    if isinstance(c, str):
        text = c
    elif isinstance(c, list):
        parts = []
        for b in c:
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str):
                parts.append(b["text"])
            elif isinstance(b, dict) and b.get("type") == "image":
                parts.append("[image]")
            elif isinstance(b, str):
                parts.append(b)
        text = "\n".join(parts)
    elif c is None:
        text = ""
    else:
        text = _dumps(c)
    return text


_CLAUDE_TOOL_USE = re.compile(rb'"type"\s*:\s*"tool_use"\s*,\s*"id"\s*:\s*"([^"\\]+)"\s*,\s*"name"\s*:\s*"([^"\\]+)"')
_CLAUDE_TIME = re.compile(rb'"timestamp"\s*:\s*"([^"\\]+)"')
_CLAUDE_UUID = re.compile(rb'"uuid"\s*:\s*"([^"\\]+)"')


def _claude_prompt_counts(f, ctx):
    """What an incremental import needs to know of the lines before ctx.start: how often each
    prompt occurred, the names of the tools called (tool_use id -> name) and when each line
    happened (uuid -> time, for session titles).

    Only lines that can be prompts are parsed: a user line (``"type":"user"``)
    without a tool result (an unescaped ``"tool_use_id"`` key only occurs in one);
    tool names and times are read off the raw line.
    """
    user = re.compile(rb'"type"\s*:\s*"user"')
    sidechains = _claude_sidechain_file(ctx.path)
    counts, names, times = {}, {}, {}
    scan = Ctx(ctx.path)
    for n, raw in _lines(f, scan, start=0, line_no=1, end=ctx.start):
        if b'"tool_use"' in raw:
            for m in _CLAUDE_TOOL_USE.finditer(raw):
                names[m.group(1).decode("utf-8", "replace")] = m.group(2).decode("utf-8", "replace")
        if b'"uuid"' in raw:
            u, t = _CLAUDE_UUID.search(raw), _CLAUDE_TIME.search(raw)
            if u and t:
                times[u.group(1).decode("utf-8", "replace")] = _ts(t.group(1).decode("utf-8", "replace"))
        if b'"tool_use_id"' in raw or not user.search(raw):
            continue
        obj = _parse_json(n, raw)
        if isinstance(obj, Malformed) or obj.get("type") != "user" or obj.get("isMeta") or \
                (obj.get("isSidechain") and not sidechains):
            continue
        if obj.get("isCompactSummary"):
            continue
        msg = obj.get("message")
        text = _claude_prompt(msg.get("content")) if isinstance(msg, dict) else None
        if text and text.strip():
            sid = obj.get("sessionId") if isinstance(obj.get("sessionId"), str) and obj.get("sessionId") else \
                ctx.default_session
            slash = _claude_slash(text)
            key = (sid, _sha((slash[0] if slash else text).strip()))
            counts[key] = counts.get(key, 0) + 1
    return counts, names, times


def parse_claude(f, ctx):
    """User and assistant lines of a transcript, and compaction summaries, as typed records.

    Content blocks map one to one: ``text`` -> reply (or, on a user line, a
    prompt or the meta text Claude Code injected: interrupts, slash-command
    wrappers, local-command output...), ``tool_use`` -> tool_call (id, name,
    input), ``tool_result`` -> tool_result linked by ``tool_use_id``;
    ``{"type": "summary"}`` lines are session titles, ``isCompactSummary``
    lines compaction summaries. Lines of sub-agents (``isSidechain``) are left
    out: the Task tool's result in the main conversation carries what they
    found. A sub-agent's own transcript (``agent-*.jsonl`` or ``subagents/*.jsonl``,
    every line a sidechain) is imported with provenance ``subagent``: the prompt the main
    agent wrote for it is meta (``subagent_prompt``), never the user's.
    A prompt's data keeps the session's working directory and git branch then (``cwd``,
    ``gitBranch``).
    """
    # how often each prompt occurred; tool_use id -> tool name, for the results; uuid -> time
    counts, names, times = _claude_prompt_counts(f, ctx) if ctx.start > 0 else ({}, {}, {})
    sidechains = _claude_sidechain_file(ctx.path)
    for rec in _parse_claude(f, ctx, counts, names, times, sidechains):
        if sidechains and isinstance(rec, dict):
            _as_subagent(rec)
        yield rec


def _claude_sidechain_file(path):
    """A sub-agent's own transcript: agent-*.jsonl (in subagents/ since Claude Code 2.1)."""
    base = os.path.basename(path)
    return base.startswith("agent-") or os.path.basename(os.path.dirname(path)) == "subagents"


def _as_subagent(rec):
    """Mark a record as a sub-agent's: its "prompts" were written by the main agent."""
    rec["provenance"] = "subagent"
    if rec.get("kind") == "prompt":
        rec.update(kind="meta", role=_items.ROLE_OF["meta"], subtype="subagent_prompt")
    return rec


def with_env(rec, cwd, branch):
    """*rec* with the session's working directory and git branch in its data, when it is a prompt:
    where the session stood when the user typed it (the handoff's environment)."""
    if isinstance(rec, dict) and rec.get("kind") == "prompt" and isinstance(cwd, str) and cwd:
        rec["data"] = dict(rec.get("data") or {}, cwd=cwd, git_branch=branch if isinstance(branch, str) and branch
                           else None)
    return rec


def _parse_claude(f, ctx, counts, names, times, sidechains):
    for n, obj in _json_lines(f, ctx):
        if isinstance(obj, Malformed):
            yield obj
            continue
        kind = obj.get("type")
        sid = obj.get("sessionId") if isinstance(obj.get("sessionId"), str) and obj.get("sessionId") else \
            ctx.default_session
        ts = _ts(obj.get("timestamp"))
        if isinstance(obj.get("uuid"), str) and ts is not None:
            times[obj["uuid"]] = ts
        if kind == "summary":
            text = obj.get("summary")
            if not isinstance(text, str):
                yield Malformed(n, "a summary without text")
            elif text.strip():
                leaf = obj.get("leafUuid") if isinstance(obj.get("leafUuid"), str) else None
                # a title line has no time of its own: it names the session as of its leaf message
                yield _rec("summary", text, sid, "claude", f"claude:{sid}:summary:{leaf or _sha(text)[:16]}",
                           ts if ts is not None else times.get(leaf), subtype="title")
            continue
        if kind not in ("user", "assistant"):
            continue  # system, file-history-snapshot, progress, ...: not conversation
        if obj.get("isMeta") or (obj.get("isSidechain") and not sidechains):
            continue
        msg = obj.get("message")
        if not isinstance(msg, dict):
            yield Malformed(n, f"a {kind} line without a message")
            continue
        content = msg.get("content")
        if not isinstance(content, (str, list)):
            yield Malformed(n, f"message content is {type(content).__name__}")
            continue
        uuid = obj.get("uuid") if isinstance(obj.get("uuid"), str) and obj.get("uuid") else f"line{n}"
        base = f"claude:{sid}:{uuid}"
        if kind == "user":
            if obj.get("isCompactSummary"):
                text = _claude_prompt(content) or ""
                if text.strip():
                    yield _rec("summary", text, sid, "claude", f"{base}:0", ts, subtype="compaction")
                continue
            text = _claude_prompt(content)
            if text is not None:
                if text.strip():
                    yield with_env(_claude_user_line(text, sid, ts, counts), obj.get("cwd"), obj.get("gitBranch"))
                continue
            for i, b in enumerate(content):
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "tool_result":
                    cid = b.get("tool_use_id") if isinstance(b.get("tool_use_id"), str) else None
                    text = _claude_result_text(b)
                    if text.strip() or b.get("is_error") is True:
                        yield _result(text, sid, "claude", f"{base}:{i}", ts, tool=names.get(cid), call_id=cid,
                                      is_error=b.get("is_error") is True)
                elif b.get("type") == "text" and isinstance(b.get("text"), str) and b["text"].strip():
                    yield _user(b["text"], sid, "claude", f"{base}:{i}", ts)
            continue
        # assistant
        if isinstance(content, str):
            if content.strip():
                yield _rec("reply", content, sid, "claude", f"{base}:0", ts)
            continue
        for i, b in enumerate(content):
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t == "text" and isinstance(b.get("text"), str) and b["text"].strip():
                yield _rec("reply", b["text"], sid, "claude", f"{base}:{i}", ts)
            elif t == "tool_use":
                cid = b.get("id") if isinstance(b.get("id"), str) and b.get("id") else None
                name = b.get("name") if isinstance(b.get("name"), str) else None
                if cid:
                    names[cid] = name
                yield _call(name, b.get("input", {}), sid, "claude", f"{base}:{i}", ts, call_id=cid)
            # thinking, redacted_thinking, images: not kept


# -- Codex rollouts ---------------------------------------------------------------

_CODEX_ITEMS = ("message", "function_call", "function_call_output", "custom_tool_call",
                "custom_tool_call_output", "local_shell_call", "reasoning", "web_search_call")
_CODEX_EXIT = re.compile(r"(?:Process exited with code|Exit code:?) (-?\d+)")
_CODEX_TURN_END = ("task_complete", "turn_aborted")
_CODEX_CALL_ID = re.compile(rb'"call_id"\s*:\s*"([^"\\]+)"')
_CODEX_CALL_NAME = re.compile(rb'"type"\s*:\s*"(?:function_call|custom_tool_call)"\s*,.*?"name"\s*:\s*"([^"\\]+)"')
_CODEX_IMAGE_TAG = re.compile(r"\A\s*</?image\b[^>]*>\s*\Z")


def _codex_output(out):
    """(text, exit code or None, success or None) of a function_call_output's ``output``: a
    string (often JSON ``{"output", "metadata": {"exit_code"}}``), or structured."""
    text, exit_code, success = None, None, None
    if isinstance(out, str):
        s = out.lstrip()
        o = None
        if s.startswith("{"):
            try:
                o = json.loads(out)
            except ValueError:
                o = None
        if isinstance(o, dict) and isinstance(o.get("output"), str):
            text = o["output"]
            meta = o.get("metadata")
            if isinstance(meta, dict) and isinstance(meta.get("exit_code"), int) and \
                    not isinstance(meta.get("exit_code"), bool):
                exit_code = meta["exit_code"]
        else:
            text = out
    elif isinstance(out, dict):
        for k in ("output", "content"):
            if isinstance(out.get(k), str):
                text = out[k]
                break
            if isinstance(out.get(k), list):
                text = _text_parts(out[k])
                break
        else:
            text = _dumps(out)
        if isinstance(out.get("success"), bool):
            success = out["success"]
    elif isinstance(out, list):
        text = _text_parts(out)
    else:
        text = "" if out is None else _dumps(out)
    if exit_code is None:
        m = _CODEX_EXIT.search(text[:400])  # unified exec: "Process exited with code 1" in the header
        if m:
            exit_code = int(m.group(1))
    return text, exit_code, success


def _codex_session_from_name(path):
    m = re.search(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})", os.path.basename(path))
    return m.group(1) if m else None


def _codex_item(obj, n):
    """(response item or None, what else the line is) for a rollout line."""
    kind = obj.get("type")
    payload = obj.get("payload")
    if kind == "response_item":
        return (payload, None) if isinstance(payload, dict) else (None, Malformed(n, "response_item without a payload"))
    if "payload" not in obj and kind in _CODEX_ITEMS:
        return obj, None  # rollouts before session_meta: bare response items
    return None, None


def _codex_message_text(item):
    """A message's text; Codex's ``<image>``/``</image>`` parts around an attached image are left out."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return _text_parts([p for p in content if not (isinstance(p, dict) and isinstance(p.get("text"), str)
                                                       and _CODEX_IMAGE_TAG.match(p["text"]))])
    return None


class _CodexTurns:
    """Where a rollout is: the turn (its id from ``event_msg task_started`` or
    ``turn_context``), how many prompts that turn has had, and whether the file
    marks turns with task_started/task_complete events (Codex 0.4x and later).
    Such rollouts follow each message the user typed with an ``event_msg
    user_message``; a user item without one is context Codex sent (AGENTS.md,
    the environment, re-sent on every resume), even where its text is redacted.
    """

    def __init__(self):
        self.turn, self.prompts = None, 0
        self.tasks = False  # the rollout writes task_started events
        self.in_task = False
        self.names = {}  # call_id -> tool name

    def event(self, obj):
        """Apply a turn marker; the new turn id when the turn changed, else None."""
        kind, payload = obj.get("type"), obj.get("payload")
        if not isinstance(payload, dict):
            return None
        new = None
        if kind == "turn_context":
            new = payload.get("turn_id")
        elif kind == "event_msg" and payload.get("type") == "task_started":
            self.tasks = self.in_task = True
            new = payload.get("turn_id")
        elif kind == "event_msg" and payload.get("type") in _CODEX_TURN_END:
            self.in_task = False
            return None
        if isinstance(new, str) and new and new != self.turn:
            self.turn, self.prompts = new, 0
            return new
        return None

    def changes(self, obj):
        """Whether the turn marker *obj* ends the current turn (a task ends, or a new turn id)."""
        kind, payload = obj.get("type"), obj.get("payload")
        if not isinstance(payload, dict):
            return False
        if kind == "event_msg" and payload.get("type") in _CODEX_TURN_END:
            return True
        new = payload.get("turn_id")
        return isinstance(new, str) and bool(new) and new != self.turn

    def user_kind(self, text):
        """(kind, subtype) of a user item's text, as far as the text tells."""
        return _items.classify_user_text(text, "codex")


def _is_user_event(obj):
    """Whether *obj* is the event Codex writes after a message the user typed: ``event_msg
    user_message`` (up to 0.1xx), or ``event_msg item_completed`` of a ``UserMessage`` item
    (0.171 exec writes only that)."""
    payload = obj.get("payload") if isinstance(obj, dict) and obj.get("type") == "event_msg" else None
    if not isinstance(payload, dict):
        return False
    if payload.get("type") == "user_message":
        return True
    item = payload.get("item")
    return payload.get("type") == "item_completed" and isinstance(item, dict) and item.get("type") == "UserMessage"


def _is_turn_marker(obj):
    kind, payload = obj.get("type"), obj.get("payload")
    if kind == "turn_context":
        return True
    return kind == "event_msg" and isinstance(payload, dict) and \
        payload.get("type") in ("task_started",) + _CODEX_TURN_END


def _codex_turn_at(f, ctx):
    """The _CodexTurns at ctx.start: an incremental import resumes mid-file."""
    user = re.compile(rb'"role"\s*:\s*"user"')
    markers = (b'"turn_context"', b'"task_started"', b'"task_complete"', b'"turn_aborted"')
    state = _CodexTurns()
    candidate, last_event = None, None  # the line of an unconfirmed prompt; of the last user_message event
    for n, raw in _lines(f, Ctx(ctx.path), start=0, line_no=1, end=ctx.start):
        if b'"call_id"' in raw and b'_output"' not in raw:
            cid = _CODEX_CALL_ID.search(raw)
            name = _CODEX_CALL_NAME.search(raw)
            if cid and (name or b'"local_shell_call"' in raw):
                state.names[cid.group(1).decode("utf-8", "replace")] = \
                    name.group(1).decode("utf-8", "replace") if name else "local_shell"
        if b'"user_message"' in raw or b'"UserMessage"' in raw:
            obj = _parse_json(n, raw)
            if not isinstance(obj, Malformed) and _is_user_event(obj):
                if candidate == n - 1 and state.turn is not None:
                    state.prompts += 1
                last_event = n
        elif any(m in raw for m in markers):
            obj = _parse_json(n, raw)
            if not isinstance(obj, Malformed) and _is_turn_marker(obj):
                state.event(obj)
        elif user.search(raw):
            obj = _parse_json(n, raw)
            if not isinstance(obj, Malformed):
                item, _ = _codex_item(obj, n)
                if item is not None and item.get("type") == "message" and item.get("role") == "user":
                    text = _codex_message_text(item)
                    if text and text.strip() and state.user_kind(text)[0] == "prompt":
                        if state.tasks and last_event != n - 1:
                            candidate = n  # a prompt if its user_message event follows
                        elif state.turn is not None:
                            state.prompts += 1
    return state


def parse_codex(f, ctx):
    """Response items of a rollout as typed records; event_msg lines repeat them and are skipped.

    ``message`` items are prompts, replies or (user items Codex wrote itself:
    environment, AGENTS.md, turn_aborted, shell-command and sub-agent markers)
    meta; ``function_call``/``custom_tool_call``/``local_shell_call``/
    ``web_search_call`` are tool calls and the ``*_output`` items tool results
    (linked by ``call_id``, with the exit code where the output carries one);
    ``compacted`` is a summary.

    Keys are ``codex:<session>:<line>``, except, in turns Codex gave an id
    (``task_started.turn_id`` or ``turn_context.turn_id``), the user's *i*-th
    prompt of the turn (``codex:<session>:<turn>:user:<i>``) and the turn's last
    record when it is an assistant message (``codex:<session>:<turn>:assistant``):
    the keys the Codex hooks and ``notify`` use for the same messages.

    A rollout whose ``session_meta.source`` names a sub-agent (``{"subagent": ...}``) is a
    sub-agent's: its records get provenance ``subagent`` and its user items are no prompts.
    Prompts' data keep ``session_meta``'s ``cwd`` and ``git.branch``.
    """
    info = {"subagent": False, "cwd": None, "branch": None}
    for rec in _parse_codex(f, ctx, info):
        if info["subagent"] and isinstance(rec, dict):
            _as_subagent(rec)
        yield with_env(rec, info["cwd"], info["branch"])


def _codex_is_subagent(payload):
    src = payload.get("source") if isinstance(payload, dict) else None
    return isinstance(src, dict) and "subagent" in src


def _codex_env(payload, info):
    info["subagent"] = _codex_is_subagent(payload)
    git = payload.get("git") if isinstance(payload.get("git"), dict) else {}
    info["cwd"], info["branch"] = payload.get("cwd"), git.get("branch")


def _parse_codex(f, ctx, info):
    sid = None
    state = _CodexTurns()
    if ctx.start > 0:
        first = _first_json(f)
        if first and first.get("type") == "session_meta" and isinstance(first.get("payload"), dict):
            sid = first["payload"].get("id")
            _codex_env(first["payload"], info)
        elif first and isinstance(first.get("id"), str) and "payload" not in first:
            sid = first["id"]
        state = _codex_turn_at(f, ctx)
    if not isinstance(sid, str) or not sid:
        sid = _codex_session_from_name(ctx.path) or ctx.default_session
    held = []  # an assistant message that may end its turn (its key waits), and meta after it
    early = []  # user items before any turn marker: Codex's context if a task_started follows
    pending = []  # a user item waiting for the line after it: a prompt if that is its user_message event
    names = state.names  # call_id -> tool name
    line_at = {}  # id(record) -> byte offset of its line, for what an incremental import must read again
    last_user_event = None  # the line number of the last event_msg user_message

    def settle(final):
        out = held[:]
        held.clear()
        if out and final and state.turn is not None:
            out[0]["dedup"] = f"codex:{sid}:{state.turn}:assistant"
        return out

    def decide(context):
        out = early[:]
        early.clear()
        if context:
            for r in out:
                if r["kind"] == "prompt":
                    r.update(kind="meta", role="system", subtype="environment")
        return out

    def emit(rec, neutral):
        """What to yield for *rec* now (held answers, undecided early items first)."""
        out = []
        if early and not neutral:
            out += decide(False)
        if neutral:
            if held or early:
                (held or early).append(rec)
            else:
                out.append(rec)
            return out
        out += settle(False)
        if rec["kind"] == "reply":
            held.append(rec)
        else:
            out.append(rec)
        return out

    def prompt(rec, n):
        """*rec* is what the user typed: the turn's next prompt key."""
        if state.turn is not None:
            rec["dedup"] = f"codex:{sid}:{state.turn}:user:{state.prompts}"
            state.prompts += 1
        return emit(rec, False)

    def resolve(is_user_event):
        """The pending user item, now that the next line is known."""
        if not pending:
            return []
        rec = pending.pop()
        if is_user_event:
            return prompt(rec, None)
        rec.update(kind="meta", role="system", subtype="environment")  # Codex sent it, not the user
        return emit(rec, True)

    start = ctx.pos
    for n, obj in _json_lines(f, ctx):
        here, start = start, ctx.pos  # where line n begins; where the next one does
        payload = obj.get("payload") if isinstance(obj, dict) else None
        user_event = _is_user_event(obj)
        if pending:
            yield from resolve(user_event)
        if user_event:
            last_user_event = n
        if isinstance(obj, Malformed):
            yield obj
            continue
        kind = obj.get("type")
        if kind == "session_meta":
            if not isinstance(payload, dict):
                yield Malformed(n, "session_meta without a payload")
            else:
                if isinstance(payload.get("id"), str) and payload["id"]:
                    sid = payload["id"]
                _codex_env(payload, info)
            continue
        if _is_turn_marker(obj):
            yield from decide(kind == "event_msg" and payload.get("type") == "task_started")
            if state.changes(obj):
                yield from settle(True)  # the answer held was the last record of its turn
            state.event(obj)
            continue
        ts = _ts(obj.get("timestamp"))
        if kind == "compacted":
            text = payload.get("message") if isinstance(payload, dict) else None
            if isinstance(text, str) and text.strip():
                yield from emit(_rec("summary", text, sid, "codex", f"codex:{sid}:{n}", ts, subtype="compaction"), True)
            continue
        item, other = _codex_item(obj, n)
        if item is None:
            if other is not None:
                yield other
            elif "payload" not in obj and kind is None and n == 1 and isinstance(obj.get("id"), str):
                sid = obj["id"]  # the first line of rollouts before session_meta: {id, timestamp, instructions}
            elif kind is None:
                yield Malformed(n, "no type")
            continue  # event_msg (repeats response items), ...
        key = f"codex:{sid}:{n}"
        t = item.get("type")
        if t == "message":
            role = item.get("role")
            text = _codex_message_text(item)
            if text is None:
                yield Malformed(n, "a message without content")
                continue
            if role == "user" and text.strip():
                ukind, subtype = state.user_kind(text)
                if ukind == "prompt":
                    rec = _rec("prompt", text, sid, "codex", key, ts)
                    line_at[id(rec)] = here
                    if state.tasks and last_user_event != n - 1:
                        pending.append(rec)  # Codex follows what the user typed with a user_message event
                    elif state.turn is None and not state.tasks:
                        early.append(rec)  # decided by what follows: a task_started, or anything else
                    else:
                        yield from prompt(rec, n)
                elif subtype not in ("environment", "instructions"):
                    yield from emit(_rec(ukind, text, sid, "codex", key, ts, subtype=subtype), True)
                # <environment_context>, AGENTS.md...: Codex's own context, sent every session
            elif role == "assistant" and text.strip():
                rec = _rec("reply", text, sid, "codex", key, ts)
                line_at[id(rec)] = here
                yield from emit(rec, False)
            # developer/system messages: Codex's own instructions
        elif t in ("function_call", "custom_tool_call"):
            args = item.get("arguments") if t == "function_call" else item.get("input")
            name = item.get("name") if isinstance(item.get("name"), str) else None
            cid = item.get("call_id") if isinstance(item.get("call_id"), str) else None
            if cid:
                names[cid] = name
            yield from emit(_call(name, args if args is not None else {}, sid, "codex", key, ts, call_id=cid), False)
        elif t == "local_shell_call":
            cid = item.get("call_id") or item.get("id")
            cid = cid if isinstance(cid, str) else None
            if cid:
                names[cid] = "local_shell"
            action = item.get("action")
            yield from emit(_call("local_shell", action if action is not None else {}, sid, "codex", key, ts,
                                  call_id=cid), False)
        elif t in ("function_call_output", "custom_tool_call_output"):
            text, exit_code, success = _codex_output(item.get("output"))
            if text.strip():
                cid = item.get("call_id") if isinstance(item.get("call_id"), str) else None
                failed = (exit_code is not None and exit_code != 0) or success is False
                yield from emit(_result(text, sid, "codex", key, ts, tool=names.get(cid), call_id=cid,
                                        is_error=failed, exit_code=exit_code), False)
        elif t == "web_search_call":
            action = item.get("action") if isinstance(item.get("action"), dict) else {}
            cid = item.get("id") if isinstance(item.get("id"), str) else None
            yield from emit(_call("web_search", action, sid, "codex", key, ts, call_id=cid), False)
        # reasoning (encrypted), ...: not kept
    cut = ([held[0]] if held and state.in_task else []) + pending[:1]
    if ctx.complete_only and state.tasks and cut:
        # A live rollout, mid-turn: whether the user item gets its user_message event, whether the
        # answer held is the last of its turn, lines not written yet tell. The next import reads
        # again from the first of them (what it meets twice has the same keys).
        if not (held and state.in_task):
            yield from settle(True)
        ctx.pos = min(line_at[id(r)] for r in cut)
        return
    if pending:
        rec = pending.pop()
        yield from (prompt(rec, None) if state.in_task else emit(
            dict(rec, kind="meta", role="system", subtype="environment"), True))
    yield from decide(False)
    yield from settle(True)


# -- Gemini CLI sessions ----------------------------------------------------------

def _gemini_text(content):
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        return _text_parts(content)
    raise TypeError(type(content).__name__)


def _gemini_result(tc):
    r = tc.get("result")
    parts = r if isinstance(r, list) else ([] if r is None else [r])
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, dict):
            if isinstance(p.get("text"), str):
                out.append(p["text"])
            fr = p.get("functionResponse")
            if isinstance(fr, dict):
                resp = fr.get("response")
                if isinstance(resp, dict):
                    val = next((resp[k] for k in ("output", "error", "content") if k in resp), resp)
                    out.append(val if isinstance(val, str) else _dumps(val))
                elif resp is not None:
                    out.append(resp if isinstance(resp, str) else _dumps(resp))
    if not out and isinstance(tc.get("resultDisplay"), str):
        out.append(tc["resultDisplay"])
    return "\n".join(out)


def _gemini_records(obj, sid, n):
    rid = obj["id"]
    kind = obj.get("type")
    ts = _ts(obj.get("timestamp"))
    base = f"gemini:{sid}:{rid}"
    try:
        text = _gemini_text(obj.get("content"))
    except TypeError as e:
        yield Malformed(n, f"content is a {e}")
        return
    if kind == "user":
        if text.strip():
            yield _user(text, sid, "gemini", base, ts)  # a <hook_context> block in front comes off
    elif kind == "gemini":
        if text.strip():
            yield _rec("reply", text, sid, "gemini", base, ts)
        calls = obj.get("toolCalls")
        for i, tc in enumerate(calls if isinstance(calls, list) else ()):
            if not isinstance(tc, dict):
                continue
            cid = tc.get("id") if isinstance(tc.get("id"), str) and tc.get("id") else str(i)
            name = tc.get("name") if isinstance(tc.get("name"), str) else None
            tts = _ts(tc.get("timestamp")) or ts
            yield _call(name, tc.get("args", {}), sid, "gemini", f"{base}:call:{cid}", tts, call_id=cid)
            status = tc.get("status")
            if tc.get("result") is not None or status in ("success", "error", "cancelled"):
                result = _gemini_result(tc)
                failed = status in ("error", "cancelled")
                if result.strip() or failed:
                    yield _result(result if result.strip() else str(status), sid, "gemini", f"{base}:result:{cid}",
                                  tts, tool=name, call_id=cid, is_error=failed)
    elif kind == "error":
        if text.strip():
            yield _rec("meta", text, sid, "gemini", base, ts, subtype="error")
    elif kind is None:
        yield Malformed(n, "a record without a type")
    # info, warning and unknown types: not conversation


def _gemini_set_messages(obj):
    """The records of a ``{"$set": {"messages": [...]}}`` line (written after /compress, on resume
    and rollback), or None."""
    st = obj.get("$set")
    msgs = st.get("messages") if isinstance(st, dict) else None
    return msgs if isinstance(msgs, list) else None


def _gemini_checkpoint(doc, ctx):
    """A ``/chat save`` checkpoint: ``{"history": [{"role", "parts"}]}`` (or the bare list), no ids."""
    tag = ctx.default_session
    if tag.startswith("checkpoint-"):
        tag = tag[len("checkpoint-"):]
    hist = doc.get("history") if isinstance(doc, dict) else doc
    sid = f"checkpoint-{tag}"
    names = {}
    for i, c in enumerate(hist):
        if not isinstance(c, dict) or not isinstance(c.get("parts"), list):
            yield Malformed(1, f"history entry {i} has no parts")
            continue
        role = c.get("role")
        texts = []
        for j, p in enumerate(c["parts"]):
            if not isinstance(p, dict):
                continue
            key = f"gemini:{sid}:{i}:{j}"
            if isinstance(p.get("text"), str) and not p.get("thought"):
                texts.append(p["text"])
            fc, fr = p.get("functionCall"), p.get("functionResponse")
            if isinstance(fc, dict):
                cid = fc.get("id") if isinstance(fc.get("id"), str) else None
                name = fc.get("name") if isinstance(fc.get("name"), str) else None
                if cid:
                    names[cid] = name
                yield _call(name, fc.get("args", {}), sid, "gemini", key, None, call_id=cid)
            elif isinstance(fr, dict):
                cid = fr.get("id") if isinstance(fr.get("id"), str) else None
                resp = fr.get("response")
                failed = isinstance(resp, dict) and "error" in resp and "output" not in resp
                text = _gemini_result({"result": [p]})
                yield _result(text, sid, "gemini", key, None, tool=fr.get("name") or names.get(cid), call_id=cid,
                              is_error=failed)
        text = "\n".join(texts)
        if text.strip():
            key = f"gemini:{sid}:{i}"
            yield _user(text, sid, "gemini", key) if role == "user" else _rec("reply", text, sid, "gemini", key)


def _gemini_whole(f, ctx):
    """A Gemini CLI session written as one JSON document (the legacy session file, pretty or on one
    line; a /chat save checkpoint), or None when *f* is not one."""
    f.seek(0)
    head = f.read(_SNIFF_LINE_BYTES).lstrip(b"\xef\xbb\xbf").lstrip()
    if not head[:1] in (b"{", b"["):
        return None
    first = head.split(b"\n", 1)[0]
    try:
        obj = json.loads(first)
        if isinstance(obj, dict) and not isinstance(obj.get("messages"), list) and "history" not in obj:
            return None  # a JSONL session: its first line is the metadata
    except ValueError:
        pass
    if os.fstat(f.fileno()).st_size > _WHOLE_JSON_BYTES:
        return None
    f.seek(0)
    try:
        doc = json.loads(f.read().decode("utf-8"))
    except ValueError:
        return None
    if isinstance(doc, dict) and (isinstance(doc.get("messages"), list) or isinstance(doc.get("history"), list)):
        return doc
    if isinstance(doc, list) and doc and all(isinstance(c, dict) and "parts" in c for c in doc):
        return doc
    return None


def _parse_gemini_whole(doc, ctx):
    if isinstance(doc, list) or "messages" not in doc:
        yield from _gemini_checkpoint(doc, ctx)
        return
    sid = doc.get("sessionId") if isinstance(doc.get("sessionId"), str) and doc.get("sessionId") else \
        ctx.default_session
    last = {}
    for i, m in enumerate(doc["messages"]):
        if isinstance(m, dict) and isinstance(m.get("id"), str):
            last[m["id"]] = i
    for i, m in enumerate(doc["messages"]):
        if not isinstance(m, dict) or not isinstance(m.get("id"), str):
            yield Malformed(1, f"message {i} has no id")
        elif last[m["id"]] == i:
            yield from _gemini_records(m, sid, 1)


def parse_gemini(f, ctx):
    """Two passes: the first (ids only) applies upserts and rewinds, the second yields records.

    A record id written several times is imported once, from its last version
    (a ``{"$set": {"messages": [...]}}`` line, written after /compress, writes
    each record in it once more); ``{"$rewindTo": id}`` drops that record and
    all after it (all records when the id is unknown), and what an earlier
    import stored of them is forgotten. In an incremental import a rewind needs
    the whole file: ``_Rescan``. A session written as one JSON document (the
    legacy ``session-*.json``, a ``/chat save`` checkpoint) is read whole.
    """
    doc = _gemini_whole(f, ctx)
    if doc is not None:
        if ctx.start > 0:
            raise _Rescan()
        yield from _parse_gemini_whole(doc, ctx)
        size = f.seek(0, os.SEEK_END)
        ctx.pos = size
        return
    sid = None
    if ctx.start > 0:
        first = _first_json(f)
        if first and isinstance(first.get("sessionId"), str):
            sid = first["sessionId"]
    last = {}  # record id -> (line number, index in a $set list or None) of its last version, in order
    rewound = set()
    for n, raw in _lines(f, ctx):
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        if isinstance(obj.get("$rewindTo"), str):
            if ctx.start > 0:
                raise _Rescan()
            ids = list(last)
            target = obj["$rewindTo"]
            cut = ids.index(target) if target in last else 0
            for rid in ids[cut:]:
                del last[rid]
                rewound.add(rid)
        elif _gemini_set_messages(obj) is not None:
            for i, m in enumerate(_gemini_set_messages(obj)):
                if isinstance(m, dict) and isinstance(m.get("id"), str):
                    last[m["id"]] = (n, i)
        elif isinstance(obj.get("id"), str) and "$set" not in obj:
            last[obj["id"]] = (n, None)
        elif sid is None and isinstance(obj.get("sessionId"), str) and obj.get("sessionId"):
            sid = obj["sessionId"]
    end = ctx.pos
    sid = sid or ctx.default_session
    rewound -= set(last)
    if rewound:
        yield Forget(tuple(f"gemini:{sid}:{rid}" for rid in sorted(rewound)))
    for n, obj in _json_lines(f, ctx, start=ctx.start, line_no=ctx.first_line_no, end=end):
        if isinstance(obj, Malformed):
            yield obj
            continue
        if "$rewindTo" in obj:
            continue
        msgs = _gemini_set_messages(obj)
        if msgs is not None:
            for i, m in enumerate(msgs):
                if isinstance(m, dict) and last.get(m.get("id")) == (n, i):
                    yield from _gemini_records(m, sid, n)
            continue
        if "$set" in obj:
            continue
        rid = obj.get("id")
        if not isinstance(rid, str):
            if isinstance(obj.get("sessionId"), str):
                continue  # the metadata line
            yield Malformed(n, "neither a record (id) nor metadata (sessionId)")
            continue
        if last.get(rid) != (n, None):
            continue  # an older version, or rewound
        yield from _gemini_records(obj, sid, n)


# -- aider chat history -----------------------------------------------------------

_AIDER_START = "# aider chat started at "


def parse_aider(f, ctx):
    """``#### `` lines are the user's (prompts), ``> `` lines aider's output (tool results), the rest
    the assistant's replies."""
    import time as _time

    session, session_ts = ctx.default_session, None
    block, kind, block_line = [], None, 0

    def flush():
        if kind is None:
            return None
        text = "\n".join(block).strip("\n")
        if not text.strip():
            return None
        key = f"aider:{session}:{block_line}:{_sha(text)[:16]}"
        if kind == "user":
            return _user(text, session, "aider", key, session_ts)
        if kind == "tool":
            return _result(text, session, "aider", key, session_ts)
        return _rec("reply", text, session, "aider", key, session_ts)

    for n, raw in _lines(f, ctx):
        line = raw.decode("utf-8", errors="replace")
        if line.startswith(_AIDER_START):
            r = flush()
            if r:
                yield r
            block, kind = [], None
            session = line[len(_AIDER_START):].strip() or ctx.default_session
            try:
                session_ts = _time.mktime(_time.strptime(session, "%Y-%m-%d %H:%M:%S"))
            except ValueError:
                session_ts = None
            continue
        if (line == "####" or line.startswith("#### ")) and (kind != "assistant" or line.endswith("  ")):
            # aider writes what the user typed as "#### " lines ending in two spaces (a markdown
            # line break); a "#### " line inside a reply without them is a heading of the reply
            this, text = "user", line[5:]
        elif line.startswith(">") and (len(line) == 1 or line[1] == " "):
            this, text = "tool", line[2:]
        elif not line.strip() and kind in ("user", "tool"):
            r = flush()  # a blank line ends a user or tool block
            if r:
                yield r
            block, kind = [], None
            continue
        else:
            this, text = "assistant", line
        if this != kind:
            r = flush()
            if r:
                yield r
            block, kind, block_line = [], this, n
        block.append(text)
    r = flush()
    if r:
        yield r


# -- llm logs.db --------------------------------------------------------------------

def _llm_part(row):
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
        body = val if isinstance(val, str) else _dumps(val)
    if ptype == "tool_result":
        return "tool_result", body, tool or data.get("name"), cid
    if ptype in ("attachment", "image") and not body:
        return None, "", None, None
    return "text", body, None, None


def _llm_message(h, role, parts, session, ts):
    """The records of one message: its text (kind by role) and its tool calls and results.

    The first record keeps the message's key ``llm:msg:<hash>``; the others are
    ``llm:msg:<hash>:<position>``.
    """
    texts, tools = [], []
    for pos, prow in parts:
        kind, body, name, cid = _llm_part(prow)
        if kind == "text" and body.strip():
            texts.append(body)
        elif kind == "tool_call":
            tools.append(_call(name, body, session, "llm", f"llm:msg:{h}:{pos}", ts, call_id=cid))
        elif kind == "tool_result" and body.strip():
            tools.append(_result(body, session, "llm", f"llm:msg:{h}:{pos}", ts, tool=name, call_id=cid))
    out = []
    text = "\n".join(texts)
    key = f"llm:msg:{h}"
    if text.strip():
        if role == "user":
            out.append(_user(text, session, "llm", key, ts))
        elif role == "system":
            out.append(_rec("meta", text, session, "llm", key, ts, subtype="system"))
        elif role == "tool":
            out.append(_result(text, session, "llm", key, ts))
        else:
            out.append(_rec("reply", text, session, "llm", key, ts))
    elif tools:
        tools[0]["dedup"] = key
    return out + tools


def parse_llm(path, ctx):
    """Rows of llm's logs.db: the message store (threads/messages/parts) and the legacy responses table.

    Conversations llm >= 0.32 logged live in ``threads`` (id = the conversation
    id), whose ``tip_message_hash`` ends a chain of ``messages`` (hash,
    parent_hash, role) made of ``parts`` (message_hash, position, type, text,
    payload, tool_name). The legacy ``responses`` rows are imported too, except
    those also logged as turns (same id) during the dual-write releases.
    """
    from ctxd.memory.store_llm import DatabaseError, LlmLogs

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
        done = 0
        size = ctx.size or 0

        def tick():
            nonlocal done
            done += 1
            ctx.pos = size * done // total if total else size

        turn_ids = set()
        if new:
            tcols = db.columns("turns") if "turns" in tables else set()
            when_col = next((c for c in ("datetime_utc", "started_at", "created_at", "timestamp") if c in tcols), None)
            if "id" in tcols:
                turn_ids = db.turn_ids()
            pcols = db.columns("parts")
            order = "position" if "position" in pcols else "rowid"
            cols = [c if c in pcols else None for c in ("type", "text", "payload", "tool_name")]
            hcols = db.columns("threads")
            emitted = set()  # forks share their first messages: each is imported with the first thread
            for tid, tip, started in db.threads("datetime_utc" if "datetime_utc" in hcols else None):
                tick()
                session = str(tid)
                when = {}
                if when_col and {"thread_id", "tip_message_hash"} <= tcols:
                    pm = "parent_message_hash" if "parent_message_hash" in tcols else None
                    for parent, tipm, w in db.turn_times(tid, pm, when_col):
                        for h in (parent, tipm):
                            if h and h not in when:
                                when[h] = _ts(w)
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
                ts = next((when[h] for h, _r in chain if when.get(h) is not None), None) or _ts(started)
                for h, role in chain:
                    ts = when.get(h) or ts
                    if h in emitted:
                        continue
                    emitted.add(h)
                    role = role if role in ("user", "assistant", "system", "tool") else "user"
                    parts = [(r[0], r[1:]) for r in db.parts(h, order, cols)]
                    yield from _llm_message(h, role, parts, session, ts)
        if "responses" in tables:
            calls = db.legacy_tools("tool_calls", "arguments")
            results = db.legacy_tools("tool_results", "output")
            for rid, prompt, response, conv, when, system in db.responses(
                    ("id", "prompt", "response", "conversation_id", "datetime_utc", "system")):
                tick()
                if rid in turn_ids:
                    continue
                session = str(conv) if conv else "llm"
                ts = _ts(when)
                if isinstance(system, str) and system.strip():
                    yield _rec("meta", system, session, "llm", f"llm:{rid}:system", ts, subtype="system")
                for tcid, name, output, cid in results.get(rid, ()):  # sent with this prompt
                    if isinstance(output, str) and output.strip():
                        yield _result(output, session, "llm", f"llm:{rid}:tool_result:{tcid}", ts, tool=name,
                                      call_id=cid)
                if isinstance(prompt, str) and prompt.strip():
                    yield _user(prompt, session, "llm", f"llm:{rid}:user", ts)
                if isinstance(response, str) and response.strip():
                    yield _rec("reply", response, session, "llm", f"llm:{rid}:assistant", ts)
                for tcid, name, args, cid in calls.get(rid, ()):  # what the model asked to run
                    yield _call(name, args if args is not None else {}, session, "llm",
                                f"llm:{rid}:tool_call:{tcid}", ts, call_id=cid)
    except DatabaseError as e:
        raise ImportFailed(f"{path}: cannot read it as an llm logs.db ({e})") from None
    finally:
        db.close()


PARSERS = {"jsonl": parse_jsonl, "claude": parse_claude, "codex": parse_codex, "gemini": parse_gemini,
           "aider": parse_aider}


# -- telling the format -------------------------------------------------------------

def _sniff_line(obj, n):
    if "payload" in obj and "type" in obj:
        return "codex"
    if "sessionId" in obj and "projectHash" in obj:
        return "gemini"
    if "$rewindTo" in obj or "$set" in obj:
        return "gemini"
    kind = obj.get("type")
    if kind in ("user", "assistant") and isinstance(obj.get("message"), dict):
        return "claude"
    if kind == "summary" and "summary" in obj:
        return "claude"
    if kind == "file-history-snapshot" or ("sessionId" in obj and "uuid" in obj and "parentUuid" in obj):
        return "claude"
    if "role" in obj or ("kind" in obj and "content" in obj):
        return "jsonl"
    if isinstance(obj.get("messages"), list) and all(isinstance(m, dict) and "role" in m for m in obj["messages"]):
        return "jsonl"  # {"messages": [...]} a line, as fine-tuning files are
    if isinstance(obj.get("id"), str) and kind in ("user", "gemini", "info", "error", "warning"):
        return "gemini"
    if n == 1 and isinstance(obj.get("id"), str) and "instructions" in obj:
        return "codex"
    return None


def detect_format(path):
    """jsonl, claude, codex, gemini, aider or llm, from the name and the first lines."""
    ext = os.path.splitext(path)[1].lower()
    try:
        with open(path, "rb") as f:
            if f.read(16) == b"SQLite format 3\x00":
                return "llm"
            if ext in (".db", ".sqlite", ".sqlite3"):
                raise ImportFailed(f"{path}: not a SQLite database", ExitCode.USAGE)
            if ext in (".md", ".markdown"):
                return "aider"
            f.seek(0)
            for n in range(1, _SNIFF_LINES + 1):
                line = f.readline(_SNIFF_LINE_BYTES)
                if not line:
                    break
                if n == 1 and line.startswith(b"\xef\xbb\xbf"):
                    line = line[3:]
                if line.startswith(_AIDER_START.encode()):
                    return "aider"
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if isinstance(obj, dict):
                    fmt = _sniff_line(obj, n)
                    if fmt:
                        return fmt
            if _gemini_whole(f, None) is not None:
                return "gemini"  # a legacy session file or a checkpoint: one JSON document, maybe pretty
    except OSError as e:
        raise ImportFailed(f"{path}: cannot read it: {e.strerror or e}") from None
    raise ImportFailed(f"{path}: cannot tell which tool wrote it; name the format with --format", ExitCode.USAGE)


# -- importing ----------------------------------------------------------------------

class ImportResult:
    def __init__(self, path, fmt):
        self.path = path
        self.format = fmt
        self.added = 0
        self.present = 0
        self.forgotten = 0
        self.malformed = 0
        self.malformed_lines = []  # the first SHOW_LINES line numbers
        self.reasons = {}  # line number -> reason, for those listed

    def note_malformed(self, m):
        self.malformed += 1
        if len(self.malformed_lines) < SHOW_LINES:
            self.malformed_lines.append(m.line_no)
            self.reasons[m.line_no] = m.reason

    def malformed_message(self, name=None):
        """'FILE: 3 malformed lines skipped (lines 4, 9, 17)', or '' when there were none."""
        if not self.malformed:
            return ""
        listed = ", ".join(str(n) for n in self.malformed_lines)
        more = ", ..." if self.malformed > len(self.malformed_lines) else ""
        word = "line" if self.malformed == 1 else "lines"
        return (f"{name or self.path}: {self.malformed} malformed {word} skipped "
                f"({'line' if len(self.malformed_lines) == 1 else 'lines'} {listed}{more})")


def _run(store, items, ctx, result, session=None, progress=None, batch_size=BATCH):
    batch = []

    def flush():
        if batch:
            added = len(store.add_many(batch))
            result.added += added
            result.present += len(batch) - added
            batch.clear()
        if progress:
            progress(ctx.pos)

    for item in items:
        if isinstance(item, Malformed):
            result.note_malformed(item)
        elif isinstance(item, Forget):
            flush()
            result.forgotten += store.forget_dedup(item.keys)
        else:
            if session:
                item["session"] = session
            batch.append(item)
            if len(batch) >= batch_size:
                flush()
    flush()
    return result


def _open_bin(path):
    try:
        f = open(path, "rb")
    except OSError as e:
        raise ImportFailed(f"{path}: cannot open it: {e.strerror or e}") from None
    if not os.path.isfile(path):
        f.close()
        raise ImportFailed(f"{path}: not a file", ExitCode.USAGE)
    return f


def import_file(store, path, fmt="auto", *, session=None, progress=None, batch_size=BATCH):
    """Import the whole of *path*; return an ImportResult. ImportFailed when nothing could be read.

    *progress*, when given, is called with the byte offset reached after each batch.
    """
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt not in FORMATS:
        raise ImportFailed(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})", ExitCode.USAGE)
    result = ImportResult(path, fmt)
    if fmt == "llm":
        if not os.path.isfile(path):
            _open_bin(path).close()  # the same error as for any other file
        ctx = Ctx(path, size=os.path.getsize(path))
        return _run(store, parse_llm(path, ctx), ctx, result, session, progress, batch_size)
    with _open_bin(path) as f:
        ctx = Ctx(path, size=os.fstat(f.fileno()).st_size)
        return _run(store, PARSERS[fmt](f, ctx), ctx, result, session, progress, batch_size)


def _count_lines(f, end):
    f.seek(0)
    n, left = 0, end
    while left > 0:
        chunk = f.read(min(left, 1 << 20))
        if not chunk:
            break
        n += chunk.count(b"\n")
        left -= len(chunk)
    return n


def import_transcript(store, path, fmt="auto", *, session=None):
    """Import what the transcript at *path* gained since the last call; return (added, malformed).

    The store keeps, per file, the byte offset reached and a hash of the first
    line. A file that shrank or whose first line changed (rewritten, replaced)
    is read again from the start: the dedup keys keep that harmless. A last
    line without its newline is left for the next call. aider and llm files,
    and Gemini sessions written as one JSON document, are imported whole each
    time (dedup keys again).
    """
    real = os.path.realpath(path)
    if fmt == "auto":
        fmt = detect_format(real)
    if fmt in ("aider", "llm"):
        r = import_file(store, real, fmt, session=session)
        return r.added, r.malformed
    if fmt not in PARSERS:
        raise ImportFailed(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})", ExitCode.USAGE)
    if fmt == "gemini":
        with _open_bin(real) as f:
            whole = _gemini_whole(f, None) is not None
        if whole:  # a session Gemini CLI rewrites as one JSON document: read whole each time (keys dedup)
            r = import_file(store, real, fmt, session=session)
            return r.added, r.malformed
    with _open_bin(real) as f:
        first = f.readline()
        if not first.endswith(b"\n"):
            return 0, 0  # not even one whole line yet
        head = _sha(first)[:16]
        size = os.fstat(f.fileno()).st_size
        offset, old_head = store.get_offset(real)
        if old_head != head or offset > size:
            offset = 0
        if offset == size:
            return 0, 0
        result = ImportResult(real, fmt)
        ctx = Ctx(real, start=offset, line_no=_count_lines(f, offset) + 1 if offset else 1,
                  complete_only=True, size=size)
        try:
            _run(store, PARSERS[fmt](f, ctx), ctx, result, session)
        except _Rescan:
            ctx = Ctx(real, complete_only=True, size=size)
            _run(store, PARSERS[fmt](f, ctx), ctx, result, session)
        store.set_offset(real, ctx.pos, head)
    return result.added, result.malformed
