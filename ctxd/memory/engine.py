"""The context engine: a token-budgeted context that keeps every fact that matters.

Parts, in order of what survives a tight budget:
0. the session memory (ctxd.memory.session): requests, edited files, commands and test runs,
   commits, errors and their fixes, todos, built from the typed events; rendered with the
   facts in the 9-part layout (session.SECTIONS);
1. facts: extracted verbatim from every message (ctxd.memory.facts), merged
   incrementally into the store (a watermark: each message is read once), the
   newest statement about a topic superseding older ones, duplicates dropped;
2. a project system block (full or compact form), when .contextrc gives one;
3. an extractive summary of the turns older than the recent window, built
   from the source messages (never from an earlier summary), cached by the
   range of messages it covers;
4. recent turns verbatim, newest first until the budget is spent (+4 tokens
   per message), always at least the last 2: prompts, replies, summaries and one line
   per tool call, never a tool's raw output or what a CLI injected.

Every output format is cut to the budget (``fit``): a hard cap, counted with
tokens.ceiling (exact with the tokens extra, never low without it).

Modes: zero (only the last input), short (a few recent turns), long (as many
recent turns as fit), summary (facts + summary + the last input), hybrid
(facts + summary + recent turns). ``auto`` picks one from the number of
turns, references to earlier turns, distinct entities, importance and token
pressure, with hysteresis; every decision is appended to decisions.jsonl.
"""

import json
import os
import re
import time

from ctxd.memory import facts as facts_mod
from ctxd.memory import origin as origin_mod
from ctxd.memory.tokens import estimate
from ctxd.isotime import format_utc

RESERVE = 4096
# With --query the question decides what matters: nearly all of the budget goes to the turns
# recall finds for it (LoCoMo dev at 2,000 tokens: 75 % of the evidence at 0.6, 81 % at 0.9)
QUERY_SHARE = 0.9  # of the budget, for the turns recalled for --query
QUERY_FACTS_SHARE = 0.05  # of the budget, for facts, when a query is given
QUERY_MEMORY_SHARE = 0.05  # of the budget, for the session memory, when a query is given
PER_MESSAGE = 4
MODES = ("zero", "short", "long", "summary", "hybrid")
REFERENCE = re.compile(r"(?i)\b(?:that|it|this|those|these|earlier|above|before|previous(?:ly)?|as (?:i|we) said|"
                       r"you said|mentioned)\b|这个|那个|刚才|上面|之前|前面|上述|那些")
ENTITY = re.compile(r"\b[A-Z][a-zA-Z0-9]+(?:[ -][A-Z][a-zA-Z0-9]+)*\b|`[^`]+`|[\w.-]+\.(?:py|js|ts|go|rs|md|toml|json|yaml|yml)\b")


class Part:
    __slots__ = ("name", "text", "tokens")

    def __init__(self, name, text):
        self.name, self.text, self.tokens = name, text, estimate(text)


class Context:
    def __init__(self):
        self.mode = "hybrid"
        self.reason = ""
        self.budget = 0
        self.parts = []  # Part
        self.recent = []  # Message, oldest first
        self.facts = []  # fact rows used
        self.superseded = 0
        self.decision = {}
        self.memory = None  # ctxd.memory.session.SessionMemory
        self.memory_sections = {}  # what of it the "memory" part holds: {section: [lines]}
        self.exact = True  # count the final text exactly when the tokens extra is installed

    @property
    def tokens(self):
        return sum(p.tokens for p in self.parts) + sum(estimate(m.content) + PER_MESSAGE for m in self.recent)


# -- facts: incremental merge ---------------------------------------------------

def refresh_facts(store, batch=2000, limit=None):
    """Extract facts from messages not seen yet; return how many messages were read.

    *limit* caps the work of one call (a hook must not spend minutes catching up
    on a big imported history: it reads the newest backlog later, in a detached
    `ctxd chat refresh`, see ``backlog``). Such a capped call does nothing while
    another process is refreshing (the facts lock): it would only queue behind that
    process's batches for the write lock (26 s for the first context after a
    100,000-message import); uncapped calls take turns.
    """
    from ctxd.activation.fileio import Busy, locked
    from ctxd.memory.layout import MemoryPaths

    try:
        with locked(MemoryPaths(store.dir).facts_lock, blocking=limit is None):
            return _refresh_facts(store, batch, limit)
    except Busy:
        return 0


