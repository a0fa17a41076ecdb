"""Shell start-up without Python (issue 13, item 4), in the real shells.

The lines `ctxd setup --write` puts in the rc file source a copy of the hook
that `ctxd hook` keeps in the cache dir; the copy checks with builtins only
that it still belongs to the installed ctxd. These tests open real
interactive shells that read their rc files, with a `ctxd` first on PATH
that logs every run, and check: a current copy starts no ctxd at all; a copy
from another version (its dist-info gone, as an upgrade leaves it) or older
than a file of ctxd stands down, ctxd runs once, writes a current copy, and
the next shell starts without it again; the hook works either way.
"""

import os
import stat
import sys

import pytest

from e2ekit import CTXD, ctxd_setup, open_shell, python_project, said, write_rc
from shellkit import base_env, require

from ctxd.fastpath.startup_copy import cache_file, hook_text
from ctxd.shells import get_shell


def logging_ctxd(tmp_path):
    """A bin dir whose `ctxd` logs its arguments, then runs the real one."""
    bin_dir = tmp_path / "logbin"
    bin_dir.mkdir()
    log = tmp_path / "ctxd-runs.log"
    script = bin_dir / "ctxd"
    script.write_text(f"#!/bin/sh\necho \"$*\" >> '{log}'\nexec '{CTXD}' \"$@\"\n")
    script.chmod(0o755)
    return str(bin_dir), log


def runs(log):
    return log.read_text().splitlines() if log.exists() else []


def shell_env(home, bin_dir):
    env = base_env(home)
    env["PATH"] = bin_dir + ":" + env["PATH"]
    return env


def copy_path(home, shell):
    return cache_file(shell, base_env(home))


def home_hook_text(sh, home):
    """hook_text(sh) as ctxd renders it for the user whose home is *home* (the bash hook
    names that user's cache directory)."""
    keys = ("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")
    saved = {k: os.environ.get(k) for k in keys}
    env = base_env(home)
    try:
        for k in keys:
            if k in env:
                os.environ[k] = env[k]
            else:
                os.environ.pop(k, None)
        return hook_text(sh)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def start(shell, home, env, opened, cwd=None):
    s = open_shell(shell, ["-i"], home, env, cwd=cwd)
    opened.append(s)
    assert "ctxd" not in s.startup and "rror" not in s.startup, s.startup
    return s


def check_hook_works(s, shell, proj):
    assert said(s, 'echo "hook=$_CTXD_HOOK"') == f"hook={shell}"
    s.cd(proj)
    assert s.env_dump().get("VIRTUAL_ENV") == os.path.join(proj, ".venv")
    s.cd(os.path.dirname(proj))
    assert "VIRTUAL_ENV" not in s.env_dump()


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_a_current_copy_starts_the_shell_without_ctxd(shell, home, tmp_path, opened):
    require(shell)
    proj = python_project(tmp_path / "proj")
    write_rc(home, shell)
    text = ctxd_setup(home, shell)
    path = copy_path(home, shell)
    # setup wrote the copy already: the first new shell is fast too
    assert os.path.isfile(path) and path.startswith(str(home))
    assert "ctxd/hook/ctxd." + shell in text
    assert stat.S_IMODE(os.stat(path).st_mode) & 0o022 == 0
    with open(path) as f:
        copy = f.read()
    assert copy.endswith(home_hook_text(get_shell(shell), home))
    bin_dir, log = logging_ctxd(tmp_path)
    s = start(shell, home, shell_env(home, bin_dir), opened)
    check_hook_works(s, shell, proj)
    # neither at start-up nor on cd did anything run `ctxd` (the hook calls the interpreter itself)
    assert runs(log) == []


def stale_copy(shell, home, tmp_path, *, upgraded):
    """Replace the copy by one whose install has changed since, and return it.

    upgraded: its version's dist-info is gone (pip, pipx and uv remove the old
    one); else a file of ctxd it was made from is newer than the copy."""
    sh = get_shell(shell)
    path = copy_path(home, shell)
    old = tmp_path / "site"
    dist = old / "ctxd-0.0.9.dist-info"
    dist.mkdir(parents=True)
    src = old / "hook_source.py"
    src.write_text("# a file of the old install\n")
    os.utime(src, (1_000_000_000, 1_000_000_000))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        # the old version's hook: if it ran, the marker would be set
        f.write(sh.cache_guard(str(dist), sys.executable, [str(src)], path, "old copy")
                + ("set -g STALE_HOOK_RAN 1" if shell == "fish" else "STALE_HOOK_RAN=1") + "\n" + home_hook_text(sh, home))
    if upgraded:
        os.rename(dist, old / "ctxd-0.1.0.dist-info.was-removed")
    else:
        os.utime(src, None)  # edited after the copy was written
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, os.stat(src).st_mtime_ns - 1_000_000_000))
    return path


@pytest.mark.parametrize("upgraded", [True, False], ids=["new-version", "edited"])
@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_a_stale_copy_stands_down_and_is_written_again(shell, upgraded, home, tmp_path, opened):
    require(shell)
    proj = python_project(tmp_path / "proj")
    write_rc(home, shell)
    ctxd_setup(home, shell)
    bin_dir, log = logging_ctxd(tmp_path)
    env = shell_env(home, bin_dir)
    # a control: the same old copy with its install intact does load
    path = stale_copy(shell, home, tmp_path / "control", upgraded=False)
    os.utime(path, None)  # newer than its sources again: current
    s = start(shell, home, env, opened)
    assert said(s, 'echo "stale=$STALE_HOOK_RAN"') == "stale=1" and runs(log) == []
    s.close()
    path = stale_copy(shell, home, tmp_path, upgraded=upgraded)
    s = start(shell, home, env, opened)
    # the old hook did not run; ctxd from PATH did, once, and the hook works
    assert said(s, 'echo "stale=$STALE_HOOK_RAN"') == "stale="
    assert runs(log) == [f"hook {shell}"]
    check_hook_works(s, shell, proj)
    with open(path) as f:
        assert f.read() == cached_now(shell, path, home)
    s.close()
    # the copy ctxd wrote is current: the next shell starts without ctxd again
    s = start(shell, home, env, opened)
    assert runs(log) == [f"hook {shell}"]
    check_hook_works(s, shell, proj)


def cached_now(shell, path, home):
    from ctxd.fastpath.startup_copy import cached_hook

    sh = get_shell(shell)
    return cached_hook(sh, home_hook_text(sh, home), path)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_documented_eval_line_still_works_and_refreshes_the_copy(shell, home, tmp_path, opened):
    require(shell)
    proj = python_project(tmp_path / "proj")
    sh = get_shell(shell)
    write_rc(home, shell, sh.install_line + "\n")
    bin_dir, log = logging_ctxd(tmp_path)
    s = start(shell, home, shell_env(home, bin_dir), opened)
    assert runs(log) == [f"hook {shell}"]
    check_hook_works(s, shell, proj)
    assert os.path.isfile(copy_path(home, shell))
