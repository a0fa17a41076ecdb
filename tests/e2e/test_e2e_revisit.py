"""Re-entering a project applies without a process, and only when nothing
changed (issue 13, item 11), in real interactive bash, zsh and fish.

Runs of ctxd are counted through a wrapper around the hook's command (no
timing). Each case compares with what ctxd itself gives: the replayed
environment must be exactly the one the first entry produced, and anything
that would make ctxd print something else (the user's own changes since,
an edited .contextrc, new trust, another git branch, a variable the
.contextrc expands) must make the hook run ctxd.
"""

import os

import pytest

from e2ekit import cd, comparable, git, make_wrapper, output_lines, path_list, plain_dir, python_project, quote, \
    runs, set_var, wrap_command, write_contextrc


def session(sessions, shell, tmp_path):
    wrapper, log = make_wrapper(tmp_path)
    s = sessions(shell)
    s.run(wrap_command(shell, wrapper))
    return s, log


def test_revisit_is_the_first_entry_again_without_a_process(shell, sessions, tmp_path):
    a = plain_dir(tmp_path / "plain" / "a")
    py = python_project(tmp_path / "py")
    sub = plain_dir(os.path.join(py, "src"))
    s, log = session(sessions, shell, tmp_path)
    cd(s, a)
    outside = comparable(s.env_dump())
    cd(s, py)
    assert runs(log) == 1
    inside = comparable(s.env_dump())
    assert inside["VIRTUAL_ENV"] == os.path.join(py, ".venv") and inside["CTXD_ROOT"] == py
    for _ in range(3):
        assert cd(s, a) == ""
        assert comparable(s.env_dump()) == outside
        assert cd(s, py) == ""
        assert comparable(s.env_dump()) == inside
    assert cd(s, a) == ""
    assert cd(s, sub) == ""  # the same root from another directory
    assert comparable(s.env_dump()) == inside
    s.run("true")
    assert runs(log) == 1
    # a watched path changed inside still makes ctxd run, as before
    s.run("touch " + os.path.join(py, "new-file"))
    assert runs(log) == 2
    assert cd(s, a) == ""
    assert comparable(s.env_dump()) == outside
    # the stored entry is older than that change: ctxd runs once, and stores a new one
    cd(s, py)
    assert runs(log) == 3
    inside = comparable(s.env_dump())
    assert inside["VIRTUAL_ENV"] == os.path.join(py, ".venv")
    cd(s, a)
    cd(s, py)
    assert runs(log) == 3
    assert comparable(s.env_dump()) == inside


def test_a_new_shell_does_not_inherit_the_cache(shell, sessions, tmp_path):
    a = plain_dir(tmp_path / "a")
    py = python_project(tmp_path / "py")
    s, log = session(sessions, shell, tmp_path)
    cd(s, py)
    cd(s, a)
    assert runs(log) == 1
    names = {"bash": "_ctxd_rv_root", "zsh": "_ctxd_rv_test", "fish": "__ctxd_rv_root"}
    assert not any(k.startswith(names[shell]) for k in s.env_dump())  # never exported


def test_the_users_own_changes_since_make_ctxd_run_and_are_kept(shell, sessions, tmp_path):
    a = plain_dir(tmp_path / "a")
    py = python_project(tmp_path / "py")
    venv_bin = os.path.join(py, ".venv", "bin")
    s, log = session(sessions, shell, tmp_path)
    cd(s, py)
    cd(s, a)
    assert runs(log) == 1
    # PATH changed outside: ctxd runs, the user's entry stays, behind the venv
    s.run("export PATH=/my/bin:$PATH" if shell != "fish" else "set -gx PATH /my/bin $PATH")
    cd(s, py)
    assert runs(log) == 2
    assert path_list(s.env_dump())[:2] == [venv_bin, "/my/bin"]
    cd(s, a)
    assert path_list(s.env_dump())[0] == "/my/bin"
    # a variable the project sets, set by the user outside: ctxd runs; leaving gives it back
    cd(s, py)
    n = runs(log)  # (the cache now holds the entry made with /my/bin on PATH)
    assert n == 2
    cd(s, a)
    s.run(set_var(shell, "VIRTUAL_ENV", "/own/venv"))
    cd(s, py)
    assert runs(log) == n + 1
    assert s.env_dump()["VIRTUAL_ENV"] == os.path.join(py, ".venv")
    cd(s, a)
    assert s.env_dump()["VIRTUAL_ENV"] == "/own/venv"
    # an unrelated variable changes nothing ctxd would print: no run
    s.run(set_var(shell, "UNRELATED_THING", "x"))
    cd(s, py)
    assert runs(log) == n + 1


