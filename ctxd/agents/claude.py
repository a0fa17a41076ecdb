"""Claude Code: its transcripts (``~/.claude/projects/*/*.jsonl``: content blocks (text, tool_use,
tool_result) as typed records; prompts get :func:`claude_prompt_dedup` keys so the
UserPromptSubmit hook and an import store a prompt once), its hooks (``.claude/settings.json``,
and the personal ``settings.local.json``), which also write the project's environment for its
Bash tool (``ctxd.integrations.agent_env``), and the ``@`` import in CLAUDE.md."""

import os
import re

from ctxd.agents.base import AgentTool, Evidence, Malformed, ParseCursor
from ctxd.agents.common import (as_subagent, call_record, dumps, json_lines, json_object, lines, record,
                                result_record, sha, text_parts, timestamp, user_record, with_env)


def claude_prompt_dedup(session, text, k):
    """The dedup key of the *k*-th (1-based) occurrence of prompt *text* in Claude session *session*.

    Shared by the transcript importer and the UserPromptSubmit hook, so a prompt
    the hook recorded is not stored again when the transcript is imported. The
    text is compared with surrounding whitespace stripped.
    """
    return f"claude:{session}:prompt:{sha(text.strip())[:16]}:{k}"



def _prompt_text(content):
    """The text of a plain user prompt, or None when the line carries tool results."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return None
        return text_parts(content, types=("text",))
    return None


_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)


def _slash_command(text):
    """(what the user typed, name, args) of the line Claude Code writes for a slash command
    (``<command-message>``/``<command-name>``/``<command-args>``), or None: ``/name args``, the
    text its UserPromptSubmit hook sends, so the hook's record and the import share one key."""
    m = _COMMAND_NAME.search(text) if "<command-name>" in text else None
    if not m or not text.lstrip().startswith(("<command-name>", "<command-message>", "<command-args>")):
        return None
    name = m.group(1).strip()
    if not name:
        return None
    name = name if name.startswith("/") else "/" + name
    a = _COMMAND_ARGS.search(text)
    args = a.group(1).strip() if a else ""
    return f"{name} {args}".strip(), name, args


def _user_line_record(text, sid, ts, counts):
    """The record of a user line's text: its key counts the occurrences of what the user typed."""
    slash = _slash_command(text)
    typed = slash[0] if slash else text
    key = (sid, sha(typed.strip()))
    counts[key] = counts.get(key, 0) + 1
    dedup = claude_prompt_dedup(sid, typed, counts[key])
    if slash:
        return record("meta", typed, sid, "claude", dedup, ts, subtype="slash_command",
                      data={"command": slash[1], "args": slash[2]})
    return user_record(text, sid, "claude", dedup, ts)


def _result_text(block):
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
        text = dumps(c)
    return text


_TOOL_USE = re.compile(rb'"type"\s*:\s*"tool_use"\s*,\s*"id"\s*:\s*"([^"\\]+)"\s*,\s*"name"\s*:\s*"([^"\\]+)"')
_TIMESTAMP = re.compile(rb'"timestamp"\s*:\s*"([^"\\]+)"')
_UUID = re.compile(rb'"uuid"\s*:\s*"([^"\\]+)"')


