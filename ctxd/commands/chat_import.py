"""ctxd chat import: bring conversations other AI CLIs recorded into the project's store.

A subcommand of ``ctxd chat`` (``ctxd.cli`` adds it to that group).
"""

import json
import os
import sys

import click

from ctxd.tab_complete import FILE
from ctxd.errors import ExitCode
from ctxd.memory.ingest.importing import FORMATS, ImportFailed, detect_format, import_file

FORMAT_CHOICES = ("auto",) + FORMATS
IN_FOLDERS = (".jsonl", ".json", ".aider.chat.history.md", "logs.db")  # what a folder's import takes


def _started(path):
    """When the conversation in *path* began, for sorting: the first ``timestamp``
    (or ``startTime``) in its first lines, else the file's mtime, as UTC ISO text."""
    try:
        with open(path, "rb") as f:
            for _ in range(50):
                line = f.readline(1 << 20)
                if not line:
                    break
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                ts = isinstance(obj, dict) and (obj.get("timestamp") or obj.get("startTime"))
                if isinstance(ts, str) and ts[:2].isdigit():
                    return ts
    except OSError:
        pass
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(os.path.getmtime(path)))


def folder_files(directory):
    """Every transcript under *directory* (sub-agents' folders included), oldest conversation first."""
    found = []
    for top, dirs, names in os.walk(directory):
        dirs.sort()
        found += [os.path.join(top, n) for n in sorted(names) if n.endswith(IN_FOLDERS)]
    return sorted(found, key=_started)


def _check_format(path, fmt):
    """What the file looks like (a format, or None when it cannot be told); ImportFailed
    when --format names another than the one it plainly is."""
    try:
        seen = detect_format(path)
    except ImportFailed:
        return None
    if seen != fmt:
        raise ImportFailed(f"{path}: this is a {seen} file, not {fmt}: nothing imported "
                           f"(leave --format out, or --format {seen})", ExitCode.USAGE)
    return seen


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
@click.argument("files", nargs=-1, required=True, type=FILE)
@click.option("--format", "fmt", type=click.Choice(FORMAT_CHOICES), default="auto", show_default=True,
              help="Which tool wrote the files (auto: tell from the name and the first lines).")
@click.option("--session", default=None, help="Store every message under this session (default: the files' own).")
@click.option("--no-redact", is_flag=True, help="Store the text as given (secrets included).")
def import_cmd(files, fmt, session, no_redact):
    """Import conversations from FILE...: Claude Code and Codex transcripts, Gemini CLI
    sessions, aider's .aider.chat.history.md, llm's logs.db or OpenAI-style JSONL.

    A directory (e.g. ~/.claude/projects/<project>/) imports every transcript in it,
    sub-agents' included, oldest conversation first. A file that plainly is another
    tool's than --format names is refused, and so is one where nothing reads as it.

    Importing a file again adds only what is new. Malformed lines are skipped
    and reported with their line numbers.
    """
    from ctxd.memory.core import ProjectMemory

    bar = sys.stderr.isatty()
    status = 0
    todo = []  # (path, from a folder)
    for path in files:
        if os.path.isdir(path):
            inside = folder_files(path)
            if not inside:
                click.echo(f"ctxd: {path}: no transcripts in it ({', '.join(IN_FOLDERS)})", err=True)
                status = status or ExitCode.NOT_FOUND
            todo += [(f, True) for f in inside]
        else:
            todo.append((path, False))
    if not todo:
        raise click.exceptions.Exit(status)
    unknown = []
    with ProjectMemory.at(redact=not no_redact) as mem:
        store = mem.store()
        try:
            for path, in_folder in todo:
                try:
                    seen = _check_format(path, fmt) if fmt != "auto" else fmt
                    if in_folder and fmt == "auto":
                        try:
                            detect_format(path)
                        except ImportFailed:
                            unknown.append(path)  # a folder's other files: one line for them all
                            continue
                    r = _one(store, path, fmt, session, bar)
                    if seen is None and not (r.added or r.present or r.forgotten):
                        raise ImportFailed(f"{path}: nothing in it reads as a {fmt} file: nothing imported "
                                           "(check --format)", ExitCode.USAGE)
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
            if unknown:
                click.echo(f"ctxd: {len(unknown)} file(s) skipped, cannot tell which tool wrote them: "
                           f"{', '.join(unknown[:3])}{', ...' if len(unknown) > 3 else ''}", err=True)
        finally:
            mem.changed()  # context.md once for every file; summaries in the background
    if status:
        raise click.exceptions.Exit(status)
