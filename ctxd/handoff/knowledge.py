"""What the learner knows: concepts with mastery, errors, prerequisites and an FSRS card.

One row per concept in the project's store (table ``concepts``, migration 4).

- **mastery**: an exponential moving average of practice scores,
  ``m = (1 - ALPHA) * m + ALPHA * score`` with ``ALPHA = 0.3``, clamped to 0..1.
  The first observation of a concept is taken as it is (an EMA starts at its
  first sample), so a concept a handoff saw at "high" starts at 0.85, not 0.26.
- **errors**: how many practices were marked as an error (a misunderstanding).
- **last_practice**: unix time of the latest practice or observation.
- **prerequisites**: concept names (a JSON list); a prerequisite below
  ``WEAK`` (0.6), or never practised, is *weak* and the teach prompt names it.
- **card**: the concept's FSRS card (JSON, the ``fsrs`` package's own format)
  and ``due``, its due time. Each practice is one FSRS review; the rating comes
  from the score (< 0.3 Again, < 0.6 Hard, < 0.85 Good, else Easy), and a
  practice marked as an error is rated at most Hard. Fuzzing is off, so the
  schedule is deterministic.

A concept is **due** when its FSRS due time has passed, or when it has been
untouched for ``STALE_DAYS`` (14) days, or when it has never been practised.

Handoff archives seed it: every ``key_points`` entry is an observation with the
score its ``mastery_level`` stands for (low 0.3, medium 0.6, high 0.85), applied
once per (concept, archive); ``observe_archive`` is called by ``ctxd teach`` and
``ctxd review`` before they read, so review works right after a handoff.
"""

import hashlib
import json
import time
from datetime import datetime, timezone

from ctxd.errors import CtxdError, ExitCode
from ctxd.isotime import parse

ALPHA = 0.3
WEAK = 0.6
STALE_DAYS = 14
LEVEL_SCORE = {"low": 0.3, "medium": 0.6, "high": 0.85}
DAY = 86400.0


# -- pure pieces ---------------------------------------------------------------------

def ema(old, score, alpha=ALPHA):
    """The next mastery: the EMA of *old* and *score*, clamped to 0..1 (None: first sample)."""
    score = _clamp(score)
    if old is None:
        return score
    return _clamp((1.0 - alpha) * _clamp(old) + alpha * score)


def _clamp(x):
    x = float(x)
    if x != x:  # NaN
        raise CtxdError("a score must be a number between 0 and 1", ExitCode.USAGE)
    return 0.0 if x < 0 else 1.0 if x > 1 else x


def rating_for(score, error=False):
    """The FSRS rating a practice score stands for."""
    from fsrs import Rating

    score = _clamp(score)
    r = Rating.Again if score < 0.3 else Rating.Hard if score < 0.6 else Rating.Good if score < 0.85 else Rating.Easy
    return min(r, Rating.Hard) if error else r


def level_of(mastery):
    """low / medium / high for a mastery number (the teach prompt's three treatments)."""
    if mastery is None:
        return None
    return "high" if mastery >= 0.8 else "medium" if mastery >= 0.5 else "low"


def key(name):
    """How concept names are compared: case-folded, whitespace collapsed."""
    return " ".join(str(name).split()).casefold()


def _ts(now):
    if now is None:
        return time.time()
    if isinstance(now, datetime):
        return (now if now.tzinfo else now.replace(tzinfo=timezone.utc)).timestamp()
    return float(now)


def _utc(ts):
    return datetime.fromtimestamp(ts, timezone.utc)


def _scheduler():
    from fsrs import Scheduler

    return Scheduler(enable_fuzzing=False)


def _new_card(k):
    from fsrs import Card

    # a stable id (the default is the creation time, and sleeps a millisecond)
    return Card(card_id=int(hashlib.sha256(k.encode()).hexdigest()[:12], 16), due=_utc(0))


# -- rows ----------------------------------------------------------------------------

def _record(row):
    if row is None:
        return None
    return {
        "name": row["name"],
        "mastery": row["mastery"] if row["practices"] else None,
        "practices": row["practices"],
        "errors": row["errors"],
        "last_practice": row["last_practice"],
        "prerequisites": json.loads(row["prerequisites"] or "[]"),
        "due": row["due"],
        "card": json.loads(row["card"]) if row["card"] else None,
    }


def get(store, concept):
    """The concept's record (a dict), or None. ``mastery`` is None until it is practised."""
    return _record(store.concept(key(concept)))


def all_concepts(store):
    return [_record(r) for r in store.concepts()]


def snapshot(store, names):
    """{name: record} for *names* and, transitively, their prerequisites (for build_prompt)."""
    out, todo, seen = {}, list(names), set()
    while todo:
        n = todo.pop(0)
        k = key(n)
        if not k or k in seen:
            continue
        seen.add(k)
        rec = get(store, n)
        if rec is not None:
            out[rec["name"]] = rec
            todo += rec["prerequisites"]
    return out


def _ensure(store, name, now):
    k = key(name)
    if not k:
        raise CtxdError("a concept needs a name", ExitCode.USAGE)
    store.ensure_concept(k, " ".join(str(name).split()), now)
    return k