def _refresh_facts(store, batch, limit):
    upto = store.facts_watermark()
    seen = 0
    while limit is None or seen < limit:
        rows = store.fact_source_rows(upto, batch)
        if not rows:
            break
        with store.transaction():
            # another process may have done this batch meanwhile
            done = store.facts_watermark()
            if done > upto:
                upto = done
                continue
            for r in rows:
                if not is_fact_source(r):
                    pointer = facts_mod.offload_pointer(r["content"]) if r["kind"] == "tool_result" else None
                    if pointer is not None:  # where a huge output went is worth keeping; its preview is not
                        merge_fact(store, r, *pointer)
                    continue  # tool calls, tool results, what a CLI injected: plumbing, not what was said
                if _is_generated(r):
                    continue  # ctxd's own teach prompt: instructions, not what was said
                early = r["role"] == "user" and store.user_turns_before(
                    r["session"], r["id"], facts_mod.EARLY_USER_TURNS) < facts_mod.EARLY_USER_TURNS
                for tag, kinds, text, norm, topic, prio in facts_mod.extract(r["id"], r["ts"], r["role"], r["content"],
                                                                            r["importance"], early):
                    merge_fact(store, r, tag, kinds, text, norm, topic, prio)
            upto = rows[-1]["id"]
            store.set_facts_watermark(upto)
        seen += len(rows)
    return seen


BACKLOG_CAP = 100000
FACT_KINDS = ("prompt", "reply", "summary")


def is_fact_source(row):
    """Whether a message's facts count: prompts, replies and summaries; a meta row only when it
    is ctxd's own note (a task closed, a fact kept on purpose: no subtype), never what an AI CLI
    injected; never a tool call or its result."""
    kind = row["kind"] if "kind" in row.keys() else ""
    if not kind:
        return row["role"] != "tool"
    if kind in FACT_KINDS:
        return True
    return kind == "meta" and not row["subtype"]


def backlog(store):
    """How many messages the facts have not read yet (cheap: two indexed lookups; counted
    up to BACKLOG_CAP)."""
    return store.count_after(store.facts_watermark(), cap=BACKLOG_CAP)


def _is_generated(row):
    if row["source"] == "teach":
        return True
    if row["role"] in ("user", "system") and row["content"].lstrip()[:24].startswith("# "):
        from ctxd.memory.items import is_teach_prompt  # the same prompt, pasted into an AI CLI

        return is_teach_prompt(row["role"], row["content"], row["source"])
    return False


def _words(norm):
    return {w for w in norm.split() if not any(c.isdigit() for c in w)}


def terms(text):
    """Content words (and CJK bigrams) without digits: what a statement is about."""
    low = text.lower()
    words = {w for w in re.findall(r"[a-z][a-z_-]{2,}", low) if w not in _STOP}
    cjk = re.findall(r"[\u4e00-\u9fff]+", text)
    for run in cjk:
        words.update(run[i:i + 2] for i in range(len(run) - 1))
    return words


_STOP = set("the and for with that this from into are was were will would should could have has had not but "
            "about over under after before then than our your their its also just very more most some any "
            "all can may might must been being which what when where who whom whose why how".split())


def merge_fact(store, msg, tag, kinds, text, norm, topic, prio):
    """Add one extracted fact of message *msg* (a mapping with id, ts, role) and let it
    supersede what it corrects or restates with a new value. Returns the new fact's id,
    or None when it repeats a live fact (the first statement is kept).

    Call it inside ``store.transaction()``: the fact and the facts it supersedes change together.
    """
    # an exact repeat of a live fact: keep the first statement
    if store.live_fact_with_norm(norm) is not None:
        return None
    new_id = store.insert_fact(msg["id"], msg["ts"], msg["role"], tag, kinds, text, norm, topic, prio)
    kset = set(kinds.split(","))
    values = kset & set(facts_mod.HARD)
    if not values or msg["role"] == "tool":
        return new_id
    correction = "correction" in kset
    words_of = terms(text)
    if correction:
        # "the cutover moves to 2026-04-12": the latest earlier fact with a value of the
        # same kind that shares the most words with the correction is what it corrects
        # a value the correction names as wrong ("..., not 14:05 UTC") points at its fact
        named = {v for st, _, v in facts_mod.hard_values(text) if _NEGATED.search(text[max(0, st - 14):st])}
        best, best_score = None, 0
        for old in store.live_facts_before(new_id, limit=3000):
            if not (set(old["kinds"].split(",")) & values):
                continue
            score = len(words_of & terms(old["text"])) + sum(10 for v in named if v in old["text"])
            if score > best_score:
                best, best_score = old["id"], score
        if best is not None and best_score >= 1:
            _supersede(store, best, new_id, values, words_of, text)
        return new_id
    if not topic:
        return new_id
    words = _words(norm)
    for old in store.live_topic_facts_before(topic, new_id, limit=20):
        if not (set(old["kinds"].split(",")) & values):
            continue
        owords = _words(old["norm"])
        if len(words & owords) / max(1, len(words | owords)) >= 0.6:  # the same statement, a new value
            store.supersede_fact(old["id"], new_id)
            break
    return new_id


