"""``ctxd exec``: the click face of ctxd/fastpath/exec_entry.py (help text, completion, the command list).

The console script runs ``ctxd exec`` through ``ctxd.fastpath.exec_entry`` before click is imported;
this command runs only for ``--help`` or when the click app is driven directly.
"""

import click

from ctxd.tab_complete import exec_words


@click.command("exec", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--strict", is_flag=True, help="Refuse (exit 3/4/5/6) instead of running CMD without the "
                                             "project environment.")
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="[DIR] -- CMD [ARGS]...",
                shell_complete=exec_words)
def exec_(strict, args):
    """Run a command in DIR's project environment: ctxd exec [DIR] -- CMD [ARGS...]

    For scripts, cron, CI, editors and AI agents' shells, where no cd hook
    runs. The environment is the one the hook builds for DIR (default: the
    current directory), trust included, after undoing the activation of the
    shell ctxd runs from; CMD runs in DIR. ctxd replaces itself with CMD, so
    the exit status and signals are CMD's own; a command that is not found
    exits 127, one that cannot run 126.

    DIR missing, or its .contextrc or root not trusted: CMD runs without the
    project environment after one line on stderr (an untrusted .contextrc
    never applies); with --strict ctxd refuses instead: exit 4 (no such
    directory, or no project there), 5 (not trusted), 3 (invalid .contextrc),
    6 (the shell's CTXD_STATE is corrupt).
    """
    from ctxd.fastpath.exec_entry import USAGE, run

    args = list(args)
    if "--" in args:  # `DIR -- CMD`: click left the -- in place after DIR
        i = args.index("--")
        head, command = args[:i], args[i + 1:]
    else:  # `-- CMD`: click consumed the --
        head, command = [], args
    if len(head) > 1 or not command:
        raise click.UsageError(USAGE)
    run(strict, head[0] if head else None, command)
