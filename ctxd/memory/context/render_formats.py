"""An assembled context (``ctxd.memory.context.engine.Context``) as text: plain, markdown (what
``ctxd context`` prints and context.md's body), chat messages (``--format json``), and the
decision explained (``--explain``).

Every format is cut to the context's budget (``fit``): a hard cap, counted with
tokens.ceiling (exact with the tokens extra, never low without it). The facts and the session
memory are shown in the 9-part layout (``session_memory``; session.SECTIONS).
"""

import json
import re

from ctxd.memory.context import facts as facts_mod
from ctxd.memory.store import origin as origin_mod
from ctxd.memory.context import session as session_mod, session_text
from ctxd.memory.context.engine import PER_MESSAGE
from ctxd.memory.text.tokens import ceiling, estimate

TITLES = {"system": "Project instructions", "task": "Current task (working memory)",
          "shared_tasks": "Open tasks on other machines (received through ctxd sync; not this machine's task)",
          "facts": "Facts to keep (current values; newer statements win)",
          "memory": "Session memory (from the session's events)",
          "summary": "Summary of earlier turns", "query": "Relevant earlier turns"}


def _label(m):
    who = origin_mod.of(m)
    role = {"tool_call": "assistant (tool)", "summary": "summary"}.get(m.kind or "", m.role)
    return f"{role} ({who})" if who else role


def _shown(m):
    """A recent turn's text as shown: a tool call as its one readable line, terminal escape
    sequences out."""
    if m.kind == "tool_call":
        return session_mod.call_line(m.tool or "tool", m.content, m.data)
    return session_text.strip_ansi(m.content)


def fit(ctx, build):
    """build(recent, per_section) within ctx.budget tokens, counted with tokens.ceiling (exact when
    the tokens extra is installed, never low otherwise). What goes first: the oldest recent turns
    down to the last 2, then the tail of the longest memory sections, then the last 2 turns, then
    lines from the end. A hard cap: the text returned never counts more than the budget."""
    exact = getattr(ctx, "exact", True)
    budget = ctx.budget or 0
    recent = list(ctx.recent)
    text = build(recent, None)
    if not budget:
        return text

    loaded = [not exact]

    def over(t):
        # Loading the exact tokenizer costs ~25 ms: until a text's safe estimate says it may be
        # over, that estimate decides; from then on the exact count (cheaper than the estimate).
        if not loaded[0]:
            rough = ceiling(t, exact=False)
            if rough <= budget:
                return rough - budget
            loaded[0] = True
        return ceiling(t, exact=exact) - budget

    while over(text) > 0 and len(recent) > 2:
        # drop about as many turns as the excess needs, at least one
        excess, drop, freed = over(text), 0, 0
        while drop < len(recent) - 2 and freed < excess:
            freed += estimate(_shown(recent[drop])) + PER_MESSAGE
            drop += 1
        recent = recent[max(1, drop):]
        text = build(recent, None)
    cap = 12
    while over(text) > 0 and cap >= 1:
        text = build(recent, cap)
        cap = cap - 2 if cap > 4 else cap - 1
    while over(text) > 0 and recent:
        recent = recent[1:]
        text = build(recent, 1)
    if over(text) <= 0:
        return text
    lines = text.splitlines()
    lo, hi = 0, len(lines)  # the most lines that fit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ceiling("\n".join(lines[:mid]) + "\n", exact=exact) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return "\n".join(lines[:lo]) + "\n" if lo else ""


def _capped(text, cap):
    """A part's text with at most *cap* lines per "- " list (None: all)."""
    if cap is None:
        return text
    out, run = [], 0
    for line in text.split("\n"):
        if line.startswith("- "):
            run += 1
            if run > cap:
                continue
        else:
            run = 0
        out.append(line)
    return "\n".join(out)


def to_text(ctx):
    def build(recent, cap):
        out = []
        for p in ctx.parts:
            text = _capped(p.text, cap) if p.name in ("memory", "facts") else p.text
            out.append(f"{TITLES[p.name]}:\n{text}")
        if recent:
            out.append("Recent turns:\n" + "\n".join(f"{_label(m)}: {_shown(m)}" for m in recent))
        return "\n\n".join(out) + "\n"
    return fit(ctx, build)