def _apply(store, k, score, error, now):
    from fsrs import Card

    row = store.concept(k)
    mastery = ema(row["mastery"] if row["practices"] else None, score)
    card = Card.from_dict(json.loads(row["card"])) if row["card"] else _new_card(k)
    if card.last_review is not None and _utc(now) < card.last_review:
        now = card.last_review.timestamp()  # FSRS reviews go forward in time
    card, _log = _scheduler().review_card(card, rating_for(score, error), review_datetime=_utc(now))
    store.record_practice(k, mastery, error, now, json.dumps(card.to_dict()), card.due.timestamp())


def practice(store, concept, score, error=False, now=None):
    """Record one practice of *concept* with *score* (0..1); return its updated record."""
    now = _ts(now)
    score = _clamp(score)

    with store.transaction():
        k = _ensure(store, concept, now)
        _apply(store, k, score, error, now)
    return get(store, concept)


def set_prerequisites(store, concept, prerequisites, now=None):
    """Replace *concept*'s prerequisites (names, order kept, duplicates and itself dropped)."""
    now = _ts(now)
    k0 = key(concept)
    names, seen = [], {k0}
    for p in prerequisites:
        p = " ".join(str(p).split())
        if p and key(p) not in seen:
            seen.add(key(p))
            names.append(p)

    with store.transaction():
        k = _ensure(store, concept, now)
        store.set_concept_prerequisites(k, json.dumps(names, ensure_ascii=False))
    return get(store, concept)


def weak_prerequisites(store_or_knowledge, concept, threshold=WEAK):
    """[(name, mastery or None)] of *concept*'s prerequisites below *threshold* or never practised.

    Accepts a store or a ``snapshot`` dict.
    """
    know = store_or_knowledge if isinstance(store_or_knowledge, dict) else snapshot(store_or_knowledge, [concept])
    by_key = {key(n): r for n, r in know.items()}
    rec = by_key.get(key(concept))
    out = []
    for p in (rec or {}).get("prerequisites", []):
        pr = by_key.get(key(p))
        m = pr["mastery"] if pr else None
        if m is None or m < threshold:
            out.append((p, m))
    return out


# -- due -----------------------------------------------------------------------------

def due(store, now=None):
    """Concepts due for review at *now*, most overdue first: a list of records, each with
    ``reason`` (fsrs | stale | new), ``due_since`` (unix time it became due)."""
    now = _ts(now)
    stale_before = now - STALE_DAYS * DAY
    rows = store.due_concepts(now, stale_before)
    out = []
    for r in rows:
        rec = _record(r)
        if not r["practices"]:
            rec["reason"], rec["due_since"] = "new", r["created"]
        else:
            stale_at = r["last_practice"] + STALE_DAYS * DAY
            if r["due"] is not None and r["due"] <= now and r["due"] <= stale_at:
                rec["reason"], rec["due_since"] = "fsrs", r["due"]
            elif stale_at <= now:
                rec["reason"], rec["due_since"] = "stale", stale_at
            else:
                rec["reason"], rec["due_since"] = "fsrs", r["due"]
        out.append(rec)
    out.sort(key=lambda r: (r["due_since"], key(r["name"])))
    return out


# -- handoff archives ----------------------------------------------------------------

def _archive_ts(archive):
    for k in ("updated_at", "updated", "created_at"):
        v = archive.get(k)
        ts = parse(v)
        if ts is not None:
            return ts
    return None


def observe_archive(store, archive, source=None, now=None):
    """Apply an archive's key points as observations; return how many were new.

    *source* names the archive (its id; default: its session id and creation
    time). The same (concept, source) at the same level is applied once; an
    archive re-saved with a changed level is a new observation. Observations are
    timed at the archive's creation (or *now*), and one older than the concept's
    latest practice is recorded but not applied (the practice is newer news).
    """
    points = archive.get("key_points") or []
    source = str(source or f"{archive.get('session_id', '')}@{archive.get('created_at', '')}")
    when = _archive_ts(archive)
    when = _ts(now) if when is None else when
    applied = 0
    with store.transaction():
        for kp in points:
            if not isinstance(kp, dict):
                continue
            name = kp.get("concept")
            level = str(kp.get("mastery_level") or "").strip().lower()
            if not isinstance(name, str) or not key(name) or level not in LEVEL_SCORE:
                continue
            k = _ensure(store, name, when)
            if store.observation_level(k, source) == level:
                continue
            store.record_observation(k, source, level, when)
            row = store.concept(k)
            if row["practices"] and row["last_practice"] is not None and row["last_practice"] > when:
                continue
            _apply(store, k, LEVEL_SCORE[level], False, when)
            pre = kp.get("prerequisites")
            if isinstance(pre, list) and row["prerequisites"] in ("[]", None):
                names = [p for p in pre if isinstance(p, str) and key(p) and key(p) != k]
                store.set_concept_prerequisites(k, json.dumps(names, ensure_ascii=False))
            applied += 1
    return applied
