"""TAB completes files and directories where a command takes them (chat import, show, allow,
exec DIR, teach --from) and the project's handoff ids (handoff show), through the generated
scripts in completions/ in real bash and fish."""

import subprocess

import pytest

import shellkit
from test_completions import COMPLETIONS, _read_until, _spawn, ctxd_complete, env


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
