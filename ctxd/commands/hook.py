import click

from ctxd.shell_detect import detect_shell  # noqa: F401  (also imported from here by older callers)


@click.command()
@click.argument("shell", required=False)
def hook(shell):
    """Print the hook script for SHELL (bash, zsh or fish; detected if omitted).

    \b
    bash: eval "$(ctxd hook bash)"   in ~/.bashrc
    zsh:  eval "$(ctxd hook zsh)"    in ~/.zshrc
    fish: ctxd hook fish | source    in ~/.config/fish/config.fish
    """
    from ctxd.activation.detectors import all_markers
    from ctxd.shells import get_shell
    from ctxd.shells.base import export_command

    sh = get_shell(detect_shell() if shell is None else shell)
    click.echo(sh.hook(all_markers(), export_command()), nl=False)
