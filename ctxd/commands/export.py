import click


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def export(shell):
    """Print shell code moving this shell to the environment for $PWD.

    Prints nothing when nothing changed. The hooks call this (without
    loading this command line: see ctxd/export_entry.py).
    """
    from ctxd.export_entry import export_main

    export_main([shell])
