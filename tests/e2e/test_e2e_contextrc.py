""".contextrc in real interactive bash, zsh and fish: trust, edits, branches,
escaping, errors, hooks, inheritance, status, edit/init.

Every notice is checked for being shown exactly once (on the prompt where it
appears) and never again while nothing changes.
"""

import json
import os
import re
import subprocess
import tomllib

from ctxd.activation import trust
from ctxd.activation.fileio import sha256_hex
from ctxdtest import ctxd
from e2ekit import STATE_VARS, cd, comparable, ctxd_lines, git, output_lines, path_list, plain_dir, python_project, \
    set_var, write_contextrc
from shellkit import base_env

RC = ".contextrc"


def touch_unrelated(directory):
    """Create a file in *directory*: its mtime changes, so the hook exports again."""
    open(os.path.join(str(directory), f"unrelated-{len(os.listdir(str(directory)))}"), "w").close()


def run_rc(s, command):
    """(output without the status line, exit status) of *command* in session *s*."""
    var = "$status" if s.shell == "fish" else "$?"
    out = s.run(f"{command}; echo RC={var}")
    m = re.search(r"^RC=(\d+)$", out, re.M)
    assert m, out
    rest = "\n".join(line for line in out.splitlines() if not re.match(r"^RC=\d+$", line))
    return rest, int(m.group(1))


def without(env, names):
    return {k: v for k, v in comparable(env).items() if k not in names}


def no_ctxd(env):
    """*env* without what ctxd manages for any root (for 'left clean' comparisons)."""
    return {k: v for k, v in comparable(env).items() if not k.startswith("CTXD_")}


def status_of(rc, home):
    with open(rc, "rb") as f:
        return trust.file_status(rc, sha256_hex(f.read()), base_env(home))


# -- 1. untrusted -> allow -> edit -> blocked -> allow ---------------------------------

def test_untrusted_then_allowed_then_edited(shell, sessions, tmp_path):
    proj = plain_dir(tmp_path / "proj")
    rc = write_contextrc(proj, '[env]\nCT_FOO = "one"\n')
    s = sessions(shell)
    cd(s, tmp_path)
    before = s.env_dump()

    lines = output_lines(cd(s, proj))
    assert len(lines) == 1, lines
    assert lines[0].startswith("ctxd: ")
    assert "not trusted" in lines[0] and f"ctxd allow {proj}" in lines[0] and rc in lines[0]
    env = s.env_dump()
    assert "CT_FOO" not in env
    assert env["CTXD_ROOT"] == proj
    for _ in range(2):  # not repeated while inside
        assert s.run("true") == ""
    assert s.run("cd .") == ""
    watch = env["CTXD_WATCH"]
    touch_unrelated(proj)  # ctxd runs again (the root changed): the notice was already shown
    assert s.run("true") == ""
    env = s.env_dump()
    assert env["CTXD_WATCH"] != watch  # (it did run: a new stamp)
    assert "CT_FOO" not in env

    out = s.run("ctxd allow")
    assert output_lines(out) == [f"ctxd: allowed {rc}"]  # and nothing else at that prompt
    assert s.env_dump()["CT_FOO"] == "one"
    assert s.run("true") == ""

    write_contextrc(proj, '[env]\nCT_FOO = "two"\n')
    lines = output_lines(s.run("true"))
    assert len(lines) == 1, lines
    assert "changed since you allowed it" in lines[0] and rc in lines[0] and f"ctxd allow {proj}" in lines[0]
    assert "CT_FOO" not in s.env_dump()
    assert s.run("true") == ""
    touch_unrelated(proj)
    assert s.run("true") == ""

    assert output_lines(s.run("ctxd allow")) == [f"ctxd: allowed {rc}"]
    assert s.env_dump()["CT_FOO"] == "two"
    assert s.run("true") == ""

    assert cd(s, tmp_path) == ""
    assert comparable(s.env_dump()) == comparable(before)


# -- 2. deny survives edits ---------------------------------------------------

