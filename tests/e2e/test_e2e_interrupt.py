"""Ctrl-C while the hook runs, in real interactive shells: the environment is
afterwards either exactly the old one or exactly the new one, never half of
each, and the shell keeps working.

- SIGINT hammering the shell while it evaluates a big export (2,000
  variables), starting at several points of the evaluation, and while it
  undoes it: the change completes. (Against hooks without SIGINT handling
  this fails in bash, bash-compat32 and zsh; fish's `source` was not cut
  short by SIGINT even then.)
- Ctrl-C at the terminal while ctxd itself is busy (a slow on_enter hook):
  ctxd dies, none of its output runs, the hook says so, and the next prompt
  activates the project.

``bash-compat32`` is bash with BASH_COMPAT=3.2 (3.2's handling of an
interrupted command list).
"""

import os
import signal
import time

import pytest

from e2ekit import comparable, output_lines, plain_dir

N = 2000
VARIANTS = ("bash", "bash-compat32", "zsh", "fish")


def _start(sessions, variant):
    if variant == "bash-compat32":
        s = sessions("bash", env={"BASH_COMPAT": "3.2"})
        assert s.run("shopt compat32 | tr -s ' \\t' ' '") == "compat32 on"
        return s
    return sessions(variant)


def _rc(directory, env, hooks=""):
    lines = ["[env]"] + [f'{k} = "{v}"' for k, v in env.items()]
    with open(os.path.join(directory, ".contextrc"), "w") as f:
        f.write("\n".join(lines) + "\n" + hooks)


def _send_cd(s, path):
    s.child.sendline(f"cd '{path}'")


def _wait_for(path, timeout=30):
    end = time.monotonic() + timeout
    while not os.path.exists(path):
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.005)


def _wait_gone(pid, timeout=30):
    end = time.monotonic() + timeout
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        assert time.monotonic() < end, "ctxd export never finished"
        time.sleep(0.001)


