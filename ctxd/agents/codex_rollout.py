"""Codex rollout files (``~/.codex/sessions/**/rollout-*.jsonl``): response items as typed
records, turns from ``task_started`` and ``turn_context``. The parser of ``ctxd.agents.codex``,
in a module of its own: a Codex hook that reads no rollout does not load it."""

import json
import os
import re

from ctxd.agents.base import Malformed, ParseCursor
from ctxd.agents.common import (as_subagent, call_record, dumps, first_json, json_lines, json_object, lines,
                                record, result_record, text_parts, timestamp, with_env)
from ctxd.memory.store import items

_RESPONSE_ITEMS = ("message", "function_call", "function_call_output", "custom_tool_call",
                   "custom_tool_call_output", "local_shell_call", "reasoning", "web_search_call")
_EXIT_CODE = re.compile(r"(?:Process exited with code|Exit code:?) (-?\d+)")
_TURN_END = ("task_complete", "turn_aborted")
_CALL_ID = re.compile(rb'"call_id"\s*:\s*"([^"\\]+)"')
_CALL_NAME = re.compile(rb'"type"\s*:\s*"(?:function_call|custom_tool_call)"\s*,.*?"name"\s*:\s*"([^"\\]+)"')
_IMAGE_TAG = re.compile(r"\A\s*</?image\b[^>]*>\s*\Z")


def tool_output(out):
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
                text = text_parts(out[k])
                break
        else:
            text = dumps(out)
        if isinstance(out.get("success"), bool):
            success = out["success"]
    elif isinstance(out, list):
        text = text_parts(out)
    else:
        text = "" if out is None else dumps(out)
    if exit_code is None:
        m = _EXIT_CODE.search(text[:400])  # unified exec: "Process exited with code 1" in the header
        if m:
            exit_code = int(m.group(1))
    return text, exit_code, success


def _session_from_name(path):
    m = re.search(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})", os.path.basename(path))
    return m.group(1) if m else None


def _response_item(obj, n):
    """(response item or None, what else the line is) for a rollout line."""
    kind = obj.get("type")
    payload = obj.get("payload")
    if kind == "response_item":
        return (payload, None) if isinstance(payload, dict) else (None, Malformed(n, "response_item without a payload"))
    if "payload" not in obj and kind in _RESPONSE_ITEMS:
        return obj, None  # rollouts before session_meta: bare response items
    return None, None


def _message_text(item):
    """A message's text; Codex's ``<image>``/``</image>`` parts around an attached image are left out."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return text_parts([p for p in content if not (isinstance(p, dict) and isinstance(p.get("text"), str)
                                                       and _IMAGE_TAG.match(p["text"]))])
    return None


class _Turns:
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
        elif kind == "event_msg" and payload.get("type") in _TURN_END:
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
        if kind == "event_msg" and payload.get("type") in _TURN_END:
            return True
        new = payload.get("turn_id")
        return isinstance(new, str) and bool(new) and new != self.turn

    def user_kind(self, text):
        """(kind, subtype) of a user item's text, as far as the text tells."""
        return items.classify_user_text(text, "codex")


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
        payload.get("type") in ("task_started",) + _TURN_END


def _turns_at_start(f, cursor):
    """The _Turns at cursor.start: an incremental import resumes mid-file."""
    user = re.compile(rb'"role"\s*:\s*"user"')
    markers = (b'"turn_context"', b'"task_started"', b'"task_complete"', b'"turn_aborted"')
    state = _Turns()
    candidate, last_event = None, None  # the line of an unconfirmed prompt; of the last user_message event
    for n, raw in lines(f, ParseCursor(cursor.path), start=0, line_no=1, end=cursor.start):
        if b'"call_id"' in raw and b'_output"' not in raw:
            cid = _CALL_ID.search(raw)
            name = _CALL_NAME.search(raw)
            if cid and (name or b'"local_shell_call"' in raw):
                state.names[cid.group(1).decode("utf-8", "replace")] = \
                    name.group(1).decode("utf-8", "replace") if name else "local_shell"
        if b'"user_message"' in raw or b'"UserMessage"' in raw:
            obj = json_object(n, raw)
            if not isinstance(obj, Malformed) and _is_user_event(obj):
                if candidate == n - 1 and state.turn is not None:
                    state.prompts += 1
                last_event = n
        elif any(m in raw for m in markers):
            obj = json_object(n, raw)
            if not isinstance(obj, Malformed) and _is_turn_marker(obj):
                state.event(obj)
        elif user.search(raw):
            obj = json_object(n, raw)
            if not isinstance(obj, Malformed):
                item, _ = _response_item(obj, n)
                if item is not None and item.get("type") == "message" and item.get("role") == "user":
                    text = _message_text(item)
                    if text and text.strip() and state.user_kind(text)[0] == "prompt":
                        if state.tasks and last_event != n - 1:
                            candidate = n  # a prompt if its user_message event follows
                        elif state.turn is not None:
                            state.prompts += 1
    return state




