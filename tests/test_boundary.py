"""ctxd.boundary: one mapping from an exception to what each protocol says and returns.

The mapping itself in-process (real domain errors from the modules that raise
them, the real log file), and each protocol as a whole process: the click CLI,
``ctxd export`` evaluated by a real bash, and the AI CLI hook runner.
"""

import os
import re
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ctxd import boundary, paths
from ctxd.errors import CtxdError, ExitCode, NotFoundError

ROOT = Path(__file__).resolve().parent.parent
LOG_HEAD = re.compile(r"^--- \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (.*) \(pid (\d+)\)$", re.M)


def log_text():
    try:
        return Path(paths.log_file()).read_text()
    except FileNotFoundError:
        return ""


def domain_errors():
    from ctxd.activation.contextrc import RcError
    from ctxd.handoff.archive_schema import ArchiveError
    from ctxd.agents.base import HookError
    from ctxd.memory.ingest.importing import ImportFailed
    from ctxd.memory.store.errors import StoreCorrupt

    return [HookError("the payload has no cwd"), ImportFailed("x.jsonl: cannot tell which tool wrote it"),
            StoreCorrupt("the store is corrupt: run ctxd chat recover"), ArchiveError("no such archive"),
            RcError(".contextrc", 3, 1, "FOO must be a string"), NotFoundError("no message #9")]


@pytest.mark.parametrize("exc", domain_errors(), ids=lambda e: type(e).__name__)
def test_every_domain_error_maps_to_its_message_and_code_unlogged(exc):
    assert isinstance(exc, CtxdError)
    f = boundary.failure(exc, "test")
    assert (f.message, f.exit_code, f.is_bug, f.log_path) == (exc.message, exc.exit_code, False, None)
    assert f.not_found == isinstance(exc, NotFoundError)
    assert log_text() == ""


def test_a_bug_is_logged_dated_with_its_traceback_in_a_private_file():
    def deep():
        raise RuntimeError("boom\nsecond line")

    try:
        deep()
    except RuntimeError as e:
        f = boundary.failure(e, "cli")
    log = paths.log_file()
    assert f.is_bug and f.exit_code == ExitCode.ERROR and f.log_path == log
    assert f.message == f"internal error: RuntimeError: boom second line (details in {log})"
    text = log_text()
    [(where, pid)] = LOG_HEAD.findall(text)
    assert where == "cli: RuntimeError: boom second line" and int(pid) == os.getpid()
    assert "Traceback (most recent call last)" in text and "in deep" in text
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600


def test_interrupt_and_broken_pipe():
    f = boundary.failure(KeyboardInterrupt(), "cli")
    assert (f.message, f.exit_code, f.is_bug) == ("interrupted", 130, False)
    f = boundary.failure(BrokenPipeError(32, "Broken pipe"), "cli")
    assert (f.exit_code, f.quiet, f.is_bug) == (0, True, False)
    assert log_text() == ""


def test_an_unwritable_log_still_gives_one_message(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("CTXD_STATE_DIR", str(blocker / "sub"))
    f = boundary.failure(ValueError("nope"), "cli")
    assert (f.message, f.log_path, f.is_bug) == ("internal error: ValueError: nope", None, True)


def test_hooks_log_every_failure_and_say_one_line(capsys):
    from ctxd.agents.base import HookError

    try:
        raise HookError("the payload has no cwd")
    except HookError as e:
        assert boundary.hook_exit(e, "claude") == 0
    err = capsys.readouterr().err
    assert err == f"ctxd: chat hook claude: nothing recorded (the payload has no cwd); see {paths.log_file()}\n"
    [(where, _pid)] = LOG_HEAD.findall(log_text())
    assert where == "chat hook claude: the payload has no cwd" and "Traceback" in log_text()


# -- whole processes ------------------------------------------------------------------------------

def run_py(code, cwd, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT), PWD=str(cwd))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60, **kw)


