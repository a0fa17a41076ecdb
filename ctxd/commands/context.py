"""ctxd context: the assembled, token-budgeted context of this project."""

import json
import os

import click

from ctxd.errors import CtxdError, ExitCode

DEFAULT_BUDGET = 8000


def resolve_budget(project, model=None, budget=None):
    """(budget tokens, how it was chosen)."""
    if budget:
        return budget, "--budget"
    settings = project.settings or {}
    model = model or settings.get("model")
    if model:
        try:
            from ctxd.memory import models
        except ImportError:  # the model table ships with the context engine
            raise CtxdError("no model table available; use --budget N", ExitCode.USAGE) from None
        window = models.window(model, project.config)
        from ctxd.memory.engine import RESERVE

        return max(1024, window - RESERVE), f"model {model}: window {window} - reserve {RESERVE}"
    if settings.get("budget"):
        return int(settings["budget"]), ".contextrc [context] budget"
    return DEFAULT_BUDGET, "default"


def system_block(project):
    s = project.settings or {}
    text = s.get("system")
    if s.get("system_file"):
        path = os.path.join(project.root, s["system_file"])
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise CtxdError(f"[context] system_file {path}: {e.strerror}", ExitCode.CONFIG) from None
    if not text:
        return None, None
    first_para = text.strip().split("\n\n", 1)[0]
    return text.strip(), first_para[:800]


def build(project, store, *, budget, mode="auto", query=None):
    from ctxd.memory import engine

    from ctxd.memory import summarizer

    system, compact = system_block(project)
    llm = summarizer.load(project.context_dir) if summarizer.settings(project.config) else None
    return engine.assemble(store, budget=budget, mode=mode, query=query, system=system,
                           system_compact=compact, log_dir=project.context_dir, llm_summary=llm)


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
    from ctxd.memory.project import locate, open_store
    from ctxd.memory.store import DB_NAME

    if model and budget:
        raise CtxdError("give --model or --budget, not both", ExitCode.USAGE)
    project = locate()
    n, how = resolve_budget(project, model, budget)
    if not os.path.exists(os.path.join(project.context_dir, DB_NAME)):
        raise CtxdError(f"no conversation recorded for {project.root} yet (ctxd chat add / import / install)",
                        ExitCode.NOT_FOUND)
    with open_store(project, create=False) as store:
        ctx = build(project, store, budget=n, mode=mode, query=query)
    if fmt == "json":
        click.echo(json.dumps(engine.to_messages(ctx), ensure_ascii=False, indent=2))
    elif fmt == "text":
        click.echo(engine.to_text(ctx), nl=False)
    else:
        click.echo(engine.to_markdown(ctx, f"Conversation context: {os.path.basename(project.root)}"), nl=False)
    if explain:
        from ctxd.memory import summarizer

        note = ""
        if summarizer.settings(project.config):
            note = f"\nsummarizer: {summarizer.last_status(project.context_dir) or 'no run finished yet'}"
        click.echo(f"budget from {how}\n" + engine.explain(ctx) + note, err=True)
