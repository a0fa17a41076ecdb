"""``ctxd recall QUERY [--budget N] [--json]`` without click: an AI tool may run it on every
question, so ``ctxd._entry`` dispatches it here before the click app (and every command module
it registers) is imported. Anything this small parser does not take (``--help``, another option,
a bad number) goes to the click command in ``ctxd.commands.recall``, which owns the help text and
the usage errors; the output is the same either way.
"""

import sys


def parse(argv):
    """(query, budget or None, json) for ``QUERY [--budget N] [--json]`` in any order, else None."""
    query, budget, json_, rest = None, None, False, list(argv)
    while rest:
        a = rest.pop(0)
        if a == "--json":
            json_ = True
        elif a == "--budget" and rest and rest[0].isdigit() and int(rest[0]) >= 16:
            budget = int(rest.pop(0))
        elif a.startswith("--budget=") and a[9:].isdigit() and int(a[9:]) >= 16:
            budget = int(a[9:])
        elif a == "--" and len(rest) == 1 and query is None:
            query = rest.pop(0)
        elif a.startswith("-") or query is not None:
            return None  # click's business: help, usage errors
        else:
            query = a
    return None if query is None else (query, budget, json_)


def run(query, budget, json_):
    """Print the recall (the click command calls this too)."""
    import json

    from ctxd.memory.core import ProjectMemory

    with ProjectMemory.at() as mem:
        r = mem.recall(query, budget)
    if json_:
        out = json.dumps(r.to_json(), ensure_ascii=False, indent=1) + "\n"
    else:
        out = r.text + "\n" if r.text else ""
    sys.stdout.write(out)
    sys.stdout.flush()


def recall_main(argv):
    """Run ``ctxd recall`` when *argv* fits the small grammar (exits); else return."""
    got = parse(argv)
    if got is None:
        return
    from ctxd.boundary import cli_exit

    try:
        run(*got)
    except (Exception, KeyboardInterrupt) as e:
        sys.exit(cli_exit(e, "recall"))
    sys.exit(0)