def parse_codex(f, cursor):
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
    reader = _RolloutReader(f, cursor)
    for rec in reader.records():
        if reader.subagent and isinstance(rec, dict):
            as_subagent(rec)
        yield with_env(rec, reader.cwd, reader.branch)


class _RolloutReader:
    """One parse of a rollout. Some records wait until a later line decides their kind or key:

    - ``held``: an assistant reply that may be its turn's last record (its key waits for the
      turn's end), and the neutral records (summaries, meta) after it;
    - ``early``: prompts before any turn marker: Codex's context if a task_started follows;
    - ``pending``: a user item waiting for the next line: a prompt if that is its user_message event.
    """

    def __init__(self, f, cursor):
        self.f, self.cursor = f, cursor
        self.subagent, self.cwd, self.branch = False, None, None  # from session_meta
        self.sid = None
        self.turns = _Turns()
        if cursor.start > 0:
            first = first_json(f)
            if first and first.get("type") == "session_meta" and isinstance(first.get("payload"), dict):
                self.sid = first["payload"].get("id")
                self.read_session_meta(first["payload"])
            elif first and isinstance(first.get("id"), str) and "payload" not in first:
                self.sid = first["id"]
            self.turns = _turns_at_start(f, cursor)
        if not isinstance(self.sid, str) or not self.sid:
            self.sid = _session_from_name(cursor.path) or cursor.default_session
        self.held, self.early, self.pending = [], [], []
        self.line_at = {}  # id(record) -> byte offset of its line, for what an incremental import must read again
        self.last_user_event = None  # the line number of the last event_msg user_message

    def read_session_meta(self, payload):
        src = payload.get("source")
        self.subagent = isinstance(src, dict) and "subagent" in src
        git = payload.get("git") if isinstance(payload.get("git"), dict) else {}
        self.cwd, self.branch = payload.get("cwd"), git.get("branch")

    # -- releasing what waits ------------------------------------------------------------

    def release_held(self, turn_ended):
        """The held records; when *turn_ended*, the reply among them gets the turn's answer key."""
        out = self.held[:]
        self.held.clear()
        if out and turn_ended and self.turns.turn is not None:
            out[0]["dedup"] = f"codex:{self.sid}:{self.turns.turn}:assistant"
        return out

    def release_early(self, as_context):
        """The early records; when *as_context* (a task_started followed), their prompts are
        Codex's environment, not the user's."""
        out = self.early[:]
        self.early.clear()
        if as_context:
            for r in out:
                if r["kind"] == "prompt":
                    r.update(kind="meta", role="system", subtype="environment")
        return out

    def emit(self, rec, neutral):
        """What to yield for *rec* now (held answers, undecided early items first). A *neutral*
        record (a summary, meta) decides nothing: it waits behind what waits."""
        out = []
        if self.early and not neutral:
            out += self.release_early(False)
        if neutral:
            if self.held or self.early:
                (self.held or self.early).append(rec)
            else:
                out.append(rec)
            return out
        out += self.release_held(False)
        if rec["kind"] == "reply":
            self.held.append(rec)
        else:
            out.append(rec)
        return out

    def emit_prompt(self, rec):
        """*rec* is what the user typed: the turn's next prompt key."""
        if self.turns.turn is not None:
            rec["dedup"] = f"codex:{self.sid}:{self.turns.turn}:user:{self.turns.prompts}"
            self.turns.prompts += 1
        return self.emit(rec, False)

    def resolve_pending(self, is_user_event):
        """The pending user item, now that the next line is known."""
        if not self.pending:
            return []
        rec = self.pending.pop()
        if is_user_event:
            return self.emit_prompt(rec)
        rec.update(kind="meta", role="system", subtype="environment")  # Codex sent it, not the user
        return self.emit(rec, True)

    # -- reading -------------------------------------------------------------------------

    def records(self):
        cursor = self.cursor
        start = cursor.pos
        for n, obj in json_lines(self.f, cursor):
            here, start = start, cursor.pos  # where line n begins; where the next one does
            user_event = _is_user_event(obj)
            if self.pending:
                yield from self.resolve_pending(user_event)
            if user_event:
                self.last_user_event = n
            if isinstance(obj, Malformed):
                yield obj
            else:
                yield from self.line_records(n, obj, here)
        yield from self.finish()

    def line_records(self, n, obj, here):
        """The records of rollout line *n* (a dict) that begins at byte *here*."""
        kind = obj.get("type")
        payload = obj.get("payload")
        if kind == "session_meta":
            if not isinstance(payload, dict):
                yield Malformed(n, "session_meta without a payload")
            else:
                if isinstance(payload.get("id"), str) and payload["id"]:
                    self.sid = payload["id"]
                self.read_session_meta(payload)
            return
        if _is_turn_marker(obj):
            yield from self.release_early(kind == "event_msg" and payload.get("type") == "task_started")
            if self.turns.changes(obj):
                yield from self.release_held(True)  # the answer held was the last record of its turn
            self.turns.event(obj)
            return
        ts = timestamp(obj.get("timestamp"))
        if kind == "compacted":
            text = payload.get("message") if isinstance(payload, dict) else None
            if isinstance(text, str) and text.strip():
                yield from self.emit(record("summary", text, self.sid, "codex", f"codex:{self.sid}:{n}", ts,
                                            subtype="compaction"), True)
            return
        item, other = _response_item(obj, n)
        if item is None:
            if other is not None:
                yield other
            elif "payload" not in obj and kind is None and n == 1 and isinstance(obj.get("id"), str):
                self.sid = obj["id"]  # the first line of rollouts before session_meta: {id, timestamp, instructions}
            elif kind is None:
                yield Malformed(n, "no type")
            return  # event_msg (repeats response items), ...
        if item.get("type") == "message":
            yield from self.message_records(n, item, ts, here)
        else:
            yield from self.tool_records(item, f"codex:{self.sid}:{n}", ts)

    def message_records(self, n, item, ts, here):
        key = f"codex:{self.sid}:{n}"
        role = item.get("role")
        text = _message_text(item)
        if text is None:
            yield Malformed(n, "a message without content")
            return
        if role == "user" and text.strip():
            ukind, subtype = self.turns.user_kind(text)
            if ukind == "prompt":
                rec = record("prompt", text, self.sid, "codex", key, ts)
                self.line_at[id(rec)] = here
                if self.turns.tasks and self.last_user_event != n - 1:
                    self.pending.append(rec)  # Codex follows what the user typed with a user_message event
                elif self.turns.turn is None and not self.turns.tasks:
                    self.early.append(rec)  # decided by what follows: a task_started, or anything else
                else:
                    yield from self.emit_prompt(rec)
            elif subtype not in ("environment", "instructions"):
                yield from self.emit(record(ukind, text, self.sid, "codex", key, ts, subtype=subtype), True)
            # <environment_context>, AGENTS.md...: Codex's own context, sent every session
        elif role == "assistant" and text.strip():
            rec = record("reply", text, self.sid, "codex", key, ts)
            self.line_at[id(rec)] = here
            yield from self.emit(rec, False)
        # developer/system messages: Codex's own instructions

    def tool_records(self, item, key, ts):
        sid, names = self.sid, self.turns.names
        t = item.get("type")
        if t in ("function_call", "custom_tool_call"):
            args = item.get("arguments") if t == "function_call" else item.get("input")
            name = item.get("name") if isinstance(item.get("name"), str) else None
            cid = item.get("call_id") if isinstance(item.get("call_id"), str) else None
            if cid:
                names[cid] = name
            yield from self.emit(call_record(name, args if args is not None else {}, sid, "codex", key, ts,
                                             call_id=cid), False)
        elif t == "local_shell_call":
            cid = item.get("call_id") or item.get("id")
            cid = cid if isinstance(cid, str) else None
            if cid:
                names[cid] = "local_shell"
            action = item.get("action")
            yield from self.emit(call_record("local_shell", action if action is not None else {}, sid, "codex", key,
                                             ts, call_id=cid), False)
        elif t in ("function_call_output", "custom_tool_call_output"):
            text, exit_code, success = tool_output(item.get("output"))
            if text.strip():
                cid = item.get("call_id") if isinstance(item.get("call_id"), str) else None
                failed = (exit_code is not None and exit_code != 0) or success is False
                yield from self.emit(result_record(text, sid, "codex", key, ts, tool=names.get(cid), call_id=cid,
                                                   is_error=failed, exit_code=exit_code), False)
        elif t == "web_search_call":
            action = item.get("action") if isinstance(item.get("action"), dict) else {}
            cid = item.get("id") if isinstance(item.get("id"), str) else None
            yield from self.emit(call_record("web_search", action, sid, "codex", key, ts, call_id=cid), False)
        # reasoning (encrypted), ...: not kept

    def finish(self):
        """What still waits at the end of what was read."""
        cut = ([self.held[0]] if self.held and self.turns.in_task else []) + self.pending[:1]
        if self.cursor.complete_only and self.turns.tasks and cut:
            # A live rollout, mid-turn: whether the user item gets its user_message event, whether the
            # answer held is the last of its turn, lines not written yet tell. The next import reads
            # again from the first of them (what it meets twice has the same keys).
            if not (self.held and self.turns.in_task):
                yield from self.release_held(True)
            self.cursor.pos = min(self.line_at[id(r)] for r in cut)
            return
        if self.pending:
            rec = self.pending.pop()
            yield from (self.emit_prompt(rec) if self.turns.in_task else self.emit(
                dict(rec, kind="meta", role="system", subtype="environment"), True))
        yield from self.release_early(False)
        yield from self.release_held(True)

