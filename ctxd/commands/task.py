"""ctxd task: working memory for the task at hand."""

import click


def _store():
    from ctxd.memory.project import locate, open_store

    p = locate()
    return p, open_store(p)


def _rerender(store, project):
    from ctxd.memory import render

    render.write(store, project.root)


@click.group()
def task():
    """The task at hand: its notes appear in the context while it is open."""


@task.command()
@click.argument("name")
def start(name):
    """Open a task (one at a time)."""
    from ctxd.memory import tasks

    p, store = _store()
    with store:
        tasks.start(store, name)
        _rerender(store, p)
    click.echo(f"ctxd: task started: {name}")


@task.command()
@click.argument("text")
def note(text):
    """Attach a note to the open task."""
    from ctxd.memory import tasks

    p, store = _store()
    with store:
        name = tasks.note(store, text)
        _rerender(store, p)
    click.echo(f"ctxd: noted on {name}")


@task.command()
def done():
    """Close the open task; its notes join the long-term record."""
    from ctxd.memory import tasks

    p, store = _store()
    with store:
        name, n = tasks.done(store)
        _rerender(store, p)
    click.echo(f"ctxd: task done: {name} ({n} note{'s' if n != 1 else ''} kept in the conversation)")


@task.command()
def show():
    """Print the open task and its notes."""
    from ctxd.memory import tasks

    _p, store = _store()
    with store:
        text = tasks.render_open(store)
    click.echo(text or "no open task")
