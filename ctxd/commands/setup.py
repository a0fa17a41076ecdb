import os

import click

from ctxd.shell_detect import detect_shell
from ctxd.shells import SUPPORTED, get_shell


def rc_loads_hook(sh, path):
    """Whether the rc file at *path* already has a line that loads the hook."""
    if not os.path.isfile(path):
        return False
    with open(path, encoding="utf-8", errors="replace") as f:
        return any(sh.loads_hook(line) for line in f)


@click.command()
@click.option("--shell", "shell", type=click.Choice(SUPPORTED), help="Default: the shell you run.")
@click.option("--write", is_flag=True, help="Append the hook line to the shell's rc file (once).")
def setup(shell, write):
    """Show (or, with --write, add) the line that turns ctxd on in your shell."""
    sh = get_shell(shell or detect_shell())
    rc, line = sh.rc_file, sh.install_line
    path = os.path.expanduser(rc)
    present = rc_loads_hook(sh, path)
    if not write:
        state = "already there" if present else "not there yet"
        click.echo(f"# {sh.name}: add this line to {rc} ({state}), then open a new shell:")
        click.echo(line)
        if not present:
            click.echo(f"# or let ctxd add it: ctxd setup --shell {sh.name} --write")
        return
    if present:
        click.echo(f"ctxd is already set up in {rc}")
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(sh.rc_block())
    click.echo(f"added to {rc}: {line}\nopen a new shell (or run it now) to start using ctxd")
