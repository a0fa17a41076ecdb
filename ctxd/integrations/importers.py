"""Importers: what other AI CLIs recorded -> messages in the conversation store.

One streaming parser per format. Each is a generator over a binary file
object that yields, line by line (a file is never read whole):

- records: dicts for ``Store.add_many`` with ``role`` (user, assistant,
  system, tool), ``content``, ``session``, ``source`` (the format), ``ts``
  (unix seconds or None), ``importance`` (None) and ``dedup``: a key that is
  unique and stable across re-imports, so importing a file twice adds nothing;
- ``Malformed(line_no, reason)`` for a line it cannot use (counted and
  reported, never fatal);
- ``Forget(keys)`` when messages imported earlier must go (a Gemini rewind):
  the rows whose dedup key is one of *keys*, or starts with key + ":".

Formats (see /work/shared/AI-CLI-FORMATS.md and tests/contracts/):

- ``jsonl``: OpenAI-style ``{"role", "content"}`` messages, one a line (also
  what ``ctxd chat export`` writes: its ``session``, ``time`` and
  ``importance`` are kept).
- ``claude``: a Claude Code transcript; plain prompts get
  :func:`claude_prompt_dedup` keys so the UserPromptSubmit hook and an import
  store a prompt once.
- ``codex``: a Codex rollout file.
- ``gemini``: a Gemini CLI session (an upsert log: a record id may be written
  several times, the last version counts; ``$rewindTo`` drops that record and
  everything after it, as Gemini CLI itself does).
- ``aider``: ``.aider.chat.history.md``.
- ``llm``: Simon Willison's llm ``logs.db`` (both schemas).

``import_file`` imports a whole file (the ``ctxd chat import`` command);
``import_transcript`` imports what a live transcript gained since its last
call (the Stop/PreCompact hooks). Both insert in batches of ``BATCH``.

This module is imported by the AI CLI hooks: standard library only at the top.
"""

import json
import os
from collections import namedtuple

from ctxd.errors import CtxdError, ExitCode

FORMATS = ("jsonl", "claude", "codex", "gemini", "aider", "llm")
BATCH = 500
SHOW_LINES = 20  # malformed line numbers listed in a report
_SNIFF_LINES = 50
_SNIFF_LINE_BYTES = 1 << 20


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
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        v = float(value)
        return v / 1000.0 if v > 1e11 else v
    if isinstance(value, str) and value.strip():
        import datetime as dt

        try:
            d = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        if d.tzinfo is None:
            d = d.replace(tzinfo=dt.timezone.utc)
        return d.timestamp()
    return None


def _rec(role, content, session, source, dedup, ts=None, importance=None):
    return {"role": role, "content": content, "session": session, "source": source, "ts": ts,
            "dedup": dedup, "importance": importance}


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


def parse_jsonl(f, ctx):
    for n, raw in _lines(f, ctx):
        if not raw.strip():
            continue
        obj = _parse_json(n, raw)
        if isinstance(obj, Malformed):
            yield obj
            continue
        role = _JSONL_ROLES.get(obj.get("role")) if isinstance(obj.get("role"), str) else None
        if role is None:
            yield Malformed(n, f"no usable role ({obj.get('role')!r})")
            continue
        content = obj.get("content")
        if isinstance(content, list):
            text = _text_parts(content)
        elif isinstance(content, str):
            text = content
        elif content is None:
            text = ""
        else:
            yield Malformed(n, f"content is a {type(content).__name__}")
            continue
        calls = obj.get("tool_calls")
        if isinstance(calls, list):
            for c in calls:
                fn = c.get("function") if isinstance(c, dict) else None
                if isinstance(fn, dict):
                    text += ("\n" if text else "") + f"[tool_call {fn.get('name')}] {fn.get('arguments', '')}"
        if content is None and not text:
            yield Malformed(n, "no content")
            continue
        if not text.strip():
            continue
        session = obj.get("session") if isinstance(obj.get("session"), str) and obj.get("session") else \
            ctx.default_session
        imp = obj.get("importance")
        imp = float(imp) if isinstance(imp, (int, float)) and not isinstance(imp, bool) and 0 <= imp <= 1 else None
        ts = _ts(obj.get("time")) or _ts(obj.get("ts")) or _ts(obj.get("timestamp"))
        yield _rec(role, text, session, "jsonl", f"jsonl:{session}:{n}:{_sha(raw)[:16]}", ts, imp)


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
    if block.get("is_error") is True:
        text = "[error] " + text
    return text


