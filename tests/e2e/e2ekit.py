"""Helpers for the end-to-end scenarios: projects, shell syntax, run counting, .contextrc
files and git repositories, rc files and the real shells that read them (ctxd setup).

Shell syntax that differs between bash/zsh and fish is kept here, so each
scenario reads the same for all three shells.
"""

import os
import re
import shlex
import stat
import subprocess
import sys

import pexpect

from ctxdtest import ctxd
from shellkit import PROMPT, ShellSession, base_env, require

# What a shell may change by itself between two dumps.
IGNORED = frozenset({"PWD", "OLDPWD", "_", "SHLVL"})
STATE_VARS = ("CTXD_STATE", "CTXD_WATCH")
MANAGED = ("CTXD_ROOT", "CTXD_TYPES", "CTXD_CONTEXT_DIR")


def comparable(env):
    return {k: v for k, v in env.items() if k not in IGNORED}


def path_list(env):
    return env["PATH"].split(":") if env.get("PATH") else []


def output_lines(text):
    """Non-blank lines of what a command printed, without fish's missing-newline
    mark (fish prints "⏎", padding and a carriage return before a prompt)."""
    text = re.sub("\u23ce *", "", text)
    return [line for line in text.splitlines() if line.strip()]


def ctxd_lines(text):
    return [line for line in output_lines(text) if line.startswith("ctxd:")]


# -- projects ----------------------------------------------------------------

def _touch(path, text=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def python_project(path, venv=True):
    path = str(path)
    _touch(os.path.join(path, "pyproject.toml"), "[project]\nname = 'p'\n")
    if venv:
        _touch(os.path.join(path, ".venv", "bin", "activate"), "# venv\n")
    return path


def node_project(path):
    path = str(path)
    _touch(os.path.join(path, "package.json"), "{}\n")
    os.makedirs(os.path.join(path, "node_modules", ".bin"), exist_ok=True)
    return path


def go_project(path):
    path = str(path)
    _touch(os.path.join(path, "go.mod"), "module example.com/m\n\ngo 1.22\n")
    return path


def plain_dir(path):
    os.makedirs(str(path), exist_ok=True)
    return str(path)


# -- shell syntax -----------------------------------------------------------

def quote(shell, value):
    """A word that means exactly *value* to *shell*; the typed line stays ASCII.

    Written independently of ctxd's own escaping, so a bug there cannot hide.
    """
    data = value.encode("utf-8", "surrogateescape")
    if shell in ("bash", "zsh"):
        return "$'" + "".join(
            chr(c) if chr(c).isalnum() and c < 0x80 else "\\x%02x" % c for c in data
        ) + "'"
    out, run = [], []

    def flush():
        if run:
            out.append("'" + "".join(run) + "'")
            run.clear()

    for ch in value:
        o = ord(ch)
        if 0xDC80 <= o <= 0xDCFF:  # an undecodable byte: \X is a raw byte in fish
            flush()
            out.append("\\X%02x" % (o - 0xDC00))
        elif o < 0x20 or o >= 0x7F:
            flush()
            out.append("\\x%02x" % o if o < 0x80 else "\\U%08x" % o)
        else:
            run.append("\\" + ch if ch in "'\\" else ch)
    flush()
    return "".join(out) or "''"


def set_var(shell, name, value):
    if shell == "fish":
        return f"set -gx {name} {quote(shell, value)}"
    return f"export {name}={quote(shell, value)}"


def unset_var(shell, name):
    return f"set -e -g {name}" if shell == "fish" else f"unset {name}"


def set_path(shell, entries):
    if shell == "fish":
        return "set -gx PATH " + " ".join(quote(shell, e) for e in entries)
    return "export PATH=" + quote(shell, ":".join(entries))


def cd(session, path):
    return session.run("cd " + quote(session.shell, str(path)))


# -- counting ctxd runs -----------------------------------------------------

def make_wrapper(directory):
    """A wrapper that logs each run of the embedded command, then execs it."""
    directory = str(directory)
    log = os.path.join(directory, "ctxd-runs.log")
    wrapper = os.path.join(directory, "ctxd-wrapper")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nprintf "%s\\n" "$PWD" >> {shlex.quote(log)}\nexec "$@"\n')
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR)
    open(log, "w").close()
    return wrapper, log


