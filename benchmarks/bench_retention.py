#!/usr/bin/env python3
"""Fact retention of `ctxd context` against a sliding window of the same budget.

    python3 benchmarks/bench_retention.py [--budget 4000] [--case NAME ...] [--explain] [--keep]

For every long sample conversation in tests/data/conversations (JSONL, with a
.facts.json next to it; tests/data/conversations/generate.py writes both):

1. make an isolated project: a temp dir with its own HOME and XDG_* dirs, a
   `.contextrc` marker, trusted with `ctxd allow`;
2. `ctxd chat import FILE --format jsonl`;
3. run `ctxd context --budget N --format text` and keep its standard output;
4. build the baseline from the same store (`ctxd chat export`): the newest
   messages, newest first, each costing estimate(content) + 4 tokens, at least
   the last 2, as long as they fit N; rendered oldest first as "role: content"
   lines;
5. count the facts whose text is in each (a case-sensitive substring; runs of
   whitespace count as one space). A fact with a "superseded" value (a
   correction) counts only when its new text is present and every line that
   still shows the old value marks it as old: a marker word on the line
   (superseded, old, previously, was, not, corrected, replaced, no longer,
   原来, 旧, 之前, 更正, 改为, 作废, 不再 ...) or the new value after it
   ("2026-03-15 -> 2026-04-12").

It prints, per case and in total, the facts, the share ctxd and the window
keep, and the token sizes (ctxd.memory.text.tokens.estimate) of the context, the
window and the conversation; then retention per fact kind and the facts ctxd
missed, with the reason, so the engine can be fixed. Target: ctxd >= 95 % at
--budget 4000 (the window keeps about none: the facts are planted early and
never repeated near the end). When `ctxd context` does not exist yet it says
so and still prints the window baseline. A script, never run as a test.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DATA = os.path.join(REPO, "tests", "data", "conversations")
sys.path.insert(0, REPO)

from ctxd.memory.text.tokens import estimate  # noqa: E402  (the same estimator the store uses)

TARGET = 95.0
PER_MESSAGE = 4  # tokens of framing per message, the budget rule of the design notes
MIN_MESSAGES = 2

# A line that shows a superseded value is fine when it says the value is old.
_MARK_WORDS = re.compile(
    r"\b(?:superseded|outdated|obsolete|old|older|previous|previously|formerly|was|were|corrected|correction|"
    r"replaced|replaces|instead of|moved from|changed from|no longer|not|earlier|originally|stale|dropped|"
    r"dead|update|updated)\b", re.IGNORECASE)
_MARK_CJK = ("原来", "原定", "原先", "原计划", "旧", "之前", "更正", "改为", "改到", "提高到", "调整为", "作废", "不再",
             "取代", "替代", "过时", "已失效")
_ARROWS = ("->", "→", "=>", "⇒")


def _norm(text):
    return " ".join(text.split())


def present(needle, haystack, haystack_norm=None):
    if needle in haystack:
        return True
    return _norm(needle) in (haystack_norm if haystack_norm is not None else _norm(haystack))


def marked_old(line, old, new):
    """Does *line*, which shows *old*, say that it is no longer current?"""
    if _MARK_WORDS.search(line) or any(m in line for m in _MARK_CJK):
        return True
    i, j = line.find(old), line.find(new)
    if 0 <= i < j:  # "2026-03-15 → 2026-04-12", "from 99.9% to 99.95%"
        return any(a in line[i:j] for a in _ARROWS) or "from" in line[:i + 1].lower() or "从" in line[:i + 1]
    return False


def check(fact, text, text_norm):
    """(retained?, why not)."""
    new = fact["text"]
    if not present(new, text, text_norm):
        return False, "absent"
    old = fact.get("superseded")
    if old:
        for line in text.splitlines():
            if old in line and not marked_old(line, old, new):
                shown = line.strip()
                if len(shown) > 160:
                    k = shown.find(old)
                    shown = "…" + shown[max(0, k - 70):k + 70] + "…"
                return False, f"the superseded {old!r} still reads as current: {shown}"
    return True, ""


# -- an isolated project ------------------------------------------------------------

def isolated_env(tmp, proj):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXD_", "DIRENV_"))}
    home = os.path.join(tmp, "home")
    for var, sub in (("HOME", ""), ("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                     ("XDG_STATE_HOME", ".local/state"), ("XDG_CACHE_HOME", ".cache")):
        path = os.path.join(home, sub) if sub else home
        os.makedirs(path, exist_ok=True)
        env[var] = path
    env["PWD"] = proj
    env.pop("OLDPWD", None)
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def ctxd(args, env, cwd, timeout=600):
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "ctxd", *args], env=env, cwd=cwd, capture_output=True, text=True,
                       timeout=timeout)
    return p, time.perf_counter() - t0


class Result:
    def __init__(self, name):
        self.name = name
        self.facts = []
        self.turns = 0
        self.conv_tokens = 0
        self.ctxd_text = None  # None: no ctxd figure (missing command, failure)
        self.ctxd_note = ""
        self.ctxd_secs = 0.0
        self.explain = ""
        self.window_text = ""
        self.window_messages = 0
        self.ctxd_hits = []  # [(fact, retained, why)]
        self.window_hits = []


def run_case(path, budget, explain, keep):
    name = os.path.basename(path)[: -len(".jsonl")]
    r = Result(name)
    with open(path[: -len(".jsonl")] + ".facts.json", encoding="utf-8") as f:
        r.facts = json.load(f)
    with open(path, encoding="utf-8") as f:
        turns = [json.loads(line) for line in f if line.strip()]
    r.turns = len(turns)
    r.conv_tokens = sum(estimate(t["content"]) for t in turns)

    tmp = tempfile.mkdtemp(prefix=f"ctxd-retention-{name}-")
    try:
        proj = os.path.join(tmp, "proj")
        os.makedirs(proj)
        with open(os.path.join(proj, ".contextrc"), "w", encoding="utf-8") as f:
            f.write("# retention benchmark project\n")
        env = isolated_env(tmp, proj)
        p, _ = ctxd(["allow", proj], env, proj)
        if p.returncode != 0:
            raise SystemExit(f"{name}: ctxd allow failed: {p.stderr.strip()}")
        p, _ = ctxd(["chat", "import", "--format", "jsonl", path], env, proj)
        if p.returncode != 0:
            raise SystemExit(f"{name}: ctxd chat import failed: {(p.stderr or p.stdout).strip()}")

        # the baseline, from what the store holds (redacted, huge outputs as previews)
        p, _ = ctxd(["chat", "export", "--format", "jsonl"], env, proj)
        if p.returncode != 0:
            raise SystemExit(f"{name}: ctxd chat export failed: {p.stderr.strip()}")
        stored = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
        chosen, used = [], 0
        for m in reversed(stored):
            cost = estimate(m["content"]) + PER_MESSAGE
            if used + cost > budget and len(chosen) >= MIN_MESSAGES:
                break
            chosen.append(m)
            used += cost
        r.window_messages = len(chosen)
        r.window_text = "\n".join(f"{m['role']}: {m['content']}" for m in reversed(chosen))

        args = ["context", "--budget", str(budget), "--format", "text"] + (["--explain"] if explain else [])
        p, r.ctxd_secs = ctxd(args, env, proj)
        if p.returncode == 0:
            r.ctxd_text = p.stdout
            r.explain = p.stderr.strip()
        elif "No such command" in p.stderr:
            r.ctxd_note = "`ctxd context` does not exist yet"
        else:
            r.ctxd_note = f"`ctxd context` failed (exit {p.returncode}): {(p.stderr or p.stdout).strip()[:300]}"
    finally:
        if keep:
            print(f"note: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    wnorm = _norm(r.window_text)
    r.window_hits = [(f, *check(f, r.window_text, wnorm)) for f in r.facts]
    if r.ctxd_text is not None:
        cnorm = _norm(r.ctxd_text)
        r.ctxd_hits = [(f, *check(f, r.ctxd_text, cnorm)) for f in r.facts]
    return r


def pct(hits):
    return 100.0 * sum(1 for _, ok, _ in hits if ok) / len(hits) if hits else 0.0


def conversation_paths(data, cases=()):
    """The sample conversations (*.jsonl) in *data*, only *cases* when given."""
    paths = sorted(os.path.join(data, n) for n in os.listdir(data) if n.endswith(".jsonl"))
    if cases:
        paths = [p for p in paths if os.path.basename(p)[: -len(".jsonl")] in cases]
    if not paths:
        raise SystemExit(f"no conversations in {data}")
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=int, default=4000, help="token budget for both (default 4000)")
    ap.add_argument("--data", default=DATA, type=os.path.abspath,
                    help="directory of *.jsonl + *.facts.json (default: %(default)s)")
    ap.add_argument("--case", action="append", default=[], help="only this conversation (repeatable)")
    ap.add_argument("--explain", action="store_true", help="pass --explain and print ctxd's decision per case")
    ap.add_argument("--show", action="store_true", help="print each context ctxd produced")
    ap.add_argument("--keep", action="store_true", help="keep the temp projects")
    args = ap.parse_args()

    paths = conversation_paths(args.data, args.case)

    print(f"ctxd retention benchmark: `ctxd context --budget {args.budget} --format text` vs a sliding window of "
          f"{args.budget} tokens (newest messages, +{PER_MESSAGE} per message, at least {MIN_MESSAGES})")
    print(f"  python {sys.version.split()[0]}; tokens = ctxd.memory.text.tokens.estimate; target: ctxd >= {TARGET:.0f} %")
    print()
    results = []
    for path in paths:
        r = run_case(path, args.budget, args.explain, args.keep)
        results.append(r)
        if args.explain and r.explain:
            print(f"[{r.name}] {r.explain}\n")
        if args.show and r.ctxd_text is not None:
            print(f"----- {r.name}: ctxd context -----\n{r.ctxd_text.rstrip()}\n----- end -----\n")

    have_ctxd = any(r.ctxd_text is not None for r in results)
    head = (f"{'case':<24} {'turns':>5} {'conv tok':>9} {'facts':>5} {'ctxd':>7} {'window':>7} "
            f"{'ctxd tok':>8} {'win tok':>8} {'ctxd s':>6}")
    print(head)
    print("-" * len(head))
    tot_facts = tot_c = tot_w = 0
    for r in results:
        n = len(r.facts)
        c = sum(1 for _, ok, _ in r.ctxd_hits if ok)
        w = sum(1 for _, ok, _ in r.window_hits if ok)
        tot_facts += n
        tot_c += c
        tot_w += w
        if r.ctxd_text is not None:
            ctok = estimate(r.ctxd_text)
            cshow = f"{100.0 * c / n:6.1f}%"
            ctok_s = f"{ctok:>8,}" + ("!" if ctok > args.budget else " ")
            secs = f"{r.ctxd_secs:6.2f}"
        else:
            cshow, ctok_s, secs = f"{'n/a':>7}", f"{'n/a':>8} ", f"{'':>6}"
        print(f"{r.name:<24} {r.turns:>5} {r.conv_tokens:>9,} {n:>5} {cshow} {100.0 * w / n:6.1f}% "
              f"{ctok_s}{estimate(r.window_text):>8,} {secs}")
    print("-" * len(head))
    ctot = f"{100.0 * tot_c / tot_facts:6.1f}%" if have_ctxd else f"{'n/a':>7}"
    print(f"{'total':<24} {'':>5} {'':>9} {tot_facts:>5} {ctot} {100.0 * tot_w / tot_facts:6.1f}%")
    if any(r.ctxd_text is not None and estimate(r.ctxd_text) > args.budget for r in results):
        print(f"  ! the context is larger than the budget of {args.budget} tokens (by the same estimator)")
    for r in results:
        if r.ctxd_note:
            print(f"  note [{r.name}]: {r.ctxd_note}; only the window baseline is shown")

    if have_ctxd:
        kinds = {}
        for r in results:
            for f, ok, _ in r.ctxd_hits:
                k = kinds.setdefault(f["kind"], [0, 0])
                k[0] += ok
                k[1] += 1
        print("\nctxd by kind: " + ", ".join(f"{k} {a}/{b}" for k, (a, b) in sorted(kinds.items())))
        verdict = "met" if tot_c * 100.0 >= TARGET * tot_facts else "NOT met"
        print(f"target ctxd >= {TARGET:.0f} % in total: {verdict} ({100.0 * tot_c / tot_facts:.1f} %)")
        missed = [(r.name, f, why) for r in results for f, ok, why in r.ctxd_hits if not ok]
        if missed:
            print("\nfacts ctxd missed:")
            for name, f, why in missed:
                print(f"  {name} {f['id']} ({f['kind']}) {f['text']!r}: {why}")
        else:
            print("\nctxd missed no fact.")


if __name__ == "__main__":
    main()
