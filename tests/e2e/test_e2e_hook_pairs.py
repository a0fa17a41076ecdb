"""on_enter / on_leave pair up in real bash, zsh and fish, whatever unloads the environment.

Every on_enter that ran is matched by exactly one on_leave when its environment
is unloaded (leaving the directory, `ctxd deny`, an edit that blocks the file),
and on_enter never runs twice without an on_leave in between. The hooks append
to a log outside the project, so the log is the sequence of runs.
"""

import os

from e2ekit import cd, output_lines, plain_dir

RC = ".contextrc"


def project(tmp_path):
    proj = plain_dir(tmp_path / "proj")
    log = str(tmp_path / "hooks.log")
    rc = os.path.join(proj, RC)
    with open(rc, "w", encoding="utf-8") as f:
        f.write('[env]\nCT_PAIR = "inside"\n\n[hooks]\n'
                f'on_enter = "echo enter-$CT_PAIR >> {log}"\n'
                f'on_leave = "echo leave-$CT_PAIR >> {log}"\n')
    return proj, rc, log


def runs(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return f.read().split()


def paired(log):
    """The log alternates enter/leave, starting with enter."""
    seq = runs(log)
    return all(x == ("enter-inside" if i % 2 == 0 else "leave-inside") for i, x in enumerate(seq))


def test_deny_then_allow_inside(shell, sessions, tmp_path):
    proj, _rc, log = project(tmp_path)
    out = plain_dir(tmp_path / "out")
    s = sessions(shell)
    cd(s, proj)
    s.run("ctxd allow")
    assert runs(log) == ["enter-inside"]
    s.run("ctxd deny")  # unloads the environment at the next prompt: its on_leave runs
    assert "CT_PAIR" not in s.env_dump()
    assert runs(log) == ["enter-inside", "leave-inside"]
    s.run("ctxd allow")
    s.run("true")
    assert runs(log) == ["enter-inside", "leave-inside", "enter-inside"]
    s.run("ctxd allow")  # allowing what is already allowed changes nothing
    assert runs(log) == ["enter-inside", "leave-inside", "enter-inside"]
    cd(s, out)
    assert runs(log) == ["enter-inside", "leave-inside"] * 2


def test_edit_blocks_then_allow_again_inside(shell, sessions, tmp_path):
    proj, rc, log = project(tmp_path)
    out = plain_dir(tmp_path / "out")
    s = sessions(shell)
    s.run(f"ctxd allow {proj}")
    cd(s, proj)
    assert runs(log) == ["enter-inside"]
    with open(rc, "a", encoding="utf-8") as f:
        f.write("# edited\n")
    text = s.run("true")  # blocked: the environment is unloaded, and its on_leave runs
    assert any("changed since you allowed it" in line for line in output_lines(text)), text
    assert "CT_PAIR" not in s.env_dump()
    assert runs(log) == ["enter-inside", "leave-inside"]
    s.run("true")
    assert runs(log) == ["enter-inside", "leave-inside"]
    s.run("ctxd allow")
    assert s.env_dump()["CT_PAIR"] == "inside"
    assert runs(log) == ["enter-inside", "leave-inside", "enter-inside"]
    cd(s, out)
    cd(s, proj)
    cd(s, out)
    assert runs(log) == ["enter-inside", "leave-inside"] * 3
    assert paired(log)


def test_blocked_while_away_runs_nothing_twice(shell, sessions, tmp_path):
    """Leave and re-enter around a deny: each load is one enter, each unload one leave."""
    proj, _rc, log = project(tmp_path)
    out = plain_dir(tmp_path / "out")
    s = sessions(shell)
    s.run(f"ctxd allow {proj}")
    cd(s, proj)
    cd(s, out)
    s.run(f"ctxd deny {proj}")
    cd(s, proj)  # denied: nothing loads, nothing runs
    assert runs(log) == ["enter-inside", "leave-inside"]
    s.run("ctxd allow")
    cd(s, out)
    assert runs(log) == ["enter-inside", "leave-inside"] * 2
