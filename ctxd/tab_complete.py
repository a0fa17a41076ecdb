"""What TAB completes for arguments that are not plain words: directories, files, and the
ids of the project's handoff archives. Used as click types and ``shell_complete`` callbacks,
so the generated scripts in completions/ complete them in every shell."""

import os

import click
from click.shell_completion import CompletionItem


class _PathWord(click.Path):
    """A path for TAB completion only: the value reaches the command as typed, which
    checks it and says what is wrong its own way (ctxd: ..., its exit code)."""

    def convert(self, value, param, ctx):
        return value


DIR = _PathWord(file_okay=False)  # the shells complete directory names
FILE = _PathWord()  # files and directories


def handoff_ids(ctx, param, incomplete):
    """The project's archive ids (and session ids) starting with *incomplete*, newest first."""
    try:
        from ctxd.handoff import archive
        from ctxd.memory.project import locate

        entries = archive.entries(locate().context_dir)
    except Exception:  # completion never fails the shell: no project, no archives, a broken index
        return []
    out, seen = [], set()
    for e in entries:
        for ref in (e.get("id"), e.get("session_id")):
            if ref and ref not in seen and str(ref).startswith(incomplete):
                seen.add(ref)
                out.append(CompletionItem(ref, help=e.get("topic") or None))
    return out


def archive_file_or_id(ctx, param, incomplete):
    """An archive file (what looks like a path) or an archive id."""
    if incomplete.startswith((".", "/", "~")) or os.sep in incomplete:
        return [CompletionItem(incomplete, type="file")]
    return handoff_ids(ctx, param, incomplete) or [CompletionItem(incomplete, type="file")]


def exec_words(ctx, param, incomplete):
    """``ctxd exec [DIR] -- CMD ...``: a directory first, then files."""
    return [CompletionItem(incomplete, type="file" if ctx.params.get("args") else "dir")]
