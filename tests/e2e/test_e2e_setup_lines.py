"""What `ctxd setup --write` puts in the rc files, in the real shells (issue 13,
items 3 and 5): fish loads the hook only when interactive; a login shell whose
~/.profile sources ~/.bashrc before ~/.local/bin is on PATH still loads it; a
shell that inherits a project's environment where ctxd cannot run drops it.
"""

import os
import shutil
import subprocess

import pytest

from e2ekit import CTXD, ctxd_setup, open_shell, python_project, said, write_rc
from shellkit import base_env, ctxd_bin_dir, require

# Debian's stock ~/.profile, in the order that matters: .bashrc first, ~/.local/bin after
STOCK_PROFILE = """\
if [ -n "$BASH_VERSION" ]; then
    if [ -f "$HOME/.bashrc" ]; then
	. "$HOME/.bashrc"
    fi
fi
if [ -d "$HOME/bin" ] ; then
    PATH="$HOME/bin:$PATH"
fi
if [ -d "$HOME/.local/bin" ] ; then
    PATH="$HOME/.local/bin:$PATH"
fi
"""


def without_ctxd(path):
    """PATH with every directory that holds a ctxd taken out."""
    gone = {ctxd_bin_dir(), os.path.dirname(CTXD)}
    kept = [d for d in path.split(":") if d not in gone and not os.path.exists(os.path.join(d, "ctxd"))]
    assert shutil.which("ctxd", path=":".join(kept)) is None
    return ":".join(kept)


def test_fish_lines_load_the_hook_only_in_interactive_fish(home, tmp_path, opened):
    require("fish")
    proj = python_project(tmp_path / "proj")
    write_rc(home, "fish")
    text = ctxd_setup(home, "fish")
    assert "status is-interactive" in text
    env = base_env(home)
    # `fish -c`, tide's prompt workers, fish scripts: config.fish runs, the hook does not
    r = subprocess.run(["fish", "-c", "set -q _CTXD_HOOK; and echo loaded; or echo not"],
                       env=env, capture_output=True, text=True, cwd=str(home))
    assert (r.stdout, r.stderr) == ("not\n", ""), r.stdout + r.stderr
    script = tmp_path / "script.fish"
    script.write_text(f"cd '{proj}'\necho \"venv=[$VIRTUAL_ENV] root=[$CTXD_ROOT]\"\n")
    r = subprocess.run(["fish", str(script)], env=env, capture_output=True, text=True, cwd=str(home))
    assert (r.stdout, r.stderr) == ("venv=[] root=[]\n", ""), r.stdout + r.stderr
    # an interactive fish still activates on cd
    s = open_shell("fish", ["-i"], home, env)
    opened.append(s)
    assert said(s, "set -q _CTXD_HOOK; and echo loaded; or echo not") == "loaded"
    s.cd(proj)
    assert s.env_dump().get("VIRTUAL_ENV") == os.path.join(proj, ".venv")


def test_bash_login_shell_loads_the_hook_before_local_bin_is_on_path(home, tmp_path, opened):
    proj = python_project(tmp_path / "proj")
    local_bin = home / ".local" / "bin"
    local_bin.mkdir(parents=True)
    os.symlink(CTXD, local_bin / "ctxd")  # where pipx / uv tool put it
    (home / ".profile").write_text(STOCK_PROFILE)
    write_rc(home, "bash")
    ctxd_setup(home, "bash")
    # a tmux window: a login shell, PATH as the system sets it (no ctxd on it yet)
    env = dict(base_env(home), PATH="/usr/local/bin:/usr/bin:/bin")
    assert shutil.which("ctxd", path=env["PATH"]) is None
    s = open_shell("bash", ["-l"], home, env)
    opened.append(s)
    assert "not found" not in s.startup and "ctxd" not in s.startup, s.startup
    assert said(s, 'echo "hook=$_CTXD_HOOK"') == "hook=bash"
    assert s.env_dump()["PATH"].split(":")[0] == str(local_bin)  # ~/.profile went on after .bashrc
    s.cd(proj)
    env_in = s.env_dump()
    assert env_in.get("VIRTUAL_ENV") == os.path.join(proj, ".venv")
    assert env_in.get("CTXD_ROOT") == proj


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_a_shell_that_inherits_a_project_without_ctxd_comes_out_clean(shell, home, tmp_path, sessions,
                                                                      opened):
    proj = python_project(tmp_path / "proj")
    # the real state of a real activation, as a new terminal (tmux window) inherits it
    parent = sessions(shell)
    before = parent.env_dump()
    parent.cd(proj)
    inherited = parent.env_dump()
    assert inherited["VIRTUAL_ENV"] == os.path.join(proj, ".venv") and inherited["CTXD_STATE"]
    assert inherited["PATH"].split(":")[0] == os.path.join(proj, ".venv", "bin")
    # ctxd uninstalled since: not on PATH, and the path `ctxd setup` wrote is gone
    from ctxd.shells import get_shell

    # (uninstalled: its start-up copy of the hook is gone, or stands down, see test_e2e_startup.py)
    write_rc(home, shell, get_shell(shell).rc_block(str(tmp_path / "uninstalled" / "bin" / "ctxd"),
                                                    str(tmp_path / "uninstalled" / "cache" / f"ctxd.{shell}")))
    env = dict(inherited, PATH=without_ctxd(inherited["PATH"]))
    s = open_shell(shell, ["-i"], home, env)
    opened.append(s)
    assert "not found" not in s.startup and "ctxd" not in s.startup, s.startup
    after = s.env_dump()
    assert sorted(k for k in after if k.startswith("CTXD_")) == []
    assert "VIRTUAL_ENV" not in after
    assert after["PATH"] == without_ctxd(before["PATH"])
    # and the shell works: nothing left half-done, no hook installed
    assert said(s, 'echo "ok:$_CTXD_HOOK"') == "ok:"


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_a_venv_of_the_users_own_outside_the_project_is_kept(shell, home, tmp_path, opened):
    # the fallback cannot read CTXD_STATE: it drops only what lies inside CTXD_ROOT
    from ctxd.shells import get_shell

    own = str(tmp_path / "own-venv")
    write_rc(home, shell, get_shell(shell).rc_block(str(tmp_path / "gone" / "ctxd"),
                                                    str(tmp_path / "gone" / f"ctxd.{shell}")))
    env = dict(base_env(home), CTXD_STATE="x", CTXD_WATCH="y", CTXD_ROOT=str(tmp_path / "p"),
               VIRTUAL_ENV=own, PATH=f"{tmp_path}/p/.venv/bin:{own}/bin:/usr/bin:/bin")
    env["PATH"] = without_ctxd(env["PATH"])
    s = open_shell(shell, ["-i"], home, env)
    opened.append(s)
    after = s.env_dump()
    assert after.get("VIRTUAL_ENV") == own
    assert after["PATH"] == f"{own}/bin:/usr/bin:/bin"
    assert sorted(k for k in after if k.startswith("CTXD_")) == []