def _claude_prompt_counts(f, ctx):
    """How often each prompt occurred before ctx.start (an incremental import needs the counts).

    Only lines that can be prompts are parsed: a user line (``"type":"user"``)
    without a tool result (an unescaped ``"tool_use_id"`` key only occurs in one).
    """
    import re

    user = re.compile(rb'"type"\s*:\s*"user"')
    sidechains = os.path.basename(ctx.path).startswith("agent-")
    counts = {}
    scan = Ctx(ctx.path)
    for n, raw in _lines(f, scan, start=0, line_no=1, end=ctx.start):
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
            key = (sid, _sha(text.strip()))
            counts[key] = counts.get(key, 0) + 1
    return counts


def parse_claude(f, ctx):
    """User and assistant lines of a transcript, and compaction summaries.

    Lines of sub-agents (``isSidechain``) are left out: the Task tool's result
    in the main conversation carries what they found. A sub-agent's own
    transcript (``agent-*.jsonl``, every line a sidechain) is imported whole.
    """
    counts = _claude_prompt_counts(f, ctx) if ctx.start > 0 else {}
    sidechains = os.path.basename(ctx.path).startswith("agent-")
    for n, obj in _json_lines(f, ctx):
        if isinstance(obj, Malformed):
            yield obj
            continue
        kind = obj.get("type")
        sid = obj.get("sessionId") if isinstance(obj.get("sessionId"), str) and obj.get("sessionId") else \
            ctx.default_session
        ts = _ts(obj.get("timestamp"))
        if kind == "summary":
            text = obj.get("summary")
            if not isinstance(text, str):
                yield Malformed(n, "a summary without text")
            elif text.strip():
                leaf = obj.get("leafUuid") if isinstance(obj.get("leafUuid"), str) else _sha(text)[:16]
                yield _rec("system", f"[summary] {text}", sid, "claude", f"claude:{sid}:summary:{leaf}", ts)
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
                    yield _rec("system", f"[summary] {text}", sid, "claude", f"{base}:0", ts)
                continue
            text = _claude_prompt(content)
            if text is not None:
                if text.strip():
                    key = (sid, _sha(text.strip()))
                    counts[key] = counts.get(key, 0) + 1
                    yield _rec("user", text, sid, "claude", claude_prompt_dedup(sid, text, counts[key]), ts)
                continue
            for i, b in enumerate(content):
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "tool_result":
                    text = _claude_result_text(b)
                    if text.strip():
                        yield _rec("tool", text, sid, "claude", f"{base}:{i}", ts)
                elif b.get("type") == "text" and isinstance(b.get("text"), str) and b["text"].strip():
                    yield _rec("user", b["text"], sid, "claude", f"{base}:{i}", ts)
            continue
        # assistant
        if isinstance(content, str):
            if content.strip():
                yield _rec("assistant", content, sid, "claude", f"{base}:0", ts)
            continue
        for i, b in enumerate(content):
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t == "text" and isinstance(b.get("text"), str) and b["text"].strip():
                yield _rec("assistant", b["text"], sid, "claude", f"{base}:{i}", ts)
            elif t == "tool_use":
                yield _rec("assistant", f"[tool_use {b.get('name')}] {_dumps(b.get('input', {}))}", sid, "claude",
                           f"{base}:{i}", ts)
            # thinking, redacted_thinking, images: not kept


