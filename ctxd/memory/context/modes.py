"""Which way a context is assembled: the mode ``auto`` picks, and the log of each decision.

Modes: zero (only the last input), short (a few recent turns), long (as many recent turns as
fit), summary (facts + summary + the last input), hybrid (facts + summary + recent turns).
``auto`` picks one from the number of turns, references to earlier turns, distinct entities,
importance and token pressure, with hysteresis; every decision is appended to decisions.jsonl.
"""

import json
import os
import re

MODES = ("zero", "short", "long", "summary", "hybrid")
REFERENCE = re.compile(r"(?i)\b(?:that|it|this|those|these|earlier|above|before|previous(?:ly)?|as (?:i|we) said|"
                       r"you said|mentioned)\b|这个|那个|刚才|上面|之前|前面|上述|那些")
ENTITY = re.compile(r"\b[A-Z][a-zA-Z0-9]+(?:[ -][A-Z][a-zA-Z0-9]+)*\b|`[^`]+`|[\w.-]+\.(?:py|js|ts|go|rs|md|toml|json|yaml|yml)\b")
# Token pressure (the conversation's tokens / the budget) from which the context is compressed:
# below it the whole conversation fits verbatim (long); from it on, compress before it overflows.
COMPRESS_AT = 0.8
LOW_IMPORTANCE = 0.3  # mean importance of the recent turns below which a few of them do (short)
DEFAULT_IMPORTANCE = 0.5  # the mean importance of no turns at all
MANY_ENTITIES = 5  # distinct entities in the last turns above which they need the facts (hybrid)


def choose_mode(store, budget, total_tokens, recent_msgs, previous):
    """(mode, reason, pending) for auto, with hysteresis against *previous* (mode, streak);
    *pending* (mode, streak) is what the next choice compares with."""
    n = store.count()
    last_user = [m for m in recent_msgs if m.role == "user"][-3:]
    refs = sum(len(REFERENCE.findall(m.content)) for m in last_user)
    entities = len({e for m in recent_msgs[-6:] for e in ENTITY.findall(m.content)})
    avg_imp = sum(m.importance for m in recent_msgs) / len(recent_msgs) if recent_msgs else DEFAULT_IMPORTANCE
    pressure = total_tokens / budget if budget else 1.0
    if n <= 1:
        mode, reason = "zero", "a single message"
    elif pressure < COMPRESS_AT:
        mode, reason = "long", f"the whole conversation fits ({pressure:.0%} of the budget)"
    elif refs or entities > MANY_ENTITIES:
        mode, reason = "hybrid", f"{refs} references to earlier turns, {entities} distinct entities, {pressure:.0%} pressure"
    elif avg_imp < LOW_IMPORTANCE and n > 4:
        mode, reason = "short", f"low importance ({avg_imp:.2f}), no references"
    else:
        mode, reason = "hybrid", f"token pressure {pressure:.0%} of the budget: compress early (>= {COMPRESS_AT:.0%})"
    prev_mode, streak = previous
    # Hysteresis: leave the previous mode only once the new choice repeats, unless
    # the previous mode cannot hold the conversation (long at >= 80% pressure).
    if prev_mode and prev_mode != mode and not (prev_mode == "long" and pressure >= COMPRESS_AT):
        if streak < 1:
            return prev_mode, f"kept {prev_mode} (hysteresis; would switch to {mode}: {reason})", (mode, streak + 1)
    return mode, reason, (mode, 0)


def previous(decisions_path):
    """(mode, streak) of the last decision logged at *decisions_path*; (None, 0) when none."""
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


def log(decisions_path, decision):
    """Append *decision* (a dict) to the log at *decisions_path*; a log that cannot be written is
    skipped."""
    try:
        os.makedirs(os.path.dirname(decisions_path), mode=0o700, exist_ok=True)
        fd = os.open(decisions_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(json.dumps(decision, ensure_ascii=False) + "\n")
    except OSError:
        pass
