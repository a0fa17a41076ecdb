"""Version pins in real interactive shells: cd into a project with .nvmrc and the
pinned node (an nvm install tree in the test's HOME) is what `node` runs; leave
and it is gone. A pin nothing matches says so in one line, once per shell session."""

import os
import stat

from e2ekit import cd, comparable, ctxd_lines, make_wrapper, node_project, output_lines, path_list, plain_dir, \
    runs, wrap_command


def nvm_node(home, version):
    b = os.path.join(str(home), ".nvm", "versions", "node", "v" + version, "bin")
    os.makedirs(b)
    node = os.path.join(b, "node")
    with open(node, "w") as f:
        f.write(f"#!/bin/sh\necho v{version}\n")
    os.chmod(node, os.stat(node).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return node


def test_nvmrc_puts_the_pinned_node_on_path_and_takes_it_off(shell, sessions, tmp_path, home):
    nvm_node(home, "18.20.4")
    pinned = nvm_node(home, "20.11.1")
    proj = node_project(tmp_path / "proj")
    with open(os.path.join(proj, ".nvmrc"), "w") as f:
        f.write("20\n")
    out = plain_dir(tmp_path / "out")
    s = sessions(shell)
    cd(s, out)
    before = s.env_dump()
    assert s.run("command -v node || echo none") != pinned

    assert ctxd_lines(cd(s, proj)) == []
    assert output_lines(s.run("command -v node")) == [pinned]
    assert output_lines(s.run("node")) == ["v20.11.1"]
    entries = path_list(s.env_dump())
    # behind the project's own node_modules/.bin, in front of the user's PATH
    assert entries[:2] == [os.path.join(proj, "node_modules", ".bin"), os.path.dirname(pinned)]

    # editing the pin re-activates at the next prompt (the pin file is watched)
    with open(os.path.join(proj, ".nvmrc"), "w") as f:
        f.write("18\n")
    os.utime(os.path.join(proj, ".nvmrc"), (os.stat(proj).st_mtime + 5,) * 2)
    s.run("true")
    assert output_lines(s.run("node")) == ["v18.20.4"]

    cd(s, out)
    assert comparable(s.env_dump()) == comparable(before)
    assert s.run("command -v node || echo none") != pinned


def two_projects_pinning_node_22(tmp_path):
    """Two node projects whose .nvmrc pins 22, and a plain directory beside them."""
    a = node_project(tmp_path / "a")
    b = node_project(tmp_path / "b")
    for p in (a, b):
        with open(os.path.join(p, ".nvmrc"), "w") as f:
            f.write("22\n")
    return a, b, plain_dir(tmp_path / "out")


def test_a_missing_pin_is_one_line_once_per_shell(shell, sessions, tmp_path, home):
    nvm_node(home, "20.11.1")  # nvm is in use here, 22 is not installed
    a, b, out = two_projects_pinning_node_22(tmp_path)
    s = sessions(shell)
    first = ctxd_lines(cd(s, a))
    assert first == ["ctxd: .nvmrc pins node 22, which is not installed; ctxd never installs. "
                     "Install it with: nvm install 22"]
    assert ctxd_lines(s.run("true")) == []
    cd(s, out)
    assert ctxd_lines(cd(s, a)) == [] and ctxd_lines(cd(s, b)) == []
    assert "/.nvm/" not in s.env_dump()["PATH"]
    cd(s, out)
    # a new shell session is told again
    s2 = sessions(shell)
    assert ctxd_lines(cd(s2, b)) == first


def test_entering_again_after_a_missing_pins_notice_runs_no_process(shell, sessions, tmp_path, home):
    # The notice sets _CTXD_PINS_TOLD (never restored): the entry the hook keeps for the
    # project must still replay, without showing the notice again
    nvm_node(home, "20.11.1")
    a, b, out = two_projects_pinning_node_22(tmp_path)
    wrapper, log = make_wrapper(tmp_path)
    s = sessions(shell)
    s.run(wrap_command(shell, wrapper))
    cd(s, out)
    outside = comparable(s.env_dump())
    assert len(ctxd_lines(cd(s, a))) == 1 and runs(log) == 1
    inside = comparable(s.env_dump())
    assert inside["_CTXD_PINS_TOLD"] == "node@22" and inside["CTXD_ROOT"] == a
    for _ in range(2):
        assert cd(s, out) == ""
        assert comparable(s.env_dump()) == dict(outside, _CTXD_PINS_TOLD="node@22")
        assert cd(s, a) == ""  # replayed: no notice, no process
        assert comparable(s.env_dump()) == inside
    assert runs(log) == 1
    # another project pinning the same missing version: ctxd runs, and says nothing
    cd(s, out)
    assert ctxd_lines(cd(s, b)) == [] and runs(log) == 2
    # a shell told of another pin since: the test fails, ctxd runs, tells nothing again
    cd(s, out)
    s.run(("set -gx _CTXD_PINS_TOLD 'node@22 ruby@3'" if shell == "fish"
           else "export _CTXD_PINS_TOLD='node@22 ruby@3'"))
    assert ctxd_lines(cd(s, a)) == [] and runs(log) == 3
    assert s.env_dump()["_CTXD_PINS_TOLD"] == "node@22 ruby@3"
    # a shell that forgot (the user unset it): told again, by ctxd or by the replay alike
    cd(s, out)
    s.run("set -e _CTXD_PINS_TOLD" if shell == "fish" else "unset _CTXD_PINS_TOLD")
    assert len(ctxd_lines(cd(s, a))) == 1
    assert s.env_dump()["_CTXD_PINS_TOLD"] == "node@22"