def _seen_before_start(f, cursor):
    """What an incremental import needs to know of the lines before cursor.start: how often each
    prompt occurred, the names of the tools called (tool_use id -> name) and when each line
    happened (uuid -> time, for session titles).

    Only lines that can be prompts are parsed: a user line (``"type":"user"``)
    without a tool result (an unescaped ``"tool_use_id"`` key only occurs in one);
    tool names and times are read off the raw line.
    """
    user = re.compile(rb'"type"\s*:\s*"user"')
    sidechains = _is_subagent_file(cursor.path)
    counts, names, times = {}, {}, {}
    scan = ParseCursor(cursor.path)
    for n, raw in lines(f, scan, start=0, line_no=1, end=cursor.start):
        if b'"tool_use"' in raw:
            for m in _TOOL_USE.finditer(raw):
                names[m.group(1).decode("utf-8", "replace")] = m.group(2).decode("utf-8", "replace")
        if b'"uuid"' in raw:
            u, t = _UUID.search(raw), _TIMESTAMP.search(raw)
            if u and t:
                times[u.group(1).decode("utf-8", "replace")] = timestamp(t.group(1).decode("utf-8", "replace"))
        if b'"tool_use_id"' in raw or not user.search(raw):
            continue
        obj = json_object(n, raw)
        if isinstance(obj, Malformed) or obj.get("type") != "user" or obj.get("isMeta") or \
                (obj.get("isSidechain") and not sidechains):
            continue
        if obj.get("isCompactSummary"):
            continue
        msg = obj.get("message")
        text = _prompt_text(msg.get("content")) if isinstance(msg, dict) else None
        if text and text.strip():
            sid = obj.get("sessionId") if isinstance(obj.get("sessionId"), str) and obj.get("sessionId") else \
                cursor.default_session
            slash = _slash_command(text)
            key = (sid, sha((slash[0] if slash else text).strip()))
            counts[key] = counts.get(key, 0) + 1
    return counts, names, times


def parse_claude(f, cursor):
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
    counts, names, times = _seen_before_start(f, cursor) if cursor.start > 0 else ({}, {}, {})
    sidechains = _is_subagent_file(cursor.path)
    for rec in _transcript_records(f, cursor, counts, names, times, sidechains):
        if sidechains and isinstance(rec, dict):
            as_subagent(rec)
        yield rec


def _is_subagent_file(path):
    """A sub-agent's own transcript: agent-*.jsonl (in subagents/ since Claude Code 2.1)."""
    base = os.path.basename(path)
    return base.startswith("agent-") or os.path.basename(os.path.dirname(path)) == "subagents"


