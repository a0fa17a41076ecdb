"""ctxd chat: the project's conversation store."""

import json
import os
import sys

import click

from ctxd.errors import CtxdError, ExitCode
from ctxd.isotime import format_minute, parse_when


def _memory(redact=True):
    from ctxd.memory.core import ProjectMemory

    return ProjectMemory.at(redact=redact)


def _line(m, width=None):
    when = format_minute(m.ts)
    text = m.content.replace("\n", " ⏎ ")
    if width and len(text) > width:
        text = text[: width - 1] + "…"
    kind = m.kind + (f":{m.tool or m.subtype}" if (m.tool or m.subtype) else "")
    by = f"[{m.author}] " if getattr(m, "author", None) else ""  # received through ctxd sync: who wrote it
    return f"#{m.id:<6} {when} {kind:<18} {m.source:<7} {by}{text}"


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
    with _memory(redact=not no_redact) as mem:
        mid = mem.add(role, text, session=session or os.environ.get("CTXD_SESSION") or "cli", source=source,
                      importance=importance)
    click.echo(mid)


@chat.command()
@click.option("-n", "limit", default=20, show_default=True, help="How many of the latest messages.")
@click.option("--session", default=None)
@click.option("--json", "json_", is_flag=True, help="One JSON object per line.")
def log(limit, session, json_):
    """Show the latest messages, oldest first."""
    with _memory() as mem:
        mem.store(create=False)  # nothing recorded: NoStore (exit 4), the same for every reader
        for m in mem.recent(limit, session=session):
            click.echo(json.dumps(m.to_json(), ensure_ascii=False) if json_ else _line(m, 160))


@chat.command()
@click.argument("query")
@click.option("-n", "limit", default=20, show_default=True)
@click.option("--json", "json_", is_flag=True)
def search(query, limit, json_):
    """Search the project's conversation, best match first (any language; the question's
    words, stemmed, any of them; whole phrases count more). Each hit with a snippet."""
    from ctxd.memory.recall.ranked import snippet

    with _memory() as mem:
        mem.store(create=False)
        hits = mem.search(query, limit)
    for h in hits:
        if json_:
            click.echo(json.dumps(dict(h.to_json(), snippet=snippet(h.message.content, query)), ensure_ascii=False))
        else:
            m = h.message
            kind = m.kind + (f":{m.tool}" if m.tool else "")
            click.echo(f"#{m.id:<6} {format_minute(m.ts)} {kind:<16} {h.score:5.2f}  {snippet(m.content, query)}")


@chat.command()
@click.argument("mid", type=int)
@click.option("--range", "range_", default=None, help="Characters a:b (Python slice style, either side optional).")
def output(mid, range_):
    """Print the full text of message ID (an offloaded output in full)."""
    with _memory() as mem:
        text = mem.output(mid)
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
    with _memory() as mem:
        n = mem.forget(mid=mid, before=parse_when(before) if before else None, session=session,
                       everything=everything)
    click.echo(f"ctxd: forgot {n} message{'s' if n != 1 else ''}")


@chat.command()
@click.argument("session", required=False)
@click.option("--undo", is_flag=True, help="Share the session again (what comes next; nothing earlier).")
@click.option("--list", "list_", is_flag=True, help="List the private sessions.")
def private(session, undo, list_):
    """Keep SESSION private: `ctxd sync` never writes its messages (or its handoffs) to the remote."""
    with _memory() as mem:
        if list_ or session is None:
            if session is None and not list_:
                raise CtxdError("give a SESSION (ctxd chat log shows them), or --list", ExitCode.USAGE)
            rows = mem.private_sessions()
            for r in rows:
                click.echo(f"{r['session']}  {r['messages']} messages  private since {format_minute(r['ts'])} UTC")
            if not rows:
                click.echo("ctxd: no private session")
            return
        shared = mem.set_private(session, not undo)
    if undo:
        click.echo(f"ctxd: session {session} is shared again (from its next message on)")
    else:
        click.echo(f"ctxd: session {session} is private: ctxd sync never sends it")
        if shared:
            click.echo(f"ctxd: warning: {shared} of its messages were pushed before; they stay on the remote "
                       f"(ctxd chat forget --session {session} deletes them everywhere)", err=True)


