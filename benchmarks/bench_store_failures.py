#!/usr/bin/env python3
"""Wall time of an AI CLI hook whose store cannot take a write, as whole `ctxd` processes.

    python3 benchmarks/bench_store_failures.py [--runs 20] [--ctxd-src DIR]

A project (a directory with a .git, in an isolated HOME/XDG under a temp dir) gets a
store of 200 messages and its context.md. Each case runs `ctxd chat hook claude`
with a payload on stdin, *runs* times, and reports the median and max wall time
(subprocess start to exit) and what the hook did (exit code, entries queued):

  free       UserPromptSubmit on a store nobody holds (the baseline)
  locked     UserPromptSubmit while another process holds a write transaction
  held       UserPromptSubmit while another process holds the file against readers too
             (locking_mode = EXCLUSIVE)
  start      SessionStart on the held store (context.md as last rendered is injected)
  full       UserPromptSubmit on a full store (a real SQLITE_FULL: tests/failing_hook.py)
  read-only  UserPromptSubmit on a 0400 store (as root: without CAP_DAC_OVERRIDE, setpriv)
  corrupt    UserPromptSubmit on a file that is not a database

Target: every case exits 0 within 500 ms; nothing given is lost (the queued
entries are stored by the `ctxd chat add` run at the end). A script, never run
as a test (tests/test_store_failures.py checks the behaviour, without timing).
"""

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

from _common import REPO, isolated_env, use_ctxd_source

use_ctxd_source()

TARGET_MS = 500


def hold(db, exclusive):
    code = ("import sqlite3, sys\n"
            "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            + ("db.execute('PRAGMA locking_mode = EXCLUSIVE')\ndb.execute('BEGIN EXCLUSIVE')\n"
               "db.execute(\"INSERT INTO meta(key, value) VALUES ('held', '1') ON CONFLICT DO NOTHING\")\n"
               "db.execute('COMMIT')\n" if exclusive else "db.execute('BEGIN IMMEDIATE')\n")
            + "print('held', flush=True)\nsys.stdin.read()\n")
    p = subprocess.Popen([sys.executable, "-c", code, db], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def release(p):
    p.stdin.close()
    p.wait()


def run(cmd, payload, env, runs):
    times, codes = [], set()
    for _ in range(runs):
        t = time.perf_counter()
        r = subprocess.run(cmd, input=payload.encode(), capture_output=True, env=env)
        times.append((time.perf_counter() - t) * 1000)
        codes.add(r.returncode)
    return times, codes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--ctxd-src")
    args = ap.parse_args()
    ctxd = shutil.which("ctxd") or sys.exit("ctxd is not on PATH")
    tmp = tempfile.mkdtemp(prefix="ctxd-bench-fail-")
    home, proj = os.path.join(tmp, "home"), os.path.join(tmp, "proj")
    os.makedirs(os.path.join(proj, ".git"))
    env = isolated_env(home, proj)
    env["PATH"] = os.pathsep.join([os.path.dirname(ctxd), env["PATH"]])
    if args.ctxd_src:
        env["PYTHONPATH"] = os.path.abspath(args.ctxd_src)
    subprocess.run([ctxd, "chat", "add", "seed"], cwd=proj, env=env, check=True, capture_output=True)
    db = next(os.path.join(d, "store.db") for d, _s, f in os.walk(home) if "store.db" in f)
    ctx_dir = os.path.dirname(db)
    con = sqlite3.connect(db)
    con.executemany("INSERT INTO messages(session, role, content, ts, kind) VALUES ('s', 'user', ?, ?, 'prompt')",
                    [(f"message {i} about the cutover", time.time()) for i in range(200)])
    con.commit()
    con.close()
    subprocess.run([ctxd, "chat", "add", "render context.md"], cwd=proj, env=env, check=True, capture_output=True)

    def prompt(tag):
        return json.dumps({"session_id": "bench", "cwd": proj, "hook_event_name": "UserPromptSubmit",
                           "prompt": f"{tag} prompt {time.time_ns()}"})

    start = json.dumps({"session_id": "bench", "cwd": proj, "hook_event_name": "SessionStart", "source": "startup"})
    hook = [ctxd, "chat", "hook", "claude"]
    rows = []

    def case(name, cmd, payload):
        spool = os.path.join(ctx_dir, "spool")
        before = len([n for n in os.listdir(spool) if n.endswith(".json")]) if os.path.isdir(spool) else 0
        times, codes = run(cmd, payload, env, args.runs)
        after = len([n for n in os.listdir(spool) if n.endswith(".json")]) if os.path.isdir(spool) else 0
        rows.append((name, statistics.median(times), max(times), codes, after - before))

    case("free", hook, prompt("free"))
    p = hold(db, False)
    case("locked", hook, prompt("locked"))
    release(p)
    subprocess.run([ctxd, "chat", "add", "replay"], cwd=proj, env=env, check=True, capture_output=True)
    p = hold(db, True)
    case("held", hook, prompt("held"))
    case("start", hook, start)
    release(p)
    subprocess.run([ctxd, "chat", "add", "replay"], cwd=proj, env=env, check=True, capture_output=True)
    case("full", [sys.executable, os.path.join(REPO, "tests", "failing_hook.py"), "claude"],
         prompt("full " + "x" * 5000))
    mode = os.stat(db).st_mode
    os.chmod(db, 0o400)
    low = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"] if os.geteuid() == 0 else []
    case("read-only", low + hook, prompt("read-only"))
    os.chmod(db, mode)
    subprocess.run([ctxd, "chat", "add", "replay"], cwd=proj, env=env, check=True, capture_output=True)
    shutil.copy(db, db + ".keep")
    for s in ("-wal", "-shm"):
        if os.path.exists(db + s):
            os.unlink(db + s)
    with open(db, "wb") as f:
        f.write(b"not a database" * 500)
    case("corrupt", hook, prompt("corrupt"))

    print(f"{'case':<10} {'median ms':>10} {'max ms':>8}  exit  queued   (target: exit 0 within {TARGET_MS} ms)")
    for name, med, mx, codes, queued in rows:
        ok = codes == {0} and med <= TARGET_MS
        print(f"{name:<10} {med:10.0f} {mx:8.0f}  {','.join(map(str, sorted(codes))):>4}  {queued:>6}   "
              f"{'ok' if ok else 'MISS'}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
