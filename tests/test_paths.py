import os

import platformdirs
import pytest

from ctxd import paths


@pytest.mark.parametrize("xdg", [None, "", "   ", "/custom/dir", "relative/dir"])
@pytest.mark.parametrize("kind,xdg_var,fn", [
    ("data", "XDG_DATA_HOME", platformdirs.user_data_dir),
    ("config", "XDG_CONFIG_HOME", platformdirs.user_config_dir),
    ("state", "XDG_STATE_HOME", platformdirs.user_state_dir),
    ("cache", "XDG_CACHE_HOME", platformdirs.user_cache_dir),
])
def test_fast_xdg_rules_agree_with_platformdirs(monkeypatch, kind, xdg_var, fn, xdg):
    if xdg is None:
        monkeypatch.delenv(xdg_var, raising=False)
    else:
        monkeypatch.setenv(xdg_var, xdg)
    assert paths._base(kind) == fn("ctxd", appauthor=False)


def test_ctxd_overrides_win(monkeypatch, tmp_path):
    monkeypatch.setenv("CTXD_DATA_DIR", str(tmp_path / "d"))
    assert paths.data_dir() == str(tmp_path / "d")


def test_context_dir_is_keyed_by_real_path(tmp_path):
    real = tmp_path / "proj"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert paths.context_dir(str(link)) == paths.context_dir(str(real))
    assert os.path.basename(paths.context_dir(str(real))).startswith("proj-")
    other = tmp_path / "x" / "proj"
    other.mkdir(parents=True)
    assert paths.context_dir(str(other)) != paths.context_dir(str(real))


def test_sha1_matches_hashlib():
    import hashlib

    assert paths._sha1_hex("ünï/path") == hashlib.sha1("ünï/path".encode()).hexdigest()
