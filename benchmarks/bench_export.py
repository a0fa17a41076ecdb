#!/usr/bin/env python3
"""Time `ctxd export bash` as a whole process against a bare `python -c pass`.

    python3 benchmarks/bench_export.py [--runs N] [--warmup N] [--no-hyperfine]

Commands, all with this interpreter (sys.executable):
  python -c pass          the reference the target is set against
  python -I -S -c pass    the floor for the hook's argv (no site, no .pth files)
  hook argv               ctxd.shells.base.export_command("bash", env) + ["export", "bash"],
                          exactly what the shell hooks run: it loads the hot path's
                          modules from the export bundle `ctxd hook` writes (written
                          here into the isolated cache first; ctxd/fastpath/bundle.py)
  hook, no bundle         export_command() + ["export", "bash"]: the same without the
                          bundle (importlib loads every module), as before it or
                          while it stands down after an upgrade
  ctxd script             the `ctxd` console script: ctxd export bash

Scenarios (isolated HOME/XDG in a temp dir; the project is a python project
with .venv/bin/activate and pyproject.toml, trusted with `ctxd allow`):
  active      in the project with its state active: export has nothing to do
  plain       in a plain directory with no state: nothing to do
  enter       in the project with no state: prints the activation
  leave       in a plain directory with the project's state: prints the undo

hyperfine (--shell=none, --export-json) when installed, else a subprocess
loop. Target: hook argv and console script <= 1.5x `python -c pass`.
Then `python -X importtime` of the export path: none of click, psutil,
shellingham, platformdirs may be imported; the heaviest imports are listed.
A script, never run as a test.
"""

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import venv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import REPO, isolated_env, read_hyperfine, use_ctxd_source  # noqa: E402

use_ctxd_source()  # must win before ctxd is first imported

TARGET = 1.5
FORBIDDEN = ("click", "psutil", "shellingham", "platformdirs")
SCENARIOS = (
    ("active", "project, active state (no-op)"),
    ("plain", "plain dir, no state (no-op)"),
    ("enter", "enter: project, no state"),
    ("leave", "leave: plain dir, project state"),
)


def console_script():
    """The real `ctxd` script of this interpreter, and what PATH resolves (maybe a shim)."""
    script = os.path.join(sysconfig.get_path("scripts"), "ctxd")
    if not os.path.isfile(script):
        script = shutil.which("ctxd")
    on_path = shutil.which("ctxd")
    return script, on_path


def activated_env(hook_argv, env, cwd):
    """The environment a bash shell has after the hook's export ran in *cwd*."""
    script = 'eval "$("$@")"; env -0'
    out = subprocess.run(["bash", "-c", script, "bash", *hook_argv], env=env, cwd=cwd,
                         capture_output=True, check=True).stdout
    result = {}
    for item in out.split(b"\0"):
        if item:
            k, _, v = item.partition(b"=")
            result[os.fsdecode(k)] = os.fsdecode(v)
    for k in ("_", "SHLVL", "OLDPWD"):
        result.pop(k, None)
    return result


def build(tmp):
    home = os.path.join(tmp, "home")
    proj = os.path.join(home, "proj")
    plain = os.path.join(home, "plain")
    os.makedirs(plain)
    os.makedirs(proj)
    with open(os.path.join(proj, "pyproject.toml"), "w") as f:
        f.write('[project]\nname = "bench"\nversion = "0"\n')
    venv.EnvBuilder(with_pip=False, symlinks=True).create(os.path.join(proj, ".venv"))
    from ctxd.activation.detectors import find_root

    if find_root(plain) is not None:
        raise SystemExit(f"{plain} is inside a project: pick another TMPDIR")
    script, _ = console_script()
    r = subprocess.run([script, "allow", proj], env=isolated_env(home, proj), cwd=proj,
                       capture_output=True, text=True)
    if r.returncode != 0 and "No such command" not in r.stderr:
        raise SystemExit(f"ctxd allow failed: {r.stderr.strip()}")
    return home, proj, plain


