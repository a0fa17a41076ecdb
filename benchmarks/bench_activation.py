#!/usr/bin/env python3
"""Time `cd` round trips in real interactive shells: no hook vs ctxd vs direnv.

    python3 benchmarks/bench_activation.py [--rounds N] [--warmup N] [--shells bash,zsh,fish]

Every shell is started by tests/shellkit.py (pexpect, no rc files, isolated
HOME and XDG dirs in a temp dir, a unique prompt string). One sample is the
wall time from sending `cd DIR` to seeing the prompt again (expect_exact),
nothing subtracted. For each shell three sessions run side by side (no hook,
ctxd's hook, direnv's hook) and are sampled round-robin, so drift in machine
load hits all three alike.

Scenarios:
  plain        cd between two plain directories (no project marker above them)
  enter/leave  cd into a python project (.venv/bin/activate + pyproject.toml;
               for direnv the same directory's allowed .envrc) and back out

Targets: plain cd median <= 0.3x direnv; enter/leave average <= 0.8x direnv.
A script, never run as a test.
"""

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import venv

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))
sys.path.insert(0, REPO)

import shellkit  # noqa: E402  (pexpect harness shared with the e2e tests)

PROMPT = shellkit.PROMPT
SETUPS = ("none", "ctxd", "direnv")
TARGET_PLAIN = 0.3
TARGET_ENTER_LEAVE = 0.8

ENVRC = """\
export VIRTUAL_ENV=$PWD/.venv
PATH_add .venv/bin
unset PYTHONHOME
export PYTHONDONTWRITEBYTECODE=1
"""


