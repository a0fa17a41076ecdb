"""Which handoff archive a command means: --from REF, the newest about TOPIC, or the newest.

Used by ctxd teach (through ProjectMemory.find_archive) and the review seeding.
"""

import os

from ctxd.errors import CtxdError, NotFoundError

RECENT = 5
SEARCH = 50  # archives looked through for a TOPIC


def _recent_line(context_dir):
    """The 5 most recent archives as one line: id “topic” (updated), ..."""
    from ctxd.handoff import archive as arch

    rows = arch.recent(context_dir, n=RECENT)
    if not rows:
        return f"there are no handoff archives in {arch.handoff_dir(context_dir)} yet (run: ctxd handoff)"
    return "recent archives: " + ", ".join(f"{hid} “{title or '?'}” ({updated})" for hid, title, updated, _p in rows)


def _not_found(what, context_dir):
    return NotFoundError(f"{what}; {_recent_line(context_dir)}")


def _mentions(a, topic):
    from ctxd.handoff.teach import matches

    t, p = a.get("topic") or {}, a.get("progress") or {}
    hay = [t.get("title"), t.get("current_subtopic"), p.get("in_progress")] + list(p.get("completed") or []) \
        + list(p.get("next_up") or []) + [k.get("concept") for k in a.get("key_points") or [] if isinstance(k, dict)]
    return any(isinstance(h, str) and matches(topic, h) for h in hay)


def find_archive(context_dir, ref=None, topic=None, hint=""):
    """(id, archive) for --from REF (a file, an archive id or a session id), else the newest
    archive mentioning TOPIC, else the newest archive. NotFoundError lists the recent ones."""
    from ctxd.handoff import archive as arch

    if ref is not None:
        if os.path.isfile(ref):
            a = arch.load(ref)
            return a.get("id") or os.path.basename(ref).removesuffix(".json"), a
        if os.sep in ref or ref.endswith(".json"):
            raise _not_found(f"no handoff archive file {ref}", context_dir)
        try:
            hid, path = arch.resolve(context_dir, ref)
        except NotFoundError:
            raise _not_found(f"no handoff archive {ref!r}", context_dir) from None
        return hid, arch.load(path)
    if topic:
        for hid, _title, _updated, path in arch.recent(context_dir, n=SEARCH):
            try:
                a = arch.load(path)
            except CtxdError:
                continue
            if _mentions(a, topic):
                return hid, a
        raise NotFoundError(f"no handoff archive is about {topic!r}; {_recent_line(context_dir)}{hint}")
    found = arch.latest(context_dir)
    if found is None:
        raise _not_found("no handoff archive to teach from", context_dir)
    return found[0], found[2]


def seed(store, context_dir, n=20):
    """Apply the key points of the recent archives (oldest first) to the knowledge table."""
    from ctxd.handoff import archive as arch
    from ctxd.handoff import knowledge

    applied = 0
    for hid, _t, _u, path in reversed(arch.recent(context_dir, n=n)):
        try:
            a = arch.load(path)
        except CtxdError:
            continue
        applied += knowledge.observe_archive(store, a, source=hid)
    return applied


