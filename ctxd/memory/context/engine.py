"""The context engine: a token-budgeted context that keeps every fact that matters.

``assemble`` builds a ``Context`` of parts, in order of what survives a tight budget:
0. the session memory (ctxd.memory.context.session): requests, edited files, commands and test runs,
   commits, errors and their fixes, todos, built from the typed events; rendered with the
   facts in the 9-part layout (session.SECTIONS);
1. facts (ctxd.memory.context.fact_merge): extracted verbatim from every message, the newest
   statement about a topic superseding older ones, duplicates dropped;
2. a project system block (full or compact form), when .contextrc gives one;
3. a summary of the turns older than the recent window (ctxd.memory.context.summary_cache);
4. recent turns verbatim, newest first until the budget is spent (+4 tokens
   per message), always at least the last 2: prompts, replies, summaries and one line
   per tool call, never a tool's raw output or what a CLI injected.

The mode (ctxd.memory.context.modes) decides which parts there are; ctxd.memory.context.render_formats turns
the Context into text, markdown or chat messages within the budget.
"""

import os

from ctxd.memory.context import facts as facts_mod
from ctxd.memory.context import modes
from ctxd.memory.store import origin as origin_mod
from ctxd.memory.context.fact_merge import live_facts, mark_superseded, refresh_facts
from ctxd.memory.context.summary_cache import summary_block
from ctxd.memory.text.tokens import estimate
from ctxd.isotime import format_utc

RESERVE = 4096  # tokens of a model's window left for its answer (``--model``)
PER_MESSAGE = 4  # tokens a recent turn costs beyond its text
RECENT_POOL = 200  # the newest messages recent turns are chosen from
UNSEEN_TOKENS = 50  # tokens counted for each message beyond that pool: a cheap lower bound
# Shares of the budget. With --query the question decides what matters: nearly all of the budget
# goes to the turns recall finds for it (LoCoMo dev at 2,000 tokens: 75 % of the evidence at 0.6,
# 81 % at 0.9); facts and the session memory get a little each.
QUERY_SHARE = 0.9  # for the turns recalled for --query
QUERY_FACTS_SHARE = 0.05  # for facts, when a query is given
QUERY_MEMORY_SHARE = 0.05  # for the session memory, when a query is given
MEMORY_SHARE = 0.3  # for the session memory built from tool events
# Facts carry the conversation once it no longer fits: most of the budget in summary mode (only
# the last input follows), a little less in hybrid (recent turns follow too).
SUMMARY_FACTS_SHARE = 0.65
HYBRID_FACTS_SHARE = 0.55
SUMMARY_SHARE = 0.15  # at most, for the summary of earlier turns; facts always leave it this much
RECENT_LEAVE = 0.12  # what recent turns leave for that summary in summary and hybrid mode
# The project system block: its compact form when the full one takes more than a quarter of the
# budget; left out when even that takes more than a third (the conversation needs the rest).
SYSTEM_COMPACT_SHARE = 0.25
SYSTEM_MAX_SHARE = 1 / 3
PART_TITLES = 8  # tokens a part's title and the blank line before it take in the text formats
MARKDOWN_TITLE, MARKDOWN_TURN = 10, 6  # what markdown adds: the document's title, a turn's "**user** #42:"
TURNS = {"short": 6, "summary": 1}  # at most this many recent turns in these modes (at least 2)


class Part:
    """One named part of a context (system, task, shared_tasks, memory, facts, summary, query)."""

    __slots__ = ("name", "text", "tokens")

    def __init__(self, name, text):
        self.name, self.text, self.tokens = name, text, estimate(text)


class Context:
    """What ``assemble`` chose: the parts, the recent turns and why (``decision``)."""

    def __init__(self):
        self.mode = "hybrid"
        self.reason = ""
        self.budget = 0
        self.parts = []  # Part
        self.recent = []  # Message, oldest first
        self.facts = []  # fact rows used
        self.superseded = 0
        self.decision = {}
        self.memory = None  # ctxd.memory.context.session.SessionMemory
        self.memory_sections = {}  # what of it the "memory" part holds: {section: [lines]}
        self.exact = True  # count the final text exactly when the tokens extra is installed
        self.about = None  # with --query: text -> whether it shares a term with the question

    @property
    def tokens(self):
        return sum(p.tokens for p in self.parts) + sum(estimate(m.content) + PER_MESSAGE for m in self.recent)


