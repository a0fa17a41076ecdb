"""The AI CLI hook driver: ``ctxd chat hook claude|codex|gemini|codex-notify``.

Claude Code, Gemini CLI and Codex run these as hook commands: a JSON payload
on stdin (Codex's ``notify`` program gets it as its one argument instead).
The project is found from the payload's ``cwd``. Which event does what is the
tool's: its ``AgentTool`` (``ctxd/agents/``, the one tool module the hook
loads) maps events to its handlers, which are made of the steps here:

- SessionStart: inject the project's context (at most ``HOOK_CONTEXT_CHARS``
  characters) as ``hookSpecificOutput.additionalContext``; nothing when the
  store is empty.
- a submitted prompt (Claude/Codex UserPromptSubmit, Gemini BeforeAgent):
  record it as a user message (the key is the tool's ``prompt_key``).
- Gemini AfterAgent: record the response as an assistant message.
- end of turn / compaction / end of session (Stop, SubagentStop, PreCompact,
  SessionEnd; Gemini PreCompress, SessionEnd): import what the transcript
  gained since the last import.
- codex-notify (``agent-turn-complete``; ``ctxd chat hook <tool>-notify`` runs
  the tool's ``on_notify``): record the turn's input messages and the last
  assistant message.
- the tool's ``env_events`` (Claude Code SessionStart, CwdChanged,
  FileChanged): also write the project's environment into ``$CLAUDE_ENV_FILE``
  for its Bash tool (``ctxd.integrations.agent_env``).

No hook renders context.md: a change marks it stale, and the end of a turn (the
events above, Gemini AfterAgent, Codex Stop and notify) starts the detached
`ctxd chat refresh` that renders it, with facts, summaries and embeddings
(``ProjectMemory.refresh_later``). SessionStart injects what that render kept
when nothing changed since, else renders in process (docs/hooks.md).

A hook never fails the AI CLI: whatever goes wrong (bad JSON, no cwd, a bug),
it exits 0 having injected nothing, and the reason goes to the ctxd log file
with its traceback. A store that cannot take a write (held by another process
past ``HOOK_BUSY_SECONDS``, on a full disk, read-only, corrupt) loses nothing
either: what the hook was given is queued in the spool (``ctxd.memory.ingest.spool``,
redacted first), one line says so in the log, and the next writer stores it.
A tool that reads stdout as JSON only (``json_stdout``: Gemini CLI) gets exactly
one JSON object every time (``{}`` when there is nothing to add).

This module is on the hook's hot path: it imports nothing but the standard
library and the tools' registry (``ctxd.agents``) at the top, and never imports
click (``ctxd._entry`` dispatches ``chat hook`` here before the click app is
loaded).
"""

import json
import os
import sys

from ctxd.agents import AI_CLIS, ai_cli
from ctxd.agents.base import HookError, payload_id, payload_text

USAGE = (f"usage: ctxd chat hook {'|'.join(AI_CLIS)}  (payload on stdin) | ctxd chat hook TOOL-notify JSON "
         f"(a notify program's payload)")


# A hook waits this long for another process's write lock, then queues what it was given
# in the spool (ctxd.memory.ingest.spool) instead; and spends at most this long storing what
# earlier hooks queued. The AI CLI waits for the hook: it must answer in well under a second.
HOOK_BUSY_SECONDS = 0.2
HOOK_REPLAY_SECONDS = 0.15


def project_memory(payload, redact=True):
    """The memory of the project the payload's cwd is in."""
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not cwd.strip():
        raise HookError("the payload has no cwd")
    if not os.path.isdir(os.path.expanduser(cwd)):
        raise HookError(f"the payload's cwd {cwd} does not exist")
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


def _record(mem, messages, tool, session=None):
    """Store the live records; for a tool that asks for it (``reconcile_on_record``), drop
    again at once a live record an imported transcript already holds. How many were added."""
    with mem.transaction():
        added = mem.record([dict(m) for m in messages], render=False)
        if added and tool.reconcile_on_record:
            _reconcile(mem, tool, session)
    if added:
        mem.changed()
    return len(added)


def _import(mem, tool, path, session):
    """Import what the transcript gained (batch by batch: a long import never holds the lock)."""
    added, _malformed = mem.import_transcript(path, tool.name)
    gone = _reconcile(mem, tool, session) if added else 0
    if added or gone:
        mem.changed()


def write(tool, payload, records=(), transcript=None, then=None, mem=None, turn_end=False):
    """Store *records*, then import *transcript*; *then(mem)* after that (its result returned);
    at the *turn_end*, the detached refresh started when there is work for it.

    When the store cannot take them now (busy past HOOK_BUSY_SECONDS, disk full, read-only,
    corrupt), what was not stored yet is queued in the spool (redacted) for the next writer,
    with one line in the log and on stderr; the hook still exits 0.
    """
    from ctxd.memory.store.errors import StoreUnavailable

    session = payload_id(payload, "session_id")
    mem = mem or project_memory(payload)
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

    event = payload_text(payload, "hook_event_name") or tool.name
    try:
        path = mem.spool(tool.name, event, session, records, transcript)
    except OSError as e:
        raise HookError(f"{why.message}; queueing the {event} event failed too ({e})") from e
    boundary.log_line(f"chat hook {tool.name}: {event} queued in {path}, stored by the next write ({why.message})")
    boundary.say(f"ctxd: chat hook {tool.name}: {why.short}: {event} queued in {path}, stored by the next write")