def test_deny_survives_edits(shell, sessions, tmp_path):
    proj = plain_dir(tmp_path / "proj")
    rc = write_contextrc(proj, '[env]\nCT_FOO = "one"\n')
    s = sessions(shell)
    s.run(f"ctxd allow {proj}")
    assert cd(s, proj) == ""
    assert s.env_dump()["CT_FOO"] == "one"

    assert output_lines(s.run("ctxd deny")) == [f"ctxd: denied {rc}"]
    assert "CT_FOO" not in s.env_dump()
    write_contextrc(proj, '[env]\nCT_FOO = "edited"\n')
    assert s.run("true") == ""
    assert "CT_FOO" not in s.env_dump()
    assert s.run("true") == ""
    touch_unrelated(proj)
    assert s.run("true") == ""
    # leaving and coming back: still denied, still quiet
    assert cd(s, tmp_path) == ""
    assert cd(s, proj) == ""
    assert "CT_FOO" not in s.env_dump()
    assert s.run("true") == ""

    assert output_lines(s.run("ctxd allow")) == [f"ctxd: allowed {rc}"]
    assert s.env_dump()["CT_FOO"] == "edited"


# -- 3. git branch ------------------------------------------------------------

def test_git_branch_switch_changes_variables(shell, sessions, tmp_path):
    repo = plain_dir(tmp_path / "repo")
    git(repo, "init", "-q", "-b", "main")
    with open(os.path.join(repo, "README"), "w") as f:
        f.write("x\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "init")
    write_contextrc(repo, '[env]\nAWS_PROFILE = "default"\n\n[branch."feat/*".env]\nAWS_PROFILE = "dev"\n')
    sub = plain_dir(os.path.join(repo, "src"))
    s = sessions(shell)
    s.run(f"ctxd allow {repo}")
    assert cd(s, sub) == ""
    assert s.env_dump()["AWS_PROFILE"] == "default"

    s.run("git checkout -q -b feat/x")
    assert s.env_dump()["AWS_PROFILE"] == "dev"
    assert s.run("true") == ""
    s.run("git checkout -q main")
    assert s.env_dump()["AWS_PROFILE"] == "default"
    s.run("git checkout -q -b fix/y")
    assert s.env_dump()["AWS_PROFILE"] == "default"
    s.run("git checkout -q feat/x")
    assert s.env_dump()["AWS_PROFILE"] == "dev"
    s.run("git checkout -q --detach")  # no branch: no branch section
    assert s.env_dump()["AWS_PROFILE"] == "default"
    assert cd(s, tmp_path) == ""
    assert "AWS_PROFILE" not in s.env_dump()


# -- 4. values round-trip, nothing executes --------------------------------------

def test_values_round_trip_and_nothing_executes(shell, sessions, tmp_path, home):
    proj = plain_dir(tmp_path / "proj")
    sentinel = str(tmp_path / "pwned")
    # the TOML text, written independently of what it means (raw string: TOML escapes)
    write_contextrc(proj, r'''[env]
CT_QUOTES = "it's \"double\" and 'single'"
CT_SUBST = "$(touch SENTINEL-1) $(touch pwned-rel)"
CT_BACKTICK = "`touch SENTINEL-2`"
CT_NEWLINES = "line1\nline2\n"
CT_HOME = "${HOME}/h"
CT_TILDE = "~/t"
CT_TILDE_MID = "a~/b"
CT_DOLLARS = "$$HOME $$(touch SENTINEL-3) cost $$5"
CT_PLAIN = "$HOME ${CT_NOPE:-fallback} ${CT_NOPE} !! \\ back\\slash\ttab \u00fcn\u00ef;|&<>*?"
CT_LITERAL = 'C:\dir\$(touch SENTINEL-4)'
CT_NUM = 42
CT_EMPTY = ""
CT_UNSETME = false
'''.replace("SENTINEL", sentinel))
    h = str(home)
    expected = {
        "CT_QUOTES": "it's \"double\" and 'single'",
        "CT_SUBST": f"$(touch {sentinel}-1) $(touch pwned-rel)",
        "CT_BACKTICK": f"`touch {sentinel}-2`",
        "CT_NEWLINES": "line1\nline2\n",
        "CT_HOME": h + "/h",
        "CT_TILDE": h + "/t",
        "CT_TILDE_MID": "a~/b",
        "CT_DOLLARS": f"$HOME $(touch {sentinel}-3) cost $5",
        "CT_PLAIN": "$HOME fallback  !! \\ back\\slash\ttab \u00fcn\u00ef;|&<>*?",
        "CT_LITERAL": "C:\\dir\\$(touch " + sentinel + "-4)",
        "CT_NUM": "42",
        "CT_EMPTY": "",
    }
    s = sessions(shell)
    s.run(set_var(shell, "CT_UNSETME", "mine"))
    cd(s, tmp_path)
    before = s.env_dump()
    s.run(f"ctxd allow {proj}")
    assert cd(s, proj) == ""
    env = s.env_dump()
    assert {k: env.get(k) for k in expected} == expected
    assert "CT_UNSETME" not in env
    assert s.run("true") == ""
    assert cd(s, tmp_path) == ""
    assert comparable(s.env_dump()) == comparable(before)
    pwned = [os.path.join(d, f) for d, _, fs in os.walk(str(tmp_path)) for f in fs if f.startswith("pwned")]
    assert pwned == []


# -- 5. invalid file ------------------------------------------------------------

def test_invalid_contextrc_leaves_environment_clean(shell, sessions, tmp_path):
    py = python_project(tmp_path / "py")
    sub = plain_dir(os.path.join(py, "sub"))
    rc = write_contextrc(py, '[env]\nCT_FOO = "1"\n')
    venv_bin = os.path.join(py, ".venv", "bin")
    s = sessions(shell)
    cd(s, tmp_path)
    before = s.env_dump()
    s.run(f"ctxd allow {py}")
    assert cd(s, py) == ""
    env = s.env_dump()
    assert (env["CT_FOO"], env["VIRTUAL_ENV"]) == ("1", os.path.join(py, ".venv"))

    located = re.compile(r"^ctxd: " + re.escape(rc) + r":(\d+):(\d+): \S")
    write_contextrc(py, '[env]\nCT_FOO = "1\nCT_BAR = "2"\n')  # unterminated string on line 2
    lines = output_lines(s.run("true"))
    assert len(lines) == 1 and located.match(lines[0]), lines
    assert located.match(lines[0]).group(1) == "2"
    env = s.env_dump()
    assert no_ctxd(env) == no_ctxd(before)
    assert "VIRTUAL_ENV" not in env and venv_bin not in path_list(env)
    assert env["CTXD_ROOT"] == py
    assert "!error" in env["CTXD_STATUS"]
    assert s.run("true") == ""  # not repeated
    touch_unrelated(py)  # ctxd runs again, the file is the same: still not repeated
    assert s.run("true") == ""
    assert s.run("cd sub") == ""  # cd still works, quietly
    assert s.env_dump()["PWD"] == sub
    assert s.run("cd ..") == ""
    assert s.env_dump()["PWD"] == py
    # allowing the broken file is refused, in one line, and changes nothing
    out, code = run_rc(s, "ctxd allow")
    assert code == 3
    lines = ctxd_lines(out)
    assert len(lines) == 1 and located.match(lines[0]), out
    assert no_ctxd(s.env_dump()) == no_ctxd(before)

    # fixed: the file is new content, so it needs allowing; then everything applies
    write_contextrc(py, '[env]\nCT_FOO = "fixed"\n')
    lines = ctxd_lines(s.run("true"))
    assert len(lines) == 1 and "changed since you allowed it" in lines[0], lines
    assert "CT_FOO" not in s.env_dump()
    assert output_lines(s.run("ctxd allow")) == [f"ctxd: allowed {rc}"]
    env = s.env_dump()
    assert (env["CT_FOO"], env["VIRTUAL_ENV"]) == ("fixed", os.path.join(py, ".venv"))
    assert path_list(env)[0] == venv_bin

    # a wrong type: the same one-line format
    write_contextrc(py, '[env]\nCT_FOO = [1]\n')
    lines = output_lines(s.run("true"))
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"ctxd: {rc}:2:10: ") and "CT_FOO" in lines[0], lines  # at the [
    env = s.env_dump()
    assert no_ctxd(env) == no_ctxd(before)
    assert s.run("true") == ""

    assert cd(s, tmp_path) == ""
    assert comparable(s.env_dump()) == comparable(before)


