import click

from ctxd.shells import SUPPORTED

FORMATS = ("json", "dotenv", "gha")

@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("format_", metavar="SHELL|FORMAT",
                type=click.Choice(list(SUPPORTED) + list(FORMATS)))
@click.argument("directory", required=False, metavar="[DIR]")
@click.option("--strict", is_flag=True, help="json/dotenv/gha: refuse (exit 3/4/5) when DIR's project "
                                             "environment does not apply, instead of printing none.")
def export(format_, directory, strict):
    """Print the environment for $PWD (a shell) or for DIR (json, dotenv, gha).

    A shell (bash, zsh, fish ...): shell code moving this shell to the environment for
    $PWD, nothing when nothing changed. The hooks call this (without loading
    this command line: see ctxd/fastpath/export_entry.py).

    json, dotenv, gha: DIR's project environment (default: the current
    directory) for tools that are not shells: the variables it sets and
    unsets and the PATH it builds, from this environment with its own
    shell's activation undone (what `ctxd exec DIR` would run with). json is
    an object (null: unset); dotenv is NAME=value lines python-dotenv and
    docker compose read; gha appends to $GITHUB_ENV and $GITHUB_PATH when
    they are set (GitHub Actions), else prints the $GITHUB_ENV lines.
    """
    from ctxd.fastpath.export_entry import export_main

    if format_ in SUPPORTED:
        if directory or strict:
            raise click.UsageError("a shell export takes no DIR or --strict: it is for $PWD")
        export_main([format_])
    export_main([format_] + (["--strict"] if strict else []) + ([directory] if directory else []))
