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
def show():
    """Print the open task and its notes."""
    with _memory() as mem:
        text = mem.task_text()
    click.echo(text or "no open task")
