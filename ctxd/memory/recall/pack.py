"""Packing recalled turns into a budget: the best hits that fit, in time order under date headings.

``pack`` charges each turn what its line costs (an ``#id`` only where it is shown: a turn right
after the one before it, same session and day, goes without) and counts the packed text whole.
"""

import time

from ctxd.memory.store import origin
from ctxd.memory.text.tokens import estimate

MAX_ITEM_CHARS = 1200  # one packed item is at most this long (long turns are cut at a line end)
PER_ITEM = 1  # tokens of a packed item's line break (its label is counted with its text)


def _day(ts):
    return time.strftime("%Y-%m-%d", time.gmtime(ts or 0))


def item_text(m, with_id=True):
    """A packed turn: ``#42 user: text``; ``user: text`` right after its predecessor (``_follows``)."""
    text = m.content
    if len(text) > MAX_ITEM_CHARS:
        cut = text[:MAX_ITEM_CHARS]
        nl = cut.rfind("\n")
        text = (cut[:nl] if nl > MAX_ITEM_CHARS // 2 else cut) + " …"
    label = m.role if m.kind in ("prompt", "reply") else f"{m.role} ({m.kind}{', ' + m.tool if m.tool else ''})"
    who = origin.of(m)
    return f"{f'#{m.id} ' if with_id else ''}{label}{f' [{who}]' if who else ''}: {text}"


def _follows(m, before):
    """Whether *m* is the message after *before* (id + 1), same session and day: shown without #id."""
    return None not in (m, before) and m.id == before.id + 1 and m.session == before.session and _day(m.ts) == _day(before.ts)


def _cost(m, counter, labels):
    """Tokens of item_text(m): with the estimator, the count the store keeps of the content plus
    its label's (the estimate is a sum over the text's features, so this is what counting the
    line gives, give or take a token; the packed text is counted whole at the end)."""
    if counter is estimate and m.tokens and len(m.content) <= MAX_ITEM_CHARS:
        label = item_text(m)[:-len(m.content) or None] if m.content else item_text(m)
        key = (len(str(m.id)), label.split(" ", 1)[-1])
        if key not in labels:
            labels[key] = counter(label)
        return m.tokens + labels[key]
    return counter(item_text(m))


def _day_cost(day, counter, labels):
    """Tokens of a ``[day]`` heading. The estimator counts character classes, and every day is
    digits and dashes: one count serves all days of a length (a long history's hits fall on
    hundreds of days)."""
    if counter is not estimate:
        return counter(f"[{day}]")
    key = ("[day]", len(day), day.count("-"))
    if key not in labels:
        labels[key] = counter(f"[{day}]")
    return labels[key]


def pack(hits, budget, counter=estimate):
    """The best hits that fit *budget* tokens, in time order under date headings: (items, text, tokens).
    An #id is charged only where it is shown (not on a turn right after one taken: ``_follows``)."""
    chosen, used, days, labels, by_id = [], 0, set(), {}, {}
    brk = PER_ITEM if counter is estimate else 0  # exact: a line's count holds its line break
    for h in hits:
        m = h.message
        day = _day(m.ts)
        if day not in days and day not in labels:
            labels[day] = _day_cost(day, counter, labels) + brk
        cost = _cost(m, counter, labels) + brk + (0 if day in days else labels[day])
        if m.id - 1 in by_id or m.id + 1 in by_id:  # an #id costs what "#42" counts (the space joins the role)
            for x, before in ((m, by_id.get(m.id - 1)), (by_id.get(m.id + 1), m)):
                key = ("#", len(str(x.id))) if _follows(x, before) else None
                cost -= (labels[key] if key in labels else labels.setdefault(key, counter(f"#{x.id}"))) if key else 0
        if used + cost > budget:
            continue
        chosen.append(h)
        by_id[m.id] = m
        used += cost
        days.add(day)
    chosen.sort(key=lambda h: (h.message.ts or 0, h.message.id))
    out, last_day, last = [], None, None
    for h in chosen:
        day = _day(h.message.ts)
        if day != last_day:
            out.append(f"[{day}]")
            last_day = day
        out.append(item_text(h.message, with_id=not _follows(h.message, last)))
        last = h.message
    text = "\n".join(out)
    return chosen, text, (counter(text) if text else 0)
