"""The ctxd command line: the root click group, where every command is registered.

Library code raises ``CtxdError``; the root group hands whatever a command
raises to ``ctxd.boundary.cli_exit``: ``ctxd: <message>`` on stderr and the
error's exit code (see docs/exit-codes.md); anything else is a bug: one line
on stderr, the traceback in the log file, exit 1.

Commands never import each other: groups and their subcommands from other
modules are put together here.
"""

import sys

import click

from ctxd import __version__
from ctxd.boundary import cli_exit


def _range_words(t):
    """'of at least 64', 'from 0 to 1' ... for a click IntRange/FloatRange."""
    low, high = t.min, t.max
    if low is not None and high is not None:
        return f" from {low:g} to {high:g}" if isinstance(low, float) else f" from {low} to {high}"
    if low is not None:
        return f" of at least {low}" if not t.min_open else f" above {low}"
    if high is not None:
        return f" of at most {high}" if not t.max_open else f" below {high}"
    return ""


def _bad_value(e, value_text):
    """What a bad option value wants, in words: '--budget wants a whole number of at least 64, got 'abc''."""
    t = e.param.type
    kind = {"INTEGER": "a whole number", "FLOAT": "a number"}.get(
        getattr(t, "name", "").upper(), None)
    if isinstance(t, click.IntRange):
        kind = "a whole number"
    elif isinstance(t, click.FloatRange):
        kind = "a number"
    if kind is None:
        return None
    words = _range_words(t) if isinstance(t, (click.IntRange, click.FloatRange)) else ""
    return f"{e.param.opts[0] if e.param.opts else e.param.name} wants {kind}{words}, got {value_text}"


def usage_line(e):
    """A click usage error as ctxd's one line (without 'ctxd: '): the command, what is wrong, where help is."""
    import re

    message = e.format_message().replace(". (", " (").rstrip(".")
    if isinstance(e, click.BadParameter) and e.param is not None:
        got = re.match(r"(.+?) is not (?:a valid |in the range)", e.message)
        better = _bad_value(e, got.group(1)) if got else None
        message = better or message
    message = message[:1].lower() + message[1:]
    path = e.ctx.command_path if e.ctx is not None else "ctxd"
    where = path.split(" ", 1)[1] + ": " if " " in path else ""
    return f"{where}{message} (see '{path} --help')"


class OneLineUsageError(click.UsageError):
    """click's usage error shown as ctxd shows errors: one ``ctxd: …`` line, exit 2."""

    def __init__(self, e):
        super().__init__(usage_line(e), e.ctx)

    def show(self, file=None):
        click.echo(f"ctxd: {self.message}", err=True)


class CtxdGroup(click.Group):
    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except OneLineUsageError:
            raise
        except click.UsageError as e:  # the root's own options: `ctxd --bogus`
            raise OneLineUsageError(e) from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except OneLineUsageError:
            raise
        except click.UsageError as e:  # a subcommand's, or no such command
            raise OneLineUsageError(e) from None
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise  # click's own: --help, Ctrl-C at a prompt
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