def scenarios(home, proj, plain, hook_argv):
    """{key: (cwd, env)}."""
    clean_proj = isolated_env(home, proj)
    active = activated_env(hook_argv, clean_proj, proj)
    if "CTXD_STATE" not in active:
        raise SystemExit("entering the project did not activate it (no CTXD_STATE)")
    leave_env = dict(active, PWD=plain)
    return {
        "active": (proj, active),
        "plain": (plain, isolated_env(home, plain)),
        "enter": (proj, clean_proj),
        "leave": (plain, leave_env),
    }


def time_hyperfine(commands, cwd, env, runs, warmup, chunks=5):
    """({name: [wall seconds]}, {name: [cpu seconds]}) via hyperfine --shell=none.

    hyperfine runs all of one command, then all of the next: on a busy
    machine drift lands on one command. So the runs go in *chunks* passes.
    CPU time (user + system) is hyperfine's mean per pass.
    """
    times = {name: [] for name, _ in commands}
    cpu = {name: [] for name, _ in commands}
    per = max(1, -(-runs // chunks))
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        for i in range(chunks):
            argv = ["hyperfine", "--shell=none", "--style", "none",
                    "--warmup", str(warmup if i == 0 else 2), "--runs", str(per), "--export-json", out]
            for name, cmd in commands:
                argv += ["--command-name", name, shlex.join(cmd)]
            subprocess.run(argv, cwd=cwd, env=env, check=True, capture_output=True)
            read_hyperfine(out, times, cpu)
        return times, cpu
    finally:
        os.unlink(out)


def time_loop(commands, cwd, env, runs, warmup):
    """Like time_hyperfine, interleaving the commands run by run (CPU from getrusage)."""
    import resource

    times = {name: [] for name, _ in commands}
    cpu = {name: [] for name, _ in commands}
    for i in range(warmup + runs):
        for name, cmd in commands:
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            dt = time.perf_counter() - t0
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if i >= warmup:
                times[name].append(dt)
                cpu[name].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return times, cpu


# -- importtime ----------------------------------------------------------------

def importtime(argv, cwd, env):
    """[(depth, name, self_us, cumulative_us, parent)] in the order Python printed them."""
    r = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    rows = []
    for line in r.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        _, rest = line.split(":", 1)
        self_us, cum_us, name = rest.split("|", 2)
        depth = (len(name) - len(name.lstrip(" ")) - 1) // 2
        rows.append([depth, name.strip(), int(self_us), int(cum_us), None])
    # children are printed before their parent, one level deeper
    pending = {}
    for row in rows:
        depth = row[0]
        for child in pending.pop(depth + 1, []):
            child[4] = row[1]
        for d in [d for d in pending if d > depth + 1]:
            pending.pop(d)
        pending.setdefault(depth, []).append(row)
    return rows


def heaviest(rows, n=8):
    """The costliest imports ctxd causes: non-ctxd modules imported by ctxd code."""
    out = []
    started = False
    for _depth, name, _self, cum, parent in rows:
        if name.startswith("ctxd"):
            started = True
            continue
        if parent is not None and parent.startswith("ctxd"):
            out.append((cum, name, parent))
        elif parent is None and started:
            out.append((cum, name, "a function-level import"))
    out.sort(reverse=True)
    return out[:n]


def fmt_ms(s):
    return f"{s * 1000:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100, help="timed runs per command (default 100)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed runs first (default 10)")
    ap.add_argument("--no-hyperfine", action="store_true", help="use the subprocess loop")
    ap.add_argument("--ctxd-src", metavar="DIR",
                    help="measure another ctxd checkout (e.g. a worktree with a change to try); "
                         "its console script is emulated by python -c")
    args = ap.parse_args()

    from ctxd.fastpath import bundle
    from ctxd.shells.base import export_command

    tmp = tempfile.mkdtemp(prefix="ctxd-bench-export-")
    bundle_env = isolated_env(os.path.join(tmp, "home"), tmp)  # where build() puts HOME
    hook_argv = export_command("bash", bundle_env) + ["export", "bash"]
    no_bundle_argv = export_command() + ["export", "bash"]
    script, on_path = console_script()
    script_argv = [script]
    if args.ctxd_src:
        script_argv = [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv.pop(1)); "
                       "import runpy; runpy.run_module('ctxd', run_name='__main__')", os.path.abspath(args.ctxd_src)]
        on_path = None
    py = sys.executable
    commands = [
        ("python -c pass", [py, "-c", "pass"]),
        ("python -I -S -c pass", [py, "-I", "-S", "-c", "pass"]),
        ("hook argv", hook_argv),
        ("ctxd script", script_argv + ["export", "bash"]),
        ("hook, no bundle", no_bundle_argv),
    ]
    if on_path and os.path.realpath(on_path) != os.path.realpath(script):
        commands.append(("ctxd on PATH", [on_path, "export", "bash"]))
    use_hf = shutil.which("hyperfine") and not args.no_hyperfine
    timer = time_hyperfine if use_hf else time_loop

    rev = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip()
    print("ctxd export benchmark: whole-process time of `ctxd export bash`")
    where = f"from {args.ctxd_src}" if args.ctxd_src else f"at {rev or '?'}"
    print(f"  ctxd {where}; python {sys.version.split()[0]} ({py})")
    print("  hook argv: " + " ".join(shlex.quote(a) if len(a) < 60 else shlex.quote(a[:57] + "...")
                                     for a in hook_argv))
    shown = shlex.join(script_argv)[:100]
    print(f"  ctxd script: {shown}"
          + (f"; `ctxd` on PATH is {on_path} (measured too)" if len(commands) > 5 else ""))
    if use_hf:
        hf = subprocess.run(["hyperfine", "--version"], capture_output=True, text=True).stdout.split()[-1]
        how = f"hyperfine {hf} --shell=none"
    else:
        how = "subprocess loop" + ("" if shutil.which("hyperfine") else " (hyperfine not installed)")
    print(f"  timer: {how}; {args.runs} runs, {args.warmup} warmup, medians in ms", flush=True)

    results = {}
    cpu = {}
    imports = {}
    try:
        home, proj, plain = build(tmp)
        if bundle.write("bash", bundle_env) is None:
            raise SystemExit("could not write the export bundle")
        scen = scenarios(home, proj, plain, hook_argv)
        for key, label in SCENARIOS:
            cwd, env = scen[key]
            out = {}
            for name, cmd in commands[2:]:
                r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True)
                if r.returncode != 0:
                    raise SystemExit(f"{name} failed in {key} (exit {r.returncode}): "
                                     f"{r.stderr.decode(errors='replace')[-500:]}")
                out[name] = len(r.stdout)
            noop = "prints nothing" if out["hook argv"] == 0 else f"prints {out['hook argv']} bytes"
            results[key], cpu[key] = timer(commands, cwd, env, args.runs, args.warmup)
            print(f"  {label}: done (export {noop})", flush=True)
            script_run = script_argv[1:] if args.ctxd_src else script_argv
            trace = [py, "-X", "importtime"]
            imports[key] = {
                # importlib's own trace: what the path imports, bundle or not
                "hook argv": importtime(trace + no_bundle_argv[1:], cwd, env),
                "ctxd script": importtime(trace + script_run + ["export", "bash"], cwd, env),
            }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    # ---- imports --------------------------------------------------------------
    print()
    for which in ("hook argv", "ctxd script"):
        seen = set()
        for key in imports:
            seen.update(row[1] for row in imports[key][which])
        bad = sorted(m for m in seen if m.split(".")[0] in FORBIDDEN)
        traced = all(any(r[1] == "ctxd.activation.export" for r in imports[key][which]) for key in imports)
        if not traced:
            verdict = "FAIL, -X importtime did not trace the export path"
        else:
            verdict = "OK, none imported" if not bad else "FAIL, imported: " + ", ".join(bad)
        print(f"import check ({which}, all 4 scenarios): {', '.join(FORBIDDEN)}: {verdict}")
    rows = imports["enter"]["hook argv"]
    total = sum(r[2] for r in rows)
    ctxd_self = sum(r[2] for r in rows if r[1].startswith("ctxd"))
    print(f"heaviest imports caused by ctxd code (hook argv, enter; -X importtime cumulative, "
          f"inflated by the tracing; all imports {total / 1000:.1f} ms, ctxd's own modules "
          f"{ctxd_self / 1000:.1f} ms):")
    for cum, name, parent in heaviest(rows):
        print(f"  {cum / 1000:6.1f} ms  {name:<28} <- {parent}")

    # ---- summary ----------------------------------------------------------------
    print()
    site = statistics.median(results["plain"]["python -c pass"]) - statistics.median(
        results["plain"]["python -I -S -c pass"])
    pth = site_pth_imports()
    print(f"note: `python -c pass` minus `python -I -S -c pass` = {site * 1000:.1f} ms here (site"
          + (f"; .pth files that import code: {', '.join(pth)})" if pth else ")"))
    print()
    print(f"summary (median ms; ratios: / `python -c pass` (target <= {TARGET}x), "
          "and hook argv / `python -I -S -c pass`, its own floor)")
    head = (f"{'scenario':<32}{'-c pass':>8}{'-I -S':>7}{'hook':>7}{'script':>8}"
            f"{'hook/pass':>12}{'script/pass':>13}{'hook/floor':>12}")
    print(head)
    print("-" * len(head))
    verdicts = []
    for key, label in SCENARIOS:
        m = {n: statistics.median(v) for n, v in results[key].items()}
        ref, floor = m["python -c pass"], m["python -I -S -c pass"]
        hook, scr = m["hook argv"], m["ctxd script"]
        cells = []
        for name, v in (("hook argv", hook), ("ctxd script", scr)):
            ok = v / ref <= TARGET
            verdicts.append((label, name, ok))
            cells.append(f"{v / ref:.2f}x {'ok' if ok else 'MISS'}")
        print(f"{label:<32}{fmt_ms(ref):>8}{fmt_ms(floor):>7}{fmt_ms(hook):>7}{fmt_ms(scr):>8}"
              f"{cells[0]:>12}{cells[1]:>13}{hook / floor:>11.2f}x")
        print(f"{'  (hook, no bundle: ' + fmt_ms(m['hook, no bundle']) + ' ms)':<32}")
        if "ctxd on PATH" in m:
            print(f"{'  (ctxd on PATH: ' + fmt_ms(m['ctxd on PATH']) + ' ms)':<32}")
    print()
    print("CPU time (user + system, mean ms): steadier than wall time on a busy machine")
    print(head)
    for key, label in SCENARIOS:
        c = {n: statistics.mean(v) for n, v in cpu[key].items()}
        ref, floor = c["python -c pass"], c["python -I -S -c pass"]
        print(f"{label:<32}{fmt_ms(ref):>8}{fmt_ms(floor):>7}{fmt_ms(c['hook argv']):>7}"
              f"{fmt_ms(c['ctxd script']):>8}{c['hook argv'] / ref:>11.2f}x{c['ctxd script'] / ref:>12.2f}x"
              f"{c['hook argv'] / floor:>11.2f}x")
    print()
    missed = [f"{n} ({label})" for label, n, ok in verdicts if not ok]
    print(f"targets (wall medians): {len(verdicts) - len(missed)}/{len(verdicts)} met"
          + (f"; missed: {', '.join(missed)}" if missed else ""))
    med = {k: {n: statistics.median(v) for n, v in results[k].items()} for k, _ in SCENARIOS}
    vs_floor = [med[k]["hook argv"] / med[k]["python -I -S -c pass"] for k, _ in SCENARIOS]
    print(f"hook argv / site-free floor: {min(vs_floor):.2f}x-{max(vs_floor):.2f}x "
          f"(the 1.5x bar against `python -I -S -c pass`: "
          f"{'met' if max(vs_floor) <= TARGET else 'missed'})")


def site_pth_imports():
    """.pth files in site-packages that run code at every start (they cost `python -c pass`)."""
    found = []
    d = sysconfig.get_path("purelib")
    try:
        names = sorted(os.listdir(d))
    except OSError:
        return found
    for name in names:
        if name.endswith(".pth"):
            try:
                with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
                    if any(line.startswith(("import ", "import\t")) for line in f):
                        found.append(name)
            except OSError:
                pass
    return found


if __name__ == "__main__":
    main()
