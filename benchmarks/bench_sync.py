#!/usr/bin/env python3
"""Time `ctxd sync` through a real bare git remote on a 100,000-message history.

    python3 benchmarks/bench_sync.py [--messages 100000] [--session 40]

A bare remote and two clones in a temp dir, each clone with its own isolated user
(HOME and XDG dirs), so its own store. Clone A's store gets --messages messages built
directly with Store.add_many (bench_store's generator: prompts, replies, tool calls,
tool outputs, 2% of those huge and offloaded; 200 messages a session). Then, each a
whole `ctxd` process:

  initial push       `ctxd sync push` of the whole history (after `ctxd sync init`)
  incremental push   one new session of --session messages, then `ctxd sync push`
                     (target: <= 1 s and bytes proportional to the new data)
  no-op sync         `ctxd sync` with nothing new on either side (no commit)
  pull, empty store  clone B: `ctxd sync init`, `ctxd sync pull` into no store at all
                     (the import itself: the facts of the new backlog are extracted by the
                     detached `ctxd chat refresh` it starts, as after `ctxd chat import`)
  incremental pull   clone B pulls the one new session A pushed next (after that refresh)

"bytes pushed" is what the bare remote's object store grew by (git's pack as it
arrived). A script, never run as a test.
"""

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import isolated_env, use_ctxd_source  # noqa: E402

use_ctxd_source()  # must win before ctxd is first imported

from bench_store import BUILD_BATCH, Text, store_messages  # noqa: E402

TARGET_INCREMENTAL_S = 1.0


def git(*args, cwd=None, env=None):
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def tree_bytes(path):
    total = 0
    for dp, _dn, fns in os.walk(path):
        for f in fns:
            try:
                total += os.path.getsize(os.path.join(dp, f))
            except OSError:
                pass
    return total


PEAK_RSS = {}


def ctxd(args, cwd, env):
    """Run ctxd; (wall seconds, stdout). Its peak RSS (os.wait4) goes into PEAK_RSS by command."""
    t = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen([sys.executable, "-m", "ctxd", *args], cwd=cwd, env=env, stdout=out, stderr=err)
        _pid, status, usage = os.wait4(p.pid, 0)
        dt = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    PEAK_RSS[" ".join(args)] = usage.ru_maxrss / 1024  # KiB on Linux -> MiB
    if p.returncode != 0:
        raise SystemExit(f"ctxd {' '.join(args)} failed (exit {p.returncode}): {stderr[-800:]}")
    return dt, stdout.strip()