def facts_block(rows, budget):
    """The highest-priority live facts that fit *budget* tokens, in conversation order."""
    chosen, used = [], 0
    for r in rows:
        who = origin_mod.of(r)
        if r["superseded_by"] is not None:
            line = f"- [superseded, no longer current] {facts_mod.trim(r['text'], 160)}"
        elif who:  # another machine's statement: shown as such, never as a requirement here
            line = f"- [{who}] {facts_mod.trim(r['text'])}"
        else:
            line = f"- [{r['tag']}] {facts_mod.trim(r['text'])}"
        t = estimate(line) + 1
        if used + t > budget:
            continue
        chosen.append((r["id"], line, r))
        used += t
    chosen.sort(key=lambda x: x[0])
    return [c[2] for c in chosen], "\n".join(c[1] for c in chosen)


# -- assembly --------------------------------------------------------------------------

def _turn(m):
    """Whether a message is shown among the recent turns: prompts, replies, summaries and tool
    calls (as one line); never a tool's raw output or what a CLI injected (the session memory
    says what came of the calls)."""
    kind = m.kind or ""
    if kind in ("tool_result",) or (kind == "meta" and m.subtype):
        return False
    return True


def _as_turn(m):
    if m.kind == "tool_call":
        from ctxd.memory.context import session

        m.content = session.call_line(m.tool or "tool", m.content, m.data)
    return m


