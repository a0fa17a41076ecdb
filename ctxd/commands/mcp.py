"""ctxd mcp: serve this project's conversation memory to AI CLIs over MCP (stdio)."""

import os

import click

from ctxd.errors import CtxdError, ExitCode

INSTALL_HINT = "pip install 'ctxd[mcp]'"


def _missing_sdk(e):
    """True when *e* is the mcp SDK (or one of its own dependencies) not being importable."""
    name = getattr(e, "name", None) or ""
    return name == "mcp" or name.startswith("mcp.") or name.startswith("mcp_")


@click.command()
@click.option("--project", "project_dir", type=click.Path(exists=True, file_okay=False), default=None,
              help="Serve this project (default: the working directory's).")
def mcp(project_dir):
    """Run a Model Context Protocol server for this project on stdin/stdout.

    AI CLIs start it themselves (see docs/ai-clis.md, "MCP server"): tools get_context,
    search_history, read_output, add_fact and handoff; resources
    ctxd://project/context and ctxd://handoff/latest; the prompt teach.
    Needs the optional extra: pip install 'ctxd[mcp]'.
    """
    try:
        from ctxd.integrations import mcp_server
    except ImportError as e:
        if not _missing_sdk(e):
            raise
        raise CtxdError(f"ctxd mcp needs the MCP SDK, which is not installed: {INSTALL_HINT}",
                        ExitCode.USAGE) from None
    mcp_server.run(os.path.abspath(project_dir) if project_dir else None)
