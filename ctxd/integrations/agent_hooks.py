"""The AI CLI hook driver: ``ctxd chat hook claude|gemini|codex|codex-notify``.

Claude Code, Gemini CLI and Codex run these as hook commands: a JSON payload
on stdin (Codex's ``notify`` program gets it as its one argument instead).
The project is found from the payload's ``cwd``. What each event does:

- SessionStart: inject the project's context (at most ``HOOK_CONTEXT_CHARS``
  characters) as ``hookSpecificOutput.additionalContext``; nothing when the
  store is empty.
- a submitted prompt (Claude/Codex UserPromptSubmit, Gemini BeforeAgent):
  record it as a user message.
- Gemini AfterAgent: record the response as an assistant message.
- end of turn / compaction / end of session (Stop, SubagentStop, PreCompact,
  SessionEnd; Gemini PreCompress, SessionEnd): import what the transcript
  gained since the last import.

No hook renders context.md: a change marks it stale, and the end of a turn (the
events above, Gemini AfterAgent, Codex Stop and notify) starts the detached
`ctxd chat refresh` that renders it, with facts, summaries and embeddings
(``ProjectMemory.refresh_later``). SessionStart injects what that render kept
when nothing changed since, else renders in process (docs/hooks.md).
- codex-notify (``agent-turn-complete``): record the turn's input messages and
  the last assistant message.
- Claude Code SessionStart, CwdChanged, FileChanged: also write the project's
  environment into ``$CLAUDE_ENV_FILE`` for its Bash tool
  (``ctxd.integrations.agent_env``).

A hook never fails the AI CLI: whatever goes wrong (bad JSON, no cwd, a bug),
it exits 0 having injected nothing, and the reason goes to the ctxd log file
with its traceback. A store that cannot take a write (held by another process
past ``HOOK_BUSY_SECONDS``, on a full disk, read-only, corrupt) loses nothing
either: what the hook was given is queued in the spool (``ctxd.memory.spool``,
redacted first), one line says so in the log, and the next writer stores it.
Gemini CLI reads stdout as JSON only, so for Gemini exactly one JSON object is
printed every time (``{}`` when there is nothing to add).

This module is on the hook's hot path: it imports nothing but the standard
library at the top, and never imports click (``ctxd._entry`` dispatches
``chat hook`` here before the click app is loaded).
"""

import json
import os
import sys

from ctxd.errors import CtxdError

TOOLS = ("claude", "gemini", "codex", "codex-notify")
USAGE = "usage: ctxd chat hook claude|gemini|codex  (payload on stdin) | ctxd chat hook codex-notify JSON"


class HookError(CtxdError):
    """A payload the hook cannot use: logged, never shown to the AI CLI."""


# -- helpers -------------------------------------------------------------------

def _sha(text):
    from ctxd.activation.fileio import sha256_hex

    return sha256_hex(text)


def _str(payload, key):
    v = payload.get(key)
    return v if isinstance(v, str) else ""


def _id(payload, key):
    """An id field as text (ids may come as numbers); "" when absent."""
    v = payload.get(key)
    if isinstance(v, bool):
        return ""
    return str(v) if isinstance(v, (str, int)) else ""


# A hook waits this long for another process's write lock, then queues what it was given
# in the spool (ctxd.memory.spool) instead; and spends at most this long storing what
# earlier hooks queued. The AI CLI waits for the hook: it must answer in well under a second.
HOOK_BUSY_SECONDS = 0.2
HOOK_REPLAY_SECONDS = 0.15


def _memory(payload, redact=True):
    """The memory of the project the payload's cwd is in."""
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not cwd.strip():
        raise HookError("the payload has no cwd")
    if not os.path.isdir(os.path.expanduser(cwd)):
        raise HookError(f"the payload's cwd {cwd} does not exist (nothing recorded for it)")
    from ctxd.memory.core import ProjectMemory

    return ProjectMemory.at(os.path.abspath(os.path.expanduser(cwd)), redact=redact,
                            busy_timeout=HOOK_BUSY_SECONDS, replay_limit=HOOK_REPLAY_SECONDS, render_later=True)


# Live records (prompts and responses seen by hooks, Codex notify) are provisional:
# an imported transcript is the record, tool calls and all. Claude's prompts share
# their dedup key with the importer; the Gemini and Codex importers key by record id
# or line, so after an import the live copies it now holds are deleted
# (ProjectMemory.reconcile_tool).

def _reconcile(mem, tool, session):
    return mem.reconcile_tool(tool, session)


def _record(mem, messages, tool=None, session=None):
    """Store the live records; for Codex, drop again at once a live record an imported
    transcript already holds. How many were added."""
    with mem.transaction():
        added = mem.record([dict(m) for m in messages], render=False)
        if added and tool == "codex":
            _reconcile(mem, tool, session)
    if added:
        mem.changed()
    return len(added)