def _hammer(s, seconds=2.0):
    """SIGINT to the shell itself every few ms for *seconds* (a stimulus, not a
    measurement: long enough to cover the evaluation; ctxd, its child, is not
    signalled, so the shell has to cope alone), then wait for it to settle."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        os.kill(s.child.pid, signal.SIGINT)
        time.sleep(0.002)
    time.sleep(0.3)


def _alive(s):
    """The shell runs commands again. (After SIGINTs at its idle prompt, zsh
    without zle drops the next line it reads, ctxd or not: allow for that.)"""
    for _ in range(3):
        if "alive" in s.run("echo alive").splitlines():
            return True
    return False


def _project_part(env, want):
    """The *want* variables as they are in *env* (missing ones as None)."""
    return {k: env.get(k) for k in want}


@pytest.mark.parametrize("variant", VARIANTS)
def test_sigint_during_a_big_eval_applies_all_or_nothing(variant, sessions, tmp_path):
    proj = plain_dir(tmp_path / "proj")
    out = plain_dir(tmp_path / "out")
    started = os.path.join(str(tmp_path), "export-started")
    want = {f"CT_V{i:04d}": f"value {i} 'q' \\ {'x' * 20}" for i in range(N)}
    # on_enter runs inside ctxd's export and names it ($PPID): once that process
    # is gone, the shell is about to evaluate what it printed
    _rc(proj, {k: v.replace("\\", "\\\\") for k, v in want.items()},
        f'[hooks]\non_enter = "echo $PPID > {started}.tmp && mv {started}.tmp {started}"\n')
    s = _start(sessions, variant)
    s.cd(out)
    s.run(f"ctxd allow {proj}")
    old = comparable(s.env_dump())
    assert _project_part(old, want) == dict.fromkeys(want)

    # The evaluation takes tens of ms and starts a few ms after ctxd exits:
    # start the signals at several points of it. (Without the hook's SIGINT
    # handling a round leaves some variables behind after leaving, or the
    # project half applied.)
    for delay in (0.0, 0.01, 0.02, 0.04, 0.08):
        if os.path.exists(started):
            os.unlink(started)
        _send_cd(s, proj)
        _wait_for(started)
        with open(started) as f:
            _wait_gone(int(f.read()))
        time.sleep(delay)
        _hammer(s, 1.0)
        assert _alive(s)
        env = s.env_dump()
        # the export itself was not interrupted, so the shell must hold all of it
        assert _project_part(env, want) == want, delay
        assert env["CTXD_ROOT"] == proj and env.get("CTXD_STATE")

        # leaving (the fast leave: the restore function, no ctxd) under SIGINT: a
        # signal may cancel the typed line itself, so either nothing happened or all
        _send_cd(s, out)
        _hammer(s, 1.0)
        assert _alive(s)
        part = _project_part(comparable(s.env_dump()), want)
        assert part in (want, dict.fromkeys(want)), (delay, sorted(k for k, v in part.items() if v)[:3])
        s.cd(out)
        assert comparable(s.env_dump()) == old, delay


def _runs(path):
    try:
        with open(path) as f:
            return len(f.read().split())
    except FileNotFoundError:
        return 0


def _wait_runs(path, n, timeout=30):
    end = time.monotonic() + timeout
    while _runs(path) < n:
        assert time.monotonic() < end, f"the hook never ran ctxd {n} times"
        time.sleep(0.005)


@pytest.mark.parametrize("variant", VARIANTS)
def test_ctrl_c_while_ctxd_is_busy_changes_nothing_and_retries(variant, sessions, tmp_path):
    proj = plain_dir(tmp_path / "proj")
    out = plain_dir(tmp_path / "out")
    runs = os.path.join(str(tmp_path), "runs")  # one pid per export that ran on_enter
    go = os.path.join(str(tmp_path), "go")
    want = {f"CT_W{i:03d}": f"w{i}" for i in range(50)}
    # on_enter blocks until the test creates `go` (in its own session: Ctrl-C
    # at the terminal reaches only ctxd)
    _rc(proj, want, f'[hooks]\non_enter = "echo $$ >> {runs}; while [ ! -e {go} ]; do sleep 0.05; done"\n'
                    "timeout = 60\n")
    s = _start(sessions, variant)
    s.cd(out)
    s.run(f"ctxd allow {proj}")
    old = comparable(s.env_dump())
    try:
        _send_cd(s, proj)
        # zsh (chpwd, then precmd) and fish (PWD, then the prompt) run the hook
        # twice for one cd: interrupt every run that starts until none does
        n = 0
        while True:
            _wait_runs(runs, n + 1)
            n += 1
            s.child.sendintr()  # Ctrl-C at the terminal: the foreground process group
            s.child.expect_exact("ctxd: interrupted; the environment is unchanged")
            time.sleep(1.0)  # (a stimulus window, not a measurement)
            if _runs(runs) == n:
                break
            assert n < 3, "the hook keeps restarting ctxd after Ctrl-C"
        # the shell is at its prompt: a command sees the environment the
        # interrupted hook left; the hook after it tries again (and blocks)
        dump = os.path.join(str(tmp_path), "env.bin")
        s.child.sendline(f"env -0 > {dump}")
        _wait_runs(runs, n + 1)
        with open(dump, "rb") as f:
            items = [item.partition(b"=") for item in f.read().split(b"\0") if item]
        env = {os.fsdecode(k): os.fsdecode(v) for k, _, v in items}
        # nothing of the new project: the same environment as before, PWD aside
        assert {k: v for k, v in comparable(env).items() if k not in ("PWD", "OLDPWD")} == \
               {k: v for k, v in old.items() if k not in ("PWD", "OLDPWD")}
        # let the retry finish: now it applies the project, all of it
        open(go, "w").close()
        assert _alive(s)
        env = s.env_dump()
        assert _project_part(env, want) == want and env["CTXD_ROOT"] == proj
        assert output_lines(s.run("true")) == []
        s.cd(out)
        assert comparable(s.env_dump()) == old
    finally:
        open(go, "w").close()  # the orphaned on_enter loops end too
