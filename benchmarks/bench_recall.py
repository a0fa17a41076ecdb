#!/usr/bin/env python3
"""Evidence recall on LoCoMo: ctxd's context vs plain BM25 over turns vs the newest-turns window.

    python3 benchmarks/bench_recall.py [--budget 2000] [--conv 26,30] [--limit N] [--exact]
                                       [--per-prompt] [--scale N [--scale-queries 20] [--scale-vectors]]
                                       [--lang zh] [--semantic off|static|e5] [--misses] [--keep]
                                       [--rev REV | --ctxd-src DIR]

Data: the LoCoMo dev split in ../shared/data/locomo-dev/ (its README gives the
metric). For each conversation:

1. one turn a message, speaker_a as `user`, speaker_b as `assistant`, the
   session's `session_N_date_time` as the time (turn i of a session at that
   time + 5*i seconds), session `locomo-<conv>-s<N>`; the text is
   "<speaker>: <text>", plus " [image: <blip_caption>]" when the turn has one;
2. written as OpenAI-style JSONL ({"role","content","time","session"}) and
   imported into a fresh, trusted project (own HOME and XDG_* dirs) with the
   real `ctxd chat import FILE --format jsonl`, as a whole process;
3. for every question of categories 1-4, at the same budget and token counter:
   - ctxd context: `ctxd context --budget B --query Q --format text`;
   - ctxd recall: `ctxd recall Q --budget B`, when `ctxd recall --help` exits 0,
     scored and sized on the text it prints (its dates and labels count, as they do
     in ctxd's budget);
   - bm25: Okapi BM25 (k1=1.5, b=0.75) over the turns (rank_bm25 when it is
     installed, else the same formula here), lowercase words, English stop
     words removed; the best-scoring turns (score > 0) packed while they fit;
   - window: the newest turns that fit.
   bm25 and window charge each turn counter(content) + 4 tokens.
4. evidence recall: the share of the evidence turns (dia_id) whose own text
   (whitespace normalised; for a text over 300 characters its first 200) is a
   substring of the method's output (whitespace normalised). Totals are over
   evidence turns (micro average).

After each import `ctxd chat embed` waits for the background embedder (e5 with the semantic
extra, else the static model ctxd ships; --semantic off sets CTXD_SEMANTIC=off: lexical only,
the floor; --semantic static uses the static model even where the extra is installed). --lang zh asks the Chinese
translations in benchmarks/data/locomo-dev-zh.json (57 questions) instead.

--per-prompt sends each question (categories 1-5) to `ctxd chat hook claude`
as a UserPromptSubmit payload and scores `hookSpecificOutput.additionalContext`;
the context directory is restored from a snapshot before every question, so no
question is ever in the store another question sees. --scale N imports N
messages (the LoCoMo turns repeated with new sessions and times) and times
`--scale-queries` queries lexically (CTXD_SEMANTIC=off), wall and CPU time, then with the
default model's vectors (--scale-vectors);
--scale-vectors times them again with every message embedded (the base conversations
embedded for real, each copy given its original's row by SQL). A script, never run as a test.
"""

import argparse
import datetime as dt
import json
import math
import os
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _common  # noqa: E402

_common.use_ctxd_source()
from ctxd.memory.text import tokens  # noqa: E402

DATA = os.path.join(os.path.dirname(_common.REPO), "shared", "data", "locomo-dev")
if not os.path.isdir(DATA):
    DATA = "/work/shared/data/locomo-dev"
ZH = os.path.join(HERE, "data", "locomo-dev-zh.json")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
PER_MESSAGE = 4  # tokens of framing per message (the budget rule of the design notes)
TURN_STEP = 5  # seconds between the turns of one session
LONG, HEAD = 300, 200  # a text over LONG characters is matched on its first HEAD

STOP_WORDS = frozenset("""
a about above after again against all am an and any are aren't as at be because been before being below between
both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few for from
further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him himself his
how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor not
of off on once only or other ought our ours ourselves out over own same shan't she she'd she'll she's should
shouldn't so some such than that that's the their theirs them themselves then there there's these they they'd
they'll they're they've this those through to too under until up very was wasn't we we'd we'll we're we've were
weren't what what's when when's where where's which while who who's whom why why's with won't would wouldn't you
you'd you'll you're you've your yours yourself yourselves
""".split())
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def norm(text):
    return " ".join(text.split())


def words(text):
    return [w for w in _WORD.findall(text.lower().replace("\u2019", "'")) if w not in STOP_WORDS]


# -- the data ----------------------------------------------------------------------------

def parse_when(text):
    """'1:56 pm on 8 May, 2023' -> unix seconds (UTC)."""
    d = dt.datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y")
    return d.replace(tzinfo=dt.timezone.utc).timestamp()


