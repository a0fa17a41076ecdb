"""The llm plugin (Simon Willison's llm): a ``ctxd:`` fragment loader.

    llm -f ctxd:. "what did we decide about the cutover?"
    llm -f ctxd:~/work/api?budget=4000 "..."
    llm -f 'ctxd:?mode=hybrid' "..."

Registered through the ``llm`` entry point group in pyproject.toml, so llm
loads it when ctxd is installed in the same environment. Only this module
imports llm: importing ctxd never needs it.

The argument after ``ctxd:`` is a directory ("" or "." is the current one;
``~`` is expanded), optionally followed by ``?key=value&...``:

- ``budget=N``: tokens for the whole context (at least 64);
- ``model=M``: size the budget for that model's window (as ``ctxd context --model``);
- ``mode=auto|zero|short|long|summary|hybrid`` (default auto);
- ``q=QUESTION``: recall the turns that answer QUESTION into the context (as
  ``ctxd context --query``), e.g. ``llm -f 'ctxd:.?q=when is the cutover' "..."``.

Without them the budget is chosen as ``ctxd context`` chooses it: the
project's ``[context] budget`` / ``model`` in .contextrc, else 8,000 tokens.
The context is the engine's assembly, returned as separate fragments, each
with a stable source, so llm stores each once (it deduplicates fragments by
content) and a new question re-sends only what changed:

- ``ctxd:<root>#system``, ``#task``, ``#summary``, ``#facts``, ``#query``: one per part;
- ``ctxd:<root>#turn-<id>``: one per recent turn, its text fixed once recorded.

A project with no conversation recorded is an error (a ValueError, which llm
reports as ``Could not load fragment ctxd:...: <reason>``).
"""

import os
from urllib.parse import parse_qsl

import llm

OPTIONS = ("budget", "model", "mode", "q")
MODES = ("auto", "zero", "short", "long", "summary", "hybrid")


@llm.hookimpl
def register_fragment_loaders(register):
    register("ctxd", ctxd_loader)


def parse_argument(argument):
    """(directory or None for the current one, {option: value}) from what follows ``ctxd:``."""
    path, options = argument, {}
    if "?" in argument:
        head, _, tail = argument.rpartition("?")
        pairs = [p for p in tail.split("&") if p]
        if all("=" in p for p in pairs):
            path = head
            for key, value in parse_qsl(tail, keep_blank_values=True):
                if key not in OPTIONS:
                    raise ValueError(f"unknown option {key!r} (ctxd: accepts {', '.join(OPTIONS)})")
                options[key] = value
    if "budget" in options:
        try:
            options["budget"] = int(options["budget"])
        except ValueError:
            raise ValueError(f"budget must be a whole number of tokens, not {options['budget']!r}") from None
        if options["budget"] < 64:
            raise ValueError("budget must be at least 64 tokens")
    if options.get("mode", "auto") not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {options['mode']!r}")
    if "budget" in options and "model" in options:
        raise ValueError("give budget or model, not both")
    path = path.strip()
    return (None if path in ("", ".") else os.path.abspath(os.path.expanduser(path))), options


def fragments(path=None, *, budget=None, model=None, mode="auto", q=None):
    """The project's context as a list of llm.Fragment (see the module docstring)."""
    from ctxd.memory.context import render_formats
    from ctxd.memory.core import ProjectMemory

    if path is not None and not os.path.isdir(path):
        raise ValueError(f"no such directory: {path}")
    with ProjectMemory.at(path) as mem:
        mem.budget_for(model, budget)
        if mem.count() == 0:
            raise ValueError(f"no conversation recorded for {mem.root} yet (ctxd chat add / import / install)")
        ctx = mem.context(budget=budget, model=model, mode=mode, query=q or None)
    base = f"ctxd:{mem.root}"
    out = [llm.Fragment(f"{render_formats.TITLES[p.name]}:\n{p.text}", f"{base}#{p.name}") for p in ctx.parts]
    for m in ctx.recent:
        when = _utc(m.ts)
        text = m.content
        if m.output_path:
            text += f"\n[full output: {m.output_chars} characters in {m.output_path}; ctxd chat output {m.id}]"
        out.append(llm.Fragment(f"Earlier turn #{m.id} ({m.role}, {when}):\n{text}", f"{base}#turn-{m.id}"))
    return out


def _utc(ts):
    from ctxd.isotime import format_minute

    return format_minute(ts or 0) + " UTC"


def ctxd_loader(argument):
    """
    The project's ctxd conversation context (facts, summary, recent turns) as fragments.

    ctxd:. (or ctxd:PATH) is the project holding that directory. Options after "?":
    budget=N tokens, model=M (size for its window), mode=auto|zero|short|long|summary|hybrid,
    q=QUESTION (recall the turns that answer it).
    Example: llm -f 'ctxd:.?budget=4000' "what did we decide?"
    """
    from ctxd.errors import CtxdError

    path, options = parse_argument(argument)
    try:
        return fragments(path, **options)
    except CtxdError as e:  # a config or store problem: its one-line message
        raise ValueError(e.message) from None
