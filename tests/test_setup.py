"""`ctxd setup`: what it shows and how it writes the rc file (the real command)."""

import os
import stat
import subprocess
import sys

import pytest

from ctxd.shells import SUPPORTED, get_shell
from ctxd.shells.base import console_script
from ctxdtest import ctxd

CTXD = os.path.join(os.path.dirname(sys.executable), "ctxd")


def setup(home, *args):
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_CACHE_HOME=str(home / ".cache"))
    return ctxd("setup", *args, env=env, script=True)


def block(shell, home, monkeypatch):
    """The block `setup(home, ...)` writes: the start-up copy of the hook is under that HOME."""
    monkeypatch.setenv("HOME", str(home))
    return get_shell(shell).rc_block(CTXD, str(home / ".cache" / "ctxd" / "hook" / f"ctxd.{shell}"))


def test_console_script_is_the_one_next_to_the_interpreter_not_a_shim():
    assert console_script() == CTXD and os.access(CTXD, os.X_OK)


@pytest.mark.parametrize("shell", SUPPORTED)
def test_show_prints_the_block_with_the_absolute_path(shell, tmp_path, monkeypatch):
    r = setup(tmp_path, "--shell", shell)
    assert r.returncode == 0 and r.stderr == ""
    assert block(shell, tmp_path, monkeypatch).strip("\n") in r.stdout
    if get_shell(shell).hook_cache:  # the start-up copy of the hook, $HOME-relative
        assert f'"$HOME"/.cache/ctxd/hook/ctxd.{shell}' in r.stdout or "$HOME/'.cache/ctxd/hook/ctxd.fish'" in r.stdout
    assert "not there yet" in r.stdout and not (tmp_path / ".bashrc").exists()


def test_write_keeps_a_symlinked_rc_file_a_symlink_and_its_mode(tmp_path, monkeypatch):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "bashrc"
    target.write_text("alias ll='ls -l'")  # no final newline
    target.chmod(0o640)
    os.symlink(target, tmp_path / ".bashrc")
    r = setup(tmp_path, "--shell", "bash", "--write")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert os.path.islink(tmp_path / ".bashrc")
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert target.read_text() == "alias ll='ls -l'\n" + block("bash", tmp_path, monkeypatch)
    written = target.read_text()
    r = setup(tmp_path, "--shell", "bash", "--write")
    assert "already set up" in r.stdout and target.read_text() == written


def test_write_creates_fishs_config_directory(tmp_path, monkeypatch):
    r = setup(tmp_path, "--shell", "fish", "--write")
    assert r.returncode == 0 and r.stderr == ""
    text = (tmp_path / ".config" / "fish" / "config.fish").read_text()
    assert text == block("fish", tmp_path, monkeypatch)


def test_the_startup_copy_stays_with_the_install_on_path(tmp_path):
    """Two installs: a plain `ctxd hook` of the one not first on PATH (a project
    venv's, say) leaves the other's copy alone; the one on PATH, or `ctxd setup
    --write`, writes its own."""
    copy = tmp_path / ".cache" / "ctxd" / "hook" / "ctxd.bash"
    copy.parent.mkdir(parents=True)
    other = "# interpreter: /bin/sh\n# the other install's copy\n"
    env = dict(os.environ, HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / ".cache"))

    def hook(path):
        r = subprocess.run([CTXD, "hook", "bash"], env=dict(env, PATH=path), capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout, r.stderr

    copy.write_text(other)
    hook("/usr/bin:/bin")  # this ctxd is not on PATH
    assert copy.read_text() == other
    hook(os.path.dirname(CTXD) + ":/usr/bin:/bin")  # it is
    assert copy.read_text().startswith(f"# interpreter: {sys.executable}\n")
    copy.write_text(other)
    r = setup(tmp_path, "--shell", "bash", "--write")
    assert r.returncode == 0, r.stderr
    assert copy.read_text().startswith(f"# interpreter: {sys.executable}\n")
    # a copy whose interpreter is gone is anyone's
    copy.write_text("# interpreter: /nonexistent/python\n")
    hook("/usr/bin:/bin")
    assert copy.read_text().startswith(f"# interpreter: {sys.executable}\n")


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_an_older_block_without_the_startup_copy_is_named_and_left_alone(shell, tmp_path):
    """Lines an older ctxd wrote (or the documented one-liner) keep working, only slower: setup
    says so and how to get the fast start, and never rewrites what is now the user's file."""
    sh = get_shell(shell)
    rc = tmp_path / sh.rc_file[2:]  # "~/.bashrc" under this HOME
    rc.parent.mkdir(parents=True, exist_ok=True)
    rc.write_text(f"# mine\n{sh.install_line}\n")
    before = rc.read_bytes()
    shown = setup(tmp_path, "--shell", shell)
    assert shown.returncode == 0 and "older form that starts ctxd at every shell start" in shown.stdout
    r = setup(tmp_path, "--shell", shell, "--write")
    assert r.returncode == 0 and r.stderr == ""
    assert "lines that start ctxd at every shell start" in r.stdout and f"ctxd setup --shell {shell}" in r.stdout
    assert rc.read_bytes() == before
    commented = "".join(f"# {line}\n" for line in sh.rc_block().strip().splitlines())  # the new lines, off
    rc.write_text(f"# mine\n{sh.install_line}\n{commented}")
    assert "older form" in setup(tmp_path, "--shell", shell).stdout


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_write_puts_ctxd_on_path_when_its_directory_is_not(shell, tmp_path):
    """A fresh account after `pipx install .`: ctxd is a link in ~/.local/bin to the script in
    pipx's venv, and ~/.local/bin is not on PATH yet, so the README's `~/.local/bin/ctxd setup
    --write && exec "$SHELL"` must leave a new shell that finds `ctxd` there (issue 25): the link's
    directory goes on PATH, not the venv's bin/ (which holds its python too). A real shell
    reading the rc file looks ctxd up."""
    import shutil

    if not shutil.which(shell):
        pytest.skip(f"{shell} is not installed")
    local_bin = tmp_path / ".local" / "bin"
    local_bin.mkdir(parents=True)
    link = local_bin / "ctxd"
    os.symlink(CTXD, link)  # what pipx and uv tool make
    bare = "/usr/local/bin:/usr/bin:/bin"
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"),
               XDG_CACHE_HOME=str(tmp_path / ".cache"), PATH=bare, SHELL=f"/bin/{shell}")
    env.pop("ZDOTDIR", None)
    r = subprocess.run([str(link), "setup", "--shell", shell, "--write"], env=env, capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert f"{local_bin} on PATH" in r.stdout
    look = [shell, "-ic", "command -v ctxd"]
    found = subprocess.run(look, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert found.stdout.strip().splitlines()[-1:] == [str(link)], (found.stdout, found.stderr)
    # a second run adds nothing, and says the hook is there
    rc = get_shell(shell).rc_file.replace("~", str(tmp_path), 1)
    before = open(rc).read()
    r = subprocess.run([str(link), "setup", "--shell", shell, "--write"], env=env, capture_output=True, text=True)
    assert "already set up" in r.stdout and open(rc).read() == before
    assert before.count("on PATH (written by `ctxd setup`)") == 1
    assert os.path.dirname(CTXD) not in before.split("on PATH (written by `ctxd setup`)")[1].splitlines()[1]


def test_show_names_the_missing_path_entry(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / ".cache"), PATH="/usr/bin:/bin")
    r = subprocess.run([CTXD, "setup", "--shell", "bash"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"# {os.path.dirname(CTXD)} (where ctxd is) is not on PATH: these lines put it there:" in r.stdout
    assert 'export PATH="$PATH":' in r.stdout
