"""Commands that AI tools may run on every question, without click: ``ctxd recall`` and
``ctxd context``. The console script (ctxd.fastpath.console_entry) dispatches them here
before the click app (and every command module it registers) is imported. Anything this small parser does not take
(``--help``, another option, a bad value) goes to the click command, which owns the help
text and the usage errors; the output is the same either way (the click commands call
the ``run_*`` functions below).
"""

import sys

CONTEXT_MODES = ("auto", "zero", "short", "long", "summary", "hybrid")
CONTEXT_FORMATS = ("markdown", "json", "text")


def _int_at_least(low):
    return lambda v: int(v) if v.isdigit() and int(v) >= low else None


def _one_of(choices):
    return lambda v: v if v in choices else None


def parse(argv, options, flags=(), positional=False):
    """{name: value} for *argv* made only of *options* (``--name VALUE`` or ``--name=VALUE``,
    each value checked by its converter), *flags* and (with *positional*) one plain argument,
    stored as ``"arg"``; None for anything else (click's business: help, usage errors)."""
    got, rest = {}, list(argv)
    while rest:
        a = rest.pop(0)
        name, eq, value = a.partition("=")
        if a in flags:
            got[a] = True
        elif name in options:
            if not eq:
                if not rest:
                    return None
                value = rest.pop(0)
            v = options[name](value)
            if v is None:
                return None
            got[name] = v
        elif positional and a == "--" and len(rest) == 1 and "arg" not in got:
            got["arg"] = rest.pop(0)
        elif a.startswith("-") or not positional or "arg" in got:
            return None
        else:
            got["arg"] = a
    if positional and "arg" not in got:
        return None
    return got


def _out(text):
    sys.stdout.write(text)
    sys.stdout.flush()


def run_recall(query, budget, json_):
    """Print ``ctxd recall``'s answer."""
    from ctxd.memory.core import ProjectMemory

    with ProjectMemory.at() as mem:
        mem.store(create=False)  # nothing recorded: NoStore (exit 4), as ctxd context says it
        r = mem.recall(query, budget)
    if json_:
        import json  # only here: its import compiles regexes plain recall never uses (~3 ms)

        _out(json.dumps(r.to_json(), ensure_ascii=False, indent=1) + "\n")
    else:
        _out(r.text + "\n" if r.text else "")


def run_context(budget=None, model=None, mode="auto", fmt="markdown", query=None, explain=False):
    """Print ``ctxd context``'s answer (the decision on stderr with *explain*)."""
    import os

    from ctxd.memory.context import render_formats
    from ctxd.memory.core import ProjectMemory

    with ProjectMemory.at() as mem:
        mem.budget_for(model, budget)  # a usage error before the store is looked at
        ctx = mem.context(budget=budget, model=model, mode=mode, query=query)
        note = mem.summarizer_note() if explain else ""
    if fmt == "json":
        import json

        _out(json.dumps(render_formats.to_messages(ctx), ensure_ascii=False, indent=2) + "\n")
    elif fmt == "text":
        _out(render_formats.to_text(ctx))
    else:
        _out(render_formats.to_markdown(ctx, f"Conversation context: {os.path.basename(mem.root)}"))
    if explain:
        sys.stderr.write(f"budget from {ctx.budget_source}\n" + render_formats.explain(ctx) + (f"\n{note}" if note else "")
                         + "\n")


def _run(name, fn, kwargs):
    from ctxd.boundary import cli_exit

    try:
        fn(**kwargs)
    except (Exception, KeyboardInterrupt) as e:
        sys.exit(cli_exit(e, name))
    sys.exit(0)


def main(argv):
    """Run ``ctxd recall …`` or ``ctxd context …`` when *argv* fits the small grammar (exits);
    else return and let click take it."""
    if argv[:1] == ["recall"]:
        got = parse(argv[1:], {"--budget": _int_at_least(16)}, flags=("--json",), positional=True)
        if got is not None:
            _run("recall", run_recall, {"query": got["arg"], "budget": got.get("--budget"),
                                        "json_": got.get("--json", False)})
    elif argv[:1] == ["context"]:
        got = parse(argv[1:], {"--budget": _int_at_least(64), "--model": str, "--query": str,
                               "--mode": _one_of(CONTEXT_MODES), "--format": _one_of(CONTEXT_FORMATS)},
                    flags=("--explain",))
        if got is not None:
            _run("context", run_context, {"budget": got.get("--budget"), "model": got.get("--model"),
                                          "mode": got.get("--mode", "auto"), "fmt": got.get("--format", "markdown"),
                                          "query": got.get("--query"), "explain": got.get("--explain", False)})
