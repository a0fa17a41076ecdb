"""Tab completion: the committed scripts in completions/ are exactly what
`ctxd completion SHELL` prints (regenerate with `python completions/generate.py`),
and they complete for real: the completion protocol answered by ctxd, the
scripts loaded in bash, zsh and fish, and TAB pressed in interactive shells.
TAB completes files and directories where a command takes them (chat import, show,
allow, exec DIR, teach --from) and the project's handoff ids (handoff show).
"""

import os
import re
import subprocess
import time

import click
import pexpect
import pytest

import shellkit
from ctxd.cli import cli
from ctxd.commands.completion import FILES, source
from ctxdtest import ctxd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPLETIONS = os.path.join(ROOT, "completions")
SHELLS = ("bash", "zsh", "fish")
REGENERATE = "python completions/generate.py   (or: python -m ctxd completion SHELL > completions/FILE)"


def chat_subcommands():
    chat = cli.commands["chat"]
    return chat.list_commands(click.Context(chat))


def env(home, **extra):
    e = shellkit.base_env(home)
    e.update(extra)
    return e


def ctxd_complete(home, **variables):
    return ctxd(env=env(home, **variables), script=True, check=0).stdout


# -- the committed files --------------------------------------------------------

@pytest.mark.parametrize("shell", SHELLS)
def test_committed_script_is_current(shell):
    path = os.path.join(COMPLETIONS, FILES[shell])
    assert os.path.isfile(path), f"completions/{FILES[shell]} is missing; generate it: {REGENERATE}"
    with open(path, encoding="utf-8") as f:
        committed = f.read()
    assert committed == source(shell, cli), (
        f"completions/{FILES[shell]} is stale (it differs from `ctxd completion {shell}`); "
        f"regenerate it: {REGENERATE}")


