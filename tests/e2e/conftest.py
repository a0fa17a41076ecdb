"""Fixtures for the end-to-end scenarios in real interactive shells.

Every test gets a fresh HOME under its tmp dir and opens its shells through
the ``sessions`` fixture, which closes them at teardown whatever happened.
Helpers live in e2ekit.py.
"""

import json

import pytest

from shellkit import SHELLS, ShellSession


# -- fixtures ----------------------------------------------------------------

@pytest.fixture(params=SHELLS)
def shell(request):
    return request.param


@pytest.fixture
def home(tmp_path):
    """The shells' HOME. Its ctxd config trusts every project under tmp_path, so
    detected environments apply without `ctxd allow` (trust has its own tests)."""
    h = tmp_path / "home"
    cfg = h / ".config" / "ctxd" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(f"[trust]\nroots = [{json.dumps(str(tmp_path))}]\n")
    return h


@pytest.fixture
def sessions(home):
    """start(shell, **kwargs) -> ShellSession; every session is closed afterwards."""
    opened = []

    def start(shell, **kwargs):
        kwargs.setdefault("home", home)
        s = ShellSession(shell, kwargs.pop("home"), **kwargs)
        opened.append(s)
        # each command waits for its end marker and the prompt anyway
        s.child.delaybeforesend = None
        return s

    yield start
    for s in opened:
        s.close()


@pytest.fixture
def opened():
    """A list of sessions a test opened itself; each is closed afterwards."""
    shells = []
    yield shells
    for s in shells:
        s.close()