# -- Codex rollouts ---------------------------------------------------------------

_CODEX_BOILERPLATE = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions",
                      "<permissions instructions>")
_CODEX_ITEMS = ("message", "function_call", "function_call_output", "custom_tool_call",
                "custom_tool_call_output", "local_shell_call", "reasoning", "web_search_call")


def _codex_output(out):
    """function_call_output.output: a string (often JSON {"output", "metadata"}), or structured."""
    if isinstance(out, str):
        s = out.lstrip()
        if s.startswith("{"):
            try:
                o = json.loads(out)
            except ValueError:
                return out
            if isinstance(o, dict) and isinstance(o.get("output"), str):
                return o["output"]
        return out
    if isinstance(out, dict):
        for k in ("output", "content"):
            if isinstance(out.get(k), str):
                return out[k]
            if isinstance(out.get(k), list):
                return _text_parts(out[k])
        return _dumps(out)
    if isinstance(out, list):
        return _text_parts(out)
    return "" if out is None else _dumps(out)


def _codex_session_from_name(path):
    import re

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
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return _text_parts(content)
    return None


def _codex_is_prompt(item):
    """Whether a response item is a message the user typed (not Codex's own context)."""
    if item.get("type") != "message" or item.get("role") != "user":
        return False
    text = _codex_message_text(item)
    return bool(text and text.strip()) and not text.lstrip().startswith(_CODEX_BOILERPLATE)


def _codex_turn_at(f, ctx):
    """(turn id, prompts seen in that turn) at ctx.start: an incremental import resumes mid-file."""
    import re

    user = re.compile(rb'"role"\s*:\s*"user"')
    turn, prompts = None, 0
    for n, raw in _lines(f, Ctx(ctx.path), start=0, line_no=1, end=ctx.start):
        if b'"turn_context"' in raw:
            obj = _parse_json(n, raw)
            if not isinstance(obj, Malformed) and obj.get("type") == "turn_context" and \
                    isinstance(obj.get("payload"), dict) and isinstance(obj["payload"].get("turn_id"), str):
                if obj["payload"]["turn_id"] != turn:
                    turn, prompts = obj["payload"]["turn_id"], 0
        elif turn is not None and user.search(raw):
            obj = _parse_json(n, raw)
            if not isinstance(obj, Malformed):
                item, _ = _codex_item(obj, n)
                if item is not None and _codex_is_prompt(item):
                    prompts += 1
    return turn, prompts