# -- 6. hooks -----------------------------------------------------------------------

def test_enter_and_leave_hooks(shell, sessions, tmp_path):
    proj = plain_dir(tmp_path / "proj")
    write_contextrc(proj, '[env]\nCT_FOO = "project-foo"\n\n[hooks]\n'
                   'on_enter = "echo entered-$CTXD_ROOT-$CT_FOO"\non_leave = "echo leaving-$CT_FOO"\n')
    out = plain_dir(tmp_path / "out")
    s = sessions(shell)
    s.run(set_var(shell, "CT_FOO", "outer"))
    cd(s, out)

    # untrusted: no hook runs
    text = cd(s, proj)
    assert "entered" not in text and len(ctxd_lines(text)) == 1
    # allowed: on_enter runs once, at the next prompt, with the project environment
    assert output_lines(s.run("ctxd allow")) == [f"ctxd: allowed {os.path.join(proj, RC)}",
                                                  f"entered-{proj}-project-foo"]
    assert s.env_dump()["CT_FOO"] == "project-foo"
    assert s.run("true") == ""

    text = cd(s, out)
    assert output_lines(text) == ["leaving-project-foo"]  # before the environment was restored
    assert s.env_dump()["CT_FOO"] == "outer"
    assert s.run("true") == ""

    text = cd(s, proj)
    assert output_lines(text) == [f"entered-{proj}-project-foo"]
    assert s.run("true") == ""
    assert s.run("cd .") == ""
    assert cd(s, out) == "leaving-project-foo"

    other = plain_dir(tmp_path / "other")
    write_contextrc(other, '[hooks]\non_enter = "echo entered-other-${CT_FOO:-none}"\n')
    s.run(f"ctxd allow {other}")
    cd(s, proj)
    assert output_lines(cd(s, other)) == ["leaving-project-foo", "entered-other-outer"]


