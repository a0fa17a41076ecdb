#!/usr/bin/env python3
"""Compression and fact retention of `ctxd handoff` archives.

    python3 benchmarks/bench_handoff.py [--ratio 10] [--case NAME ...] [--show] [--keep]

For every long sample conversation in tests/data/conversations (the ones
bench_retention.py uses, with their planted .facts.json):

1. make an isolated project exactly as bench_retention.py does (temp HOME and
   XDG_* dirs, a trusted `.contextrc` marker), with `[handoff] compression_ratio`
   set in its config.toml when --ratio is given;
2. `ctxd chat import FILE --format jsonl`;
3. `ctxd handoff` and read the archive file it prints;
4. the compression ratio = tokens of the conversation (the JSONL's message
   contents, ctxd.memory.text.tokens.estimate) / tokens of the archive file's text;
   the archive's own context_footprint (tokens of the stored session, where a
   huge output is a preview) is shown next to it;
5. the planted facts present in the archive text, with bench_retention.py's
   rules (imported from it): a case-sensitive substring, whitespace runs as one
   space; a correction counts only when the new value is there and every line
   still showing the old value marks it as old.

Targets: ratio >= 10:1 and >= 95 % of the planted facts, in total. A script,
never run as a test.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_retention  # noqa: E402  (isolated_env, ctxd, check, _norm, DATA)

from ctxd.memory.text.tokens import estimate  # noqa: E402

TARGET_RATIO = 10.0
TARGET_FACTS = 95.0


def run_case(path, ratio, keep, show):
    name = os.path.basename(path)[: -len(".jsonl")]
    with open(path[: -len(".jsonl")] + ".facts.json", encoding="utf-8") as f:
        facts = json.load(f)
    with open(path, encoding="utf-8") as f:
        turns = [json.loads(line) for line in f if line.strip()]
    conv_tokens = sum(estimate(t["content"]) for t in turns)
    tmp = tempfile.mkdtemp(prefix=f"ctxd-handoff-{name}-")
    try:
        proj = os.path.join(tmp, "proj")
        os.makedirs(proj)
        with open(os.path.join(proj, ".contextrc"), "w", encoding="utf-8") as f:
            f.write("# handoff benchmark project\n")
        env = bench_retention.isolated_env(tmp, proj)
        if ratio:
            cfg = os.path.join(env["XDG_CONFIG_HOME"], "ctxd")
            os.makedirs(cfg, exist_ok=True)
            with open(os.path.join(cfg, "config.toml"), "w", encoding="utf-8") as f:
                f.write(f"[handoff]\ncompression_ratio = {ratio}\n")
        for args in (["allow", proj], ["chat", "import", "--format", "jsonl", path]):
            p, _ = bench_retention.ctxd(args, env, proj)
            if p.returncode != 0:
                raise SystemExit(f"{name}: ctxd {args[0]} failed: {(p.stderr or p.stdout).strip()}")
        p, secs = bench_retention.ctxd(["handoff"], env, proj)
        if p.returncode != 0:
            raise SystemExit(f"{name}: ctxd handoff failed (exit {p.returncode}): {(p.stderr or p.stdout).strip()}")
        archive_path = p.stdout.strip().splitlines()[-1]
        with open(archive_path, encoding="utf-8") as f:
            text = f.read()
        if show:
            print(f"----- {name}: {archive_path} -----\n{text.rstrip()}\n----- end -----\n")
    finally:
        if keep:
            print(f"note: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    archive = json.loads(text)
    norm = bench_retention._norm(text)
    hits = [(f, *bench_retention.check(f, text, norm)) for f in facts]
    return {"name": name, "turns": len(turns), "conv": conv_tokens, "archive": estimate(text), "secs": secs,
            "footprint": archive["context_footprint"], "hits": hits, "facts_listed": len(archive.get("facts", [])),
            "key_points": len(archive.get("key_points", [])), "questions": len(archive.get("questions", []))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ratio", type=float, default=None,
                    help="[handoff] compression_ratio for the projects (default: ctxd's default, 10)")
    ap.add_argument("--data", default=bench_retention.DATA, type=os.path.abspath)
    ap.add_argument("--case", action="append", default=[])
    ap.add_argument("--show", action="store_true", help="print each archive")
    ap.add_argument("--keep", action="store_true", help="keep the temp projects")
    args = ap.parse_args()
    paths = bench_retention.conversation_paths(args.data, args.case)

    print(f"ctxd handoff benchmark: archive of each sample conversation"
          f"{f' at compression_ratio = {args.ratio:g}' if args.ratio else ' (default compression_ratio)'}")
    print(f"  python {sys.version.split()[0]}; tokens = ctxd.memory.text.tokens.estimate; "
          f"targets: ratio >= {TARGET_RATIO:g}:1, planted facts >= {TARGET_FACTS:g} %")
    print()
    results = [run_case(p, args.ratio, args.keep, args.show) for p in paths]
    head = (f"{'case':<24} {'turns':>5} {'conv tok':>9} {'archive':>8} {'ratio':>7} {'stored→':>9} {'self':>7} "
            f"{'facts':>6} {'kept':>7} {'listed':>6} {'kp':>3} {'q':>3} {'secs':>5}")
    print(head)
    print("-" * len(head))
    tc = ta = tf = tk = 0
    for r in results:
        n = len(r["hits"])
        k = sum(1 for _, ok, _ in r["hits"] if ok)
        tc, ta, tf, tk = tc + r["conv"], ta + r["archive"], tf + n, tk + k
        fp = r["footprint"]
        print(f"{r['name']:<24} {r['turns']:>5} {r['conv']:>9,} {r['archive']:>8,} {r['conv'] / r['archive']:>6.1f}x "
              f"{fp['tokens_compressed_from']:>9,} {fp['compression_ratio'] or 0:>6.1f}x {n:>6} "
              f"{100.0 * k / n:>6.1f}% {r['facts_listed']:>6} {r['key_points']:>3} {r['questions']:>3} {r['secs']:>5.2f}")
    print("-" * len(head))
    print(f"{'total':<24} {'':>5} {tc:>9,} {ta:>8,} {tc / ta:>6.1f}x {'':>9} {'':>7} {tf:>6} {100.0 * tk / tf:>6.1f}%")
    print("\ncolumns: ratio = conversation tokens / archive tokens; stored→ and self = the archive's own "
          "context_footprint (tokens of the stored session, offloaded outputs at full size, and its ratio); listed = "
          "facts in the archive's facts list; kp / q = key points / pool questions")
    worst = min(r["conv"] / r["archive"] for r in results)
    print(f"target ratio >= {TARGET_RATIO:g}:1 in every case: {'met' if worst >= TARGET_RATIO else 'NOT met'} "
          f"(lowest {worst:.1f}:1)")
    print(f"target planted facts >= {TARGET_FACTS:g} % in total: "
          f"{'met' if tk * 100.0 >= TARGET_FACTS * tf else 'NOT met'} ({100.0 * tk / tf:.1f} %)")
    missed = [(r["name"], f, why) for r in results for f, ok, why in r["hits"] if not ok]
    if missed:
        print("\nplanted facts the archive missed:")
        for name, f, why in missed:
            print(f"  {name} {f['id']} ({f['kind']}) {f['text']!r}: {why}")
    else:
        print("\nthe archives missed no planted fact.")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"\n({time.perf_counter() - t0:.1f} s)")
