#!/usr/bin/env python3
"""How close ctxd.memory.text.tokens.estimate comes to the real cl100k_base and o200k_base counts.

    python3 benchmarks/bench_tokens.py [--limit N]

For English prose, Chinese prose, source code and mixed chat-like text, the median
absolute percentage error (APE) of the estimate against the exact count, on the
held-out "test" split of benchmarks/token_corpus.py (the weights were fitted by
fit_tokens.py on the other split). Target: <= 10 % in each category, for both
encodings. The seed heuristic (CJK 1.5 tokens a character, other text 0.25) is
measured next to it, and so are two categories without a target (other languages,
machine data). Then the speed of estimate() and of the seed, in MB/s of UTF-8.

Needs the exact tokenizer (pip install -e '.[tokens]'); without it the script
says so and exits 0. A script, never run as a test.
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import token_corpus  # noqa: E402

from ctxd.memory.text import tokens  # noqa: E402

TARGET = 10.0
LABELS = {"english": "English prose", "chinese": "Chinese prose", "code": "code",
          "mixed": "mixed", "other-languages": "other languages", "data": "machine data"}


def seed_estimate(text):
    """The seed's heuristic, kept here for comparison."""
    if not text:
        return 0

    def is_cjk(o):
        return (0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0x3040 <= o <= 0x30FF
                or 0xAC00 <= o <= 0xD7AF or 0xF900 <= o <= 0xFAFF or 0x20000 <= o <= 0x2FA1F
                or 0x3000 <= o <= 0x303F or 0xFF00 <= o <= 0xFFEF)

    cjk = sum(1 for ch in text if ord(ch) > 0x2FFF and is_cjk(ord(ch)))
    return int(cjk * 1.5 + (len(text) - cjk) / 4 + 0.999)


def ape(pred, true):
    return abs(pred - true) / true * 100


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=600, help="samples per category (default 600)")
    args = ap.parse_args()

    if not tokens.exact_available():
        print(f"bench_tokens: the exact tokenizer ({tokens.EXACT_PACKAGE}) is not installed, "
              "so there is nothing to measure against; install it with pip install -e '.[tokens]'")
        return 0

    cats = token_corpus.CATEGORIES + token_corpus.EXTRA
    samples = {c: token_corpus.samples(c, "test", limit=args.limit) for c in cats}
    print("held-out samples: " + ", ".join(
        f"{LABELS[c]} {len(s)} ({sum(map(len, s)) // 1000}K chars)" for c, s in samples.items()))
    print()
    head = (f"{'category':16} {'encoding':12} {'estimate':>9} {'p90':>6} {'bias':>6}"
            f" {'seed':>7} {'target':>7}")
    print(head)
    print("-" * len(head))
    misses = []
    for c in cats:
        texts = [t for t in samples[c] if t]
        if not texts:
            print(f"{LABELS[c]:16} (no samples on this machine)")
            continue
        for enc in tokens.ENCODINGS:
            exact = tokens.exact_counter(enc)
            true = [exact(t) for t in texts]
            pairs = [(tokens.estimate(t, enc), y) for t, y in zip(texts, true) if y]
            errs = [ape(p, y) for p, y in pairs]
            bias = statistics.median((p - y) / y * 100 for p, y in pairs)
            p90 = statistics.quantiles(errs, n=10)[-1]
            seed = statistics.median(ape(seed_estimate(t), y) for t, y in zip(texts, true) if y)
            med = statistics.median(errs)
            if c in token_corpus.CATEGORIES:
                ok = "ok" if med <= TARGET else "MISS"
                if med > TARGET:
                    misses.append(f"{c}/{enc}")
                target = f"{ok:>4} {TARGET:.0f}%"
            else:
                target = "     -"
            print(f"{LABELS[c] if enc == tokens.CL100K else '':16} {enc:12} {med:8.1f}% {p90:5.1f}%"
                  f" {bias:+5.1f}% {seed:6.1f}% {target}")
    print()
    print("estimate: median APE; p90: 90th percentile APE; bias: median signed error;"
          " seed: the seed heuristic's median APE")

    # Speed, on all the held-out text of the four categories.
    texts = [t for c in token_corpus.CATEGORIES for t in samples[c]]
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    print()
    for name, fn in (("estimate", tokens.estimate), ("seed heuristic", seed_estimate),
                     (f"exact ({tokens.EXACT_PACKAGE}, cl100k)", tokens.exact_counter())):
        fn(texts[0])  # warm up (the exact tokenizer loads its ranks on first use)
        best = None
        for _ in range(3):
            t0 = time.perf_counter()
            for t in texts:
                fn(t)
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        print(f"speed {name:28} {mb / best:7.1f} MB/s  ({best / len(texts) * 1e6:6.1f} µs a sample,"
              f" {len(texts)} samples, {mb:.1f} MB)")
    print()
    print("target met in every category" if not misses else f"target missed: {', '.join(misses)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
