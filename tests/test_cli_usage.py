"""Usage errors: one ``ctxd: …`` line on stderr and exit code 2, for every command
(the click app and the commands dispatched before it), as whole processes."""


import pytest

from ctxdtest import ctxd


@pytest.mark.parametrize("args, says", [
    (["--bogus"], "no such option '--bogus'"),
    (["nosuch"], "no such command 'nosuch'"),
    (["chats"], "no such command 'chats' (Did you mean one of: 'chat'"),
    (["chat", "log", "--bogus"], "chat log: no such option '--bogus'"),
    (["recall"], "recall: missing argument 'QUERY'"),
    (["context", "--budget", "abc"], "context: --budget wants a whole number of at least 64, got 'abc'"),
    (["context", "--budget", "10"], "context: --budget wants a whole number of at least 64, got 10"),
    (["recall", "--budget", "x", "q"], "recall: --budget wants a whole number of at least 16, got 'x'"),
    (["chat", "add", "x", "--importance", "2"], "--importance wants a number from 0 to 1, got 2"),
    (["export", "--bogus"], "unsupported shell '--bogus'"),
    (["export", "json", "a", "b"], "export: usage: ctxd export SHELL"),
    (["chat", "hook"], "chat hook: usage: ctxd chat hook"),
    (["exec", "--bogus", "--", "true"], "exec: no such option: --bogus"),
])
def test_usage_error_is_one_ctxd_line_exit_2(tmp_path, args, says):
    p = ctxd(*args, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert p.stdout == ""
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctxd: "), p.stderr
    assert says in lines[0]


def test_usage_error_points_at_the_commands_help(tmp_path):
    p = ctxd("chat", "log", "--bogus", cwd=tmp_path)
    assert p.stderr.rstrip().endswith("(see 'ctxd chat log --help')")
    assert ctxd("--bogus", cwd=tmp_path).stderr.rstrip().endswith("(see 'ctxd --help')")


def test_help_and_version_are_unchanged(tmp_path):
    p = ctxd("context", "--help", cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.startswith("Usage: ctxd context")
    assert ctxd("--version", cwd=tmp_path).returncode == 0
