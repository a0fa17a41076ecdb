"""``ctxd completion SHELL``: the tab-completion script click generates for ctxd.

The scripts call ``ctxd`` back with ``_CTXD_COMPLETE=<shell>_complete`` to ask
for candidates, so they never go stale when commands change; only a new click
release can change their text. The committed copies in ``completions/`` are
this command's output (tests/test_completions.py fails when they differ):

    python -m ctxd completion bash > completions/ctxd.bash
    python -m ctxd completion zsh  > completions/_ctxd
    python -m ctxd completion fish > completions/ctxd.fish

(or ``python completions/generate.py``, which writes all three).

bash and zsh use click's own classes. click 8.4's fish script is broken (its
template splits each reply line on a literal newline while the reply puts
type, value and help on separate lines, so fish runs them as commands), so
ctxd registers its own fish class: one line per candidate, ``type,value<TAB>help``.
"""

import click
from click.shell_completion import FishComplete, add_completion_class

from ctxd.shells import SUPPORTED

PROG = "ctxd"
COMPLETE_VAR = "_CTXD_COMPLETE"
# where each shell's completion file goes in completions/ (zsh wants _name for its fpath)
FILES = {"bash": "ctxd.bash", "zsh": "_ctxd", "fish": "ctxd.fish"}

_SOURCE_FISH = """\
# fish completion for %(prog_name)s (generated: %(prog_name)s completion fish)
function %(complete_func)s
    set -l response (env %(complete_var)s=fish_complete COMP_WORDS=(commandline -cp) \\
        COMP_CWORD=(commandline -t) %(prog_name)s)
    for completion in $response
        set -l metadata (string split -m 1 , -- $completion)
        switch $metadata[1]
            case dir
                __fish_complete_directories $metadata[2]
            case file
                __fish_complete_path $metadata[2]
            case plain
                printf '%%s\\n' $metadata[2]
        end
    end
end

complete --no-files --command %(prog_name)s --arguments '(%(complete_func)s)'
"""


def _one_line(text):
    return " ".join(text.split()) if text else ""


class CtxdFishComplete(FishComplete):
    """fish: one reply line per candidate, ``type,value`` plus ``<TAB>help`` (fish's
    description separator); newlines and tabs inside become spaces."""

    source_template = _SOURCE_FISH

    def format_completion(self, item):
        value = item.value.replace("\n", " ").replace("\t", " ")
        help_ = _one_line(item.help)
        return f"{item.type},{value}\t{help_}" if help_ else f"{item.type},{value}"


# `ctxd completion fish` and the `_CTXD_COMPLETE=fish_complete` replies both go through it
add_completion_class(CtxdFishComplete, "fish")


def source(shell, app):
    """The completion script of the click command *app* (ctxd.cli.cli) for *shell*, exactly as
    `ctxd completion SHELL` prints it. The app is passed in: ctxd.cli registers this command."""
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - click knows all three
        from ctxd.errors import UsageError

        raise UsageError(f"click has no completion for {shell!r}")
    text = cls(app, {}, PROG, COMPLETE_VAR).source()
    return text if text.endswith("\n") else text + "\n"


@click.command()
@click.argument("shell", required=False, type=click.Choice(SUPPORTED))
def completion(shell):
    """Print the tab-completion script for SHELL (detected if omitted).

    \b
    bash: eval "$(ctxd completion bash)"   in ~/.bashrc, or save it as
          ~/.local/share/bash-completion/completions/ctxd
    zsh:  ctxd completion zsh > ~/.zfunc/_ctxd   with ~/.zfunc in $fpath
          before compinit (or eval "$(ctxd completion zsh)" after compinit)
    fish: ctxd completion fish > ~/.config/fish/completions/ctxd.fish
    """
    if shell is None:
        from ctxd.shell_detect import detect_shell

        shell = detect_shell()
    click.echo(source(shell, click.get_current_context().find_root().command), nl=False)
