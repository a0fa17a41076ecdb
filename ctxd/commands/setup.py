import os
import sys

import click

from ctxd.shell_detect import detect_shell
from ctxd.shells import SUPPORTED, get_shell


def rc_loads_hook(sh, path):
    """Whether the rc file at *path* already has a line that loads the hook."""
    return rc_state(sh, path)[0]


def rc_state(sh, path):
    """(loads the hook, sources the start-up copy of it) for the rc file at *path*."""
    if not os.path.isfile(path):
        return False, False
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.readlines()
    loads = any(sh.loads_hook(line) for line in lines)
    copy = f"ctxd/hook/ctxd.{sh.name}"
    return loads, any(copy in line and not line.lstrip().startswith("#") for line in lines)


def command_path():
    """The ctxd command that was run: the path it was started by (pipx's ~/.local/bin/ctxd link,
    not the venv's script it points to), else this installation's console script."""
    from ctxd.shells.base import console_script

    arg = sys.argv[0] if sys.argv else ""
    if os.path.basename(arg) == "ctxd" and os.path.isfile(arg):
        return os.path.abspath(arg)
    return console_script()


def not_on_path(script, environ=None):
    """The directory of the console script *script* when it is not on PATH (a fresh account
    after `pipx install`: ~/.local/bin comes on PATH only at a later login, if at all), else None."""
    if not script:
        return None
    bindir = os.path.dirname(script)
    entries = (environ if environ is not None else os.environ).get("PATH", "").split(os.pathsep)
    real = os.path.realpath(bindir)
    return None if any(e and os.path.realpath(e) == real for e in entries) else bindir


def path_lines(sh, bindir):
    """Lines for *sh*'s rc file that put *bindir* on PATH once (after what is there, as
    `pipx ensurepath` does), or None for a shell ctxd writes no such line for."""
    q = sh.quote(bindir)
    if sh.name in ("bash", "zsh"):
        line = f'case ":$PATH:" in *:{q}:*) ;; *) export PATH="$PATH":{q} ;; esac\n'
    elif sh.name == "fish":
        line = f"contains -- {q} $PATH; or set -gx PATH $PATH {q}\n"
    else:
        return None
    return f"\n# ctxd: the directory holding the ctxd command, on PATH (written by `ctxd setup`)\n{line}"


def rc_has(path, line):
    """Whether the rc file at *path* already holds *line*."""
    if not os.path.isfile(path):
        return False
    with open(path, encoding="utf-8", errors="replace") as f:
        return any(existing.rstrip("\n") == line for existing in f)


def _older(sh, rc):
    """The advice for an rc file whose ctxd lines predate the start-up copy (never rewritten
    by ctxd: they are the user's lines now, and they keep working, only slower)."""
    return (f"ctxd is set up in {rc}, but by lines that start ctxd at every shell start; for a start\n"
            f"without it, replace them with what `ctxd setup --shell {sh.name}` prints")


@click.command()
@click.option("--shell", "shell", type=click.Choice(SUPPORTED), help="Default: the shell you run.")
@click.option("--write", is_flag=True, help="Append the hook line to the shell's rc file (once).")
def setup(shell, write):
    """Show (or, with --write, add) the lines that turn ctxd on in your shell.

    They load the hook with ctxd from PATH, else with the absolute path of this
    ctxd (a login shell may read the rc file before ~/.local/bin is on PATH);
    without either they drop a project environment the shell inherited. fish
    loads the hook only in interactive shells. At shell start they source a
    copy of the hook that `ctxd hook` keeps in the cache dir, without starting
    ctxd; that copy stands down by itself once ctxd is upgraded, reinstalled
    or edited, and the lines then run `ctxd hook`, which writes it again.
    """
    from ctxd.shells.base import console_script

    sh = get_shell(shell or detect_shell())
    rc = sh.rc_file
    path = os.path.expanduser(rc)
    present, sourced = rc_state(sh, path)
    older = present and sh.hook_cache and not sourced
    script = console_script()
    block = sh.rc_block(script)
    bindir = not_on_path(command_path())
    path_text = path_lines(sh, bindir) if bindir else ""
    if not write:
        if bindir:
            click.echo(f"# {bindir} (where ctxd is) is not on PATH: " +
                       ("these lines put it there:" if path_text else f"add it to PATH in {rc}"))
            if path_text:
                click.echo(path_text.strip("\n"))
        state = ("there, in an older form that starts ctxd at every shell start" if older
                 else "already there" if present else "not there yet")
        click.echo(f"# {sh.name}: add these lines to {rc} ({state}), then open a new shell:")
        click.echo(block.strip("\n"))
        click.echo(f"# (or type this to load it now: {sh.install_line})")
        if not present:
            click.echo(f"# or let ctxd add them: ctxd setup --shell {sh.name} --write")
        return
    from ctxd.fastpath.startup_copy import hook_text, write_bundle, write_cache

    # the copy of the hook the lines source at shell start (no process): now,
    # so that the first new shell is already fast
    write_cache(sh, hook_text(sh), force=True)
    write_bundle(sh)
    if path_text and rc_has(path, path_text.strip("\n").splitlines()[-1]):
        path_text = ""
    if present and not path_text:
        click.echo(_older(sh, rc) if older else f"ctxd is already set up in {rc}")
        if bindir:
            click.echo(f"ctxd: {bindir} is not on PATH; add it in {rc} to type ctxd", err=True)
        return
    from ctxd.activation.fileio import atomic_write

    path = os.path.realpath(path)  # a dotfiles symlink stays a symlink
    old, mode = "", 0o644
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            old = f.read()
        mode = os.stat(path).st_mode & 0o7777
    if old and not old.endswith("\n"):
        old += "\n"
    # the whole file, renamed over the old one: a crash never leaves half an rc file
    added = path_text + ("" if present else block)
    atomic_write(path, (old + added).encode("utf-8", "surrogateescape"), mode=mode)
    what = " and ".join(w for w in (f"{bindir} on PATH" if path_text else "",
                                     "" if present else "the ctxd hook lines") if w)
    click.echo(f"added to {rc}: {what}\nopen a new shell (exec \"$SHELL\") to start using ctxd")
    if bindir and not path_text:
        click.echo(f"ctxd: {bindir} is not on PATH; add it in {rc} to type ctxd", err=True)