def _transcript_records(f, cursor, counts, names, times, sidechains):
    for n, obj in json_lines(f, cursor):
        if isinstance(obj, Malformed):
            yield obj
            continue
        kind = obj.get("type")
        sid = obj.get("sessionId") if isinstance(obj.get("sessionId"), str) and obj.get("sessionId") else \
            cursor.default_session
        ts = timestamp(obj.get("timestamp"))
        if isinstance(obj.get("uuid"), str) and ts is not None:
            times[obj["uuid"]] = ts
        if kind == "summary":
            text = obj.get("summary")
            if not isinstance(text, str):
                yield Malformed(n, "a summary without text")
            elif text.strip():
                leaf = obj.get("leafUuid") if isinstance(obj.get("leafUuid"), str) else None
                # a title line has no time of its own: it names the session as of its leaf message
                yield record("summary", text, sid, "claude", f"claude:{sid}:summary:{leaf or sha(text)[:16]}",
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
                text = _prompt_text(content) or ""
                if text.strip():
                    yield record("summary", text, sid, "claude", f"{base}:0", ts, subtype="compaction")
                continue
            text = _prompt_text(content)
            if text is not None:
                if text.strip():
                    yield with_env(_user_line_record(text, sid, ts, counts), obj.get("cwd"), obj.get("gitBranch"))
                continue
            for i, b in enumerate(content):
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "tool_result":
                    cid = b.get("tool_use_id") if isinstance(b.get("tool_use_id"), str) else None
                    text = _result_text(b)
                    if text.strip() or b.get("is_error") is True:
                        yield result_record(text, sid, "claude", f"{base}:{i}", ts, tool=names.get(cid), call_id=cid,
                                            is_error=b.get("is_error") is True)
                elif b.get("type") == "text" and isinstance(b.get("text"), str) and b["text"].strip():
                    yield user_record(b["text"], sid, "claude", f"{base}:{i}", ts)
            continue
        # assistant
        if isinstance(content, str):
            if content.strip():
                yield record("reply", content, sid, "claude", f"{base}:0", ts)
            continue
        for i, b in enumerate(content):
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t == "text" and isinstance(b.get("text"), str) and b["text"].strip():
                yield record("reply", b["text"], sid, "claude", f"{base}:{i}", ts)
            elif t == "tool_use":
                cid = b.get("id") if isinstance(b.get("id"), str) and b.get("id") else None
                name = b.get("name") if isinstance(b.get("name"), str) else None
                if cid:
                    names[cid] = name
                yield call_record(name, b.get("input", {}), sid, "claude", f"{base}:{i}", ts, call_id=cid)
            # thinking, redacted_thinking, images: not kept


class Claude(AgentTool):
    name = "claude"
    label = "Claude Code"
    settings_dir = ".claude"
    settings_file = "settings.json"
    personal_file = "settings.local.json"  # personal, uncommitted: the default project scope
    home_env = "CLAUDE_CONFIG_DIR"
    # (event, matcher or None); timeouts in seconds. CwdChanged and FileChanged (and SessionStart)
    # write the project's environment into $CLAUDE_ENV_FILE for the Bash tool (agent_env);
    # FileChanged has no matcher: it fires for the paths the hook returns as watchPaths.
    hook_events = (("SessionStart", "startup|resume|clear|compact"), ("UserPromptSubmit", None), ("Stop", None),
                   ("PreCompact", None), ("SessionEnd", None), ("CwdChanged", None), ("FileChanged", None))
    hook_timeout = 30
    hook_handlers = {
        "SessionStart": "on_session_start",
        "UserPromptSubmit": "on_prompt",
        "Stop": "on_transcript",
        "SubagentStop": "on_transcript",
        "PreCompact": "on_transcript",
        "SessionEnd": "on_transcript",
    }
    env_events = ("SessionStart", "CwdChanged", "FileChanged")  # they hand the hook a CLAUDE_ENV_FILE

    def sniff_line(self, obj, n):
        kind = obj.get("type")
        if kind in ("user", "assistant") and isinstance(obj.get("message"), dict):
            return Evidence.MARK
        if kind == "summary" and "summary" in obj:
            return Evidence.MARK
        if kind == "file-history-snapshot" or ("sessionId" in obj and "uuid" in obj and "parentUuid" in obj):
            return Evidence.MARK
        return None

    def parse(self, source, cursor):
        return parse_claude(source, cursor)

    def prompt_key(self, payload, session, text):
        return {"dedup_nth": claude_prompt_dedup(session, text, "")}

    def hook_problems(self, installed, root, environ):
        """An install from before the Bash tool's environment (CwdChanged, FileChanged) lacks hooks."""
        have = {e for _s, _p, entries in installed for e, _g, _h in entries}
        missing = [e for e, _m in self.hook_events if e not in have]
        if not missing:
            return [], None
        problem = (f"ctxd's {', '.join(missing)} hook{'s are' if len(missing) > 1 else ' is'} not "
                   f"installed (an older ctxd installed these hooks), so "
                   + ("the Bash tool does not follow the project's environment"
                      if {"CwdChanged", "FileChanged"} & set(missing) else "part of the session is not recorded"))
        scope = "--user" if all(s == "user" for s, _p, _e in installed) else ""
        return [problem], f"ctxd chat install claude {scope}".strip() + "   (adds what is missing; your entries stay)"

    def context_pointer(self, intro, context_md, relative):
        """An ``@path`` import line: Claude Code imports relative and absolute paths (not inside
        code blocks). A file outside the directory Claude starts in is an "external import":
        Claude asks once per project, in an interactive session, whether to allow those
        (``claude -p`` never asks); a context.md inside the project needs no approval."""
        target = relative or context_md
        # Claude reads a backslash-escaped space as part of the path
        return [f"{intro}:", "@" + target.replace(" ", "\\ ")], [] if relative else [
            "Claude Code asks once per project whether to allow imports from outside it (answer yes in an "
            "interactive session; `claude -p` does not ask)"]
