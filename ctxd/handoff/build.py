"""Build a handoff archive from a project's conversation store, offline and deterministically,
from the session's messages and the facts kept in the store (ctxd.memory.context.fact_merge).

What is inferred about the learner is in ctxd.handoff.learner, the environment in
ctxd.handoff.environment; a coding session's end state in ctxd.handoff.endstate. The archive
aims at a token budget: the session's tokens / ``[handoff] compression_ratio`` (at least
MIN_TARGET). docs/handoff-teach.md describes the heuristics.
"""

import os
import re

from ctxd.errors import CtxdError, NotFoundError
from ctxd.handoff import archive, archive_schema
from ctxd.handoff.environment import environment, is_inside
from ctxd.handoff.learner import (LEADIN, concept_of, detect_language, infer_style, key_points, question_depth,
                                  question_pool, stage_of, substantive, topic_title)
from ctxd.memory.text.tokens import estimate

DEFAULT_RATIO = 10.0
MIN_TARGET = 1200  # tokens: a short conversation still gets a useful archive (its ratio is then below target)
MAX_KEY_POINTS = 15
MAX_QUESTIONS = 40


# -- configuration ------------------------------------------------------------------------

def settings(config_raw):
    """[handoff], [learning_style] and [mastery] from config.toml, checked."""
    from ctxd.errors import ConfigError

    raw = config_raw if isinstance(config_raw, dict) else {}
    h = raw.get("handoff") or {}
    if not isinstance(h, dict):
        raise ConfigError("config.toml: [handoff] must be a table")
    ratio = h.get("compression_ratio", DEFAULT_RATIO)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 1 <= ratio <= 1000:
        raise ConfigError("config.toml: 'handoff.compression_ratio' must be a number from 1 to 1000")
    lang = h.get("language", "auto")
    if lang not in ("auto", "zh", "en"):
        raise ConfigError("config.toml: 'handoff.language' must be \"auto\", \"zh\" or \"en\"")
    pool = h.get("auto_pool_questions", True)
    if not isinstance(pool, bool):
        raise ConfigError("config.toml: 'handoff.auto_pool_questions' must be true or false")
    style = raw.get("learning_style") or {}
    if not isinstance(style, dict):
        raise ConfigError("config.toml: [learning_style] must be a table")
    checks = {"preference": (str,), "wants_code_examples": (bool,), "wants_visual_descriptions": (bool,),
              "depth": archive_schema.DEPTHS, "pace": archive_schema.PACES}
    for k, v in style.items():
        if k not in checks:
            raise ConfigError(f"config.toml: unknown key 'learning_style.{k}' (known: {', '.join(checks)})")
        allowed = checks[k]
        if allowed and isinstance(allowed[0], type):
            if not isinstance(v, allowed[0]):
                raise ConfigError(f"config.toml: 'learning_style.{k}' must be a {allowed[0].__name__}")
        elif v not in allowed:
            raise ConfigError(f"config.toml: 'learning_style.{k}' must be one of {', '.join(allowed)}")
    mast = raw.get("mastery") or {}
    if not isinstance(mast, dict) or not all(v in archive_schema.MASTERY for v in mast.values()):
        raise ConfigError("config.toml: [mastery] maps concepts to \"low\", \"medium\" or \"high\"")
    return {"ratio": float(ratio), "language": lang, "auto_pool_questions": pool, "learning_style": style,
            "mastery": mast}


# -- the build ----------------------------------------------------------------------------

class _Msg:
    __slots__ = ("id", "role", "content", "ts", "tokens")

    def __init__(self, m):
        self.id, self.role, self.content, self.ts, self.tokens = m.id, m.role, m.content, m.ts, m.tokens
        if m.output_path:  # an offloaded output: the conversation had all of it
            try:
                with open(m.output_path, encoding="utf-8", errors="replace") as f:
                    self.tokens = max(self.tokens, estimate(f.read()))
            except OSError:
                pass


