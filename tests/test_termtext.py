"""Control characters shown, never obeyed (issue 22 item 7); real terminals:
tests/e2e/test_e2e_terminal_text.py."""

import io
import os
import pty
import subprocess

from ctxd.termtext import VisibleStream, visible
from ctxdtest import ctxd_argv

OSC52 = "\x1b]52;c;SGVsbG8=\x07"


def test_visible_escapes_c0_c1_del_and_undecodable_bytes_but_tab():
    assert visible("plain ü 中文") == "plain ü 中文"
    assert visible("a\tb") == "a\tb"
    assert visible(f"x{OSC52}y") == "x\\x1b]52;c;SGVsbG8=\\x07y"
    assert visible("a\x9b31mb\x7f\rc\nd") == "a\\x9b31mb\\x7f\\x0dc\\x0ad"
    assert visible(b"bad\xff".decode("utf-8", "surrogateescape")) == "bad\\xff"
    assert visible("one\r\ntwo\nthree\x1b", newlines=True) == "one\ntwo\nthree\\x1b"


def test_a_visible_stream_passes_lines_and_escapes_the_rest():
    buf = io.StringIO()
    s = VisibleStream(buf)
    assert s.write(f"line{OSC52}\n") == len(f"line{OSC52}\n")
    assert buf.getvalue() == "line\\x1b]52;c;SGVsbG8=\\x07\n"


def _on_a_terminal(argv, cwd, env):
    """What *argv* writes to a pseudo-terminal (stdout and stderr)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: ctxd on a terminal
        os.chdir(cwd)
        os.execvpe(argv[0], argv, env)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    return out


def test_show_prints_names_with_escapes_as_text_and_json_escapes_them(tmp_path):
    d = tmp_path / f"evil{OSC52}\ndir"
    d.mkdir()
    (d / "pyproject.toml").touch()
    env = dict(os.environ, PWD=str(tmp_path))
    text = subprocess.run(ctxd_argv("show", str(d)), capture_output=True, env=env, cwd=tmp_path).stdout
    assert b"\x1b" not in text and b"evil\\x1b]52;c;SGVsbG8=\\x07\\x0adir" in text
    assert text.splitlines()[0].startswith(b"directory ")  # the newline in the name made no line
    as_json = subprocess.run(ctxd_argv("show", "--json", str(d)), capture_output=True, env=env, cwd=tmp_path).stdout
    assert b"\x1b" not in as_json and b"\\u001b" in as_json
    assert b"\x1b" not in _on_a_terminal(ctxd_argv("show", str(d)), tmp_path, env)


def test_synced_text_reaches_a_terminal_as_text_and_a_pipe_unchanged(tmp_path):
    (tmp_path / "pyproject.toml").touch()
    env = dict(os.environ, PWD=str(tmp_path))
    msg = f"see {OSC52}this\x9b2J\nsecond line"
    subprocess.run(ctxd_argv("chat", "add", msg), env=env, cwd=tmp_path, check=True, capture_output=True)
    piped = subprocess.run(ctxd_argv("chat", "export", "--format", "markdown"), capture_output=True, env=env,
                           cwd=tmp_path).stdout
    assert OSC52.encode() in piped  # a file or another program gets the text as it is
    md = ("chat", "export", "--format", "markdown")
    for args in (("chat", "log"), md, ("chat", "export"), ("chat", "search", "second")):
        out = _on_a_terminal(ctxd_argv(*args), tmp_path, env)
        assert b"\x1b" not in out and b"\x07" not in out and b"\xc2\x9b" not in out, (args, out)
        assert b"\\x1b]52;c;SGVsbG8=\\x07" in out or b"\\u001b]52" in out, (args, out)
    out = _on_a_terminal(ctxd_argv(*md), tmp_path, env)
    assert b"this\\x9b2J\r\nsecond line" in out  # a line break stays one (the terminal adds \r)
    err = _on_a_terminal(ctxd_argv("handoff", "show", f"nope{OSC52}"), tmp_path, env)  # the error boundary
    assert err.startswith(b"ctxd: ") and b"\x1b" not in err


def test_export_formats_keep_stdout_for_machines_and_show_escapes_on_stderr(tmp_path):
    d = tmp_path / f"evil{OSC52}dir"
    d.mkdir()
    (d / ".contextrc").write_text('[env]\nCT_A = "1"\n')  # not allowed: one stderr line names it
    env = dict(os.environ, PWD=str(tmp_path))
    p = subprocess.run(ctxd_argv("export", "json", str(d)), capture_output=True, env=env, cwd=tmp_path)
    assert b"is not trusted" in p.stderr and b"\x1b" not in p.stderr and b"\x07" not in p.stderr
    assert b"evil\\x1b]52;c;SGVsbG8=\\x07dir" in p.stderr
    assert b"\x1b" not in p.stdout  # JSON-escaped as before
