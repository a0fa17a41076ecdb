#!/usr/bin/env python3
"""Hook overhead in real interactive shells, as a ratio to direnv's: cd and shell start-up.

    python3 benchmarks/bench_activation.py [--rounds N] [--warmup N] [--starts N] [--shells bash,zsh,fish]

Every shell is started by tests/shellkit.py (pexpect, no rc files, isolated
HOME and XDG dirs in a temp dir, a unique prompt string). A cd sample is the
wall time from sending `cd DIR` to seeing the prompt again (expect_exact). For
each shell three sessions run side by side (no hook, ctxd's hook, direnv's
hook) and are sampled round-robin, so drift in machine load hits all three
alike. The figure compared is the overhead over no hook (setup median minus
no-hook median), as a ratio to direnv's overhead.

Scenarios:
  plain     cd between two plain directories (no project marker above them)
  revisit   cd into a python project this shell entered before, and back out
            ((enter + leave) / 2; for direnv the same directory's allowed .envrc)
  first     cd into a python project this shell never entered, and back out
            (a new project every round, the same one for the three sessions)
  startup   a new interactive shell reading an rc file that holds the setup's
            line (ctxd: the lines `ctxd setup` writes; direnv: its hook line),
            spawn -> first prompt; the ctxd shells start with a `ctxd` first on
            PATH that leaves a mark if anything runs it

Targets (overhead / direnv's overhead): plain <= 0.10, revisit <= 0.20,
first <= 0.50, startup <= 1.5. A script, never run as a test.
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
SHELLS = ("bash", "zsh", "fish")
SETUPS = ("none", "ctxd", "direnv")
TARGETS = {"plain": 0.10, "revisit": 0.20, "first": 0.50, "startup": 1.5}

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
            "import runpy; runpy.run_module('ctxd', run_name='__main__')")  # python -m ctxd, any version
    # the bench's HOME: `ctxd hook` also writes its start-up copy, never into the user's cache
    env = dict(shellkit.base_env(tmp), PATH=os.environ.get("PATH", ""))
    text = subprocess.run([sys.executable, "-c", code, src, shell], capture_output=True,
                          text=True, check=True, env=env).stdout
    path = os.path.join(tmp, f"hook.{shell}")
    with open(path, "w") as f:
        f.write(text)
    return path


def rounds_of(b, setups, n, warmup, sample):
    """*sample(setup, i)* for n + warmup rounds, the order of setups rotating
    every round; {setup: [seconds]} without the warmup rounds."""
    out = {s: [] for s in setups}
    for i in range(warmup + n):
        order = setups[i % len(setups):] + setups[:i % len(setups)]
        for setup in order:
            dt = sample(setup, i)
            if i >= warmup:
                out[setup].append(dt)
    return out


def run_shell(shell, home, dirs, args, with_direnv):
    hook_file = hook_from(os.path.abspath(args.ctxd_src), shell, home) if args.ctxd_src else None
    b = Bench(shell, home, dirs, with_direnv, hook_file)
    try:
        problems = b.check()
        if problems:
            raise SystemExit("hook did not (de)activate as expected:\n  " + "\n  ".join(problems))
        setups = list(b.sessions)
        b.sync()
        res = {}
        # plain cds: a -> b -> a ...
        res["plain"] = rounds_of(b, setups, 2 * args.rounds, args.warmup,
                                 lambda setup, i: b.cd(setup, dirs["b"] if i % 2 == 0 else dirs["a"]))
        for setup in setups:  # every session back in a/
            b.cd(setup, dirs["a"])

        def pair(setup, proj):
            return (b.cd(setup, proj) + b.cd(setup, dirs["a"])) / 2

        # revisit: the project every session entered in check() (and in the warmup)
        res["revisit"] = rounds_of(b, setups, args.rounds, args.warmup,
                                   lambda setup, i: pair(setup, dirs["proj"]))
        # first visit: project i, never entered by any session before round i
        res["first"] = rounds_of(b, setups, args.rounds, args.warmup,
                                 lambda setup, i: pair(setup, dirs["fresh"][i]))
        stray = b.sync()
        if any(stray.values()):
            print(f"WARNING {shell}: stray prompts {stray}: samples are not reliable", flush=True)
        # a last check that the measured loop left things as they should be
        problems = b.check()
        if problems:
            print(f"WARNING {shell}: after the run: {problems}", flush=True)
    finally:
        b.close()
    res["startup"] = run_startup(shell, home, dirs, args, setups, hook_file)
    return res


# -- shell start-up -------------------------------------------------------------

PRELUDE = {
    "bash": f"PS1='{PROMPT}'; PS2=''; bind 'set enable-bracketed-paste off' 2>/dev/null\n",
    "zsh": f"PS1='{PROMPT}'; PS2=''; unsetopt zle 2>/dev/null; unsetopt prompt_sp\n",
    "fish": f"function fish_prompt; printf '{PROMPT}'; end; function fish_right_prompt; end\n"
            "set -g fish_autosuggestion_enabled 0\n",
}


def startup_files(shell, home, setups, hook_file, env):
    """{setup: (argv, env)} for a new interactive shell reading that setup's rc file."""
    from ctxd.shells import get_shell
    from ctxd.shells.base import console_script

    sh = get_shell(shell)
    lines = {"none": ""}
    if hook_file:
        lines["ctxd"] = f"source {quote_path(shell, hook_file)}\n"
    else:
        # the lines `ctxd setup --write` appends, with the start-up copy of the
        # hook written first (what setup --write and every `ctxd hook` do)
        r = subprocess.run(["ctxd", "hook", shell], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"ctxd hook {shell} failed: {r.stderr.strip()}")
        from ctxd.shells.base import hook_cache_file

        lines["ctxd"] = sh.rc_block(console_script(), hook_cache_file(shell, env))
    lines["direnv"] = ("direnv hook fish | source\n" if shell == "fish"
                       else f'eval "$(direnv hook {shell})"\n')
    out = {}
    for setup in setups:
        d = os.path.join(home, "startup", setup)
        os.makedirs(d, exist_ok=True)
        e = dict(env)
        if shell == "bash":
            rc = os.path.join(d, ".bashrc")
            argv = [shutil.which("bash"), "--rcfile", rc, "-i"]
        elif shell == "zsh":
            rc = os.path.join(d, ".zshrc")
            e["ZDOTDIR"] = d
            argv = [shutil.which("zsh"), "-i"]
        else:
            rc = os.path.join(d, "config.fish")
            argv = [shutil.which("fish"), "--no-config", "-i", "-C", f"source {quote_path(shell, rc)}"]
        with open(rc, "w") as f:
            f.write(PRELUDE[shell] + lines[setup])
        out[setup] = (argv, e)
    return out


