"""A package nested in a monorepo inherits the enclosing root's detected environment
(`[ctxd] inherit_root = true`), in real bash, zsh and fish.

The nested root's own entries stay in front (its .venv/bin before the parent's
node_modules/.bin), the parent must be trusted itself, a change to the parent's
files is noticed at the next prompt (through the hook's watched files), and
leaving restores the environment exactly.
"""

import os

from e2ekit import cd, comparable, ctxd_lines, node_project, path_list, plain_dir, python_project


def monorepo(tmp_path, inherit=True):
    repo = node_project(tmp_path / "repo")
    app = python_project(tmp_path / "repo" / "packages" / "app")
    if inherit:
        with open(os.path.join(app, ".contextrc"), "w", encoding="utf-8") as f:
            f.write("[ctxd]\ninherit_root = true\n")
    return repo, app


def test_nested_package_keeps_the_parents_node_bin_behind_its_venv(shell, sessions, tmp_path):
    repo, app = monorepo(tmp_path)
    out = plain_dir(tmp_path / "out")
    s = sessions(shell)
    cd(s, out)
    before = s.env_dump()
    s.run(f"ctxd allow {app}")

    cd(s, app)
    env = s.env_dump()
    venv_bin, node_bin = os.path.join(app, ".venv", "bin"), os.path.join(repo, "node_modules", ".bin")
    assert path_list(env)[:2] == [venv_bin, node_bin]
    assert path_list(env)[2:] == path_list(before)
    assert env["VIRTUAL_ENV"] == os.path.join(app, ".venv")
    assert env["NODE_ENV"] == "development"
    assert env["CTXD_ROOT"] == app
    assert s.run("true") == ""  # nothing to do at the next prompt

    # a change in the parent root is noticed: it becomes a Ruby project with binstubs
    open(os.path.join(repo, "Gemfile"), "w").close()
    os.makedirs(os.path.join(repo, "bin"))
    s.run("true")
    assert path_list(s.env_dump())[:3] == [venv_bin, node_bin, os.path.join(repo, "bin")]

    cd(s, out)
    assert comparable(s.env_dump()) == comparable(before)


def test_off_by_default(shell, sessions, tmp_path):
    repo, app = monorepo(tmp_path, inherit=False)
    s = sessions(shell)
    cd(s, app)
    env = s.env_dump()
    assert os.path.join(repo, "node_modules", ".bin") not in path_list(env)
    assert "NODE_ENV" not in env


def test_the_parent_root_must_be_trusted(shell, sessions, tmp_path):
    repo, app = monorepo(tmp_path)
    out = plain_dir(tmp_path / "out")
    node_bin = os.path.join(repo, "node_modules", ".bin")
    s = sessions(shell)
    cd(s, out)
    before = s.env_dump()
    s.run(f"ctxd allow {app}")
    s.run(f"ctxd deny {repo}")

    lines = ctxd_lines(cd(s, app))
    assert len(lines) == 1 and repo in lines[0] and "not inherited" in lines[0], lines
    env = s.env_dump()
    assert node_bin not in path_list(env) and "NODE_ENV" not in env
    assert path_list(env)[0] == os.path.join(app, ".venv", "bin")
    assert s.run("true") == ""  # said once

    s.run(f"ctxd allow {repo}")  # trust changes are watched: applies at the next prompt
    assert path_list(s.env_dump())[1] == node_bin

    cd(s, out)
    assert comparable(s.env_dump()) == comparable(before)


def test_a_parent_change_while_away_is_seen_on_coming_back(shell, sessions, tmp_path):
    """The hook may replay a project's activation without ctxd on re-entry (activation/revisit.py):
    the parent's files are among the watched ones, so an edit there while away is not replayed over."""
    repo, app = monorepo(tmp_path)
    out = plain_dir(tmp_path / "out")
    s = sessions(shell)
    s.run(f"ctxd allow {app}")
    cd(s, app)
    cd(s, out)
    cd(s, app)  # cached now
    cd(s, out)
    open(os.path.join(repo, "Gemfile"), "w").close()
    os.makedirs(os.path.join(repo, "bin"))
    cd(s, app)
    assert path_list(s.env_dump())[:3] == [os.path.join(app, ".venv", "bin"),
                                           os.path.join(repo, "node_modules", ".bin"), os.path.join(repo, "bin")]