def clone(base, name, remote):
    home = os.path.join(base, f"home-{name}")
    os.makedirs(home)
    d = os.path.join(base, name)
    env = isolated_env(home, d)
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    git("config", "--global", "user.email", f"{name}@example.com", env=env)
    git("config", "--global", "user.name", name, env=env)
    git("clone", "-q", remote, d, env=env)
    return d, env


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--session", type=int, default=40, help="messages in the one new session")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    args = ap.parse_args()

    from ctxd.memory.project import locate
    from ctxd.memory.store.db import Store

    base = tempfile.mkdtemp(prefix="ctxd-bench-sync-")
    rows, rss = [], {}
    try:
        remote = os.path.join(base, "remote.git")
        git("init", "-q", "--bare", remote)
        a, env_a = clone(base, "a", remote)
        with open(os.path.join(a, "README"), "w") as f:
            f.write("bench\n")
        git("add", "README", cwd=a, env=env_a)
        git("commit", "-q", "-m", "first", cwd=a, env=env_a)
        git("push", "-q", "origin", "HEAD", cwd=a, env=env_a)
        b, env_b = clone(base, "b", remote)

        rng = random.Random(14)
        text = Text(rng)
        ctx_a = locate(a, environ=env_a).context_dir
        t = time.perf_counter()
        with Store(ctx_a) as st:
            batch = []
            for m in store_messages(text, args.messages, 1_700_000_000):
                batch.append(m)
                if len(batch) >= BUILD_BATCH:
                    st.add_many(batch, redact=False)
                    batch = []
            if batch:
                st.add_many(batch, redact=False)
            n = st.count()
        print(f"built clone A's store: {n:,} messages in {time.perf_counter() - t:.1f} s", file=sys.stderr)

        ctxd(["sync", "init"], a, env_a)
        size0 = tree_bytes(os.path.join(remote, "objects"))
        dt, out = ctxd(["sync", "push"], a, env_a)
        size1 = tree_bytes(os.path.join(remote, "objects"))
        rows.append(("initial push", f"{n:,} messages", dt, size1 - size0, out))
        rss["initial push"] = PEAK_RSS["sync push"]

        def new_session(tag):
            with Store(ctx_a) as st:
                session = f"bench-new-{tag}"
                st.add_many([dict(role="user" if i % 2 == 0 else "assistant", session=session, source="cli",
                                  content=text.take(text.size(400, 0.8, 20, 3_000)), ts=time.time() + i,
                                  dedup=f"new:{tag}:{i}") for i in range(args.session)], redact=False)

        new_session("one")
        dt, out = ctxd(["sync", "push"], a, env_a)
        size2 = tree_bytes(os.path.join(remote, "objects"))
        rows.append(("incremental push", f"{args.session} messages", dt, size2 - size1, out))

        dt, out = ctxd(["sync"], a, env_a)
        size3 = tree_bytes(os.path.join(remote, "objects"))
        rows.append(("no-op sync", "nothing new", dt, size3 - size2, out.replace("\n", "; ")))

        ctxd(["sync", "init"], b, env_b)
        dt, out = ctxd(["sync", "pull"], b, env_b)
        with Store(locate(b, environ=env_b).context_dir) as st:
            got = st.count()
        rows.append(("pull, empty store", f"{got:,} messages", dt, None, out))
        rss["pull, empty store"] = PEAK_RSS["sync pull"]
        # the pull started the detached fact extraction of the big backlog (as `chat import` does);
        # let it finish first, so the next step times the sync and not the wait for its lock
        t = time.perf_counter()
        ctxd(["chat", "refresh"], b, env_b)
        print(f"clone B's facts extracted (untimed step): {time.perf_counter() - t:.1f} s", file=sys.stderr)

        new_session("two")
        ctxd(["sync", "push"], a, env_a)
        dt, out = ctxd(["sync", "pull"], b, env_b)
        rows.append(("incremental pull", f"{args.session} messages", dt, None, out))
    finally:
        if args.keep:
            print(f"kept {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)

    print(f"\nctxd sync through a bare git remote ({args.messages:,}-message history)\n")
    print(f"{'step':<18} {'data':>16} {'time':>9} {'bytes pushed':>14} {'peak RSS':>9}")
    for step, what, dt, nbytes, _out in rows:
        b_ = f"{nbytes:,}" if nbytes is not None else "-"
        r_ = f"{rss[step]:.0f} MB" if step in rss else "-"
        print(f"{step:<18} {what:>16} {dt:>8.2f}s {b_:>14} {r_:>9}")
    init, inc = rows[0], rows[1]
    per_init = init[3] / args.messages
    per_inc = inc[3] / args.session
    print(f"\nbytes per message: initial {per_init:,.0f}, incremental {per_inc:,.0f} "
          f"(incremental / initial bytes: {inc[3] / init[3]:.5f}, messages: {args.session / args.messages:.5f})")
    verdict = "ok" if inc[2] <= TARGET_INCREMENTAL_S else "MISSED"
    print(f"incremental push {inc[2]:.2f} s: target <= {TARGET_INCREMENTAL_S:.0f} s: {verdict}")
    for step, _w, _dt, _b, out in rows:
        print(f"  {step}: {out}")


if __name__ == "__main__":
    main()