def wrap_command(shell, wrapper):
    """Shell code routing the hook's embedded ctxd command through *wrapper*."""
    if shell == "fish":
        return f"set -g __ctxd_cmd {quote(shell, wrapper)} $__ctxd_cmd"
    return f'_ctxd_cmd=({quote(shell, wrapper)} "${{_ctxd_cmd[@]}}")'


def hook_line(shell):
    return "ctxd hook fish | source" if shell == "fish" else f'eval "$(ctxd hook {shell})"'


def runs(log):
    with open(log) as f:
        return len(f.read().splitlines())


# -- nested shells ----------------------------------------------------------

NESTED_ARGV = {
    "bash": "bash --norc --noprofile -i",
    "zsh": "zsh -f -i",
    "fish": "fish --no-config -i",
}

# The same plain prompt the ShellSession constructor sets up.
NESTED_SETUP = {
    "bash": f"PS1='{PROMPT}'; PS2=''; bind 'set enable-bracketed-paste off' 2>/dev/null",
    "zsh": f"PS1='{PROMPT}'; PS2=''; unsetopt zle 2>/dev/null; unsetopt prompt_sp",
    "fish": f"function fish_prompt; printf '{PROMPT}'; end; function fish_right_prompt; end; "
            "set -g fish_autosuggestion_enabled 0",
}


def enter_nested(session, extra=""):
    """Start the same shell inside *session* (an interactive child of it)."""
    session.child.sendline(NESTED_ARGV[session.shell])
    session.child.sendline(NESTED_SETUP[session.shell])
    session.run("true")
    if extra:
        return session.run(extra)
    return ""


def leave_nested(session):
    session.child.sendline("exit")
    session.child.expect_exact(PROMPT)
    session.run("true")


# -- .contextrc files and git repositories ------------------------------------

def write_contextrc(directory, text):
    path = os.path.join(str(directory), ".contextrc")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def git(repo, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com",
               GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


# -- rc files, and shells that read them (ctxd setup) ------------------------------------

CTXD = os.path.join(os.path.dirname(sys.executable), "ctxd")

# what each shell's rc file holds before ctxd's lines: a known prompt, as a user's rc sets one
RC_PRELUDE = {
    "bash": "case $- in *i*) ;; *) return;; esac\n"  # Debian's stock ~/.bashrc starts like this
            f"PS1='{PROMPT}'; PS2=''; bind 'set enable-bracketed-paste off' 2>/dev/null\n",
    "zsh": f"PS1='{PROMPT}'; PS2=''; unsetopt zle 2>/dev/null; unsetopt prompt_sp\n",
    "fish": f"function fish_prompt; printf '{PROMPT}'; end; function fish_right_prompt; end\n"
            "set -g fish_autosuggestion_enabled 0\n",
}
RC_FILE = {"bash": ".bashrc", "zsh": ".zshrc", "fish": ".config/fish/config.fish"}


def write_rc(home, shell, text=""):
    """*shell*'s rc file in *home*: a known prompt, then *text*."""
    path = home / RC_FILE[shell]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(RC_PRELUDE[shell] + text)
    return path


def ctxd_setup(home, shell):
    """`ctxd setup --write` for *shell* in *home*; the rc file it leaves."""
    env = dict(base_env(home), PATH=os.pathsep.join([os.path.dirname(CTXD), "/usr/bin", "/bin"]))
    r = ctxd("setup", "--shell", shell, "--write", env=env, script=True)
    assert r.returncode == 0 and r.stderr == "", r.stdout + r.stderr
    return (home / RC_FILE[shell]).read_text()


def open_shell(shell, argv, home, env, cwd=None):
    """A real interactive shell that reads its own startup files (ShellSession's
    never do); .startup holds what it printed before the first prompt."""
    s = ShellSession.__new__(ShellSession)
    s.shell, s.home, s.timeout, s._n = shell, str(home), 20, 0
    s.child = pexpect.spawn(require(shell), argv, env=env, cwd=str(cwd or home), encoding="utf-8",
                            codec_errors="replace", timeout=20, dimensions=(50, 400))
    s.child.expect_exact(PROMPT)
    s.startup = s.child.before
    return s


def said(session, command):
    """What *command* printed, without terminal mode sequences (fish's bracketed paste)."""
    return re.sub(r"\x1b\[[?0-9;]*[A-Za-z]", "", session.run(command)).strip()
