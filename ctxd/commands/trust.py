"""ctxd allow / deny: who may change the environment on cd."""

import os

import click

from ctxd.tab_complete import DIR

from ctxd.activation import contextrc, trust
from ctxd.activation.allow import allow_rc, target_dir
from ctxd.errors import NotFoundError


@click.command()
@click.argument("directory", required=False, type=DIR)
@click.option("--tree", is_flag=True, help="Trust every project under DIRECTORY (that you own).")
def allow(directory, tree):
    """Trust the .contextrc of DIRECTORY's project (default: here).

    The trust is for this exact content: any edit blocks the file again until
    you allow it once more. Without a .contextrc, trusts the project root, so
    its detected environment (.venv/bin, node_modules/.bin, ...) applies.
    Takes effect in every open terminal at its next prompt.
    """
    if tree:
        from ctxd.activation.export import logical_pwd

        d = os.path.normpath(os.path.join(logical_pwd(dict(os.environ)), os.path.expanduser(directory or ".")))
        if not os.path.isdir(d):
            raise NotFoundError(f"no such directory: {d}")
        trust.add_tree(d)
        click.echo(f"ctxd: trusted every project you own under {os.path.realpath(d)}")
        return
    d = target_dir(directory)
    rc = os.path.join(d, contextrc.FILENAME)
    if os.path.isfile(rc):
        parsed = allow_rc(rc)
        if os.path.islink(rc):  # trust is per directory: the target elsewhere gains nothing
            click.echo(f"ctxd: allowed {rc} (a symlink to {os.path.realpath(rc)}; trusted here only, "
                       f"with its content now)")
        else:
            click.echo(f"ctxd: allowed {rc}")
        if parsed["unknown"] and not _hook_will_say_it(d):
            click.echo(f"ctxd: {rc}: unknown keys ignored: {', '.join(parsed['unknown'])}", err=True)
    else:
        trust.allow(d)
        click.echo(f"ctxd: allowed {d} (its detected environment applies)")


def _hook_will_say_it(d):
    """Whether this shell's hook re-plans *d* at its next prompt and shows its notices
    (a shell with the hook, inside *d*): then `ctxd allow` leaves them to it, said once."""
    if not os.environ.get("_CTXD_HOOK"):
        return False
    here = os.path.realpath(os.getcwd())
    return here == os.path.realpath(d) or here.startswith(os.path.realpath(d).rstrip("/") + "/")


@click.command()
@click.argument("directory", required=False, type=DIR)
@click.option("--tree", is_flag=True, help="Stop trusting a tree added with allow --tree.")
def deny(directory, tree):
    """Block DIRECTORY's .contextrc (or project root) until `ctxd allow`.

    A deny survives edits of the file.
    """
    if tree:
        from ctxd.activation.export import logical_pwd

        d = os.path.normpath(os.path.join(logical_pwd(dict(os.environ)), os.path.expanduser(directory or ".")))
        if trust.remove_tree(d):
            click.echo(f"ctxd: no longer trusting the tree {os.path.realpath(d)}")
        else:
            raise NotFoundError(f"{d} was not a trusted tree (trees in config.toml are edited there)")
        return
    d = target_dir(directory)
    rc = os.path.join(d, contextrc.FILENAME)
    target = rc if os.path.isfile(rc) else d
    trust.deny(target)
    click.echo(f"ctxd: denied {target}")
