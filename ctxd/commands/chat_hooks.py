"""ctxd chat hook / ctxd chat install: the AI CLI integrations.

``ctxd chat hook TOOL`` is normally dispatched by the console script
(ctxd.fastpath.console_entry) before click is imported (it runs on every
prompt); this click command is the same code,
reached through ``python -m ctxd`` or ``--help``. Both are subcommands of
``ctxd chat``; ``ctxd.cli`` adds them to that group.
"""

import sys

import click

from ctxd.agents import AI_CLIS, CONTEXT_FILES, ai_cli


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("tool", required=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook(tool, args):
    """Run as an AI CLI hook: TOOL is claude, gemini or codex (payload JSON on stdin),
    or codex-notify (payload JSON as the argument, as Codex's notify passes it).

    Always exits 0: whatever goes wrong is written to the ctxd log file, and
    nothing is injected (for gemini: `{}`, as it reads stdout as JSON only).
    """
    if tool is None:
        from ctxd.integrations.agent_hooks import USAGE

        click.echo(f"ctxd: chat hook: {USAGE}", err=True)
        sys.exit(2)
    from ctxd.integrations.agent_hooks import main

    sys.exit(main([tool, *args]))


@click.command()
@click.argument("tool", type=click.Choice([*AI_CLIS, *CONTEXT_FILES]))
@click.option("--project", "scope", flag_value="project", default=True,
              help="This project, for you (the default): <root>/.claude/settings.local.json (Claude Code's "
                   "personal, uncommitted file), .gemini/settings.json, .codex/hooks.json.")
@click.option("--shared", "scope", flag_value="shared",
              help="This project, for everyone: <root>/.claude/settings.json (the file teams commit), with a "
                   "command that runs ctxd from PATH and does nothing where ctxd is not installed.")
@click.option("--user", "scope", flag_value="user",
              help="Your user settings (~/.claude, ~/.gemini, ~/.codex; with codex also notify in config.toml).")
@click.option("--uninstall", is_flag=True, help="Remove ctxd's entries (and only those).")
def install(tool, scope, uninstall):
    """Add ctxd's hooks to an AI CLI's settings, so its conversations are recorded and each
    session starts with the project's context.

    For Claude Code, SessionStart and two more hooks, CwdChanged and FileChanged,
    also write the trusted project's environment into $CLAUDE_ENV_FILE, so its Bash
    tool runs the project's python (venv), node_modules/.bin and .contextrc
    variables, and loses them when the agent leaves the project. Codex and
    Gemini CLI have no such hook: start them with `ctxd exec -- codex`.

    Only ctxd's entries change: every other byte of the file stays as it is
    (indentation, order, comments in Gemini's settings), uninstalling gives
    the file back, and a file ctxd created is removed. Installing twice is the
    same as once. A settings file that is not valid JSON is left untouched.

    Project files of Gemini CLI and Codex are shared ones: they get the same
    PATH-based command as --shared. Gemini CLI runs project hooks only in a
    folder it trusts; Codex only once you trust the hooks (/hooks).

    agents-md, claude-md, gemini-md: instead, put one managed pointer to the
    project's context.md into AGENTS.md / CLAUDE.md / GEMINI.md in the project
    root (an @import where the tool supports one; your own text stays as it is).
    """
    if tool in CONTEXT_FILES:
        from ctxd.errors import UsageError
        from ctxd.integrations import contextfiles
        from ctxd.memory.project import locate

        if scope != "project":
            raise UsageError(f"{tool} points one project at its own context; run it in the project, without --user or --shared")
        project = locate()
        lines = (contextfiles.uninstall(tool, project.root) if uninstall
                 else contextfiles.install(tool, project.root, project.context_dir))
        for line in lines:
            click.echo(line)
        return
    from ctxd.integrations import install as inst

    agent = ai_cli(tool)
    root = None
    if scope in ("project", "shared"):
        from ctxd.memory.project import locate

        root = locate().root
    if uninstall:
        lines = inst.uninstall(agent, scope, root)
    else:
        lines = inst.install(agent, scope, root)
    for line in lines:
        click.echo(line)
