"""Names a shell reserves, set by a project's `[env]` or `.env` (issue 22 item 6).

zsh stops an eval at `export path=...` ("inconsistent type for assignment"): the variables
before it stayed set after leaving. Now each shell skips the names it reserves with one
`ctxd:` line, applies the rest, and leaving restores the shell exactly.
"""

import os

from e2ekit import cd, comparable, ctxd_lines, output_lines, plain_dir

RESERVED = {"zsh": ("path", "status", "UID", "argv", "pipestatus"),
            "bash": ("UID", "BASHOPTS", "PPID"),
            "fish": ("status", "pipestatus", "fish_pid")}


def test_reserved_names_are_skipped_and_the_rest_applies(shell, sessions, tmp_path):
    names = RESERVED[shell]
    proj = plain_dir(tmp_path / "proj")
    rc_lines = ["[env]", 'files = [".env"]', 'CT_BEFORE = "b"']
    rc_lines += [f'{n} = "/nowhere"' for n in names[:2]] + ['CT_AFTER = "a"']
    with open(os.path.join(proj, ".contextrc"), "w") as f:
        f.write("\n".join(rc_lines) + "\n")
    with open(os.path.join(proj, ".env"), "w") as f:
        f.write("CT_ENV_BEFORE=1\n" + "".join(f"{n}=7\n" for n in names[2:]) + "CT_ENV_AFTER=2\n")
    s = sessions(shell)
    assert output_lines(s.run(f"ctxd allow {proj}"))
    cd(s, tmp_path)
    before = s.env_dump()

    lines = ctxd_lines(cd(s, proj))
    assert len(lines) == 1 and lines[0].startswith(f"ctxd: {shell} reserves ") and lines[0].endswith(
        ": not set (skipped)"), lines
    for n in names:
        assert f"{n} (" in lines[0]
    env = s.env_dump()
    assert (env["CT_BEFORE"], env["CT_AFTER"], env["CT_ENV_BEFORE"], env["CT_ENV_AFTER"]) == ("b", "a", "1", "2")
    assert env["PATH"] == before["PATH"]
    assert output_lines(s.run("echo still-$((1+1))" if shell != "fish" else "echo still-(math 1+1)")) == ["still-2"]
    assert s.run("true") == ""  # said once

    assert cd(s, tmp_path) == ""
    assert comparable(s.env_dump()) == comparable(before)
