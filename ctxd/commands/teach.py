"""ctxd teach and ctxd review: a tutor prompt from a handoff archive; what is due for review."""

import json
import os
import sys
import time

import click

from ctxd.errors import CtxdError, ExitCode, NotFoundError
from ctxd.isotime import format_utc, parse_when

RECENT = 5
SEARCH = 50  # archives looked through for a TOPIC


def _project():
    from ctxd.memory.project import locate

    return locate()


def _iso(ts):
    return None if ts is None else format_utc(ts)


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
    from ctxd.handoff.teach import _matches

    t, p = a.get("topic") or {}, a.get("progress") or {}
    hay = [t.get("title"), t.get("current_subtopic"), p.get("in_progress")] + list(p.get("completed") or []) \
        + list(p.get("next_up") or []) + [k.get("concept") for k in a.get("key_points") or [] if isinstance(k, dict)]
    return any(isinstance(h, str) and _matches(topic, h) for h in hay)


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


def _language(project):
    raw = project.config.get("raw", {}) if isinstance(project.config, dict) else {}
    lang = (raw.get("handoff") or {}).get("language") if isinstance(raw, dict) else None
    return lang if lang in ("zh", "en") else None  # "auto" or unset: the archive's, else detected


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


@click.command()
@click.argument("topic", required=False)
@click.argument("user_input", metavar="[INPUT]", required=False)
@click.option("--from", "from_", metavar="FILE|ID", default=None,
              help="The archive: a file, an archive id, or a session id (its newest archive).")
@click.option("--focus", default=None, help="Narrow the session to one concept or subtopic.")
def teach(topic, user_input, from_, focus):
    """Print a tutor prompt built from a handoff archive (the newest, or the newest about TOPIC).

    INPUT is the learner's new message, appended to the prompt; - reads it from
    standard input (`ctxd teach - ` alone also does). The prompt is recorded in the
    project's conversation as a system message (source "teach").
    """
    from ctxd.handoff import knowledge, teach as teach_mod
    from ctxd.memory import render
    from ctxd.memory.project import open_store

    if topic == "-" and user_input is None:
        topic, user_input = None, "-"
    if user_input == "-":
        user_input = sys.stdin.read()
    if topic is not None and not topic.strip():
        topic = None
    p = _project()
    hint = "; a message alone goes second: ctxd teach '' MESSAGE" if topic and user_input is None else ""
    hid, a = find_archive(p.context_dir, from_, topic, hint)
    with open_store(p) as store:
        knowledge.observe_archive(store, a, source=hid)
        names = [k.get("concept") for k in a.get("key_points") or [] if isinstance(k, dict) and k.get("concept")]
        know = knowledge.snapshot(store, names + ([focus] if focus else []))
        prompt = teach_mod.build_prompt(a, topic=topic, focus=focus, user_input=user_input, knowledge=know,
                                        language=_language(p))
        session = os.environ.get("CTXD_SESSION") or a.get("session_id") or "cli"
        store.add("system", prompt, session=session, source="teach", importance=0.4)
        render.write(store, p.root)
    click.echo(prompt, nl=False)


# -- review ------------------------------------------------------------------------------

def _when(value):
    """--at: a date (its midnight UTC) or an ISO datetime (UTC unless it says otherwise)."""
    if value is None:
        return time.time()
    v = value.strip()
    if v[-1:] in "smhdw" and v[:-1].isdigit():
        raise CtxdError(f"--at takes a date or a datetime (got {value!r})", ExitCode.USAGE)
    return parse_when(v)


def _open(create, p=None):
    from ctxd.memory.project import open_store
    from ctxd.memory.store import DB_NAME

    p = p or _project()
    if not create and not os.path.exists(os.path.join(p.context_dir, DB_NAME)):
        return p, None
    return p, open_store(p)


def _has_archives(context_dir):
    from ctxd.handoff import archive as arch

    return bool(arch.recent(context_dir, n=1))