def keep_fact(store, msg_id, tag, priority):
    """Make message *msg_id*, a statement recorded on purpose (e.g. over MCP), a fact tagged
    *tag* with at least *priority*; return the id of that fact.

    The facts extracted from it are re-tagged; when extraction found none, its whole text
    becomes one fact; when that text is already a live fact, that fact is re-tagged
    instead of being stored twice. One transaction (joining the caller's).
    """
    with store.transaction():
        refresh_facts(store)
        ids = store.message_fact_ids(msg_id)
        if not ids:
            msg = store.get(msg_id)
            if msg is None:
                return None
            norm = facts_mod.normalize(msg.content)
            known = store.live_fact_with_norm(norm)
            if known is not None:
                store.promote_fact(known["id"], tag, priority)
                return known["id"]
            kinds = facts_mod.classify(msg.content, msg.role) or [{"requirement": "constraint"}.get(tag, tag)]
            kinds = ",".join(k for k in kinds if k != "background")
            fid = merge_fact(store, {"id": msg.id, "ts": msg.ts, "role": msg.role}, tag, kinds, msg.content, norm,
                             facts_mod.topic_of(msg.content), priority)
            ids = [fid]
        store.promote_message_facts(msg_id, tag, priority)
        return ids[0]


def _supersede(store, old_id, new_id, kinds, shared, new_text):
    """Mark the old fact superseded; when it also carries other values ("the defense
    is on 2026-06-30, the midterm on 2026-04-10"), keep it current with only the
    corrected value marked, so the other details are not lost with it."""
    old = store.fact_text(old_id)
    values = facts_mod.hard_values(old, [k for k in kinds if k in facts_mod.HARD])
    # values the correction states as current ("13:52 UTC, not 14:05 UTC": only 13:52)
    fresh = {v for st, _, v in facts_mod.hard_values(new_text) if not _NEGATED.search(new_text[max(0, st - 14):st])}
    stale = [v for v in values if v[2] not in fresh]
    if not stale:
        return  # a restatement of the same value, not a correction of this fact
    if len(facts_mod.hard_values(old)) <= 1:
        store.supersede_fact(old_id, new_id)
        return
    # the stale value nearest to the words the correction shares with this fact
    anchors = [i for t in shared for i in _find_all(old.lower(), t)] or [0]
    start, end, value = min(stale, key=lambda v: min(abs(v[0] - a) for a in anchors))
    text = old[:start] + f"{value} {STALE_MARK}" + old[end:]
    store.set_fact_text(old_id, text)  # norm stays: the source sentence


STALE_MARK = "(superseded, no longer current)"
_NEGATED = re.compile(r"(?i)(?:\bnot|\binstead of|\brather than|\bwas|\bfrom|不是|而非|原来|原定|从)\s*$")


def _find_all(hay, needle):
    i = hay.find(needle)
    while i != -1:
        yield i
        i = hay.find(needle, i + 1)