def test_allow_runs_on_enter_at_the_next_prompt(shell, sessions, tmp_path):
    proj = plain_dir(tmp_path / "proj")
    write_contextrc(proj, '[hooks]\non_enter = "echo entered-$CTXD_ROOT"\n')
    s = sessions(shell)
    assert "entered" not in cd(s, proj)
    out = s.run("ctxd allow")
    assert output_lines(out) == [f"ctxd: allowed {os.path.join(proj, RC)}", f"entered-{proj}"]
    assert s.run("true") == ""


def test_hook_timeout_and_failure_do_not_block(shell, sessions, tmp_path):
    slow = plain_dir(tmp_path / "slow")
    write_contextrc(slow, '[env]\nCT_SLOW = "applied"\n\n[hooks]\ntimeout = 1\n'
                          'on_enter = "echo before-sleep; sleep 30"\n')
    bad = plain_dir(tmp_path / "bad")
    write_contextrc(bad, '[env]\nCT_BAD = "applied"\n\n[hooks]\non_enter = "echo oops; exit 3"\n')
    s = sessions(shell)
    s.run(f"ctxd allow {slow} && ctxd allow {bad}" if shell != "fish" else f"ctxd allow {slow}; and ctxd allow {bad}")

    text = cd(s, slow)  # returns well within the session's 20 s timeout, not after 30 s
    assert output_lines(text) == ["before-sleep",
                                  "ctxd: on_enter timed out after 1s and was stopped: echo before-sleep; sleep 30"]
    assert s.env_dump()["CT_SLOW"] == "applied"
    assert s.run("true") == ""  # not run again at the next prompt

    text = cd(s, bad)
    assert output_lines(text) == ["oops", "ctxd: on_enter failed (exit 3): echo oops; exit 3"]
    env = s.env_dump()
    assert env["CT_BAD"] == "applied" and "CT_SLOW" not in env
    assert s.run("true") == ""


# -- 7. inheritance -----------------------------------------------------------------

def show_json(s):
    f = os.path.join(s.home, "show.json")
    s.run(f"ctxd show --json > {f}")
    with open(f) as fh:
        return json.load(fh)


def test_inheritance_nearest_wins(shell, sessions, tmp_path):
    parent = plain_dir(tmp_path / "parent")
    parent_rc = write_contextrc(parent, '[env]\nCT_A = "1"\nCT_B = "1"\n')
    child = plain_dir(os.path.join(parent, "child"))
    child_rc = write_contextrc(child, '[env]\nCT_B = "2"\n')
    s = sessions(shell)
    lines = ctxd_lines(cd(s, child))
    assert len(lines) == 2 and all("not trusted" in l for l in lines), lines
    s.run("ctxd allow .. && ctxd allow" if shell != "fish" else "ctxd allow ..; and ctxd allow")
    env = s.env_dump()
    assert (env.get("CT_A"), env.get("CT_B")) == ("1", "2")
    info = show_json(s)
    sources = {e["name"]: e["source"] for e in info["env"]}
    assert sources["CT_A"] == parent_rc and sources["CT_B"] == child_rc
    assert [f["path"] for f in info["files"]] == [child_rc, parent_rc]

    assert cd(s, parent) == ""
    env = s.env_dump()
    assert (env.get("CT_A"), env.get("CT_B")) == ("1", "1")

    write_contextrc(child, '[ctxd]\ninherit = false\n\n[env]\nCT_B = "2"\n')
    lines = ctxd_lines(cd(s, child))
    assert len(lines) == 1 and "changed since you allowed it" in lines[0] and child_rc in lines[0], lines
    assert output_lines(s.run("ctxd allow")) == [f"ctxd: allowed {child_rc}"]
    env = s.env_dump()
    assert "CT_A" not in env and env["CT_B"] == "2"
    info = show_json(s)
    assert {e["name"]: e["source"] for e in info["env"] if e["name"].startswith("CT_")} == {"CT_B": child_rc}
    assert [f["path"] for f in info["files"]] == [child_rc]


