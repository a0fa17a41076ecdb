#!/usr/bin/env python3
"""Write the long sample conversations the retention benchmark reads.

    python3 tests/data/conversations/generate.py [--out DIR] [--check]

Each conversation is OpenAI-style JSONL (one {"role", "content"} object a line,
what `ctxd chat import --format jsonl` reads) with a fact list next to it
(same name, .facts.json). The facts are planted early, in the first tenth of
the turns; a correction comes somewhere in the middle; the rest is filler
composed from per-topic templates that never repeats a fact's text, so a
sliding window over the last few thousand tokens keeps none of them.

The output is deterministic: one fixed seed per conversation, and nothing
here depends on ctxd (not even its token estimator, which may be
recalibrated), so tests/test_sample_data.py can regenerate the files and
compare them byte for byte. --check does that comparison here.

Templates fill «slot» placeholders (a character never used in the text, so
code, JSON and shell snippets need no escaping) from per-conversation slot
lists; within one template the same slot gets the same value.
"""

import argparse
import json
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ("number", "date", "version", "path", "url", "identifier", "constraint", "correction", "question",
         "preference")
ROLES = ("user", "assistant", "tool")
SLOT = re.compile(r"«([a-z0-9_]+)»")


def approx_tokens(text):
    """A frozen copy of ctxd's first estimator (CJK ~1.5, other ~0.25 per character).

    Used only to size the conversations; kept here so that recalibrating
    ctxd.memory.text.tokens cannot change the generated files.
    """
    cjk = sum(1 for ch in text if 0x3000 <= ord(ch) <= 0x303F or 0x3400 <= ord(ch) <= 0x4DBF
              or 0x4E00 <= ord(ch) <= 0x9FFF or 0xFF00 <= ord(ch) <= 0xFFEF)
    return int(cjk * 1.5 + (len(text) - cjk) / 4 + 0.999)


class Conv:
    """A conversation under construction: turns, facts, and a seeded chooser."""

    def __init__(self, name, seed, slots):
        self.name = name
        self.rng = random.Random(seed)
        self.slots = slots
        self.turns = []
        self.facts = []
        self.used = {}
        self.correction_turns = {}  # fact id -> index of the turn that corrects it

    # -- turns ----------------------------------------------------------------
    def say(self, role, content):
        assert role in ROLES, role
        self.turns.append({"role": role, "content": content.strip("\n")})
        return len(self.turns) - 1

    def user(self, content):
        return self.say("user", content)

    def assistant(self, content):
        return self.say("assistant", content)

    def tool(self, content):
        return self.say("tool", content)

    def tokens(self):
        return sum(approx_tokens(t["content"]) for t in self.turns)

    # -- facts ----------------------------------------------------------------
    def fact(self, fid, kind, text, superseded=None, **extra):
        assert kind in KINDS, kind
        f = {"id": fid, "kind": kind, "text": text}
        if superseded is not None:
            f["superseded"] = superseded
        f.update(extra)
        self.facts.append(f)

    # -- choosing -------------------------------------------------------------
    def pick(self, key, options):
        """One of *options*, preferring the least used so far (ties broken at random)."""
        counts = self.used.setdefault(key, [0] * len(options))
        low = min(counts)
        i = self.rng.choice([i for i, c in enumerate(counts) if c == low])
        counts[i] += 1
        return options[i]

    def sample(self, key, options, k):
        """*k* distinct options, least used first."""
        counts = self.used.setdefault(key, [0] * len(options))
        order = sorted(range(len(options)), key=lambda i: (counts[i], self.rng.random()))
        chosen = order[:k]
        for i in chosen:
            counts[i] += 1
        return [options[i] for i in chosen]

    def fill(self, template, values=None):
        """*template* with its «slots» filled; *values* shares choices between templates."""
        values = {} if values is None else values

        def repl(m):
            name = m.group(1)
            if name not in values:
                v = self.slots[name]
                values[name] = v(self.rng) if callable(v) else self.rng.choice(v)
            return str(values[name])

        return SLOT.sub(repl, template)


# -- checks the generator makes before writing ------------------------------------------------------

def validate(conv):
    """Every fact is where the benchmark expects it, and nowhere a sliding window would find it."""
    turns = [t["content"] for t in conv.turns]
    n = len(turns)
    early = max(1, n // 10)
    problems = []
    for f in conv.facts:
        where = [i for i, t in enumerate(turns) if f["text"] in t]
        if not where:
            problems.append(f"{f['id']}: {f['text']!r} never occurs")
            continue
        if f["kind"] == "correction":
            c = conv.correction_turns[f["id"]]
            if not 0.3 * n <= c <= 0.7 * n:
                problems.append(f"{f['id']}: corrected at turn {c} of {n}, not in the middle")
            if min(where) < c or max(where) > c + 1:
                problems.append(f"{f['id']}: new value at turns {where}, expected only {c}..{c + 1}")
            old = [i for i, t in enumerate(turns) if f["superseded"] in t]
            if not old or min(old) >= early:
                problems.append(f"{f['id']}: superseded {f['superseded']!r} not planted early ({old})")
            if old and max(old) > c + 1:
                problems.append(f"{f['id']}: superseded value repeated after the correction ({old})")
            if f["text"] in f["superseded"] or f["superseded"] in f["text"]:
                problems.append(f"{f['id']}: old and new values overlap")
        elif max(where) >= early:
            problems.append(f"{f['id']}: {f['text']!r} occurs at turns {where}; only the first {early} may hold it")
    if problems:
        raise SystemExit(f"{conv.name}: " + "\n  ".join(["the facts are misplaced:"] + problems))


# -- writing ---------------------------------------------------------------------------------------

def render(conv):
    jsonl = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in conv.turns)
    facts = json.dumps(conv.facts, ensure_ascii=False, indent=1) + "\n"
    return jsonl, facts


