"""``ctxd hook SHELL``: print the hook; keep the start-up copy of it current
(see ctxd.fastpath.startup_copy)."""

import click

from ctxd.shell_detect import detect_shell  # noqa: F401  (also imported from here by older callers)


@click.command()
@click.argument("shell", required=False)
def hook(shell):
    """Print the hook script for SHELL (bash, zsh, fish, tcsh, elvish, xonsh or nu; detected if omitted).

    \b
    bash: eval "$(ctxd hook bash)"   in ~/.bashrc
    zsh:  eval "$(ctxd hook zsh)"    in ~/.zshrc
    fish: ctxd hook fish | source    in ~/.config/fish/config.fish
    tcsh: eval "`ctxd hook tcsh`"   in ~/.tcshrc
    elvish: eval (ctxd hook elvish | slurp)   in ~/.config/elvish/rc.elv
    xonsh: execx($(ctxd hook xonsh))   in ~/.xonshrc
    nu:   ctxd hook nu | save -f ($nu.user-autoload-dirs | first | path join ctxd.nu)   once; ctxd setup refreshes it from ~/.config/nushell/config.nu

    It also refreshes the copy that the lines `ctxd setup` writes load
    at shell start without starting ctxd.
    """
    from ctxd.shells import get_shell
    from ctxd.fastpath.startup_copy import hook_text, write_bundle, write_cache

    sh = get_shell(detect_shell() if shell is None else shell)
    text = hook_text(sh)
    click.echo(text, nl=False)
    write_cache(sh, text)
    write_bundle(sh)
