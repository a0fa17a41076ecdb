"""Where a coding session ended, for its handoff: what the record supports, nothing else.

A session is a coding session when its agent used tools (its session memory has files,
commands, commits or todos: ``ctxd.memory.context.session``; or it holds tool calls at all). Its end state is

- ``last_request``: the last request the human typed (``provenance`` human);
- ``in_progress`` / ``open_todos`` / ``done_todos``: from the *last* todo list
  (TodoWrite, update_plan, write_todos), by status;
- ``last_report``: the start of the main agent's last reply, its narration left out;
- ``commits``: commit subjects, oldest first; ``open_errors``: commands whose last run
  still failed;
- ``cwd`` / ``git_branch``: what the session's transcript recorded (on its prompts), not
  the shell that runs ``ctxd handoff``.
"""

import re

from ctxd.memory.context import facts as facts_mod

REPORT_CHARS = 300
_DONE = ("completed", "done", "cancelled", "canceled")


def cut(text, limit):
    """*text* on one line, at most *limit* characters, cut at a sentence or word boundary
    (never inside a word) and marked with … when cut."""
    t = " ".join(str(text).split())
    if len(t) <= limit:
        return t
    head = t[:limit - 1]
    for stop in (". ", "。", "! ", "? ", "；", "; "):
        i = head.rfind(stop)
        if i >= limit // 2:
            return head[:i + len(stop)].rstrip() + " …"
    if re.search(r"[\u3000-\u9fff]", head[-1:]):
        return head + "…"  # CJK: a character is a word
    i = head.rfind(" ")
    return (head[:i] if i > 0 else head).rstrip(" ,;:—-") + "…"


def recorded_env(messages):
    """(cwd, git branch) the session's transcript recorded on its newest prompt, or (None, None)."""
    for m in reversed(messages):
        d = m.data if isinstance(m.data, dict) else None
        if m.kind == "prompt" and d and isinstance(d.get("cwd"), str) and d["cwd"]:
            return d["cwd"], d.get("git_branch") or None
    return None, None


_MARKUP = re.compile(r"\*\*|__|`{3}.*|^#+\s*|^\s*[-*+]\s+|^\s*\d+[.)]\s+")


def report_start(text, limit=REPORT_CHARS):
    """The start of an assistant report in prose: headings' words kept, tables, code blocks,
    markdown marks and narration ("Let me…") left out."""
    lines, fenced = [], False
    for line in (text or "").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.lstrip().startswith("|") or not line.strip():
            continue
        line = _MARKUP.sub("", line.strip()).strip()
        if line:
            lines.append(line if line.endswith((".", ":", "!", "?", "。", "：")) else line + ".")
    said = [s for s in facts_mod.sentences(" ".join(lines)) if not facts_mod.is_narration(s)]
    return cut(" ".join(said), limit) if said else ""


def end_state(store, session, root, messages):
    """The end state of *session* (see the module), or None when it is no coding session.
    *messages*: the session's stored items (Store.iter_all), oldest first."""
    from ctxd.memory.context import session as session_mod, session_text

    mem = session_mod.session_memory(store, root, session=session, decisions=False)
    if not (mem.files or mem.commands or mem.commits or mem.todos or any(m.kind == "tool_call" for m in messages)):
        return None
    typed = [m for m in messages if m.kind == "prompt" and getattr(m, "provenance", "human") in ("human", "", None)]
    last = next((m.content for m in reversed(typed) if session_text.is_substantive(m.content)), None)
    report = ""
    for m in reversed(messages):
        if m.kind == "reply" and getattr(m, "provenance", "agent") in ("agent", "", None):
            report = report_start(m.content)
            if report:
                break
    cwd, branch = recorded_env(messages)
    errors = [c for c, fix in mem.errors if fix is None and not c.stopped]
    return {
        "last_request": cut(last, 300) if last else None,
        "in_progress": [cut(t, 200) for t, s in mem.todos if s == "in_progress"],
        "open_todos": [cut(t, 200) for t, s in mem.todos if s not in _DONE and s != "in_progress"],
        "done_todos": [cut(t, 200) for t, s in mem.todos if s in ("completed", "done")],
        "last_report": report or None,
        "commits": [cut(c, 160) for c in mem.commits][-10:],
        "open_errors": [cut(session_mod.command_line(c), 200) for c in errors][-5:],
        "files": [p for p, _n in mem.files[:10]],
        "cwd": cwd,
        "git_branch": branch,
    }