def _iso(ts):
    return archive_schema.now_iso(ts)


def _trim(text, limit):
    t = " ".join(text.split())
    return t if len(t) <= limit else t[: limit - 1] + "…"


def _is_teach_prompt(m):
    """A `ctxd teach` prompt (recorded, or pasted into an AI CLI): instructions, not what was said."""
    if m.source == "teach":
        return True
    if m.role in ("user", "system") and m.content.lstrip()[:24].startswith("# "):
        from ctxd.memory.store.items import is_teach_prompt

        return is_teach_prompt(m.role, m.content, m.source)
    return False


def _teach_outcome(raw_msgs):
    """What `ctxd teach` sessions in this conversation achieved: the tutor's [Qn] answers
    and [done: item] markers (ctxd.handoff.teach.session_outcome), when teach is there."""
    try:
        from ctxd.handoff.teach import session_outcome
    except ImportError:
        return {"resolved": [], "completed": []}
    try:
        got = session_outcome(raw_msgs)
        return {"resolved": list(got.get("resolved", [])), "completed": list(got.get("completed", []))}
    except Exception:  # another module's parser must never block a handoff
        return {"resolved": [], "completed": []}


def _same(a, b):
    fa, fb = re.sub(r"[\W_]+", "", a.lower()), re.sub(r"[\W_]+", "", b.lower())
    return bool(fa) and (fa == fb or (len(fb) >= 6 and fb in fa))


def _cost(obj):
    import json

    return estimate(json.dumps(obj, ensure_ascii=False)) + 2


def choose_session(store, session=None):
    if session is not None:
        if not store.has_session(session):
            known = ", ".join(repr(s) for s in store.sessions()[:8]) or "none"
            raise NotFoundError(f"no messages in session {session!r} (sessions: {known})")
        return session
    sessions = store.sessions()
    if not sessions:
        raise NotFoundError("no conversation recorded yet (ctxd chat add / import / install), nothing to hand off")
    return sessions[0]


