"""ctxd handoff: pack where a session stands into a versioned archive (and manage archives)."""

import json
import os

import click

from ctxd.tab_complete import handoff_ids

from ctxd.errors import CtxdError, ExitCode


def _project():
    from ctxd.memory.project import locate

    return locate()


def _write_out(path, text):
    """Write a new file at *path*, 0600 like every file holding conversation text; refuse to
    replace an existing one."""
    from ctxd.activation.fileio import atomic_write

    path = os.path.abspath(path)
    try:
        atomic_write(path, text, mode=0o600, exclusive=True)
    except FileExistsError:
        raise CtxdError(f"{path} exists; not overwriting it (choose another name)", ExitCode.USAGE) from None
    return path


@click.group(invoke_without_command=True)
@click.option("--session", default=None, help="The session to pack (default: the most recent one).")
@click.option("--out", "out", type=click.Path(dir_okay=False), default=None,
              help="Also write the archive (or its markdown) to this new file.")
@click.option("--format", "fmt", type=click.Choice(["json", "markdown"]), default="json", show_default=True,
              help="markdown: also write a human-readable version and print its path.")
@click.pass_context
def handoff(ctx, session, out, fmt):
    """Pack where this project's conversation stands into a handoff archive.

    Builds the next version of the session's archive from the conversation
    store (topic, progress, key points with mastery, questions, learning style,
    environment, facts), stores it under the context directory's handoffs/ and
    prints its path. See also: list, show, export, import.
    """
    if ctx.invoked_subcommand is not None:
        return
    from ctxd.handoff import archive as archive_mod
    from ctxd.handoff import render
    from ctxd.handoff.core import ProjectHandoffs
    from ctxd.memory.core import ProjectMemory

    with ProjectMemory.at() as mem:
        hid, path, archive = ProjectHandoffs(mem).handoff(session=session)
    shown = path
    if fmt == "markdown":
        md = render.to_markdown(archive)
        shown = _write_out(out or os.path.join(mem.paths.handoffs, hid + ".md"), md)
    elif out:
        shown = _write_out(out, archive_mod.dumps(archive))
    click.echo(shown)


@handoff.command("list")
@click.option("--all", "all_", is_flag=True, help="Every stored version, not only the newest per session.")
@click.option("--json", "json_", is_flag=True, help="The index entries as JSON.")
def list_(all_, json_):
    """The project's handoff archives, newest first."""
    from ctxd.handoff import archive as archive_mod

    project = _project()
    entries = archive_mod.entries(project.context_dir)
    if not all_:
        seen, kept = set(), []
        for e in entries:
            if e["session_id"] not in seen:
                seen.add(e["session_id"])
                kept.append(e)
        entries = kept
    if json_:
        click.echo(json.dumps(entries, ensure_ascii=False, indent=2))
        return
    if not entries:
        click.echo("no handoff archives yet (run: ctxd handoff)")
        return
    for e in entries:
        click.echo(f"{e['id']:<28} {e.get('status', ''):<9} {e.get('updated', ''):<21} {e.get('topic', '')}")


@handoff.command()
@click.argument("ref", required=False, shell_complete=handoff_ids)
@click.option("--format", "fmt", type=click.Choice(["json", "markdown"]), default="markdown", show_default=True)
def show(ref, fmt):
    """Print an archive (REF: an id, a session id, or nothing for the newest)."""
    from ctxd.handoff import archive as archive_mod
    from ctxd.handoff import render

    project = _project()
    if ref and os.path.sep in ref and os.path.isfile(ref):
        archive = archive_mod.load(ref)  # a file given by path
    else:
        _hid, path = archive_mod.resolve(project.context_dir, ref)
        archive = archive_mod.load(path)
    click.echo(archive_mod.dumps(archive) if fmt == "json" else render.to_markdown(archive), nl=False)


@handoff.command()
@click.argument("ref", shell_complete=handoff_ids)
@click.argument("file", type=click.Path(dir_okay=False))
def export(ref, file):
    """Write archive REF (id or session) to FILE, a new file, for another project or machine."""
    from ctxd.handoff import archive as archive_mod

    project = _project()
    hid, dest = archive_mod.export_file(project.context_dir, ref, file)
    click.echo(dest)


@handoff.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
def import_(file):
    """Store the archive in FILE (any supported schema) as a new version here."""
    from ctxd.handoff import archive as archive_mod

    from ctxd.memory.text import redact

    project = _project()
    raw = project.config.get("raw", {}) if isinstance(project.config, dict) else {}
    hid, dest = archive_mod.import_file(project.context_dir, file, redact.from_config(raw, env=project.secrets))
    click.echo(dest)