def version_of(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
        return out.strip().splitlines()[0]
    except Exception:
        return "?"


def quote_path(shell, path):
    return shellkit.fish_literal(path) if shell == "fish" else shlex.quote(path)


class Bench:
    """One shell kind: three live sessions (none / ctxd / direnv)."""

    def __init__(self, shell, home, dirs, with_direnv, hook_file=None):
        self.shell = shell
        self.dirs = dirs
        self.sessions = {}
        setups = SETUPS if with_direnv else SETUPS[:2]
        for setup in setups:
            s = shellkit.ShellSession(shell, home, hook=False, cwd=dirs["a"], timeout=30)
            # pexpect sleeps 50 ms before every send and 0.1 ms after every read
            # by default: both would swamp what is measured here.
            s.child.delaybeforesend = None
            s.child.delayafterread = None
            if shell == "fish":
                # fish (TERM=dumb) repaints prompt + command line on every chunk
                # of typed input, so a fixed prompt string shows up several
                # times per command. Number the prompt by $status_generation
                # (+1 per command line, not per repaint) and wait for the next one.
                s.run("function fish_prompt; printf '[%s]" + PROMPT + "' $status_generation; end")
            if setup == "ctxd":
                if hook_file:
                    s.run(f"source {quote_path(shell, hook_file)}")
                else:
                    s.install_hook()
            elif setup == "direnv":
                if shell == "fish":
                    s.run("direnv hook fish | source")
                else:
                    s.run(f'eval "$(direnv hook {shell})"')
            self.sessions[setup] = s

    def check(self):
        """The hooks really activate and deactivate (else the figures mean nothing)."""
        problems = []
        for setup, s in self.sessions.items():
            s.cd(self.dirs["proj"])
            inside = s.run('echo "VENV=$VIRTUAL_ENV"')
            s.cd(self.dirs["a"])
            outside = s.run('echo "VENV=$VIRTUAL_ENV"')
            want_in = f"VENV={self.dirs['proj']}/.venv" if setup != "none" else "VENV="
            if want_in not in inside.splitlines() or "VENV=" not in outside.splitlines():
                problems.append(f"{self.shell}/{setup}: inside {inside!r}, outside {outside!r}")
        return problems

    def sync(self):
        """Wait for a fresh prompt in every session; learn fish's prompt number.

        Returns {setup: prompts seen that belong to no command}: any at all
        means samples were attributed to the wrong command.
        """
        stray = {}
        self.gen = {}
        for setup, s in self.sessions.items():
            tag = uuid.uuid4().hex[:8]
            s.child.sendline(f"printf '__SYNC_%s__\\n' '{tag}'")
            s.child.expect_exact(f"__SYNC_{tag}__")
            if self.shell == "fish":
                s.child.expect(r"\[(\d+)\]" + PROMPT)
                self.gen[setup] = int(s.child.match.group(1))
                stray[setup] = 0  # a wrong guess shows up as a timeout instead
            else:
                stray[setup] = s.child.before.count(PROMPT)
                s.child.expect_exact(PROMPT)
        return stray

    def next_prompt(self, setup):
        if self.shell != "fish":
            return PROMPT
        self.gen[setup] += 1
        return f"[{self.gen[setup]}]{PROMPT}"

    def cd(self, setup, path):
        """Seconds from sending `cd PATH` to the prompt being back."""
        child = self.sessions[setup].child
        line = "cd " + quote_path(self.shell, path)
        prompt = self.next_prompt(setup)
        t0 = time.perf_counter()
        child.sendline(line)
        child.expect_exact(prompt)
        return time.perf_counter() - t0

    def close(self):
        for s in self.sessions.values():
            s.close()


def hook_from(src, shell, tmp):
    """The hook text a ctxd checkout at *src* renders (its export runs from there too)."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); sys.argv[1:] = ['hook', sys.argv[2]]; "
            "from ctxd._entry import main; main()")
    text = subprocess.run([sys.executable, "-c", code, src, shell], capture_output=True,
                          text=True, check=True).stdout
    path = os.path.join(tmp, f"hook.{shell}")
    with open(path, "w") as f:
        f.write(text)
    return path


def run_shell(shell, home, dirs, args, with_direnv):
    hook_file = hook_from(os.path.abspath(args.ctxd_src), shell, home) if args.ctxd_src else None
    b = Bench(shell, home, dirs, with_direnv, hook_file)
    try:
        problems = b.check()
        if problems:
            raise SystemExit("hook did not (de)activate as expected:\n  " + "\n  ".join(problems))
        setups = list(b.sessions)
        b.sync()
        plain = {s: [] for s in setups}
        enter = {s: [] for s in setups}
        leave = {s: [] for s in setups}
        n_plain, n_pairs = 2 * args.rounds, args.rounds
        # plain cds: a -> b -> a ...; the order of setups rotates every round
        for i in range(args.warmup + n_plain):
            target = dirs["b"] if i % 2 == 0 else dirs["a"]
            order = setups[i % len(setups):] + setups[:i % len(setups)]
            for setup in order:
                dt = b.cd(setup, target)
                if i >= args.warmup:
                    plain[setup].append(dt)
        for setup in setups:  # every session back in a/
            b.cd(setup, dirs["a"])
        for i in range(args.warmup + n_pairs):
            order = setups[i % len(setups):] + setups[:i % len(setups)]
            for setup in order:
                de = b.cd(setup, dirs["proj"])
                dl = b.cd(setup, dirs["a"])
                if i >= args.warmup:
                    enter[setup].append(de)
                    leave[setup].append(dl)
        stray = b.sync()
        if any(stray.values()):
            print(f"WARNING {shell}: stray prompts {stray}: samples are not reliable", flush=True)
        # a last check that the measured loop left things as they should be
        problems = b.check()
        if problems:
            print(f"WARNING {shell}: after the run: {problems}", flush=True)
    finally:
        b.close()
    return plain, enter, leave


def ms(seconds):
    return seconds * 1000.0


def med(xs):
    return ms(statistics.median(xs))


def p90(xs):
    s = sorted(xs)
    return ms(s[min(len(s) - 1, int(round(0.9 * (len(s) - 1))))])


def make_tree(root, home):
    dirs = {
        "a": os.path.join(home, "plain", "a"),
        "b": os.path.join(home, "plain", "b"),
        "proj": os.path.join(home, "proj"),
    }
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    proj = dirs["proj"]
    with open(os.path.join(proj, "pyproject.toml"), "w") as f:
        f.write('[project]\nname = "bench"\nversion = "0"\n')
    venv.EnvBuilder(with_pip=False, symlinks=True).create(os.path.join(proj, ".venv"))
    with open(os.path.join(proj, ".envrc"), "w") as f:
        f.write(ENVRC)
    from ctxd.activation.detectors import find_root

    for key in ("a", "b"):
        r = find_root(dirs[key])
        if r is not None:
            raise SystemExit(f"{dirs[key]} is inside a project ({r}): pick another TMPDIR")
    assert find_root(proj) == proj
    return dirs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=100,
                    help="enter/leave pairs per setup; plain cds are twice this (default 100)")
    ap.add_argument("--warmup", type=int, default=10,
                    help="unmeasured rounds before each scenario (default 10)")
    ap.add_argument("--shells", default="bash,zsh,fish")
    ap.add_argument("--ctxd-src", metavar="DIR",
                    help="benchmark the hook and export of another ctxd checkout (e.g. a git "
                         "worktree with a change to try) instead of `ctxd hook SHELL`")
    args = ap.parse_args()

    shells = [s for s in args.shells.split(",") if s]
    for s in shells:
        if s not in shellkit.SHELLS:
            raise SystemExit(f"unknown shell {s!r}")
    missing = [s for s in shells if not shutil.which(s)]
    for s in missing:
        print(f"note: {s} is not installed; skipped")
    shells = [s for s in shells if s not in missing]
    if not shutil.which("ctxd"):
        raise SystemExit("ctxd is not on PATH (pip install -e .)")
    direnv = shutil.which("direnv")
    if not direnv:
        print("note: direnv is not installed; the direnv column and the ratios are skipped")

    tmp = tempfile.mkdtemp(prefix="ctxd-bench-")
    try:
        home = os.path.join(tmp, "home")
        os.makedirs(home)
        dirs = make_tree(tmp, home)
        env = shellkit.base_env(home)
        # both tools are told to trust the project, each in its own way
        r = subprocess.run(["ctxd", "allow", dirs["proj"]], env=env, cwd=dirs["proj"],
                           capture_output=True, text=True)
        if r.returncode != 0 and "No such command" not in r.stderr:
            raise SystemExit(f"ctxd allow failed: {r.stderr.strip()}")
        if direnv:
            subprocess.run([direnv, "allow", dirs["proj"]], env=env,
                           cwd=dirs["proj"], check=True, capture_output=True)

        import ctxd

        rev = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                             capture_output=True, text=True).stdout.strip()
        vers = [f"ctxd {ctxd.__version__} ({rev or 'no git'})", f"python {sys.version.split()[0]}"]
        if args.ctxd_src:
            vers[0] = f"ctxd from {args.ctxd_src}"
        vers += [version_of([s, "--version"]).replace("GNU bash, version", "bash")
                 .replace("fish, version", "fish").split(" (")[0].split("(")[0]
                 for s in shells]
        if direnv:
            vers.append("direnv " + version_of([direnv, "version"]))
        print("ctxd activation benchmark: cd in real interactive shells (pexpect), cd sent -> prompt back")
        print("  " + ", ".join(vers))
        print(f"  {2 * args.rounds} plain cds, {args.rounds} enter/leave pairs per setup, "
              f"{args.warmup} warmup rounds each; medians in ms, nothing subtracted")
        print(f"  tree in {tmp}", flush=True)

        results = {}
        for shell in shells:
            t0 = time.time()
            results[shell] = run_shell(shell, home, dirs, args, bool(direnv))
            print(f"  {shell}: done in {time.time() - t0:.0f}s", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    # ---- detail -------------------------------------------------------------
    print()
    print("detail (median / p90 ms)")
    hdr = f"{'shell':<6} {'scenario':<12}" + "".join(f" {s:>15}" for s in SETUPS if s != "direnv" or direnv)
    print(hdr)
    for shell, (plain, enter, leave) in results.items():
        for name, data in (("plain cd", plain), ("enter", enter), ("leave", leave)):
            cells = "".join(f" {med(data[s]):>7.2f} /{p90(data[s]):>6.2f}" for s in data)
            print(f"{shell:<6} {name:<12}{cells}")

    # ---- summary ------------------------------------------------------------
    print()
    print("summary (median ms; overhead = setup median - no-hook median)")
    cols = f"{'shell':<6} {'scenario':<16} {'no hook':>8} {'ctxd':>8} {'direnv':>8} " \
           f"{'ctxd ovh':>9} {'direnv ovh':>10} {'ctxd/direnv':>12} {'target':>8}  result"
    print(cols)
    print("-" * len(cols))
    verdicts = []
    for shell, (plain, enter, leave) in results.items():
        avg = {s: [(e + l) / 2 for e, l in zip(enter[s], leave[s])] for s in enter}
        rows = (("plain cd", plain, TARGET_PLAIN), ("enter", enter, None),
                ("leave", leave, None), ("enter/leave avg", avg, TARGET_ENTER_LEAVE))
        for name, data, target in rows:
            base = med(data["none"])
            c = med(data["ctxd"])
            line = f"{shell:<6} {name:<16} {base:>8.2f} {c:>8.2f} "
            if "direnv" in data:
                d = med(data["direnv"])
                ratio = c / d
                verdict = ""
                if target is not None:
                    verdict = "PASS" if ratio <= target else "MISS"
                    verdicts.append((shell, name, verdict))
                line += (f"{d:>8.2f} {c - base:>+9.2f} {d - base:>+10.2f} {ratio:>11.2f}x "
                         f"{('<=%.1fx' % target) if target else '':>8}  {verdict}")
            else:
                line += f"{'-':>8} {c - base:>+9.2f} {'-':>10} {'-':>12} {'':>8}"
            print(line)
    if verdicts:
        missed = [f"{s} {n}" for s, n, v in verdicts if v == "MISS"]
        print()
        print("targets: " + (f"{len(verdicts) - len(missed)}/{len(verdicts)} met"
                             + (f"; missed: {', '.join(missed)}" if missed else "")))
    # "enter/leave avg" is the median over pairs of (enter + leave) / 2.


if __name__ == "__main__":
    main()
