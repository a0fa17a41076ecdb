"""ctxd context: the assembled, token-budgeted context of this project."""

import json
import os

import click


@click.command()
@click.option("--model", default=None, help="Size the budget for this model's context window.")
@click.option("--budget", type=click.IntRange(min=64), default=None, help="Total tokens for the context.")
@click.option("--mode", type=click.Choice(["auto", "zero", "short", "long", "summary", "hybrid"]), default="auto",
              show_default=True)
@click.option("--format", "fmt", type=click.Choice(["markdown", "json", "text"]), default="markdown",
              show_default=True, help="json: an OpenAI-style messages array.")
@click.option("--query", default=None, help="Pull older turns matching this into the budget.")
@click.option("--explain", is_flag=True, help="Print the decision (mode, reason, tokens per part) to stderr.")
def context(model, budget, mode, fmt, query, explain):
    """Print this project's context, assembled to fit a token budget.

    Facts (numbers, dates, versions, paths, URLs, identifiers, constraints,
    questions, preferences, to-dos) are kept verbatim and current; older turns
    are summarised; recent turns stay verbatim.
    """
    from ctxd.memory import engine
    from ctxd.memory.core import ProjectMemory

    with ProjectMemory.at() as mem:
        mem.budget_for(model, budget)  # a usage error before the store is looked at
        ctx = mem.context(budget=budget, model=model, mode=mode, query=query)
        note = mem.summarizer_note() if explain else ""
    if fmt == "json":
        click.echo(json.dumps(engine.to_messages(ctx), ensure_ascii=False, indent=2))
    elif fmt == "text":
        click.echo(engine.to_text(ctx), nl=False)
    else:
        click.echo(engine.to_markdown(ctx, f"Conversation context: {os.path.basename(mem.root)}"), nl=False)
    if explain:
        click.echo(f"budget from {ctx.budget_source}\n" + engine.explain(ctx) + (f"\n{note}" if note else ""),
                   err=True)
