"""`ctxd exec [--strict] [DIR] -- CMD [ARGS...]` (issue 13 item 7), run as users run it: the real
console script in a subprocess, real projects, the real trust store."""

import os
import shutil
import signal
import subprocess
import sys

import pytest

from ctxd.activation import envdiff
from ctxd.activation.allow import allow_rc
from ctxd.activation.export import transition
from ctxd.activation.state import STATE_VAR, decode, encode
from ctxdtest import ctxd, write_config

CTXD = shutil.which("ctxd")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def venv_project(path, python_says):
    """A python project whose .venv/bin/python prints *python_says* (a real executable file)."""
    path.mkdir(parents=True)
    (path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    bindir = path / ".venv" / "bin"
    bindir.mkdir(parents=True)
    (bindir / "activate").write_text("# venv\n")
    py = bindir / "python"
    py.write_text(f"#!/bin/sh\necho {python_says}\n")
    py.chmod(0o755)
    return path


def env_of(extra=None, drop=()):
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra or {})
    return env


def ctxd_exec(*args, env=None, cwd=None, **kw):
    return ctxd("exec", *args, env=env or env_of(), cwd=cwd, script=True, **kw)


def printenv(out):
    return dict(line.split("=", 1) for line in out.split("\0") if "=" in line)


def test_runs_the_command_in_the_projects_environment_in_dir(tmp_path):
    proj = venv_project(tmp_path / "proj", "venv-python")
    p = ctxd_exec(str(proj), "--", "sh", "-c", 'python; echo "$VIRTUAL_ENV"; pwd; echo "$PWD"', cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["venv-python", str(proj / ".venv"), str(proj), str(proj)]
    assert p.stderr == ""
    # DIR defaults to the current directory (a subdirectory of the project finds its root)
    (proj / "src").mkdir()
    p = ctxd_exec("--", "python", cwd=proj / "src", env=env_of({"PWD": str(proj / "src")}))
    assert p.stdout == "venv-python\n" and p.returncode == 0


def test_the_child_can_undo_the_activation_it_inherits(tmp_path):
    """A shell started by exec gets CTXD_STATE: its own hook undoes the project on leaving."""
    proj = venv_project(tmp_path / "proj", "x")
    p = ctxd_exec(str(proj), "--", "env", "-0")
    env = printenv(p.stdout)
    state = decode(env[STATE_VAR])
    assert state.root == str(proj) and state.path_added == [str(proj / ".venv" / "bin")]
    back = envdiff.restore(env, state)
    assert "VIRTUAL_ENV" not in back and str(proj / ".venv" / "bin") not in back["PATH"].split(":")


def test_the_calling_shells_own_activation_is_undone_first(tmp_path):
    a = venv_project(tmp_path / "a", "a-python")
    b = venv_project(tmp_path / "b", "b-python")
    plain = env_of(drop=(STATE_VAR,))
    t = transition(plain, str(a), old_state=None)  # a shell activated in project a
    in_a = dict(t.target, **{STATE_VAR: encode(t.state)})
    assert in_a["VIRTUAL_ENV"] == str(a / ".venv")
    p = ctxd_exec(str(b), "--", "env", "-0", env=in_a)
    env = printenv(p.stdout)
    assert env["VIRTUAL_ENV"] == str(b / ".venv")
    entries = env["PATH"].split(":")
    assert str(a / ".venv" / "bin") not in entries and entries[0] == str(b / ".venv" / "bin")
    assert entries[1:] == plain["PATH"].split(":")
    # and into a plain directory: a's environment is gone, nothing else added
    p = ctxd_exec(str(tmp_path), "--", "env", "-0", env=in_a)
    env = printenv(p.stdout)
    assert "VIRTUAL_ENV" not in env and STATE_VAR not in env and env["PATH"] == plain["PATH"]
    assert p.stderr == ""


def test_exit_status_is_the_commands(tmp_path):
    assert ctxd_exec(str(tmp_path), "--", "sh", "-c", "exit 42").returncode == 42
    assert ctxd_exec("--", "false").returncode == 1


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_ctxd_is_replaced_so_signals_reach_the_command(tmp_path, sig):
    proj = venv_project(tmp_path / "proj", "x")
    proc = subprocess.Popen([CTXD, "exec", str(proj), "--", "sh", "-c", "echo $$; exec sleep 30"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_of())
    try:
        pid = int(proc.stdout.readline())
        assert pid == proc.pid  # no ctxd process in between: the command is what the caller started
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == -sig
    finally:
        proc.kill()
        proc.wait()


def test_command_not_found_is_127_and_not_executable_is_126(tmp_path):
    p = ctxd_exec(str(tmp_path), "--", "no-such-command-ctxd")
    assert p.returncode == 127 and p.stderr == "ctxd: exec: no-such-command-ctxd: command not found\n"
    f = tmp_path / "data.txt"
    f.write_text("x\n")
    p = ctxd_exec(str(tmp_path), "--", str(f))
    assert p.returncode == 126 and p.stderr == f"ctxd: exec: {f}: permission denied\n"
    p = ctxd_exec(str(tmp_path), "--", str(tmp_path / "missing"))
    assert p.returncode == 127 and p.stderr == f"ctxd: exec: {tmp_path / 'missing'}: no such file or directory\n"
    # found on PATH but not executable there, as bash says it
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "tool").write_text("echo hi\n")
    p = ctxd_exec(str(tmp_path), "--", "tool", env=env_of({"PATH": f"{bindir}:/usr/bin:/bin"}))
    assert p.returncode == 126 and p.stderr == "ctxd: exec: tool: permission denied\n"


def test_a_script_without_a_shebang_runs_with_sh(tmp_path):
    script = tmp_path / "plain-script"
    script.write_text('echo "ran with args: $*"\nexit 3\n')
    script.chmod(0o755)
    p = ctxd_exec(str(tmp_path), "--", str(script), "a", "b")
    assert p.stdout == "ran with args: a b\n" and p.returncode == 3


@pytest.mark.parametrize("args,what", [
    (["true"], "put -- before the command"),
    (["a", "b", "--", "true"], "one DIR at most, got 2"),
    (["--", ], "no command after --"),
    (["--bogus", "--", "true"], "no such option: --bogus"),
])
def test_usage_errors_are_one_line_exit_2(args, what):
    p = ctxd_exec(*args)
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.splitlines()) == 1 and p.stderr.startswith(f"ctxd: exec: {what}"), p.stderr


