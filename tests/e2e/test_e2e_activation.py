"""cd -> environment in real interactive bash, zsh and fish.

Every scenario ends by leaving the project and comparing the shell's whole
exported environment with what it was before entering.
"""

import os

from ctxd import paths
from e2ekit import (
    cd, comparable, go_project, node_project, path_list, plain_dir, python_project, set_path,
    set_var, unset_var,
)


def context_dir_for(root, home):
    return paths.context_dir(root, {"HOME": str(home), "XDG_DATA_HOME": os.path.join(str(home), ".local/share")})


def test_enter_leave_restores_exactly(shell, sessions, tmp_path):
    py = python_project(tmp_path / "py")
    node = node_project(tmp_path / "node")
    go = go_project(tmp_path / "go")
    out = plain_dir(tmp_path / "out")
    s = sessions(shell)
    # set-but-empty before entering: activation must give back exactly ''
    s.run(set_var(shell, "NODE_ENV", ""))
    s.run(set_var(shell, "PYTHONHOME", ""))
    s.run(unset_var(shell, "VIRTUAL_ENV"))
    cd(s, out)
    before = s.env_dump()
    assert before["NODE_ENV"] == "" and before["PYTHONHOME"] == ""
    assert "VIRTUAL_ENV" not in before and "GOFLAGS" not in before

    assert cd(s, py) == ""
    inside = s.env_dump()
    assert inside["CTXD_ROOT"] == py
    assert "PYTHONHOME" not in inside  # unset, not merely emptied
    cd(s, out)
    assert comparable(s.env_dump()) == comparable(before)

    assert cd(s, node) == ""
    inside = s.env_dump()
    assert inside["CTXD_ROOT"] == node
    assert inside["NODE_ENV"] == ""  # the user had one (empty): kept
    cd(s, out)
    assert comparable(s.env_dump()) == comparable(before)

    # a chain through all three, then out
    for proj in (go, py, node, go):
        assert cd(s, proj) == ""
        assert s.env_dump()["CTXD_ROOT"] == proj
    cd(s, out)
    after = s.env_dump()
    assert comparable(after) == comparable(before)
    assert not [k for k in after if k.startswith("CTXD_")]


def test_project_types_set_their_environment(shell, sessions, tmp_path, home):
    py = python_project(tmp_path / "py")
    node = node_project(tmp_path / "node")
    go = go_project(tmp_path / "go")
    multi = go_project(node_project(python_project(tmp_path / "multi")))
    out = plain_dir(tmp_path / "out")
    s = sessions(shell)
    s.run(set_var(shell, "PYTHONHOME", "/opt/python"))
    cd(s, out)
    before = s.env_dump()

    cd(s, py)
    env = s.env_dump()
    assert env["VIRTUAL_ENV"] == os.path.join(py, ".venv")
    assert path_list(env)[0] == os.path.join(py, ".venv", "bin")
    assert path_list(env)[1:] == path_list(before)
    assert "PYTHONHOME" not in env
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["CTXD_ROOT"] == py
    assert env["CTXD_TYPES"] == "python"
    assert env["CTXD_CONTEXT_DIR"] == context_dir_for(py, home)

    cd(s, node)
    env = s.env_dump()
    assert path_list(env)[0] == os.path.join(node, "node_modules", ".bin")
    assert path_list(env)[1:] == path_list(before)
    assert env["NODE_ENV"] == "development"
    assert env["PYTHONHOME"] == "/opt/python"
    assert "VIRTUAL_ENV" not in env and "PYTHONDONTWRITEBYTECODE" not in env
    assert (env["CTXD_ROOT"], env["CTXD_TYPES"]) == (node, "node")
    assert env["CTXD_CONTEXT_DIR"] == context_dir_for(node, home)

    cd(s, go)
    env = s.env_dump()
    assert env["GOFLAGS"] == "-mod=mod"
    assert "NODE_ENV" not in env
    assert path_list(env) == path_list(before)
    assert (env["CTXD_ROOT"], env["CTXD_TYPES"]) == (go, "go")

    cd(s, multi)
    env = s.env_dump()
    assert env["CTXD_TYPES"] == "python,node,go"
    assert path_list(env)[:2] == [os.path.join(multi, ".venv", "bin"),
                                  os.path.join(multi, "node_modules", ".bin")]
    assert (env["VIRTUAL_ENV"], env["NODE_ENV"], env["GOFLAGS"]) == (
        os.path.join(multi, ".venv"), "development", "-mod=mod")

    cd(s, out)
    assert comparable(s.env_dump()) == comparable(before)

    # the user's own NODE_ENV is kept, and still there after leaving
    s.run(set_var(shell, "NODE_ENV", "production"))
    before = s.env_dump()
    cd(s, node)
    assert s.env_dump()["NODE_ENV"] == "production"
    cd(s, out)
    assert comparable(s.env_dump()) == comparable(before)


