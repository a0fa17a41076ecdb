"""ctxd allow / deny: who may change the environment on cd."""

import os

import click

from ctxd.activation import contextrc, trust
from ctxd.activation.detectors import find_root
from ctxd.activation.fileio import sha256_hex
from ctxd.errors import NotFoundError


def target_dir(directory):
    """The directory a trust command is about: DIR itself if it is a root, else its project root."""
    from ctxd.activation.export import logical_pwd

    here = logical_pwd(dict(os.environ))
    d = os.path.normpath(os.path.join(here, os.path.expanduser(directory))) if directory else here
    if not os.path.isdir(d):
        raise NotFoundError(f"no such directory: {d}")
    if os.path.isfile(os.path.join(d, contextrc.FILENAME)):
        return d
    root = find_root(d)
    if root is None:
        raise NotFoundError(f"no project at or above {d} (no marker file, no .contextrc)")
    return root


def allow_rc(path, data=None):
    """Validate a .contextrc's bytes and allow exactly those bytes."""
    if data is None:
        with open(path, "rb") as f:
            data = f.read()
    parsed = contextrc.parse_bytes(path, data)  # ConfigError -> exit 3, nothing allowed
    trust.allow(path, sha256_hex(data))
    return parsed


@click.command()
@click.argument("directory", required=False)
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
        click.echo(f"ctxd: allowed {rc}")
        if parsed["unknown"]:
            click.echo(f"ctxd: warning: unknown keys ignored: {', '.join(parsed['unknown'])}", err=True)
    else:
        trust.allow(d)
        click.echo(f"ctxd: allowed {d} (its detected environment applies)")


@click.command()
@click.argument("directory", required=False)
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