def iso(ts):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def load(name):
    with open(os.path.join(DATA, f"{name}.json"), encoding="utf-8") as f:
        raw = json.load(f)
    roles = {raw["speaker_a"]: "user", raw["speaker_b"]: "assistant"}
    nums = sorted(int(m.group(1)) for k in raw for m in [re.fullmatch(r"session_(\d+)", k)]
                  if m and isinstance(raw[k], list))
    turns = []
    for n in nums:
        start = parse_when(raw[f"session_{n}_date_time"])
        for i, t in enumerate(raw[f"session_{n}"]):
            content = f"{t['speaker']}: {t['text']}"
            if t.get("blip_caption"):
                content += f" [image: {t['blip_caption']}]"
            turns.append({"dia_id": t["dia_id"], "role": roles[t["speaker"]], "text": t["text"],
                          "content": content, "ts": start + TURN_STEP * i, "session": f"locomo-{name}-s{n}"})
    by_id = {t["dia_id"]: t for t in turns}
    questions, unknown, skipped = [], 0, 0
    for q in raw["qa"]:
        ids = [e for ev in q.get("evidence", []) for e in re.findall(r"D\d+:\d+", ev)]
        known = [e for e in dict.fromkeys(ids) if e in by_id]
        unknown += len(set(ids)) - len(known)
        if known:
            questions.append({"conv": name, "q": q["question"], "cat": q["category"], "evidence": known})
        else:
            skipped += 1
    return {"name": name, "turns": turns, "by_id": by_id, "questions": questions, "unknown": unknown,
            "skipped": skipped}


def needle(text):
    t = norm(text)
    return t[:HEAD] if len(t) > LONG else t


def hits(conv, evidence, output):
    hay = norm(output)
    return sum(needle(conv["by_id"][e]["text"]) in hay for e in evidence)


def recall_text(stdout, cost):
    """`ctxd recall --json` -> (text, tokens): its items' contents, one a line, each charged
    cost(content) + PER_MESSAGE as bm25's turns are; any other JSON: every string in it."""
    try:
        doc = json.loads(stdout)
    except ValueError:
        return stdout, cost(stdout)
    items = doc.get("items") if isinstance(doc, dict) else None
    if isinstance(items, list) and all(isinstance(i, dict) and isinstance(i.get("content"), str) for i in items):
        return ("\n".join(i["content"] for i in items),
                sum(cost(i["content"]) + PER_MESSAGE for i in items))
    text = json_text(doc)
    return text, cost(text)


def json_text(value):
    """Every string in a JSON document, one a line (so escapes never hide a match)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(json_text(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(json_text(v) for v in value)
    return ""


# -- the baselines ------------------------------------------------------------------------

class OkapiBM25:
    """Okapi BM25 with rank_bm25's idf (log((N - n + 0.5) / (n + 0.5)), floored at 0.25 x the mean idf)."""

    def __init__(self, corpus, k1=1.5, b=0.75, epsilon=0.25):
        self.k1, self.b = k1, b
        self.docs = [Counter(d) for d in corpus]
        self.lens = [len(d) for d in corpus]
        self.avg = sum(self.lens) / max(1, len(corpus))
        df = Counter(w for d in self.docs for w in d)
        n = len(corpus)
        self.idf = {w: math.log(n - f + 0.5) - math.log(f + 0.5) for w, f in df.items()}
        floor = epsilon * (sum(self.idf.values()) / max(1, len(self.idf)))
        self.idf = {w: (v if v >= 0 else floor) for w, v in self.idf.items()}

    def get_scores(self, query):
        out = []
        for d, ln in zip(self.docs, self.lens):
            s = 0.0
            for w in query:
                f = d.get(w)
                if f:
                    s += self.idf[w] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * ln / self.avg))
            out.append(s)
        return out


def make_bm25(corpus):
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        return OkapiBM25(corpus), "Okapi BM25 written here (rank_bm25's formula; `pip install rank_bm25` for the reference)"
    from importlib.metadata import version

    return BM25Okapi(corpus, k1=1.5, b=0.75), f"rank_bm25 {version('rank_bm25')} BM25Okapi"


def render(turns):
    return "\n".join(f"{t['role']}: {t['content']}" for t in sorted(turns, key=lambda t: t["ts"]))


def pack(ranked, budget, cost):
    """Take turns in order while they fit (a turn that does not fit is skipped, the next may)."""
    chosen, used = [], 0
    for t in ranked:
        c = cost(t["content"]) + PER_MESSAGE
        if used + c <= budget:
            chosen.append(t)
            used += c
    return chosen


def window(turns, budget, cost):
    chosen, used = [], 0
    for t in reversed(turns):
        c = cost(t["content"]) + PER_MESSAGE
        if used + c > budget:
            break
        chosen.append(t)
        used += c
    return chosen


# -- ctxd as a whole process --------------------------------------------------------------

