"""Shared fixtures. Every test runs with all user paths in a tmp dir."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(autouse=True)
def isolated_paths(tmp_path_factory, monkeypatch):
    """No test reads or writes the real user's config, data, state or cache."""
    home = tmp_path_factory.mktemp("home")
    for var, sub in (
        ("HOME", ""),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CACHE_HOME", ".cache"),
    ):
        monkeypatch.setenv(var, str(home / sub) if sub else str(home))
    for var in list(os.environ):
        if var.startswith(("CTXD_", "DIRENV_")):
            monkeypatch.delenv(var, raising=False)
    # Projects made by tests live under pytest's base temp dir: trust that tree,
    # as a user trusts ~/work. Tests of untrusted roots write their own config.
    write_config(home, f"[trust]\nroots = [{str(tmp_path_factory.getbasetemp())!r}]\n")
    return home


from ctxdtest import write_config  # noqa: E402  (shared with tests that import it)
