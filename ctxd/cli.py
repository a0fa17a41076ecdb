"""The ctxd command line: the root click group, where every command is registered.

Library code raises ``CtxdError``; the root group hands whatever a command
raises to ``ctxd.boundary.cli_exit``: ``ctxd: <message>`` on stderr and the
error's exit code (see README "Exit codes"); anything else is a bug: one line
on stderr, the traceback in the log file, exit 1.

Commands never import each other: groups and their subcommands from other
modules are put together here.
"""

import sys

import click

from ctxd import __version__
from ctxd.boundary import cli_exit


class CtxdGroup(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise  # click's own: usage errors (exit 2), --help, Ctrl-C at a prompt
        except (Exception, KeyboardInterrupt) as e:  # the boundary: one line, never a traceback
            sys.exit(cli_exit(e, "cli"))


@click.group(cls=CtxdGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ctxd")
def cli():
    """ctxd: the right environment and the right AI context on every cd."""


def _register():
    from ctxd.commands import chat, chat_hooks, chat_import, context, export, handoff, hook, rcfile, setup, show
    from ctxd.commands import completion, doctor, mcp as mcp_cmd, paths as paths_cmd, task, teach as teach_cmd
    from ctxd.commands import recall, trust
    from ctxd.commands import sync as sync_cmd

    chat.chat.add_command(chat_hooks.hook)
    chat.chat.add_command(chat_hooks.install)
    chat.chat.add_command(chat_import.import_cmd)
    for command in (task.task, chat.chat, context.context, handoff.handoff, trust.allow, trust.deny,
                    rcfile.init, rcfile.edit, rcfile.status, setup.setup, hook.hook, export.export, show.show,
                    teach_cmd.teach, teach_cmd.review, completion.completion, doctor.doctor, paths_cmd.paths,
                    mcp_cmd.mcp, recall.recall, sync_cmd.sync):
        cli.add_command(command)
    from ctxd.commands.exec import exec_

    cli.add_command(exec_)


_register()


def main():
    cli(prog_name="ctxd")