class Ctxd:
    def __init__(self, src, semantic=None):
        self.src, self.semantic = src, semantic  # semantic: CTXD_SEMANTIC for every project (--semantic)
        script = shutil.which("ctxd", path=os.path.dirname(sys.executable))
        if src or not script:
            self.argv, self.how = [sys.executable, "-m", "ctxd"], f"{sys.executable} -m ctxd"
        else:
            self.argv, self.how = [script], f"the console script {script}"

    def project(self, tmp, name):
        home = os.path.join(tmp, "home")
        proj = os.path.join(tmp, name)
        os.makedirs(proj)
        env = _common.isolated_env(home, proj)
        for var in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            os.makedirs(env[var], exist_ok=True)
        if self.src:
            env["PYTHONPATH"] = os.path.abspath(self.src)
        if self.semantic:
            env["CTXD_SEMANTIC"] = self.semantic
        with open(os.path.join(proj, ".contextrc"), "w", encoding="utf-8") as f:
            f.write("# recall benchmark project\n")
        self.must(["allow", proj], env, proj)
        info = json.loads(self.must(["show", "--json"], env, proj).stdout)
        return env, proj, info["context_dir"]

    def run(self, args, env, cwd, stdin=None, timeout=600):
        """(CompletedProcess, wall seconds); self.cpu: the process's CPU seconds (user + system)."""
        c0, t0 = child_cpu(), time.perf_counter()
        p = subprocess.run(self.argv + args, env=env, cwd=cwd, input=stdin, capture_output=True, text=True,
                           timeout=timeout)
        secs = time.perf_counter() - t0
        self.cpu = child_cpu() - c0
        return p, secs

    def must(self, args, env, cwd, **kw):
        p, _ = self.run(args, env, cwd, **kw)
        if p.returncode != 0:
            raise SystemExit(f"ctxd {' '.join(args[:3])} failed (exit {p.returncode}): "
                             f"{(p.stderr or p.stdout).strip()[-400:]}")
        return p

    def import_turns(self, turns, path, env, proj):
        with open(path, "w", encoding="utf-8") as f:
            for t in turns:
                f.write(json.dumps({"role": t["role"], "content": t["content"], "time": iso(t["ts"]),
                                    "session": t["session"]}, ensure_ascii=False) + "\n")
        t0 = time.perf_counter()
        p = self.must(["chat", "import", path, "--format", "jsonl"], env, proj, timeout=7200)
        secs = time.perf_counter() - t0
        m = re.search(r"(\d+) added", p.stdout + p.stderr)
        added = int(m.group(1)) if m else None
        if added != len(turns):
            print(f"note: ctxd chat import added {added} of {len(turns)} turns: {p.stdout.strip()}")
        return secs

    def embed(self, env, proj):
        """`ctxd chat embed` after the import (it waits for the background embedder): its
        report and seconds, or why semantic recall is off (no extra: exit non-zero)."""
        p, secs = self.run(["chat", "embed"], env, proj, timeout=7200)
        if p.returncode != 0:
            return f"semantic off: {(p.stderr or p.stdout).strip()[-160:]}"
        return f"{p.stdout.strip()} ({secs:.1f} s after the import)"

    def has_recall(self, env, proj):
        p, _ = self.run(["recall", "--help"], env, proj)
        return p.returncode == 0

    def stored(self, env, proj):
        p = self.must(["chat", "export", "--format", "jsonl"], env, proj)
        return sum(1 for line in p.stdout.splitlines() if line.strip())


def child_cpu():
    """CPU seconds (user + system) of the waited-for child processes so far: a command's own work,
    which a loaded machine does not stretch as it does wall time (a detached `ctxd chat refresh`
    it starts is not waited for, so not counted)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def pct(num, den):
    return f"{100.0 * num / den:5.1f}%" if den else "    -"


def quantile(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]


def failed(fails, method, p):
    """Count a failed call and keep the first one's reason."""
    if p.returncode != 0:
        fails[method] += 1
        fails.setdefault(("why", method), f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[-200:]}")


# -- default mode ---------------------------------------------------------------------------

