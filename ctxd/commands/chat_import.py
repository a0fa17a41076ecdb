"""ctxd chat import: bring conversations other AI CLIs recorded into the project's store.

A subcommand of ``ctxd chat`` (``ctxd.cli`` adds it to that group).
"""

import os
import sys

import click

from ctxd.integrations.importers import ImportFailed, import_file

FORMAT_CHOICES = ("auto", "jsonl", "claude", "codex", "gemini", "aider", "llm")


def _one(store, path, fmt, session, bar):
    if not bar:
        return import_file(store, path, fmt, session=session)
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0
    label = os.path.basename(path) or path
    with click.progressbar(length=max(size, 1), label=label, file=sys.stderr) as pb:
        done = [0]

        def progress(pos):
            step = min(pos, size) - done[0]
            if step > 0:
                pb.update(step)
                done[0] += step

        return import_file(store, path, fmt, session=session, progress=progress)


@click.command(name="import")
@click.argument("files", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(FORMAT_CHOICES), default="auto", show_default=True,
              help="Which tool wrote the files (auto: tell from the name and the first lines).")
@click.option("--session", default=None, help="Store every message under this session (default: the files' own).")
@click.option("--no-redact", is_flag=True, help="Store the text as given (secrets included).")
def import_cmd(files, fmt, session, no_redact):
    """Import conversations from FILE...: Claude Code and Codex transcripts, Gemini CLI
    sessions, aider's .aider.chat.history.md, llm's logs.db or OpenAI-style JSONL.

    Importing a file again adds only what is new. Malformed lines are skipped
    and reported with their line numbers.
    """
    from ctxd.memory.core import ProjectMemory

    bar = sys.stderr.isatty()
    status = 0
    with ProjectMemory.at(redact=not no_redact) as mem:
        store = mem.store()
        try:
            for path in files:
                try:
                    r = _one(store, path, fmt, session, bar)
                except ImportFailed as e:
                    click.echo(f"ctxd: {e.message}", err=True)
                    status = status or e.exit_code
                    continue
                except OSError as e:
                    click.echo(f"ctxd: {path}: cannot read it: {e.strerror or e}", err=True)
                    status = status or 1
                    continue
                parts = [f"{r.added} added", f"{r.present} already present"]
                if r.malformed:
                    parts.append(f"{r.malformed} malformed")
                if r.forgotten:
                    parts.append(f"{r.forgotten} removed (rewound)")
                click.echo(f"{path}: {', '.join(parts)} ({r.format})")
                if r.malformed:
                    click.echo(f"ctxd: {r.malformed_message(path)}", err=True)
        finally:
            mem.changed()  # context.md once for every file; summaries in the background
    if status:
        raise click.exceptions.Exit(status)