def build(store, *, root=None, session=None, config_raw=None, previous=None, now=None):
    """A handoff archive (a dict, current schema, not yet saved) for *session* (default:
    the most recent one) of the store. *previous*: the last archive of that session
    (its question pool carries over)."""
    from ctxd.memory.context import fact_merge, render_formats, summarizer, tasks
    from ctxd.memory.context.summary_cache import summary_block

    cfg = settings(config_raw)
    session = choose_session(store, session)
    fact_merge.refresh_facts(store)
    raw_msgs = list(store.iter_all(session=session))
    # ctxd's own prompts are not the learner; a sub-agent's lines are not the conversation
    msgs = [_Msg(m) for m in raw_msgs if not _is_teach_prompt(m) and m.provenance not in ("ctxd", "subagent")]
    ids = {m.id for m in msgs}
    user_texts = [m.content for m in msgs if m.role == "user"]
    tokens_from = sum(m.tokens for m in msgs)
    target = max(MIN_TARGET, int(tokens_from / cfg["ratio"]))

    rows = [r for r in fact_merge.live_facts(store, limit=4000) if r["msg_id"] in ids]
    lang = cfg["language"] if cfg["language"] != "auto" else detect_language(user_texts)
    a = archive_schema.empty(session, now or archive_schema.now_iso(), lang)
    # placeholders of the right size (save() sets the real ones), so the footprint measures the saved file
    n_guess = (previous.get("version", 0) + 1) if previous and isinstance(previous.get("version"), int) else 1
    a["id"], a["version"] = f"{archive.slug(session)}_v{n_guess}", n_guess
    if root:
        a["project"] = {"root": root, "name": os.path.basename(root.rstrip("/")) or root}

    # topic, stage
    first = next((m.content for m in msgs if m.role == "user" and substantive(m.content)), "")
    a["topic"]["title"] = topic_title(first)
    latest_q = next((m.content for m in reversed(msgs) if m.role == "user" and substantive(m.content)
                     and (question_depth(m.content) or "?" in m.content or "？" in m.content)), "")
    a["topic"]["current_subtopic"] = concept_of(latest_q) if latest_q else ""
    a["topic"]["stage"] = stage_of([t for t in user_texts if substantive(t)])

    # key points, questions
    kps = key_points(msgs, cfg["mastery"])
    prev_q = previous if previous and previous.get("session_id") == session else None
    qfacts = sorted((r for r in rows if r["tag"] == "question" and r["role"] == "user"), key=lambda r: r["id"])
    questions = question_pool(msgs, qfacts, prev_q, cfg["auto_pool_questions"])
    outcome = _teach_outcome(raw_msgs)
    for q in questions:
        if q["status"] == "open" and any(_same(q["question"], r) for r in outcome["resolved"]):
            q["status"], q["resolved_at"] = "resolved", _iso(msgs[-1].ts)

    # progress, from the facts arranged by what they say (what was said, not tool output)
    memory = render_formats.facts_layout([r for r in rows if r["role"] != "tool"])
    resolved_concepts = []
    for q in questions:
        if q["status"] == "resolved":
            c = concept_of(q["question"])
            if c and c not in resolved_concepts:
                resolved_concepts.append(c)
    completed = [_trim(t, 160) for t in memory.get("Progress", [])[:6]] + resolved_concepts[-6:]
    completed += [_trim(t, 160) for t in outcome["completed"] if t not in completed][:6]
    open_task = tasks.current(store)
    last_req = latest_q or next((m.content for m in reversed(msgs) if m.role == "user" and substantive(m.content)),
                                None)
    if open_task is not None:
        in_progress = open_task["name"]
    elif last_req:
        in_progress = _trim(LEADIN.sub("", last_req, count=1) if len(last_req) > 6 else last_req, 200)
    else:
        in_progress = None
    next_up = [_trim(t, 160) for t in (memory.get("Next step", []) + memory.get("Pending tasks", []))][:6]
    a["progress"] = {"completed": completed, "in_progress": in_progress, "next_up": next_up}

    # learning style (config wins), environment
    style = infer_style(user_texts, [r["text"] for r in sorted(rows, key=lambda r: r["id"]) if r["tag"] == "preference"
                                     and r["role"] == "user" and r["superseded_by"] is None][:4])
    style.update(cfg["learning_style"])
    a["learning_style"] = style
    a["environment"] = environment(root, [r["text"] for r in sorted(rows, key=lambda r: r["id"])])
    _coding_session(a, store, session, root, raw_msgs)

    # the summary of the session, as a context shows it
    llm = summarizer.load(store.dir) if summarizer.settings({"raw": config_raw or {}}) else None
    try:
        a["summary"] = summary_block(store, max(ids) if ids else 0, max(60, int(target * 0.08)),
                                     os.path.join(store.dir, "cache"), llm=llm) if ids else ""
    except Exception:  # a summary is a nicety; never fail a handoff on it
        a["summary"] = ""

    # fit the budget: fixed parts, then key points and questions within their shares, then facts
    kp_cap = int(target * 0.18)
    q_cap = int(target * 0.18)
    used = 0
    chosen_kp = []
    for kp in (kps if "end_state" not in a else [])[:MAX_KEY_POINTS]:  # a coding session teaches no concepts
        clean = {k: v for k, v in kp.items() if not k.startswith("_")}
        c = _cost(clean)
        if used + c > kp_cap:
            continue
        chosen_kp.append((kp["_first"], clean))
        used += c
    a["key_points"] = [c for _, c in sorted(chosen_kp, key=lambda x: x[0])]
    # open questions first, then the most recent resolved ones; kept in asking order
    ranked = [q for q in questions if q["status"] == "open"][::-1] + [q for q in questions if q["status"] != "open"][::-1]
    picked, used = set(), 0
    for q in ranked[: MAX_QUESTIONS * 3]:
        c = _cost(q)
        if used + c > q_cap or len(picked) >= MAX_QUESTIONS:
            continue
        picked.add(id(q))
        used += c
    a["questions"] = [q for q in questions if id(q) in picked]
    in_pool = {" ".join(q["question"].split()) for q in a["questions"]}

    a["context_footprint"] = {"tokens_compressed_from": tokens_from, "tokens_compressed_to": 0,
                              "compression_ratio": None}
    base = estimate(archive.dumps(a))
    room = target - base - 8
    facts, used = [], 0
    # the facts list: passing questions ("...?") live in the question pool, not here; a
    # tool output's lines rank below what the learner and the assistant said
    ranked_rows = sorted(rows, key=lambda r: (r["superseded_by"] is not None,
                                              -r["priority"] * (0.5 if r["role"] == "tool" else 1.0), r["id"]))
    for r in ranked_rows:
        text = r["text"]
        if r["tag"] == "question" and (text.rstrip().endswith(("?", "？")) or " ".join(text.split()) in in_pool
                                       or " ".join(LEADIN.sub("", text, count=1).split()) in in_pool):
            continue
        f = {"text": text, "tag": r["tag"]}
        if r["superseded_by"] is not None:
            f["superseded"] = True
        c = _cost(f)
        if used + c > room:
            continue
        facts.append((r["id"], f))
        used += c
    a["facts"] = [f for _, f in sorted(facts, key=lambda x: x[0])]
    _footprint(a)
    # the estimate of parts can drift from the whole: drop the least important facts while over
    # (rows came by priority, so the last one chosen is the least important)
    while facts and a["context_footprint"]["tokens_compressed_to"] > target:
        facts.pop()
        a["facts"] = [f for _, f in sorted(facts, key=lambda x: x[0])]
        _footprint(a)
    return archive_schema.validate(a)