def bench(convs, args, ctxd, cost, counter_name, tmp):
    rows = []  # one a (question, method): dict(conv, cat, n, hit, tokens, secs)
    bm25_name = None
    methods = ["ctxd context"]
    recall_seen = None
    ctxd_fail = Counter()
    for conv in convs:
        env, proj, _ = ctxd.project(tmp, f"locomo-{conv['name']}")
        imp = ctxd.import_turns(conv["turns"], os.path.join(tmp, f"{conv['name']}.jsonl"), env, proj)
        if recall_seen is None:
            recall_seen = ctxd.has_recall(env, proj)
            if recall_seen:
                methods.append("ctxd recall")
        conv["import_secs"] = imp
        conv["embed"] = ctxd.embed(env, proj)
        corpus = [words(t["content"]) for t in conv["turns"]]
        bm25, bm25_name = make_bm25(corpus)
        win = window(conv["turns"], args.budget, cost)
        win_text = render(win)
        conv["window_turns"] = len(win)
        qs = [q for q in conv["questions"] if q["cat"] in (1, 2, 3, 4)][: args.limit or None]
        for i, q in enumerate(qs):
            n = len(q["evidence"])
            base = {"conv": conv["name"], "cat": q["cat"], "n": n, "q": q}
            # ctxd context
            p, secs = ctxd.run(["context", "--budget", str(args.budget), "--query", q["q"], "--format", "text"],
                               env, proj)
            out = p.stdout if p.returncode == 0 else ""
            failed(ctxd_fail, "ctxd context", p)
            rows.append(dict(base, method="ctxd context", hit=hits(conv, q["evidence"], out), out=out,
                             tokens=cost(out), secs=secs))
            if recall_seen:
                p, secs = ctxd.run(["recall", q["q"], "--budget", str(args.budget)], env, proj)
                out, size = (p.stdout, cost(p.stdout)) if p.returncode == 0 else ("", 0)
                failed(ctxd_fail, "ctxd recall", p)
                rows.append(dict(base, method="ctxd recall", hit=hits(conv, q["evidence"], out), out=out,
                                 tokens=size, secs=secs))
            scores = bm25.get_scores(words(q["q"]))
            ranked = [conv["turns"][j] for j in sorted(range(len(scores)), key=lambda j: -scores[j]) if scores[j] > 0]
            bt = render(pack(ranked, args.budget, cost))
            rows.append(dict(base, method="bm25", hit=hits(conv, q["evidence"], bt), out=bt, tokens=cost(bt),
                             secs=None))
            rows.append(dict(base, method="window", hit=hits(conv, q["evidence"], win_text), out=win_text,
                             tokens=cost(win_text), secs=None))
            if (i + 1) % 25 == 0:
                print(f"  {conv['name']}: {i + 1}/{len(qs)} questions", file=sys.stderr)
    methods += ["bm25", "window"]
    bare = []
    for _ in range(15):  # what any Python program pays here before its first line runs
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-c", "pass"], capture_output=True)
        bare.append((time.perf_counter() - t0) * 1000)
    args.bare_ms = statistics.median(bare)
    report(convs, rows, methods, args, ctxd, counter_name, bm25_name, ctxd_fail, recall_seen)


def report(convs, rows, methods, args, ctxd, counter_name, bm25_name, ctxd_fail, recall_seen):
    w = max(len(m) for m in methods) + 2
    print(f"LoCoMo dev evidence recall at --budget {args.budget} ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})")
    print(f"  data: {', '.join(c['name'] + '.json' for c in convs)} from {DATA}; questions of categories 1-4"
          + (f", the first {args.limit} a conversation" if args.limit else ""))
    print('  text of a turn: "<speaker>: <text>" (+ " [image: <blip_caption>]"), the same for every method')
    print(f"  token counter (bm25 and window packing, sizes below): {counter_name}; +{PER_MESSAGE} a turn")
    print(f"  bm25: {bm25_name}, k1=1.5 b=0.75, lowercase words, English stop words removed, score > 0 only")
    print(f"  ctxd: {ctxd.how}, whole process; `ctxd recall`: "
          + ("measured on the text it prints (dates and labels included), sized as printed"
             if recall_seen else "absent (`ctxd recall --help` exits non-zero), not measured"))
    print("  recall = evidence turns found / evidence turns (micro); a turn is found when its own text is in the output")
    print()

    def table(title, keyf, keys, label):
        print(f"{title:<14}{'qs':>5}{'ev':>6}" + "".join(f"{m:>{w}}" for m in methods) + f"{'ctxd/bm25':>11}")
        print("-" * (25 + w * len(methods) + 11))
        for k in keys:
            sel = [r for r in rows if keyf(r) == k or k == "all"]
            by = {m: [r for r in sel if r["method"] == m] for m in methods}
            nq = len(by[methods[0]])
            ev = sum(r["n"] for r in by[methods[0]])
            rate = {m: sum(r["hit"] for r in by[m]) / ev if ev else 0.0 for m in methods}
            ratio = f"{rate['ctxd context'] / rate['bm25']:.2f}x" if rate["bm25"] else "-"
            print(f"{label(k):<14}{nq:>5}{ev:>6}" + "".join(f"{pct(rate[m] * ev, ev):>{w}}" for m in methods)
                  + f"{ratio:>11}")
        print()

    table("conversation", lambda r: r["conv"], [c["name"] for c in convs] + ["all"],
          lambda k: k if k == "all" else f"{k} ({len(next(c for c in convs if c['name'] == k)['turns'])} t)")
    cats = sorted({r["cat"] for r in rows})
    table("category", lambda r: r["cat"], cats + ["all"], lambda k: k if k == "all" else f"{k} {CATEGORIES[k]}")

    print(f"{'output size':<14}" + "".join(f"{m:>{w}}" for m in methods))
    print("-" * (14 + w * len(methods)))
    for label, fn in (("median tokens", lambda xs: f"{statistics.median(xs):.0f}"),
                      ("max tokens", lambda xs: f"{max(xs)}"),
                      ("over budget", lambda xs: f"{sum(x > args.budget for x in xs)}")):
        print(f"{label:<14}" + "".join(f"{fn([r['tokens'] for r in rows if r['method'] == m]):>{w}}" for m in methods))
    print()
    for m in methods:
        secs = [r["secs"] * 1000 for r in rows if r["method"] == m and r["secs"] is not None]
        if secs:
            fails = f", {ctxd_fail[m]} failed, first: {ctxd_fail[('why', m)]}" if ctxd_fail[m] else ""
            print(f"latency {m}: median {statistics.median(secs):.0f} ms (over a bare `{os.path.basename(sys.executable)}"
                  f" -I -c pass`, {args.bare_ms:.0f} ms: {statistics.median(secs) - args.bare_ms:.0f} ms), "
                  f"p90 {quantile(secs, 0.9):.0f} ms a query (whole process, {len(secs)} queries{fails})")
    for c in convs:
        print(f"conversation {c['name']}: {len(c['turns'])} turns imported in {c['import_secs']:.1f} s; "
              f"window holds the newest {c['window_turns']}; {c['unknown']} evidence ids not in the conversation, "
              f"{c['skipped']} questions without usable evidence skipped")
        print(f"conversation {c['name']}: {c.get('embed')}")
    if args.misses:
        print()
        for r in rows:
            if r["method"] == "ctxd context" and r["hit"] < r["n"]:
                conv = next(c for c in convs if c["name"] == r["conv"])
                lost = [e for e in r["q"]["evidence"] if needle(conv["by_id"][e]["text"]) not in norm(r["out"])]
                print(f"miss {r['conv']} c{r['cat']} {r['q']['q']!r}: {', '.join(lost)}")