def _import(mem, tool, path, session):
    """Import what the transcript gained (batch by batch: a long import never holds the lock)."""
    added, _malformed = mem.import_transcript(path, tool)
    gone = _reconcile(mem, tool, session) if added else 0
    if added or gone:
        mem.changed()


def _write(tool, payload, records=(), transcript=None, then=None, mem=None, turn_end=False):
    """Store *records*, then import *transcript*; *then(mem)* after that (its result returned);
    at the *turn_end*, the detached refresh started when there is work for it.

    When the store cannot take them now (busy past HOOK_BUSY_SECONDS, disk full, read-only,
    corrupt), what was not stored yet is queued in the spool (redacted) for the next writer,
    with one line in the log and on stderr; the hook still exits 0.
    """
    from ctxd.memory.store import StoreUnavailable

    session = _id(payload, "session_id")
    mem = mem or _memory(payload)
    try:
        with mem:
            if records:
                _record(mem, records, tool, session)
                records = ()
            if transcript:
                _import(mem, tool, transcript, session)
                transcript = None
            out = then(mem) if then else None
            if turn_end:
                mem.refresh_later()
            return out
    except StoreUnavailable as e:
        if not records and not transcript:
            raise  # all was stored; what failed after is only logged
        why = e
    _spool(mem, tool, payload, session, records, transcript, why)
    return None


def _spool(mem, tool, payload, session, records, transcript, why):
    from ctxd import boundary

    event = _str(payload, "hook_event_name") or tool
    try:
        path = mem.spool(tool, event, session, records, transcript)
    except OSError as e:
        raise HookError(f"{why.message}; queueing the {event} event failed too ({e})") from e
    boundary.log_line(f"chat hook {tool}: {event} queued in {path}, stored by the next write ({why.message})")
    boundary.say(f"ctxd: chat hook {tool}: {why.short}: {event} queued in {path}, stored by the next write")


# -- event handlers ---------------------------------------------------------------
# Each takes (tool, payload) and returns the JSON object to print, or None.

def on_session_start(tool, payload):
    # never creates a store just to read it; only reading: no redaction rules to compile
    import sqlite3

    from ctxd.memory.store import StoreBusy

    with _memory(payload, redact=False) as mem:
        try:
            text = mem.session_context(session=_id(payload, "session_id"))
        except (StoreBusy, sqlite3.OperationalError) as e:
            if not isinstance(e, StoreBusy) and "locked" not in str(e):
                raise
            # another process holds the store even against readers: context.md as last rendered
            text = mem.rendered_context()
            from ctxd import boundary

            boundary.log_line(f"chat hook {tool}: SessionStart: the store is busy ({e}); "
                              f"{'context.md as last rendered was injected' if text else 'nothing injected'}")
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}


def _prompt_key(tool, payload, session, text):
    """{"dedup": key} or {"dedup_nth": prefix}: the n-th identical prompt gets prefix + n, the
    first n not stored yet (ProjectMemory.record). Probing the keys (rather than comparing
    contents) counts the same prompt however it was stored, redacted or offloaded, by a hook
    or by an import; it happens when the prompt is stored, a spooled one included."""
    if tool == "claude":
        from ctxd.agents.claude import claude_prompt_dedup

        return {"dedup_nth": claude_prompt_dedup(session, text, "")}
    if tool == "codex":
        turn = _id(payload, "turn_id")
        if turn:
            # The key codex-notify gives the turn's first input message: one record, whichever runs.
            return {"dedup": f"codex:{session}:{turn}:user:0"}
    return {"dedup_nth": f"{tool}-hook:{session}:user:{_sha(text)[:32]}:"}