ERRORS = re.compile(r"(?i)\b(?:error|exception|traceback|failed|failure|crash|bug|fix(?:ed)?|broken)\b|报错|错误|异常|修复|失败")
DONE = re.compile(r"(?i)\b(?:done|finished|completed|merged|shipped|deployed|works now)\b|完成|搞定|已上线")
NEXT = re.compile(r"(?i)\bnext step|\bnext,? (?:we|i)\b|下一步")


SHARED = "From other machines (received through ctxd sync; not confirmed here)"
FACT_SECTIONS = ("Requirements and preferences", "Key technical points", "Files touched", "Errors and fixes",
                 "Progress", "User questions", "Pending tasks", "Next step", "Superseded (no longer current)", SHARED)


def facts_layout(facts):
    """Facts alone arranged by what they say: {section: [lines]} in FACT_SECTIONS order (the
    handoff builder reads its Progress, Pending tasks and Next step)."""
    out = {k: [] for k in FACT_SECTIONS}
    for r in facts:
        text = facts_mod.trim(r["text"])
        role = fact_role(r, text)
        if role == "shared":
            out[SHARED].append(f"{text} ({origin_mod.of(r)})")
        elif role == "superseded":
            out["Superseded (no longer current)"].append(facts_mod.trim(r["text"], 160))
        elif role == "question":
            out["User questions"].append(r["text"])  # verbatim
        else:
            out[_FACTS_LAYOUT[role]].append(text)
    return {k: v for k, v in out.items() if v}


_FACTS_LAYOUT = {"next": "Next step", "todo": "Pending tasks", "error": "Errors and fixes", "done": "Progress",
                 "requirement": "Requirements and preferences", "path": "Files touched",
                 "point": "Key technical points"}

def fact_role(r, text):
    """What a kept fact says, for the layouts that arrange facts: superseded, question, next,
    todo, error, done, requirement, path or point (the first that applies, in that order); shared
    before all of them for a fact of a message received from another machine."""
    kinds = set(r["kinds"].split(","))
    if origin_mod.of(r):
        return "shared"
    if r["superseded_by"] is not None:
        return "superseded"
    if r["tag"] == "question":
        return "question"
    if NEXT.search(text):
        return "next"
    if r["tag"] == "todo":
        return "todo"
    if ERRORS.search(text):
        return "error"
    if DONE.search(text):
        return "done"
    if r["tag"] in ("requirement", "preference"):
        return "requirement"
    if kinds == {"path"} or ("path" in kinds and not kinds & {"version", "url", "money", "date"}):
        return "path"
    return "point"


def session_memory(ctx):
    """The session memory in the 9-part layout (ctxd.memory.context.session.SECTIONS): {section: [lines]},
    the sections the session's events fill (requests, files, commands, commits, errors, todos)
    with the facts kept added where the record supports them, each statement once.

    The end state comes from the events alone: Pending tasks are the open todos and typed requests,
    Errors and fixes the calls that failed, Next step a todo or what the model wrote as one. A fact
    of the user's adds a technical point or an open question; a fact of a reply only a technical
    point, never narration; nothing from a summary row (the memory reads its parts itself)."""
    out = {k: [] for k in session_mod.SECTIONS}
    mem_part = next((p for p in ctx.parts if p.name == "memory"), None)
    if ctx.memory is not None and mem_part is not None:
        for k, lines in ctx.memory_sections.items():
            out[k] += lines
    seen = [facts_mod.normalize(l) for v in out.values() for l in v]
    taken = {"user": 0, "assistant": 0}
    for r in ctx.facts:
        keys = r.keys()
        role = r["role"] if "role" in keys else "user"
        # a statement recorded on purpose (ProjectMemory.add_fact, over MCP): shown as it was said
        on_purpose = "msg_kind" in keys and r["msg_kind"] == "meta" and r["msg_source"] == "mcp"
        if (role not in ("user", "assistant") and not on_purpose) or r["superseded_by"] is not None:
            continue  # summaries (read as parts), tool text; a superseded value is no end state
        text = session_text.tidy(r["text"], 220)
        if not text or (role == "assistant" and (session_text.is_narration(text) or not _starts_sentence(text)
                                                  or session_text.looks_like_code(text))):
            continue
        if r["tag"] == "question":
            if role == "user" and f"Open question: {text}" not in out["Pending tasks"]:
                # the question itself, not also as an unanswered request
                out["Pending tasks"] = [l for l in out["Pending tasks"] if not (
                    l.startswith("Unanswered request: ") and text.rstrip("…").strip() in l)]
                out["Pending tasks"].append(f"Open question: {text}")
            continue
        norm = facts_mod.normalize(text)
        if not norm or any(norm in s or s in norm for s in seen if s):
            continue
        if origin_mod.of(r):  # another machine's: its own section, labelled, never a requirement or task here
            out.setdefault(SHARED, []).append(f"{text} ({origin_mod.of(r)})")
            continue
        seen.append(norm)
        if on_purpose:
            out["Pending tasks" if r["tag"] == "todo" else "Key technical points"].append(text)
            continue
        what = fact_role(r, text)
        if role == "user" and what in ("requirement", "done", "path", "point", "error") and taken[role] < 10:
            out["Key technical points"].append(text)
            taken[role] += 1
        elif role == "assistant" and what in ("point", "path", "requirement") and taken[role] < 6:
            out["Key technical points"].append(text)
            taken[role] += 1
    if not out["Current work"]:
        last = [m for m in ctx.recent if (m.kind == "prompt" or (not m.kind and m.role == "user")) and not m.author][-1:]
        about = getattr(ctx, "about", None)  # with --query: only when it bears on the question
        if last and (ctx.facts or out["User messages"]) and (about is None or about(last[0].content)):
            out["Current work"].append(session_text.cut(last[0].content, 400))
    return {k: v for k, v in out.items() if v}