# -- per-prompt mode ------------------------------------------------------------------------

def per_prompt(convs, args, ctxd, cost, counter_name, tmp):
    print(f"LoCoMo dev per-prompt recall: Claude Code UserPromptSubmit -> `ctxd chat hook claude` "
          f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})")
    print("  each question a fresh session_id; the context dir is restored from a snapshot taken after the import")
    print("  and `ctxd chat embed` (every turn embedded when the semantic extra is installed)")
    print("  before every question, so no question is in the store the next one sees (checked at the end)")
    print(f"  sizes: {counter_name}; recall as in the default mode, on hookSpecificOutput.additionalContext")
    print()
    hdr = f"{'conversation':<14}{'qs':>5}{'ev':>6}{'recall':>8}{'empty 1-4':>11}{'c5 qs':>7}{'c5 empty':>10}" \
          f"{'med tok':>9}{'max chr':>9}{'med ms':>8}{'p90 ms':>8}{'bad':>5}"
    print(hdr)
    print("-" * len(hdr))
    total = defaultdict(list)
    for conv in convs:
        env, proj, ctx_dir = ctxd.project(tmp, f"prompt-{conv['name']}")
        ctxd.import_turns(conv["turns"], os.path.join(tmp, f"p{conv['name']}.jsonl"), env, proj)
        # embed before the snapshot: restored from one taken mid-embedding, recall would run
        # without (most) vectors and under-report what the hook injects with the semantic extra
        conv["embed"] = ctxd.embed(env, proj)
        snap = os.path.join(tmp, f"snapshot-{conv['name']}")
        shutil.copytree(ctx_dir, snap)
        stored = ctxd.stored(env, proj)
        tdir = os.path.join(tmp, "transcripts")
        os.makedirs(tdir, exist_ok=True)
        res = []
        qs = conv["questions"]
        if args.limit:  # the first N answerable and the first N category-5 questions
            qs = [q for q in qs if q["cat"] != 5][: args.limit] + [q for q in qs if q["cat"] == 5][: args.limit]
        for q in qs:
            shutil.rmtree(ctx_dir)
            shutil.copytree(snap, ctx_dir)
            ctx, secs, bad = prompt_hook(ctxd, env, proj, tdir, q["q"])
            res.append({"q": q, "hit": hits(conv, q["evidence"], ctx), "ctx": ctx, "secs": secs, "bad": bad})
        last = ctxd.stored(env, proj)  # the hook records its prompt: one more than the snapshot
        shutil.rmtree(ctx_dir)
        shutil.copytree(snap, ctx_dir)
        conv["store_check"] = (len(conv["turns"]), stored, last, ctxd.stored(env, proj), len(qs))
        for r in res:
            total["all"].append(r)
        print(prompt_row(conv["name"], res))
        total[conv["name"]] = res
    print(prompt_row("all", total["all"]))
    print()
    for c in convs:
        print(f"conversation {c['name']}: {c.get('embed')}")
        n, before, last, after, nq = c["store_check"]
        ok = last <= before + 1 and after == before
        print(f"store {c['name']}: {n} turns imported; {before} messages in the snapshot, {last} after the last "
              f"question alone (without the restores: up to {before + nq}), {after} restored"
              + ("" if ok else "  <- the restore did not hold: figures above are suspect"))
    print("recall: evidence of categories 1-4 found in the injection; empty 1-4: share of those questions with")
    print("nothing injected; c5 empty: share of category-5 questions (no answer in the history) with nothing injected")


