"""ctxd.activation.direnv against the real direnv: its DIRENV_DIFF decodes,
ctxd's rewrite of it is one direnv accepts, and direnv's revert of the
rewritten snapshot lands on the environment without ctxd."""

import os
import subprocess

import pytest

from ctxd.activation import direnv as dd
from ctxd.activation.state import State

DIRENV = "/usr/bin/direnv"


@pytest.fixture
def real_direnv():
    if not os.path.exists(DIRENV):
        msg = "shell coexistence test: direnv is missing (apt-get install -y direnv)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return DIRENV


def direnv_env(tmp_path, path, **extra):
    env = {
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "home/.config"),
        "XDG_DATA_HOME": str(tmp_path / "home/.local/share"),
        "XDG_CACHE_HOME": str(tmp_path / "home/.cache"),
        "PATH": path,
        "DIRENV_LOG_FORMAT": "",
    }
    env.update(extra)
    return env


def export_json(direnv, cwd, env):
    r = subprocess.run([direnv, "export", "json"], cwd=cwd, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    import json

    return json.loads(r.stdout) if r.stdout.strip() else {}


def test_scrub_takes_ctxd_out_of_direnvs_snapshot_and_direnv_reverts_to_it(real_direnv, tmp_path):
    proj = tmp_path / "proj"
    (proj / "bin").mkdir(parents=True)
    (proj / ".envrc").write_text("export FOO=from-envrc\nPATH_add bin\n")
    base_path = "/opt/users-own/bin:/usr/bin:/bin"
    venv_bin = str(proj / ".venv/bin")
    env = direnv_env(tmp_path, base_path)
    subprocess.run([real_direnv, "allow", str(proj)], env=env, check=True, capture_output=True)

    # ctxd ran first: direnv loads on top of a PATH holding ctxd's entry
    ctxd_env = dict(env, PATH=venv_bin + ":" + base_path, VIRTUAL_ENV=str(proj / ".venv"))
    loaded = export_json(real_direnv, proj, ctxd_env)
    diff = dd.decode(loaded["DIRENV_DIFF"])
    assert diff["p"]["PATH"] == venv_bin + ":" + base_path  # the contamination the issue saw
    assert "FOO" in diff["n"] and "FOO" not in diff["p"]

    state = State(str(proj), {"VIRTUAL_ENV": None}, {"VIRTUAL_ENV": str(proj / ".venv")}, [venv_bin])
    token = dd.scrub(loaded["DIRENV_DIFF"], state)
    assert token is not None
    assert dd.decode(token)["p"]["PATH"] == base_path
    assert dd.decode(token)["n"] == diff["n"]  # direnv's own side untouched
    # re-activating the same root keeps the entry in place: the snapshot keeps it too
    assert dd.scrub(loaded["DIRENV_DIFF"], state, keep_path={venv_bin}) is None

    # ctxd left (its entry gone), then direnv unloads with the rewritten diff
    inside = dict(ctxd_env)
    for k, v in loaded.items():
        if v is None:
            inside.pop(k, None)
        else:
            inside[k] = v
    inside["PATH"] = inside["PATH"].replace(venv_bin + ":", "")
    del inside["VIRTUAL_ENV"]
    inside["DIRENV_DIFF"] = token
    out = export_json(real_direnv, tmp_path, inside)
    assert out["PATH"] == base_path  # not venv_bin:base_path
    assert out["FOO"] is None and out["DIRENV_DIFF"] is None


def test_scrub_restores_a_variable_direnv_snapshotted_with_ctxds_value():
    data = {"p": {"VIRTUAL_ENV": "/p/.venv", "OTHER": "x"}, "n": {"VIRTUAL_ENV": "/envrc/venv", "OTHER": "y"}}
    token = dd.encode(data)
    state = State("/p", {"VIRTUAL_ENV": None, "CTXD_ROOT": "/old"}, {"VIRTUAL_ENV": "/p/.venv", "CTXD_ROOT": "/p"})
    new = dd.decode(dd.scrub(token, state))
    assert "VIRTUAL_ENV" not in new["p"]  # was unset before ctxd: direnv's revert deletes it
    assert new["p"]["OTHER"] == "x"  # not ctxd's
    assert "CTXD_ROOT" not in new["p"]  # a key direnv never had is not added
    state.snap["VIRTUAL_ENV"] = "/users/venv"
    assert dd.decode(dd.scrub(token, state))["p"]["VIRTUAL_ENV"] == "/users/venv"


def test_scrub_removes_one_copy_and_leaves_what_is_not_ctxds():
    token = dd.encode({"p": {"PATH": "/a:/v/bin:/b:/v/bin"}, "n": {"PATH": "/e:/a:/v/bin:/b:/v/bin"}})
    state = State("/p", {}, {}, ["/v/bin", "/gone"])
    assert dd.decode(dd.scrub(token, state))["p"]["PATH"] == "/a:/b:/v/bin"
    # nothing of ctxd's there: no rewrite at all
    assert dd.scrub(dd.encode({"p": {"PATH": "/a:/b"}, "n": {}}), state) is None
    assert dd.scrub(dd.encode({"p": {}, "n": {"FOO": "1"}}), state) is None


@pytest.mark.parametrize("token", ["", "not base64 !", "eJzLSM3JyQcABiwCFQ==", dd.encode([1, 2])])
def test_a_diff_that_is_not_direnvs_is_left_alone(token):
    state = State("/p", {"X": None}, {"X": "1"}, ["/v/bin"])
    assert dd.scrub(token, state) is None
    assert dd.scrub(dd.encode({"p": {"PATH": "/v/bin"}, "n": {}}), None) is None