def _starts_sentence(text):
    """Whether a line starts where a sentence does (not mid-word, not a continuation)."""
    c = text[:1]
    return bool(c) and (c.isupper() or c.isdigit() or c in "`\"'([" or not c.isascii())


def to_markdown(ctx, title="Conversation context"):
    memory = session_memory(ctx) if (ctx.facts or any(p.name == "memory" for p in ctx.parts)) else {}

    def build(recent, cap):
        out = [f"# {title}", ""]
        done = False
        for p in ctx.parts:
            if p.name in ("facts", "memory"):
                if not done and memory:
                    out += ["## Session memory", ""]
                    for section, lines in memory.items():
                        out += [f"**{section}**", ""] + [f"- {l}" for l in lines[:cap]] + [""]
                done = True
                continue
            out += [f"## {TITLES[p.name]}", "", p.text, ""]
        if recent:
            out += ["## Recent turns", ""]
            for m in recent:
                out += [f"**{_label(m)}** #{m.id}:", _shown(m), ""]
        return "\n".join(out).rstrip() + "\n"
    return fit(ctx, build)


def to_messages(ctx):
    head = "\n\n".join(f"{TITLES[p.name]}:\n{p.text}" for p in ctx.parts)

    def build(recent, _cap=None):
        msgs = []
        if head:
            msgs.append({"role": "system", "content": head})
        for m in recent:
            who = origin_mod.of(m)
            msgs.append({"role": m.role if m.role in ("user", "assistant") else "user" if m.role == "tool" else "system",
                         "content": (f"[{who}] " if who else "")
                         + (_shown(m) if m.role != "tool" else f"[tool output]\n{m.content}")})
        return msgs

    exact = getattr(ctx, "exact", True)
    recent = list(ctx.recent)
    msgs = build(recent)
    def cost(msgs):  # the JSON as `ctxd context --format json` prints it
        return ceiling(json.dumps(msgs, ensure_ascii=False, indent=2), exact=exact)

    while recent and ctx.budget and cost(msgs) > ctx.budget:
        recent = recent[1:]
        msgs = build(recent)
    if ctx.budget and msgs and cost(msgs) > ctx.budget:  # the parts alone are too big: their lines from the end
        lines = msgs[0]["content"].split("\n")
        while lines and cost([{"role": "system", "content": "\n".join(lines)}]) > ctx.budget:
            lines = lines[: max(0, len(lines) - max(1, len(lines) // 8))]
        msgs = [{"role": "system", "content": "\n".join(lines)}] if lines else []
    return msgs


def explain(ctx):
    d = ctx.decision
    lines = [f"mode {d['mode']}: {d['reason']}", f"budget {d['budget']} tokens; used {ctx.tokens}"]
    for k, v in d["tokens"].items():
        lines.append(f"  {k:<8} {v:>6} tokens")
    lines.append(f"recent window {d['window']} of {d['messages']} messages; {d['facts']} facts kept, "
                 f"{d['superseded']} superseded")
    return "\n".join(lines)