def _item(rec, store, now):
    from ctxd.handoff import knowledge

    weak = knowledge.weak_prerequisites(store, rec["name"])
    last = rec["last_practice"]
    return {
        "concept": rec["name"],
        "mastery": None if rec["mastery"] is None else round(rec["mastery"], 4),
        "practices": rec["practices"],
        "errors": rec["errors"],
        "last_practice": _iso(last),
        "days_since_practice": None if last is None else int(max(0.0, now - last) // 86400),
        "next_review": _iso(rec["due"]),
        "reason": rec["reason"],
        "due_since": _iso(rec["due_since"]),
        "prerequisites": rec["prerequisites"],
        "weak_prerequisites": [{"concept": n, "mastery": None if m is None else round(m, 4)} for n, m in weak],
    }


_WHY = {"fsrs": "FSRS review due since {since}", "stale": "untouched for {days} days",
        "new": "never practised"}


@click.group(invoke_without_command=True)
@click.option("--json", "json_", is_flag=True, help="A stable JSON object (schema_version 1).")
@click.option("--at", "at", default=None, metavar="WHEN", help="As of this date or datetime (default: now).")
@click.pass_context
def review(ctx, json_, at):
    """What is due for review: FSRS-scheduled, or untouched for 14 days.

    Concepts come from handoff archives' key points and from `ctxd review practice`.
    """
    if ctx.invoked_subcommand is not None:
        return
    from ctxd.handoff import knowledge

    now = _when(at)
    p = _project()
    p, store = _open(_has_archives(p.context_dir), p)
    items = []
    if store is not None:
        with store:
            seed(store, p.context_dir)
            items = [_item(r, store, now) for r in knowledge.due(store, now)]
    if json_:
        click.echo(json.dumps({"schema_version": 1, "now": _iso(now), "due": items}, ensure_ascii=False,
                              indent=1))
        return
    if not items:
        click.echo("nothing is due for review")
        return
    width = max(7, *(_width(i["concept"]) for i in items))
    click.echo(f"{len(items)} concept{'s' if len(items) != 1 else ''} due  (as of {_iso(now)})")
    click.echo(f"{_pad('concept', width)}  mastery  errors  last practice        why")
    for i in items:
        m = "-" if i["mastery"] is None else f"{i['mastery']:.2f}"
        last = (i["last_practice"] or "-").replace("T", " ").replace("Z", "")
        why = _WHY[i["reason"]].format(since=(i["due_since"] or "").replace("T", " ").replace("Z", ""),
                                       days=i["days_since_practice"])
        if i["weak_prerequisites"]:
            why += "; weak prerequisites: " + ", ".join(w["concept"] for w in i["weak_prerequisites"])
        click.echo(f"{_pad(i['concept'], width)}  {m:>7}  {i['errors']:>6}  {last:<19}  {why}")


def _width(s):
    """Terminal columns: East Asian wide and fullwidth characters take two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)


def _pad(s, width):
    return s + " " * max(0, width - _width(s))


@review.command()
@click.argument("concept")
@click.option("--score", type=click.FloatRange(0, 1), required=True, help="How well it went, 0..1.")
@click.option("--error", is_flag=True, help="The learner made a mistake (counted; rated at most Hard).")
def practice(concept, score, error):
    """Record one practice of CONCEPT: mastery moves (EMA, alpha 0.3), FSRS schedules the next review."""
    from ctxd.handoff import knowledge

    if not concept.strip():
        raise CtxdError("a concept needs a name", ExitCode.USAGE)
    _p, store = _open(create=True)
    with store:
        before = knowledge.get(store, concept)
        rec = knowledge.practice(store, concept, score, error=error)
    was = "new" if before is None or before["mastery"] is None else f"{before['mastery']:.2f}"
    click.echo(f"ctxd: {rec['name']}: mastery {was} -> {rec['mastery']:.2f}, errors {rec['errors']}, "
               f"next review {_iso(rec['due'])}")


@review.command()
@click.argument("concept")
@click.argument("prerequisites", nargs=-1)
def prereq(concept, prerequisites):
    """Set CONCEPT's prerequisites (replacing them; none clears them)."""
    from ctxd.handoff import knowledge

    if not concept.strip():
        raise CtxdError("a concept needs a name", ExitCode.USAGE)
    _p, store = _open(create=True)
    with store:
        rec = knowledge.set_prerequisites(store, concept, prerequisites)
        weak = knowledge.weak_prerequisites(store, concept)
    pre = ", ".join(rec["prerequisites"]) or "none"
    tail = ("; weak: " + ", ".join(n for n, _m in weak)) if weak else ""
    click.echo(f"ctxd: {rec['name']} needs {pre}{tail}")