def test_help_is_clicks(tmp_path):
    p = ctxd_exec("--help")
    assert p.returncode == 0 and "ctxd exec [OPTIONS] [DIR] -- CMD [ARGS]..." in p.stdout and "--strict" in p.stdout


# -- missing and untrusted: plain environment, one line; --strict refuses -----------------------

def test_a_missing_dir_runs_plain_with_one_line_or_strict_refuses(tmp_path):
    gone = tmp_path / "gone"
    p = ctxd_exec(str(gone), "--", "sh", "-c", "pwd; exit 5", cwd=tmp_path)
    assert p.returncode == 5 and p.stdout == f"{tmp_path}\n"
    assert p.stderr == f"ctxd: exec: no such directory: {gone}; running sh without the project environment\n"
    marker = tmp_path / "ran"
    p = ctxd_exec("--strict", str(gone), "--", "touch", str(marker))
    assert p.returncode == 4 and not marker.exists()
    assert p.stderr == f"ctxd: exec: no such directory: {gone} (--strict: touch not run)\n"


def test_a_file_as_dir_is_not_a_directory(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    p = ctxd_exec("--strict", str(f), "--", "true")
    assert p.returncode == 4 and p.stderr == f"ctxd: exec: not a directory: {f} (--strict: true not run)\n"


def test_outside_any_project_runs_quietly_unless_strict(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    p = ctxd_exec(str(plain), "--", "pwd")
    assert p.returncode == 0 and p.stdout == f"{plain}\n" and p.stderr == ""
    p = ctxd_exec("--strict", str(plain), "--", "pwd")
    assert p.returncode == 4 and p.stdout == "" and "no project at" in p.stderr


def test_an_untrusted_root_runs_plain_and_strict_refuses(tmp_path, isolated_paths):
    write_config(isolated_paths, "")  # nothing trusted
    proj = venv_project(tmp_path / "proj", "venv-python")
    p = ctxd_exec(str(proj), "--", "sh", "-c", 'echo "[$VIRTUAL_ENV]"; command -v python || echo none')
    assert p.stdout.splitlines()[0] == "[]" and str(proj) not in p.stdout
    assert p.stderr == (f"ctxd: exec: {proj} is not trusted (ctxd allow {proj}); "
                        "running sh without the project environment\n")
    p = ctxd_exec("--strict", str(proj), "--", "true")
    assert p.returncode == 5 and p.stderr == f"ctxd: exec: {proj} is not trusted (ctxd allow {proj}) (--strict: true not run)\n"


def test_an_untrusted_or_edited_contextrc_never_applies(tmp_path):
    proj = venv_project(tmp_path / "proj", "venv-python")
    rc = proj / ".contextrc"
    rc.write_text('[env]\nCT_SECRET = "from rc"\nfiles = [".env"]\n')
    (proj / ".env").write_text("CT_DOTENV=1\n")
    for attempt in ("untrusted", "changed"):
        p = ctxd_exec(str(proj), "--", "env", "-0")
        env = printenv(p.stdout)
        # nothing of the project applies, not even the (trusted) root's venv: the plain environment
        assert not {"CT_SECRET", "CT_DOTENV", "VIRTUAL_ENV", "CTXD_ROOT"} & set(env), attempt
        assert len(p.stderr.splitlines()) == 1 and str(rc) in p.stderr
        assert ("is not trusted" if attempt == "untrusted" else "changed since you allowed it") in p.stderr
        assert ctxd_exec("--strict", str(proj), "--", "true").returncode == 5
        allow_rc(str(rc))
        rc.write_text('[env]\nCT_SECRET = "edited"\nfiles = [".env"]\n')
    allow_rc(str(rc))
    env = printenv(ctxd_exec(str(proj), "--", "env", "-0").stdout)
    assert env["CT_SECRET"] == "edited" and env["CT_DOTENV"] == "1" and env["VIRTUAL_ENV"] == str(proj / ".venv")


def test_a_contextrc_error_runs_plain_or_strict_exits_3(tmp_path):
    proj = venv_project(tmp_path / "proj", "x")
    (proj / ".contextrc").write_text('[env]\nA = "1"\n')
    allow_rc(str(proj / ".contextrc"))
    (proj / ".contextrc").write_text("[env]\nA = [1]\n")  # an edit with a mistake: located, like the hook does
    p = ctxd_exec(str(proj), "--", "printenv", "VIRTUAL_ENV")
    assert p.returncode == 1 and p.stdout == ""  # printenv: not set
    assert p.stderr.startswith(f"ctxd: exec: {proj / '.contextrc'}:2:5: ") and len(p.stderr.splitlines()) == 1
    assert p.stderr.endswith("; running printenv without the project environment\n")
    p = ctxd_exec("--strict", str(proj), "--", "true")
    assert p.returncode == 3 and p.stderr.endswith("(--strict: true not run)\n")


def test_a_corrupt_state_is_said_and_strict_refuses(tmp_path):
    proj = venv_project(tmp_path / "proj", "x")
    env = env_of({STATE_VAR: "garbage!"})
    p = ctxd_exec(str(proj), "--", "printenv", "VIRTUAL_ENV", env=env)
    assert p.stdout == f"{proj / '.venv'}\n"
    assert p.stderr == ("ctxd: exec: CTXD_STATE is corrupt (Error), so the calling shell's project environment "
                        "is not undone\n")
    assert ctxd_exec("--strict", str(proj), "--", "true", env=env).returncode == 6


def test_env_file_warnings_are_shown_and_the_rest_applies(tmp_path):
    proj = venv_project(tmp_path / "proj", "x")
    (proj / ".contextrc").write_text('[env]\nfiles = [".env"]\n')
    (proj / ".env").write_text("GOOD=1\nnot a line\n")
    allow_rc(str(proj / ".contextrc"))
    p = ctxd_exec(str(proj), "--", "printenv", "GOOD")
    assert p.stdout == "1\n" and p.stderr == f"ctxd: {proj / '.env'}:2: cannot parse 'not a line' (skipped)\n"


def test_exec_imports_nothing_heavy_before_it_execs(tmp_path):
    proj = venv_project(tmp_path / "proj", "x")
    code = (f"import sys, os; sys.path[:0] = [{REPO!r}]\n"
            "def fake_execve(path, args, env):\n"
            "    heavy = [m for m in ('click', 'psutil', 'shellingham', 'platformdirs') if m in sys.modules]\n"
            "    print('EXECVE', path, args, env.get('VIRTUAL_ENV'), 'HEAVY=' + ','.join(heavy))\n"
            "    sys.exit(0)\n"
            "os.execve = fake_execve\n"
            f"sys.argv = ['ctxd', 'exec', {str(proj)!r}, '--', 'sh', '-c', 'true']\n"
            "from ctxd.fastpath.console_entry import main\nmain()\n")
    p = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, env=env_of(), timeout=60)
    assert p.stdout.strip() == f"EXECVE /usr/bin/sh ['sh', '-c', 'true'] {proj / '.venv'} HEAVY=" or \
        p.stdout.strip() == f"EXECVE /bin/sh ['sh', '-c', 'true'] {proj / '.venv'} HEAVY=", p.stdout + p.stderr
