"""The context engine: a token-budgeted context that keeps every fact that matters.

Parts, in order of what survives a tight budget:
1. facts: extracted verbatim from every message (ctxd.memory.facts), merged
   incrementally into the store (a watermark: each message is read once), the
   newest statement about a topic superseding older ones, duplicates dropped;
2. a project system block (full or compact form), when .contextrc gives one;
3. an extractive summary of the turns older than the recent window, built
   from the source messages (never from an earlier summary), cached by the
   range of messages it covers;
4. recent turns verbatim, newest first until the budget is spent (+4 tokens
   per message), always at least the last 2.

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
from ctxd.memory.tokens import estimate

RESERVE = 4096
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

    @property
    def tokens(self):
        return sum(p.tokens for p in self.parts) + sum(estimate(m.content) + PER_MESSAGE for m in self.recent)


# -- facts: incremental merge ---------------------------------------------------

def refresh_facts(store, batch=2000, limit=None):
    """Extract facts from messages not seen yet; return how many messages were read.

    *limit* caps the work of one call (a hook must not spend minutes catching up
    on a big imported history: it reads the newest backlog later, in a detached
    `ctxd chat refresh`, see ``backlog``).
    """
    db = store.db
    row = db.execute("SELECT value FROM meta WHERE key = 'facts_upto'").fetchone()
    upto = int(row[0]) if row else 0
    seen = 0
    while limit is None or seen < limit:
        rows = db.execute("SELECT id, ts, role, content, importance, session, source FROM messages WHERE id > ? "
                          "ORDER BY id LIMIT ?", (upto, batch)).fetchall()
        if not rows:
            break
        db.execute("BEGIN IMMEDIATE")
        try:
            # another process may have done this batch meanwhile
            row = db.execute("SELECT value FROM meta WHERE key = 'facts_upto'").fetchone()
            if row and int(row[0]) > upto:
                upto = int(row[0])
                db.execute("COMMIT")
                continue
            for r in rows:
                if _is_generated(r):
                    continue  # ctxd's own teach prompt: instructions, not what was said
                early = r["role"] == "user" and db.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM messages WHERE session = ? AND role = 'user' AND id < ? "
                    "LIMIT ?)", (r["session"], r["id"], facts_mod.EARLY_USER_TURNS)).fetchone()[0] \
                    < facts_mod.EARLY_USER_TURNS
                for tag, kinds, text, norm, topic, prio in facts_mod.extract(r["id"], r["ts"], r["role"], r["content"],
                                                                            r["importance"], early):
                    _merge(db, r, tag, kinds, text, norm, topic, prio)
            upto = rows[-1]["id"]
            db.execute("INSERT INTO meta(key, value) VALUES ('facts_upto', ?) "
                       "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (str(upto),))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        seen += len(rows)
    return seen


def backlog(store):
    """How many messages the facts have not read yet (cheap: two indexed lookups)."""
    row = store.db.execute("SELECT value FROM meta WHERE key = 'facts_upto'").fetchone()
    upto = int(row[0]) if row else 0
    return store.db.execute("SELECT count(*) FROM (SELECT 1 FROM messages WHERE id > ? LIMIT 100000)",
                            (upto,)).fetchone()[0]


def _is_generated(row):
    if row["source"] == "teach":
        return True
    if row["role"] in ("user", "system") and row["content"].lstrip()[:24].startswith("# "):
        from ctxd.handoff.teach import is_teach_prompt  # the same prompt, pasted into an AI CLI

        return is_teach_prompt(row["role"], row["content"], row["source"])
    return False


def _words(norm):
    return {w for w in norm.split() if not any(c.isdigit() for c in w)}


def _terms(text):
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


def _merge(db, msg, tag, kinds, text, norm, topic, prio):
    # an exact repeat of a live fact: keep the first statement
    if db.execute("SELECT 1 FROM facts WHERE norm = ? AND superseded_by IS NULL LIMIT 1", (norm,)).fetchone():
        return
    cur = db.execute("INSERT INTO facts(msg_id, ts, role, tag, kinds, text, norm, topic, priority) "
                     "VALUES (?,?,?,?,?,?,?,?,?)", (msg["id"], msg["ts"], msg["role"], tag, kinds, text, norm, topic, prio))
    new_id = cur.lastrowid
    kset = set(kinds.split(","))
    values = kset & set(facts_mod.HARD)
    if not values or msg["role"] == "tool":
        return
    correction = "correction" in kset
    terms = _terms(text)
    if correction:
        # "the cutover moves to 2026-04-12": the latest earlier fact with a value of the
        # same kind that shares the most words with the correction is what it corrects
        # a value the correction names as wrong ("..., not 14:05 UTC") points at its fact
        named = {v for st, _, v in facts_mod.hard_values(text) if _NEGATED.search(text[max(0, st - 14):st])}
        best, best_score = None, 0
        for old in db.execute("SELECT id, kinds, text FROM facts WHERE superseded_by IS NULL AND id < ? "
                              "ORDER BY id DESC LIMIT 3000", (new_id,)).fetchall():
            if not (set(old["kinds"].split(",")) & values):
                continue
            score = len(terms & _terms(old["text"])) + sum(10 for v in named if v in old["text"])
            if score > best_score:
                best, best_score = old["id"], score
        if best is not None and best_score >= 1:
            _supersede(db, best, new_id, values, terms, text)
        return
    if not topic:
        return
    words = _words(norm)
    for old in db.execute("SELECT id, kinds, norm FROM facts WHERE topic = ? AND superseded_by IS NULL AND id < ? "
                          "ORDER BY id DESC LIMIT 20", (topic, new_id)).fetchall():
        if not (set(old["kinds"].split(",")) & values):
            continue
        owords = _words(old["norm"])
        if len(words & owords) / max(1, len(words | owords)) >= 0.6:  # the same statement, a new value
            db.execute("UPDATE facts SET superseded_by = ? WHERE id = ?", (new_id, old["id"]))
            break


def _supersede(db, old_id, new_id, kinds, terms, new_text):
    """Mark the old fact superseded; when it also carries other values ("the defense
    is on 2026-06-30, the midterm on 2026-04-10"), keep it current with only the
    corrected value marked, so the other details are not lost with it."""
    old = db.execute("SELECT text FROM facts WHERE id = ?", (old_id,)).fetchone()["text"]
    values = facts_mod.hard_values(old, [k for k in kinds if k in facts_mod.HARD])
    # values the correction states as current ("13:52 UTC, not 14:05 UTC": only 13:52)
    fresh = {v for st, _, v in facts_mod.hard_values(new_text) if not _NEGATED.search(new_text[max(0, st - 14):st])}
    stale = [v for v in values if v[2] not in fresh]
    if not stale:
        return  # a restatement of the same value, not a correction of this fact
    if len(facts_mod.hard_values(old)) <= 1:
        db.execute("UPDATE facts SET superseded_by = ? WHERE id = ?", (new_id, old_id))
        return
    # the stale value nearest to the words the correction shares with this fact
    anchors = [i for t in terms for i in _find_all(old.lower(), t)] or [0]
    start, end, value = min(stale, key=lambda v: min(abs(v[0] - a) for a in anchors))
    text = old[:start] + f"{value} {STALE_MARK}" + old[end:]
    db.execute("UPDATE facts SET text = ? WHERE id = ?", (text, old_id))  # norm stays: the source sentence


STALE_MARK = "(superseded, no longer current)"
_NEGATED = re.compile(r"(?i)(?:\bnot|\binstead of|\brather than|\bwas|\bfrom|不是|而非|原来|原定|从)\s*$")


def _find_all(hay, needle):
    i = hay.find(needle)
    while i != -1:
        yield i
        i = hay.find(needle, i + 1)


def live_facts(store, limit=400):
    """Facts by priority: current ones first; superseded ones after, marked as such
    (they may still carry details the newer statement does not repeat)."""
    # two index-driven queries (facts_live): the cost follows the limit, not the history
    live = store.db.execute("SELECT * FROM facts WHERE superseded_by IS NULL ORDER BY priority DESC, id ASC "
                            "LIMIT ?", (limit,)).fetchall()
    old = store.db.execute("SELECT * FROM facts WHERE superseded_by IS NOT NULL ORDER BY id DESC LIMIT ?",
                           (limit // 4,)).fetchall()
    return live + sorted(old, key=lambda r: -r["priority"])


def superseded_count(store):
    return store.db.execute("SELECT count(*) FROM facts WHERE superseded_by IS NOT NULL").fetchone()[0]


# -- rendering pieces ------------------------------------------------------------

def _trim(text, limit=220):
    return text if len(text) <= limit else text[: limit - 1] + "…"


def facts_block(rows, budget):
    """The highest-priority live facts that fit *budget* tokens, in conversation order."""
    chosen, used = [], 0
    for r in rows:
        if r["superseded_by"] is not None:
            line = f"- [superseded, no longer current] {_trim(r['text'], 160)}"
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
        pieces = llm["text"].split("\n\n")  # one per chunk; keep the newest that fit
        kept = []
        for piece in reversed(pieces):
            if estimate("\n\n".join([piece] + kept)) > budget - 30:
                break
            kept.insert(0, piece)
        if kept:
            more = store.db.execute("SELECT count(*) FROM messages WHERE id > ? AND id <= ?",
                                    (llm["upto"], older_upto)).fetchone()[0]
            head = f"({len(pieces) - len(kept)} older summary parts left out.)\n" if len(kept) < len(pieces) else ""
            tail = f"\n({more} later messages are not in this summary; their facts are listed.)" if more else ""
            return head + "\n\n".join(kept) + tail
    first = store.db.execute("SELECT min(id) FROM messages").fetchone()[0] or 0
    # the range it covers, and how many corrections it knows of (a later correction re-marks it)
    stale_n = superseded_count(store)
    key = f"summary-{first}-{older_upto}-{budget}-{stale_n}.json"
    path = os.path.join(cache_dir, key)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)["text"]
    except (OSError, ValueError, KeyError):
        pass
    db = store.db
    # first is min(id): the messages up to older_upto are all but the (few, recent) ones after it.
    # A count over an id range walks the table's own pages, i.e. the whole history.
    n = store.count() - db.execute("SELECT count(*) FROM messages WHERE id > ?", (older_upto,)).fetchone()[0]
    t0 = db.execute("SELECT ts FROM messages WHERE id >= ? ORDER BY id LIMIT 1", (first,)).fetchone()
    t1 = db.execute("SELECT ts FROM messages WHERE id <= ? ORDER BY id DESC LIMIT 1", (older_upto,)).fetchone()
    t0, t1 = (t0[0] if t0 else 0), (t1[0] if t1 else 0)
    first_user = db.execute("SELECT content FROM messages WHERE role = 'user' AND id <= ? ORDER BY id LIMIT 1",
                            (older_upto,)).fetchone()
    lines = [f"Earlier conversation: {n} messages, {_day(t0)} to {_day(t1)}."]
    if first_user:
        # built from the source message, but a statement corrected since is marked, not repeated
        # only the facts of these sentences matter: look them up by norm (facts_norm; the unary +
        # keeps the planner off facts_live and facts_msg, which would scan every fact of the history)
        sents = [(s, facts_mod.normalize(s)) for s in facts_mod.sentences(first_user[0])]
        norms = sorted({nm for _s, nm in sents})
        stale, marked = set(), {}
        for i in range(0, len(norms), 500):
            chunk = norms[i:i + 500]
            marks = ",".join("?" * len(chunk))
            stale.update(r[0] for r in db.execute(
                f"SELECT norm FROM facts WHERE norm IN ({marks}) AND +superseded_by IS NOT NULL AND +msg_id <= ?",
                (*chunk, older_upto)))
            rows = db.execute(
                f"SELECT norm, text, priority, id FROM facts WHERE norm IN ({marks}) AND +superseded_by IS NULL "
                "AND +msg_id <= ? AND text LIKE ?", (*chunk, older_upto, f"%{STALE_MARK}%")).fetchall()
            marked.update((r[0], r[1]) for r in sorted(rows, key=lambda r: (-r[2], r[3])))  # facts_live order
        parts = []
        for sent, norm in sents:
            parts.append("(a statement superseded later)" if norm in stale else marked.get(norm, sent))
        lines.append(f"Initial request: {_trim(' '.join(parts), 400)}")
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

def assemble(store, *, budget, mode="auto", query=None, system=None, system_compact=None, log_dir=None,
             llm_summary=None, refresh_limit=None):
    refresh_facts(store, limit=refresh_limit)
    ctx = Context()
    ctx.budget = budget
    n = store.count()
    recent_pool = store.recent(200)
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

    rows = []
    if mode in ("summary", "hybrid"):
        rows = live_facts(store)
        cap = int(budget * (0.65 if mode == "summary" else 0.55))
        chosen, text = facts_block(rows, cap)
        if text:
            p = Part("facts", text)
            ctx.parts.append(p)
            used += p.tokens
            ctx.facts = chosen
        ctx.superseded = superseded_count(store)

    if query:
        hits = store.search(query, 10)
        lines, qused = [], 0
        for m in sorted(hits, key=lambda m: m.id):
            line = f"{m.role} #{m.id}: {_trim(m.content, 600)}"
            t = estimate(line)
            if used + qused + t > budget * 0.25 + used:
                break
            lines.append(line)
            qused += t
        if lines:
            p = Part("query", "\n".join(lines))
            ctx.parts.append(p)
            used += p.tokens

    # recent turns, newest first within what is left (always at least the last 2)
    if mode == "zero":
        last = [m for m in recent_pool if m.role == "user"][-1:] or recent_pool[-1:]
        ctx.recent = last
    else:
        limit = {"short": 6, "summary": 1}.get(mode)
        remaining = budget - used - (int(budget * 0.12) if mode in ("hybrid", "summary") else 0)
        picked, rused = [], 0
        for m in reversed(recent_pool):
            t = m.tokens + PER_MESSAGE
            if len(picked) >= 2 and (rused + t > remaining or (limit and len(picked) >= limit)):
                break
            picked.append(m)
            rused += t
        ctx.recent = list(reversed(picked))

    if mode in ("summary", "hybrid") and ctx.recent:
        older_upto = ctx.recent[0].id - 1
        left = max(0, budget - used - sum(m.tokens + PER_MESSAGE for m in ctx.recent))
        s = summary_block(store, older_upto, min(left, int(budget * 0.15)), os.path.join(store.dir, "cache"),
                          llm=llm_summary)
        if s:
            at = next((i for i, p in enumerate(ctx.parts) if p.name in ("facts", "query")), len(ctx.parts))
            ctx.parts.insert(at, Part("summary", s))

    ctx.decision = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "mode": mode, "reason": reason,
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


# -- output formats ---------------------------------------------------------------------

TITLES = {"system": "Project instructions", "task": "Current task (working memory)", "facts": "Facts to keep (current values; newer statements win)",
          "summary": "Summary of earlier turns", "query": "Relevant earlier turns"}


def to_text(ctx):
    out = []
    for p in ctx.parts:
        out.append(f"{TITLES[p.name]}:\n{p.text}")
    if ctx.recent:
        out.append("Recent turns:\n" + "\n".join(f"{m.role}: {m.content}" for m in ctx.recent))
    return "\n\n".join(out) + "\n"


ERRORS = re.compile(r"(?i)\b(?:error|exception|traceback|failed|failure|crash|bug|fix(?:ed)?|broken)\b|报错|错误|异常|修复|失败")
DONE = re.compile(r"(?i)\b(?:done|finished|completed|merged|shipped|deployed|works now)\b|完成|搞定|已上线")
NEXT = re.compile(r"(?i)\bnext step|\bnext,? (?:we|i)\b|下一步")
SECTIONS = ("Requirements and preferences", "Key technical points", "Files touched", "Errors and fixes",
            "Progress", "User questions", "Pending tasks", "Next step", "Superseded (no longer current)")


def session_memory(ctx):
    """The facts kept, arranged as a session memory: {section: [lines]} in SECTIONS order."""
    out = {k: [] for k in SECTIONS}
    for r in ctx.facts:
        text, kinds = _trim(r["text"]), set(r["kinds"].split(","))
        if r["superseded_by"] is not None:
            out["Superseded (no longer current)"].append(_trim(r["text"], 160))
        elif r["tag"] == "question":
            out["User questions"].append(r["text"])  # verbatim
        elif NEXT.search(text):
            out["Next step"].append(text)
        elif r["tag"] == "todo":
            out["Pending tasks"].append(text)
        elif ERRORS.search(text):
            out["Errors and fixes"].append(text)
        elif DONE.search(text):
            out["Progress"].append(text)
        elif r["tag"] in ("requirement", "preference"):
            out["Requirements and preferences"].append(text)
        elif kinds == {"path"} or ("path" in kinds and not kinds & {"version", "url", "money", "date"}):
            out["Files touched"].append(text)
        else:
            out["Key technical points"].append(text)
    return {k: v for k, v in out.items() if v}


def to_markdown(ctx, title="Conversation context"):
    out = [f"# {title}", ""]
    for p in ctx.parts:
        if p.name == "facts" and ctx.facts:
            out += ["## Session memory", ""]
            for section, lines in session_memory(ctx).items():
                out += [f"**{section}**", ""] + [f"- {l}" for l in lines] + [""]
            continue
        out += [f"## {TITLES[p.name]}", "", p.text, ""]
    if ctx.recent:
        last_user = [m for m in ctx.recent if m.role == "user"][-1:]
        if last_user and ctx.facts:
            out += ["**Current work** (the latest request)", "", _trim(last_user[0].content, 400), ""]
    if ctx.recent:
        out += ["## Recent turns", ""]
        for m in ctx.recent:
            out += [f"**{m.role}** #{m.id}:", m.content, ""]
    return "\n".join(out).rstrip() + "\n"


def to_messages(ctx):
    msgs = []
    head = "\n\n".join(f"{TITLES[p.name]}:\n{p.text}" for p in ctx.parts)
    if head:
        msgs.append({"role": "system", "content": head})
    for m in ctx.recent:
        msgs.append({"role": m.role if m.role != "tool" else "user",
                     "content": m.content if m.role != "tool" else f"[tool output]\n{m.content}"})
    return msgs


def explain(ctx):
    d = ctx.decision
    lines = [f"mode {d['mode']}: {d['reason']}", f"budget {d['budget']} tokens; used {ctx.tokens}"]
    for k, v in d["tokens"].items():
        lines.append(f"  {k:<8} {v:>6} tokens")
    lines.append(f"recent window {d['window']} of {d['messages']} messages; {d['facts']} facts kept, "
                 f"{d['superseded']} superseded")
    return "\n".join(lines)
