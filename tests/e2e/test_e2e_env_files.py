"""`.env` files and `ctxd exec` in real interactive bash, zsh and fish (issue 13 items 7, 8).

A trusted .contextrc lists `[env] files = [".env", ".env.local"]`: entering applies them, an edit
of the .env (or .env.local appearing) is picked up at the next prompt without a cd, a bad line is
one `file:line:` notice shown once, and leaving restores everything. `ctxd exec` typed in a shell
activated in one project runs a command in another without the first one's venv.
"""

import os

from e2ekit import cd, comparable, ctxd_lines, output_lines, path_list, plain_dir, python_project


def bump_mtime(path, seconds=2):
    """Make an edit unmistakably newer than the stamp, whatever the file system's mtime resolution."""
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 10**9))


def write(path, text, later=2):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    bump_mtime(path, later)


def test_env_file_edits_reach_the_next_prompt(shell, sessions, tmp_path):
    proj = plain_dir(tmp_path / "proj")
    rc = os.path.join(proj, ".contextrc")
    with open(rc, "w") as f:
        f.write('[env]\nfiles = [".env", ".env.local"]\nCT_FROM_RC = "rc sees ${CT_A}"\n')
    env_file = os.path.join(proj, ".env")
    write(env_file, "CT_A=one\nexport CT_MULTI=\"two\nlines\"\n", later=0)
    s = sessions(shell)
    assert output_lines(s.run(f"ctxd allow {proj}")) == [f"ctxd: allowed {rc}"]
    cd(s, tmp_path)
    before = s.env_dump()

    assert output_lines(cd(s, proj)) == []
    env = s.env_dump()
    assert env["CT_A"] == "one" and env["CT_MULTI"] == "two\nlines" and env["CT_FROM_RC"] == "rc sees one"

    write(env_file, "CT_A=changed\n", later=2)  # an edit: no cd, the next prompt has it
    assert output_lines(s.run("true")) == []
    env = s.env_dump()
    assert env["CT_A"] == "changed" and env["CT_FROM_RC"] == "rc sees changed" and "CT_MULTI" not in env
    assert s.run("true") == ""  # and nothing runs again while nothing changes

    write(os.path.join(proj, ".env.local"), "CT_A=local\nCT_LOCAL=1\n", later=4)  # a listed file appears
    s.run("true")
    env = s.env_dump()
    assert env["CT_A"] == "local" and env["CT_LOCAL"] == "1"

    write(env_file, "CT_A=changed\nthis line is not valid\n", later=6)
    lines = ctxd_lines(s.run("true"))
    assert lines == [f"ctxd: {env_file}:2: cannot parse 'this line is not valid' (skipped)"]
    assert s.env_dump()["CT_LOCAL"] == "1"
    assert s.run("true") == ""  # the notice is shown once

    assert cd(s, tmp_path) == ""
    assert comparable(s.env_dump()) == comparable(before)


def test_exec_from_an_activated_shell_runs_in_the_other_projects_environment(shell, sessions, tmp_path):
    a = python_project(tmp_path / "a")
    b = python_project(tmp_path / "b")
    s = sessions(shell)
    cd(s, a)
    assert s.env_dump()["VIRTUAL_ENV"] == os.path.join(a, ".venv")
    out = s.run(f"ctxd exec {b} -- sh -c 'echo \"VENV=$VIRTUAL_ENV\"; echo \"PATH=$PATH\"; pwd'")
    lines = output_lines(out)
    assert lines[0] == f"VENV={os.path.join(b, '.venv')}"
    entries = lines[1][len("PATH="):].split(":")
    assert entries[0] == os.path.join(b, ".venv", "bin") and os.path.join(a, ".venv", "bin") not in entries
    assert lines[2] == b
    # the shell itself is still in a, untouched
    env = s.env_dump()
    assert env["VIRTUAL_ENV"] == os.path.join(a, ".venv") and path_list(env)[0] == os.path.join(a, ".venv", "bin")
    var = "$status" if shell == "fish" else "$?"
    assert output_lines(s.run(f"ctxd exec {b} -- sh -c 'exit 9'; echo rc={var}")) == ["rc=9"]