def test_nested_projects_and_marker_less_subdirs(shell, sessions, tmp_path):
    mono = node_project(tmp_path / "mono")
    api = python_project(tmp_path / "mono" / "packages" / "api")
    deep = plain_dir(tmp_path / "mono" / "src" / "deep" / "er")
    api_sub = plain_dir(os.path.join(api, "handlers"))
    out = plain_dir(tmp_path / "out")
    mono_bin = os.path.join(mono, "node_modules", ".bin")
    api_bin = os.path.join(api, ".venv", "bin")
    s = sessions(shell)
    cd(s, out)
    before = s.env_dump()

    cd(s, mono)
    env = s.env_dump()
    assert (env["CTXD_ROOT"], env["CTXD_TYPES"]) == (mono, "node")
    at_mono = comparable(env)

    for sub in (deep, os.path.join(mono, "packages"), os.path.join(mono, "src")):
        cd(s, sub)
        assert comparable(s.env_dump()) == at_mono, sub

    cd(s, api)
    env = s.env_dump()
    assert (env["CTXD_ROOT"], env["CTXD_TYPES"]) == (api, "python")
    assert env["VIRTUAL_ENV"] == os.path.join(api, ".venv")
    assert mono_bin not in path_list(env)
    assert path_list(env) == [api_bin] + path_list(before)
    assert "NODE_ENV" not in env
    at_api = comparable(env)

    cd(s, api_sub)
    assert comparable(s.env_dump()) == at_api

    s.run("cd ../..")  # from api/handlers up to mono/packages: back to the parent root
    env = s.env_dump()
    assert env["PWD"] == os.path.join(mono, "packages")
    assert comparable(env) == at_mono
    assert api_bin not in path_list(env)

    cd(s, api)
    s.run("cd ..")
    assert comparable(s.env_dump()) == at_mono

    cd(s, out)
    assert comparable(s.env_dump()) == comparable(before)


def test_switch_directly_between_side_by_side_projects(shell, sessions, tmp_path):
    a = python_project(tmp_path / "A")
    b = node_project(tmp_path / "B")
    s = sessions(shell)
    cd(s, tmp_path)
    before = s.env_dump()

    cd(s, a)
    assert s.env_dump()["VIRTUAL_ENV"] == os.path.join(a, ".venv")
    assert s.run("cd ../B") == ""
    env = s.env_dump()
    assert env["CTXD_ROOT"] == b
    assert "VIRTUAL_ENV" not in env and "PYTHONDONTWRITEBYTECODE" not in env
    assert os.path.join(a, ".venv", "bin") not in path_list(env)
    assert path_list(env) == [os.path.join(b, "node_modules", ".bin")] + path_list(before)
    assert env["NODE_ENV"] == "development"

    assert s.run("cd ../A") == ""
    env = s.env_dump()
    assert env["CTXD_ROOT"] == a
    assert "NODE_ENV" not in env
    assert path_list(env) == [os.path.join(a, ".venv", "bin")] + path_list(before)

    s.run("cd ..")
    assert comparable(s.env_dump()) == comparable(before)


def test_ten_round_trips_do_not_grow_path(shell, sessions, tmp_path):
    a = node_project(tmp_path / "A")
    b = node_project(tmp_path / "B")
    s = sessions(shell)
    cd(s, tmp_path)
    before = s.env_dump()
    cd(s, a)
    first = path_list(s.env_dump())
    assert first == [os.path.join(a, "node_modules", ".bin")] + path_list(before)
    for _ in range(10):
        s.run("cd ../B")
        s.run("cd ../A")
    env = s.env_dump()
    assert len(path_list(env)) == len(first)
    assert path_list(env) == first
    assert len(set(path_list(env))) == len(path_list(env))
    s.run("cd ../B")
    env = s.env_dump()
    assert path_list(env) == [os.path.join(b, "node_modules", ".bin")] + path_list(before)
    s.run("cd ..")
    assert comparable(s.env_dump()) == comparable(before)


NASTY_NAMES = [
    "proj 'q' \"d\" $HOME `x` ünï",
    "a$(touch pwned1)b`touch pwned2`;touch pwned3&&touch pwned4|x",
    "$(cd;touch pwned5)",  # would land in HOME, which is under tmp_path too
    "${HOME}%s%n\\$'\\x41'",
    "trailing backslash\\",
    "tab\tand\nnewline",
    " lead-and-trail ",
    "*?[glob] !hist {a,b} ~tilde #hash",
    "bytes-\udcff\udcfe-not-utf8",
]


