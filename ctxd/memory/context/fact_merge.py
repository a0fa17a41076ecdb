"""Facts merged into the store: extracted once from every message, newest statements winning.

``refresh_facts`` reads the messages not read yet (a watermark: each message once) and merges
what ``ctxd.memory.context.facts`` extracts from them (``merge_fact``): an exact repeat of a live fact
is dropped, a correction or a new value for the same topic supersedes the older fact (only the
corrected value is marked when the older one carries others). ``keep_fact`` makes a statement
recorded on purpose a fact; ``live_facts`` reads them back by priority; ``mark_superseded``
marks in a source text the statements corrected since.
"""

import re
import time

from ctxd.memory.context import facts as facts_mod
from ctxd.memory.store import items


BATCH = 200  # messages a write transaction merges (1-3 ms of the write lock; extraction runs before it)
BATCH_PAUSE = 0.05  # seconds between batches of a long catch-up, at most the batch's own time


def refresh_facts(store, batch=BATCH, limit=None):
    """Extract facts from messages not seen yet; return how many messages were read.

    *limit* caps the work of one call (a hook must not spend minutes catching up
    on a big imported history: it reads the newest backlog later, in a detached
    `ctxd chat refresh`, see ``backlog``). Such a capped call does nothing while
    another process is refreshing (the facts lock): it would only queue behind that
    process's batches for the write lock (26 s for the first context after a
    100,000-message import); uncapped calls take turns.
    """
    from ctxd.activation.fileio import Busy, locked
    from ctxd.memory.store.layout import MemoryPaths

    try:
        with locked(MemoryPaths(store.dir).facts_lock, blocking=limit is None):
            return _refresh_facts(store, batch, limit)
    except Busy:
        return 0


def _refresh_facts(store, batch, limit):
    upto = store.facts_watermark()
    seen, pause = 0, 0.0
    while limit is None or seen < limit:
        rows = store.fact_source_rows(upto, batch)
        if not rows:
            break
        if pause:  # a long catch-up: a hook's write gets in between two batches
            time.sleep(pause)
        found = [(r, _extract(store, r)) for r in rows]  # reads only: no write lock held meanwhile
        started = time.monotonic()
        with store.transaction():
            # another process may have done this batch meanwhile
            done = store.facts_watermark()
            if done > upto:
                upto = done
                continue
            for r, statements in found:
                for statement in statements:
                    merge_fact(store, r, *statement)
            upto = rows[-1]["id"]
            store.set_facts_watermark(upto)
        seen += len(rows)
        pause = min(BATCH_PAUSE, time.monotonic() - started) if limit is None else 0.0
    return seen


def _extract(store, r):
    """The (tag, kinds, text, norm, topic, priority) statements message row *r* contributes."""
    if not is_fact_source(r):
        pointer = facts_mod.offload_pointer(r["content"]) if r["kind"] == "tool_result" else None
        # where a huge output went is worth keeping; its preview is not; tool calls, tool results
        # and what a CLI injected are plumbing, not what was said
        return [pointer] if pointer is not None else []
    if _is_generated(r):
        return []  # ctxd's own teach prompt: instructions, not what was said
    early = r["role"] == "user" and store.user_turns_before(
        r["session"], r["id"], facts_mod.EARLY_USER_TURNS) < facts_mod.EARLY_USER_TURNS
    return list(facts_mod.extract(r["id"], r["ts"], r["role"], r["content"], r["importance"], early))


BACKLOG_CAP = 100000
SOURCE_KINDS = ("prompt", "reply", "summary")  # message kinds whose facts count


def is_fact_source(row):
    """Whether a message's facts count: prompts, replies and summaries; a meta row only when it
    is ctxd's own note (a task closed, a fact kept on purpose: no subtype), never what an AI CLI
    injected; never a tool call or its result."""
    kind = row["kind"] if "kind" in row.keys() else ""
    if not kind:
        return row["role"] != "tool"
    if kind in SOURCE_KINDS:
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
        return items.is_teach_prompt(row["role"], row["content"], row["source"])  # pasted into an AI CLI
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


# Word overlap (Jaccard, digits left out) at which a fact with a value restates an older fact of
# its topic with a new value: "the cutover is at 14:05 UTC" vs "the cutover is at 13:52 UTC".
SAME_STATEMENT = 0.6


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
        if len(words & owords) / max(1, len(words | owords)) >= SAME_STATEMENT:
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


def record_fact(store, text, tag, priority, *, importance, session, source):
    """Store *text* as a system message of *importance* in *session* (else the latest session, else
    *source*) and make it a fact tagged *tag* (``keep_fact``): (known, message id, redacted text).
    A statement that is a live fact already is not stored again: that fact is re-tagged and
    *known* is true (its message id given)."""
    refresh_facts(store)
    redacted = store.prepare(text)[0]
    with store.transaction():
        known = store.live_fact_with_norm(facts_mod.normalize(redacted))
        if known is not None:  # the same statement is a live fact already: keep the first, with this tag
            store.promote_fact(known["id"], tag, priority)
            return True, known["msg_id"], redacted
        mid = store.add("system", text, session=session or store.last_session() or source, source=source,
                        importance=importance)
        keep_fact(store, mid, tag, priority)
    return False, mid, redacted


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


SUPERSEDED_SHARE = 0.25  # superseded facts read back, of *limit*: they only add details to the live ones


def live_facts(store, limit=400, answered=True):
    """Facts by priority: current ones first; superseded ones after, marked as such
    (they may still carry details the newer statement does not repeat). *answered*: False
    leaves out the questions a later reply answered (what a context shows: a question is a
    fact while it is open); the handoff builder reads them to tell resolved from open."""
    # two index-driven queries (facts_live): the cost follows the limit, not the history
    live = store.live_facts(limit)
    if not answered:
        live = open_questions_only(store, live)
    old = store.superseded_facts(int(limit * SUPERSEDED_SHARE))
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


def mark_superseded(store, text, upto):
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

