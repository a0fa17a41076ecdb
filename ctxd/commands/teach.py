"""ctxd teach and ctxd review: a tutor prompt from a handoff archive; what is due for review."""

import json
import sys
import time

import click

from ctxd.tab_complete import archive_file_or_id

from ctxd.errors import CtxdError, ExitCode
from ctxd.isotime import format_utc, parse_when



def _iso(ts):
    return None if ts is None else format_utc(ts)


@click.command()
@click.argument("topic", required=False)
@click.argument("user_input", metavar="[INPUT]", required=False)
@click.option("--from", "from_", metavar="FILE|ID", default=None, shell_complete=archive_file_or_id,
              help="The archive: a file, an archive id, or a session id (its newest archive).")
@click.option("--focus", default=None, help="Narrow the session to one concept or subtopic.")
def teach(topic, user_input, from_, focus):
    """Print a tutor prompt built from a handoff archive (the newest, or the newest about TOPIC).

    INPUT is the learner's new message, appended to the prompt; - reads it from
    standard input (`ctxd teach - ` alone also does). The prompt is printed, not
    recorded: nothing is added to the project's conversation.
    """
    from ctxd.handoff.core import ProjectHandoffs
    from ctxd.memory.core import ProjectMemory

    if topic == "-" and user_input is None:
        topic, user_input = None, "-"
    if user_input == "-":
        user_input = sys.stdin.read()
    if topic is not None and not topic.strip():
        topic = None
    hint = "; a message alone goes second: ctxd teach '' MESSAGE" if topic and user_input is None else ""
    with ProjectMemory.at() as mem:
        handoffs = ProjectHandoffs(mem)
        hid, a = handoffs.find_archive(from_, topic, hint)
        prompt = handoffs.teach_prompt(hid, a, topic=topic, focus=focus, user_input=user_input)
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


def _item(rec, now):
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
        "weak_prerequisites": [{"concept": n, "mastery": None if m is None else round(m, 4)}
                               for n, m in rec["weak"]],
    }


def _memory():
    from ctxd.memory.core import ProjectMemory

    return ProjectMemory.at()


def _handoffs(mem):
    from ctxd.handoff.core import ProjectHandoffs

    return ProjectHandoffs(mem)


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
    now = _when(at)
    with _memory() as mem:
        items = [_item(r, now) for r in _handoffs(mem).review_due(now)]
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
    with _memory() as mem:
        before, rec = _handoffs(mem).practice(concept, score, error=error)
    was = "new" if before is None or before["mastery"] is None else f"{before['mastery']:.2f}"
    click.echo(f"ctxd: {rec['name']}: mastery {was} -> {rec['mastery']:.2f}, errors {rec['errors']}, "
               f"next review {_iso(rec['due'])}")


@review.command()
@click.argument("concept")
@click.argument("prerequisites", nargs=-1)
def prereq(concept, prerequisites):
    """Set CONCEPT's prerequisites (replacing them; none clears them)."""
    with _memory() as mem:
        rec, weak = _handoffs(mem).set_prerequisites(concept, prerequisites)
    pre = ", ".join(rec["prerequisites"]) or "none"
    tail = ("; weak: " + ", ".join(n for n, _m in weak)) if weak else ""
    click.echo(f"ctxd: {rec['name']} needs {pre}{tail}")