def trap_bin(home):
    """A bin dir whose `ctxd` leaves a mark before running the real one."""
    d = os.path.join(home, "trapbin")
    os.makedirs(d, exist_ok=True)
    mark = os.path.join(home, "ctxd-ran-at-startup")
    path = os.path.join(d, "ctxd")
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\ntouch {shlex.quote(mark)}\nexec {shlex.quote(shutil.which('ctxd'))} \"$@\"\n")
    os.chmod(path, 0o755)
    return d, mark


def run_startup(shell, home, dirs, args, setups, hook_file):
    import pexpect

    env = shellkit.base_env(home)
    trap, mark = trap_bin(home)
    env["PATH"] = trap + ":" + env["PATH"]
    files = startup_files(shell, home, setups, hook_file, env)
    if os.path.exists(mark):
        os.unlink(mark)

    def start(setup, i):
        argv, e = files[setup]
        t0 = time.perf_counter()
        child = pexpect.spawn(argv[0], argv[1:], env=e, cwd=dirs["a"], encoding="utf-8",
                              codec_errors="replace", timeout=30, dimensions=(50, 400))
        child.delaybeforesend = None
        child.delayafterread = None
        child.expect_exact(PROMPT)
        dt = time.perf_counter() - t0
        if i == 0 and setup == "ctxd":  # the hook is really there
            tag = uuid.uuid4().hex[:8]
            child.sendline(f"echo \"hook=$_CTXD_HOOK\" {tag}")
            child.expect_exact(f"hook={shell} {tag}")
        child.close(force=True)
        return dt

    res = rounds_of(None, setups, args.starts, max(2, args.warmup // 5), start)
    if "ctxd" in setups and not hook_file and os.path.exists(mark):
        print(f"WARNING {shell}: ctxd ran at shell start-up (the start-up copy of the hook stood down)",
              flush=True)
    return res


def ms(seconds):
    return seconds * 1000.0


def med(xs):
    return ms(statistics.median(xs))


def p90(xs):
    s = sorted(xs)
    return ms(s[min(len(s) - 1, int(round(0.9 * (len(s) - 1))))])


def python_dir(path, envrc=True):
    """A python project as the detectors see one (.venv/bin/activate + pyproject.toml),
    with the same environment in an .envrc for direnv."""
    os.makedirs(os.path.join(path, ".venv", "bin"), exist_ok=True)
    with open(os.path.join(path, "pyproject.toml"), "w") as f:
        f.write('[project]\nname = "bench"\nversion = "0"\n')
    if not os.path.exists(os.path.join(path, ".venv", "bin", "activate")):
        with open(os.path.join(path, ".venv", "bin", "activate"), "w") as f:
            f.write("# venv\n")
    if envrc:
        with open(os.path.join(path, ".envrc"), "w") as f:
            f.write(ENVRC)
    return path


def make_tree(home, n_fresh):
    dirs = {
        "a": os.path.join(home, "plain", "a"),
        "b": os.path.join(home, "plain", "b"),
        "proj": os.path.join(home, "proj"),
    }
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    venv.EnvBuilder(with_pip=False, symlinks=True).create(os.path.join(dirs["proj"], ".venv"))
    python_dir(dirs["proj"])
    dirs["fresh"] = [python_dir(os.path.join(home, "fresh", f"p{i:04d}")) for i in range(n_fresh)]
    from ctxd.activation.detectors import find_root

    for key in ("a", "b"):
        r = find_root(dirs[key])
        if r is not None:
            raise SystemExit(f"{dirs[key]} is inside a project ({r}): pick another TMPDIR")
    assert find_root(dirs["proj"]) == dirs["proj"]
    return dirs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=60,
                    help="revisit and first-visit pairs per setup; plain cds are twice this (default 60)")
    ap.add_argument("--warmup", type=int, default=10,
                    help="unmeasured rounds before each cd scenario (default 10)")
    ap.add_argument("--starts", type=int, default=40, help="shell start-ups per setup (default 40)")
    ap.add_argument("--shells", default="bash,zsh,fish")
    ap.add_argument("--ctxd-src", metavar="DIR",
                    help="benchmark the hook and export of another ctxd checkout (e.g. a git "
                         "worktree with a change to try) instead of `ctxd hook SHELL`; its "
                         "start-up sources the rendered hook")
    args = ap.parse_args()

    shells = [s for s in args.shells.split(",") if s]
    for s in shells:
        if s not in SHELLS:
            raise SystemExit(f"unknown shell {s!r} (this benchmark covers {', '.join(SHELLS)})")
    missing = [s for s in shells if not shutil.which(s)]
    for s in missing:
        print(f"note: {s} is not installed; skipped")
    shells = [s for s in shells if s not in missing]
    if not shutil.which("ctxd"):
        raise SystemExit("ctxd is not on PATH (pip install -e .)")
    direnv = shutil.which("direnv")
    if not direnv:
        print("note: direnv is not installed; the direnv column and the ratios are skipped")

    load0 = os.getloadavg()
    tmp = tempfile.mkdtemp(prefix="ctxd-bench-")
    try:
        home = os.path.join(tmp, "home")
        os.makedirs(home)
        dirs = make_tree(home, (args.warmup + args.rounds) * len(shells))
        env = shellkit.base_env(home)
        if direnv:
            for d in [dirs["proj"]] + dirs["fresh"]:
                subprocess.run([direnv, "allow", d], env=env, cwd=d, check=True, capture_output=True)

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
        print("ctxd activation benchmark: real interactive shells (pexpect); overhead over no hook vs direnv's")
        print("  " + ", ".join(vers))
        print(f"  {2 * args.rounds} plain cds, {args.rounds} revisit and {args.rounds} first-visit "
              f"enter/leave pairs, {args.starts} start-ups per setup; {args.warmup} warmup rounds each")
        print(f"  tree in {tmp}; load average {load0[0]:.2f} at the start", flush=True)

        results = {}
        fresh = dirs["fresh"]
        per = args.warmup + args.rounds
        for k, shell in enumerate(shells):
            t0 = time.time()
            dirs["fresh"] = fresh[k * per:(k + 1) * per]  # never entered by any shell before
            results[shell] = run_shell(shell, home, dirs, args, bool(direnv))
            print(f"  {shell}: done in {time.time() - t0:.0f}s", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load1 = os.getloadavg()

    # ---- detail -------------------------------------------------------------
    print()
    print("detail (median / p90 ms)")
    hdr = f"{'shell':<6} {'scenario':<9}" + "".join(f" {s:>15}" for s in SETUPS if s != "direnv" or direnv)
    print(hdr)
    for shell, res in results.items():
        for name in TARGETS:
            data = res[name]
            cells = "".join(f" {med(data[s]):>7.2f} /{p90(data[s]):>6.2f}" for s in data)
            print(f"{shell:<6} {name:<9}{cells}")

    # ---- summary ------------------------------------------------------------
    print()
    print("summary (median ms; overhead = setup median - no-hook median; ratio = ctxd's overhead / direnv's)")
    cols = f"{'shell':<6} {'scenario':<9} {'no hook':>8} {'ctxd':>8} {'direnv':>8} " \
           f"{'ctxd ovh':>9} {'direnv ovh':>10} {'ratio':>7} {'target':>7}  result"
    print(cols)
    print("-" * len(cols))
    verdicts = []
    for shell, res in results.items():
        for name, target in TARGETS.items():
            data = res[name]
            base = med(data["none"])
            c = med(data["ctxd"])
            line = f"{shell:<6} {name:<9} {base:>8.2f} {c:>8.2f} "
            if "direnv" in data:
                d = med(data["direnv"])
                co, do = c - base, d - base
                if do > 0:
                    ratio = max(co, 0.0) / do
                    verdict = "PASS" if ratio <= target else "MISS"
                    rtext = f"{ratio:>6.2f}x"
                else:  # direnv indistinguishable from no hook: no ratio to speak of
                    verdict, rtext = "n/a", f"{'-':>7}"
                verdicts.append((shell, name, verdict))
                line += (f"{d:>8.2f} {co:>+9.2f} {do:>+10.2f} {rtext} {'<=%.2gx' % target:>7}  {verdict}")
            else:
                line += f"{'-':>8} {c - base:>+9.2f} {'-':>10} {'-':>7} {'':>7}"
            print(line)
    if verdicts:
        missed = [f"{s} {n}" for s, n, v in verdicts if v == "MISS"]
        print()
        print("targets: " + (f"{sum(v == 'PASS' for _, _, v in verdicts)}/{len(verdicts)} met"
                             + (f"; missed: {', '.join(missed)}" if missed else "")))
    # how much to trust the figures: the spread of the no-hook samples
    spread = ", ".join(f"{shell} {name} {p90(res[name]['none']) - med(res[name]['none']):.2f}"
                       for shell, res in results.items() for name in TARGETS)
    print(f"noise (no-hook p90 - median, ms): {spread}")
    print(f"load average {load0[0]:.2f} at the start, {load1[0]:.2f} at the end "
          f"({os.cpu_count()} CPUs); revisit/first are medians over pairs of (enter + leave) / 2")


if __name__ == "__main__":
    main()