# -- 8. trust seen by another session -------------------------------------------------

def test_trust_from_another_terminal(shell, sessions, tmp_path):
    proj = plain_dir(tmp_path / "proj")
    write_contextrc(proj, '[env]\nCT_FOO = "one"\n')
    s1 = sessions(shell)
    s2 = sessions(shell)
    cd(s1, proj)
    cd(s2, proj)
    assert "CT_FOO" not in s2.env_dump()
    s1.run("ctxd allow")
    assert s2.run("true") == ""
    assert s2.env_dump()["CT_FOO"] == "one"
    s1.run("ctxd deny")
    s2.run("true")
    assert "CT_FOO" not in s2.env_dump()
    assert s1.env_dump().get("CT_FOO") is None


# -- 9. untrusted root ------------------------------------------------------------------

def test_untrusted_root_withholds_detected_environment(shell, sessions, tmp_path):
    area = plain_dir(tmp_path / "untrusted-area")
    elsewhere = plain_dir(tmp_path / "trusted-elsewhere")
    py = python_project(os.path.join(area, "py"))
    s = sessions(shell, home=tmp_path / "home2", trust_tree=elsewhere)
    cd(s, area)
    before = s.env_dump()

    lines = output_lines(cd(s, py))
    assert len(lines) == 1 and lines[0].startswith("ctxd: "), lines
    assert "not trusted" in lines[0] and f"ctxd allow {py}" in lines[0]
    env = s.env_dump()
    assert "VIRTUAL_ENV" not in env and "PYTHONDONTWRITEBYTECODE" not in env
    assert path_list(env) == path_list(before)
    assert env["CTXD_ROOT"] == py
    assert env["CTXD_STATUS"] == "py (python) !untrusted"
    assert s.run("true") == ""

    assert output_lines(s.run("ctxd allow")) == [f"ctxd: allowed {py} (its detected environment applies)"]
    env = s.env_dump()
    assert env["VIRTUAL_ENV"] == os.path.join(py, ".venv")
    assert path_list(env) == [os.path.join(py, ".venv", "bin")] + path_list(before)
    assert s.run("true") == ""
    assert cd(s, area) == ""
    assert comparable(s.env_dump()) == comparable(before)

    # a whole tree
    py2 = python_project(os.path.join(area, "py2"))
    py3 = python_project(os.path.join(area, "deeper", "py3"))
    assert len(ctxd_lines(cd(s, py2))) == 1
    assert "VIRTUAL_ENV" not in s.env_dump()
    assert output_lines(s.run(f"ctxd allow --tree {area}")) == [
        f"ctxd: trusted every project you own under {area}"]
    assert s.env_dump()["VIRTUAL_ENV"] == os.path.join(py2, ".venv")
    assert cd(s, py3) == ""
    env = s.env_dump()
    assert path_list(env) == [os.path.join(py3, ".venv", "bin")] + path_list(before)
    assert env["CTXD_STATUS"] == "py3 (python)"
    # a deny wins over the tree
    assert output_lines(s.run("ctxd deny"))[0] == f"ctxd: denied {py3}"
    env = s.env_dump()
    assert "VIRTUAL_ENV" not in env and path_list(env) == path_list(before)
    assert cd(s, area) == ""
    assert comparable(s.env_dump()) == comparable(before)


# -- 10. status ---------------------------------------------------------------------------

