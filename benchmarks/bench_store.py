#!/usr/bin/env python3
"""Time the conversation store as whole `ctxd` processes, on a small and a large history.

    python3 benchmarks/bench_store.py [--runs N] [--warmup N] [--import-mb 100] [--no-hyperfine]

Two trusted projects (a directory with a pyproject.toml, `ctxd allow`ed, in an
isolated HOME/XDG under a temp dir) get stores of 1,000 and 100,000 messages,
built directly with Store.add_many (varied sizes, some offloaded outputs).
Facts, which the context engine extracts from every message: the 1k store's
are extracted for real; the 100k store gets copies of those rows for its first
98,000 messages and real extraction for the newest 2,000 (--real-facts: all
of them, slow). `ctxd show --json` must agree on where each context dir is.

  chat add                  `ctxd chat add TEXT`: store one message, re-render
                            context.md (from the recent messages, facts, summary);
                            the cached summary removed first, as when the turn
                            moves the start of the recent window
  SessionStart (new turns)  `ctxd chat hook claude`, a SessionStart payload on
                            stdin (session_id, transcript_path, cwd,
                            hook_event_name, source); the cached summary for
                            its budget removed first, as after new turns
  SessionStart (repeat)     the same with nothing changed since the last one

hyperfine (--shell=sh, each command `cd PROJECT && exec ctxd ...`, so the
shell's spawn time is subtracted; --export-json) when installed, else a
subprocess loop. Target: median(100k) / median(1k) <= 2x. An in-process
breakdown of what reads the store (count, recent, render) follows; when a
ratio misses, both stores are profiled with cProfile.

Then `ctxd chat import FILE --format claude` of a generated ~100 MB Claude Code
transcript into a third, empty project: wall time, MB/s, messages/s and the
child's peak RSS (os.wait4, via a small helper process), target <= 150 MB; and
the re-import of the same file, which must add 0. A script, never run as a test.
"""

import argparse
import base64
import json
import math
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import REPO, isolated_env, read_hyperfine, use_ctxd_source  # noqa: E402

use_ctxd_source()  # must win before ctxd is first imported

RATIO_TARGET = 2.0
RSS_TARGET_MB = 150
SIZES = ((1_000, "1k"), (100_000, "100k"))
BUILD_BATCH = 2_000
SESSION_LEN = 200  # messages per session in the built stores
REAL_FACTS = 2_000  # newest messages of the 100k store whose facts the engine extracts for real
ADD_TEXT = "Benchmark note: the migration ran; 3 tables changed, the FTS index was rebuilt."


# -- text that looks like a coding conversation -----------------------------------

WORDS = ("the a to of and in is it that for on with as this file function test error value return config "
         "build module import class self data path run check list dict string update install python rust "
         "cargo npm package version commit branch merge pull request review refactor cache store query index "
         "sqlite message session context project user assistant tool output result because when then before "
         "after should could would will must never always maybe fix bug issue parser token stream batch "
         "timeout retry lock thread async await schema migration column table row offset").split()
CHINESE = ("我们需要先检查配置文件是否正确。", "这个函数返回一个列表，其中包含所有消息。",
           "请帮我修复这个测试失败的问题。", "数据库索引可以加快查询速度。", "上下文窗口只包含最近的对话。",
           "导入大文件时内存占用不应该超过限制。")
CODE = ("def {w}(self, {v}):\n    return {v}.{w}()\n",
        "    if not {v}:\n        raise ValueError('{w} is empty')\n",
        "for {v} in {w}_items:\n    print({v}, file=sys.stderr)\n",
        "let {v} = {w}.iter().map(|x| x + 1).collect::<Vec<_>>();\n",
        "  File \"/src/app/{w}.py\", line 42, in {v}\n",
        "src/{w}/{v}.py:17:89: E501 line too long (93 > 88 characters)\n",
        "-rw-r--r-- 1 dev dev  4096 Mar  3 12:00 {w}_{v}.txt\n",
        "PASSED tests/test_{w}.py::test_{v}\n",
        "FAILED tests/test_{w}.py::test_{v} - AssertionError: assert 1 == 2\n",
        "2026-03-01 12:00:07,112 INFO {w}.{v}: processed 512 rows in 0.41s\n")


def make_corpus(rng, size):
    """~*size* characters of prose, code, logs and some Chinese, to slice messages from."""
    out, n = [], 0
    while n < size:
        r = rng.random()
        if r < 0.04:
            s = rng.choice(CHINESE)
        elif r < 0.35:
            s = rng.choice(CODE).format(w=rng.choice(WORDS), v=rng.choice(WORDS))
        else:
            s = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 20))).capitalize() + ". "
            if rng.random() < 0.15:
                s += "\n\n"
        out.append(s)
        n += len(s)
    return "".join(out)


class Text:
    def __init__(self, rng, corpus_chars=4_000_000):
        self.rng = rng
        self.corpus = make_corpus(rng, corpus_chars)

    def take(self, n):
        """*n* characters from a random place of the corpus."""
        n = min(n, len(self.corpus) - 1)
        i = self.rng.randrange(0, len(self.corpus) - n)
        return self.corpus[i:i + n]

    def big(self, n):
        """*n* characters for a huge output (longer than the corpus: repeated slices)."""
        parts, left = [], n
        while left > 0:
            k = min(left, 500_000)
            parts.append(self.take(k))
            left -= k
        return "".join(parts)

    def size(self, median, sigma, lo, hi):
        return int(min(hi, max(lo, median * math.exp(self.rng.gauss(0, sigma)))))