PROMPT_EVENT = {"claude": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent"}


def on_prompt(tool, payload):
    """Record the prompt as typed; return the earlier turns relevant to it (per-prompt recall)."""
    from ctxd.memory import items

    session = _id(payload, "session_id")
    # what the user typed: Gemini puts ctxd's own SessionStart context in front of it
    rec = items.user_record(_str(payload, "prompt"), session=session, source=tool, dedup=None)
    text = rec["content"]
    rec.update(_prompt_key(tool, payload, session, text), ts=rec.get("ts") or _now())
    extra = _write(tool, payload, [rec],
                   then=lambda mem: mem.prompt_context(session, text) if rec["kind"] == "prompt" else "")
    if not extra:
        return None
    return {"hookSpecificOutput": {"hookEventName": PROMPT_EVENT[tool], "additionalContext": extra}}


def on_gemini_response(tool, payload):
    response = _str(payload, "prompt_response")
    session = _id(payload, "session_id")
    key = f"gemini-hook:{session}:{_sha(_str(payload, 'prompt') + chr(0) + response)[:32]}"
    _write(tool, payload, [dict(kind="reply", content=response, session=session, source=tool, dedup=key,
                                ts=_now())], turn_end=True)
    return None


def _now():
    import time

    return time.time()


def on_transcript(tool, payload):
    path = payload.get("transcript_path")
    path = os.path.expanduser(path) if isinstance(path, str) and path else ""
    if not path or not os.path.exists(path):
        # Claude Code can fire Stop before it has written the transcript: nothing yet, not an error;
        # what the turn's prompt stored is still rendered
        with _memory(payload) as mem:
            mem.refresh_later()
        return None
    if not os.path.isfile(path):
        raise HookError(f"the transcript {path} is not a file")
    _write(tool, payload, transcript=path, turn_end=True)
    return None


def on_codex_stop(tool, payload):
    """Codex runs Stop before the rollout holds the end of the turn (its last answer is
    written, and the turn closed, after the hook): the importer waits for that, so the
    answer is recorded from the payload's ``last_assistant_message`` under the key that
    notify and the rollout importer give a turn's last answer; then the rollout is read."""
    session, turn = _id(payload, "session_id"), _id(payload, "turn_id")
    last = _str(payload, "last_assistant_message")
    if session and turn and last.strip():
        _write(tool, payload, [dict(kind="reply", content=last, session=session, source=tool, ts=_now(),
                                    dedup=f"codex:{session}:{turn}:assistant")])
    return on_transcript(tool, payload)


EVENTS = {
    "claude": {
        "SessionStart": on_session_start,
        "UserPromptSubmit": on_prompt,
        "Stop": on_transcript,
        "SubagentStop": on_transcript,
        "PreCompact": on_transcript,
        "SessionEnd": on_transcript,
    },
    "gemini": {
        "SessionStart": on_session_start,
        "BeforeAgent": on_prompt,
        "AfterAgent": on_gemini_response,
        "PreCompress": on_transcript,
        "SessionEnd": on_transcript,
    },
    "codex": {
        "SessionStart": on_session_start,
        "UserPromptSubmit": on_prompt,
        "Stop": on_codex_stop,
        "PreCompact": on_transcript,
    },
}


# Claude Code's events that hand the hook a CLAUDE_ENV_FILE (ctxd.integrations.agent_env)
ENV_EVENTS = {"claude": ("SessionStart", "CwdChanged", "FileChanged")}


def handle(tool, payload):
    """Run the handler for the payload's event; the JSON object to print, or None."""
    if not isinstance(payload, dict):
        raise HookError(f"the payload is a JSON {type(payload).__name__}, not an object")
    event = payload.get("hook_event_name")
    fn = EVENTS[tool].get(event) if isinstance(event, str) else None
    if isinstance(event, str) and event in ENV_EVENTS.get(tool, ()):
        return _with_agent_env(tool, event, payload, fn)
    if fn is None:
        if not isinstance(event, str):
            raise HookError("the payload has no hook_event_name")
        return None  # an event ctxd does not use
    return fn(tool, payload)


def _with_agent_env(tool, event, payload, fn):
    """The project's environment into $CLAUDE_ENV_FILE, then the event's own handler; a
    failure of either leaves the other's work (and output) standing. Each failure is
    logged; stderr gets one line (the handler's when both failed)."""
    from ctxd.integrations import agent_env

    env_line = None
    try:
        extra = agent_env.update(payload)
    except (Exception, KeyboardInterrupt) as e:
        extra = None
        env_line = _env_fail(tool, e)
    out = None
    if fn is not None:
        try:
            out = fn(tool, payload)
        except (Exception, KeyboardInterrupt) as e:
            env_line = None
            _fail(tool, e)
    if env_line:
        from ctxd.boundary import say

        say(env_line)
    return agent_env.merge(out, extra, event)


def _env_fail(tool, exc):
    """Log why the env file was left as it was; the stderr line to show (Claude Code shows a
    hook's stderr in its debug output only: a hook that exits 0 never disturbs the session)."""
    from ctxd.boundary import LINE_REASON_MAX, failure

    f = failure(exc, f"chat hook {tool}: CLAUDE_ENV_FILE", log=True)
    return (f"ctxd: chat hook {tool}: the Bash tool's environment was left as it was "
            f"({f.reason[:LINE_REASON_MAX]}){f'; see {f.log_path}' if f.log_path else ''}")


def _is_title_turn(inputs, last):
    """Codex Desktop asks the model for the task's UI title in a turn of its own: one instruction,
    answered with a JSON object holding only a title. Not part of the conversation."""
    try:
        answer = json.loads(last) if last.lstrip().startswith("{") else None
    except ValueError:
        answer = None
    return (isinstance(answer, dict) and set(answer) == {"title"} and isinstance(answer["title"], str)
            and len(inputs) == 1 and "title" in inputs[0].lower())


def _new_inputs(mem, thread, turn, inputs):
    """The input messages this turn added. ``codex exec resume`` (and the TUI after a resume) list
    every prompt of the thread in each turn's input-messages: a leading run of them that is the end
    of what earlier turns of the thread stored is dropped; the last message always stays."""
    if len(inputs) < 2 or not mem.exists():
        return inputs
    own = f"codex:{thread}:{turn}:"
    earlier = [m.content for m in mem.iter_all(session=thread)
               if m.kind == "prompt" and not (m.dedup or "").startswith(own)]
    if not earlier:
        return inputs
    redactor = getattr(mem.store(), "redactor", None)
    stored = [redactor(m)[0] if redactor is not None else m for m in inputs]
    for p in range(min(len(inputs) - 1, len(earlier)), 0, -1):
        if stored[:p] == earlier[-p:]:
            return inputs[p:]
    return inputs


def codex_notify(args):
    """Codex's ``notify`` program: one JSON argument, ``agent-turn-complete`` records the turn.

    The payload of Codex's own docs has no thread-id and no cwd: the turn is then filed under
    the session "codex" in the project of the working directory Codex runs notify in.
    """
    if not args:
        raise HookError("codex-notify needs the JSON payload as its argument")
    payload = json.loads(args[-1])
    if not isinstance(payload, dict):
        raise HookError(f"the payload is a JSON {type(payload).__name__}, not an object")
    if payload.get("type") != "agent-turn-complete":
        return None
    thread, turn = _id(payload, "thread-id") or "codex", _id(payload, "turn-id")
    if not turn:
        raise HookError("the payload has no turn-id")
    if not _str(payload, "cwd").strip():
        payload = dict(payload, cwd=os.getcwd())
    inputs = []
    raw = payload.get("input-messages")
    for m in raw if isinstance(raw, list) else []:
        if isinstance(m, dict):  # tolerate {"text": ...} items should Codex send them
            m = m.get("text") if isinstance(m.get("text"), str) else m.get("content")
        if isinstance(m, str):
            inputs.append(m)
    last = _str(payload, "last-assistant-message")
    if _is_title_turn(inputs, last):
        return None
    from ctxd.memory.store import StoreUnavailable

    mem = _memory(payload)
    try:
        inputs = _new_inputs(mem, thread, turn, inputs)
    except StoreUnavailable:
        pass  # unreadable now: every input is queued (its keys keep a stored one from doubling)
    now = _now()
    messages = [dict(kind="prompt", content=m, session=thread, source="codex", ts=now,
                     dedup=f"codex:{thread}:{turn}:user:{i}") for i, m in enumerate(inputs)]
    messages.append(dict(kind="reply", content=last, session=thread, source="codex", ts=now,
                         dedup=f"codex:{thread}:{turn}:assistant"))
    _write("codex", dict(payload, session_id=thread, hook_event_name="agent-turn-complete"), messages, mem=mem,
           turn_end=True)
    return None


# -- the process ------------------------------------------------------------------

def _read_payload():
    if sys.stdin is None or sys.stdin.isatty():
        raise HookError("no payload on stdin (the AI CLI runs this command with its hook JSON on stdin)")
    raw = sys.stdin.buffer.read()
    if not raw.strip():
        raise HookError("empty stdin: no hook payload")
    try:
        return json.loads(raw)
    except ValueError as e:
        raise HookError(f"the payload is not JSON ({e})") from e


def _emit(obj):
    try:
        sys.stdout.buffer.write((json.dumps(obj, ensure_ascii=True) + "\n").encode("ascii"))
        sys.stdout.flush()
    except (BrokenPipeError, OSError, ValueError):
        pass


def _fail(tool, exc):
    """Log why (one line plus the traceback) and say so in one short stderr line (ctxd.boundary)."""
    from ctxd.boundary import hook_exit

    return hook_exit(exc, tool)


def main(argv=None):
    """Run one hook; always returns 0 (the AI CLI must never fail because of ctxd)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    tool = argv[0] if argv else ""
    out = None
    try:
        if tool == "codex-notify":
            out = codex_notify(argv[1:])
        elif tool in EVENTS:
            out = handle(tool, _read_payload())
        else:
            raise HookError(f"unknown tool {tool!r}; {USAGE}")
    except (Exception, KeyboardInterrupt) as e:
        out = None
        _fail(tool or "?", e)
    if tool == "gemini":
        _emit(out if isinstance(out, dict) else {})
    elif out is not None:
        _emit(out)
    return 0