@chat.command(name="export")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "markdown"]), default="jsonl", show_default=True)
@click.option("--session", default=None)
def export_(fmt, session):
    """Print the whole conversation (jsonl: one message a line, with its kind and fields).

    jsonl carries everything the store knows of a message (kind, tool, call id,
    subtype, data), so `ctxd chat import` of it into another project is lossless.
    """
    with _memory() as mem:
        for m in mem.iter_all(session=session):
            if fmt == "jsonl":
                click.echo(json.dumps(export_record(m), ensure_ascii=False))
            else:
                click.echo(f"### {m.role} · {m.kind} · {m.to_json()['time']} · {m.source}\n\n{m.content}\n")


def export_record(m):
    """One exported jsonl line: OpenAI-style role/content plus the typed fields ctxd keeps."""
    obj = {"role": m.role, "content": m.content, "kind": m.kind, "session": m.session, "source": m.source,
           "time": m.to_json()["time"], "ts": m.ts, "importance": m.importance}
    for k in ("tool", "call_id", "subtype", "data", "dedup", "provenance"):
        v = getattr(m, k)
        if v:
            obj[k] = v
    if m.output_path:
        obj["output_path"] = m.output_path
    return obj


@chat.command()
def refresh():
    """Store what AI CLI hooks queued, bring facts and (with [summarizer] in config.toml) the LLM
    summary up to date.

    Run in the background after each recorded turn; safe to run by hand.
    """
    with _memory() as mem:
        n, status = mem.refresh()
    click.echo(f"ctxd: {n} new messages read for facts; summarizer: {status}")


@chat.command()
def embed():
    """Embed the messages not embedded yet (the static model, or e5 with the semantic extra), with a progress bar.

    The detached `ctxd chat refresh` after each turn and import does the same; this waits
    for it. Resumable: an interrupted run keeps what it embedded.
    """
    from ctxd.memory.recall import embed as embed_mod

    with _memory() as mem:
        store = mem.store(create=False)
        try:
            name = embed_mod.model(many=True).name
        except embed_mod.Unavailable as e:
            raise CtxdError(f"no semantic model: {e}; recall stays lexical", ExitCode.NOT_FOUND) from None
        todo = embed_mod.backlog(store)
        if not todo:
            done, total = embed_mod.progress(store)
            click.echo(f"ctxd: {done} of {total} messages embedded ({name}); nothing to do")
            return
        if sys.stderr.isatty():
            with click.progressbar(length=todo, label="embedding", file=sys.stderr) as bar:
                last = [0]

                def step(n):
                    bar.update(n - last[0])
                    last[0] = n

                n = embed_mod.backfill(store, on_batch=step, wait=True)
        else:
            n = embed_mod.backfill(store, wait=True)  # after a background embedder, if one is running
        done, total = embed_mod.progress(store)
        click.echo(f"ctxd: {n} messages read here; {done} of {total} embedded ({name})")


@chat.command()
def recover():
    """Salvage a damaged store: move it aside, copy every readable message into a new one.

    A store that passes SQLite's integrity check (a full disk, a read-only store) is left as it is.
    """
    with _memory() as mem:
        r = mem.recover()
    if r.healthy:
        click.echo(f"ctxd: the conversation store {mem.paths.store} passes its integrity check: nothing to "
                   "recover, it was left as it is")
        return
    lost = ("an unknown number could not be read (the table's structure is damaged)" if r.unreadable is None
            else f"{r.unreadable} unreadable")
    click.echo(f"ctxd: recovered {r.salvaged} messages into a new store; {lost}; the damaged file is kept "
               f"as {r.backup}")