def test_nasty_directory_names(shell, sessions, tmp_path):
    parent = plain_dir(tmp_path / "names")
    s = sessions(shell)
    cd(s, parent)
    before = s.env_dump()
    for name in NASTY_NAMES:
        proj = python_project(os.path.join(parent, name))
        sub = plain_dir(os.path.join(proj, "sub dir"))
        assert cd(s, sub) == "", name
        env = s.env_dump()
        assert env["CTXD_ROOT"] == proj, name
        assert env["VIRTUAL_ENV"] == os.path.join(proj, ".venv"), name
        assert path_list(env)[0] == os.path.join(proj, ".venv", "bin"), name
        assert path_list(env)[1:] == path_list(before), name
        assert s.run("true") == "", name  # the next prompt is quiet too
        assert cd(s, parent) == "", name
        assert comparable(s.env_dump()) == comparable(before), name
    # nothing in any name was ever executed
    pwned = [os.path.join(d, f) for d, _, fs in os.walk(str(tmp_path)) for f in fs if f.startswith("pwned")]
    assert pwned == []


def test_symlinked_project_keeps_the_logical_path(shell, sessions, tmp_path):
    real = python_project(tmp_path / "real" / "proj")
    plain_dir(os.path.join(real, "sub"))
    link = str(tmp_path / "link")
    os.symlink(real, link)
    alias = str(tmp_path / "alias")
    os.symlink(str(tmp_path / "real"), alias)
    s = sessions(shell)
    cd(s, tmp_path)
    before = s.env_dump()

    assert cd(s, link) == ""
    env = s.env_dump()
    assert env["CTXD_ROOT"] == link
    assert env["VIRTUAL_ENV"] == os.path.join(link, ".venv")
    assert path_list(env) == [os.path.join(link, ".venv", "bin")] + path_list(before)

    cd(s, os.path.join(alias, "proj", "sub"))
    env = s.env_dump()
    assert env["CTXD_ROOT"] == os.path.join(alias, "proj")
    assert path_list(env) == [os.path.join(alias, "proj", ".venv", "bin")] + path_list(before)

    cd(s, real)
    env = s.env_dump()
    assert env["CTXD_ROOT"] == real
    assert path_list(env) == [os.path.join(real, ".venv", "bin")] + path_list(before)

    cd(s, tmp_path)
    assert comparable(s.env_dump()) == comparable(before)


def test_users_path_edits_survive_leaving(shell, sessions, tmp_path):
    node = node_project(tmp_path / "node")
    nbin = os.path.join(node, "node_modules", ".bin")
    s = sessions(shell)
    cd(s, tmp_path)
    base = path_list(s.env_dump())
    assert "/usr/bin" in base and "/bin" in base

    # prepend
    cd(s, node)
    assert path_list(s.env_dump()) == [nbin] + base
    s.run(set_path(shell, ["/my/bin", nbin] + base))
    cd(s, tmp_path)
    assert path_list(s.env_dump()) == ["/my/bin"] + base
    base = ["/my/bin"] + base

    # reorder: move /usr/bin to the front while inside
    cd(s, node)
    inside = path_list(s.env_dump())
    reordered = ["/usr/bin"] + [e for e in inside if e != "/usr/bin"]
    s.run(set_path(shell, reordered))
    cd(s, tmp_path)
    base = [e for e in reordered if e != nbin]
    assert path_list(s.env_dump()) == base
    assert base[0] == "/usr/bin"

    # duplicates made on purpose: a system entry, and the project's own entry
    cd(s, node)
    inside = path_list(s.env_dump())
    assert inside == [nbin] + base
    s.run(set_path(shell, inside + ["/bin", nbin]))
    cd(s, tmp_path)
    env = s.env_dump()
    assert path_list(env) == base + ["/bin", nbin]
    assert path_list(env).count("/bin") == 2
    base = base + ["/bin", nbin]

    # re-entering reuses the user's copy rather than adding another one
    cd(s, node)
    assert path_list(s.env_dump()).count(nbin) == 1
    cd(s, tmp_path)
    assert path_list(s.env_dump()) == base

    # a managed variable the user changed inside keeps the user's value
    cd(s, node)
    s.run(set_var(shell, "NODE_ENV", "test"))
    cd(s, tmp_path)
    env = s.env_dump()
    assert env["NODE_ENV"] == "test"
    assert not [k for k in env if k.startswith("CTXD_")]
