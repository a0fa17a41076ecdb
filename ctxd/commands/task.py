"""ctxd task: working memory for the task at hand."""

import click


def _memory():
    from ctxd.memory.core import ProjectMemory

    return ProjectMemory.at()


@click.group()
def task():
    """The task at hand: its notes appear in the context while it is open."""


@task.command()
@click.argument("name")
def start(name):
    """Open a task (one at a time)."""
    with _memory() as mem:
        mem.task_start(name)
    click.echo(f"ctxd: task started: {name}")


@task.command()
@click.argument("text")
def note(text):
    """Attach a note to the open task."""
    with _memory() as mem:
        name = mem.task_note(text)
    click.echo(f"ctxd: noted on {name}")


@task.command()
def done():
    """Close the open task; its notes join the long-term record."""
    with _memory() as mem:
        name, n = mem.task_done()
    click.echo(f"ctxd: task done: {name} ({n} note{'s' if n != 1 else ''} kept in the conversation)")


@task.command()
@click.argument("name", required=False)
def take(name):
    """Continue here a task opened on another machine (received through ctxd sync)."""
    with _memory() as mem:
        taken = mem.task_take(name)
    click.echo(f"ctxd: task taken: {taken} (now this machine's working task)")


@task.command()
def show():
    """Print the open task and its notes, and the open tasks of other machines."""
    with _memory() as mem:
        text = mem.task_text()
        shared = mem.shared_task_text()
    click.echo(text or "no open task")
    if shared:
        click.echo("open on other machines (ctxd task take to continue one here):\n" + shared)