def assemble(store, *, budget, mode="auto", query=None, system=None, system_compact=None, log_dir=None,
             llm_summary=None, refresh_limit=None, root=None):
    """The Context of *store* within *budget* tokens in *mode* ("auto": modes.choose_mode, the
    decision logged in *log_dir*); *query* gives most of the budget to the turns recalled for it.
    *refresh_limit* caps the messages whose facts are read first (``refresh_facts``)."""
    refresh_facts(store, limit=refresh_limit)
    ctx = Context()
    ctx.budget = budget
    n = store.count()
    recent_pool = [_as_turn(m) for m in store.recent(RECENT_POOL) if _turn(m)]
    total = sum(m.tokens + PER_MESSAGE for m in recent_pool)
    if n > len(recent_pool):
        total += (n - len(recent_pool)) * UNSEEN_TOKENS

    decisions = os.path.join(log_dir, "decisions.jsonl") if log_dir else None
    previous = modes.previous(decisions) if decisions else (None, 0)
    if mode == "auto":
        mode, reason, pending = modes.choose_mode(store, budget, total, recent_pool[-20:], previous)
    else:
        reason, pending = "asked for", (mode, 0)
    ctx.mode, ctx.reason = mode, reason

    used = 0
    if system:
        sys_text = system
        if estimate(system) > budget * SYSTEM_COMPACT_SHARE and system_compact:
            sys_text = system_compact
        if estimate(sys_text) <= budget * SYSTEM_MAX_SHARE:
            p = Part("system", sys_text)
            ctx.parts.append(p)
            used += p.tokens

    from ctxd.memory.context import tasks

    task_text = tasks.render_open(store)
    if task_text:  # working memory shows in every mode, zero included
        p = Part("task", task_text)
        ctx.parts.append(p)
        used += p.tokens
    shared = tasks.render_shared(store)
    if shared and mode != "zero":  # other machines' open tasks: labelled, never the working memory
        p = Part("shared_tasks", shared)
        ctx.parts.append(p)
        used += p.tokens

    from ctxd.memory.context import session as session_mod, session_text

    # in summary and hybrid the facts carry the user's constraints: the memory does not repeat them
    with_decisions = mode not in ("summary", "hybrid")
    mem = session_mod.session_memory(store, root, decisions=with_decisions)
    if mem.initial_request and mem.initial_id:
        mem.initial_request = session_text.clean(mark_superseded(store, mem.initial_request, mem.initial_id), 600)
    ctx.memory = mem
    about = None
    if query:  # the question decides: only the memory's and the facts' lines that share a term with it
        from ctxd.memory.recall import ranked as recall

        about = ctx.about = recall.about(store, query)
    if mode != "zero" and (mode in ("summary", "hybrid") or mem.files or mem.commands or mem.todos):
        ctx.memory_sections = memory_sections(mem, int(budget * (QUERY_MEMORY_SHARE if query else MEMORY_SHARE)),
                                              decisions=with_decisions)
        if about:
            ctx.memory_sections = _kept_lines(ctx.memory_sections, about)
        text = _sections_text(ctx.memory_sections)
        if text:
            p = Part("memory", text)
            ctx.parts.append(p)
            used += p.tokens

    rows = []
    if mode in ("summary", "hybrid"):
        rows = live_facts(store, answered=False)
        if about:
            rows = [r for r in rows if about(r["text"])]
        cap = int(budget * (QUERY_FACTS_SHARE if query else SUMMARY_FACTS_SHARE if mode == "summary"
                            else HYBRID_FACTS_SHARE))
        cap = min(cap, max(0, budget - used - int(budget * SUMMARY_SHARE)))
        chosen, text = facts_block(rows, cap)
        if text:
            p = Part("facts", text)
            ctx.parts.append(p)
            used += p.tokens
            ctx.facts = chosen
        ctx.superseded = store.superseded_count()

    held = set()
    if query:  # ranked recall (ctxd.memory.recall.ranked), the same as `ctxd recall` and the MCP search tool
        used, held = _recall_part(ctx, store, query, budget, recent_pool, mode)

    # recent turns, newest first within what is left (always at least the last 2)
    if mode == "zero":
        last = [m for m in recent_pool if m.role == "user"][-1:] or recent_pool[-1:]
        ctx.recent = last
    else:
        limit = TURNS.get(mode)
        remaining = budget - used - (int(budget * RECENT_LEAVE) if mode in ("hybrid", "summary") else 0)
        picked, rused = [], 0
        for m in reversed(recent_pool):
            if m.id in held:
                continue  # recalled above already
            t = m.tokens + PER_MESSAGE
            if len(picked) >= 2 and (rused + t > remaining or (limit and len(picked) >= limit)):
                break
            picked.append(m)
            rused += t
        ctx.recent = list(reversed(picked))

    if mode in ("summary", "hybrid") and ctx.recent:
        # what happened before the window, stored before or after it (files imported in any order)
        older_upto = store.last_id_before(ctx.recent[0].ts, ctx.recent[0].id)
        left = max(0, budget - used - sum(m.tokens + PER_MESSAGE for m in ctx.recent))
        s = summary_block(store, older_upto, min(left, int(budget * SUMMARY_SHARE)), os.path.join(store.dir, "cache"),
                          llm=llm_summary)
        if s and query and estimate(s) + PART_TITLES > left:
            s = ""  # with a question, its first line alone would push out the last turns
        if s:
            at = next((i for i, p in enumerate(ctx.parts) if p.name in ("facts", "query")), len(ctx.parts))
            ctx.parts.insert(at, Part("summary", s))

    ctx.decision = {
        "time": format_utc(), "mode": mode, "reason": reason,
        "budget": budget, "window": len(ctx.recent), "messages": n,
        "tokens": {p.name: p.tokens for p in ctx.parts} | {"recent": sum(m.tokens + PER_MESSAGE for m in ctx.recent)},
        "facts": len(ctx.facts), "superseded": ctx.superseded,
        "pending": pending[0] if pending[0] != mode else None, "pending_streak": pending[1],
    }
    if decisions:
        modes.log(decisions, ctx.decision)
    return ctx


# -- the session memory -------------------------------------------------------------------

_MEMORY_LIMITS = ((5, 15, 8, 10, 10), (5, 10, 5, 6, 8), (5, 10, 3, 3, 6), (4, 8, 2, 2, 5), (3, 5, 1, 0, 4),
                  (2, 3, 0, 0, 3))
# under a tight budget, what is kept first: the end state, open items and commits before old results
MEMORY_PRIORITY = ("Current work", "Pending tasks", "Errors and fixes", "Next step", "Problem solving",
                   "Files touched", "User messages", "Key technical points", "Initial request")


def memory_sections(mem, budget, decisions=True):
    """The session memory's {section: [lines]}, as much of it as fits *budget* tokens."""
    from ctxd.memory.context import session as session_mod

    secs = {}
    for req, files, cmds, decs, commits in _MEMORY_LIMITS:
        secs = session_mod.sections(mem, requests=req, files=files, commands=cmds,
                                    decisions=decs if decisions else 0, commits=commits)
        if estimate(_sections_text(secs)) <= budget:
            return secs
    return fit_sections(secs, budget)


