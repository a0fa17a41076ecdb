"""The shells' root walk agrees with ctxd.activation.detectors.find_root, in the real shells.

One shell process per shell walks a sequence of directories (children, siblings, parents,
unrelated trees, names with a newline, a space or regex/glob characters, a symlinked
directory) and prints the root its hook function found; the sequence also changes $HOME,
so the $HOME ceiling and fish's ancestor cache (kept between prompts, extended on a cd into
a child or a sibling) are both exercised. fish runs the walk twice: with `path filter`
(fish >= 3.5) and with the `test -e` loop older fish uses.
"""

import os
import random

import pytest

import shellkit
from ctxd.activation.detectors import all_markers, find_root
from ctxd.shells import get_shell
from ctxd.shells.base import export_command
from shellkit import clean_env, literal as q, run_script as run

NAMES = ["a", "b", "we\nird", "sp ace", "a.b", "aXb", "st*r", "[x]", "c"]


def make_tree(tmp):
    """tmp/home is $HOME; markers above it, in it and beside it."""
    home = tmp / "home"
    dirs = [tmp, home, tmp / "other"]
    for top in (home, tmp / "other"):
        for n in NAMES:
            for m in ("", "x", "x/y"):
                d = top / n / m if m else top / n
                d.mkdir(parents=True, exist_ok=True)
                dirs.append(d)
    (tmp / "requirements.txt").write_text("")          # above $HOME
    (home / "aXb" / "Makefile").write_text("")          # a.b must not match it as a regex
    (home / "we\nird" / "x" / "package.json").write_text("{}")
    (home / "st*r" / "go.mod").write_text("module x\n")
    (tmp / "other" / "[x]" / "x" / "Cargo.toml").write_text("")
    os.symlink(str(home / "aXb"), str(home / "c" / "link"))
    dirs.append(home / "c" / "link")
    dirs.append(home / "c" / "link" / "x")
    return home, [str(d) for d in dirs]


def walk_plan(home, dirs, seed=7):
    """[(HOME, dir)]: mostly neighbour moves, now and then a jump or another $HOME."""
    rnd = random.Random(seed)
    homes = [str(home), str(home) + "/", "/", "", str(home / "sp ace")]
    plan, cur, h = [], dirs[1], homes[0]
    for _ in range(120):
        r = rnd.random()
        if r < 0.08:
            h = rnd.choice(homes)
        if r < 0.35:
            cur = rnd.choice(dirs)
        else:  # a child, a sibling or the parent of where we are
            near = [d for d in dirs if os.path.dirname(d) in (cur, os.path.dirname(cur)) or d == os.path.dirname(cur)]
            cur = rnd.choice(near or dirs)
        plan.append((h, cur))
    return plan


def script(shell, hook_file, plan, old_fish=False):
    lines = []
    if shell == "fish":
        lines.append(f"source {q(shell, hook_file)}")
        if old_fish:
            lines.append("set -e __ctxd_path_filter")
        for h, d in plan:
            lines.append(f"set -gx HOME {q(shell, h)}; builtin cd {q(shell, d)}; __ctxd_find_root; "
                         "printf '%s\\0' \"$__ctxd_r\"")
    else:
        lines.append(f"source {q(shell, hook_file)}")
        for h, d in plan:
            lines.append(f"HOME={q(shell, h)}; builtin cd {q(shell, d)} && _ctxd_find_root; "
                         "printf '%s\\0' \"$_ctxd_r\"")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("shell,old_fish", [("bash", False), ("zsh", False), ("fish", False), ("fish", True)])
def test_shell_walk_agrees_with_python(tmp_path, shell, old_fish):
    shellkit.require(shell)
    tmp = tmp_path / "t"
    tmp.mkdir()
    home, dirs = make_tree(tmp)
    plan = walk_plan(home, dirs)
    hook = tmp_path / f"hook.{shell}"
    hook.write_text(get_shell(shell).hook(all_markers(), export_command()))
    f = tmp_path / f"walk.{shell}"
    f.write_text(script(shell, str(hook), plan, old_fish))
    r = run(shell, f"source {q(shell, str(f))}", str(tmp_path), env=clean_env())
    assert r.returncode == 0, r.stderr
    got = r.stdout.split("\0")[:-1]
    assert len(got) == len(plan), (len(got), r.stderr)
    want = [find_root(d, environ={"HOME": h}) or "" for h, d in plan]
    bad = [(h, d, g, w) for (h, d), g, w in zip(plan, got, want) if g != w]
    assert not bad, bad[:5]
    # the plan really covers the cases: the ceiling hides the root above $HOME, and
    # a root above $HOME is found from beside it
    assert any(w == "" and d.startswith(str(home)) and h == str(home) for (h, d), w in zip(plan, want))
    assert str(tmp) in want and any(w.endswith("/st*r") or w.endswith("aXb") for w in want)
