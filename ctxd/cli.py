"""The ctxd command line: the root click group and the one error boundary.

Library code raises ``CtxdError``; here it becomes ``ctxd: <message>`` on
stderr and the error's exit code (see README "Exit codes"). Anything else is
a bug: one line on stderr, the traceback in the log file, exit 1.
"""

import sys

import click

from ctxd import __version__
from ctxd.errors import CtxdError, ExitCode


class CtxdGroup(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except CtxdError as e:
            click.echo(f"ctxd: {e.message}", err=True)
            sys.exit(e.exit_code)
        except KeyboardInterrupt:
            click.echo("ctxd: interrupted", err=True)
            sys.exit(130)
        except BrokenPipeError:
            sys.exit(ExitCode.OK)
        except Exception as e:  # a bug: never a traceback for the user
            from ctxd._entry import _log_exception

            log = _log_exception("cli")
            where = f" (details in {log})" if log else ""
            click.echo(f"ctxd: internal error: {e.__class__.__name__}: {e}{where}", err=True)
            sys.exit(ExitCode.ERROR)


@click.group(cls=CtxdGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ctxd")
def cli():
    """ctxd: the right environment and the right AI context on every cd."""


def _register():
    from ctxd.commands import chat, context, export, hook, rcfile, setup, show, task, trust
    from ctxd.commands import handoff

    cli.add_command(task.task)
    cli.add_command(chat.chat)
    cli.add_command(context.context)
    cli.add_command(handoff.handoff)
    cli.add_command(trust.allow)
    cli.add_command(trust.deny)
    cli.add_command(rcfile.init)
    cli.add_command(rcfile.edit)
    cli.add_command(rcfile.status)
    cli.add_command(setup.setup)
    cli.add_command(hook.hook)
    cli.add_command(export.export)
    cli.add_command(show.show)

    from ctxd.commands import teach as teach_cmd

    cli.add_command(teach_cmd.teach)
    cli.add_command(teach_cmd.review)

    from ctxd.commands import completion, doctor, paths as paths_cmd

    cli.add_command(completion.completion)
    cli.add_command(doctor.doctor)
    cli.add_command(paths_cmd.paths)

    from ctxd.commands import mcp as mcp_cmd

    cli.add_command(mcp_cmd.mcp)


_register()


def main():
    cli(prog_name="ctxd")