CLI_WITH = """
    import os, signal, sys, time
    import click
    from ctxd.cli import cli, main

    @cli.command()
    def boom():
        {body}

    sys.argv = ["ctxd", "boom"]
    main()
"""


def test_cli_bug_is_one_line_exit_1_and_logged(tmp_path):
    p = run_py(CLI_WITH.format(body="raise RuntimeError('boom')"), tmp_path)
    log = paths.log_file()
    assert p.returncode == 1
    assert p.stderr == f"ctxd: internal error: RuntimeError: boom (details in {log})\n"
    assert "cli: RuntimeError: boom" in log_text() and "Traceback" in log_text()


def test_cli_domain_error_is_its_line_and_code(tmp_path):
    p = run_py(CLI_WITH.format(body="from ctxd.errors import NotFoundError; raise NotFoundError('no such thing')"),
               tmp_path)
    assert (p.returncode, p.stderr) == (4, "ctxd: no such thing\n")
    assert log_text() == ""


def test_cli_ctrl_c_exits_130_with_one_line(tmp_path):
    # a real SIGINT delivered to the process while the command runs
    p = run_py(CLI_WITH.format(body="os.kill(os.getpid(), signal.SIGINT); time.sleep(5)"), tmp_path)
    assert (p.returncode, p.stderr) == (130, "ctxd: interrupted\n")


def test_cli_output_into_a_closed_pipe_exits_0_silently(tmp_path):
    from ctxd.memory.project import locate, open_store

    root = tmp_path / "proj"
    root.mkdir()
    (root / ".git").mkdir()
    with open_store(locate(str(root))) as s:
        s.add_many([dict(role="user", content=f"line {i} " * 30, session="s") for i in range(3000)])
    env = dict(os.environ, PYTHONPATH=str(ROOT), PWD=str(root))
    p = subprocess.run(["bash", "-c", f"{sys.executable!s} -m ctxd chat log -n 3000 | head -c 1 >/dev/null; "
                                      "echo \"${PIPESTATUS[0]}\""],
                       cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert (p.stdout, p.stderr) == ("0\n", "")


EXPORT_RAISING = """
    import sys
    import ctxd.activation.export as ex

    def export(shell, environ):
        {body}

    ex.export = export
    from ctxd.fastpath.export_entry import export_main
    export_main(["bash"])
"""


def test_export_bug_warns_through_the_shell_and_exits_1(tmp_path):
    p = run_py(EXPORT_RAISING.format(body="raise RuntimeError('boom')"), tmp_path)
    log = paths.log_file()
    assert p.returncode == 1 and p.stderr == ""
    # the hook evaluates what export printed: the user sees the one line, nothing else happens
    shown = subprocess.run(["bash", "--norc", "-c", p.stdout], capture_output=True, text=True, timeout=30)
    assert shown.returncode == 0
    assert shown.stderr == f"ctxd: export failed: RuntimeError: boom (details in {log})\n"
    assert "export: RuntimeError: boom" in log_text()


def test_export_domain_error_warns_with_its_code(tmp_path):
    p = run_py(EXPORT_RAISING.format(body="from ctxd.errors import StateError; raise StateError('state was corrupt')"),
               tmp_path)
    assert p.returncode == ExitCode.STATE
    shown = subprocess.run(["bash", "--norc", "-c", p.stdout], capture_output=True, text=True, timeout=30)
    assert shown.stderr == "ctxd: state was corrupt\n"
    assert log_text() == ""


def test_export_interrupted_prints_no_code(tmp_path):
    p = run_py(EXPORT_RAISING.format(body="raise KeyboardInterrupt"), tmp_path)
    assert (p.returncode, p.stdout, p.stderr) == (130, "", "ctxd: interrupted\n")


def test_export_unknown_shell_is_a_usage_line(tmp_path):
    p = run_py("from ctxd.fastpath.export_entry import export_main\nexport_main(['csh'])\n", tmp_path)
    assert p.returncode == ExitCode.USAGE and p.stdout == ""
    [line] = p.stderr.splitlines()
    assert line.startswith("ctxd: ") and "csh" in line
