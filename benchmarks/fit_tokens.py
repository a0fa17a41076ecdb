"""Fit the weights of ctxd.memory.text.tokens.estimate against the real tokenizers.

    python3 benchmarks/fit_tokens.py            # fit and print the weights and the errors
    python3 benchmarks/fit_tokens.py --write    # ... and rewrite the fitted block in tokens.py

Needs the exact tokenizer (pip install -e '.[tokens]') and numpy. It fits on the
"fit" split of benchmarks/token_corpus.py only; bench_tokens.py measures on the
held-out "test" split. The fit minimises the squared *relative* error of every
sample (rows scaled by 1/true count), each category weighted equally, then
reweights a few rounds towards the absolute relative error (the benchmark's
median APE is what we care about).
"""

import argparse
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import token_corpus  # noqa: E402

from ctxd.memory.text import tokens  # noqa: E402

LIMITS = {"english": 3000, "chinese": 3000, "code": 4000, "mixed": 2500,
          "other-languages": 2000, "data": 1000}
# How much each category counts in the fit (they are equal in the benchmark; the
# extra ones only need to be sensible).
CATEGORY_WEIGHT = {"english": 1.0, "chinese": 1.0, "code": 1.0, "mixed": 1.0,
                   "other-languages": 0.5, "data": 0.5}


def load(split):
    rows = []
    for cat in token_corpus.CATEGORIES + token_corpus.EXTRA:
        for text in token_corpus.samples(cat, split, limit=LIMITS[cat]):
            rows.append((cat, text))
    return rows


def exact_counts(rows, encoding):
    counter = tokens.exact_counter(encoding)
    if counter is None:
        sys.exit("fit_tokens: the exact tokenizer is not installed (pip install -e '.[tokens]')")
    return [counter(text) for _, text in rows]


def fit(X, y, cats, rounds=6):
    import numpy as np

    cw = np.array([CATEGORY_WEIGHT[c] / sum(1 for d in cats if d == c) for c in cats])
    base = np.sqrt(cw) / y
    w = np.ones(len(y))
    coef = None
    for _ in range(rounds):
        s = base * np.sqrt(w)
        coef, *_ = np.linalg.lstsq(X * s[:, None], y * s, rcond=None)
        rel = np.abs(X @ coef - y) / y
        w = 1.0 / np.maximum(rel, 0.01)  # IRLS towards least absolute relative error
    return coef


def report(name, X, y, cats, coef):
    import numpy as np

    pred = np.maximum(1, np.floor(X @ coef + 0.5))
    ape = np.abs(pred - y) / y * 100
    out = []
    for cat in token_corpus.CATEGORIES + token_corpus.EXTRA:
        sel = np.array([c == cat for c in cats])
        if sel.any():
            out.append(f"{cat} {np.median(ape[sel]):.1f}%")
    print(f"  {name}: median APE " + ", ".join(out))


def single_token_han():
    """(Han characters that are one token in both encodings, ... in o200k only)."""
    single = {}
    for enc in tokens.ENCODINGS:
        counter = tokens.exact_counter(enc)
        single[enc] = {chr(o) for o in list(range(0x4E00, 0xA000)) + list(range(0x3400, 0x4DC0))
                       if counter(chr(o)) == 1}
    both = single[tokens.CL100K] & single[tokens.O200K]
    return "".join(sorted(both)), "".join(sorted(single[tokens.O200K] - both))


def _wrap(name, chars, width=40):
    out = [f"{name} = ("]
    for i in range(0, len(chars), width):
        out.append(f'    "{chars[i:i + width]}"')
    out.append(")")
    return out


def write_block(weights, han):
    path = os.path.join(os.path.dirname(HERE), "ctxd", "memory", "text", "tokens.py")
    with open(path, encoding="utf-8") as f:
        src = f.read()
    lines = _wrap("HAN_BOTH", han[0]) + _wrap("HAN_O200K", han[1]) + ["WEIGHTS = {"]
    for enc, coef in weights.items():
        name = "CL100K" if enc == tokens.CL100K else "O200K"
        lines.append(f"    {name}: (")
        for i in range(0, len(coef), 6):
            lines.append("        " + " ".join(f"{c:.4f}," for c in coef[i:i + 6]))
        lines.append("    ),")
    lines.append("}")
    block = "\n".join(lines) + "\n"
    pattern = r"(# -- fitted by benchmarks/fit_tokens.py[^\n]*\n).*?(# -- end of fitted block)"
    new, n = re.subn(pattern, lambda m: m.group(1) + block + m.group(2), src, flags=re.S)
    if n != 1:
        sys.exit("fit_tokens: the fitted block markers are missing from tokens.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)
    print(f"wrote {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite the fitted block in tokens.py")
    args = ap.parse_args()
    import numpy as np

    han = single_token_han()
    if (han[0], han[1]) != (tokens.HAN_BOTH, tokens.HAN_O200K):
        # The Han classes are data too: write them first, then fit with them in place.
        print(f"Han characters: {len(han[0])} one token in both, {len(han[1])} in o200k only")
        tokens.HAN_BOTH, tokens.HAN_O200K = han
        tokens._HAN_BOTH, tokens._HAN_O200K = frozenset(han[0]), frozenset(han[1])
        tokens._HIGH.clear()  # forget the classes looked up with the old sets
    t0 = time.perf_counter()
    fit_rows, test_rows = load("fit"), load("test")
    print(f"corpus: {len(fit_rows)} fit samples, {len(test_rows)} test samples "
          f"({time.perf_counter() - t0:.0f}s)")
    Xf = np.array([tokens.features(t) for _, t in fit_rows], dtype=float)
    Xt = np.array([tokens.features(t) for _, t in test_rows], dtype=float)
    cf = [c for c, _ in fit_rows]
    ct = [c for c, _ in test_rows]
    weights = {}
    for enc in tokens.ENCODINGS:
        yf = np.array(exact_counts(fit_rows, enc), dtype=float)
        yt = np.array(exact_counts(test_rows, enc), dtype=float)
        coef = fit(Xf, yf, cf)
        weights[enc] = [float(c) for c in coef]
        print(enc)
        for name, c in zip(tokens.FEATURES, coef):
            print(f"    {name:18} {c:8.4f}")
        report("fit ", Xf, yf, cf, coef)
        report("test", Xt, yt, ct, coef)
    if args.write:
        write_block(weights, han)


if __name__ == "__main__":
    main()