def parse_codex(f, ctx):
    """Response items of a rollout; event_msg lines repeat them and are skipped.

    Keys are ``codex:<session>:<line>``, except, in turns Codex gave an id
    (``turn_context.turn_id``), the user's *i*-th input of the turn
    (``codex:<session>:<turn>:user:<i>``) and the turn's last record when it is
    an assistant message (``codex:<session>:<turn>:assistant``): the keys the
    Codex hooks and ``notify`` use for the same messages.
    """
    sid = None
    turn, prompts = None, 0
    if ctx.start > 0:
        first = _first_json(f)
        if first and first.get("type") == "session_meta" and isinstance(first.get("payload"), dict):
            sid = first["payload"].get("id")
        elif first and isinstance(first.get("id"), str) and "payload" not in first:
            sid = first["id"]
        turn, prompts = _codex_turn_at(f, ctx)
    if not isinstance(sid, str) or not sid:
        sid = _codex_session_from_name(ctx.path) or ctx.default_session
    pending = None  # an assistant message that may end its turn: its key waits for what follows

    def settle(final):
        nonlocal pending
        rec, pending = pending, None
        if rec is not None and final and turn is not None:
            rec["dedup"] = f"codex:{sid}:{turn}:assistant"
        return rec

    for n, obj in _json_lines(f, ctx):
        if isinstance(obj, Malformed):
            yield obj
            continue
        kind = obj.get("type")
        payload = obj.get("payload")
        if kind == "session_meta":
            if not isinstance(payload, dict):
                yield Malformed(n, "session_meta without a payload")
            elif isinstance(payload.get("id"), str) and payload["id"]:
                sid = payload["id"]
            continue
        if kind == "turn_context":
            new = payload.get("turn_id") if isinstance(payload, dict) else None
            if isinstance(new, str) and new and new != turn:
                rec = settle(True)
                if rec:
                    yield rec
                turn, prompts = new, 0
            continue
        item, other = _codex_item(obj, n)
        if item is None:
            if other is not None:
                yield other
            elif "payload" not in obj and kind is None and n == 1 and isinstance(obj.get("id"), str):
                sid = obj["id"]  # the first line of rollouts before session_meta: {id, timestamp, instructions}
            elif kind is None:
                yield Malformed(n, "no type")
            continue  # event_msg (repeats response items), compacted, ...
        ts = _ts(obj.get("timestamp"))
        key = f"codex:{sid}:{n}"
        t = item.get("type")
        rec = None
        if t == "message":
            role = item.get("role")
            text = _codex_message_text(item)
            if text is None:
                yield Malformed(n, "a message without content")
                continue
            if role == "user" and _codex_is_prompt(item):
                if turn is not None:
                    key = f"codex:{sid}:{turn}:user:{prompts}"
                    prompts += 1
                rec = _rec("user", text, sid, "codex", key, ts)
            elif role == "assistant" and text.strip():
                rec = _rec("assistant", text, sid, "codex", key, ts)
            # developer/system messages and boilerplate user items: Codex's own context
        elif t in ("function_call", "custom_tool_call"):
            args = item.get("arguments") if t == "function_call" else item.get("input")
            if not isinstance(args, str):
                args = _dumps(args if args is not None else {})
            rec = _rec("assistant", f"[tool_call {item.get('name')}] {args}", sid, "codex", key, ts)
        elif t == "local_shell_call":
            rec = _rec("assistant", f"[tool_call local_shell] {_dumps(item.get('action'))}", sid, "codex", key, ts)
        elif t in ("function_call_output", "custom_tool_call_output"):
            text = _codex_output(item.get("output"))
            if text.strip():
                rec = _rec("tool", text, sid, "codex", key, ts)
        # reasoning (encrypted), web_search_call, ...: not kept
        if rec is None:
            continue
        earlier = settle(False)
        if earlier:
            yield earlier
        if t == "message" and rec["role"] == "assistant":
            pending = rec
        else:
            yield rec
    rec = settle(True)
    if rec:
        yield rec


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
            yield _rec("user", text, sid, "gemini", base, ts)
    elif kind == "gemini":
        if text.strip():
            yield _rec("assistant", text, sid, "gemini", base, ts)
        calls = obj.get("toolCalls")
        for i, tc in enumerate(calls if isinstance(calls, list) else ()):
            if not isinstance(tc, dict):
                continue
            cid = tc.get("id") if isinstance(tc.get("id"), str) and tc.get("id") else str(i)
            tts = _ts(tc.get("timestamp")) or ts
            yield _rec("assistant", f"[tool_call {tc.get('name')}] {_dumps(tc.get('args', {}))}", sid, "gemini",
                       f"{base}:call:{cid}", tts)
            if tc.get("result") is not None or tc.get("status") in ("success", "error", "cancelled"):
                result = _gemini_result(tc)
                if tc.get("status") in ("error", "cancelled"):
                    result = f"[{tc['status']}] {result}".rstrip()
                if result.strip():
                    yield _rec("tool", result, sid, "gemini", f"{base}:result:{cid}", tts)
    elif kind == "error":
        if text.strip():
            yield _rec("system", f"[error] {text}", sid, "gemini", base, ts)
    elif kind is None:
        yield Malformed(n, "a record without a type")
    # info, warning and unknown types: not conversation