def live_facts(store, limit=400, answered=True):
    """Facts by priority: current ones first; superseded ones after, marked as such
    (they may still carry details the newer statement does not repeat). *answered*: False
    leaves out the questions a later reply answered (what a context shows: a question is a
    fact while it is open); the handoff builder reads them to tell resolved from open."""
    # two index-driven queries (facts_live): the cost follows the limit, not the history
    live = store.live_facts(limit)
    if not answered:
        live = open_questions_only(store, live)
    old = store.superseded_facts(limit // 4)
    return live + sorted(old, key=lambda r: -r["priority"])


def open_questions_only(store, rows):
    """*rows* without the questions a later reply answered: a question is a fact while it is
    open (asked last, or declared open: "still open", "TBD", 待定)."""
    asked = {r["msg_id"] for r in rows if r["tag"] == "question" and not facts_mod.declared_open(r["text"])}
    if not asked:
        return rows
    answered = store.answered(sorted(asked))
    return [r for r in rows if not (r["tag"] == "question" and r["msg_id"] in answered
                                    and not facts_mod.declared_open(r["text"]))]


def superseded_count(store):
    return store.superseded_count()


# -- rendering pieces ------------------------------------------------------------

def _trim(text, limit=220):
    return text if len(text) <= limit else text[: limit - 1] + "…"


def facts_block(rows, budget):
    """The highest-priority live facts that fit *budget* tokens, in conversation order."""
    chosen, used = [], 0
    for r in rows:
        who = _who(r)
        if r["superseded_by"] is not None:
            line = f"- [superseded, no longer current] {_trim(r['text'], 160)}"
        elif who:  # another machine's statement: shown as such, never as a requirement here
            line = f"- [{who}] {_trim(r['text'])}"
        else:
            line = f"- [{r['tag']}] {_trim(r['text'])}"
        t = estimate(line) + 1
        if used + t > budget:
            continue
        chosen.append((r["id"], line, r))
        used += t
    chosen.sort(key=lambda x: x[0])
    return [c[2] for c in chosen], "\n".join(c[1] for c in chosen)


def summary_block(store, older_upto, budget, cache_dir, llm=None):
    """Summary of messages with id <= older_upto: the latest finished LLM summary when one
    covers them (never waited for), else extractive; cached by the range it covers."""
    if older_upto <= 0:
        return ""
    if llm and llm.get("upto", 0) > 0 and llm.get("text"):
        pieces = [p for p in (held_to_rules(p) for p in llm["text"].split("\n\n")) if p]  # one per chunk
        kept = []
        for piece in reversed(pieces):
            if estimate("\n\n".join([piece] + kept)) > budget - 30:
                break
            kept.insert(0, piece)
        if kept:
            more = store.count_between(llm["upto"], older_upto)
            head = f"({len(pieces) - len(kept)} older summary parts left out.)\n" if len(kept) < len(pieces) else ""
            tail = f"\n({more} later messages are not in this summary; their facts are listed.)" if more else ""
            return head + "\n\n".join(kept) + tail
    first = store.first_id()
    # the range it covers, and how many corrections it knows of (a later correction re-marks it)
    stale_n = superseded_count(store)
    key = f"summary-{first}-{older_upto}-{budget}-{stale_n}.json"
    path = os.path.join(cache_dir, key)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)["text"]
    except (OSError, ValueError, KeyError):
        pass
    # first is min(id): the messages up to older_upto are all but the (few, recent) ones after it.
    # A count over an id range walks the table's own pages, i.e. the whole history.
    n = store.count() - store.count_after(older_upto)
    t0, t1 = store.first_ts_from(first), store.last_ts_upto(older_upto)
    first_user = store.first_user_content(older_upto)
    lines = [f"Earlier conversation: {n} messages, {_day(t0)} to {_day(t1)}."]
    if first_user is not None:
        # built from the source message, but a statement corrected since is marked, not repeated
        # only the facts of these sentences matter: looked up by norm (facts_norm, never a scan
        # of every fact of the history; see FactsTables.superseded_norms)
        lines.append(f"Initial request: {_trim(mark_stale(store, first_user, older_upto), 400)}")
    text = "\n".join(lines)
    while estimate(text) > budget and len(lines) > 1:
        lines.pop()
        text = "\n".join(lines)
    try:
        os.makedirs(cache_dir, mode=0o700, exist_ok=True)
        from ctxd.activation.fileio import atomic_write

        atomic_write(path, json.dumps({"range": [first, older_upto], "text": text}))
        _prune_summaries(cache_dir, keep=path)
    except OSError:
        pass
    return text