# -- the steps of the tools' hook handlers -------------------------------------------
# Each takes (tool, payload): the AgentTool and the payload, and returns the JSON object to print,
# or None.

def on_session_start(tool, payload):
    # never creates a store just to read it; only reading: no redaction rules to compile
    import sqlite3

    from ctxd.memory.store.errors import StoreBusy

    with project_memory(payload, redact=False) as mem:
        try:
            text = mem.session_context(session=payload_id(payload, "session_id"))
        except (StoreBusy, sqlite3.OperationalError) as e:
            if not isinstance(e, StoreBusy) and "locked" not in str(e):
                raise
            # another process holds the store even against readers: context.md as last rendered
            text = mem.rendered_context()
            from ctxd import boundary

            boundary.log_line(f"chat hook {tool.name}: SessionStart: the store is busy ({e}); "
                              f"{'context.md as last rendered was injected' if text else 'nothing injected'}")
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}


def on_prompt(tool, payload):
    """Record the prompt as typed; return the earlier turns relevant to it (per-prompt recall)."""
    from ctxd.memory.store import items

    session = payload_id(payload, "session_id")
    # what the user typed: Gemini puts ctxd's own SessionStart context in front of it
    rec = items.user_record(payload_text(payload, "prompt"), session=session, source=tool.name, dedup=None)
    text = rec["content"]
    rec.update(tool.prompt_key(payload, session, text), ts=rec.get("ts") or _now())
    extra = write(tool, payload, [rec],
                  then=lambda mem: mem.prompt_context(session, text) if rec["kind"] == "prompt" else "")
    if not extra:
        return None
    # the prompt's event (Claude and Codex: UserPromptSubmit, Gemini: BeforeAgent)
    return {"hookSpecificOutput": {"hookEventName": payload["hook_event_name"], "additionalContext": extra}}


def _now():
    import time

    return time.time()


def on_transcript(tool, payload):
    path = payload.get("transcript_path")
    path = os.path.expanduser(path) if isinstance(path, str) and path else ""
    if not path or not os.path.exists(path):
        # Claude Code can fire Stop before it has written the transcript: nothing yet, not an error;
        # what the turn's prompt stored is still rendered
        with project_memory(payload) as mem:
            mem.refresh_later()
        return None
    if not os.path.isfile(path):
        raise HookError(f"the transcript {path} is not a file")
    write(tool, payload, transcript=path, turn_end=True)
    return None


def handle(tool, payload):
    """Run *tool*'s handler for the payload's event; the JSON object to print, or None."""
    if not isinstance(payload, dict):
        raise HookError(f"the payload is a JSON {type(payload).__name__}, not an object")
    event = payload.get("hook_event_name")
    name = tool.hook_handlers.get(event) if isinstance(event, str) else None
    fn = getattr(tool, name) if name else None
    if isinstance(event, str) and event in tool.env_events:
        return _with_agent_env(tool, event, payload, fn)
    if fn is None:
        if not isinstance(event, str):
            raise HookError("the payload has no hook_event_name")
        return None  # an event ctxd does not use
    return fn(_DRIVER, payload)


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
            out = fn(_DRIVER, payload)
        except (Exception, KeyboardInterrupt) as e:
            env_line = None
            _fail(tool.name, e)
    if env_line:
        from ctxd.boundary import say

        say(env_line)
    return agent_env.merge(out, extra, event)


def _env_fail(tool, exc):
    """Log why the env file was left as it was; the stderr line to show (Claude Code shows a
    hook's stderr in its debug output only: a hook that exits 0 never disturbs the session)."""
    from ctxd.boundary import LINE_REASON_MAX, failure

    f = failure(exc, f"chat hook {tool.name}: CLAUDE_ENV_FILE", log=True)
    return (f"ctxd: chat hook {tool.name}: the Bash tool's environment was left as it was "
            f"({f.reason[:LINE_REASON_MAX]}){f'; see {f.log_path}' if f.log_path else ''}")


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


def _tool(word):
    """(the AgentTool, whether *word* runs its notify program: ``<name>-notify``); only that
    tool's module is loaded."""
    tool = ai_cli(word)
    if tool is not None:
        return tool, False
    name, _, command = word.partition("-")
    tool = ai_cli(name) if command == "notify" else None
    if tool is None or not tool.notify_config:
        raise HookError(f"unknown tool {word!r}; {USAGE}")
    return tool, True


def main(argv=None):
    """Run one hook; always returns 0 (the AI CLI must never fail because of ctxd)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    word = argv[0] if argv else ""
    tool = out = None
    try:
        tool, notify = _tool(word)
        out = tool.on_notify(_DRIVER, argv[1:]) if notify else handle(tool, _read_payload())
    except (Exception, KeyboardInterrupt) as e:
        out = None
        _fail(word or "?", e)
    if tool is not None and tool.json_stdout and word == tool.name:
        _emit(out if isinstance(out, dict) else {})
    elif out is not None:
        _emit(out)
    return 0


_DRIVER = sys.modules[__name__]  # what a tool's hook handlers get: this module