def parse_gemini(f, ctx):
    """Two passes: the first (ids only) applies upserts and rewinds, the second yields records.

    A record id written several times is imported once, from its last version;
    ``{"$rewindTo": id}`` drops that record and all after it (all records when
    the id is unknown), and what an earlier import stored of them is forgotten.
    In an incremental import a rewind needs the whole file: ``_Rescan``.
    """
    sid = None
    if ctx.start > 0:
        first = _first_json(f)
        if first and isinstance(first.get("sessionId"), str):
            sid = first["sessionId"]
    last = {}  # record id -> line number of its last version, in order of first appearance
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
        elif isinstance(obj.get("id"), str) and "$set" not in obj:
            last[obj["id"]] = n
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
        if "$rewindTo" in obj or "$set" in obj:
            continue
        rid = obj.get("id")
        if not isinstance(rid, str):
            if isinstance(obj.get("sessionId"), str):
                continue  # the metadata line
            yield Malformed(n, "neither a record (id) nor metadata (sessionId)")
            continue
        if last.get(rid) != n:
            continue  # an older version, or rewound
        yield from _gemini_records(obj, sid, n)


# -- aider chat history -----------------------------------------------------------

_AIDER_START = "# aider chat started at "


def parse_aider(f, ctx):
    """``#### `` lines are the user's, ``> `` lines tool output, the rest the assistant's."""
    import time as _time

    session, session_ts = ctx.default_session, None
    block, kind, block_line = [], None, 0

    def flush():
        if kind is None:
            return None
        text = "\n".join(block).strip("\n")
        if not text.strip():
            return None
        role = {"user": "user", "tool": "tool", "assistant": "assistant"}[kind]
        return _rec(role, text, session, "aider", f"aider:{session}:{block_line}:{_sha(text)[:16]}", session_ts)

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
        if line == "####" or line.startswith("#### "):
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

def _columns(db, table):
    return {r[1] for r in db.execute(f"PRAGMA table_info([{table}])")}


def _llm_part(role, row):
    """(role, text) of a part row of the message store (llm >= 0.32)."""
    ptype, text, payload, tool = row
    data = None
    if isinstance(payload, str) and payload:
        try:
            data = json.loads(payload)
        except ValueError:
            data = None
    if not isinstance(data, dict):
        data = {}
    if ptype in ("reasoning", "thinking"):
        return role, ""
    if ptype == "tool_call":
        name = tool or data.get("name")
        args = data.get("arguments", data.get("args", data.get("input", {})))
        return "assistant", f"[tool_call {name}] {args if isinstance(args, str) else _dumps(args)}"
    if isinstance(text, str):
        body = text
    else:
        val = next((data[k] for k in ("text", "output", "content") if k in data), "")
        body = val if isinstance(val, str) else _dumps(val)
    if ptype == "tool_result":
        return "tool", body
    if ptype in ("attachment", "image") and not body:
        return role, ""
    return role, body