def store_messages(text, count, t0):
    """Messages for Store.add_many: prompts, replies, tool calls, tool outputs (2% of those huge)."""
    rng = text.rng
    session = ""
    for i in range(count):
        if i % SESSION_LEN == 0:
            session = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        r = rng.random()
        if r < 0.20:
            role, body = "user", text.take(text.size(150, 1.0, 5, 4_000))
            if rng.random() < 0.05:
                body = rng.choice(CHINESE) + body
        elif r < 0.55:
            role, body = "assistant", text.take(text.size(600, 0.9, 20, 7_000))
        elif r < 0.70:
            cmd = text.take(text.size(120, 0.6, 20, 1_200)).replace('"', "'")
            role, body = "assistant", f'[tool_use Bash] {{"command": "{cmd}", "description": "run it"}}'
        else:
            role = "tool"
            body = text.take(text.size(700, 1.1, 10, 8_000)) if rng.random() > 0.02 else \
                text.big(rng.randint(10_000, 150_000))
        yield dict(role=role, content=f"[{i}] {body}", session=session, source="claude", ts=t0 + i * 20,
                   dedup=f"bench:{session}:{i}")


# -- the Claude Code transcript ------------------------------------------------------

class Transcript:
    """Lines as Claude Code writes them (see /work/shared/AI-CLI-FORMATS.md)."""

    TOOLS = ("Bash", "Read", "Edit", "Grep", "Write", "Glob")

    def __init__(self, text, cwd, t0):
        self.text = text
        self.rng = text.rng
        self.cwd = cwd
        self.session = self.uuid()
        self.parent = None
        self.t = t0
        self.counts = {"lines": 0, "prompts": 0, "texts": 0, "tool_uses": 0, "tool_results": 0,
                       "huge": 0, "skipped": 0, "chinese": 0}

    def uuid(self):
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _id(self, prefix, n=24):
        return prefix + base64.b32encode(self.rng.getrandbits(8 * 15).to_bytes(15, "big")).decode()[:n]

    def _base(self, kind, **extra):
        self.t += self.rng.uniform(0.2, 20)
        u = self.uuid()
        obj = {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": self.cwd,
               "sessionId": self.session, "version": "2.0.31", "gitBranch": "main", "type": kind}
        obj.update(extra)
        obj["uuid"] = u
        obj["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.t)) + \
            f".{int(self.t * 1000) % 1000:03d}Z"
        self.parent = u
        return obj

    def _line(self, obj):
        self.counts["lines"] += 1
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"

    def _assistant(self, block, msg_id):
        usage = {"input_tokens": self.rng.randint(1, 9), "cache_creation_input_tokens": self.rng.randint(0, 4000),
                 "cache_read_input_tokens": self.rng.randint(10_000, 90_000),
                 "output_tokens": self.rng.randint(5, 900), "service_tier": "standard"}
        msg = {"model": "claude-sonnet-4-5-20250929", "id": msg_id, "type": "message", "role": "assistant",
               "content": [block], "stop_reason": None, "stop_sequence": None, "usage": usage}
        return self._line(self._base("assistant", message=msg, requestId=self._id("req_011C")))

    def _tool_input(self, name):
        t, rng = self.text, self.rng
        path = f"{self.cwd}/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
        if name == "Bash":
            return {"command": t.take(t.size(80, 0.6, 10, 600)).replace("\n", " "),
                    "description": "Run the check"}
        if name == "Read":
            return {"file_path": path}
        if name == "Edit":
            return {"file_path": path, "old_string": t.take(t.size(200, 0.8, 10, 3000)),
                    "new_string": t.take(t.size(220, 0.8, 10, 3000))}
        if name == "Write":
            return {"file_path": path, "content": t.take(t.size(1500, 0.8, 50, 20_000))}
        if name == "Grep":
            return {"pattern": rng.choice(WORDS), "path": self.cwd, "output_mode": "content"}
        return {"pattern": f"**/*{rng.choice(WORDS)}*.py"}

    def _tool_output(self, name):
        t, rng = self.text, self.rng
        if rng.random() < 0.03:  # a huge one: a whole log, a big file (offloaded by the store)
            self.counts["huge"] += 1
            return t.big(rng.randint(20_000, 250_000))
        if name in ("Edit", "Write"):
            return f"The file {self._tool_input('Read')['file_path']} has been updated successfully."
        if name == "Read":
            lines = t.take(t.size(3000, 1.0, 50, 40_000)).split("\n")
            return "\n".join(f"{i + 1:>6}\u2192{line}" for i, line in enumerate(lines))
        out = t.take(t.size(1200, 1.2, 5, 30_000))
        if rng.random() < 0.002:
            out += "\nexport OPENAI_API_KEY=sk-proj-" + self._id("", 40) + "\n"  # the redactor's business
        return out

    def turn(self):
        """The lines of one turn: a prompt, maybe thinking, tool calls and their results, a reply."""
        rng, t, out = self.rng, self.text, []
        if rng.random() < 0.02:
            snap = self.uuid()
            out.append(self._line({"type": "file-history-snapshot", "messageId": snap, "snapshot": {
                "messageId": snap, "trackedFileBackups": {}, "timestamp": "2026-03-01T12:00:00.000Z"},
                "isSnapshotUpdate": False}))
            self.counts["skipped"] += 1
        if rng.random() < 0.03:
            out.append(self._line(self._base("user", isMeta=True, message={"role": "user", "content": (
                "Caveat: The messages below were generated by the user while running local commands. "
                "DO NOT respond to these messages or otherwise consider them in your response unless the "
                "user explicitly asks you to.")})))
            self.counts["skipped"] += 1
        prompt = t.take(t.size(200, 1.0, 5, 6_000))
        if rng.random() < 0.06:
            prompt = rng.choice(CHINESE) + rng.choice(CHINESE) + " " + prompt
            self.counts["chinese"] += 1
        content = prompt if rng.random() < 0.8 else [{"type": "text", "text": prompt}]
        out.append(self._line(self._base("user", message={"role": "user", "content": content})))
        self.counts["prompts"] += 1
        msg_id = self._id("msg_01")
        if rng.random() < 0.35:
            out.append(self._assistant({"type": "thinking", "thinking": t.take(t.size(600, 0.8, 20, 6_000)),
                                        "signature": self._id("", 400)}, msg_id))
            self.counts["skipped"] += 1
        for _ in range(rng.choice((0, 1, 1, 2, 2, 3, 4, 6))):
            if rng.random() < 0.5:
                out.append(self._assistant({"type": "text", "text": t.take(t.size(250, 0.8, 10, 3_000))},
                                           msg_id))
                self.counts["texts"] += 1
            name = rng.choice(self.TOOLS)
            tid = self._id("toolu_01")
            out.append(self._assistant({"type": "tool_use", "id": tid, "name": name,
                                        "input": self._tool_input(name)}, msg_id))
            self.counts["tool_uses"] += 1
            result = self._tool_output(name)
            err = rng.random() < 0.03
            block = {"tool_use_id": tid, "type": "tool_result", "content": result}
            if err:
                block["is_error"] = True
            extra = {"stdout": result, "stderr": "", "interrupted": False, "isImage": False} \
                if name == "Bash" else {"type": "text", "file": {"filePath": "x", "numLines": result.count("\n")}}
            out.append(self._line(self._base("user", message={"role": "user", "content": [block]},
                                             toolUseResult=extra)))
            self.counts["tool_results"] += 1
            msg_id = self._id("msg_01")
        reply = t.take(t.size(700, 0.9, 20, 8_000))
        if rng.random() < 0.04:
            reply = rng.choice(CHINESE) + "\n" + reply
        out.append(self._assistant({"type": "text", "text": reply}, msg_id))
        self.counts["texts"] += 1
        return out


def write_transcript(path, target_bytes, cwd, seed=7):
    text = Text(random.Random(seed))
    tr = Transcript(text, cwd, 1_772_000_000.0)
    written = 0
    with open(path, "w", encoding="utf-8") as f:
        while written < target_bytes:
            for line in tr.turn():
                f.write(line)
                written += len(line.encode("utf-8")) if not line.isascii() else len(line)
    return os.path.getsize(path), tr.counts


# -- the setup: isolated XDG dirs, trusted projects -----------------------------------

def console_script():
    script = os.path.join(sysconfig.get_path("scripts"), "ctxd")
    return script if os.path.isfile(script) else shutil.which("ctxd")


def run_ctxd(script_argv, args, cwd, env, stdin=None, check=True):
    r = subprocess.run(script_argv + args, cwd=cwd, env=env, capture_output=True, input=stdin)
    if check and r.returncode != 0:
        raise SystemExit(f"ctxd {' '.join(args)} failed (exit {r.returncode}): "
                         f"{r.stderr.decode(errors='replace')[-800:]}")
    return r


def make_project(home, name, script_argv):
    """A trusted project the way a user makes one: a marker file, then `ctxd allow`; its context dir."""
    from ctxd.memory.project import locate

    proj = os.path.join(home, "code", name)
    os.makedirs(proj)
    with open(os.path.join(proj, "pyproject.toml"), "w") as f:
        f.write(f'[project]\nname = "{name}"\nversion = "0"\n')
    env = isolated_env(home, proj)
    run_ctxd(script_argv, ["allow", proj], proj, env)
    project = locate(proj, environ=env)
    if project.root != proj:
        raise SystemExit(f"{proj} located as the project {project.root}")
    return proj, project.context_dir, env


def check_show(script_argv, proj, env, context_dir):
    info = json.loads(run_ctxd(script_argv, ["show", "--json"], proj, env).stdout)
    if info.get("context_dir") != context_dir or info.get("root") != proj or not info.get("trusted"):
        raise SystemExit(f"`ctxd show --json` in {proj}: root {info.get('root')}, trusted {info.get('trusted')}, "
                         f"context_dir {info.get('context_dir')}; the store was built in {context_dir}")
    return info


def fact_template(context_dir):
    """The fact rows of a store whose facts the engine extracted for real (column names, rows)."""
    import sqlite3

    db = sqlite3.connect(f"file:{os.path.join(context_dir, 'store.db')}?mode=ro", uri=True)
    try:
        cols = [r[1] for r in db.execute("PRAGMA table_info(facts)")]
        rows = db.execute(f"SELECT {', '.join(cols)} FROM facts ORDER BY id").fetchall()
    finally:
        db.close()
    return cols, rows


def copy_facts(store, template, upto, block, t0):
    """Give messages 1..*upto* the template's fact rows, one copy per *block* messages.

    Each copy gets its own ids, msg_id, ts and a distinct norm (so no copy is
    an exact repeat of another), superseded links kept within the copy. The
    facts table then has the size and the live/superseded mix real extraction
    gives, at a fraction of the time. facts_upto says they are all read.
    """
    cols, rows = template
    at = {c: i for i, c in enumerate(cols)}
    top = max((r[at["id"]] for r in rows), default=0)
    out = []
    for b in range(upto // block):
        for r in rows:
            r = list(r)
            r[at["id"]] += b * top
            r[at["msg_id"]] += b * block
            if "ts" in at:
                r[at["ts"]] = t0 + (r[at["msg_id"]] - 1) * 20
            if "norm" in at:
                r[at["norm"]] = f"{r[at['norm']]} copy{b}"
            if r[at["superseded_by"]] is not None:
                r[at["superseded_by"]] += b * top
            out.append(r)
    db = store.db
    db.execute("BEGIN IMMEDIATE")
    db.executemany(f"INSERT INTO facts({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", out)
    db.execute("INSERT INTO meta(key, value) VALUES ('facts_upto', ?) "
               "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (str(upto),))
    db.execute("COMMIT")
    return len(out)


def build_store(context_dir, root, count, seed, template=None, real_facts=REAL_FACTS):
    """*count* messages straight through Store.add_many; facts; then context.md, as the CLI leaves it.

    Facts: the engine's refresh_facts (what the first render after new messages
    runs) reads the newest *real_facts* messages; older ones get copies of
    *template* (see copy_facts). Without a template every message is read.
    Returns a dict of figures.
    """
    from ctxd.memory.context import render
    from ctxd.memory.store.db import Store

    try:
        from ctxd.memory.context import fact_merge
    except ImportError:  # a ctxd before facts had their own module (or had none)
        try:
            from ctxd.memory.context import engine as fact_merge
        except ImportError:
            fact_merge = None
    text = Text(random.Random(seed))
    t0 = time.time() - count * 20 - 3600
    info = {"chars": 0}
    with Store(context_dir) as store:
        start = time.perf_counter()
        batch = []
        for m in store_messages(text, count, t0):
            batch.append(m)
            info["chars"] += len(m["content"])
            if len(batch) >= BUILD_BATCH:
                store.add_many(batch, redact=False)
                batch = []
        store.add_many(batch, redact=False)
        info["add_s"] = time.perf_counter() - start
        if fact_merge is not None:
            start = time.perf_counter()
            upto = 0
            if template is not None and count > real_facts:
                upto = (count - real_facts) // 1000 * 1000
                info["copied"] = copy_facts(store, template, upto, 1000, t0)
            info["copy_s"] = time.perf_counter() - start
            start = time.perf_counter()
            info["read"] = fact_merge.refresh_facts(store)
            info["facts_s"] = time.perf_counter() - start
            info["facts"], info["superseded"] = store.db.execute(
                "SELECT count(*), count(superseded_by) FROM facts").fetchone()
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        render.write(store, root)
        info["n"] = store.count()
    outputs = os.path.join(context_dir, "outputs")
    info["offloaded"] = len(os.listdir(outputs)) if os.path.isdir(outputs) else 0
    return info


def dir_mb(path):
    total = 0
    for d, _subdirs, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(d, f))
            except OSError:
                pass
    return total / 1e6


# -- timing -----------------------------------------------------------------------------

class Cmd:
    """One timed command: its argv and where it runs; *prepare* (sh) runs untimed before each run."""

    def __init__(self, kind, label, script_argv, args, cwd, env, stdin=None, prepare=None):
        self.kind, self.label, self.args, self.cwd, self.env, self.stdin, self.prepare = \
            kind, label, args, cwd, env, stdin, prepare
        self.argv = script_argv + args
        self.name = f"{kind} {label}"

    def sh(self):
        text = f"cd {shlex.quote(self.cwd)} && exec {shlex.join(self.argv)}"
        return text + (f" < {shlex.quote(self.stdin)}" if self.stdin else "")


def time_hyperfine(cmds, runs, warmup, env, chunks=3):
    """({name: [wall s]}, {name: [cpu s, one mean per pass]}) via hyperfine --shell=sh.

    The runs go in *chunks* passes, so that drift on a busy machine does not
    fall on one command.
    """
    times = {c.name: [] for c in cmds}
    cpu = {c.name: [] for c in cmds}
    per = max(1, -(-runs // chunks))
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        for i in range(chunks):
            argv = ["hyperfine", "--shell=sh", "--style", "none", "--warmup", str(warmup if i == 0 else 1),
                    "--runs", str(per), "--export-json", out]
            if any(c.prepare for c in cmds):
                for c in cmds:
                    argv += ["--prepare", c.prepare or "true"]
            for c in cmds:
                argv += ["--command-name", c.name, c.sh()]
            subprocess.run(argv, env=env, check=True, capture_output=True)
            read_hyperfine(out, times, cpu)
        return times, cpu
    finally:
        os.unlink(out)


RUSAGE_HELPER = """
import json, os, subprocess, sys
out, argv = sys.argv[1], sys.argv[2:]
p = subprocess.Popen(argv)
_pid, status, ru = os.wait4(p.pid, 0)
with open(out, "w") as f:
    json.dump({"maxrss_kb": ru.ru_maxrss, "cpu": ru.ru_utime + ru.ru_stime}, f)
sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)
"""


def run_child(argv, cwd, env, stdin=None, timeout=None, helper=False):
    """Run one child: {wall, rss (MB), cpu (s), code, out, err, lines: [(s, stdout line)]}.

    CPU and peak RSS come from os.wait4 of that very child. A child forked from
    this (large) process starts with this process's RSS as its ru_maxrss
    (Linux keeps the pre-exec high-water mark), so with *helper* the child is
    started by a small `python -I -S` helper that reports its rusage. stdout
    lines are timestamped as they arrive.
    """
    ferr = tempfile.TemporaryFile()
    fin = open(stdin, "rb") if stdin else subprocess.DEVNULL
    report = None
    if helper:
        fd, report = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        argv = [sys.executable, "-I", "-S", "-c", RUSAGE_HELPER, report] + list(argv)
    lines = []
    try:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=fin, stdout=subprocess.PIPE, stderr=ferr)
        for raw in p.stdout:
            lines.append((time.perf_counter() - t0, raw.decode(errors="replace").rstrip("\n")))
            if timeout and time.perf_counter() - t0 > timeout:
                break
        p.stdout.close()
        _pid, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        rss, cpu = ru.ru_maxrss / 1024, ru.ru_utime + ru.ru_stime
        if report:
            try:
                with open(report) as f:
                    r = json.load(f)
                rss, cpu = r["maxrss_kb"] / 1024, r["cpu"]
            except (OSError, ValueError, KeyError):
                rss = cpu = float("nan")
        ferr.seek(0)
        return dict(wall=wall, rss=rss, cpu=cpu, code=p.returncode, out="\n".join(l for _t, l in lines),
                    err=ferr.read().decode(errors="replace"), lines=lines)
    finally:
        ferr.close()
        if stdin:
            fin.close()
        if report:
            os.unlink(report)


def time_loop(cmds, runs, warmup):
    """Like time_hyperfine, interleaving the commands run by run (CPU from os.wait4)."""
    times = {c.name: [] for c in cmds}
    cpu = {c.name: [] for c in cmds}
    for i in range(warmup + runs):
        for c in cmds:
            if c.prepare:
                subprocess.run(["sh", "-c", c.prepare], check=True)
            r = run_child(c.argv, c.cwd, c.env, c.stdin)
            if i >= warmup:
                times[c.name].append(r["wall"])
                cpu[c.name].append(r["cpu"])
    return times, cpu


# -- in-process breakdown and profiles ----------------------------------------------------

def breakdown(context_dir, root, reps=15):
    """Median ms of what reads the store on the `chat add` and SessionStart paths (warm connection)."""
    import glob

    from ctxd.memory.context import render
    from ctxd.memory.core import ProjectMemory
    from ctxd.memory.project import Project
    from ctxd.memory.store.db import Store

    def clear():
        for f in glob.glob(os.path.join(context_dir, "cache", "summary-*.json")):
            os.unlink(f)

    def med(fn, cold=False):
        ts = []
        for _ in range(reps):
            if cold:
                clear()
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts) * 1000

    t0 = time.perf_counter()
    store = Store(context_dir, create=False)
    out = {"open": (time.perf_counter() - t0) * 1000}
    mem = ProjectMemory(Project(root, context_dir, {}, {}))
    mem._store = store  # the benchmark times this one open store  # noqa: SLF001
    try:
        q = {"count()": "SELECT count(*) FROM messages",
             "recent(200)": "SELECT * FROM messages ORDER BY ts DESC, id DESC LIMIT 200"}
        plans = {k: " ".join(r[-1] for r in store.db.execute("EXPLAIN QUERY PLAN " + v)) for k, v in q.items()}
        out["count()"] = med(store.count)
        out["recent(200)"] = med(lambda: store.recent(200))
        out["render cold"] = med(lambda: render.render(store, root), cold=True)
        out["render warm"] = med(lambda: render.render(store, root))
        out["start cold"] = med(lambda: mem.session_context(), cold=True)
        out["start warm"] = med(lambda: mem.session_context())
        calls = {"n": 0}
        real = store.count

        def counting():
            calls["n"] += 1
            return real()

        store.count = counting
        clear()
        mem.session_context()
        out["count() calls"] = calls["n"]
        store.count = real
    finally:
        store.close()
    return out, plans


PROFILE_CODE = """
import cProfile, sys
out, src, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
if src:
    sys.path.insert(0, src)
sys.argv = ["ctxd"] + argv
from ctxd._entry import main
prof = cProfile.Profile()
prof.enable()
try:
    main()
except SystemExit:
    pass
prof.disable()
prof.dump_stats(out)
"""


def profile(c, out, src=None):
    """{function: cumulative s} of one run of *c* under cProfile (imports included; *src*: --ctxd-src)."""
    import pstats

    if c.prepare:
        subprocess.run(["sh", "-c", c.prepare], check=True)
    fin = open(c.stdin, "rb") if c.stdin else subprocess.DEVNULL
    try:
        subprocess.run([sys.executable, "-c", PROFILE_CODE, out, os.path.abspath(src) if src else ""] + c.args,
                       cwd=c.cwd, env=c.env, stdin=fin, capture_output=True, check=True)
    finally:
        if c.stdin:
            fin.close()
    st = pstats.Stats(out)
    return {f"{os.path.basename(k[0])}:{k[1]}({k[2]})": v[3] for k, v in st.stats.items()}


def import_ms(c, py_argv):
    """Sum of every import's self time (-X importtime), ms."""
    fin = open(c.stdin, "rb") if c.stdin else subprocess.DEVNULL
    try:
        r = subprocess.run([sys.executable, "-X", "importtime"] + py_argv + c.args, cwd=c.cwd, env=c.env,
                           stdin=fin, capture_output=True, text=True)
    finally:
        if c.stdin:
            fin.close()
    total = 0
    for line in r.stderr.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            total += int(line.split(":", 1)[1].split("|")[0])
    return total / 1000


# -- main ----------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=30, help="timed runs per command (default 30)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    ap.add_argument("--import-mb", type=float, default=100, help="size of the generated transcript, MB "
                    "(default 100; 0 skips the import)")
    ap.add_argument("--real-facts", action="store_true",
                    help="let the engine read all 100k messages for facts (slow) instead of copying fact rows")
    ap.add_argument("--large", type=int, default=100_000, help="messages in the large store (default 100000)")
    ap.add_argument("--no-hyperfine", action="store_true", help="use the subprocess loop")
    ap.add_argument("--profile", action="store_true", help="profile both stores even when the ratios are met")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (its path is printed)")
    ap.add_argument("--ctxd-src", metavar="DIR", help="measure another ctxd checkout (run via python -c)")
    args = ap.parse_args()
    global SIZES
    SIZES = ((1_000, "1k"), (args.large, f"{args.large // 1000}k"))
    big = SIZES[1][1]

    py = sys.executable
    script_argv = [console_script()]
    if args.ctxd_src:
        script_argv = [py, "-c", "import sys; sys.path.insert(0, sys.argv.pop(1)); "
                       "from ctxd._entry import main; main()", os.path.abspath(args.ctxd_src)]
    py_argv = script_argv[1:] if args.ctxd_src else script_argv  # after `python -X importtime`
    use_hf = bool(shutil.which("hyperfine")) and not args.no_hyperfine
    started = time.perf_counter()

    rev = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip()
    print("ctxd store benchmark: `ctxd chat add` and the Claude Code SessionStart hook on 1k and 100k "
          "messages; `ctxd chat import` of a Claude Code transcript")
    where = f"from {args.ctxd_src}" if args.ctxd_src else f"at {rev or '?'}"
    print(f"  ctxd {where}; python {sys.version.split()[0]} ({py}); {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.1f}")
    if use_hf:
        hf = subprocess.run(["hyperfine", "--version"], capture_output=True, text=True).stdout.split()[-1]
        how = f"hyperfine {hf} --shell=sh (`cd PROJECT && exec ctxd ...`, the shell's spawn subtracted)"
    else:
        how = "subprocess loop" + ("" if shutil.which("hyperfine") else " (hyperfine not installed)")
    print(f"  timer: {how}; {args.runs} runs, {args.warmup} warmup; medians in ms", flush=True)

    tmp = tempfile.mkdtemp(prefix="ctxd-bench-store-")
    home = os.path.join(tmp, "home")
    os.makedirs(home)
    try:
        # ---- the stores ------------------------------------------------------------------
        print()
        stores = {}
        template = None
        for count, label in SIZES:
            proj, ctx_dir, env = make_project(home, f"proj-{label}", script_argv)
            t0 = time.perf_counter()
            info = build_store(ctx_dir, proj, count, seed=count, template=None if args.real_facts else template,
                               real_facts=REAL_FACTS)
            took = time.perf_counter() - t0
            if template is None and "facts" in info:
                template = fact_template(ctx_dir)
            check_show(script_argv, proj, env, ctx_dir)
            session = "0b6e1c2e-5a4f-4a8e-9a57-3d2f2f0c9e11"
            payload = os.path.join(tmp, f"session-start-{label}.json")
            with open(payload, "w") as f:
                json.dump({"session_id": session, "cwd": proj, "hook_event_name": "SessionStart",
                           "transcript_path": os.path.join(home, ".claude", "projects", proj.replace("/", "-"),
                                                           session + ".jsonl"),
                           "source": "startup", "permission_mode": "default",
                           "model": "claude-sonnet-4-5-20250929"}, f)
            stores[label] = dict(proj=proj, ctx=ctx_dir, env=env, payload=payload)
            db_mb = os.path.getsize(os.path.join(ctx_dir, "store.db")) / 1e6
            print(f"store {label:>4}: {info['n']:,} messages ({info['chars'] / 1e6:.1f} M characters, "
                  f"{info['offloaded']} offloaded outputs) added in {info['add_s']:.1f} s; store.db {db_mb:.0f} MB, "
                  f"context dir {dir_mb(ctx_dir):.0f} MB; built in {took:.0f} s in all", flush=True)
            if "facts" in info:
                how = (f"{info.get('copied', 0):,} copied from the 1k store's for messages 1-"
                       f"{info['n'] - info['read']:,} in {info['copy_s']:.1f} s, then " if info.get("copied") else "")
                print(f"           facts: {info['facts']:,} ({info['superseded']:,} superseded); {how}the engine "
                      f"read {info['read']:,} messages in {info['facts_s']:.1f} s "
                      f"({info['read'] / max(info['facts_s'], 1e-9):.0f} messages/s)", flush=True)
            print(f"           `ctxd show --json` in {proj}: trusted, context_dir {ctx_dir} (where it was built)")

        # sanity: the hook injects context
        for label, s in stores.items():
            r = run_child(script_argv + ["chat", "hook", "claude"], s["proj"], s["env"], s["payload"], timeout=300)
            ctx = json.loads(r["out"])["hookSpecificOutput"]["additionalContext"] if r["out"].strip() else ""
            if not ctx:
                raise SystemExit(f"the SessionStart hook injected nothing for the {label} store: {r['err'][-800:]}")
            s["injected"] = len(ctx)

        # ---- whole-process timing -------------------------------------------------------------
        cmds = []
        for kind in KINDS:
            for _count, label in SIZES:
                s = stores[label]
                # chat add and the first start after new turns find no cached summary for their budget
                # and range (a turn that moves the start of the recent window moves the range)
                prep = f"rm -f {shlex.quote(os.path.join(s['ctx'], 'cache'))}/summary-*.json" \
                    if kind in ("chat add", "start") else None
                if kind == "chat add":
                    c = Cmd(kind, label, script_argv, ["chat", "add", ADD_TEXT], s["proj"], s["env"], None, prep)
                else:
                    c = Cmd(kind, label, script_argv, ["chat", "hook", "claude"], s["proj"], s["env"],
                            s["payload"], prep)
                cmds.append(c)
        if use_hf:
            env0 = {k: v for k, v in stores["1k"]["env"].items() if k != "PWD"}  # each command cds
            times, cpu = time_hyperfine(cmds, args.runs, args.warmup, env0)
        else:
            times, cpu = time_loop(cmds, args.runs, args.warmup)
        rss, imp = {}, {}
        for c in cmds:
            if c.prepare:
                subprocess.run(["sh", "-c", c.prepare], check=True)
            rss[c.name] = run_child(c.argv, c.cwd, c.env, c.stdin, helper=True)["rss"]
            imp[c.name] = import_ms(c, py_argv) if c.label == "1k" else None

        import glob

        def cache_files(label):
            return len(glob.glob(os.path.join(stores[label]["ctx"], "cache", "summary-*.json")))

        before = cache_files("1k")  # does each `chat add` leave a summary cache file behind?
        for _ in range(3):
            c = cmds[0]
            run_child(c.argv, c.cwd, c.env)
        cache_now = cache_files("1k")
        cache_growth = cache_now - before

        # ---- in-process breakdown: what reads the store --------------------------------------
        print()
        bd = {}
        for _count, label in SIZES:
            bd[label], plans = breakdown(stores[label]["ctx"], stores[label]["proj"])
        keys = ["open", "count()", "recent(200)", "render cold", "render warm", "start cold", "start warm"]
        print("in-process, one warm connection, median ms of 15 (cold: cache/summary-*.json removed first):")
        print(f"{'':<6}" + "".join(f"{k:>13}" for k in keys) + f"{'count()/start':>15}")
        for _count, label in SIZES:
            print(f"{label:<6}" + "".join(f"{bd[label][k]:>13.2f}" for k in keys)
                  + f"{bd[label]['count() calls']:>15}")
        print(f"{big}/1k: " + ", ".join(f"{k} {bd[big][k] / bd['1k'][k]:.2f}x" for k in keys[3:]))
        for k, v in plans.items():
            print(f"query plan, {k}: {v}" + (" (rowid order from the newest, stops at the LIMIT)"
                                             if v.strip() == "SCAN messages" else ""))
        print("injected at SessionStart: " + ", ".join(f"{lab} {stores[lab]['injected']:,} characters"
                                                        for _c, lab in SIZES))
        print(f"summary cache (cache/summary-*.json): {cache_growth:+d} files after 3 more `chat add` runs "
              f"(1k store; {cache_now} there then)")

        # ---- summary -------------------------------------------------------------------------
        print()
        print(f"summary (whole process, median ms; ratio {big}/1k, target <= {RATIO_TARGET:.0f}x)")
        head = (f"{'command':<26}{'1k':>8}{big:>8}{big + '/1k':>10}{'':>6}{'cpu 1k':>8}{'cpu ' + big:>10}"
                f"{'rss 1k':>8}{'rss ' + big:>10}{'imports':>9}")
        print(head)
        print("-" * len(head))
        missed = []
        for kind in KINDS:
            m = {lab: statistics.median(times[f"{kind} {lab}"]) * 1000 for _c, lab in SIZES}
            c = {lab: statistics.mean(cpu[f"{kind} {lab}"]) * 1000 for _c, lab in SIZES}
            ratio = m[big] / m["1k"]
            ok = ratio <= RATIO_TARGET
            if not ok:
                missed.append(kind)
            print(f"{KINDS[kind]:<26}{m['1k']:>8.1f}{m[big]:>8.1f}{ratio:>9.2f}x{'ok' if ok else 'MISS':>6}"
                  f"{c['1k']:>8.1f}{c[big]:>10.1f}{rss[kind + ' 1k']:>7.0f}M{rss[kind + ' ' + big]:>9.0f}M"
                  f"{imp[kind + ' 1k']:>7.0f}ms")
        print("(cpu: mean user+system ms; rss: peak of one run (os.wait4 via a small helper); imports: sum of -X importtime "
              "self times, 1k)")
        print(f"targets: {len(KINDS) - len(missed)}/{len(KINDS)} met" +
              (f"; missed: {', '.join(KINDS[k] for k in missed)}" if missed else ""))

        if missed or args.profile:
            print()
            print(f"profile (cProfile in the process, one run each; cumulative ms; the largest {big} - 1k "
                  "differences):")
            for kind in (KINDS if args.profile else missed):
                prof = {}
                for c in cmds:
                    if c.kind == kind:
                        prof[c.label] = profile(c, os.path.join(tmp, f"prof-{c.label}.out"), args.ctxd_src)
                diff = sorted(((prof[big].get(k, 0) - prof["1k"].get(k, 0), k) for k in prof[big]
                               if not k.startswith("<frozen")), reverse=True)[:12]
                print(f"  {KINDS[kind]}:")
                for d, k in diff:
                    print(f"    {d * 1000:+9.1f} ms  {k}  (1k {prof['1k'].get(k, 0) * 1000:.1f}, "
                          f"{big} {prof[big][k] * 1000:.1f})")
        print(f"(store part done in {time.perf_counter() - started:.0f} s)", flush=True)

        if args.import_mb > 0:
            bench_import(args, home, script_argv)
        print(f"\n(total {time.perf_counter() - started:.0f} s)")
    finally:
        if args.keep:
            print(f"(kept {tmp})")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def bench_import(args, home, script_argv):
    from ctxd.memory.store.db import Store

    print()
    proj, ctx_dir, env = make_project(home, "proj-import", script_argv)
    tdir = os.path.join(home, ".claude", "projects", proj.replace("/", "-"))
    os.makedirs(tdir)
    tpath = os.path.join(tdir, "5d9f2b8a-2c61-4f1e-8f3a-6a1b7e0c4d22.jsonl")
    t0 = time.perf_counter()
    size, counts = write_transcript(tpath, int(args.import_mb * 1e6), proj)
    gen = time.perf_counter() - t0
    mb = size / 1e6
    print(f"transcript: {mb:.1f} MB, {counts['lines']:,} lines: {counts['prompts']:,} prompts "
          f"({counts['chinese']} with Chinese), {counts['texts']:,} assistant texts, {counts['tool_uses']:,} tool_use, "
          f"{counts['tool_results']:,} tool_result ({counts['huge']} huge: 20-250 K characters; a Bash output is "
          f"in its line twice, as Claude Code writes it), {counts['skipped']:,} thinking/meta/snapshot lines; "
          f"generated in {gen:.1f} s", flush=True)
    argv = script_argv + ["chat", "import", tpath, "--format", "claude"]
    runs = []
    for which in ("import", "re-import"):
        r = run_child(argv, proj, env, helper=True)
        if r["code"] != 0:
            raise SystemExit(f"ctxd chat import failed (exit {r['code']}): {r['err'][-800:]}")
        hit = [(t, l) for t, l in r["lines"] if " added, " in l]
        if not hit:
            raise SystemExit(f"cannot read the import's output: {r['out']!r} {r['err'][-800:]!r}")
        at, line = hit[-1]
        added = int(line.rsplit(": ", 1)[1].split(" added")[0])
        present = int(line.split(" added, ")[1].split(" already")[0])
        runs.append(dict(which=which, wall=r["wall"], rss=r["rss"], cpu=r["cpu"], added=added, present=present,
                         parsed=at))
        print(f"{which}: {line.replace(tpath, 'FILE')}  [exit {r['code']}]", flush=True)
    with Store(ctx_dir, create=False) as st:
        stored = st.count()
        try:
            facts = st.db.execute("SELECT count(*) FROM facts").fetchone()[0]
        except Exception:
            facts = None
    outs = os.path.join(ctx_dir, "outputs")
    n_out = len(os.listdir(outs)) if os.path.isdir(outs) else 0
    print(f"store after: {stored:,} messages, {n_out} offloaded outputs"
          + (f", {facts:,} facts" if facts is not None else "")
          + f"; store.db {os.path.getsize(os.path.join(ctx_dir, 'store.db')) / 1e6:.0f} MB, "
          f"context dir {dir_mb(ctx_dir):.0f} MB")
    print()
    print(f"import summary ({mb:.1f} MB Claude Code transcript; peak RSS target <= {RSS_TARGET_MB} MB)")
    head = (f"{'':<11}{'wall s':>8}{'cpu s':>7}{'MB/s':>7}{'msgs/s':>8}{'lines/s':>9}{'added':>9}{'present':>9}"
            f"{'parse+store s':>15}{'render s':>10}{'peak RSS':>12}")
    print(head)
    print("-" * len(head))
    for r in runs:
        ok = "ok" if r["rss"] <= RSS_TARGET_MB else "MISS"
        n = r["added"] + r["present"]
        print(f"{r['which']:<11}{r['wall']:>8.1f}{r['cpu']:>7.1f}{mb / r['wall']:>7.2f}{n / r['wall']:>8.0f}"
              f"{counts['lines'] / r['wall']:>9.0f}{r['added']:>9,}{r['present']:>9,}{r['parsed']:>15.1f}"
              f"{r['wall'] - r['parsed']:>10.1f}{r['rss']:>8.0f} MB {ok}")
    print("(parse+store: until the command printed its count; render: the rest, context.md re-rendered, "
          "which first brings the facts up to date)")
    first, again = runs
    idem = again["added"] == 0 and again["present"] == first["added"] + first["present"]
    print(f"idempotence: the re-import added {again['added']} of {again['present']:,} "
          f"({'ok' if idem else 'FAIL'}); re-import / import wall = {again['wall'] / first['wall']:.2f}x")


KINDS = {"chat add": "chat add",
         "start": "SessionStart (new turns)",
         "start warm": "SessionStart (repeat)"}


if __name__ == "__main__":
    main()
