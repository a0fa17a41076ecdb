"""ctxd context: the assembled, token-budgeted context of this project."""

import click

from ctxd.fastpath.recall_entry import CONTEXT_FORMATS, CONTEXT_MODES


@click.command()
@click.option("--model", default=None, help="Size the budget for this model's context window.")
@click.option("--budget", type=click.IntRange(min=64), default=None, help="Total tokens for the context.")
@click.option("--mode", type=click.Choice(CONTEXT_MODES), default="auto", show_default=True)
@click.option("--format", "fmt", type=click.Choice(CONTEXT_FORMATS), default="markdown",
              show_default=True, help="json: an OpenAI-style messages array.")
@click.option("--query", default=None, help="Pull older turns matching this into the budget.")
@click.option("--explain", is_flag=True, help="Print the decision (mode, reason, tokens per part) to stderr.")
def context(model, budget, mode, fmt, query, explain):
    """Print this project's context, assembled to fit a token budget.

    Facts (numbers, dates, versions, paths, URLs, identifiers, constraints,
    questions, preferences, to-dos) are kept verbatim and current; older turns
    are summarised; recent turns stay verbatim.

    (Usually run without click: see ctxd/fastpath/recall_entry.py; this command owns the
    help text and the usage errors.)
    """
    from ctxd.fastpath.recall_entry import run_context

    run_context(budget=budget, model=model, mode=mode, fmt=fmt, query=query, explain=explain)