def held_to_rules(text):
    """A summarizer's text under the session memory's rules: no narration, no plumbing, no XML
    tags or stray markdown, no line cut inside a word (a bullet keeps its dash)."""
    from ctxd.memory import session as session_mod

    out = []
    for line in text.splitlines():
        bullet = line.lstrip().startswith(("- ", "* ", "• "))
        shown = session_mod.tidy(line, 400)
        if not shown or session_mod.is_narration(shown):
            continue
        out.append(("- " if bullet else "") + shown)
    return "\n".join(out)


def mark_stale(store, text, upto):
    """*text* (a source message) with the statements corrected since marked, not repeated."""
    # only the facts of these sentences matter: looked up by norm (facts_norm, never a scan
    # of every fact of the history; see FactsTables.superseded_norms)
    sents = [(s, facts_mod.normalize(s)) for s in facts_mod.sentences(text)]
    norms = sorted({nm for _s, nm in sents})
    if not norms:
        return text
    stale = store.superseded_norms(norms, upto)
    rows = store.live_facts_containing(norms, upto, STALE_MARK)
    # facts_live order; norms never repeat across the store's chunks, so one sort is the same
    marked = dict((r[0], r[1]) for r in sorted(rows, key=lambda r: (-r[2], r[3])))
    parts = []
    for sent, norm in sents:
        parts.append("(a statement superseded later)" if norm in stale else marked.get(norm, sent))
    return " ".join(parts)


def _prune_summaries(cache_dir, keep, most=8):
    """A new range makes older cached summaries useless: keep only the newest few."""
    try:
        entries = [e for e in os.scandir(cache_dir) if e.name.startswith("summary-") and e.name.endswith(".json")]
        entries.sort(key=lambda e: e.stat().st_mtime, reverse=True)
        for e in entries[most:]:
            if e.path != keep:
                os.unlink(e.path)
    except OSError:
        pass


def _day(ts):
    return time.strftime("%Y-%m-%d", time.gmtime(ts or 0))


# -- mode choice -------------------------------------------------------------------

def choose_mode(store, budget, total_tokens, recent_msgs, previous):
    """(mode, reason) for auto, with hysteresis against *previous* (mode, streak)."""
    n = store.count()
    last_user = [m for m in recent_msgs if m.role == "user"][-3:]
    refs = sum(len(REFERENCE.findall(m.content)) for m in last_user)
    entities = len({e for m in recent_msgs[-6:] for e in ENTITY.findall(m.content)})
    avg_imp = sum(m.importance for m in recent_msgs) / len(recent_msgs) if recent_msgs else 0.5
    pressure = total_tokens / budget if budget else 1.0
    if n <= 1:
        mode, reason = "zero", "a single message"
    elif pressure < 0.8:
        mode, reason = "long", f"the whole conversation fits ({pressure:.0%} of the budget)"
    elif refs or entities > 5:
        mode, reason = "hybrid", f"{refs} references to earlier turns, {entities} distinct entities, {pressure:.0%} pressure"
    elif avg_imp < 0.3 and n > 4:
        mode, reason = "short", f"low importance ({avg_imp:.2f}), no references"
    else:
        mode, reason = "hybrid", f"token pressure {pressure:.0%} of the budget: compress early (>= 80%)"
    prev_mode, streak = previous
    # Hysteresis: leave the previous mode only once the new choice repeats, unless
    # the previous mode cannot hold the conversation (long at >= 80% pressure).
    if prev_mode and prev_mode != mode and not (prev_mode == "long" and pressure >= 0.8):
        if streak < 1:
            return prev_mode, f"kept {prev_mode} (hysteresis; would switch to {mode}: {reason})", (mode, streak + 1)
    return mode, reason, (mode, 0)


def _previous(decisions_path):
    try:
        with open(decisions_path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 4096))
            last = f.read().decode("utf-8", "replace").strip().splitlines()[-1]
        d = json.loads(last)
        return d.get("mode"), int(d.get("pending_streak", 0)) if d.get("pending") else 0
    except (OSError, ValueError, IndexError):
        return None, 0


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
        from ctxd.memory import session

        m.content = session.call_line(m.tool or "tool", m.content, m.data)
    return m


MEMORY_SHARE = 0.3  # of the budget, for the session memory built from tool events


