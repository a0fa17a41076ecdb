"""`ctxd chat install claude` then `--uninstall` leaves .git/info/exclude as it was."""

import subprocess

from ctxdtest import ctxd


def test_uninstall_takes_its_exclude_lines_back(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    exclude = repo / ".git" / "info" / "exclude"
    exclude.write_text(exclude.read_text() + "/mine.log\n")
    before = exclude.read_text()
    assert ctxd("chat", "install", "claude", cwd=repo).returncode == 0
    assert "/.claude/settings.local.json" in exclude.read_text()
    p = ctxd("chat", "install", "claude", "--uninstall", cwd=repo)
    assert p.returncode == 0 and "removed the file" in p.stdout + p.stderr
    assert exclude.read_text() == before
    # twice round: still nothing left behind
    assert ctxd("chat", "install", "claude", cwd=repo).returncode == 0
    assert ctxd("chat", "install", "claude", "--uninstall", cwd=repo).returncode == 0
    assert exclude.read_text() == before
