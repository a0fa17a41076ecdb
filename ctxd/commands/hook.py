import click

from ctxd.errors import UsageError
from ctxd.shells import SUPPORTED


def detect_shell():
    """The shell ctxd runs under (shellingham), or a UsageError saying so."""
    import os

    import shellingham

    try:
        name, _path = shellingham.detect_shell()
    except shellingham.ShellDetectionFailure:
        env_shell = os.environ.get("SHELL", "")
        name = os.path.basename(env_shell)
        if not name:
            raise UsageError("cannot detect the shell; name it: ctxd hook bash|zsh|fish") from None
    name = os.path.basename(name).lstrip("-")
    if name not in SUPPORTED:
        raise UsageError(f"unsupported shell {name!r}; name one: ctxd hook bash|zsh|fish")
    return name


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
