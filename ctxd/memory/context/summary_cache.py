"""The summary of the turns older than the recent window, as a context part.

The latest finished LLM summary (``ctxd.memory.context.summarizer``) when one covers them, held to the
session memory's rules; else an extractive one built from the source messages (never from an
earlier summary), a statement corrected since marked, not repeated. An extractive summary is
cached by the range of messages it covers (``cache/summary-*.json``, the newest few kept).
"""

import json
import os
import time

from ctxd.memory.context import facts as facts_mod
from ctxd.memory.context.fact_merge import mark_superseded
from ctxd.memory.text.tokens import estimate

CACHED = 8  # summaries kept in the cache: a new range makes the older ones useless
NOTES_TOKENS = 30  # of an LLM summary's budget, for the notes on what it leaves out


def summary_block(store, older_upto, budget, cache_dir, llm=None):
    """Summary of messages with id <= older_upto: the latest finished LLM summary when one
    covers them (never waited for), else extractive; cached by the range it covers."""
    if older_upto <= 0:
        return ""
    if llm and llm.get("upto", 0) > 0 and llm.get("text"):
        pieces = [p for p in (held_to_rules(p) for p in llm["text"].split("\n\n")) if p]  # one per chunk
        kept = []
        for piece in reversed(pieces):
            if estimate("\n\n".join([piece] + kept)) > budget - NOTES_TOKENS:
                break
            kept.insert(0, piece)
        if kept:
            more = store.count_between(llm["upto"], older_upto)
            head = f"({len(pieces) - len(kept)} older summary parts left out.)\n" if len(kept) < len(pieces) else ""
            tail = f"\n({more} later messages are not in this summary; their facts are listed.)" if more else ""
            return head + "\n\n".join(kept) + tail
    first = store.first_id()
    # the range it covers, and how many corrections it knows of (a later correction re-marks it)
    stale_n = store.superseded_count()
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
        lines.append(f"Initial request: {facts_mod.trim(mark_superseded(store, first_user, older_upto), 400)}")
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
    from ctxd.memory.context import session_text

    out = []
    for line in text.splitlines():
        bullet = line.lstrip().startswith(("- ", "* ", "• "))
        shown = session_text.tidy(line, 400)
        if not shown or session_text.is_narration(shown):
            continue
        out.append(("- " if bullet else "") + shown)
    return "\n".join(out)


def _prune_summaries(cache_dir, keep, most=CACHED):
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