def fit_sections(secs, budget):
    """*secs* cut to *budget* tokens line by line, in MEMORY_PRIORITY order (commits lead Problem
    solving), shown in the sections' own order."""
    keep, used = {}, 0
    for k in sorted(secs, key=lambda k: MEMORY_PRIORITY.index(k) if k in MEMORY_PRIORITY else len(MEMORY_PRIORITY)):
        for line in secs[k]:
            t = estimate(line) + 3 + (0 if k in keep else estimate(k) + 2)
            if used + t > budget:
                break
            keep.setdefault(k, []).append(line)
            used += t
    return {k: keep[k] for k in secs if k in keep}


def _kept_lines(secs, keep):
    """*secs* ({section: [lines]}) with only the lines *keep* holds for; no section left empty."""
    out = {k: [line for line in v if keep(line)] for k, v in secs.items()}
    return {k: v for k, v in out.items() if v}


def _recall_part(ctx, store, query, budget, recent_pool, mode):
    """Add the "query" part (ctxd.memory.recall.ranked for *query*) to *ctx*: (tokens used, ids it holds).

    It gets QUERY_SHARE of the budget plus what the memory and the facts left of their shares,
    never more than leaves room for the last turns shown after it. The memory's and the facts'
    lines its turns already hold then go, and what they took goes to recall too (the ranking is
    made once; the turns packed first are packed again first, so none of them is lost)."""
    from ctxd.memory.recall import ranked as recall
    from ctxd.memory.text import tokens

    counter = (tokens.exact_counter() if ctx.exact else None) or estimate
    last = [m for m in recent_pool if m.role == "user"][-1:] if mode == "zero" else recent_pool[-2:]
    after = sum(m.tokens + PER_MESSAGE + MARKDOWN_TURN for m in last) + MARKDOWN_TITLE  # the last turns,
    # shown after recall's in any format (markdown, the default, frames them most)

    def share():
        mem, facts = (sum(p.tokens for p in ctx.parts if p.name == n) for n in ("memory", "facts"))
        freed = max(0, int(budget * QUERY_MEMORY_SHARE) - mem) + max(0, int(budget * QUERY_FACTS_SHARE) - facts)
        room = budget - sum(p.tokens for p in ctx.parts) - after - PART_TITLES * (len(ctx.parts) + 2)
        return max(0, min(int(budget * QUERY_SHARE) + freed, room))

    ranked = recall.rank(store, query)
    found = recall.recall(store, query, share(), counter=counter, ranked=ranked)
    held = {h.message.id for h in found.items}
    if found.items and _drop_held(ctx, found.items):
        freed_room = share()
        if freed_room > found.tokens:
            first = {h.message.id for h in found.items}
            again = [h for h in ranked if h.message.id in first] + [h for h in ranked if h.message.id not in first]
            found = recall.recall(store, query, freed_room, counter=counter, ranked=again)
            held = {h.message.id for h in found.items}
    used = sum(p.tokens for p in ctx.parts)
    if found.text:
        p = Part("query", found.text)
        p.tokens = found.tokens  # as packed: exactly, when the final text is counted so
        ctx.parts.append(p)
        used += p.tokens
    return used, held


def _drop_held(ctx, items):
    """Drop from *ctx* the memory's and the facts' lines the recalled *items* already hold (a
    fact of a recalled message; a memory line found in one's text): whether any went."""
    turns = [" ".join(h.message.content.split()).lower() for h in items]
    ids = {h.message.id for h in items}

    def held(line):
        flat = " ".join(line.rstrip("…").split()).lower()
        return bool(flat) and any(flat in t for t in turns)
    dropped = False
    if ctx.facts and any(r["msg_id"] in ids for r in ctx.facts):
        ctx.facts = [r for r in ctx.facts if r["msg_id"] not in ids]
        text = facts_block(ctx.facts, 10 ** 9)[1]
        ctx.parts = [p for p in ctx.parts if p.name != "facts"] + ([Part("facts", text)] if text else [])
        dropped = True
    if ctx.memory_sections:
        kept = _kept_lines(ctx.memory_sections, lambda line: not held(line))
        if kept != ctx.memory_sections:
            ctx.memory_sections = kept
            text = _sections_text(kept)
            ctx.parts = [(Part("memory", text) if p.name == "memory" else p) for p in ctx.parts
                         if p.name != "memory" or text]
            dropped = True
    return dropped


def _sections_text(secs):
    return "\n".join(f"{k}:\n" + "\n".join(f"- {l}" for l in v) for k, v in secs.items())