def parse_llm(path, ctx):
    """Rows of llm's logs.db: the message store (threads/messages/parts) and the legacy responses table.

    Conversations llm >= 0.32 logged live in ``threads`` (id = the conversation
    id), whose ``tip_message_hash`` ends a chain of ``messages`` (hash,
    parent_hash, role) made of ``parts`` (message_hash, position, type, text,
    payload, tool_name). The legacy ``responses`` rows are imported too, except
    those also logged as turns (same id) during the dual-write releases.
    """
    import sqlite3
    from urllib.parse import quote

    try:
        db = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True)
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as e:
        raise ImportFailed(f"{path}: not a readable SQLite database ({e})") from None
    try:
        new = ({"threads", "messages", "parts"} <= tables and "hash" in _columns(db, "messages")
               and "message_hash" in _columns(db, "parts"))
        if not new and "responses" not in tables:
            raise ImportFailed(f"{path}: not an llm logs.db (no responses or messages table)")
        total = 0
        if new:
            total += db.execute("SELECT count(*) FROM threads").fetchone()[0]
        if "responses" in tables:
            total += db.execute("SELECT count(*) FROM responses").fetchone()[0]
        done = 0
        size = ctx.size or 0

        def tick():
            nonlocal done
            done += 1
            ctx.pos = size * done // total if total else size

        turn_ids = set()
        if new:
            tcols = _columns(db, "turns") if "turns" in tables else set()
            when_col = next((c for c in ("datetime_utc", "started_at", "created_at", "timestamp") if c in tcols), None)
            if "id" in tcols:
                turn_ids = {r[0] for r in db.execute("SELECT id FROM turns")}
            pcols = _columns(db, "parts")
            order = "position" if "position" in pcols else "rowid"
            sel = ", ".join(c if c in pcols else "NULL" for c in ("type", "text", "payload", "tool_name"))
            emitted = set()  # forks share their first messages: each is imported with the first thread
            for tid, tip in db.execute("SELECT id, tip_message_hash FROM threads ORDER BY rowid").fetchall():
                tick()
                session = str(tid)
                when = {}
                if when_col and {"thread_id", "tip_message_hash"} <= tcols:
                    pm = "parent_message_hash" if "parent_message_hash" in tcols else "NULL"
                    for parent, tipm, w in db.execute(
                            f"SELECT {pm}, tip_message_hash, {when_col} FROM turns WHERE thread_id = ?", (tid,)):
                        for h in (parent, tipm):
                            if h and h not in when:
                                when[h] = _ts(w)
                chain, seen, h = [], set(), tip
                while h and h not in seen:
                    seen.add(h)
                    row = db.execute("SELECT parent_hash, role FROM messages WHERE hash = ?", (h,)).fetchone()
                    if row is None:
                        break
                    chain.append((h, row[1]))
                    h = row[0]
                ts = None
                for h, role in reversed(chain):
                    ts = when.get(h, ts)
                    if h in emitted:
                        continue
                    emitted.add(h)
                    texts, out_role = [], role if role in ("user", "assistant", "system", "tool") else "user"
                    roles = set()
                    for prow in db.execute(f"SELECT {sel} FROM parts WHERE message_hash = ? ORDER BY {order}", (h,)):
                        r, t = _llm_part(out_role, prow)
                        if t.strip():
                            texts.append(t)
                            roles.add(r)
                    if roles == {"tool"}:
                        out_role = "tool"
                    text = "\n".join(texts)
                    if text.strip():
                        yield _rec(out_role, text, session, "llm", f"llm:msg:{h}", ts)
        if "responses" in tables:
            rcols = _columns(db, "responses")
            sel = ", ".join(c if c in rcols else "NULL" for c in
                            ("id", "prompt", "response", "conversation_id", "datetime_utc"))
            cur = db.execute(f"SELECT {sel} FROM responses ORDER BY rowid")
            while True:
                rows = cur.fetchmany(200)
                if not rows:
                    break
                for rid, prompt, response, conv, when in rows:
                    tick()
                    if rid in turn_ids:
                        continue
                    session = str(conv) if conv else "llm"
                    ts = _ts(when)
                    if isinstance(prompt, str) and prompt.strip():
                        yield _rec("user", prompt, session, "llm", f"llm:{rid}:user", ts)
                    if isinstance(response, str) and response.strip():
                        yield _rec("assistant", response, session, "llm", f"llm:{rid}:assistant", ts)
    except sqlite3.DatabaseError as e:
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
    if "role" in obj:
        return "jsonl"
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
    line without its newline is left for the next call. aider and llm files
    are imported whole each time (dedup keys again).
    """
    real = os.path.realpath(path)
    if fmt == "auto":
        fmt = detect_format(real)
    if fmt in ("aider", "llm"):
        r = import_file(store, real, fmt, session=session)
        return r.added, r.malformed
    if fmt not in PARSERS:
        raise ImportFailed(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})", ExitCode.USAGE)
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