def build_all():
    return [build() for build in BUILDERS]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=HERE, help="directory to write into (default: next to this script)")
    ap.add_argument("--check", action="store_true", help="compare with the files in --out; write nothing")
    args = ap.parse_args(argv)
    stale = []
    if not args.check:
        os.makedirs(args.out, exist_ok=True)
    for conv in build_all():
        validate(conv)
        jsonl, facts = render(conv)
        for suffix, text in ((".jsonl", jsonl), (".facts.json", facts)):
            path = os.path.join(args.out, conv.name + suffix)
            if args.check:
                try:
                    with open(path, encoding="utf-8", newline="") as f:
                        same = f.read() == text
                except FileNotFoundError:
                    same = False
                if not same:
                    stale.append(path)
            else:
                with open(path, "w", encoding="utf-8", newline="\n") as f:
                    f.write(text)
        print(f"{conv.name}: {len(conv.turns)} turns, ~{conv.tokens()} tokens, {len(conv.facts)} facts")
    if stale:
        print("out of date (run generate.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


# -- the shared shape of a long conversation --------------------------------------------------------

class Topic:
    """What one stretch of a conversation is about.

    qa: (question, answer) or (question, answer, tool) templates, the slots
    shared between the two; a tool is a function conv -> (assistant intro,
    tool output) run between them. extras: paragraphs an answer may add.
    """

    def __init__(self, name, qa, extras=()):
        self.name = name
        self.qa = qa
        self.extras = extras


class Style:
    """Per-language glue: lead-ins, answer openers and closers, short follow-up exchanges."""

    def __init__(self, leads, revisits, openers, reopeners, closers, followups, joiner="\n\n"):
        self.leads = leads
        self.revisits = revisits  # lead-ins for a question asked before
        self.reopeners = reopeners  # openers for answering it again
        self.openers = openers
        self.closers = closers
        self.followups = followups  # [(user, assistant)]
        self.joiner = joiner


def exchange(conv, topic, style, p_follow=0.25, max_extras=2):
    rng = conv.rng
    before = min(conv.used.get(("qa", topic.name), [0]))
    qa = conv.pick(("qa", topic.name), topic.qa)
    shared = {}
    question, answer = qa[0], qa[1]
    again = False
    if callable(question):  # a generated paste (notes, code, a log) and the answer that fits it
        question, answer = question(conv)
        conv.user(question)
    else:
        again = before > 0  # asked before: people do come back to things in a weeks-long thread
        lead = (conv.pick("revisit", style.revisits) if again
                else conv.pick("lead", style.leads) if rng.random() < 0.3 else "")
        conv.user(conv.fill(lead) + conv.fill(question, shared))  # the lead's «person» is someone else
    if len(qa) > 2:
        intro, output = qa[2](conv)
        conv.assistant(conv.fill(intro, shared))
        conv.tool(output)
    parts = []
    if again:
        parts.append(conv.fill(conv.pick("reopener", style.reopeners)))
    elif rng.random() < 0.4:
        parts.append(conv.fill(conv.pick("opener", style.openers)))
    parts.append(conv.fill(answer, shared))
    k = rng.randint(0, max_extras)
    if k and topic.extras:
        parts += [conv.fill(p, shared) for p in conv.sample(("x", topic.name), topic.extras, min(k, len(topic.extras)))]
    if rng.random() < 0.3:
        parts.append(conv.fill(conv.pick("closer", style.closers), shared))
    conv.assistant(style.joiner.join(parts))
    if rng.random() < p_follow:
        u, a = conv.pick("follow", style.followups)
        conv.user(conv.fill(u))
        conv.assistant(conv.fill(a))


def body(conv, topics, style, exchanges, correction_at, correct, **kw):
    """*exchanges* exchanges moving through *topics* in order, with detours; *correct* runs once."""
    rng = conv.rng
    for i in range(exchanges):
        if i == correction_at:
            correct(conv)
        at = min(len(topics) - 1, i * len(topics) // exchanges)
        # mostly the current phase; otherwise back to an earlier topic or one step ahead, never further
        topic = topics[at] if rng.random() < 0.5 else rng.choice(topics[:at + 2])
        exchange(conv, topic, style, **kw)


def table(headers, rows):
    """A plain-text table, as psql or a CLI would print it."""
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]

    def line(cells):
        return " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()

    return "\n".join([line(headers), "-+-".join("-" * w for w in widths)] + [line(r) for r in rows])


# == (a) English: planning a data pipeline migration ==============================================

A_SLOTS = {
    "table": ["orders", "order_items", "customers", "refunds", "shipments", "payments", "invoices",
              "product_catalog", "inventory_snapshots", "promotions"],
    "model": ["stg_orders", "stg_order_items", "stg_refunds", "int_order_lines", "fct_orders", "dim_customers",
              "fct_refunds", "fct_daily_revenue", "dim_products", "int_payments_matched"],
    "person": ["Priya", "Tomasz", "Keiko", "Lars", "Amara", "Diego"],
    "task": ["extract_orders", "extract_refunds", "load_staging", "dbt_staging", "dbt_marts",
             "reconcile_counts", "publish_exports", "extract_customers"],
    "rows": lambda r: f"{r.randint(110, 990)}k",
    "mins": lambda r: r.randint(7, 47),
    "pct": lambda r: r.choice([10, 15, 20, 25, 30, 40]),
    "weekday": ["Monday", "Tuesday", "Wednesday", "Thursday"],
    "retries": lambda r: r.choice([2, 3, 4]),
    "cpu": ["250m", "500m", "1", "2"],
    "mem": ["512Mi", "1Gi", "2Gi", "4Gi"],
    "pool": lambda r: r.choice([4, 6, 8, 12]),
}

A_STYLE = Style(
    leads=["Another one. ", "Quick question: ", "«person» asked me this today: ", "Back to the plan. ",
           "Related: ", "Sorry, one more. "],
    revisits=["Coming back to something from earlier: ", "«person» wasn't in that discussion, so once more: ",
              "I know we covered this, but remind me: ", "Revisiting this now that we're further along: ",
              "Sanity check on an earlier point: "],
    reopeners=["Same answer as before, in short:", "Nothing has changed there:", "As we said earlier:",
               "Still the same recommendation:", "Recap:"],
    openers=["Short version:", "Quick take:", "Here's how I'd approach it.", "Sure.", "Yes, with one caveat.",
             "Good question — it comes up in almost every migration like this.", "I'd keep it simple here."],
    closers=["Want me to turn that into a checklist for the ticket?",
             "If «person» has a strong opinion on this, I'd defer to them — they know the legacy quirks.",
             "I can draft the code for that next if you like.",
             "That slots into the plan without moving anything else.",
             "Let me know what the team decides and I'll adjust the rest of the plan."],
    followups=[
        ("ok, makes sense. Does that still fit the budget we agreed on at the start?",
         "Yes. Nothing here adds infrastructure; it's a few extra contractor hours at most, well inside the limit "
         "you gave me."),
        ("And that doesn't clash with the freeze, right?",
         "No — all of it is config and DAG code on our side; nothing needs a change on the source after the "
         "freeze starts."),
        ("«person» asked whether we could just lift-and-shift the bash script into a BashOperator first.",
         "We could, but it would carry every pandas transform over unchanged and you'd end up migrating twice. "
         "I'd only do it for the extract step, as a temporary bridge."),
        ("Fine. Next thing.", "Sure, go ahead."),
        ("Can you remind me what we decided about reruns earlier?",
         "Every write is scoped to the run's logical date, so re-running one day never touches the others. "
         "Everything since builds on that."),
        ("I'll bring that to the standup tomorrow.",
         "Good idea. The one thing worth getting a yes/no on is who owns the reruns during the parallel run."),
        ("Would the platform team object to that?",
         "I doubt it — it uses the operators and storage they already support, and it stays clear of the things "
         "they ruled out at the start."),
        ("That's more work than I hoped.",
         "It is front-loaded, but it's the part that makes the cutover boring. Most of it is one-off."),
        ("ok, and how would we roll that back if it goes wrong?",
         "Pause the DAG, re-enable the cron entry, and re-run the legacy job for the affected day. The new "
         "tables are separate, so nothing downstream has to change."),
        ("«person» will review this, I'll paste their comments later.",
         "Sounds good. I'll keep the open points in mind until then."),
        ("Is that compatible with what the finance people asked for?",
         "Yes — it keeps the tolerance check exactly as they defined it; only the mechanics change."),
        ("thanks", "You're welcome."),
    ],
)


def a_dbt_run(conv):
    r = conv.rng
    models = r.sample(A_SLOTS["model"], 6)
    lines = ["$ dbt run --select tag:nightly --target parallel"]
    t = 0.0
    for i, m in enumerate(models, 1):
        secs = round(r.uniform(1.5, 95.0), 2)
        t += secs
        kind = "incremental model" if m.startswith("fct") else ("table model" if m.startswith("dim") else "view model")
        rows = f"INSERT {r.randint(1000, 900000)}" if kind != "view model" else "CREATE VIEW"
        lines.append(f"{i:2d} of {len(models)} OK created sql {kind} analytics.{m} {'.' * (28 - len(m))} "
                     f"[{rows} in {secs}s]")
    lines.append(f"Finished running {len(models)} models in 0 hours {int(t // 60)} minutes and {t % 60:.2f} seconds.")
    lines.append(f"Completed successfully\nDone. PASS={len(models)} WARN=0 ERROR=0 SKIP=0 TOTAL={len(models)}")
    return "Running the nightly selection against the parallel target:", "\n".join(lines)


def a_reconcile(conv):
    r = conv.rng
    rows = []
    for t in r.sample(A_SLOTS["table"], 5):
        legacy = r.randint(80_000, 2_400_000)
        diff = r.choice([0, 0, 0, r.randint(1, 40)])
        rows.append((t, legacy, legacy - diff, diff, f"{diff / legacy * 100:.4f}"))
    out = table(["table_name", "legacy_rows", "new_rows", "diff", "diff_pct"], rows)
    return ("Pulling last night's reconciliation:",
            "analytics=> \\i sql/reconcile_counts.sql\n" + out + f"\n({len(rows)} rows)")


def a_pods(conv):
    r = conv.rng
    rows = []
    for t in r.sample(A_SLOTS["task"], 5):
        state = r.choice(["Completed", "Completed", "Completed", "Running", "OOMKilled"])
        rows.append((f"nightly-orders-{t.replace('_', '-')}-{r.randint(10**5, 10**6 - 1):x}",
                     "0/1" if state != "Running" else "1/1", state, r.choice([0, 0, 1]),
                     f"{r.randint(2, 59)}m"))
    return ("Checking the worker pods from the last run:",
            "$ kubectl get pods -n airflow -l dag_id=nightly_orders\n"
            + table(["NAME", "READY", "STATUS", "RESTARTS", "AGE"], rows).replace(" | ", "   "))


def a_durations(conv):
    r = conv.rng
    rows, total = [], 0
    for t in A_SLOTS["task"][:7]:
        m = r.randint(3, 38)
        total += m
        rows.append((t, "success", f"{m // 60:02d}:{m % 60:02d}:{r.randint(0, 59):02d}"))
    return ("Here are the task durations from the last run:",
            "$ airflow tasks states-for-dag-run nightly_orders scheduled__latest --output table\n"
            + table(["task_id", "state", "duration"], rows)
            + f"\n\ntotal wall time {total // 60}h {total % 60:02d}m (tasks partly in parallel)")


def a_pytest(conv):
    r = conv.rng
    n = r.randint(38, 71)
    secs = r.uniform(3, 19)
    failed = r.choice([0, 0, 1])
    out = f"$ pytest tests/pipeline -q\n{'.' * (n - failed)}{'F' * failed}\n"
    if failed:
        out += ("=================================== FAILURES ===================================\n"
                "__________________ test_refund_amounts_are_negative_in_fact __________________\n"
                "E   AssertionError: 3 refunds with positive amount in fct_refunds\n"
                "FAILED tests/pipeline/test_marts.py::test_refund_amounts_are_negative_in_fact\n"
                f"{failed} failed, {n - failed} passed in {secs:.2f}s")
    else:
        out += f"{n} passed in {secs:.2f}s"
    return "Running the pipeline test suite first:", out


def a_paste_night(conv):
    """The user pastes a parallel-run night; the answer reads it."""
    r = conv.rng
    night = conv.used.setdefault("night", [0])
    night[0] += 1
    legacy = [r.randint(38, 61), r.randint(62, 95), r.randint(18, 33)]
    new = [r.randint(21, 40), r.randint(30, 58), r.randint(12, 24)]

    def hm(m):
        return f"{m // 60}:{m % 60:02d}"

    exact = r.randint(36, 40)
    tables = r.sample(A_SLOTS["table"], 40 - exact) if exact < 40 else []
    odd = [f"{t} {r.choice('+-')}{r.randint(1, 25)} rows" for t in tables]
    note = r.choice(["nothing manual", "the upstream export arrived 20 minutes late, sensor waited",
                     "one extract retried once (replica vacuum)", "nothing manual, quiet night",
                     "«person» re-ran dbt_marts by hand after a lock timeout"])
    rows = [("extract (all)", hm(legacy[0]), hm(new[0])), ("transform", hm(legacy[1]), hm(new[1])),
            ("load", hm(legacy[2]), hm(new[2])), ("total", hm(sum(legacy)), hm(sum(new)))]
    q = (f"Parallel run, night {night[0]}:\n\n" + table(["step", "legacy", "new"], rows)
         + f"\n\nreconciliation: {exact}/40 tables exact"
         + (f", {len(odd)} within tolerance ({', '.join(odd)})" if odd else "")
         + f"\nnotes: {conv.fill(note)}\n\nAnything I should worry about?")
    manual = "by hand" in q
    a = [f"Night {night[0]} looks {'fine on the numbers' if manual else 'clean'}: the new pipeline finished in "
         f"{hm(sum(new))} against {hm(sum(legacy))} for legacy, so the runtime has plenty of headroom."]
    if odd:
        a.append("The tables that are off are off by a handful of rows, which is the usual signature of late "
                 "updates landing between the two extracts. If the same table shows up every night with the "
                 "same sign, look at it; if the sign flips, it's timing.")
    else:
        a.append("Every table exact is the best possible result; note it as a clean night in the log.")
    if manual:
        a.append("But the manual re-run resets the clean-night count, by the rule we agreed. Worth finding out "
                 "why dbt_marts hit a lock timeout — probably a BI query holding a lock on the old table during "
                 "the swap. A `lock_timeout` plus retry on that task would make it self-healing.")
    return q, "\n\n".join(a)


A_CODE_ISSUES = [
    ("pandas", "    df = pd.read_sql(f\"select * from {table}\", conn)\n    df.to_parquet(out_path)\n",
     "- `pd.read_sql` pulls the whole table into memory; that is where the OOMKills come from. Stream with "
     "`COPY (...) TO STDOUT` into the object store instead."),
    ("no_ds", "    query = f\"select * from {table}\"\n",
     "- The query isn't scoped to the logical date, so a rerun extracts everything again and the load "
     "duplicates rows. Add `where updated_at >= %(start)s and updated_at < %(end)s`."),
    ("password", "    conn = psycopg.connect(\"host=etl-replica user=etl password=changeme\")\n",
     "- There's a password in the code. Use the Airflow connection (`PostgresHook(\"postgres_source\")`) so "
     "it comes from the secrets backend."),
    ("fstring_sql", "    cur.execute(f\"delete from staging.{table} where ds = '{ds}'\")\n",
     "- The DELETE builds SQL with an f-string. `table` comes from our own YAML, so it's not an injection risk "
     "today, but use `psycopg.sql.Identifier` for the table and a parameter for `ds` anyway."),
    ("no_txn", "    cur.execute(delete_stmt)\n    cur.execute(insert_stmt)\n",
     "- The DELETE and the INSERT run in autocommit mode, so a failure between them leaves the day empty. Wrap "
     "both in one transaction (`with conn.transaction():`)."),
    ("print", "    print(\"done\", table)\n",
     "- Use the task logger instead of `print`, and log the row count: it's the first thing you'll want when "
     "a reconciliation fails."),
]


def a_paste_code(conv):
    r = conv.rng
    issues = r.sample(A_CODE_ISSUES, r.randint(2, 4))
    name = r.choice(["extract_table", "load_staging", "copy_partition", "export_table"])
    code = f"def {name}(table, ds, out_path):\n" + "".join(i[1] for i in issues) + "    return out_path\n"
    who = conv.fill("«person»")
    q = (f"{who} opened a PR for the {name} task. Here's the core of it, can you review?\n\n```python\n{code}```")
    a = "A few things, in order of importance:\n\n" + "\n".join(i[2] for i in issues)
    a += "\n\nNone of these is hard to fix; I'd ask for the changes before merging rather than after."
    return q, a


A_NOTE_ITEMS = [
    ("BI team asked if column names in the marts can stay identical to legacy",
     "Confirm to BI that mart column names stay identical to legacy (aliases in the marts layer)."),
    ("platform team will give us a dedicated node pool for the airflow namespace",
     "Get the node pool name from platform and add it to the pod template's nodeSelector."),
    ("«person» found two tables nobody reads anymore",
     "Put the two unused tables on the deprecate list and ask for sign-off."),
    ("finance wants a weekly summary of the reconciliation during the parallel run",
     "Set up a weekly reconciliation summary for finance (a query on audit.reconciliation, posted Mondays)."),
    ("security review of the secrets setup is scheduled",
     "Prepare a one-page description of the secrets flow for the security review."),
    ("marketing's attribution job reads the refunds table directly",
     "Add marketing's attribution job to the consumer list and tell them about the schema change before "
     "cutover."),
    ("the replica will get a minor version upgrade next month",
     "Ask platform for the replica upgrade date and avoid scheduling a backfill that week."),
    ("«person» is out for two weeks in the middle of the parallel run",
     "Find a second person for the morning reconciliation check while «person» is out."),
    ("the dbt docs site should be linked from the BI tool",
     "Publish the dbt docs in CI and ask BI to link it."),
    ("someone asked whether the legacy VM can be reused for something else afterwards",
     "Answer: no reuse; the VM gets snapshotted and deleted after decommissioning."),
]


def a_paste_notes(conv):
    r = conv.rng
    items = conv.sample("notes", A_NOTE_ITEMS, r.randint(3, 5))
    shared = {}
    q = ("Notes from today's sync:\n\n" + "\n".join("- " + conv.fill(i[0], shared) for i in items)
         + "\n\nCan you turn that into action items?")
    a = "Action items:\n\n" + "\n".join(f"{n}. " + conv.fill(i[1], shared) for n, i in enumerate(items, 1))
    return q, a


A_TOPICS = [
    Topic("inventory", [
        ("Before we design anything: what should I document about the legacy job so nothing gets lost?",
         "Write down, per step: what it reads, what it writes, how long it takes on a normal night and on the "
         "worst night of the last quarter, and what happens when it fails halfway. The failure behaviour is the "
         "part people forget, and it's exactly what the new DAG has to reproduce or improve on."),
        ("The legacy job also writes a `«table»_export.csv` to a share. How do I find out who still reads it?",
         "Check the file access times on the share for a week and grep the BI tool's datasource list for the "
         "file name. Anything nobody touched in 30 days goes on a 'deprecate' list that «person» signs off, "
         "rather than being dropped silently."),
        ("How do I figure out which of the legacy steps are actually still needed?",
         "Run the legacy job once with statement logging on (a session-level `log_min_duration_statement = 0` "
         "on the replica) and you get the exact query list with timings. Then trace each output table to a "
         "consumer; a step whose outputs nobody reads is a candidate to drop, not to migrate."),
        ("«person» says the legacy job has a 'magic' step that fixes timezones. How would you track that down?",
         "Undocumented fix-ups usually live in SQL strings inside the Python. Search for UPDATE statements and "
         "anything that calls `AT TIME ZONE`, then diff one day's output with and without that step to see what "
         "it really changes. Whatever it does becomes an explicit dbt model with a comment saying why."),
        ("Should we keep the old output tables around as test data?",
         "Yes — snapshot the outputs for two or three representative days now, including one month-end. They "
         "become golden datasets for regression tests, and they're cheap: a few hundred MB at most."),
        ("There are about 40 tables. Do we migrate them all at once?",
         "Group them by dependency: the «table» family first, because most marts depend on it, then the "
         "independent ones in batches of five to ten. Each batch goes through build, backfill and reconciliation "
         "before the next starts, so problems stay small."),
    ], extras=[
        "- list every table the job touches, with read/write\n- note the implicit ordering (step B assumes "
        "step A's temp table exists)\n- capture the runtime distribution from the cron logs, not from memory\n"
        "- record the side effects: emails, files dropped on shares, grants",
        "Put the inventory in the wiki page as a table, one row per step. It will be the checklist for the "
        "cutover later.",
        "Also record who to ask about each step. Half of the knowledge about a job like this lives in people's "
        "heads, and the person who wrote step 12 may be gone by the time the parallel run finds a difference "
        "there.",
        "Don't forget the non-SQL side effects: the legacy script may send an email when it's done, touch a "
        "marker file that another job waits for, or refresh a materialised view. Grep for `mail`, `touch` and "
        "`REFRESH` in the script and everything it calls.",
    ]),
    Topic("dag", [
        ("How would you split the nightly job into Airflow tasks?",
         "One task per unit you'd want to rerun on its own: extract per source table, load to staging, dbt "
         "staging models, dbt marts, reconciliation, publish. Extract and load fan out over the table list with "
         "dynamic task mapping, so the DAG file stays short and each table shows up separately in the UI."),
        ("Should `«task»` be its own task or part of the previous one?",
         "Its own task. It fails for different reasons than its neighbours, and when it does you want to rerun "
         "just that piece without repeating an expensive extract."),
        ("What about retries — how many, and with what delay?",
         "«retries» retries with exponential backoff starting at 5 minutes for the extract tasks (the replica "
         "occasionally drops connections during vacuum), and zero for the dbt tasks: if a model fails it's a "
         "logic or data problem and a retry only delays the alert."),
        ("How do we make the tasks idempotent? Today a rerun duplicates rows in «table».",
         "Scope every write to the run's logical date. Extract writes to `raw.«table»/ds={{ ds }}/`, the load "
         "does `DELETE ... WHERE ds = '{{ ds }}'` and the insert in one transaction, and the incremental dbt "
         "models use `unique_key` plus a partition filter. Then a rerun replaces the day instead of adding to it."),
        ("Can you sketch the DAG file?",
         "```python\nwith DAG(\n    dag_id=\"nightly_orders\",\n    schedule=\"0 1 * * *\",\n    start_date="
         "pendulum.datetime(2025, 1, 1, tz=\"UTC\"),\n    catchup=False,\n    max_active_runs=1,\n    "
         "default_args={\"retries\": «retries», \"retry_exponential_backoff\": True},\n) as dag:\n    extract = "
         "extract_table.expand(table=TABLES)\n    load = load_staging.expand(table=TABLES)\n    extract >> load "
         ">> dbt_staging >> dbt_marts >> reconcile >> publish\n```\n\nThe loader module gets wrapped in "
         "`load_staging` unchanged; only its entry point moves."),
        ("Do we need sensors for the upstream exports, or is a fixed schedule enough?",
         "Use a deferrable sensor for the upstream export — it doesn't hold a worker slot while it waits — with "
         "a timeout of a couple of hours and `soft_fail=False`, so a missing export is a visible failure rather "
         "than a silent skip."),
        (a_paste_code, None),
        ("Should we allow several runs of the DAG at the same time?",
         "Not for now: `max_active_runs=1`. Concurrent runs of one DAG against a single staging schema are the "
         "classic source of duplicate rows, and you don't need the throughput."),
        ("Last night's run looked slow. Can you check where the time went?",
         "The extracts dominate, as expected; `«task»` is the longest single task. Nothing looks abnormal, but "
         "if the total creeps up, that's the first place to parallelise further.", a_durations),
    ], extras=[
        "Keep task ids stable once the parallel run starts. Renaming a task resets its history in the UI and "
        "makes the duration trend useless.",
        "Put the table list in a small YAML file next to the DAG rather than in Python. Adding a table then is "
        "a one-line change anyone can review.",
        "Pass the logical date explicitly into every task (`{{ ds }}`) instead of calling `now()` anywhere. "
        "That is what makes reruns and backfills safe.",
        "Give every task an `execution_timeout`. A query that hangs on a lock should fail after a bounded time "
        "and retry, not sit there until someone notices the run is late.",
        "Write the extract and load functions so they can run outside Airflow too (plain functions that take "
        "the table and the date). Unit tests and one-off reruns from a shell then need no scheduler at all.",
        "Document the DAG in its `doc_md`: what it does, who owns it, where the runbook is. It shows up on the "
        "DAG page, which is the first place anyone looks during an incident.",
    ]),
    Topic("dbt", [
        ("How should we structure the dbt project?",
         "Three layers: `staging` (one model per source table, renames and casts only), `intermediate` (joins "
         "and business logic that isn't a final output) and `marts` (what BI reads). Tests live next to the "
         "models in YAML, and every mart gets an owner in its meta block."),
        ("Should `«model»` be incremental or a full table rebuild?",
         "Incremental once a full rebuild takes more than a few minutes. For `«model»` use "
         "`incremental_strategy='merge'` with a `unique_key` and a lookback of 3 days in the filter, so late "
         "updates are picked up without scanning the whole table."),
        ("Can you show me what an incremental model looks like?",
         "```sql\n{{ config(materialized='incremental', unique_key='order_id', on_schema_change='fail') }}\n"
         "select * from {{ ref('int_order_lines') }}\n{% if is_incremental() %}\n  where updated_at >= (select "
         "max(updated_at) - interval '3 days' from {{ this }})\n{% endif %}\n```\n\n`on_schema_change='fail'` "
         "means a silent column addition upstream stops the run at 1 a.m. instead of being discovered in a "
         "dashboard a week later."),
        ("What dbt tests would you put on `«model»`?",
         "`unique` and `not_null` on the key, `relationships` to `dim_customers`, `accepted_values` on status, "
         "and one custom test that the sum of line amounts equals the order total within a cent. That last one "
         "tends to catch more real bugs than all the generic ones together."),
        ("The pandas step does a fuzzy match on customer names. How do we do that in SQL?",
         "`similarity()` from `pg_trgm` with a threshold, materialised once per night into a mapping table. It "
         "won't be identical to the pandas logic, so run both for a week and diff the matches before switching."),
        ("How do we handle late-arriving refunds in the incremental models?",
         "Key the refund fact on refund_id, not on the order date, and let the marts aggregate by the date you "
         "report on. A refund arriving «mins» days late is then just a new row, not an update to a closed "
         "partition."),
        ("Can you run the nightly models against the parallel target and tell me if anything looks off?",
         "All green. The incremental facts insert about what a normal night produces; the views are instant, as "
         "they should be.", a_dbt_run),
        ("One model keeps failing its tests. Can you run the suite?",
         "If the refund test fails, it's the sign convention: the legacy job stores refunds as positive amounts "
         "and flips them in pandas. Do the flip in `stg_refunds` (`-1 * amount_cents`) and the test passes.",
         a_pytest),
    ], extras=[
        "Tag the nightly models (`tags: ['nightly']`) so the DAG can select them with one selector and ad-hoc "
        "models never sneak into the nightly run.",
        "Generate the dbt docs site in CI and link it from the wiki page; it's the cheapest data dictionary "
        "you'll ever get.",
        "Seeds are fine for small mapping tables (country codes, channel names) but not for anything that "
        "changes more than once a quarter.",
        "Run `dbt build` (models plus tests, in dependency order) rather than `dbt run` followed by `dbt test`. "
        "A failing test then stops the models downstream of it instead of letting bad data flow into the marts.",
        "Keep the business logic out of macros unless it's used in three or more places. A macro hides the SQL "
        "from reviewers, which is the opposite of why you're moving to dbt.",
        "Use `state:modified+` selection in CI so a pull request only builds the models it touches and their "
        "children, against a copy of production data from the night before.",
    ]),
    Topic("validation", [
        ("How do we prove the new pipeline produces the same numbers as the old one?",
         "Three levels: row counts per table and day, sums of the money columns per day, and a sampled "
         "row-level diff (a hash of the sorted business columns) for a few hundred keys. Counts alone will "
         "happily pass while every amount is off by the tax."),
        ("The counts match but revenue differs slightly on «table». Where would you look?",
         "Matching counts with small revenue differences are almost always rounding (numeric vs float in "
         "pandas) or timezone boundaries (an order at 23:30 local landing on another day). Compare per-day sums "
         "with the day computed both ways and the culprit usually jumps out."),
        ("What should the reconciliation task do when it finds a difference?",
         "Fail above the tolerance and post the table of differences to the channel; below it, log and "
         "continue. Make the threshold a DAG param so it can be tightened after the first clean week without a "
         "deploy."),
        ("Can you write the reconciliation query?",
         "```sql\nwith legacy as (\n  select ds, count(*) as n, sum(amount_cents) as cents\n  from "
         "legacy.«table» where ds = :ds group by ds\n), new as (\n  select ds, count(*) as n, sum(amount_cents) "
         "as cents\n  from analytics.«table» where ds = :ds group by ds\n)\nselect l.ds, l.n as legacy_rows, "
         "n.n as new_rows,\n       l.n - n.n as diff, l.cents - n.cents as cents_diff\nfrom legacy l full join "
         "new n using (ds);\n```"),
        ("How did last night's reconciliation look?",
         "Clean on most tables; where there is a difference it's a handful of rows, far inside the tolerance. "
         "Worth checking whether those rows are late updates that the legacy job picked up and we didn't yet.",
         a_reconcile),
        (a_paste_night, None),
        ("Where should the reconciliation results live?",
         "In a small table, `audit.reconciliation`, not only in task logs. After the parallel run you'll want to "
         "show the whole history to whoever signs off, and a query beats scrolling through logs."),
    ], extras=[
        "Run the reconciliation as its own task after the marts, so a failure there never blocks the publish "
        "step of a night that is otherwise fine — unless you decide it should.",
        "Exclude rows updated in the last hour before the extract from the row-level diff; they are "
        "legitimately different between two jobs that run minutes apart.",
        "Compare distinct key counts as well as row counts. Duplicates on one side and missing rows on the other "
        "can cancel out perfectly in a plain count.",
        "For the money columns, compare in integer cents. Comparing floats will give you tiny differences on "
        "every night that are pure noise and train everyone to ignore the check.",
    ]),
    Topic("k8s", [
        ("What resources should the worker pods request?",
         "Requests of cpu «cpu» / memory «mem» for the extract tasks and less for dbt tasks (they only send "
         "SQL). Set limits on memory only; CPU limits cause throttling that looks like random slowness."),
        ("The extract pod for «table» got OOMKilled last night. What now?",
         "An OOMKill on extract usually means the whole table is pulled into memory. Stream it instead: "
         "`COPY ... TO STDOUT` piped to object storage in chunks, and memory stays flat whatever the table size.",
         a_pods),
        ("KubernetesExecutor or CeleryExecutor for this?",
         "KubernetesExecutor. Your load is one burst a night, so idle Celery workers all day make no sense, and "
         "each task gets a clean pod. A few seconds of pod start-up per task are irrelevant here."),
        ("How do we keep the pods from hammering the source replica?",
         "An Airflow pool for the source connection with «pool» slots. Every extract takes a slot, so however "
         "many tables you add, the replica never sees more than that many concurrent queries."),
        (a_paste_code, None),
        ("Where should the pod template live?",
         "In the repo, referenced from the executor config. Reviewers then see resource changes in the same PR "
         "as the task change that needs them."),
        ("Are the pods from the last run all healthy?",
         "Mostly. Anything not `Completed` is worth a look: a `Running` pod this late means a stuck query, an "
         "OOMKilled one means the streaming change hasn't reached that task yet.", a_pods),
    ], extras=[
        "Set `ttlSecondsAfterFinished` or let the executor delete finished pods; otherwise the namespace fills "
        "up with thousands of completed pods within a month.",
        "Ship task logs to object storage (remote logging), so they survive the pod being deleted.",
        "Pin the worker image by digest, not by a moving tag. The image is part of what the parallel run "
        "validates; an unreviewed rebuild halfway through invalidates the comparison.",
        "Give the airflow namespace a ResourceQuota. A runaway mapped task with a thousand instances should hit "
        "the quota, not starve the other teams on the cluster.",
    ]),
    Topic("secrets", [
        ("Where should the database passwords live? Today they're in a .pgpass on the VM.",
         "In the secrets backend your cluster already has (Vault or the cloud secret manager), read by Airflow "
         "as connections. Nothing in the repo, nothing in the image, and rotation doesn't need a deploy."),
        ("How do Airflow connections get their credentials in Kubernetes?",
         "Airflow looks connections up by id (`postgres_source`, `warehouse`), so the DAG code never sees a "
         "password. The secrets backend resolves the id at runtime; in local development the same ids resolve "
         "from environment variables."),
        ("Should dbt get its own database user?",
         "Yes. Extract needs read on the source replica only, dbt needs write on the analytics schemas only. "
         "When something goes wrong, the audit log then tells you which side did it."),
        ("What happens to the .pgpass file?",
         "It stays until the legacy job is switched off, restricted to the cron user, with its removal as a "
         "dated line in the cutover checklist."),
    ], extras=[
        "Rotate the source password once before the parallel run starts; it proves the rotation path works "
        "while nothing depends on it yet.",
    ]),
    Topic("backfill", [
        ("We need two years of history in the new tables. How do we backfill?",
         "By month, with a backfill DAG that reuses the same tasks, and a concurrency of two. Months are big "
         "enough to be efficient and small enough to rerun when one fails."),
        ("How long would a full backfill take, roughly?",
         "From the extract timings, a month is about «mins» minutes of extract plus the dbt time, so two years "
         "is a weekend of wall time if it runs in the allowed windows. Start with the oldest months; they are "
         "the least likely to change."),
        ("Can the backfill run alongside the nightly run?",
         "Not at the same time. Give the backfill its own pool with one slot, and schedule it only in the "
         "windows the platform team allows. The nightly run always wins."),
        ("How do we keep track of which months are done?",
         "A tracking table with one row per month: backfilled at, reconciliation result, who checked it. When "
         "someone asks in three months whether March 2024 was verified, the answer is one query away."),
        (a_paste_notes, None),
        ("A backfill month failed halfway. Do we start it over?",
         "Just rerun the month: every task is scoped to its dates, so the rerun replaces what the failed attempt "
         "wrote. Look at why it failed first, though — a month that fails once tends to fail twice."),
    ], extras=[
        "Run the reconciliation for each backfilled month right away, not at the end. Finding a systematic "
        "error after 24 months of backfill is a very bad weekend.",
        "Backfill into the same tables the nightly run writes, not into a separate history schema. Two "
        "schemas that should be identical never stay identical.",
        "Watch the replica's replication lag while a backfill runs. If it climbs steadily, lower the pool size "
        "for the backfill before the BI team notices slow queries.",
    ]),
    Topic("parallel", [
        ("How long should the parallel run be?",
         "At least two full weeks, including one month-end if at all possible. Month-end is when the weird "
         "refunds, manual corrections and late invoices show up."),
        ("During the parallel run, which output do the dashboards read?",
         "The legacy tables, until sign-off. The new tables live in their own schema, and one BI workspace "
         "points at them so analysts can compare side by side."),
        ("What counts as a clean night in the parallel run?",
         "The DAG finishes inside the runtime limit, reconciliation is within tolerance on every table, and "
         "nobody had to touch anything by hand. Count consecutive clean nights; reset the count on any manual "
         "intervention."),
        ("The new pipeline was «mins» minutes slower than legacy last night. Should I worry?",
         "A few minutes is noise, especially while both jobs compete for the replica. Look at the trend over a "
         "week and at which task grew before optimising anything.", a_durations),
        ("What should go into the daily parallel-run log?",
         "Date, runtime, reconciliation status, anything odd. It takes two minutes a day and it's the evidence "
         "for the go/no-go meeting."),
        (a_paste_night, None),
        (a_paste_night, None),
        (a_paste_notes, None),
        ("We had a clean week. Can we shorten the parallel run?",
         "I wouldn't. The point of the length is to include a month-end; a clean week of ordinary days doesn't "
         "tell you much about the nights that are hard."),
    ], extras=[
        "Agree now who looks at the reconciliation every morning during the parallel run, and who covers when "
        "they're away. An unread check is no check.",
        "Freeze changes to the legacy job for the duration of the parallel run. Otherwise every difference "
        "starts with the question of whether someone changed the old side.",
        "When a difference shows up, fix it in the new pipeline and rerun that night, but keep the original "
        "result in the log. The sign-off wants to see the problems you found, not only a clean final state.",
    ]),
    Topic("monitoring", [
        ("What alerts do we need on the new DAG?",
         "Three: the DAG run failed, the run is still going after the usual finish time plus a margin (an SLA "
         "miss), and reconciliation failed. Everything else is a dashboard, not a page."),
        ("Who gets paged when the nightly run fails at 3 a.m.?",
         "Task failures post to the team channel; only an SLA miss that threatens the morning reports pages the "
         "on-call. Nobody should be woken up for a retry that's going to succeed."),
        ("How do we notice if the run is slowly getting slower over weeks?",
         "Export task durations as metrics (the StatsD integration does it) and chart a weekly p90 per task. "
         "Slow drift shows up there months before it becomes an SLA miss."),
        ("How does the BI team find out the data is stale?",
         "A freshness check on the final marts (`dbt source freshness`, or a max(updated_at) query) that posts a "
         "clear message, instead of them discovering stale numbers in a meeting."),
    ], extras=[
        "Link the runbook from every alert message. At 3 a.m. nobody should have to search for it.",
        "Send the alerts through the same alert manager the rest of your services use. A separate channel for "
        "pipeline alerts is the one nobody watches.",
        "Test the alerts: break the DAG on purpose in staging once and make sure the right people get the right "
        "message. Alerts that never fired are alerts you don't know work.",
    ]),
    Topic("cost", [
        ("Can you estimate the monthly infra cost of the new setup?",
         "The worker pods run maybe two hours a night, so their cost is small; the fixed part is the scheduler, "
         "webserver and metadata database. Size those modestly — one scheduler CPU handles a few dozen DAGs."),
        ("Is it worth paying for a managed Airflow instead of running it ourselves?",
         "Managed Airflow saves upgrades and on-call for the scheduler, at a premium. With one nightly DAG and "
         "an existing Kubernetes platform team, self-hosting on the cluster you already pay for is hard to beat."),
        ("How many contractor days would you plan for this?",
         "Roughly «mins» days: DAG and extract code, dbt models, reconciliation, backfill supervision, and a "
         "buffer for parallel-run surprises. The buffer is the part people cut and regret."),
        ("How do I keep track of what we've spent?",
         "A simple sheet in the ticket, one row per month: infra, contractor hours, one-off items. Checking it "
         "against the agreed limit is then a glance, not a finance exercise."),
    ]),
    Topic("cutover", [
        ("Let's draft the cutover runbook.",
         "1. Freeze changes to the legacy job.\n2. Final reconciliation of the last parallel night.\n3. Point "
         "the BI datasources at the new schema.\n4. Disable the cron entry (comment it out, don't delete it).\n"
         "5. Watch the first two nightly runs live.\n6. Announce in the channel and close the parallel-run log."),
        ("What's the rollback plan if the first night after cutover fails?",
         "Rollback is cheap as long as the legacy job and tables stay intact: switch the datasources back, "
         "re-enable the cron entry, rerun the missed night. Keep that possible for at least two weeks."),
        ("When can we decommission the legacy VM?",
         "After 30 days without a rollback and after the finance month-end close has run once on the new "
         "pipeline. Take a final snapshot of the legacy tables to cold storage first."),
        ("Who needs to be told about the cutover, and when?",
         "BI and finance a week before, with the date and what changes for them (ideally nothing); the platform "
         "team for the cron removal; and a reminder the day before in the channel."),
        (a_paste_notes, None),
        ("What's the riskiest step of the cutover night?",
         "Switching the BI datasources: it's the most clicking and the least automation. Rehearse it on a copy "
         "of one dashboard beforehand, and script it if the BI tool has an API."),
        ("What goes into the go/no-go meeting?",
         "The parallel-run log (clean nights in a row), the reconciliation history, the runtime trend, the open "
         "risks with owners, and an explicit yes from finance. If any of those is missing, it's a no-go."),
    ], extras=[
        "Keep the cutover night boring: no other deploys that day, and the people who know the legacy job "
        "reachable until the first new run has finished.",
        "Write the announcement before the cutover night, with the rollback criteria in it. Deciding under "
        "pressure at 4 a.m. what counts as failure is how rollbacks get skipped.",
        "After cutover, keep the reconciliation running against the legacy tables for as long as the legacy "
        "job still exists. It's free insurance.",
    ]),
]


def build_pipeline_en():
    c = Conv("pipeline_migration_en", 1729, A_SLOTS)
    c.fact("budget", "number", "25,000 USD", note="migration budget, upper bound")
    c.fact("runtime", "number", "3.5 hours", note="the nightly run must finish within it")
    c.fact("drift", "number", "0.05%", note="row-count drift tolerance")
    c.fact("cutover", "correction", "2026-04-12", superseded="2026-03-15", note="cutover date, moved")
    c.fact("freeze", "date", "2026-02-27", note="code freeze starts")
    c.fact("airflow", "version", "Airflow 2.9.3")
    c.fact("dbt", "version", "dbt-core 1.8.7")
    c.fact("postgres", "version", "PostgreSQL 13.14", note="legacy source database")
    c.fact("loader", "path", "src/pipeline/loader.py")
    c.fact("legacy-script", "path", "/srv/etl/legacy/run_nightly.sh")
    c.fact("wiki", "url", "https://wiki.example.com/data/pipeline-migration")
    c.fact("dashboard", "url", "https://grafana.example.com/d/etl-nightly/nightly-orders")
    c.fact("ticket", "identifier", "DATA-1729")
    c.fact("channel", "identifier", "#data-platform")
    c.fact("no-mongo", "constraint", "do not use MongoDB")
    c.fact("no-day-backfills", "constraint", "never run backfills during business hours")
    c.fact("q-finance", "question", "who signs off on the finance data contract", status="open")
    c.fact("q-csv", "question", "whether we keep the CSV exports for the partner team", status="open")
    c.fact("pref-dbt", "preference", "SQL in dbt models over pandas")
    c.fact("pref-short", "preference", "keep answers short")

    c.user("Hi! I'm leading the migration of our nightly orders pipeline off the old cron box and onto Airflow, "
           "and I'd like to plan it with you over the next few weeks. Let me dump the constraints first so we "
           "don't have to revisit them:\n\n"
           "- Budget: the whole migration (contractor hours plus new infra for the first year) is at most "
           "25,000 USD.\n"
           "- The source is PostgreSQL 13.14 on the `etl-legacy-01` VM. Today everything is kicked off by "
           "/srv/etl/legacy/run_nightly.sh, which cron fires at 01:00 UTC.\n"
           "- Target: Airflow 2.9.3 on our Kubernetes cluster, transformations in dbt-core 1.8.7. The "
           "warehouse itself stays where it is for now.\n"
           "- Cutover date: 2026-03-15.\n"
           "- Tracking ticket is DATA-1729; discussion happens in #data-platform.")
    c.assistant("Thanks, that's a clear starting point. A few questions before I sketch a plan:\n\n"
                "1. What does the legacy job do, step by step — extract, transform in Python, load?\n"
                "2. How long does it run today, and is there a hard deadline for when the data must be ready?\n"
                "3. Are there rules from the platform team about what we may or may not use?\n"
                "4. Who consumes the outputs (dashboards, exports, other jobs)?")
    c.user("1. Extract with psql COPY, a big pandas transform, then load into the warehouse. About 40 tables.\n"
           "2. It takes between 2 and 3 hours. Hard requirement from the business: the nightly run must finish "
           "within 3.5 hours, because the finance reports refresh at 05:00 UTC.\n"
           "3. Two hard rules from platform: do not use MongoDB for anything (they're decommissioning the last "
           "cluster, and someone suggested it for the run metadata), and never run backfills during business "
           "hours — the replica is shared with the BI team from 08:00 to 18:00 CET.\n"
           "4. Finance dashboards, a couple of CSV exports, and the marketing team's attribution job.\n\n"
           "Also: the row-count drift between the legacy output and the new output must stay below 0.05% "
           "during the parallel run, otherwise finance won't sign off.")
    c.assistant("Got it. Then the shape of the plan is:\n\n"
                "- **Phase 1 — inventory**: document every step, input and output of the legacy job.\n"
                "- **Phase 2 — build**: Airflow DAG for extract/load, dbt for the transforms, a reconciliation "
                "task comparing legacy and new outputs every night.\n"
                "- **Phase 3 — backfill** of history, in the windows the platform team allows.\n"
                "- **Phase 4 — parallel run** with nightly reconciliation against the drift tolerance.\n"
                "- **Phase 5 — cutover** and decommissioning.\n\n"
                "The runtime limit matters for the design: we should parallelise the extracts and keep the dbt "
                "models incremental where the tables are large.")
    c.user("Some more pointers. The loader code we want to keep (it does the warehouse load and is "
           "well tested) is src/pipeline/loader.py. The design doc lives at "
           "https://wiki.example.com/data/pipeline-migration and the runtime dashboard is "
           "https://grafana.example.com/d/etl-nightly/nightly-orders. Code freeze for the quarter starts "
           "2026-02-27, so anything that needs a change on the source side has to land before that.")
    c.assistant("Noted. Keeping the loader module as-is is a good call: we can wrap it in a task and avoid "
                "rewriting the part that already works. I'll put the design decisions we make here into a form "
                "you can paste into the wiki page.")
    c.user("Two preferences on how we work: I prefer SQL in dbt models over pandas transforms wherever it's "
           "possible — reviewers can read SQL, they can't read the current pandas. And please keep answers "
           "short, bullet points are fine.\n\n"
           "And two things are still open that I don't have answers to yet: who signs off on the finance data "
           "contract, and whether we keep the CSV exports for the partner team at all.")
    c.assistant("Understood — short answers, SQL first. I'll treat the two open points as open until you tell "
                "me otherwise; neither blocks the build phase.")

    def correct(conv):
        i = conv.user("Update from the steering meeting: the cutover moves to 2026-04-12. Finance wants the March "
                      "close to run on the old pipeline first. Please plan against the new date from now on; the "
                      "mid-March date is dead.")
        conv.correction_turns["cutover"] = i
        conv.assistant("Noted: cutover is now 2026-04-12. That gives the parallel run an extra four weeks, "
                       "including a real month-end, which is good news for the sign-off.")

    body(c, A_TOPICS, A_STYLE, exchanges=190, correction_at=90, correct=correct, max_extras=3)
    c.user("Thanks, this is a solid plan. I'll write up the status for the ticket tomorrow.")
    c.assistant("Sounds good. When you're back, we can go through the go/no-go checklist line by line.")
    return c


# == (c) English: debugging a web service incident, a huge log and a corrected start time ==========

C_SLOTS = {
    "person": ["Marta", "Dev", "Jonas", "Aiko", "Sam", "Ngozi"],
    "pod": lambda r: f"payments-api-{r.choice(['7d9f6c', '5b8c4d', '6f7a2e'])}-{''.join(r.choice('bcdfghjklmnpqrstvwxz2456789') for _ in range(5))}",
    "endpoint": ["POST /v1/checkout", "GET /v1/orders/{id}", "POST /v1/refunds", "GET /v1/balance",
                 "POST /v1/payment-intents"],
    "workers": lambda r: r.choice([4, 6, 8]),
    "secs": lambda r: r.choice([20, 25, 30, 45]),
    "n": lambda r: r.randint(3, 9),
    "mins": lambda r: r.randint(4, 25),
    "team": ["mobile", "database", "platform", "checkout", "SRE"],
}


def c_log(seed):
    """The ~50,000-character excerpt of nginx, gunicorn and app logs the user pastes at the start."""
    r = random.Random(seed)
    lines, counts = [], {"timeout": 0, "refused": 0, "worker": 0, "pool": 0, "slow": 0}
    t = 14 * 3600
    pid = 4100

    def hexid():
        return "".join(r.choice("0123456789abcdef") for _ in range(12))

    clients = [f"10.42.{r.randint(0, 15)}.{r.randint(2, 250)}" for _ in range(30)]
    upstreams = ["10.42.3.21", "10.42.3.22", "10.42.5.17", "10.42.5.18", "10.42.6.40", "10.42.6.41"]
    agents = ["PaymentsApp/5.12.0 (iOS 17.2)", "PaymentsApp/5.12.0 (Android 14)", "PaymentsApp/5.11.3 (iOS 16.7)",
              "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15", "python-requests/2.31.0"]
    lines.append("$ stern -n payments-prod 'payments-api|edge-nginx' --since 10m --no-follow --timestamps=short")
    text_len = len(lines[0])
    while text_len < 50_000:
        t += r.choice([0, 0, 1, 1, 1, 2])
        hh, mm, ss = t // 3600, t // 60 % 60, t % 60
        ms = r.randint(0, 999)
        up = r.choice(upstreams)
        cl = r.choice(clients)
        kind = r.choices(["timeout", "refused", "access", "access_ok", "worker", "pool", "slow"],
                         weights=[18, 6, 22, 20, 5, 10, 6])[0]
        if kind == "timeout":
            counts["timeout"] += 1
            line = (f"edge-nginx 2026/01/15 {hh:02d}:{mm:02d}:{ss:02d} [error] 31#31: *{r.randint(400000, 499999)} "
                    f"upstream timed out (110: Connection timed out) while reading response header from upstream, "
                    f"client: {cl}, server: api.example.com, request: \"POST /v1/checkout HTTP/1.1\", "
                    f"upstream: \"http://{up}:8000/v1/checkout\", host: \"api.example.com\"")
        elif kind == "refused":
            counts["refused"] += 1
            line = (f"edge-nginx 2026/01/15 {hh:02d}:{mm:02d}:{ss:02d} [error] 31#31: *{r.randint(400000, 499999)} "
                    f"connect() failed (111: Connection refused) while connecting to upstream, client: {cl}, "
                    f"server: api.example.com, request: \"POST /v1/checkout HTTP/1.1\", "
                    f"upstream: \"http://{up}:8000/v1/checkout\", host: \"api.example.com\"")
        elif kind == "access":
            status = r.choice([504, 504, 502, 499])
            rt = 60.0 if status == 504 else round(r.uniform(0.001, 59.0), 3)
            line = (f"edge-nginx {cl} - - [15/Jan/2026:{hh:02d}:{mm:02d}:{ss:02d} +0000] \"POST /v1/checkout "
                    f"HTTP/1.1\" {status} {r.randint(150, 190)} \"-\" \"{r.choice(agents)}\" rt={rt:.3f} "
                    f"uct=0.001 urt={rt:.3f}")
        elif kind == "access_ok":
            path = r.choice(["/v1/balance", "/v1/orders/" + str(r.randint(10**6, 10**7)), "/healthz",
                             "/v1/payment-methods"])
            rt = round(r.uniform(0.004, 0.35), 3)
            line = (f"edge-nginx {cl} - - [15/Jan/2026:{hh:02d}:{mm:02d}:{ss:02d} +0000] \"GET {path} HTTP/1.1\" "
                    f"200 {r.randint(90, 4000)} \"-\" \"{r.choice(agents)}\" rt={rt:.3f} uct=0.001 urt={rt:.3f}")
        elif kind == "worker":
            counts["worker"] += 1
            pid += r.randint(1, 9)
            line = (f"payments-api [2026-01-15 {hh:02d}:{mm:02d}:{ss:02d} +0000] [1] [CRITICAL] WORKER TIMEOUT "
                    f"(pid:{pid})\npayments-api [2026-01-15 {hh:02d}:{mm:02d}:{ss:02d} +0000] [{pid}] [INFO] "
                    f"Worker exiting (pid: {pid})\npayments-api [2026-01-15 {hh:02d}:{mm:02d}:{ss:02d} +0000] "
                    f"[{pid + 64}] [INFO] Booting worker with pid: {pid + 64}")
        elif kind == "pool":
            counts["pool"] += 1
            line = (f"payments-api {hh:02d}:{mm:02d}:{ss:02d}.{ms:03d}Z ERROR payments.views.checkout "
                    f"request_id={hexid()} psycopg_pool.PoolTimeout: couldn't get a connection after 30.00 sec "
                    f"(pool 'default': size 10, in use 10, waiting {r.randint(12, 96)})")
        else:
            counts["slow"] += 1
            line = (f"payments-api {hh:02d}:{mm:02d}:{ss:02d}.{ms:03d}Z WARNING payments.db slow query "
                    f"{r.randint(4000, 29000)}ms request_id={hexid()}: SELECT \"payments_ledgerentry\".\"id\", "
                    f"\"payments_ledgerentry\".\"amount\" FROM \"payments_ledgerentry\" WHERE "
                    f"(\"payments_ledgerentry\".\"account_id\" = %s AND \"payments_ledgerentry\".\"status\" = %s) "
                    f"ORDER BY \"payments_ledgerentry\".\"created_at\" DESC")
        lines.append(line)
        text_len += len(line) + 1
    return "\n".join(lines), counts, f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"


def c_pods(conv):
    r = conv.rng
    rows = []
    for _ in range(6):
        rows.append((conv.fill("«pod»"), "1/1", "Running", r.choice([0, 3, 7, 11, 14]), f"{r.randint(2, 9)}d"))
    return ("Read-only first — the pod list:",
            "$ kubectl get pods -n payments-prod -l app=payments-api\n"
            + table(["NAME", "READY", "STATUS", "RESTARTS", "AGE"], rows).replace(" | ", "   "))


def c_top(conv):
    r = conv.rng
    rows = [(conv.fill("«pod»"), f"{r.randint(120, 1900)}m", f"{r.randint(380, 1400)}Mi") for _ in range(6)]
    return ("Resource usage right now:",
            "$ kubectl top pods -n payments-prod -l app=payments-api\n"
            + table(["NAME", "CPU(cores)", "MEMORY(bytes)"], rows).replace(" | ", "   "))


def c_activity(conv):
    r = conv.rng
    rows = [("active", r.randint(8, 40), "payments_app"), ("idle in transaction", r.randint(0, 35), "payments_app"),
            ("idle", r.randint(5, 60), "payments_app"), ("active", r.randint(1, 4), "reporting")]
    return ("Connection states on the primary (read-only query):",
            "payments=> select state, count(*), usename from pg_stat_activity where datname = 'payments' group by 1, 3 "
            "order by 2 desc;\n" + table(["state", "count", "usename"], rows) + f"\n({len(rows)} rows)")


def c_explain(conv):
    r = conv.rng
    rows = r.randint(800_000, 4_000_000)
    ms = r.uniform(2500, 19000)
    return ("EXPLAIN ANALYZE of the slow ledger query, on the read replica:",
            "payments=> explain (analyze, buffers) select id, amount from payments_ledgerentry where account_id = "
            "'acc_29fk1' and status = 'pending' order by created_at desc limit 50;\n"
            "                                   QUERY PLAN\n"
            "--------------------------------------------------------------------------------\n"
            f" Limit  (cost=0.56..9182.44 rows=50 width=24) (actual time={ms - 2:.3f}..{ms:.3f} rows=50 loops=1)\n"
            f"   ->  Index Scan Backward using payments_ledgerentry_created_at_idx on payments_ledgerentry\n"
            f"         (cost=0.56..412882.10 rows=2248 width=24) (actual time={ms - 2:.3f}..{ms - 1:.3f} rows=50 loops=1)\n"
            "         Filter: ((account_id = 'acc_29fk1'::text) AND (status = 'pending'::text))\n"
            f"         Rows Removed by Filter: {rows}\n"
            f"         Buffers: shared hit={r.randint(10000, 90000)} read={r.randint(20000, 300000)}\n"
            " Planning Time: 0.212 ms\n"
            f" Execution Time: {ms:.3f} ms\n(9 rows)")


def c_metrics(conv):
    r = conv.rng
    start = r.randint(20, 40)
    rows = []
    bad = r.random() < 0.5
    for i in range(6):
        m = start + 5 * i
        p95 = r.randint(900, 4000) if bad else r.randint(90, 160)
        err = r.uniform(3, 18) if bad else r.uniform(0.01, 0.3)
        rows.append((f"15:{m:02d}" if m < 60 else f"16:{m - 60:02d}", p95, f"{err:.2f}%", r.randint(380, 520)))
    return ("Latest numbers from the dashboard (5-minute buckets):",
            table(["time (UTC)", "p95_ms", "5xx_rate", "rps"], rows))


def c_curl(conv):
    r = conv.rng
    out = []
    for _ in range(3):
        total = r.uniform(0.05, 0.3) if r.random() < 0.5 else r.uniform(8, 31)
        out.append(f"dns=0.001 connect=0.004 tls=0.019 ttfb={total - 0.002:.3f} total={total:.3f} code="
                   f"{200 if total < 1 else 504}")
    return ("A few synthetic requests through the edge:",
            "$ for i in 1 2 3; do curl -s -o /dev/null -w 'dns=%{time_namelookup} connect=%{time_connect} "
            "tls=%{time_appconnect} ttfb=%{time_starttransfer} total=%{time_total} code=%{http_code}\\n' "
            "-X POST https://api.example.com/v1/checkout -H @headers.txt -d @sample.json; done\n" + "\n".join(out))


C_TOPICS = [
    Topic("triage", [
        ("Is it only checkout, or are other endpoints affected too?",
         "From what we've seen it's concentrated on checkout: the reads (balance, orders) stay fast because they "
         "don't touch the ledger query. That points at something on the checkout write path rather than at the "
         "edge or the network."),
        ("Are all pods affected equally?",
         "Restarts are spread across the pods, so it's not one bad node. The restart counts are gunicorn workers "
         "being killed and the pods' liveness probes failing while every worker is stuck.", c_pods),
        ("Could this be a noisy neighbour on the cluster?",
         "Unlikely: CPU on the API pods is moderate and memory is flat. Stuck workers waiting on the database "
         "don't burn CPU, which matches what we see.", c_top),
        ("What's the blast radius for customers right now?",
         "Roughly every checkout that needs a ledger lookup for an account with a lot of history is timing out; "
         "small accounts still get through. Payments aren't double-charged — the timeouts happen before the "
         "charge is submitted — but users see errors and some will retry."),
        ("Can you check what the edge sees right now?",
         "Mixed: some requests come back in a fraction of a second, others hang until the proxy gives up. That's "
         "the pattern of a shared pool being exhausted, not of a broken upstream.", c_curl),
    ], extras=[
        "Keep a running timeline in the incident doc as we go: what we saw, when, and what we changed. It's much "
        "easier than reconstructing it for the postmortem.",
        "Post a short update in the channel every 30 minutes even if nothing changed; silence makes people start "
        "their own investigations in parallel.",
    ]),
    Topic("pool", [
        ("How big is the connection pool per pod, and is that the bottleneck?",
         "The app log says size 10 with dozens waiting: each gunicorn worker thread holds a connection while the "
         "slow query runs, so a handful of slow requests take the whole pool and everything else queues until "
         "the 30-second pool timeout."),
        ("Should we just raise the pool size?",
         "Not first. More connections means more concurrent slow queries on the primary, and it gets slower for "
         "everyone. Fix or bypass the slow query, then size the pool to the number of workers times threads."),
        ("What does the database see?",
         "A lot of 'idle in transaction' is the tell: the app opens a transaction, runs the slow query, and holds "
         "the connection while waiting. Those sessions pin connections that other requests need.", c_activity),
        ("Could PgBouncer be what's limiting us?",
         "It could amplify it: if its pool per user/database is small, clients queue in PgBouncer before they even "
         "reach Postgres. Check `SHOW POOLS;` on the bouncer — `cl_waiting` climbing means the bouncer is the "
         "queue."),
        ("Is there a statement timeout on the app's database user?",
         "There should be. A `statement_timeout` of a few seconds on the app role means a runaway query fails fast "
         "instead of holding a worker for half a minute. Set it per role (`ALTER ROLE payments_app SET "
         "statement_timeout = '5s'`), which needs no restart."),
    ], extras=[
        "Set `idle_in_transaction_session_timeout` as well, so a request that dies mid-transaction doesn't leave "
        "its connection pinned.",
        "The pool timeout (30 seconds) is longer than the gunicorn worker timeout, so workers get killed while "
        "still waiting for a connection. The two should be ordered: statement timeout < pool timeout < worker "
        "timeout < proxy timeout.",
    ]),
    Topic("query", [
        ("Why is the ledger query suddenly slow?",
         "The plan walks the created_at index backwards and filters on account and status, throwing away millions "
         "of rows. It's fast for accounts with recent entries and terrible for large accounts with few pending "
         "ones.", c_explain),
        ("Did the release change that query?",
         "It looks like it: the release added the status filter to the ledger lookup (pending entries only). "
         "Without a composite index on (account_id, status, created_at), the planner picks the created_at index "
         "and filters."),
        ("What index would fix it?",
         "```sql\ncreate index concurrently payments_ledgerentry_acct_status_created_idx\n    on "
         "payments_ledgerentry (account_id, status, created_at desc);\n```\n\n`concurrently` avoids locking the "
         "table for writes; it takes longer and can't run inside a transaction, so run it from psql, not from a "
         "Django migration in the middle of an incident."),
        ("How long would building that index take?",
         "On a table that size, somewhere between «mins» and 40 minutes with `concurrently`, depending on write "
         "load. It adds I/O on the primary while it builds, so watch replication lag."),
        ("Can we make the planner pick a better plan without an index?",
         "Not reliably. You could rewrite the query to filter by account first with a CTE, but the real fix is "
         "the index. Rolling back the query change is the faster mitigation."),
    ], extras=[
        "Check `pg_stat_statements` for the query's mean time before and after the release; it gives you the "
        "exact moment it got slow, which helps the timeline.",
        "Add the index to a proper Django migration afterwards (with `AddIndexConcurrently`), so it exists in "
        "every environment and not only on production.",
    ]),
    Topic("gunicorn", [
        ("Why are gunicorn workers being killed?",
         "`WORKER TIMEOUT` means a worker didn't check in with the arbiter within the timeout — it was blocked "
         "on the database. The arbiter kills it and boots a new one; during the reboot, nginx gets connection "
         "refused, which is where the 502s come from."),
        ("Should we increase the gunicorn timeout?",
         "No; that just makes each stuck request hold its worker longer. The timeout is doing its job. Fix what "
         "makes the requests slow."),
        ("How many workers do we run, and is that right?",
         "«workers» sync workers per pod is fine for this app in normal conditions. With slow database calls, "
         "sync workers all block at once; threads (`--threads 4`) help a bit, but they share the same small pool."),
        ("Would switching to async workers help?",
         "Not during an incident. It's a big change with its own failure modes, and the problem is a slow query, "
         "not the worker model."),
    ], extras=[
        "Turn on `--max-requests` with jitter if it isn't already; it doesn't fix this, but it prevents slow "
        "memory growth from turning into a second problem.",
    ]),
    Topic("nginx", [
        ("Is the nginx proxy timeout part of the problem?",
         "The edge waits 60 seconds for a response; that's why clients see 504 after a minute. It's longer than "
         "anything checkout should take, so it isn't the cause — but a shorter timeout on the checkout location "
         "would free client connections sooner."),
        ("Should we enable upstream keepalive?",
         "Worth doing later: `keepalive 32;` in the upstream block plus `proxy_http_version 1.1` and an empty "
         "Connection header. It saves TCP handshakes, but it won't fix this incident."),
        ("Could nginx retry the POST to another upstream and cause duplicates?",
         "By default nginx doesn't retry non-idempotent requests (POST) after a request was sent upstream, so "
         "`proxy_next_upstream` won't resend a checkout. Keep it that way."),
        ("Can we rate-limit checkout at the edge to protect the backend?",
         "Yes, as a stopgap: a `limit_req` zone on the checkout location with a burst. It turns some timeouts "
         "into fast 429s, which the app handles better than a hung request. Remove it once the fix is in."),
    ], extras=[
        "Make sure the edge logs `upstream_response_time` and the upstream address (they do). They are what let "
        "us see that all upstreams were affected equally.",
    ]),
    Topic("retries", [
        ("Are clients retrying and making it worse?",
         "Probably some: the web client retries once with a delay, which is fine. A client that retries "
         "immediately on timeout can double the load on a struggling backend."),
        ("What would a good retry policy look like?",
         "Exponential backoff with jitter, a cap of two or three attempts, and an idempotency key on every "
         "checkout request so a retry can never charge twice. The server side already accepts idempotency keys."),
        ("Should we add a circuit breaker around the ledger lookup?",
         "Longer term, yes: if the lookup fails or is slow for a while, fail fast with a clear error instead of "
         "tying up workers. For now the statement timeout gives a crude version of that."),
    ], extras=[
        "Ask the client teams to log their retry counts; right now we can only infer retries from the edge logs.",
    ]),
    Topic("mitigation", [
        ("What are our options to stop the bleeding right now?",
         "In order of speed: (1) turn off the feature flag that enables the pending-only ledger filter, if there "
         "is one; (2) roll back the release; (3) build the index concurrently. (1) and (2) take minutes, (3) "
         "takes longer but fixes the root cause."),
        ("Is there a feature flag for the new ledger filter?",
         "The release notes mention `LEDGER_PENDING_FILTER` as a setting read at startup, not a runtime flag, so "
         "changing it needs a rolling restart of the API pods — which is fine, that's not the database."),
        ("Let's roll back. What's the safest way?",
         "Roll back the deployment to the previous image with `kubectl rollout undo`, watch the rollout, and keep "
         "the database as it is — the release had no schema migration, so there's nothing to undo there."),
        ("Should we scale the API out to more pods?",
         "More pods means more connections to the same slow query. It would make the database worse. Don't "
         "scale out until the query is fast again."),
        ("How do we know the mitigation worked?",
         "p95 back to normal within a few minutes, 5xx rate near zero, no more WORKER TIMEOUT lines and no "
         "'idle in transaction' pile-up on the primary. Watch it for 30 minutes before calling it mitigated.",
         c_metrics),
    ], extras=[
        "Whatever we do, write down the exact time we did it. The metrics will tell us whether it worked only if "
        "we know when to look.",
        "Tell the channel before you act, not after: someone else might be about to do something conflicting.",
    ]),
    Topic("comms", [
        ("Can you draft a status page update?",
         "\"We are investigating elevated error rates on checkout. Some payments may fail; no customer has been "
         "charged for a failed payment. Next update in 30 minutes.\" Short, factual, and it answers the one "
         "question customers have: was I charged?"),
        ("What should I tell the support team?",
         "That failed checkouts were not charged, that retrying in a few minutes is fine, and that they should "
         "tag tickets with the incident id so we can follow up. Give them the status page link to share."),
        ("«person» from management wants an ETA. What do I say?",
         "Give the mitigation ETA, not the fix ETA: 'we expect error rates to be back to normal within 30 "
         "minutes after the rollback; the permanent fix follows tomorrow'. Don't promise the root cause fix yet."),
        ("Draft the 'resolved' update for the status page.",
         "\"The issue affecting checkout has been resolved. Between the start of the incident and the rollback, "
         "some checkout attempts failed; failed attempts were not charged. We will publish a summary of the "
         "cause.\""),
    ], extras=[
        "Keep internal and external updates separate. The channel can have hypotheses; the status page should "
        "only have facts.",
    ]),
    Topic("verify", [
        ("The rollback finished. Are we good?",
         "The latest buckets look healthy. Give it the full 30 minutes before declaring it resolved; the first "
         "minutes after a rollout can look better than they are because pools are fresh.", c_metrics),
        ("Any leftovers on the database from the incident?",
         "Check for long-running or 'idle in transaction' sessions that survived the rollback and terminate them "
         "individually with `pg_terminate_backend(pid)` — that's a session kill, not a database restart.",
         c_activity),
        ("Were any payments actually lost?",
         "Compare the payment-intent records with the processor's report for the incident window. Intents that "
         "were created but never confirmed are the failed checkouts; the processor should have nothing charged "
         "for them."),
    ], extras=[
        "Keep the incident open until the index is in and the fixed release is out; 'mitigated' isn't "
        "'resolved'.",
    ]),
    Topic("postmortem", [
        ("Let's outline the postmortem.",
         "Summary, impact (duration, failed checkouts, no double charges), timeline, root cause (query change "
         "without a matching index), contributing factors (timeouts in the wrong order, alert delay), what went "
         "well, what didn't, action items with owners and dates."),
        ("What were the contributing factors, in your view?",
         "- no index review for query changes on the ledger\n- statement timeout not set on the app role\n"
         "- timeouts in the wrong order (pool > worker)\n- an alert window that delayed the page\n- load tests "
         "that only use small accounts"),
        ("What action items would you propose?",
         "1. Composite index via migration (owner: checkout team).\n2. statement_timeout and "
         "idle_in_transaction_session_timeout on the app role.\n3. Reorder timeouts.\n4. Shorter alert window "
         "for 5xx on checkout.\n5. Load test data with large accounts.\n6. Query plan check in CI for ledger "
         "queries."),
        ("How do we keep the postmortem blameless?",
         "Describe what the system allowed, not who did what: 'the review process had no step that would catch "
         "a missing index' rather than 'the author forgot an index'. People made reasonable decisions with the "
         "information they had."),
    ], extras=[
        "Schedule the postmortem review within a week, while people still remember the details.",
    ]),
    Topic("prevention", [
        ("How do we catch a missing index before production next time?",
         "Run the new queries against a production-sized copy in CI and fail on sequential or filter-heavy plans "
         "for the ledger tables. Even a simple `EXPLAIN` check on a few known-large accounts would have caught "
         "this one."),
        ("Should load tests use production-like data?",
         "Yes, at least the distribution: a few huge accounts among many small ones. Uniform test data hides "
         "exactly the kind of plan problem we just had."),
        ("How should the alert be tuned so we get paged sooner?",
         "Page on a short window for checkout 5xx (e.g. 2 minutes above a threshold) and keep the longer window "
         "for the general error-rate alert. Checkout is where minutes matter."),
    ], extras=[
        "Add a dashboard panel for pool wait time per pod. It would have shown the problem before the first "
        "timeout.",
    ]),
]

C_STYLE = Style(
    leads=["Next: ", "Quick one: ", "«person» is asking: ", "Another thing: ", "OK. "],
    revisits=["Coming back to this: ", "«person» joined late, so again: ", "Remind me: ",
              "Double-checking an earlier point: "],
    reopeners=["Same as before:", "As we said:", "Unchanged:", "Recap:"],
    openers=["Short answer:", "Read-only first, as you prefer.", "Here's my read.", "Yes.", "Likely, yes.",
             "Good instinct."],
    closers=["Want me to add that to the incident doc?", "I'll note it in the timeline.",
             "«person» should confirm that from the «team» side.", "Let's decide after the next metrics check."],
    followups=[
        ("ok, posting that in the channel", "Good. Add the time you posted it to the timeline."),
        ("«person» disagrees, they think it's the network.",
         "Fair to check, but the reads are fast through the same network path, and the database shows the stuck "
         "sessions. I'd need a network symptom that the reads don't have to be convinced."),
        ("that matches what I see on the dashboard", "Good, then we're reading the same signal."),
        ("can we do that without touching the database server itself?",
         "Yes — everything here is either a read-only query, a role setting, or an app-side change. Nothing "
         "restarts or fails over the database."),
        ("would that need a deploy?",
         "A config change and a rolling restart of the API pods, not a code deploy. Today is fine for that."),
        ("ok", "👍"),
        ("I'll ask the «team» team", "Thanks. Until they answer, let's assume the worst case."),
        ("Does that change the timeline we wrote down?",
         "Not by itself — it adds an entry, but the start and the trigger stay as recorded."),
    ],
)


def build_incident_en():
    c = Conv("incident_debug_en", 4821, C_SLOTS)
    log, counts, log_end = c_log(4821)
    n_timeouts = f"{counts['timeout']} upstream timeouts"
    c.fact("ticket", "identifier", "OPS-4821")
    c.fact("channel", "identifier", "#payments-oncall")
    c.fact("slo-latency", "number", "200 ms", note="SLO: p95 latency under it")
    c.fact("slo-errors", "number", "0.5%", note="SLO: error rate below it")
    c.fact("start", "correction", "13:52 UTC", superseded="14:05 UTC", note="incident start, corrected")
    c.fact("django", "version", "Django 4.2.11")
    c.fact("gunicorn", "version", "gunicorn 21.2.0")
    c.fact("release", "version", "v1.2.3", note="the release that went out before the incident")
    c.fact("nginx-conf", "path", "/etc/nginx/conf.d/api.conf")
    c.fact("view", "path", "payments/views/checkout.py")
    c.fact("dashboard", "url", "https://grafana.internal.example.com/d/payments-api/overview")
    c.fact("runbook", "url", "https://runbooks.example.com/payments/502-storm")
    c.fact("no-db-restart", "constraint", "do not restart the primary database")
    c.fact("no-friday", "constraint", "never deploy on Fridays")
    c.fact("log-timeouts", "number", n_timeouts, note="counted from the huge log by the assistant")
    c.fact("q-retries", "question", "mobile app retries POST /v1/checkout", status="open")
    c.fact("q-pgbouncer", "question", "PgBouncer runs in transaction mode", status="open")
    c.fact("pref-readonly", "preference", "read-only commands first")

    c.user("We have an incident, I need a second pair of eyes. Ticket OPS-4821, we're coordinating in "
           "#payments-oncall. The payments API (Django 4.2.11 on gunicorn 21.2.0, nginx in front) has been "
           "returning 502s and timeouts on checkout since about 14:05 UTC. The only change today was release "
           "v1.2.3, which went out at 13:45 UTC. Our SLO is p95 latency under 200 ms and an error rate below "
           "0.5%, and we're far over both.")
    c.assistant("Let's get a picture before changing anything. Three things would help most:\n\n"
                "1. The edge (nginx) and app logs for the last few minutes.\n"
                "2. Whether it's all endpoints or only checkout.\n"
                "3. What v1.2.3 changed — especially anything touching the database.\n\n"
                "And are there any rules for this system I should know about before suggesting actions?")
    c.user("Rules: do not restart the primary database — last time it cost us 40 minutes of failover and a "
           "replica rebuild. And for whatever fix we end up with: never deploy on Fridays. Today is Thursday, so "
           "a code fix either goes out today or waits until Monday.\n\n"
           "I prefer read-only commands first, then we decide together what to change. Dashboard: "
           "https://grafana.internal.example.com/d/payments-api/overview — runbook for 502 storms: "
           "https://runbooks.example.com/payments/502-storm (it mostly says 'check the pool').")
    c.assistant("Understood. I'll start with the logs from both the edge and the API pods, last ten minutes:")
    c.tool(log)
    c.assistant(f"That's about {len(log) // 1000}K characters of log covering 14:00:00 to {log_end}. What it "
                f"shows:\n\n"
                f"- {n_timeouts} at the edge, all on POST /v1/checkout, each after nginx's 60-second read "
                f"timeout (504 to the client);\n"
                f"- {counts['refused']} 'connection refused' (502) — those line up with gunicorn killing workers;\n"
                f"- {counts['worker']} gunicorn `WORKER TIMEOUT` kills;\n"
                f"- {counts['pool']} `PoolTimeout` errors from the checkout view: the pool (size 10) is fully in use "
                f"with dozens of requests waiting;\n"
                f"- {counts['slow']} slow-query warnings, all the same ledger query with the new status filter, "
                f"taking 4 to 29 seconds.\n\n"
                f"Reads (balance, orders, health) stay fast. So: a slow query on the checkout path holds "
                f"connections, the pool runs dry, workers block and get killed. Note that the errors are already "
                f"there in the very first lines at 14:00 — it probably started before the page came in.")
    c.user("Makes sense. The nginx config is /etc/nginx/conf.d/api.conf and the checkout view is "
           "payments/views/checkout.py, if you need to look at either. Two things nobody could answer yet: whether "
           "the mobile app retries POST /v1/checkout on a timeout (the mobile team is offline), and whether "
           "PgBouncer runs in transaction mode or session mode — the person who set it up left.")
    c.assistant("Both questions stay open until someone can answer them; neither blocks the mitigation. If the "
                "mobile app does retry on timeout, it multiplies the load while we're degraded, so it matters for "
                "the postmortem more than for the next hour.")

    def correct(conv):
        i = conv.user("Correction on the timeline: the load balancer metrics show the first 502s at 13:52 UTC, "
                      "not 14:05 UTC — 14:05 was only when the alert fired (it has a 10-minute window). So it "
                      "started seven minutes after the release went out. Please use 13:52 UTC from now on.")
        conv.correction_turns["start"] = i
        conv.assistant("Updated: the incident started at 13:52 UTC, seven minutes after the release — which fits "
                       "the slow query ramping up as traffic hit accounts with long histories. The time we got "
                       "paged stays in the timeline as the detection time, not the start.")

    body(c, C_TOPICS, C_STYLE, exchanges=170, correction_at=80, correct=correct, max_extras=2)
    c.user("Thanks for the help today. I'll write up the postmortem draft tomorrow morning.")
    c.assistant("Good luck with it. Send it over if you want a second read before the review.")
    return c


# == (b) 中文: learning TCP and planning a graduation project with a budget ========================

B_SLOTS = {
    "n": lambda r: r.randint(3, 9),
    "conns": lambda r: r.choice([1000, 2000, 3000, 4000]),
    "rtt": lambda r: r.choice([0.3, 0.5, 0.8, 1.2, 20, 35]),
    "week": lambda r: r.randint(2, 12),
    "tool": ["wrk", "自己写的压测客户端", "tcpkali", "iperf3"],
    "state": ["TIME_WAIT", "CLOSE_WAIT", "SYN_RECV", "FIN_WAIT2", "ESTABLISHED"],
    "mentor": ["王老师", "导师"],
    "peer": ["室友", "同组的小李", "师兄", "实验室的师姐"],
}

B_STYLE = Style(
    leads=["再问一个：", "还有个问题，", "刚才想到：", "请教一下，", "«peer»问我："],
    revisits=["前面讲过的这个我还是有点没懂：", "再确认一下之前的问题：", "复习一下：", "«peer»又问起来了，再讲一遍吧："],
    reopeners=["和之前说的一样，简单总结：", "前面讲过，这里再梳理一遍：", "结论不变：", "复习一下要点："],
    openers=["先讲原理：", "好问题。", "简单说：", "分两点说。", "这个很常见。", "可以这样理解："],
    closers=["要不要我把这部分整理成笔记，放进论文的第二章？", "你可以抓个包验证一下，看到的现象会很直观。",
             "这个点答辩时老师很可能会问，建议记下来。", "下一步可以把它写进测试用例里。"],
    followups=[
        ("这个会不会超出上面说的预算？", "不会。这部分只是软件和配置，不需要买新设备，也不用多租服务器。"),
        ("那个限制还适用吗？", "适用。我们前面定下的几条规矩一直有效，这里的方案也没有违反其中任何一条。"),
        ("明白了，谢谢！", "不客气，有问题随时问。"),
        ("«mentor»说这个要写进论文里。", "那就把原理、实验设计和测量结果分开写，每个结论后面附上抓包截图或者数据表。"),
        ("嗯，我先去试一下。", "好，试完把输出贴过来，我们一起看。"),
        ("这个和刚才说的那个有什么关系？", "本质上是同一件事的两面：一个是内核怎么管理连接，一个是应用层怎么用好这些连接。"),
        ("这样进度还来得及吗？", "来得及。只要中期检查前把核心的事件循环和压测跑通，后面主要是优化和写论文。"),
        ("好的，那我们继续。", "好，继续。"),
        ("«peer»说直接用多线程更简单，为什么非要用 epoll？",
         "多线程一个连接一个线程，几千个连接就是几千个线程，内存和上下文切换开销都很大；epoll 用少量线程管理大量连接，这正是你这个课题要展示的东西。"),
    ],
)


def b_ss(conv):
    r = conv.rng
    est = r.randint(800, 4800)
    tw = r.randint(0, 9000)
    return ("先看一下连接状态的统计：",
            "$ ss -s\n"
            f"Total: {est + tw + r.randint(100, 300)}\n"
            f"TCP:   {est + tw + r.randint(10, 50)} (estab {est}, closed {r.randint(0, 40)}, orphaned {r.randint(0, 9)}, "
            f"timewait {tw})\n\n"
            "Transport Total     IP        IPv6\n"
            f"RAW       0         0         0\n"
            f"UDP       {r.randint(3, 9)}         {r.randint(2, 6)}         1\n"
            f"TCP       {est + r.randint(10, 50)}      {est + r.randint(5, 40)}      {r.randint(1, 6)}\n"
            f"INET      {est + r.randint(60, 90)}      {est + r.randint(50, 80)}      {r.randint(1, 8)}")


def b_tw(conv):
    r = conv.rng
    lines = ["$ ss -tan state time-wait '( sport = :8888 )' | head -8",
             "Recv-Q Send-Q Local Address:Port  Peer Address:Port Process"]
    for _ in range(7):
        lines.append(f"0      0      127.0.0.1:8888      127.0.0.1:{r.randint(32768, 60999)}")
    return "看一下本地调试实例上 TIME_WAIT 的连接：", "\n".join(lines)


def b_tcpdump(conv):
    r = conv.rng
    port = r.randint(40000, 60000)
    seq = r.randint(10**8, 4 * 10**9)
    ack = r.randint(10**8, 4 * 10**9)
    t = r.randint(10, 59)
    us = r.randint(100000, 800000)
    lines = ["$ sudo tcpdump -i lo -nn 'tcp port 8888' -c 8",
             f"15:{t:02d}:07.{us} IP 127.0.0.1.{port} > 127.0.0.1.8888: Flags [S], seq {seq}, win 65495, options "
             f"[mss 65495,sackOK,TS val 1 ecr 0,nop,wscale 7], length 0",
             f"15:{t:02d}:07.{us + 21} IP 127.0.0.1.8888 > 127.0.0.1.{port}: Flags [S.], seq {ack}, ack {seq + 1}, "
             f"win 65483, options [mss 65495,sackOK,TS val 1 ecr 1,nop,wscale 7], length 0",
             f"15:{t:02d}:07.{us + 40} IP 127.0.0.1.{port} > 127.0.0.1.8888: Flags [.], ack 1, win 512, length 0",
             f"15:{t:02d}:07.{us + 233} IP 127.0.0.1.{port} > 127.0.0.1.8888: Flags [P.], seq 1:29, ack 1, win 512, "
             f"length 28",
             f"15:{t:02d}:07.{us + 250} IP 127.0.0.1.8888 > 127.0.0.1.{port}: Flags [.], ack 29, win 512, length 0",
             f"15:{t:02d}:07.{us + 411} IP 127.0.0.1.8888 > 127.0.0.1.{port}: Flags [P.], seq 1:29, ack 29, win 512, "
             f"length 28",
             f"15:{t:02d}:08.{us} IP 127.0.0.1.{port} > 127.0.0.1.8888: Flags [F.], seq 29, ack 29, win 512, length 0",
             f"15:{t:02d}:08.{us + 37} IP 127.0.0.1.8888 > 127.0.0.1.{port}: Flags [F.], seq 29, ack 30, win 512, "
             f"length 0"]
    return "抓一段本地的包看看：", "\n".join(lines)


def b_sysctl(conv):
    r = conv.rng
    return ("先看看当前的内核参数：",
            "$ sysctl net.core.somaxconn net.ipv4.tcp_max_syn_backlog net.ipv4.tcp_tw_reuse "
            "net.ipv4.tcp_congestion_control net.ipv4.ip_local_port_range fs.file-max\n"
            f"net.core.somaxconn = {r.choice([4096, 4096, 128])}\n"
            f"net.ipv4.tcp_max_syn_backlog = {r.choice([512, 1024, 2048])}\n"
            f"net.ipv4.tcp_tw_reuse = {r.choice([2, 1])}\n"
            f"net.ipv4.tcp_congestion_control = {r.choice(['cubic', 'cubic', 'bbr'])}\n"
            "net.ipv4.ip_local_port_range = 32768\t60999\n"
            f"fs.file-max = {r.choice([9223372036854775807, 1048576])}")


def b_bench(conv):
    r = conv.rng
    conns = r.choice([1000, 2000, 3000, 4000])
    p50 = r.uniform(0.4, 3.0)
    p99 = p50 * r.uniform(3, 9)
    return ("跑一轮压测：",
            f"$ ./bench --host 127.0.0.1 --port 8888 --conns {conns} --duration 60s --msg-size 128\n"
            f"connections: {conns} established, {r.randint(0, 12)} failed\n"
            f"messages:    {r.randint(800000, 3000000)} sent, {r.randint(790000, 2990000)} echoed\n"
            f"throughput:  {r.randint(14000, 52000)} msg/s\n"
            f"latency:     p50 {p50:.2f}ms  p90 {p50 * 2.1:.2f}ms  p99 {p99:.2f}ms  max {p99 * 4.2:.2f}ms\n"
            f"errors:      {r.randint(0, 30)} ECONNRESET, {r.randint(0, 5)} timeouts")


def b_gcc(conv):
    r = conv.rng
    line = r.randint(40, 220)
    return ("编译一下看看：",
            "$ make\n"
            "cc -O2 -Wall -Wextra -g -c server/conn.c -o build/conn.o\n"
            f"server/conn.c: In function 'conn_on_readable':\n"
            f"server/conn.c:{line}:17: warning: comparison of integer expressions of different signedness: "
            f"'ssize_t' {{aka 'long int'}} and 'size_t' {{aka 'long unsigned int'}} [-Wsign-compare]\n"
            f"  {line} |         if (n < want) {{\n"
            "      |                 ^\n"
            "cc -O2 -Wall -Wextra -g -o build/tinychat build/main.o build/conn.o build/proto.o build/loop.o")


B_TOPICS = [
    Topic("handshake", [
        ("三次握手为什么是三次，不能两次吗？",
         "握手的目的是让双方都确认“我能发、你能收”，并且交换各自的初始序列号。两次握手时，服务端发出 SYN+ACK 后无法确认客户端是否收到了自己的初始序列号；更重要的是，网络里滞留的旧 SYN 会让服务端建立一个客户端根本不想要的连接。第三次 ACK 就是用来确认服务端的序列号，并让客户端有机会拒绝过期的连接请求。"),
        ("初始序列号为什么要随机？",
         "如果初始序列号可以预测，攻击者就能伪造出序列号正确的报文，注入数据或者重置连接。另外，随机化也能降低旧连接残留的报文被新连接误收的概率。现在的内核用时钟加上对四元组做的密码学哈希来生成初始序列号。"),
        ("四次挥手为什么比握手多一次？",
         "因为 TCP 是全双工的，两个方向要分别关闭。一方发 FIN 只表示“我不再发数据了”，对方可能还有数据没发完，所以先回 ACK，等自己的数据发完再发 FIN。如果对方恰好也没有数据要发，ACK 和 FIN 可以合并，这时就变成了三次。"),
        ("抓包时看到的 Flags [S.] 和 [.] 分别是什么？",
         "tcpdump 用一个字母表示一个标志位：S 是 SYN，F 是 FIN，P 是 PUSH，R 是 RST，点号表示 ACK。所以 [S.] 就是 SYN+ACK，单独一个 [.] 是纯 ACK，[P.] 是带数据并带 ACK 的报文。", b_tcpdump),
        ("SYN 队列和 accept 队列有什么区别？",
         "收到 SYN 以后，连接进入半连接队列（SYN 队列），状态是 SYN_RECV；三次握手完成后，连接被移到全连接队列（accept 队列），等应用调用 accept 取走。listen 的 backlog 参数和 somaxconn 一起决定 accept 队列的上限。队列满了以后，新的握手会被丢弃或者回 RST，客户端看到的就是连接超时。"),
        ("SYN flood 是怎么回事？我的服务器需要防吗？",
         "攻击者发大量 SYN 但从不完成握手，占满半连接队列。Linux 的 SYN cookies 可以在队列满时不保存状态，把信息编码进初始序列号里，等 ACK 回来再验证。毕业设计里不需要专门做防护，但可以在论文里说明 tcp_syncookies 默认开启的原因。"),
    ], extras=[
        "建议你用 Wireshark 打开抓包文件，右键选择“追踪流 → TCP 流”，整个握手、数据传输和挥手的过程会一目了然。",
        "答辩时可以画一张时序图：左边客户端，右边服务端，每个报文标上标志位和序列号，比文字描述清楚得多。",
        "握手过程中双方还会协商 MSS、窗口缩放因子和 SACK 等选项，这些选项只能在 SYN 报文里出现，所以握手阶段抓到的信息特别多。",
    ]),
    Topic("states", [
        ("TIME_WAIT 为什么要等 2MSL？",
         "有两个原因：第一，保证最后一个 ACK 丢失时，对方重传的 FIN 还能得到回应；第二，让这个连接在网络里残留的旧报文全部过期，避免被下一个相同四元组的连接误收。Linux 里 TIME_WAIT 固定是 60 秒。"),
        ("压测之后有几千个 TIME_WAIT，是不是出问题了？",
         "不一定。谁主动关闭连接，谁就进入 TIME_WAIT。压测客户端频繁建连断连，大量 TIME_WAIT 出现在主动关闭的一方是正常现象。只有当它耗尽本地端口、导致新连接建不起来时才需要处理。", b_tw),
        ("CLOSE_WAIT 很多说明什么？",
         "CLOSE_WAIT 表示对方已经关闭，但我们这边还没有调用 close。大量 CLOSE_WAIT 几乎总是应用的 bug：读到 0 字节（对方关闭）以后没有关闭 fd，或者出错路径上漏了 close。它不会自己消失，要在代码里找。"),
        ("tcp_tw_reuse 和 tcp_tw_recycle 有什么区别？",
         "tcp_tw_reuse 允许主动发起连接的一方在时间戳保证安全的前提下复用 TIME_WAIT 状态的端口，只对客户端方向有效。tcp_tw_recycle 在 NAT 环境下会误丢连接，已经在 Linux 4.12 里被删除了，网上的老教程还在推荐它，千万别照搬。"),
        ("为什么服务器最好不要主动关闭连接？",
         "主动关闭的一方要承担 TIME_WAIT。如果服务端主动关闭大量短连接，服务端会积累很多 TIME_WAIT。对于聊天服务器这种长连接场景影响不大，但心跳超时踢人的时候确实是服务端主动关闭，量大时要注意。"),
        ("怎么查看一个连接当前处于什么状态？",
         "用 ss -tan 看所有 TCP 连接及状态，用 ss -s 看汇总。ss 比 netstat 快得多，因为它直接通过 netlink 从内核拿数据。", b_ss),
    ], extras=[
        "可以用 ss -tan state «state» 按状态过滤，配合 wc -l 统计数量，压测时每秒采样一次，画成曲线放进论文。",
        "状态机那张图（RFC 里的 Figure 5）值得自己手画一遍，每条边上标清楚是收到什么报文、发出什么报文。",
        "理解状态机最好的办法是自己写个小程序，故意在不同阶段 kill 掉一方，然后用 ss 和抓包观察另一方的状态变化。",
    ]),
    Topic("window", [
        ("滑动窗口和流量控制是什么关系？",
         "接收方在每个 ACK 里通告自己的接收窗口，也就是接收缓冲区里还剩多少空间。发送方在途的未确认数据不能超过这个窗口，这就是流量控制：防止发送方把接收方淹没。窗口随着数据被确认和应用读取而向前“滑动”。"),
        ("接收窗口变成 0 会怎样？",
         "发送方停止发送数据，并启动持续计时器，定期发送窗口探测报文，询问窗口是否重新打开。如果接收方应用一直不读数据，连接就一直卡在这里。聊天服务器里，一个不读数据的慢客户端会让服务端的发送缓冲区堆满，所以要给每个连接的待发队列设上限。"),
        ("窗口缩放因子是干什么的？",
         "TCP 头部里的窗口字段只有 16 位，最大 65535 字节，在高带宽高延迟的链路上远远不够。窗口缩放选项在握手时协商一个移位值，实际窗口等于字段值左移这么多位，最大可以到 1GB。"),
        ("带宽时延积怎么算？跟缓冲区大小有什么关系？",
         "带宽时延积等于带宽乘以往返时间，表示链路上“装满”需要多少数据。比如 100 Mbit/s、RTT «rtt» 毫秒，就是 100×10^6/8×«rtt»/1000 字节。发送和接收缓冲区至少要有这么大，才能把链路跑满。局域网里 RTT 很小，默认的自动调节完全够用。"),
        ("什么是糊涂窗口综合征？",
         "接收方每次只腾出几个字节就通告窗口，发送方就发几个字节的小报文，头部开销远大于数据本身。解决办法是接收方等窗口够大再通告，发送方用 Nagle 算法攒够数据再发。"),
    ], extras=[
        "在 Wireshark 里可以打开“统计 → TCP 流图形 → 窗口尺度”，直接看到窗口随时间的变化，写论文时很有说服力。",
        "Linux 的接收缓冲区会自动调节（tcp_moderate_rcvbuf），一般不要手动设置 SO_RCVBUF，手动设置反而会关掉自动调节。",
    ]),
    Topic("congestion", [
        ("拥塞控制和流量控制有什么区别？",
         "流量控制保护的是接收方，由接收窗口决定；拥塞控制保护的是网络，由发送方自己维护的拥塞窗口决定。实际能发送的数据量取两者中较小的一个。"),
        ("慢启动为什么叫“慢”，其实增长得很快啊？",
         "名字是相对于最初“一上来就按接收窗口发”的做法而言的。慢启动从一个很小的拥塞窗口开始，每收到一个 ACK 增加一个 MSS，效果上每个 RTT 翻倍，是指数增长。到达慢启动阈值以后转入拥塞避免，每个 RTT 只加一个 MSS。"),
        ("快重传和快恢复是怎么工作的？",
         "收到三个重复 ACK 时，发送方推断某个报文丢了但后续报文还在到达，说明网络没有严重拥塞，于是不等超时立即重传丢失的报文（快重传），并把拥塞窗口减半而不是降到 1（快恢复）。超时重传则说明情况严重，窗口直接降到最小重新慢启动。"),
        ("CUBIC 和 BBR 选哪个？",
         "CUBIC 是 Linux 默认的算法，基于丢包判断拥塞；BBR 通过测量带宽和最小 RTT 建模，在有随机丢包的长距离链路上表现更好。你的项目主要在局域网和同城云服务器之间测试，两者差别不大，可以都测一下作为论文里的一个对比实验。"),
        ("局域网里拥塞控制还有意义吗？",
         "意义不大，因为局域网带宽高、延迟低、几乎不丢包，拥塞窗口很快就会超过需要。但跨公网测试时就不一样了，可以用 tc netem 人为加延迟和丢包，模拟真实网络，看拥塞控制算法怎么反应。"),
    ], extras=[
        "用 ss -ti 可以看到每个连接的 cwnd、ssthresh、rtt 等内部参数，是观察拥塞控制最直接的办法。",
        "可以用 sudo tc qdisc add dev eth0 root netem delay 40ms loss 1% 模拟公网环境，测完记得用 tc qdisc del 删掉。",
    ]),
    Topic("nagle", [
        ("Nagle 算法是什么？聊天服务器要不要关？",
         "Nagle 算法规定：如果还有未确认的小报文在途，新的小数据先攒着，等 ACK 回来或者攒够一个 MSS 再发。它减少了小报文的数量，但会增加延迟。聊天消息小而且对延迟敏感，一般设置 TCP_NODELAY 关掉它。"),
        ("Nagle 和延迟确认放在一起为什么会出问题？",
         "接收方的延迟确认会把 ACK 推迟最多几十毫秒，希望搭上回复数据的顺风车；而发送方的 Nagle 在等这个 ACK 才肯发下一个小报文。两边互相等，就出现了固定的几十毫秒延迟。典型场景是“写-写-读”模式的请求。"),
        ("TCP_NODELAY 和 TCP_CORK 有什么区别？",
         "TCP_NODELAY 是有数据就立即发；TCP_CORK 是塞住，攒够整个报文或者取消 CORK 时才发，适合先写头部再写文件内容的场景。聊天服务器用 TCP_NODELAY，同时在应用层把一次要发的多条消息合并成一次 write，效果最好。"),
    ], extras=[
        "设置方法：int one = 1; setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); 在 accept 之后立即设置。",
        "可以做个对比实验：开关 TCP_NODELAY 各测一次 p99 延迟，差异在小消息场景下非常明显，这是论文里很好的一组数据。",
    ]),
    Topic("framing", [
        ("什么是粘包？TCP 为什么会粘包？",
         "TCP 是字节流协议，没有消息边界的概念。发送方两次 write 的数据可能被合并成一个报文，一次 write 也可能被拆成多个报文，接收方一次 read 读到的可能是半条消息或者一条半消息。所谓粘包其实是应用层没有定义消息边界造成的。"),
        ("应用层协议该怎么设计消息边界？",
         "最常用的是长度前缀：每条消息前面放一个固定长度的头部，里面有消息体长度。接收方先读够头部，再按长度读够消息体。另一种是分隔符（比如换行），实现简单，但消息体里不能出现分隔符，需要转义。"),
        ("能给我一个长度前缀协议的头部设计吗？",
         "```c\n/* 8-byte header, network byte order */\nstruct msg_header {\n    uint16_t magic;    /* 0x7C7C, sanity check */\n    uint8_t  version;  /* protocol version */\n    uint8_t  type;     /* LOGIN, TEXT, HEARTBEAT, ... */\n    uint32_t length;   /* body length in bytes */\n};\n```\n魔数用来尽早发现错位的数据，版本号方便以后升级协议，长度字段一定要设上限，防止恶意客户端声明一个超大的长度把内存耗尽。"),
        ("接收缓冲区怎么管理比较好？",
         "每个连接一个可增长的输入缓冲区：可读事件到来就尽量读到缓冲区末尾，然后循环解析：头部不够就等，消息体不够就等，够了就取出一条完整消息处理，并把剩余数据前移或者用读写指针记录位置。不要假设一次 read 正好是一条消息。"),
        ("字节序要怎么处理？",
         "头部里的多字节整数统一用网络字节序（大端），发送前用 htons/htonl 转换，接收后用 ntohs/ntohl 转回。x86 是小端，如果不转换，自己和自己通信不会出错，一和别的实现对接就出问题。"),
    ], extras=[
        "建议给协议解析单独写单元测试：把一条消息拆成任意长度的片段逐个喂给解析器，验证结果都一样。这种测试能抓到大部分边界 bug。",
        "消息体可以先用简单的 JSON，方便调试；压测时如果解析成了瓶颈，再换成二进制格式，论文里也能多一组对比数据。",
    ]),
    Topic("epoll", [
        ("epoll 的 LT 和 ET 模式有什么区别？",
         "LT（水平触发）只要 fd 可读，每次 epoll_wait 都会通知；ET（边缘触发）只在状态变化时通知一次，所以收到通知后必须循环读到 EAGAIN 为止，否则剩下的数据不会再触发事件。ET 减少了重复通知，但代码更容易写错。"),
        ("为什么 epoll 配合非阻塞 socket 使用？",
         "事件循环是单线程处理所有连接的，任何一次阻塞调用都会卡住所有连接。而且就算 epoll 报告可读，实际 read 时数据也可能已经被别的线程读走或者是伪唤醒，阻塞 fd 会在这里卡死。所以 fd 一律设置 O_NONBLOCK。"),
        ("事件循环的主体大概长什么样？",
         "```c\nfor (;;) {\n    int n = epoll_wait(ep, events, MAX_EVENTS, timeout_ms);\n    for (int i = 0; i < n; i++) {\n        struct conn *c = events[i].data.ptr;\n        if (events[i].events & (EPOLLERR | EPOLLHUP)) { conn_close(c); continue; }\n        if (events[i].events & EPOLLIN)  conn_on_readable(c);\n        if (events[i].events & EPOLLOUT) conn_on_writable(c);\n    }\n    timers_run_expired(now_ms());\n}\n```\n定时器（心跳超时）放在每轮循环的末尾处理，epoll_wait 的超时设为最近一个定时器的到期时间。"),
        ("可写事件（EPOLLOUT）什么时候注册？",
         "只在发送缓冲区写满、write 返回 EAGAIN 时才注册 EPOLLOUT；等可写事件到来、把待发数据写完以后立即取消注册。如果一直注册着，LT 模式下几乎每轮都会被唤醒，CPU 会空转。"),
        ("多核怎么利用？一个 epoll 够吗？",
         "常见做法是每个 CPU 核心一个线程、一个 epoll 实例，用 SO_REUSEPORT 让内核把新连接分散到各个线程的监听 socket 上。这样线程之间几乎不用加锁。聊天服务器里跨线程转发消息时，需要一个线程间的消息队列加 eventfd 唤醒。"),
        ("惊群问题是什么？",
         "多个线程等在同一个监听 socket 上，一个新连接到来把所有线程都唤醒，只有一个能 accept 成功，其余白忙一场。EPOLLEXCLUSIVE 标志或者 SO_REUSEPORT 都能解决这个问题。"),
        ("编译有个警告，要紧吗？",
         "这个有符号和无符号比较的警告要修：read 返回 -1 时，和 size_t 比较会被转换成一个很大的无符号数，判断结果就错了。先判断 n < 0 处理错误，再把 n 转成 size_t 比较。", b_gcc),
    ], extras=[
        "accept 也要循环调用直到 EAGAIN，尤其在 ET 模式下，一次事件可能对应多个已完成握手的连接。",
        "用 accept4(fd, ..., SOCK_NONBLOCK | SOCK_CLOEXEC) 可以一步把新连接设成非阻塞，省一次 fcntl 系统调用。",
        "每个连接的结构体指针放进 epoll_event.data.ptr，事件到来时直接拿到连接对象，不用再查表。",
    ]),
    Topic("tuning", [
        ("要支撑几千个连接，内核参数需要改哪些？",
         "主要是三类：文件描述符上限（ulimit -n 和 fs.file-max）、监听队列（net.core.somaxconn 和 tcp_max_syn_backlog）、以及压测客户端一侧的本地端口范围（ip_local_port_range）。«conns» 个连接对现代 Linux 来说不算多，默认值大多已经够用，重点是 ulimit。", b_sysctl),
        ("ulimit -n 怎么永久修改？",
         "用 systemd 启动服务的话，在 service 文件里写 LimitNOFILE=65535 最可靠；交互式 shell 里的 ulimit 只对当前会话有效。/etc/security/limits.conf 只对通过 PAM 登录的会话生效，对 systemd 服务不起作用，这是常见的坑。"),
        ("每个连接会占用多少内存？",
         "内核里每个 TCP socket 本身大约几 KB，另外还有收发缓冲区，默认随流量自动调节，空闲连接占得很少。应用层的连接结构体加上输入输出缓冲区，按每个连接 8 KB 估算，一万个连接也就 80 MB 左右。"),
        ("somaxconn 设多大合适？",
         "它限制的是 accept 队列长度。应用 accept 得足够快的话，队列几乎总是空的；只有突发大量连接时才需要大一些。设成 4096 足够了，listen 时 backlog 参数也传一个同样大的值，两者取较小的。"),
    ], extras=[
        "调参要有依据：每改一个参数，就跑一次同样的压测，记录前后对比。论文里“参数调优”那一节最怕的是只列参数不给数据。",
        "改参数之前先用 sysctl -a > before.txt 备份一份当前值，出了问题可以对照着恢复。",
    ]),
    Topic("bench", [
        ("压测客户端自己写还是用现成工具？",
         "建议自己写一个简单的：现成的 HTTP 压测工具不懂你的协议。自己写的客户端可以精确控制连接数、发送速率，并在每条消息里带上发送时间戳，服务端回显以后计算往返延迟，统计 p50/p99。"),
        ("延迟的 p99 怎么统计比较准确？",
         "每条消息记录一个延迟样本，最后排序取分位数；样本多的话用 HdrHistogram 这类直方图结构节省内存。注意不要只算平均值，平均值会掩盖长尾。另外压测客户端本身不能成为瓶颈，它的 CPU 占用要留意。"),
        ("帮我看看这轮压测结果怎么样？",
         "吞吐和 p50 都不错，p99 相对 p50 放大了好几倍，说明有长尾。常见原因是某些轮次事件循环处理的事件太多，或者有连接的发送缓冲区满了在等待。可以在服务端记录每轮 epoll_wait 返回后处理耗时的分布来定位。", b_bench),
        ("压测机和服务器放在同一台机器上可以吗？",
         "功能测试可以，性能测试最好分开。同机测试时客户端和服务端抢 CPU，而且走的是回环接口，没有真实网卡和交换机，测出来的延迟偏乐观。实验室的几台迷你主机正好用来做压测客户端。"),
        ("连接数上去以后出现很多 ECONNRESET，是什么原因？",
         "常见原因有三个：accept 队列满了（看 netstat -s 里的 listen overflows 计数）、服务端主动关闭时接收缓冲区里还有未读数据（内核会发 RST 而不是 FIN）、或者客户端本地端口用完了。先看 listen overflows 这个计数有没有增长。"),
    ], extras=[
        "每次压测记下：代码版本、内核参数、连接数、消息大小、持续时间和结果，整理成一张表，论文的实验部分直接就能用。",
        "压测时同时用 top -H 看服务端各线程的 CPU 占用，如果某个线程一直 100%，说明负载没有均衡开。",
    ]),
    Topic("keepalive", [
        ("TCP 自带的 keepalive 够用吗，还要不要自己做心跳？",
         "TCP keepalive 默认两小时才开始探测，太慢了；而且它只能说明对方内核还活着，不能说明应用没卡死。聊天服务器一般在应用层做心跳：客户端每 30 秒发一个心跳消息，服务端 90 秒没收到任何数据就断开。"),
        ("服务端怎么高效管理几千个连接的超时？",
         "不要给每个连接开一个定时器线程。常见做法是时间轮或者最小堆：每次收到数据就更新连接的最后活跃时间，事件循环每轮检查最早到期的那些连接。简单起见，也可以每秒遍历一次所有连接，几千个连接的开销可以忽略。"),
        ("客户端断网（比如拔网线）服务端能马上知道吗？",
         "不能。拔网线不会发送任何报文，服务端的连接会一直停在 ESTABLISHED，直到它尝试发送数据并重传超时，或者心跳超时。这正是应用层心跳存在的意义。"),
    ], extras=[
        "心跳间隔要考虑移动网络下 NAT 映射的超时时间，有些运营商的 NAT 几分钟没有流量就会回收映射。",
    ]),
    Topic("plan", [
        ("整个项目按周怎么安排比较好？",
         "大致分四段：前几周学原理、写最小可运行的回显服务器；然后实现协议、登录和消息转发；接着做压测和调优，这是论文的核心数据来源；最后几周留给写论文和准备答辩。每段结束时留出缓冲时间。"),
        ("论文的章节怎么安排？",
         "第一章绪论（背景和意义）、第二章相关技术（TCP 原理、IO 多路复用）、第三章系统设计（架构、协议、模块）、第四章实现、第五章测试与分析（压测数据和调优对比）、第六章总结与展望。第五章的分量最重，数据要充分。"),
        ("设备清单你觉得买哪些？",
         "一台千兆交换机、三到四台迷你主机做压测客户端、网线若干，再留一点钱买一个 USB 网卡备用。千兆网络足够测出几千连接下的延迟表现，没必要上万兆。买之前把报价单发给导师确认。"),
        ("中期检查需要准备什么？",
         "一个能跑的演示：多个客户端登录、互发消息；一份初步的压测数据；以及剩余工作的计划。老师最想看到的是核心功能已经跑通，而不是 PPT 做得漂亮。"),
        ("进度有点落后了，怎么办？",
         "先砍功能，不要砍测试：群聊、离线消息这些可以放到“展望”里，核心的单聊转发加上完整的压测数据更重要。把落后的原因和调整后的计划主动告诉导师。"),
    ], extras=[
        "每周写一段进度记录，答辩前整理论文时会省很多事，也方便和导师沟通。",
        "代码从第一天起就用 git 管理，每个实验对应一个 tag，论文里引用数据时可以写清楚是哪个版本测的。",
    ]),
]


def build_tcp_zh():
    c = Conv("tcp_learning_zh", 9293, B_SLOTS)
    c.fact("budget", "number", "不超过 3 万元", note="实验设备预算上限")
    c.fact("cloud", "number", "200 元", note="云服务器每月费用上限")
    c.fact("conns", "number", "5000 个并发连接", note="至少")
    c.fact("latency", "number", "50 毫秒", note="P99 消息转发延迟上限")
    c.fact("defense", "correction", "2026-06-16", superseded="2026-06-30", note="答辩日期提前")
    c.fact("midterm", "date", "2026-04-10", note="中期检查")
    c.fact("ubuntu", "version", "Ubuntu 24.04")
    c.fact("wireshark", "version", "Wireshark 4.2.5")
    c.fact("loop", "path", "server/epoll_loop.c")
    c.fact("sysctl", "path", "/etc/sysctl.d/99-tcp.conf")
    c.fact("rfc", "url", "https://datatracker.ietf.org/doc/html/rfc9293")
    c.fact("repo", "url", "https://git.example.edu.cn/netlab/tinychat")
    c.fact("project-id", "identifier", "NET-2026-017")
    c.fact("port", "identifier", "9527", note="正式环境监听端口")
    c.fact("no-redis", "constraint", "不要使用 Redis")
    c.fact("no-libs", "constraint", "不能用第三方网络库")
    c.fact("q-ipv6", "question", "是否需要支持 IPv6", status="open")
    c.fact("pref-theory", "preference", "先讲原理再给代码")
    c.fact("pref-comments", "preference", "代码注释用英文")

    c.user("你好！我是大四学生，正在准备毕业设计，题目是《基于 epoll 的高并发即时通信服务器的设计与实现》，"
           "课题编号 NET-2026-017。我想一边系统地学习 TCP，一边把项目规划好。先说几个硬性条件：\n\n"
           "1. 实验室给的设备预算不超过 3 万元（买交换机和几台迷你主机做压测）；\n"
           "2. 另外要租一台云服务器做公网测试，每月费用不超过 200 元；\n"
           "3. 服务器要能支撑至少 5000 个并发连接，消息转发的 P99 延迟要低于 50 毫秒；\n"
           "4. 答辩时间是 2026-06-30，中期检查在 2026-04-10。")
    c.assistant("你好！这个题目很适合把 TCP 原理和工程实践结合起来。我建议按“原理 → 最小原型 → 协议与功能 → "
                "压测调优 → 论文”的顺序推进。在开始之前想确认几件事：导师对实现方式有没有限制？开发和测试用什么"
                "系统？有没有已经建好的代码仓库？")
    c.user("导师有两条要求：不能用第三方网络库（libevent、libuv、Boost.Asio 都不行），必须自己用 epoll 写事件循环；"
           "存储方面不要使用 Redis，实验室的服务器上不让装，用 SQLite 或者直接写文件。开发环境是 Ubuntu 24.04，"
           "抓包用 Wireshark 4.2.5。")
    c.assistant("明白。自己写事件循环正好是这个课题的价值所在，论文里也更有东西可写。存储只需要保存用户信息和"
                "离线消息，SQLite 完全够用。")
    c.user("项目仓库在 https://git.example.edu.cn/netlab/tinychat ，事件循环的代码放在 server/epoll_loop.c，"
           "内核参数我打算统一写在 /etc/sysctl.d/99-tcp.conf 里。我正在读 TCP 的 RFC："
           "https://datatracker.ietf.org/doc/html/rfc9293 。服务器正式环境监听端口 9527，本地调试用 8888。")
    c.assistant("很好，RFC 9293 是 2022 年整合后的 TCP 规范，比零散地读旧 RFC 清楚得多。内核参数集中放在一个文件里"
                "也方便在论文里说明每一项改动。")
    c.user("另外说一下我的习惯：请先讲原理再给代码；代码注释用英文，讲解用中文。还有一个问题没定：是否需要支持 IPv6，"
           "我问了导师，他还没回复。")
    c.assistant("好的，之后都按这个方式来。那个问题在导师回复之前先挂着，设计时把地址相关的代码封装在一处，"
                "以后要加也方便。我们先从三次握手开始吧。")

    def correct(conv):
        i = conv.user("更正一下：学院通知答辩时间提前了，改到 2026-06-16。原来说的 6 月底那个日期作废了，后面的计划都按新日期排。")
        conv.correction_turns["defense"] = i
        conv.assistant("收到，答辩改为 2026-06-16，比原计划早了两周。建议把压测和调优的时间保持不变，"
                       "压缩的是论文润色的时间，所以论文初稿要比原计划提前开始写。")

    body(c, B_TOPICS, B_STYLE, exchanges=128, correction_at=62, correct=correct, max_extras=2)
    c.user("今天学到很多，谢谢！我先把这些整理到笔记里。")
    c.assistant("不客气！整理笔记的时候注意把实验数据和结论对应起来，写论文时会轻松很多。")
    return c


# == (d) mixed English/中文: negotiating a product spec with a vendor ==============================

D_SLOTS = {
    "vendor_pm": ["Ethan", "Chloe", "Marcus"],
    "colleague": ["老周", "Vivian", "法务的 Grace", "财务的小陈", "业务方的 Kevin"],
    "n": lambda r: r.randint(2, 6),
    "days": lambda r: r.choice([3, 5, 7, 10]),
    "pct": lambda r: r.choice([10, 15, 20]),
    "feature": ["积分商城", "签到领积分", "会员等级权益页", "积分明细", "积分过期提醒", "邀请好友得积分"],
}


D_ASKS = [
    ("We'd like to move the UAT phase to after the MVP launch to save time.",
     "不同意。UAT 必须在上线前完成，这是验收的前提。可以接受 UAT 和性能测试并行，但不能挪到上线之后。",
     "We can't move UAT after launch — it is the basis of acceptance. We're open to running UAT in parallel "
     "with performance testing to save time."),
    ("Change requests after sign-off will be billed at our standard day rate.",
     "可以接受按人天计费，但要加两条：每个 CR 先出书面估算、我们确认后才开工；累计 «n» 人天以内的小改动包含在总价里。",
     "Agreed on day-rate billing, with two conditions: every CR gets a written estimate we approve before work "
     "starts, and small changes up to «n» person-days in total are included in the fixed price."),
    ("Source code will be delivered at the end of the warranty period.",
     "不行，源码要在每个里程碑验收时交付到我们的代码仓库，这是付款的条件之一。",
     "Source code needs to be delivered to our repository at every milestone acceptance; it's a condition for "
     "the milestone payment."),
    ("The points engine will be hosted on our multi-tenant cloud.",
     "需要法务确认。我倾向于要求部署在我们自己的云账号里，数据不出我们的账号，否则合规评审过不了。",
     "For compliance reasons we need the points engine deployed in our own cloud account; customer data must "
     "not leave it."),
    ("Push notifications for point expiry can go through the vendor's notification service.",
     "这个直接拒绝，推送只能走我们自己的 push gateway，前面法务已经定了。",
     "Notifications must go through our own push gateway — that's a fixed requirement from our legal team."),
    ("We propose a 30/30/40 payment schedule: signing, design sign-off, launch.",
     "建议改成 20/30/30/20，最后 20% 在上线稳定运行一个月、维保期开始后支付，给我们留一点保障。",
     "We'd propose 20/30/30/20 instead, with the last 20% paid after one month of stable operation in "
     "production."),
    ("Performance testing will be done on our staging environment with synthetic data.",
     "可以用 staging，但测试数据量要接近生产（用户数、积分流水条数），而且测试报告要包含冷启动和接口 p95。",
     "Staging is fine, as long as the data volume is close to production (users, point transactions) and the "
     "report covers cold start and API p95."),
    ("The warranty period is 3 months after launch.",
     "太短。要求 6 个月，而且维保期内的 P1 问题要有明确的响应和修复时限。",
     "We need 6 months of warranty, with defined response and fix times for P1 issues during that period."),
    ("Tier upgrade rules will be hard-coded for the MVP.",
     "可以接受 MVP 写死，但要求规则放在配置里而不是代码里，第二期我们要在运营后台改。",
     "Fine for the MVP, but please keep the tier rules in configuration rather than code — operations will want "
     "to change them in phase 2."),
    ("We will reuse our existing analytics SDK for event tracking.",
     "要先看这个 SDK 采集哪些字段、数据发到哪里。涉及个人信息的话需要过隐私评审，默认不接受。",
     "We need the list of fields the SDK collects and where the data goes before we can agree; anything touching "
     "personal data needs our privacy review."),
]


def d_vendor_email(conv):
    r = conv.rng
    asks = conv.sample("asks", D_ASKS, r.randint(2, 3))
    who = conv.fill("«vendor_pm»")
    q = (f"{who} 发来了新一轮的 comments，帮我看看怎么回：\n\n> Hi, thanks for the review. A few points from our side:\n"
         + "".join(f"> {n}. {a[0]}\n" for n, a in enumerate(asks, 1))
         + f"> Let us know your thoughts.\n> Best, {who}")
    shared = {}
    a = ("逐条看：\n\n" + "\n".join(f"{n}. {conv.fill(a[1], shared)}" for n, a in enumerate(asks, 1))
         + f"\n\n回复草稿：\n\n> Hi {who}, thanks for the quick turnaround.\n"
         + "".join(f"> {n}. {conv.fill(a[2], shared)}\n" for n, a in enumerate(asks, 1))
         + "> Happy to discuss in Thursday's call.\n> Best regards")
    return q, a


D_MINUTES = [
    ("vendor 确认了积分流水表的字段设计", "Vendor confirmed the field design of the points ledger table."),
    ("等级权益页的设计稿下周三给", "Design of the tier benefits page will be delivered next Wednesday."),
    ("双方同意每周四下午例会", "Both sides agreed on a weekly call on Thursday afternoons."),
    ("积分过期逻辑按自然月结算", "Point expiry is settled by calendar month."),
    ("vendor 需要我们提供测试账号和 staging 的访问权限", "Vendor needs test accounts and access to staging."),
    ("风控规则第一期只做单日积分上限", "Phase 1 fraud rules: a daily earning cap only."),
    ("CR-007（签到日历改版）估算 4 人天，待我们确认", "CR-007 (check-in calendar redesign) estimated at 4 "
     "person-days, pending our approval."),
    ("性能测试方案由 vendor 下周提交", "Vendor will submit the performance test plan next week."),
    ("数据迁移：老积分按 1:1 迁移到新系统", "Data migration: legacy points move 1:1 to the new system."),
    ("客服后台的积分调整需要双人审批", "Manual point adjustments in the support console need two-person "
     "approval."),
]


def d_minutes(conv):
    r = conv.rng
    items = conv.sample("minutes", D_MINUTES, r.randint(3, 5))
    q = ("今天会上记了这些，帮我整理成纪要发给 vendor：\n\n" + "\n".join(f"- {i[0]}" for i in items))
    a = ("**Meeting notes / 会议纪要**\n\n" + "\n".join(f"{n}. {i[0]}\n   {i[1]}" for n, i in enumerate(items, 1))
         + "\n\n**Next steps / 下一步**: owners please confirm by Friday. 请各负责人周五前确认。")
    return q, a


def d_quote(conv):
    r = conv.rng
    items = [("需求与设计 Requirements & design", r.randint(40, 70)), ("App 前端 App front end", r.randint(110, 160)),
             ("积分引擎 Points engine", r.randint(90, 140)), ("运营后台 Admin console", r.randint(40, 80)),
             ("测试与验收 QA & UAT", r.randint(40, 70)), ("项目管理 PM", r.randint(20, 40))]
    total = sum(v for _, v in items)
    return ("把 vendor 最新的报价明细贴出来看一下：",
            "Brightloop quotation v" + str(r.randint(2, 5)) + " (单位：千元 / CNY thousands)\n"
            + table(["item", "amount"], items + [("合计 Total", total)]))


D_TOPICS = [
    Topic("rules", [
        ("积分的 earn rules 你觉得 MVP 应该包含哪些？",
         "MVP 建议只做三种：消费得积分（按实付金额）、签到、完善资料。邀请好友这类容易被刷的规则放到第二期，等风控规则准备好再上。Earn rules should be configurable per campaign, but the MVP can ship with these three."),
        ("积分抵扣（burn）规则怎么定？",
         "建议：下单时抵扣，单笔最多抵扣实付金额的 «pct»%，不能和部分优惠券叠加。抵扣比例放在配置里，方便运营调整。退款时按比例退回积分，这一点要在 spec 里写清楚，vendor 经常漏掉。"),
        ("退款的时候积分怎么处理？",
         "两种情况：用积分抵扣过的订单退款，积分按比例退回；订单产生的积分如果还没过冻结期，直接扣回；已经用掉的话，允许积分余额变成负数，下次获得时先抵扣。Spec 里要有这张状态表，否则 vendor 会按最简单的方式实现。"),
        ("积分冻结期要不要做？",
         "建议做，比如确认收货后 «days» 天才解冻，防止下单得积分、马上退款的套利。冻结中的积分在明细里单独显示，用户能看到什么时候可用。"),
        ("积分到期提醒怎么设计？",
         "到期前发一次 push，到期前几天再在 App 内提示一次。提醒的文案和时间点放在配置里。注意推送的通道要求我们已经定了，vendor 只负责调用我们的接口。"),
    ], extras=[
        "所有积分变动都写流水（ledger），余额由流水汇总得出，不要只存一个余额字段。对账、客服查询、纠纷处理都靠流水。",
        "Spec 里每条规则最好配一个具体例子（下单 100 元、用了多少积分、退款后剩多少），vendor 的开发看例子比看描述准确得多。",
    ]),
    Topic("scope", [
        ("«feature» 这个功能 vendor 说要加 «n» 个人天，合理吗？",
         "要看拆分：前端页面、后端接口、运营配置、测试各占多少。让 vendor 按这四项拆开报，通常能发现测试或者联调被重复计算了。如果«feature»能复用现有组件，人天应该明显减少。"),
        ("哪些功能可以砍到第二期？",
         "判断标准是：上线第一个月用户会不会用到、有没有它积分闭环能不能跑通。积分商城、邀请好友、等级权益的 CMS 都可以放到第二期；赚积分、用积分、积分明细和过期提醒必须在 MVP 里。"),
        ("运营后台 MVP 需要哪些功能？",
         "最少四个：用户积分查询、积分手工调整（带审批）、规则配置、基础报表（每日发放和消耗）。其他的报表可以先用数据导出解决，不要让 vendor 在后台报表上花太多人天。"),
        ("业务方又提了一个新需求，要不要加进 MVP？",
         "先问三个问题：不加会不会影响上线、加了会不会影响上线日期、加的成本谁出。如果答案是“不影响、会影响、没人出”，那就放到第二期，并记录在需求池里，让业务方知道它没有被遗忘。"),
    ], extras=[
        "每次范围变更都更新 spec 的版本号和变更记录，vendor 估算时引用的是哪个版本要写清楚。",
        "范围之外的东西写一个“Out of scope / 不在范围内”清单，和范围内的清单一样重要，能避免很多后期争议。",
    ]),
    Topic("migration", [
        ("老系统的积分怎么迁移？",
         "分三步：先在 staging 上用生产数据的脱敏副本做一次全量迁移演练，核对总积分和抽样用户；上线前一天冻结老系统的积分变动；上线当晚做正式迁移，核对无误后再开放新系统。核对规则要提前写好。"),
        ("迁移的时候老积分的有效期怎么算？",
         "建议按老系统里每笔积分的获得时间计算，而不是从迁移日重新开始计算，否则等于给所有老积分延期，财务上会有负债变化。这一点要和财务确认，并写进迁移方案。"),
        ("迁移失败怎么回滚？",
         "老系统在迁移完成并核对通过之前不下线，迁移失败就恢复老系统的写入，新系统不对外开放。回滚的决策人和时间点要提前约定，比如凌晨两点前核对不通过就回滚。"),
    ], extras=[
        "迁移脚本要能重复执行（幂等），演练几次都不会产生重复数据，这样正式迁移前可以放心地多演练。",
    ]),
    Topic("tiers", [
        ("会员等级怎么设计？vendor 提了五级。",
         "五级对 MVP 来说太多了，建议三级：普通、银卡、金卡。等级按过去 12 个月的累计消费计算，每月初重新评定。等级多了权益难设计，运营也维护不过来。"),
        ("降级规则要不要有缓冲期？",
         "要。直接降级用户体验很差，建议降级前提醒一次，给一个月的保级期。这个逻辑 vendor 估算时容易低估，要写进 spec 的验收用例里。"),
        ("等级权益页 vendor 说要做成可配置的 CMS，值得吗？",
         "MVP 不值得。权益页内容变化频率很低，先做成静态配置加图片替换就够了。CMS 放到第二期，省下来的人天可以用来压价。"),
    ], extras=[
        "Tier 计算是批处理任务，要在 spec 里写清楚运行时间、失败重试和对账方式，别只写“每月更新等级”。",
    ]),
    Topic("price", [
        ("vendor 的报价还是偏高，怎么砍？",
         "按模块拆开谈，而不是直接砍总价：哪些功能可以放到第二期，哪些可以复用我们现有的组件（登录、支付、推送），每一项都对应具体的人天。这样 vendor 也好向他们老板交代。", d_quote),
        ("能不能用 fixed price 加 CR 的方式？",
         "可以，这是我们最有利的结构：范围明确的部分 fixed price，范围外的走 CR，CR 先估算后确认。关键是 spec 的范围要写清楚，否则每个模糊的地方都会变成 CR。"),
        (d_vendor_email, None),
        ("vendor 说人天单价不能降，怎么办？",
         "那就谈人天数和范围。比如运营后台用他们现成的模板，测试用例我们 QA 一起写，都能减少人天。单价是他们的底线，人天数才是谈判空间。"),
        ("付款节点怎么设计对我们比较有利？",
         "尾款要和上线后的稳定运行挂钩，每个节点都以验收通过为前提，而不是以时间为前提。源码交付也作为付款条件之一。"),
    ], extras=[
        "谈价格的时候把我们的预算上限留在心里，不要先报出来，让 vendor 先给出按模块的明细。",
        "每一轮报价都存一版，记录变化的原因，最后给老板汇报时可以清楚地说明砍掉了哪些、为什么。",
    ]),
    Topic("milestones", [
        ("里程碑怎么排比较合理？",
         "M1 需求和设计确认，M2 积分引擎和 API 完成，M3 App 端功能完成、进入 UAT，M4 上线。每个里程碑要有明确的交付物和验收标准，而不是“完成开发”这种说法。"),
        ("vendor 说 M3 要推迟一周，影响大吗？",
         "要看推迟的是什么。如果只是 App 端的部分页面，可以让 UAT 先从积分引擎和已完成的页面开始，总上线时间不变。如果影响上线日期，就要启动合同里的延期条款了。"),
        (d_minutes, None),
        ("怎么提前发现 vendor 进度有问题？",
         "每周例会要看可演示的东西，而不是进度百分比。每两周一次 demo，在 staging 上实际操作。连续两周 demo 不出新东西，就是风险信号。"),
    ], extras=[
        "在 Slack 里建一个里程碑看板（pinned message），每周五更新一次状态，绿黄红三色，老板扫一眼就知道情况。",
    ]),
    Topic("acceptance", [
        ("验收标准怎么写才不会扯皮？",
         "每个功能写成 Given/When/Then 格式的用例，附上测试数据；非功能需求（性能、可用性）写明测量方法和环境。验收以用例通过率为准，P1 缺陷为零、P2 缺陷不超过约定数量。"),
        ("UAT 谁来做？",
         "我们的业务方和 QA 一起做，vendor 提供支持。UAT 用例由我们写，vendor 不能自己测自己验收。UAT 期间发现的问题按严重程度分级，约定修复时限。"),
        (d_vendor_email, None),
        ("缺陷的严重程度怎么定义？",
         "P1：核心流程不可用或积分计算错误（钱相关的都是 P1）；P2：功能有问题但有绕过办法；P3：体验和文案问题。积分算错一定是 P1，这一点要写进合同附件。"),
    ], extras=[
        "Acceptance test cases should live next to the spec in the repo, versioned together, so a spec change shows up with its test changes in the same review.",
    ]),
    Topic("privacy", [
        ("个人信息保护这块 spec 要写哪些？",
         "数据最小化（只采集必要字段）、敏感字段加密存储、访问日志、数据保留期限、用户注销后的数据删除。PIPL 合规评审会逐条检查，spec 里最好有一节专门写这些。"),
        ("vendor 的开发能不能访问生产数据？",
         "原则上不能。排查问题用脱敏后的数据；确实需要访问生产时，走临时授权，有审批、有时限、有审计日志。这个要写进合同的安全条款。"),
        (d_minutes, None),
        ("用户注销以后积分数据怎么处理？",
         "个人身份信息要删除或匿名化，积分流水为了财务对账可以保留，但要和个人身份解除关联。保留期限和法务确认后写进 spec。"),
    ], extras=[
        "让 vendor 提供一份数据流图：哪些数据、从哪里来、存在哪里、谁能访问。合规评审时这张图能省很多来回。",
    ]),
    Topic("performance", [
        ("性能指标除了冷启动，还要约定哪些？",
         "积分查询和下单抵扣接口的 p95 响应时间、积分引擎的吞吐（大促时的峰值 QPS）、以及批处理任务（等级计算、过期清理）的完成时间。每个指标都写明测试环境和数据量。"),
        ("大促的时候积分系统扛得住吗？",
         "要 vendor 按去年大促峰值的两倍做压测，重点看下单抵扣接口，因为它在支付链路上。积分引擎挂了不能影响下单：要有降级方案，比如暂时不抵扣积分、事后补发。"),
        ("积分余额的一致性怎么保证？",
         "扣减积分用数据库事务加乐观锁（版本号），流水和余额在同一个事务里写。不要用先查再改的方式，并发下一定会超扣。这个要在设计评审时专门问 vendor。"),
    ], extras=[
        "性能测试报告要包含原始数据和测试脚本，不能只给一个结论截图，否则出了问题没法复现。",
    ]),
    Topic("warranty", [
        ("维保期内的响应时间怎么约定？",
         "P1：30 分钟响应、4 小时内给出临时方案；P2：4 小时响应、3 个工作日修复；P3：下个版本修复。节假日和大促期间 P1 要有人值班，这一点要写明，vendor 经常默认只有工作日支持。"),
        (d_vendor_email, None),
        ("维保期结束以后怎么办？",
         "两个选择：续签维保合同，或者我们团队接手。无论哪种，维保期最后一个月都要安排知识转移：架构讲解、运维手册、常见问题处理，并且要我们的人实际操作过一次发布。"),
        ("可用性的计算口径要写清楚吗？",
         "要写清楚：按月统计，计划内维护不计入但要提前通知，监控以我们这边的拨测为准。没有口径的可用性承诺基本等于没有承诺。"),
    ], extras=[
        "SLA 违约要有对应的服务费扣减，而不只是“尽力修复”，否则这个条款没有约束力。",
    ]),
    Topic("ip", [
        ("知识产权条款要注意什么？",
         "为本项目开发的代码、设计稿和文档，知识产权归我们；vendor 自有的通用组件可以保留所有权，但要给我们永久、不可撤销的使用许可，并列出清单。开源组件要列出许可证，避开 GPL 类的传染性许可证。"),
        ("源码交付要包含什么？",
         "完整源码、构建脚本、依赖清单、部署文档、数据库脚本，以及能在我们环境里从零构建成功的说明。验收时我们自己构建一次，构建不出来就不算交付。"),
    ], extras=[
        "要求 vendor 使用我们的代码仓库开发，而不是最后打包给一份代码，这样历史记录也都在我们手里。",
    ]),
    Topic("comms", [
        (d_minutes, None),
        (d_vendor_email, None),
        ("和 vendor 的沟通节奏怎么定？",
         "每周四例会过进度和风险，每两周一次 demo，日常问题在 Slack 频道里异步沟通，重要决定一定要落到书面（纪要或者邮件），口头说过的不算。"),
        ("vendor 那边换了项目经理，要注意什么？",
         "要求新旧项目经理至少交接一周，交接清单包括未关闭的问题、已确认的 CR 和口头约定。把我们这边的关键决定整理一份发给新 PM 确认。"),
    ], extras=[
        "决定日志（decision log）值得维护：日期、决定、谁拍板、原因。三个月以后谁都记不清当时为什么这么定。",
    ]),
]

D_STYLE = Style(
    leads=["另外，", "还有一个问题：", "Quick one: ", "«colleague»问：", "顺便问一下，"],
    revisits=["之前讨论过的这个再确认一下：", "«colleague»没参加上次讨论，再说一遍：", "Back to an earlier point: ",
              "回到前面的问题："],
    reopeners=["和之前的结论一样：", "结论没变：", "Recap:", "简单回顾一下："],
    openers=["我的建议：", "Short answer:", "分两点说。", "可以，但有条件。", "这个要小心。"],
    closers=["要不要我起草一段发给 vendor 的英文回复？", "这一条建议写进 spec 的验收用例里。",
             "I can add this to the decision log if you want.", "这个最好让«colleague»也确认一下。"],
    followups=[
        ("这样会不会超出我们的预算？", "不会，这些都在上限以内，而且有几项是把 vendor 的工作量转给我们现有组件，反而能省钱。"),
        ("那条红线 vendor 能接受吗？", "他们之前已经口头接受了，关键是写进合同附件，口头的不算。"),
        ("ok 明白", "👍"),
        ("«colleague»觉得我们太强硬了。", "谈判可以在范围和节奏上灵活，但合规和付款保障这两类不能让步。可以在别的地方给 vendor 一些空间，比如 CR 的审批速度。"),
        ("Makes sense, let's go with that.", "Great, I'll reflect it in the next version of the notes."),
        ("这个和上面说的那个冲突吗？", "不冲突。前面定的是原则，这里是具体实现方式，方向是一致的。"),
        ("上线日期还来得及吗？", "按现在的里程碑来得及，前提是设计稿下周能定稿。设计稿是关键路径上的第一个风险。"),
        ("好，先这样。", "好的。"),
    ],
)


def build_spec_mixed():
    c = Conv("product_spec_mixed", 2291, D_SLOTS)
    c.fact("budget", "number", "45 万元", note="total budget cap, tax included")
    c.fact("cold-start", "number", "1.5 秒", note="cold start upper bound")
    c.fact("expiry", "number", "24 months", note="points validity")
    c.fact("penalty", "number", "0.3% per day", note="liquidated damages for late delivery")
    c.fact("sla", "correction", "99.95%", superseded="99.9%", note="availability SLA, renegotiated")
    c.fact("launch", "date", "2026-05-20", note="MVP launch")
    c.fact("rn", "version", "React Native 0.74")
    c.fact("android", "version", "API 29", note="minimum Android level")
    c.fact("spec", "path", "docs/spec/loyalty-v2.md")
    c.fact("openapi", "path", "api/openapi/points.yaml")
    c.fact("confluence", "url", "https://confluence.example.cn/display/PROD/Loyalty+v2")
    c.fact("prd", "identifier", "PRD-2291")
    c.fact("channel", "identifier", "#loyalty-vendor")
    c.fact("no-plain-phone", "constraint", "do not store phone numbers in plain text")
    c.fact("no-push-sdk", "constraint", "不要使用第三方推送 SDK")
    c.fact("q-transfer", "question", "是否支持积分转赠", status="open")
    c.fact("q-sms", "question", "who pays for the SMS gateway", status="open")
    c.fact("pref-bilingual", "preference", "中英双语")

    c.user("Hi，我在跟外包 vendor Brightloop 谈会员积分系统（Loyalty v2）的 spec，需要你帮我一起过。先说背景：\n\n"
           "- PRD 编号 PRD-2291，和 vendor 的沟通都在 Slack 频道 #loyalty-vendor；\n"
           "- 总预算上限 45 万元（含税），vendor 第一版报价 52 万，要谈下来；\n"
           "- MVP 上线日期 2026-05-20，不能晚；\n"
           "- 技术栈 vendor 提的是 React Native 0.74，最低支持 Android 10（API 29）和 iOS 15。")
    c.assistant("好的。报价和预算之间差了 7 万，先别急着砍总价，建议先拿到按模块拆分的报价明细，再逐项谈范围。"
                "另外想了解一下：对 vendor 的服务水平和性能有什么硬性要求？法务或安全那边有没有红线？")
    c.user("Vendor 的 SLA 提议是服务可用性 99.9%，P1 故障 2 小时响应。我们这边的要求：App 冷启动不超过 1.5 秒；"
           "积分有效期 24 months，到期前要提醒；如果延期交付，liquidated damages 按 0.3% per day 计算，上限是合同总价的 10%。")
    c.assistant("这几条都很具体，很好。冷启动的测量方法（什么机型、什么网络、从点击图标到首页可交互）要写进 spec，"
                "否则验收时会有争议。违约金条款 vendor 一般会要求对等条款，比如我们延迟提供接口或测试环境时也要顺延。")
    c.user("还有两条红线，法务和安全定的：do not store phone numbers in plain text（必须加密或者做哈希）；"
           "不要使用第三方推送 SDK，推送统一走我们自己的 push gateway。Spec 文档在 docs/spec/loyalty-v2.md，"
           "API 定义在 api/openapi/points.yaml，Confluence 页面是 https://confluence.example.cn/display/PROD/Loyalty+v2 。")
    c.assistant("明白。这两条建议在 spec 里单独列一节“强制要求 / Mandatory requirements”，并在合同附件里引用，"
                "这样它们就是验收条件，而不是建议。")
    c.user("我的偏好：会议纪要请用中英双语写，vendor 那边有不懂中文的同事。还有两个 open questions 没定："
           "一是是否支持积分转赠（业务方还在争论）；二是 who pays for the SMS gateway，验证码短信的费用 vendor 说不包含在报价里。")
    c.assistant("好的，纪要按这个格式来。两个问题先记为待定：第一个影响积分引擎的设计（转赠需要防刷和审计），"
                "建议尽早定；第二个金额不大，但要在合同里写清楚，避免上线后扯皮。")

    def correct(conv):
        i = conv.user("Update：经过这轮谈判，vendor 同意把可用性 SLA 从 99.9% 提高到 99.95%，价格不变。"
                      "之后所有文档和纪要都以新的数字为准。")
        conv.correction_turns["sla"] = i
        conv.assistant("太好了。Availability SLA is now 99.95%. 记得同步更新 spec 的非功能需求章节和合同附件，"
                       "并确认计算口径（按月统计、计划内维护是否计入）。")

    body(c, D_TOPICS, D_STYLE, exchanges=152, correction_at=74, correct=correct, max_extras=2)
    c.user("今天先到这里，谢谢！明天和 vendor 开会。")
    c.assistant("好的，祝谈判顺利。会后把要点发给我，我来整理纪要。")
    return c


BUILDERS = [build_pipeline_en, build_tcp_zh, build_incident_en, build_spec_mixed]

if __name__ == "__main__":
    sys.exit(main())