def prompt_hook(ctxd, env, proj, tdir, prompt):
    """Send *prompt* as a Claude Code UserPromptSubmit of a new session -> (additionalContext, secs, bad)."""
    sid = str(uuid.uuid4())
    tpath = os.path.join(tdir, f"{sid}.jsonl")
    open(tpath, "w").close()
    payload = {"session_id": sid, "transcript_path": tpath, "cwd": proj, "permission_mode": "default",
               "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    p, secs = ctxd.run(["chat", "hook", "claude"], env, proj, stdin=json.dumps(payload))
    ctx, bad = "", p.returncode != 0
    if p.stdout.strip():
        try:
            ctx = json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
            if not isinstance(ctx, str):
                ctx, bad = "", True
        except (ValueError, KeyError, TypeError):
            bad = True
    return ctx, secs, bad


def prompt_row(label, res):
    ans = [r for r in res if r["q"]["cat"] != 5]
    adv = [r for r in res if r["q"]["cat"] == 5]
    ev = sum(len(r["q"]["evidence"]) for r in ans)
    found = sum(r["hit"] for r in ans)
    ms = [r["secs"] * 1000 for r in res]
    toks = [tokens.estimate(r["ctx"]) for r in res]
    return (f"{label:<14}{len(ans):>5}{ev:>6}{pct(found, ev):>8}{pct(sum(not r['ctx'] for r in ans), len(ans)):>11}"
            f"{len(adv):>7}{pct(sum(not r['ctx'] for r in adv), len(adv)):>10}"
            f"{statistics.median(toks) if toks else 0:>9.0f}{max((len(r['ctx']) for r in res), default=0):>9}"
            f"{statistics.median(ms):>8.0f}{quantile(ms, 0.9):>8.0f}{sum(r['bad'] for r in res):>5}")


# -- scale mode -----------------------------------------------------------------------------

def scale(convs, args, ctxd, cost, counter_name, tmp):
    base = [t for c in convs for t in c["turns"]]
    span = max(t["ts"] for t in base) - min(t["ts"] for t in base) + 30 * 86400
    copies = max(0, math.ceil(args.scale / len(base)) - 1)
    turns = []
    # copies k = copies..1 are shifted back k spans, so the real conversations are the newest part
    for k in range(copies, 0, -1):
        for t in base:
            turns.append(dict(t, ts=t["ts"] - k * span, session=f"{t['session']}-copy{k}"))
    turns = sorted(turns + base, key=lambda t: t["ts"])[-args.scale:]
    env, proj, ctx_dir = ctxd.project(tmp, "locomo-scale")
    lexical_env = without_semantic(env, tmp)
    print(f"LoCoMo recall at scale ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}): {len(turns):,} messages "
          f"(conversations {', '.join(c['name'] for c in convs)} and {copies} time-shifted copies of them, "
          f"texts unchanged, new sessions)", flush=True)
    print(f"  load average before: {load_avg()}")
    imp = ctxd.import_turns(turns, os.path.join(tmp, "scale.jsonl"), lexical_env, proj)
    print(f"  import: {imp:.1f} s (`ctxd chat import --format jsonl`, whole process, with its final render)")
    p, secs = ctxd.run(["context", "--budget", str(args.budget), "--format", "text"], lexical_env, proj)
    print(f"  first `ctxd context` after the import: {secs * 1000:.0f} ms (exit {p.returncode})")
    p, secs = ctxd.run(["chat", "refresh"], lexical_env, proj, timeout=7200)
    print(f"  `ctxd chat refresh`, the facts of the import before anything is timed (else each query would start "
          f"one in the background): {secs:.1f} s (exit {p.returncode})", flush=True)
    pool = [(c, q) for c in convs for q in c["questions"] if q["cat"] in (1, 2, 3, 4)]
    step = max(1, len(pool) // args.scale_queries)
    picked = pool[::step][: args.scale_queries]
    print(f"  {len(picked)} questions spread over categories 1-4; budget {args.budget} (the hook: its own); "
          f"recall counted as in the default mode (a copy of an evidence turn counts)")
    bare, bare_cpu = [], []
    for _ in range(max(5, len(picked))):  # what any Python program pays here before its first line runs
        c0, t0 = child_cpu(), time.perf_counter()
        subprocess.run([sys.executable, "-I", "-c", "pass"], env=env, cwd=proj, capture_output=True)
        bare.append((time.perf_counter() - t0) * 1000)
        bare_cpu.append((child_cpu() - c0) * 1000)
    bare_ms, bare_cpu_ms = statistics.median(bare), statistics.median(bare_cpu)
    print(f"  bare interpreter start ({sys.executable} -I -c pass, same environment): median "
          f"{bare_ms:.0f} ms, cpu {bare_cpu_ms:.0f} ms; 'own' below = a command's median minus this "
          f"(wall: whole process; cpu: its user + system time, which load stretches less)")
    print("  without vectors (CTXD_SEMANTIC=off: lexical only and nothing embeds in the background):", flush=True)
    time_commands(ctxd, lexical_env, proj, tmp, picked, args, cost, (bare_ms, bare_cpu_ms))
    if not args.scale_vectors:
        print(f"  load average after: {load_avg()}")
        return
    done = give_vectors(ctxd, base, tmp, os.path.join(ctx_dir, "store.db"), span)
    if done is None:
        print(f"  load average after: {load_avg()}")
        return
    p, secs = ctxd.run(["chat", "embed"], env, proj, timeout=7200)
    print(f"  then `ctxd chat embed` (the rest: the hook's prompts above): {(p.stdout or p.stderr).strip()} "
          f"({secs:.1f} s)")
    p, _ = ctxd.run(["doctor", "--json"], env, proj)
    try:
        check = next(c for c in json.loads(p.stdout)["checks"] if c.get("name") == "recall")
        print(f"  `ctxd doctor`, recall: {check['message']}")
    except (ValueError, KeyError, StopIteration):
        print(f"  `ctxd doctor --json` gave no recall check (exit {p.returncode})")
    print("  with vectors (every message embedded):", flush=True)
    time_commands(ctxd, env, proj, tmp, picked, args, cost, (bare_ms, bare_cpu_ms))
    print(f"  load average after: {load_avg()}")


def time_commands(ctxd, env, proj, tmp, picked, args, cost, bare):
    """Time `ctxd context --query`, `ctxd recall` and the prompt hook on *picked* questions: one line each."""
    def run(argv, text=lambda out: out):
        def call(q):
            p, secs = ctxd.run(argv(q), env, proj)
            return (text(p.stdout) if p.returncode == 0 else ""), secs, p.returncode != 0
        return call

    tdir = os.path.join(tmp, "transcripts")
    os.makedirs(tdir, exist_ok=True)
    cmds = [("ctxd context", run(lambda q: ["context", "--budget", str(args.budget), "--query", q, "--format", "text"]))]
    if ctxd.has_recall(env, proj):
        cmds.append(("ctxd recall", run(lambda q: ["recall", q, "--budget", str(args.budget), "--json"],
                                        lambda out: recall_text(out, cost)[0])))
    # last, because the hook stores each prompt (20 messages more in N: no restore at this size)
    cmds.append(("prompt hook", lambda q: prompt_hook(ctxd, env, proj, tdir, q)))
    bare_ms, bare_cpu = bare
    for name, call in cmds:
        ms, cpu, found, ev, fails, empty = [], [], 0, 0, 0, 0
        for c, q in picked:
            out, secs, bad = call(q["q"])
            ms.append(secs * 1000)
            cpu.append(ctxd.cpu * 1000)
            fails += bad
            empty += not out
            found += hits(c, q["evidence"], out)
            ev += len(q["evidence"])
        print(f"  {name:<13} median {statistics.median(ms):.0f} ms (own {statistics.median(ms) - bare_ms:.0f}), "
              f"p90 {quantile(ms, 0.9):.0f} ms, min {min(ms):.0f} ms a query; evidence recall {pct(found, ev).strip()}, "
              f"{empty} empty"
              + (f"; {fails} failed" if fails else "")
              + f"; cpu median {statistics.median(cpu):.0f} ms (own {statistics.median(cpu) - bare_cpu:.0f}), "
                f"p90 {quantile(cpu, 0.9):.0f} ms", flush=True)


def without_semantic(env, tmp):
    """*env* with semantic recall off (CTXD_SEMANTIC=off: recall is lexical and no background
    embedder starts)."""
    return dict(env, CTXD_SEMANTIC="off")


def load_avg():
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def give_vectors(ctxd, base, tmp, scale_db, span):
    """Vectors for every message of the scale store without embedding it: the base conversations
    are imported into a project of their own and embedded for real (`ctxd chat embed`); each
    message of the scale store then gets, by SQL, the embeddings row of its original (the same
    text, and the same turn before it in its session: its vector is what the embedder would
    compute), and the store the same sign-bit centre (meta `embed_mean`). A message whose turn
    before differs (the first of a session the cut at N left partial) is left to the embedder.
    Prints what it did; None when the base could not be embedded (no semantic extra)."""
    env, proj, ctx_dir = ctxd.project(tmp, "locomo-base")
    ctxd.import_turns(sorted(base, key=lambda t: t["ts"]), os.path.join(tmp, "base.jsonl"), env, proj)
    p, secs = ctxd.run(["chat", "embed"], env, proj, timeout=7200)
    if p.returncode != 0:
        print(f"  with vectors: not measured, the base conversations could not be embedded: "
              f"{(p.stderr or p.stdout).strip()[-200:]}")
        return None
    print(f"  with vectors: the {len(base)} base turns embedded for real in their own project "
          f"(`ctxd chat embed`: {p.stdout.strip()}; {secs:.0f} s)", flush=True)
    t0 = time.perf_counter()
    src = sqlite3.connect(os.path.join(ctx_dir, "store.db"))
    mean = src.execute("SELECT value FROM meta WHERE key = 'embed_mean'").fetchone()
    original = {}  # (session, time, text) -> (its embeddings row, its id)
    for sess, ts, content, mid, *row in src.execute("SELECT m.session, m.ts, m.content, m.id, e.model, e.scale, "
                                                     "e.bits, e.vec FROM messages m JOIN embeddings e ON e.id = m.id"):
        original[(sess, round(ts), content)] = (row, mid)
    first_ids = {mid for (mid,) in src.execute("SELECT min(id) FROM messages GROUP BY session")}
    src.close()
    db = sqlite3.connect(scale_db, timeout=30, isolation_level=None)
    scale_firsts = {mid for (mid,) in db.execute("SELECT min(id) FROM messages GROUP BY session")}
    rows, missing, partial = [], 0, 0
    for mid, sess, ts, content in db.execute("SELECT id, session, ts, content FROM messages"):
        m = re.fullmatch(r"(.*)-copy(\d+)", sess)
        orig_sess, shift = (m.group(1), int(m.group(2)) * span) if m else (sess, 0)
        hit = original.get((orig_sess, round(ts + shift), content))
        if hit is None:
            missing += 1
        elif (mid in scale_firsts) != (hit[1] in first_ids):
            partial += 1
        else:
            rows.append((mid, *hit[0]))
    db.execute("BEGIN IMMEDIATE")
    db.executemany("INSERT OR REPLACE INTO embeddings(id, model, scale, bits, vec) VALUES (?, ?, ?, ?, ?)", rows)
    db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('embed_mean', ?)", mean)
    db.execute("COMMIT")
    db.close()
    print(f"  with vectors: {len(rows):,} messages given their original's row by SQL in "
          f"{time.perf_counter() - t0:.1f} s ({missing} without an original, {partial} whose turn before "
          f"differs: left to the embedder)", flush=True)
    return len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--conv", default="26,30", help="LoCoMo dev conversations (file names without .json)")
    ap.add_argument("--limit", type=int, default=0, help="at most this many questions a conversation")
    ap.add_argument("--exact", action="store_true",
                    help="pack and size with exact cl100k counts (tokens extra) instead of ctxd's estimate")
    ap.add_argument("--per-prompt", action="store_true", help="score the UserPromptSubmit hook's injection")
    ap.add_argument("--scale", type=int, default=0, help="time recall on a store of this many messages")
    ap.add_argument("--scale-queries", type=int, default=20)
    ap.add_argument("--scale-vectors", action="store_true",
                    help="--scale: time the commands again with every message embedded (the base conversations "
                         "embedded for real, each copy given its original's vector)")
    ap.add_argument("--lang", choices=("en", "zh"), default="en",
                    help="zh: ask the hand-translated Chinese questions of benchmarks/data/locomo-dev-zh.json")
    ap.add_argument("--semantic", choices=("off", "static", "e5"),
                    help="set CTXD_SEMANTIC for ctxd: off = lexical only, static = the static model even with the "
                         "extra installed (default: what ctxd chooses)")
    ap.add_argument("--misses", action="store_true", help="list the evidence ctxd context missed")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    ap.add_argument("--ctxd-src", help="measure the ctxd checkout in DIR instead of the installed one")
    ap.add_argument("--rev", help="measure this git commit of the checkout (exported with git archive into the "
                                  "temp dir), not the working tree others may be editing")
    args = ap.parse_args()

    if args.exact:
        exact = tokens.exact_counter(tokens.CL100K)
        if exact is None:
            raise SystemExit("--exact needs the tokens extra: pip install -e '.[tokens]'")
        cost, counter_name = exact, "exact cl100k_base (bpe-openai)"
    else:
        cost, counter_name = tokens.estimate, "ctxd.memory.text.tokens.estimate (what ctxd's budgets use)"
    try:
        convs = [load(n.strip()) for n in args.conv.split(",") if n.strip()]
    except (OSError, ValueError, KeyError) as e:
        raise SystemExit(f"cannot read the LoCoMo data in {DATA}: {e}") from e
    if args.lang == "zh":
        with open(ZH, encoding="utf-8") as f:
            zh = {(r["conv"], r["en"]): r["zh"] for r in json.load(f)["questions"]}
        for c in convs:
            c["questions"] = [dict(q, q=zh[(c["name"], q["q"])]) for q in c["questions"]
                              if (c["name"], q["q"]) in zh]
        print(f"questions asked in Chinese: {sum(len(c['questions']) for c in convs)} from {ZH}")
    tmp = tempfile.mkdtemp(prefix="ctxd-recall-")
    try:
        src = args.ctxd_src
        if args.rev:
            src = os.path.join(tmp, "ctxd-src")
            os.makedirs(src)
            rev = subprocess.run(["git", "-C", _common.REPO, "rev-parse", "--short", args.rev], capture_output=True,
                                 text=True)
            if rev.returncode != 0:
                raise SystemExit(f"--rev {args.rev}: {rev.stderr.strip()}")
            arch = subprocess.run(f"git -C '{_common.REPO}' archive {rev.stdout.strip()} | tar -x -C '{src}'",
                                  shell=True, capture_output=True, text=True)
            if arch.returncode != 0:
                raise SystemExit(f"--rev {args.rev}: git archive failed: {arch.stderr.strip()}")
            print(f"measuring ctxd at commit {rev.stdout.strip()} ({args.rev}), exported to {src}")
        ctxd = Ctxd(src, args.semantic)
        if args.scale:
            scale(convs, args, ctxd, cost, counter_name, tmp)
        elif args.per_prompt:
            per_prompt(convs, args, ctxd, cost, counter_name, tmp)
        else:
            bench(convs, args, ctxd, cost, counter_name, tmp)
    finally:
        if args.keep:
            print(f"note: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
