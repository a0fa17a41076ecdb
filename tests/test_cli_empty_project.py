"""A project where nothing was recorded: every command that reads the conversation
says so the same way (one ``ctxd:`` line, exit 4, nothing on stdout), as ctxd context,
ctxd handoff, the MCP server and the llm fragment already did. Nothing matching in a
conversation that exists is no error (exit 0, nothing printed)."""

import pytest

from ctxdtest import ctxd


@pytest.fixture
def proj(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / ".git").mkdir()
    return root


@pytest.mark.parametrize("args", [["recall", "x"], ["recall", "--json", "x"], ["chat", "log"],
                                  ["chat", "search", "x"], ["context"]])
def test_empty_project_is_one_line_exit_4(proj, args):
    p = ctxd(*args, cwd=proj)
    assert (p.returncode, p.stdout) == (4, ""), p.stderr
    assert p.stderr == f"ctxd: no conversation recorded for {proj} yet (ctxd chat add / import / install)\n"


def test_nothing_matching_is_no_error(proj):
    assert ctxd("chat", "add", "the build uses meson", cwd=proj).returncode == 0
    for args in (["recall", "zebra"], ["chat", "search", "zebra"]):
        p = ctxd(*args, cwd=proj)
        assert (p.returncode, p.stdout, p.stderr) == (0, "", ""), args
    assert "meson" in ctxd("chat", "log", cwd=proj).stdout
