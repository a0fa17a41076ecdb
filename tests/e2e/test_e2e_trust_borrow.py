"""Nobody borrows trust, in real bash, zsh and fish: a clone whose .contextrc links to an allowed file."""

import os

from e2ekit import cd, ctxd_lines, path_list, python_project

GOOD = '[hooks]\non_enter = "touch ./entered"\n[path]\nprepend = ["bin"]\n[env]\nBORROW = "yes"\n'


def test_cloned_link_to_an_allowed_contextrc_runs_nothing(shell, sessions, home, tmp_path):
    (home / ".config/ctxd/config.toml").write_text("")  # no trusted trees: only `ctxd allow` counts
    good = tmp_path / "good"
    good.mkdir()
    (good / ".contextrc").write_text(GOOD)
    evil = tmp_path / "evil"
    python_project(evil)
    (evil / "bin").mkdir()
    (evil / ".contextrc").symlink_to("../good/.contextrc")

    s = sessions(shell)
    assert "ctxd: allowed" in s.run(f"ctxd allow {good}")
    cd(s, good)  # the file it points at is trusted where it is: its hook runs there
    assert (good / "entered").exists()
    cd(s, tmp_path)

    lines = ctxd_lines(cd(s, evil))
    assert not (evil / "entered").exists()
    env = s.env_dump()
    assert "BORROW" not in env and "VIRTUAL_ENV" not in env
    assert not [e for e in path_list(env) if e.startswith(str(evil))]
    assert env["CTXD_ROOT"] == str(evil) and env["CTXD_STATUS"].endswith("!blocked")
    assert any(f"{evil}/.contextrc is a symlink to {good}/.contextrc and is not trusted here" in l for l in lines)
    show = s.run("ctxd show")
    assert f"{evil}/.contextrc  [untrusted]" in show and "[allowed]" not in show
    assert s.run("true") == ""  # said once, not at every prompt

    # allowed in its own root, after review, it applies there
    s.run(f"ctxd allow {evil}")
    s.run("true")
    assert (evil / "entered").exists()
    env = s.env_dump()
    assert env["BORROW"] == "yes" and str(evil / "bin") in path_list(env)
    cd(s, tmp_path)
    assert "BORROW" not in s.env_dump()
    os.unlink(evil / "entered")