def test_edits_trust_and_branch_since_make_ctxd_run(shell, sessions, tmp_path):
    a = plain_dir(tmp_path / "a")
    repo = plain_dir(tmp_path / "repo")
    git(repo, "init", "-q", "-b", "main")
    with open(os.path.join(repo, "README"), "w") as f:
        f.write("x\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "init")
    write_contextrc(repo, '[env]\nCT_FOO = "one"\n\n[branch."feat/*".env]\nCT_FOO = "feat"\n')
    s, log = session(sessions, shell, tmp_path)
    s.run(f"ctxd allow {repo}")
    cd(s, repo)
    assert s.env_dump()["CT_FOO"] == "one"
    n = runs(log)
    cd(s, a)
    cd(s, repo)
    assert runs(log) == n and s.env_dump()["CT_FOO"] == "one"

    # edited while away: ctxd runs and says it changed since it was allowed
    cd(s, a)
    write_contextrc(repo, '[env]\nCT_FOO = "two"\n\n[branch."feat/*".env]\nCT_FOO = "feat"\n')
    lines = output_lines(cd(s, repo))
    assert runs(log) == n + 1
    assert any("changed since you allowed it" in line for line in lines), lines
    assert "CT_FOO" not in s.env_dump()
    # allowed while away (from another directory): ctxd runs, the new value applies
    cd(s, a)
    s.run(f"ctxd allow {repo}")
    n = runs(log)
    cd(s, repo)
    assert runs(log) == n + 1 and s.env_dump()["CT_FOO"] == "two"
    # another branch checked out while away
    cd(s, a)
    git(repo, "checkout", "-q", "-b", "feat/x")
    cd(s, repo)
    assert runs(log) == n + 2 and s.env_dump()["CT_FOO"] == "feat"
    # denied while away
    cd(s, a)
    s.run(f"ctxd deny {repo}")
    n = runs(log)
    cd(s, repo)
    assert runs(log) == n + 1 and "CT_FOO" not in s.env_dump()
    cd(s, a)
    assert "CT_FOO" not in s.env_dump()


def test_a_variable_the_contextrc_expands_is_part_of_the_test(shell, sessions, tmp_path):
    a = plain_dir(tmp_path / "a")
    proj = plain_dir(tmp_path / "proj")
    write_contextrc(proj, '[env]\nCT_URL = "https://${CT_HOST:-localhost}/x"\n')
    s, log = session(sessions, shell, tmp_path)
    s.run(f"ctxd allow {proj}")
    cd(s, proj)
    assert s.env_dump()["CT_URL"] == "https://localhost/x"
    n = runs(log)
    cd(s, a)
    cd(s, proj)
    assert runs(log) == n
    cd(s, a)
    s.run(set_var(shell, "CT_HOST", "example.org"))
    cd(s, proj)
    assert runs(log) == n + 1 and s.env_dump()["CT_URL"] == "https://example.org/x"


def test_on_enter_commands_always_run(shell, sessions, tmp_path):
    a = plain_dir(tmp_path / "a")
    proj = plain_dir(tmp_path / "proj")
    write_contextrc(proj, '[env]\nCT_FOO = "one"\n\n[hooks]\non_enter = ["echo entered-proj"]\n')
    s, log = session(sessions, shell, tmp_path)
    s.run(f"ctxd allow {proj}")
    for i in range(2):
        out = cd(s, proj)
        assert "entered-proj" in out, out
        assert runs(log) == i + 1
        cd(s, a)


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_a_cd_walks_once(shell, sessions, tmp_path):
    """The cd event (zsh chpwd, fish PWD) walks up from the new directory; the
    prompt right after it reuses that walk (the prompts after it walk again,
    as bash does on every prompt, to notice a marker created meanwhile)."""
    a = plain_dir(tmp_path / "a")
    b = plain_dir(tmp_path / "b")
    s = sessions(shell)
    if shell == "fish":
        s.run("functions -c __ctxd_find_root __ctxd_walk; "
              "function __ctxd_find_root; set -a walks $PWD; __ctxd_walk; end")
    else:
        s.run("functions -c _ctxd_find_root _ctxd_walk; "
              "_ctxd_find_root() { walks+=(\"$PWD\"); _ctxd_walk; }")
    # run() types the line, then a printf line: cd a, cd b, the prompt after
    # the line (no walk), the prompt after the printf (one walk in b)
    reset = "set -g walks" if shell == "fish" else "walks=()"
    s.run(f"{reset}; cd {quote(shell, a)}; cd {quote(shell, b)}")
    assert s.run('printf "%s\\n" $walks').splitlines() == [a, b, b]
    # and a marker made right after a cd is noticed at the next prompt
    s.run(f"{reset}; cd {quote(shell, a)}; touch Makefile")
    assert s.run("echo root=$CTXD_ROOT") == f"root={a}"
