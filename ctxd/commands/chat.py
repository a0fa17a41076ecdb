"""ctxd chat: the project's conversation store."""

import json
import os
import sys

import click

from ctxd.errors import CtxdError, ExitCode
from ctxd.isotime import format_minute, parse_when


def _project():
    from ctxd.memory.project import locate

    return locate()


def _open(redact=True, create=True):
    from ctxd.memory.project import open_store

    p = _project()
    return p, open_store(p, redact=redact, create=create)


def rerender(store, project):
    """context.md now; LLM summaries (when configured) in a detached background job."""
    from ctxd.memory import render, summarizer

    path = render.write(store, project.root)
    summarizer.spawn_refresh(project, store)
    return path


def _line(m, width=None):
    when = format_minute(m.ts)
    text = m.content.replace("\n", " ⏎ ")
    if width and len(text) > width:
        text = text[: width - 1] + "…"
    return f"#{m.id:<6} {when} {m.role:<9} {m.source:<7} {text}"


@click.group()
def chat():
    """The project's conversation store (SQLite in the context directory)."""


@chat.command()
@click.argument("text", required=False)
@click.option("--role", type=click.Choice(["user", "assistant", "system", "tool"]), default="user", show_default=True)
@click.option("--importance", type=click.FloatRange(0, 1), default=0.5, show_default=True)
@click.option("--session", default=None, help="Session id (default: $CTXD_SESSION or 'cli').")
@click.option("--source", default="cli", show_default=True, help="Which tool the message came from.")
@click.option("--no-redact", is_flag=True, help="Store the text as given (secrets included).")
def add(text, role, importance, session, source, no_redact):
    """Record a message. TEXT, or - (or nothing) to read standard input."""
    if text is None or text == "-":
        if text is None and sys.stdin.isatty():
            raise CtxdError("give the message as TEXT, or pipe it on standard input", ExitCode.USAGE)
        text = sys.stdin.read()
    if not text.strip():
        raise CtxdError("refusing to store an empty message", ExitCode.USAGE)
    p, store = _open(redact=not no_redact)
    with store:
        mid = store.add(role, text, session=session or os.environ.get("CTXD_SESSION") or "cli",
                        source=source, importance=importance)
        rerender(store, p)
    click.echo(mid)


@chat.command()
@click.option("-n", "limit", default=20, show_default=True, help="How many of the latest messages.")
@click.option("--session", default=None)
@click.option("--json", "json_", is_flag=True, help="One JSON object per line.")
def log(limit, session, json_):
    """Show the latest messages, oldest first."""
    _p, store = _open(create=False) if _exists() else (None, None)
    if store is None:
        return
    with store:
        for m in store.recent(limit, session=session):
            click.echo(json.dumps(m.to_json(), ensure_ascii=False) if json_ else _line(m, 160))


def _exists():
    from ctxd.memory.store import DB_NAME

    return os.path.exists(os.path.join(_project().context_dir, DB_NAME))


@chat.command()
@click.argument("query")
@click.option("-n", "limit", default=20, show_default=True)
@click.option("--json", "json_", is_flag=True)
def search(query, limit, json_):
    """Full-text search of the project's conversation (any language), newest first."""
    if not _exists():
        return
    _p, store = _open(create=False)
    with store:
        for m in store.search(query, limit):
            click.echo(json.dumps(m.to_json(), ensure_ascii=False) if json_ else _line(m, 160))


@chat.command()
@click.argument("mid", type=int)
@click.option("--range", "range_", default=None, help="Characters a:b (Python slice style, either side optional).")
def output(mid, range_):
    """Print the full text of message ID (an offloaded output in full)."""
    _p, store = _open(create=False)
    with store:
        m = store.get(mid)
    if m is None:
        raise CtxdError(f"no message #{mid}", ExitCode.NOT_FOUND)
    if m.output_path:
        try:
            with open(m.output_path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except FileNotFoundError:
            raise CtxdError(f"the offloaded output of #{mid} is missing: {m.output_path}", ExitCode.NOT_FOUND) from None
    else:
        text = m.content
    if range_:
        a, sep, b = range_.partition(":")
        try:
            lo = int(a) if a else None
            hi = int(b) if b else None
        except ValueError:
            raise CtxdError(f"--range takes a:b with whole numbers (got {range_!r})", ExitCode.USAGE) from None
        text = text[lo:hi] if sep else text[lo:lo + 1 if lo is not None else None]
    click.echo(text, nl=not text.endswith("\n"))


@chat.command()
@click.option("--id", "mid", type=int, default=None)
@click.option("--before", default=None, help="Date, datetime or age (30d).")
@click.option("--session", default=None)
@click.option("--all", "everything", is_flag=True)
@click.option("--yes", is_flag=True, help="Do not ask (needed with --all when not on a terminal).")
def forget(mid, before, session, everything, yes):
    """Delete messages, and their offloaded output files."""
    chosen = [x for x in (mid is not None, before is not None, session is not None, everything) if x]
    if len(chosen) != 1:
        raise CtxdError("give exactly one of --id, --before, --session, --all", ExitCode.USAGE)
    if everything and not yes:
        if not sys.stdin.isatty():
            raise CtxdError("--all deletes the whole conversation; add --yes to confirm", ExitCode.USAGE)
        click.confirm("Delete every message of this project?", abort=True)
    p, store = _open(create=False)
    with store:
        n = store.forget(mid=mid, before=parse_when(before) if before else None, session=session,
                         everything=everything)
        rerender(store, p)
    click.echo(f"ctxd: forgot {n} message{'s' if n != 1 else ''}")


@chat.command(name="export")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "markdown"]), default="jsonl", show_default=True)
@click.option("--session", default=None)
def export_(fmt, session):
    """Print the whole conversation (jsonl: OpenAI-style messages, one a line)."""
    if not _exists():
        return
    _p, store = _open(create=False)
    with store:
        for m in store.iter_all(session=session):
            if fmt == "jsonl":
                obj = {"role": m.role, "content": m.content, "session": m.session, "source": m.source,
                       "time": m.to_json()["time"], "importance": m.importance}
                if m.output_path:
                    obj["output_path"] = m.output_path
                click.echo(json.dumps(obj, ensure_ascii=False))
            else:
                click.echo(f"### {m.role} · {m.to_json()['time']} · {m.source}\n\n{m.content}\n")


@chat.command()
def refresh():
    """Bring facts and (with [summarizer] in config.toml) the LLM summary up to date.

    Run in the background after each recorded turn; safe to run by hand.
    """
    from ctxd.memory import engine, summarizer

    p, store = _open(create=False)
    with store:
        n = engine.refresh_facts(store)
        status = summarizer.refresh(store, p.config)
    click.echo(f"ctxd: {n} new messages read for facts; summarizer: {status}")


@chat.command()
def recover():
    """Salvage a damaged store: move it aside, copy every readable message into a new one."""
    from ctxd.memory import store as store_mod

    p = _project()
    n, lost, backup = store_mod.recover(p.context_dir)
    click.echo(f"ctxd: recovered {n} messages into a new store; {lost} unreadable; the damaged file is kept "
               f"as {backup}")




def _register():
    """Subcommands that live in their own modules: import, hook, install."""
    from ctxd.commands import chat_hooks  # noqa: F401  (registers `chat hook` and `chat install`)
    from ctxd.commands.chat_import import import_cmd

    chat.add_command(import_cmd)


_register()
