import os

import click

from ctxd.commands.hook import detect_shell
from ctxd.shells import SUPPORTED

RC = {
    "bash": ("~/.bashrc", 'eval "$(ctxd hook bash)"'),
    "zsh": ("~/.zshrc", 'eval "$(ctxd hook zsh)"'),
    "fish": ("~/.config/fish/config.fish", "ctxd hook fish | source"),
}


@click.command()
@click.option("--shell", "shell", type=click.Choice(SUPPORTED), help="Default: the shell you run.")
@click.option("--write", is_flag=True, help="Append the hook line to the shell's rc file (once).")
def setup(shell, write):
    """Show (or, with --write, add) the line that turns ctxd on in your shell."""
    shell = shell or detect_shell()
    rc, line = RC[shell]
    path = os.path.expanduser(rc)
    present = False
    if os.path.isfile(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            present = any(l.strip() == line for l in f)
    if not write:
        state = "already there" if present else "not there yet"
        click.echo(f"# {shell}: add this line to {rc} ({state}), then open a new shell:")
        click.echo(line)
        if not present:
            click.echo(f"# or let ctxd add it: ctxd setup --shell {shell} --write")
        return
    if present:
        click.echo(f"ctxd is already set up in {rc}")
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"\n# ctxd: project environments on cd\n{line}\n")
    click.echo(f"added to {rc}: {line}\nopen a new shell (or run it now) to start using ctxd")