@pytest.mark.parametrize("shell", SHELLS)
def test_ctxd_completion_prints_the_committed_script(shell, tmp_path):
    r = subprocess.run(["ctxd", "completion", shell], env=env(tmp_path), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and not r.stderr, r.stderr
    with open(os.path.join(COMPLETIONS, FILES[shell]), encoding="utf-8") as f:
        assert r.stdout == f.read()


def test_completion_rejects_an_unknown_shell(tmp_path):
    r = subprocess.run(["ctxd", "completion", "tcsh"], env=env(tmp_path), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "tcsh" in r.stderr


def test_the_scripts_pass_the_shells_syntax_check():
    for shell, argv in (("bash", ["bash", "-n"]), ("zsh", ["zsh", "-n"]), ("fish", ["fish", "--no-execute"])):
        shellkit.require(shell)
        r = subprocess.run(argv + [os.path.join(COMPLETIONS, FILES[shell])], capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 0, f"{shell}: {r.stderr}"


# -- the protocol, answered by ctxd itself -----------------------------------------

def test_protocol_bash(tmp_path):
    out = ctxd_complete(tmp_path, _CTXD_COMPLETE="bash_complete", COMP_WORDS="ctxd sh", COMP_CWORD="1")
    assert out.split() == ["plain,show"]
    out = ctxd_complete(tmp_path, _CTXD_COMPLETE="bash_complete", COMP_WORDS="ctxd s", COMP_CWORD="1")
    assert {"plain,setup", "plain,show", "plain,status"} <= set(out.split())
    out = ctxd_complete(tmp_path, _CTXD_COMPLETE="bash_complete", COMP_WORDS="ctxd chat ", COMP_CWORD="2")
    assert out.split() == [f"plain,{c}" for c in chat_subcommands()]


def test_protocol_zsh(tmp_path):
    out = ctxd_complete(tmp_path, _CTXD_COMPLETE="zsh_complete", COMP_WORDS="ctxd chat ", COMP_CWORD="2")
    lines = out.split("\n")
    triples = [lines[i:i + 3] for i in range(0, len(lines) - 2, 3)]
    assert [t[1] for t in triples] == chat_subcommands()
    assert all(t[0] == "plain" for t in triples)


def test_protocol_fish_one_line_per_candidate(tmp_path):
    out = ctxd_complete(tmp_path, _CTXD_COMPLETE="fish_complete", COMP_WORDS="ctxd sh", COMP_CWORD="sh")
    assert out.splitlines() == [out.splitlines()[0]] and out.startswith("plain,show\t")
    out = ctxd_complete(tmp_path, _CTXD_COMPLETE="fish_complete", COMP_WORDS="ctxd chat ", COMP_CWORD="")
    assert [l.split("\t")[0] for l in out.splitlines()] == [f"plain,{c}" for c in chat_subcommands()]


# -- the scripts loaded in the real shells ---------------------------------------------

def test_bash_script_fills_compreply(tmp_path):
    bash = shellkit.require("bash")
    script = (f"source {os.path.join(COMPLETIONS, FILES['bash'])}\n"
              "complete -p ctxd\n"
              "COMP_WORDS=(ctxd sh); COMP_CWORD=1; COMPREPLY=(); _ctxd_completion ctxd\n"
              "printf 'sh:%s\\n' \"${COMPREPLY[@]}\"\n"
              "COMP_WORDS=(ctxd chat ''); COMP_CWORD=2; COMPREPLY=(); _ctxd_completion ctxd\n"
              "printf 'chat:%s\\n' \"${COMPREPLY[@]}\"\n")
    r = subprocess.run([bash, "--norc", "--noprofile", "-c", script], env=env(tmp_path), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "complete -o nosort -F _ctxd_completion ctxd" in r.stdout
    lines = r.stdout.splitlines()
    assert [l[3:] for l in lines if l.startswith("sh:")] == ["show"]
    assert [l[5:] for l in lines if l.startswith("chat:")] == chat_subcommands()


def test_fish_complete_command(tmp_path):
    fish = shellkit.require("fish")
    script = (f"set -p fish_complete_path {shellkit.fish_literal(COMPLETIONS)}\n"
              "complete -C 'ctxd sh'\n"
              "echo ---\n"
              "complete -C 'ctxd chat '\n")
    r = subprocess.run([fish, "--no-config", "-c", script], env=env(tmp_path), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and not r.stderr, r.stderr
    first, _, second = r.stdout.partition("---\n")
    assert [l.split("\t")[0] for l in first.splitlines()] == ["show"]
    assert first.splitlines()[0].startswith("show\tExplain")  # the help is fish's description
    assert sorted(l.split("\t")[0] for l in second.splitlines()) == sorted(chat_subcommands())


# -- TAB in interactive shells -------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|[\x07\r]")


def _read_until(child, pred, what, timeout=30):
    buf = ""
    end = time.time() + timeout
    while time.time() < end:
        try:
            buf += child.read_nonblocking(65536, timeout=0.2)
        except pexpect.TIMEOUT:
            pass
        if pred(ANSI.sub("", buf)):
            return ANSI.sub("", buf)
    raise AssertionError(f"{what}: not seen in {ANSI.sub('', buf)!r}")


def _spawn(shell, home):
    path = shellkit.require(shell)
    e = env(home, TERM="dumb")
    if shell == "bash":
        child = pexpect.spawn(path, ["--norc", "--noprofile", "-i"], env=e, encoding="utf-8", timeout=30,
                              dimensions=(50, 200), cwd=str(home))
        setup = (f"PS1='P> '; bind 'set enable-bracketed-paste off' 2>/dev/null; "
                 f"source {os.path.join(COMPLETIONS, FILES['bash'])}")
    elif shell == "zsh":
        # installed the documented way: the folder holding _ctxd on $fpath before compinit
        child = pexpect.spawn(path, ["-f", "-i"], env=e, encoding="utf-8", timeout=30, dimensions=(50, 200),
                              cwd=str(home))
        setup = f"PS1='P> '; fpath=({COMPLETIONS} $fpath); autoload -Uz compinit; compinit -u -D"
    else:
        child = pexpect.spawn(path, ["--no-config", "-i"], env=e, encoding="utf-8", timeout=30,
                              dimensions=(50, 200), cwd=str(home))
        setup = (f"function fish_prompt; printf 'P> '; end; "
                 f"set -p fish_complete_path {shellkit.fish_literal(COMPLETIONS)}")
    child.sendline(setup)
    child.sendline("echo READY-$((1+1))" if shell != "fish" else "echo READY-(math 1+1)")
    child.expect_exact("READY-2")
    return child


@pytest.mark.parametrize("shell", SHELLS)
def test_tab_completes_a_command(shell, tmp_path):
    child = _spawn(shell, tmp_path)
    try:
        child.send("ctxd sh\t")
        out = _read_until(child, lambda t: "ctxd show " in t, "ctxd sh<TAB> -> ctxd show")
        assert "setup" not in out and "status" not in out
    finally:
        child.close(force=True)


@pytest.mark.parametrize("shell", ("bash", "zsh"))
def test_tab_lists_chat_subcommands(shell, tmp_path):
    child = _spawn(shell, tmp_path)
    names = chat_subcommands()
    try:
        child.send("ctxd chat \t\t" if shell == "bash" else "ctxd chat \t")
        _read_until(child, lambda t: all(re.search(rf"(^|\s){n}\s", t) for n in names),
                    f"the chat subcommands {names}")
    finally:
        child.close(force=True)


# -- paths and handoff ids ------------------------------------------------------

@pytest.mark.parametrize("words, cword, want", [
    ("ctxd show /us", "1", "dir,/us"),
    ("ctxd allow /us", "1", "dir,/us"),
    ("ctxd deny /us", "1", "dir,/us"),
    ("ctxd init /us", "1", "dir,/us"),
    ("ctxd exec /us", "1", "dir,/us"),
    ("ctxd exec /tmp -- ./run", "3", "file,./run"),
    ("ctxd chat import /us", "3", "file,/us"),
    ("ctxd teach --from ./a", "3", "file,./a"),
])
def test_protocol_names_paths(tmp_path, words, cword, want):
    assert ctxd_complete(tmp_path, _CTXD_COMPLETE="bash_complete", COMP_WORDS=words,
                         COMP_CWORD=str(len(words.split()) - 1)).split() == [want]


def test_a_file_argument_still_reaches_the_command_as_typed(tmp_path):
    f = tmp_path / "afile"
    f.write_text("")
    p = subprocess.run(["ctxd", "allow", str(f)], env=env(tmp_path), cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 4 and p.stderr == f"ctxd: no such directory: {f}\n"  # its own check, as before


@pytest.fixture
def tree(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "w"
    (work / "projectdir").mkdir(parents=True)
    (work / "transcript-2026.jsonl").write_text("{}\n")
    return home, work


def test_bash_tab_completes_files_and_directories(tree):
    home, work = tree
    for line, want in ((f"ctxd chat import {work}/trans", "transcript-2026.jsonl"),
                       (f"ctxd show {work}/proj", f"{work}/projectdir/")):
        child = _spawn("bash", home)
        try:
            child.send(line + "\t")
            _read_until(child, lambda t, want=want: want in t, f"{line}<TAB> -> {want}")
        finally:
            child.close(force=True)


def test_fish_completes_files_directories_and_ids(tree):
    home, work = tree
    fish = shellkit.require("fish")
    script = (f"set -p fish_complete_path {shellkit.fish_literal(COMPLETIONS)}\n"
              f"complete -C {shellkit.fish_literal(f'ctxd chat import {work}/trans')}\n"
              "echo ---\n"
              f"complete -C {shellkit.fish_literal(f'ctxd exec {work}/')}\n")
    r = subprocess.run([fish, "--no-config", "-c", script], env=env(home), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and not r.stderr, r.stderr
    files, _, dirs = r.stdout.partition("---\n")
    assert [l.split("\t")[0] for l in files.splitlines()] == [f"{work}/transcript-2026.jsonl"]
    assert [l.split("\t")[0] for l in dirs.splitlines()] == [f"{work}/projectdir/"]


def test_handoff_show_completes_the_projects_ids(tmp_path):
    home = tmp_path / "home"
    proj = tmp_path / "p"
    (proj / ".git").mkdir(parents=True)
    e = dict(env(home), PWD=str(proj))
    for args in (["chat", "add", "we chose sqlite for the store"], ["handoff"]):
        assert subprocess.run(["ctxd", *args], env=e, cwd=proj, capture_output=True).returncode == 0
    bash = subprocess.run(["ctxd"], env=dict(e, _CTXD_COMPLETE="bash_complete", COMP_WORDS="ctxd handoff show ",
                                             COMP_CWORD="3"), cwd=proj, capture_output=True, text=True)
    assert bash.stdout.split() == ["plain,cli_v1", "plain,cli"]
    fish = shellkit.require("fish")
    r = subprocess.run([fish, "--no-config", "-c", f"set -p fish_complete_path {shellkit.fish_literal(COMPLETIONS)}\n"
                        "complete -C 'ctxd handoff show '"], env=e, cwd=proj, capture_output=True, text=True)
    assert sorted(r.stdout.splitlines()) == ["cli\twe chose sqlite for the store",
                                             "cli_v1\twe chose sqlite for the store"]
    # outside any project with archives: nothing offered, nothing printed on stderr
    empty = subprocess.run(["ctxd"], env=dict(env(home), _CTXD_COMPLETE="bash_complete",
                                              COMP_WORDS="ctxd handoff show ", COMP_CWORD="3"),
                           cwd=tmp_path, capture_output=True, text=True)
    assert (empty.returncode, empty.stdout.strip(), empty.stderr) == (0, "", "")