def _coding_session(a, store, session, root, raw_msgs):
    """A coding session's archive says where it ended (ctxd.handoff.endstate): the last typed
    request, the todos by status, the start of the last report, commits, open errors, and the
    cwd and branch its transcript recorded. No learner's stage or concepts, no narration."""
    from ctxd.handoff import endstate

    end = endstate.end_state(store, session, root, raw_msgs)
    if end is None:
        return
    a["end_state"] = end
    now = (end["in_progress"] or [None])[0] or end["last_request"]
    a["topic"]["current_subtopic"] = endstate.cut(now, 200) if now else ""
    a["topic"]["stage"] = "unknown"
    a["key_points"] = []
    done = end["done_todos"] + [f"Committed: {c}" for c in end["commits"] if f"Committed: {c}" not in end["done_todos"]]
    a["progress"] = {"completed": done[-12:], "in_progress": now, "next_up": end["open_todos"][:8]}
    env = a["environment"]
    if end["git_branch"]:
        env["git_branch"] = end["git_branch"]
    if end["cwd"] and not (root and is_inside(end["cwd"], root)):
        # recorded elsewhere: what this directory holds and runs now says nothing of that session
        there = environment(end["cwd"]) if os.path.isdir(end["cwd"]) else None
        env["project_types"] = there["project_types"] if there else []
        env["version_pins"] = there["version_pins"] if there else []
        env["processes"] = []


def _footprint(a):
    fp = a["context_footprint"]
    for _ in range(2):  # the numbers are part of the text they measure
        to = estimate(archive.dumps(a))
        fp["tokens_compressed_to"] = to
        fp["compression_ratio"] = round(fp["tokens_compressed_from"] / to, 2) if to else None


def make(project, store, *, session=None, config_raw=None):
    """Build and save the next archive of *session*; return (id, path, archive)."""
    sess = choose_session(store, session)
    previous = None
    try:
        got = archive.latest(project.context_dir, sess)
        previous = got[2] if got else None
    except CtxdError:
        previous = None  # a corrupt earlier archive must not block a new one
    built = build(store, root=project.root, session=sess, config_raw=config_raw, previous=previous)
    path = archive.save(project.context_dir, built)
    return built["id"], path, built