def test_status_line_and_variable(shell, sessions, tmp_path):
    py = python_project(tmp_path / "api")
    with open(os.path.join(py, "package.json"), "w") as f:
        f.write("{}\n")
    s = sessions(shell)
    cd(s, tmp_path)
    assert s.run("ctxd status") == ""
    assert "CTXD_STATUS" not in s.env_dump()
    cd(s, py)
    assert s.run("ctxd status") == "api (python,node)"
    assert s.env_dump()["CTXD_STATUS"] == "api (python,node)"

    write_contextrc(py, '[env]\nCT_FOO = "x"\n')
    assert len(ctxd_lines(s.run("true"))) == 1
    assert s.run("ctxd status") == "api (python,node) !blocked"
    assert s.env_dump()["CTXD_STATUS"] == "api (python,node) !blocked"
    s.run("ctxd allow")
    assert s.run("ctxd status") == "api (python,node)"
    assert s.env_dump()["CTXD_STATUS"] == "api (python,node)"


# -- 11. a .contextrc appearing and disappearing where you stand ------------------------

def test_contextrc_appears_and_disappears_while_staying(shell, sessions, tmp_path):
    plain = plain_dir(tmp_path / "plain")
    py = python_project(tmp_path / "py")
    s = sessions(shell)
    for d in (plain, py):
        cd(s, d)
        before = s.env_dump()
        rc = write_contextrc(d, '[env]\nCT_FOO = "here"\n')
        lines = ctxd_lines(s.run("true"))
        assert len(lines) == 1 and "not trusted" in lines[0], (d, lines)
        assert output_lines(s.run("ctxd allow")) == [f"ctxd: allowed {rc}"]
        assert s.env_dump()["CT_FOO"] == "here"
        os.unlink(rc)
        assert s.run("true") == ""
        env = s.env_dump()
        assert "CT_FOO" not in env
        # (the watch stamp moves: creating and deleting a file changed the directory's mtime)
        assert without(env, STATE_VARS) == without(before, STATE_VARS), d


# -- 12. ctxd edit / ctxd init -----------------------------------------------------------

def ctxd_cli(home, cwd, *args, **env):
    return ctxd(*args, cwd=cwd, env=base_env(home, env), stdin=subprocess.DEVNULL, script=True)


def editor_writing(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\ncat > \"$1\" <<'EOF'\n{text}EOF\n")
    path.chmod(0o755)
    return str(path)


def test_edit_validates_and_allows(shell, sessions, tmp_path, home):
    good = plain_dir(tmp_path / "good")
    bad = plain_dir(tmp_path / "bad")
    s = sessions(shell)
    cd(s, good)

    r = ctxd_cli(home, good, "edit", EDITOR=editor_writing(tmp_path, "ed-good", '[env]\nCT_EDITED = "yes"\n'))
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == f"ctxd: allowed {os.path.join(good, RC)}\n"
    assert s.run("true") == ""
    assert s.env_dump()["CT_EDITED"] == "yes"

    r = ctxd_cli(home, bad, "edit", EDITOR=editor_writing(tmp_path, "ed-bad", '[env]\nCT_BAD = [1]\n'))
    assert r.returncode == 3
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ctxd: {os.path.join(bad, RC)}:2:10: "), r.stderr
    assert "not allowed" in lines[0]
    assert "allowed" not in r.stdout
    assert status_of(os.path.join(bad, RC), home) == trust.UNTRUSTED
    lines = ctxd_lines(cd(s, bad))
    assert len(lines) == 1 and "not trusted" in lines[0], lines
    assert "CT_BAD" not in s.env_dump()


def test_init_writes_a_valid_allowed_template(shell, sessions, tmp_path, home):
    py = python_project(tmp_path / "initproj")
    with open(os.path.join(py, "go.mod"), "w") as f:
        f.write("module example.com/m\n")
    s = sessions(shell)
    cd(s, py)
    rc = os.path.join(py, RC)
    assert output_lines(s.run("ctxd init")) == [f"ctxd: wrote and allowed {rc}"]
    with open(rc, "rb") as f:
        doc = tomllib.load(f)
    assert isinstance(doc, dict)
    with open(rc, encoding="utf-8") as f:
        text = f.read()
    assert "python, go" in text  # the detected types, named
    assert status_of(rc, home) == trust.ALLOWED
    assert s.run("true") == ""
    env = s.env_dump()
    assert env["CTXD_STATUS"] == "initproj (python,go)"
    assert env["GOFLAGS"] == "-mod=mod"
    assert env["VIRTUAL_ENV"] == os.path.join(py, ".venv")
    out, code = run_rc(s, "ctxd init")
    assert code != 0 and len(ctxd_lines(out)) == 1
