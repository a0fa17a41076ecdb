"""Hook overhead with the real AI CLIs: one headless session with and without ctxd's hooks.

For each of Claude Code (`claude -p`), Codex (`codex exec`) and Gemini CLI (`gemini -p`), as
installed by tests/realcli/install.sh, against the stub model of tests/realcli/stub_model.py
(127.0.0.1, answers "OK" at once, so the time is the CLI's and the hooks', not a model's):

- two projects of one isolated user: one with `ctxd chat install X` (for Codex the project and
  its hooks trusted as /hooks trusts them), one without;
- a warm-up session in each (the hooked store then holds a turn, so SessionStart injects);
- then `--runs` sessions in each, alternating (a load change hits both alike); a sample is the
  wall time of the CLI process, one prompt, from start to exit.

It prints the median of each side, the difference (the hooks' cost per session: SessionStart,
the prompt hook, Stop/AfterAgent/SessionEnd with their transcript import) and the ratio.

    python3 benchmarks/bench_realcli.py [--runs 5] [--clis claude,codex,gemini] [--ctxd-src DIR]

What it does not measure: a real model's latency (which hides most of this), sessions with tool
calls or long transcripts, the interactive TUIs.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from _common import REPO, use_ctxd_source

sys.path.insert(0, os.path.join(REPO, "tests", "realcli"))
import realkit  # noqa: E402  (reads the CLIs' cache dir from the real environment, before HOME moves)
from stub_model import StubModel  # noqa: E402

PROMPT = "Remember this: the deploy target is zebra-42 on port 8123."


def isolate(base):
    home = os.path.join(base, "home")
    for var, sub in (("HOME", ""), ("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                     ("XDG_STATE_HOME", ".local/state"), ("XDG_CACHE_HOME", ".cache")):
        os.environ[var] = os.path.join(home, sub) if sub else home
    os.makedirs(os.path.join(home, ".config", "ctxd"), exist_ok=True)
    with open(os.path.join(home, ".config", "ctxd", "config.toml"), "w") as f:
        f.write(f"[trust]\nroots = [{base!r}]\n")
    return home


def session(world, tool, project):
    argv = {"claude": [realkit.cli_path("claude"), "-p", PROMPT],
            "codex": [realkit.cli_path("codex"), "exec", "--skip-git-repo-check", PROMPT],
            "gemini": [realkit.cli_path("gemini"), "-p", PROMPT]}[tool]
    t = time.perf_counter()
    r = subprocess.run(argv, cwd=project, env=world.env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=300)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"{tool} exited {r.returncode}: {r.stderr[-800:]}")
    return dt


def bench(tool, runs, base):
    with StubModel() as stub:
        world = realkit.World(os.path.join(base, tool), stub, home=os.path.join(base, "home"))
        plain = os.path.join(world.base, "plain")
        os.makedirs(plain)
        subprocess.run(["git", "init", "-q", plain], check=True)
        world.ctxd("chat", "install", tool)
        if tool == "codex":
            realkit.trust_codex(world, world.project)
        session(world, tool, world.project)  # warm-up: the store gets a turn, caches fill
        session(world, tool, plain)
        with_hooks, without = [], []
        for _ in range(runs):
            with_hooks.append(session(world, tool, world.project))
            without.append(session(world, tool, plain))
        stored = len(world.log())
    return with_hooks, without, stored


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--clis", default="claude,codex,gemini")
    ap.add_argument("--ctxd-src", default=None, help="measure another ctxd checkout")
    args = ap.parse_args()
    if args.ctxd_src:
        os.environ["PYTHONPATH"] = os.path.abspath(args.ctxd_src) + os.pathsep + os.environ.get("PYTHONPATH", "")
    tools = [t for t in args.clis.split(",") if t]
    missing = [t for t in tools if realkit.cli_path(t) is None]
    if missing:
        raise SystemExit(f"not installed: {', '.join(missing)} (run: bash tests/realcli/install.sh)")
    base = tempfile.mkdtemp(prefix="ctxd-bench-realcli-")
    rows = []
    try:
        isolate(base)
        for tool in tools:
            w, wo, stored = bench(tool, args.runs, base)
            mw, mwo = statistics.median(w), statistics.median(wo)
            rows.append((tool, mw, mwo, stored))
            print(f"{tool}: with hooks {' '.join(f'{x:.2f}' for x in w)} s; without {' '.join(f'{x:.2f}' for x in wo)} s",
                  flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"\nmedian of {args.runs} sessions each (stub model, one prompt a session)\n")
    print(f"{'CLI':<8} {'without':>9} {'with ctxd':>10} {'overhead':>9} {'ratio':>6}  stored")
    for tool, mw, mwo, stored in rows:
        print(f"{tool:<8} {mwo:>8.2f}s {mw:>9.2f}s {mw - mwo:>+8.2f}s {mw / mwo:>6.2f}  {stored} rows")


if __name__ == "__main__":
    use_ctxd_source()
    main()