def assemble(store, *, budget, mode="auto", query=None, system=None, system_compact=None, log_dir=None,
             llm_summary=None, refresh_limit=None, root=None):
    refresh_facts(store, limit=refresh_limit)
    ctx = Context()
    ctx.budget = budget
    n = store.count()
    recent_pool = [_as_turn(m) for m in store.recent(200) if _turn(m)]
    total = sum(m.tokens + PER_MESSAGE for m in recent_pool)
    if n > len(recent_pool):
        total += (n - len(recent_pool)) * 50  # beyond the pool: a cheap lower bound

    decisions = os.path.join(log_dir, "decisions.jsonl") if log_dir else None
    previous = _previous(decisions) if decisions else (None, 0)
    if mode == "auto":
        mode, reason, pending = choose_mode(store, budget, total, recent_pool[-20:], previous)
    else:
        reason, pending = "asked for", (mode, 0)
    ctx.mode, ctx.reason = mode, reason

    used = 0
    if system:
        sys_text = system
        if estimate(system) > budget // 4 and system_compact:
            sys_text = system_compact
        if estimate(sys_text) <= budget // 3:
            p = Part("system", sys_text)
            ctx.parts.append(p)
            used += p.tokens

    from ctxd.memory import tasks

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

    from ctxd.memory import session as session_mod

    # in summary and hybrid the facts carry the user's constraints: the memory does not repeat them
    with_decisions = mode not in ("summary", "hybrid")
    mem = session_mod.session_memory(store, root, decisions=with_decisions)
    if mem.initial_request and mem.initial_id:
        mem.initial_request = session_mod.clean(mark_stale(store, mem.initial_request, mem.initial_id), 600)
    ctx.memory = mem
    if mode != "zero" and (mode in ("summary", "hybrid") or mem.files or mem.commands or mem.todos):
        ctx.memory_sections = memory_sections(mem, int(budget * (QUERY_MEMORY_SHARE if query else MEMORY_SHARE)),
                                              decisions=with_decisions)
        text = _sections_text(ctx.memory_sections)
        if text:
            p = Part("memory", text)
            ctx.parts.append(p)
            used += p.tokens

    rows = []
    if mode in ("summary", "hybrid"):
        rows = live_facts(store, answered=False)
        cap = int(budget * (QUERY_FACTS_SHARE if query else 0.65 if mode == "summary" else 0.55))
        cap = min(cap, max(0, budget - used - int(budget * 0.15)))
        chosen, text = facts_block(rows, cap)
        if text:
            p = Part("facts", text)
            ctx.parts.append(p)
            used += p.tokens
            ctx.facts = chosen
        ctx.superseded = superseded_count(store)

    held = set()
    if query:  # ranked recall (ctxd.memory.recall), the same as `ctxd recall` and the MCP search tool
        from ctxd.memory import recall

        found = recall.recall(store, query, max(0, min(int(budget * QUERY_SHARE), budget - used)))
        if found.text:
            p = Part("query", found.text)
            ctx.parts.append(p)
            used += p.tokens
            held = {h.message.id for h in found.items}

    # recent turns, newest first within what is left (always at least the last 2)
    if mode == "zero":
        last = [m for m in recent_pool if m.role == "user"][-1:] or recent_pool[-1:]
        ctx.recent = last
    else:
        limit = {"short": 6, "summary": 1}.get(mode)
        remaining = budget - used - (int(budget * 0.12) if mode in ("hybrid", "summary") else 0)
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
        s = summary_block(store, older_upto, min(left, int(budget * 0.15)), os.path.join(store.dir, "cache"),
                          llm=llm_summary)
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
        try:
            os.makedirs(log_dir, mode=0o700, exist_ok=True)
            fd = os.open(decisions, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as f:
                f.write(json.dumps(ctx.decision, ensure_ascii=False) + "\n")
        except OSError:
            pass
    return ctx


# -- the session memory -------------------------------------------------------------------

_MEMORY_LIMITS = ((5, 15, 8, 10, 10), (5, 10, 5, 6, 8), (5, 10, 3, 3, 6), (4, 8, 2, 2, 5), (3, 5, 1, 0, 4),
                  (2, 3, 0, 0, 3))
# under a tight budget, what is kept first: the end state, open items and commits before old results
MEMORY_PRIORITY = ("Current work", "Pending tasks", "Errors and fixes", "Next step", "Problem solving",
                   "Files touched", "User messages", "Key technical points", "Initial request")


def memory_sections(mem, budget, decisions=True):
    """The session memory's {section: [lines]}, as much of it as fits *budget* tokens."""
    from ctxd.memory import session as session_mod

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


def _sections_text(secs):
    return "\n".join(f"{k}:\n" + "\n".join(f"- {l}" for l in v) for k, v in secs.items())


def memory_text(mem, budget, decisions=True):
    """The session memory as plain text within *budget* tokens ("" when there is nothing)."""
    if mem is None:
        return ""
    return _sections_text(memory_sections(mem, budget, decisions))


# -- output formats ---------------------------------------------------------------------

TITLES = {"system": "Project instructions", "task": "Current task (working memory)",
          "shared_tasks": "Open tasks on other machines (received through ctxd sync; not this machine's task)",
          "facts": "Facts to keep (current values; newer statements win)",
          "memory": "Session memory (from the session's events)",
          "summary": "Summary of earlier turns", "query": "Relevant earlier turns"}


def _label(m):
    who = origin_mod.of(m)
    role = {"tool_call": "assistant (tool)", "summary": "summary"}.get(m.kind or "", m.role)
    return f"{role} ({who})" if who else role


def _who(r):
    """A fact row's sender label ("" for a fact of a message written here)."""
    try:
        return origin_mod.label(r["author"], r["machine"])
    except (KeyError, IndexError):
        return ""


def _shown(m):
    """A recent turn's text as shown: a tool call as its one readable line, terminal escape
    sequences out."""
    from ctxd.memory import session

    if m.kind == "tool_call":
        return session.call_line(m.tool or "tool", m.content, m.data)
    return session.strip_ansi(m.content)


def fit(ctx, build):
    """build(recent, per_section) within ctx.budget tokens, counted with tokens.ceiling (exact when
    the tokens extra is installed, never low otherwise). What goes first: the oldest recent turns
    down to the last 2, then the tail of the longest memory sections, then the last 2 turns, then
    lines from the end. A hard cap: the text returned never counts more than the budget."""
    from ctxd.memory.tokens import ceiling

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
STALE = "[superseded, no longer current]"


SHARED = "From other machines (received through ctxd sync; not confirmed here)"
FACT_SECTIONS = ("Requirements and preferences", "Key technical points", "Files touched", "Errors and fixes",
                 "Progress", "User questions", "Pending tasks", "Next step", "Superseded (no longer current)", SHARED)


def facts_layout(facts):
    """Facts alone arranged by what they say: {section: [lines]} in FACT_SECTIONS order (the
    handoff builder reads its Progress, Pending tasks and Next step)."""
    out = {k: [] for k in FACT_SECTIONS}
    for r in facts:
        text = _trim(r["text"])
        role = fact_role(r, text)
        if role == "shared":
            out[SHARED].append(f"{text} ({_who(r)})")
        elif role == "superseded":
            out["Superseded (no longer current)"].append(_trim(r["text"], 160))
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
    if _who(r):
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
    """The session memory in the 9-part layout (ctxd.memory.session.SECTIONS): {section: [lines]},
    the sections the session's events fill (requests, files, commands, commits, errors, todos)
    with the facts kept added where the record supports them, each statement once.

    The end state comes from the events alone: Pending tasks are the open todos and typed requests,
    Errors and fixes the calls that failed, Next step a todo or what the model wrote as one. A fact
    of the user's adds a technical point or an open question; a fact of a reply only a technical
    point, never narration; nothing from a summary row (the memory reads its parts itself)."""
    from ctxd.memory import session as session_mod

    if not hasattr(ctx, "parts"):  # facts alone (the handoff builder): arranged by what they say
        return facts_layout(ctx.facts)
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
        text = session_mod.tidy(r["text"], 220)
        if not text or (role == "assistant" and (session_mod.is_narration(text) or not _starts_sentence(text)
                                                  or session_mod.looks_like_code(text))):
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
        if _who(r):  # another machine's: its own section, labelled, never a requirement or task here
            out.setdefault(SHARED, []).append(f"{text} ({_who(r)})")
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
        if last and (ctx.facts or out["User messages"]):
            out["Current work"].append(session_mod.cut(last[0].content, 400))
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

    from ctxd.memory.tokens import ceiling

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
