"""Version pins in real interactive shells: cd into a project with .nvmrc and the
pinned node (an nvm install tree in the test's HOME) is what `node` runs; leave
and it is gone. A pin nothing matches says so in one line, once per shell session."""

import os
import stat

from e2ekit import cd, comparable, ctxd_lines, node_project, output_lines, path_list, plain_dir


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


def test_a_missing_pin_is_one_line_once_per_shell(shell, sessions, tmp_path, home):
    nvm_node(home, "20.11.1")  # nvm is in use here, 22 is not installed
    a = node_project(tmp_path / "a")
    b = node_project(tmp_path / "b")
    for p in (a, b):
        with open(os.path.join(p, ".nvmrc"), "w") as f:
            f.write("22\n")
    out = plain_dir(tmp_path / "out")
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
