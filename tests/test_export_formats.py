"""`ctxd export json|dotenv|gha [--strict] [DIR]` (issue 13 item 7): the real console script,
real projects; the dotenv output read back by the real python-dotenv, the gha output read as
GitHub's runner reads $GITHUB_ENV / $GITHUB_PATH."""

import io
import json
import os
import subprocess
import sys

from hypothesis import given, settings, strategies as st

from ctxd.activation import formats
from ctxd.activation.allow import allow_rc
from ctxd.activation.export import transition
from ctxd.activation.state import STATE_VAR, encode
from ctxdtest import ctxd, write_config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def env_of(extra=None, drop=()):
    env = {k: v for k, v in os.environ.items()
           if k not in drop and k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONHOME") and not k.startswith("GITHUB_")}
    env.update(extra or {})
    return env


def export(fmt, *args, env=None, cwd=None):
    return ctxd("export", fmt, *args, env=env or env_of(), cwd=cwd, script=True)


def project(path, rc=None, files=None):
    path.mkdir(parents=True)
    (path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (path / ".venv" / "bin").mkdir(parents=True)
    (path / ".venv" / "bin" / "activate").write_text("# venv\n")
    for name, text in (files or {}).items():
        (path / name).write_text(text)
    if rc is not None:
        (path / ".contextrc").write_text(rc)
        allow_rc(str(path / ".contextrc"))
    return path


RC = '[env]\nfiles = [".env"]\nGREETING = "hello world"\nMULTI = "line 1\\nline 2"\nDROPME = false\n'
DOTENV = 'QUOTES="it\'s \\"quoted\\" \\\\ back"\nDOLLAR=\'${NOT_EXPANDED_HERE}\'\n'


def expected(proj, base):
    out = {"VIRTUAL_ENV": str(proj / ".venv"), "PYTHONDONTWRITEBYTECODE": "1", "GREETING": "hello world",
           "MULTI": "line 1\nline 2", "QUOTES": 'it\'s "quoted" \\ back', "DOLLAR": "",
           "CTXD_ROOT": str(proj), "CTXD_TYPES": "python", "CTXD_STATUS": "proj (python)",
           "PATH": f"{proj / '.venv' / 'bin'}:{base['PATH']}"}
    return out


def test_json_is_the_projects_changes_with_null_for_unset(tmp_path):
    proj = project(tmp_path / "proj", RC, {".env": DOTENV})
    base = env_of({"DROPME": "was set"})
    p = export("json", str(proj), env=base)
    assert p.returncode == 0 and p.stderr == ""
    got = json.loads(p.stdout)
    ctx = got.pop("CTXD_CONTEXT_DIR")
    assert ctx.startswith(os.environ["XDG_DATA_HOME"])
    assert got == dict(expected(proj, base), DROPME=None)
    assert STATE_VAR not in got and "CTXD_WATCH" not in got
    assert list(json.loads(p.stdout)) == sorted(json.loads(p.stdout))


def test_the_output_does_not_depend_on_the_callers_activated_project(tmp_path):
    a = project(tmp_path / "a", '[env]\nONLY_A = "a"\n')
    b = project(tmp_path / "b", RC, {".env": DOTENV})
    plain = env_of(drop=(STATE_VAR,))
    t = transition(plain, str(a), old_state=None)
    in_a = dict(t.target, **{STATE_VAR: encode(t.state)})
    assert in_a["ONLY_A"] == "a"
    for fmt in formats.FORMATS:
        from_a, from_plain = export(fmt, str(b), env=in_a), export(fmt, str(b), env=plain)
        assert from_a.returncode == from_plain.returncode == 0
        if fmt == "gha":  # random heredoc delimiters
            assert parse_github_env(from_a.stdout) == parse_github_env(from_plain.stdout)
        else:
            assert from_a.stdout == from_plain.stdout, fmt
        assert "ONLY_A" not in from_a.stdout and str(a) not in from_a.stdout
    # the default DIR is the current directory
    assert export("json", cwd=b, env=dict(plain, PWD=str(b))).stdout == export("json", str(b), env=plain).stdout


def test_dotenv_reads_back_through_python_dotenv(tmp_path):
    from dotenv import dotenv_values

    proj = project(tmp_path / "proj", RC, {".env": DOTENV})
    base = env_of({"DROPME": "was set"})
    p = export("dotenv", str(proj), env=base)
    assert p.returncode == 0, p.stderr
    assert "# unset DROPME\n" in p.stdout
    back = dotenv_values(stream=io.StringIO(p.stdout))  # python-dotenv's default: ${...} interpolated
    back.pop("CTXD_CONTEXT_DIR")
    assert back == expected(proj, base)


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=40))
def test_any_value_round_trips_through_python_dotenv(value):
    from dotenv import dotenv_values

    text = f"NAME={formats.dotenv_value(value)}\n"
    assert dotenv_values(stream=io.StringIO(text)) == {"NAME": value}  # its default, ${...} interpolated


# -- GitHub Actions ---------------------------------------------------------------------------------

def parse_github_env(text):
    """$GITHUB_ENV as the runner reads it (actions/runner SetEnvFileCommand): NAME=value lines,
    or NAME<<DELIMITER, the value's lines, DELIMITER."""
    out, lines, i = {}, text.split("\n"), 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        eq, heredoc = line.find("="), line.find("<<")
        if eq != -1 and (heredoc == -1 or eq < heredoc):
            out[line[:eq]] = line[eq + 1:]
            continue
        assert heredoc > 0, line
        name, delim = line[:heredoc], line[heredoc + 2:]
        body = []
        while lines[i] != delim:
            body.append(lines[i])
            i += 1
        i += 1
        out[name] = "\n".join(body)
    return out


def runner_path(path_file_text, path):
    """PATH for the next step: the runner puts each $GITHUB_PATH line in front of the ones before it."""
    prepend = []
    for line in path_file_text.splitlines():
        if line in prepend:
            prepend.remove(line)
        prepend.append(line)
    return ":".join(list(reversed(prepend)) + [path])


def test_gha_writes_github_env_and_github_path_as_the_runner_reads_them(tmp_path):
    proj = project(tmp_path / "proj", RC + '[path]\nprepend = ["bin", "tools"]\n', {".env": DOTENV})
    genv, gpath = tmp_path / "github_env", tmp_path / "github_path"
    genv.write_text("EARLIER=kept\n")
    gpath.write_text("")
    base = env_of({"GITHUB_ENV": str(genv), "GITHUB_PATH": str(gpath)})
    p = export("gha", str(proj), env=base)
    assert p.returncode == 0 and p.stdout == ""
    assert p.stderr == "ctxd: 10 variables written to $GITHUB_ENV, 3 PATH entries to $GITHUB_PATH\n"
    got = parse_github_env(genv.read_text())
    assert got.pop("EARLIER") == "kept"  # appended to, never replaced
    assert "PATH" not in got
    want = json.loads(export("json", str(proj), env=env_of()).stdout)
    assert runner_path(gpath.read_text(), base["PATH"]) == want.pop("PATH")
    assert got == want
    assert "MULTI<<ctxd_" in genv.read_text()  # the multi-line value in GitHub's heredoc form


def test_gha_puts_a_path_it_cannot_prepend_in_github_env_whole(tmp_path):
    proj = project(tmp_path / "proj", '[path]\nappend = ["late"]\n')
    genv, gpath = tmp_path / "github_env", tmp_path / "github_path"
    base = env_of({"GITHUB_ENV": str(genv), "GITHUB_PATH": str(gpath)})
    p = export("gha", str(proj), env=base)
    assert p.returncode == 0, p.stderr
    assert not gpath.exists() or gpath.read_text() == ""
    assert parse_github_env(genv.read_text())["PATH"] == f"{proj / '.venv' / 'bin'}:{base['PATH']}:{proj / 'late'}"


def test_gha_without_github_path_puts_path_in_github_env(tmp_path):
    proj = project(tmp_path / "proj")
    genv = tmp_path / "github_env"
    base = env_of({"GITHUB_ENV": str(genv)})
    p = export("gha", str(proj), env=base)
    assert p.returncode == 0 and p.stdout == ""
    assert parse_github_env(genv.read_text())["PATH"] == f"{proj / '.venv' / 'bin'}:{base['PATH']}"
    assert oct(genv.stat().st_mode & 0o777) == "0o600"  # created by ctxd: private, like every file it writes


def test_gha_outside_actions_prints_the_github_env_lines_and_says_what_it_cannot_unset(tmp_path):
    proj = project(tmp_path / "proj", RC, {".env": DOTENV})
    base = env_of({"DROPME": "was set"})
    p = export("gha", str(proj), env=base)
    assert p.returncode == 0
    assert p.stderr == "ctxd: DROPME is unset in the project environment, but $GITHUB_ENV cannot unset a variable\n"
    got = parse_github_env(p.stdout)
    got.pop("CTXD_CONTEXT_DIR")
    assert got == expected(proj, base)


def test_a_value_holding_the_delimiter_never_ends_its_heredoc_early():
    class T:
        clean = {}
        env = {"X": "a\nctxd_x\nb"}
        state = None

        def changes(self):
            return [("X", self.env["X"])]

        def path_added(self):
            return [], []

    env_text, _, _ = formats.gha_blocks(T())
    assert parse_github_env(env_text) == {"X": "a\nctxd_x\nb"}


# -- bad input ---------------------------------------------------------------------------------------

def test_untrusted_prints_nothing_with_one_line_and_strict_refuses(tmp_path, isolated_paths):
    write_config(isolated_paths, "")
    proj = project(tmp_path / "proj")
    p = export("json", str(proj))
    assert p.returncode == 0 and json.loads(p.stdout) == {}
    assert p.stderr == f"ctxd: export json: {proj} is not trusted (ctxd allow {proj}); no project environment printed\n"
    p = export("dotenv", "--strict", str(proj))
    assert p.returncode == 5 and p.stdout == ""
    assert p.stderr == f"ctxd: export dotenv: {proj} is not trusted (ctxd allow {proj}) (--strict: nothing printed)\n"


def test_missing_dir_and_usage_errors(tmp_path):
    p = export("json", str(tmp_path / "gone"))
    assert p.returncode == 0 and json.loads(p.stdout) == {} and "no such directory" in p.stderr
    assert export("gha", "--strict", str(tmp_path / "gone")).returncode == 4
    for args in (["a", "b"], ["--bogus"]):
        p = export("json", *args)
        assert p.returncode == 2 and p.stderr.startswith("ctxd: export: usage: ctxd export ")


def test_export_formats_import_nothing_heavy(tmp_path):
    proj = project(tmp_path / "proj", RC, {".env": DOTENV})
    code = (f"import sys; sys.path[:0] = [{REPO!r}]\n"
            f"sys.argv = ['ctxd', 'export', 'json', {str(proj)!r}]\n"
            "from ctxd.fastpath.console_entry import main\n"
            "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
            "heavy = [m for m in ('click', 'psutil', 'shellingham', 'platformdirs') if m in sys.modules]\n"
            "sys.stderr.write('EXIT=%s HEAVY=%s' % (code, ','.join(heavy)))\n")
    p = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, env=env_of(), timeout=60)
    assert p.stderr.endswith("EXIT=0 HEAVY="), p.stderr
    assert json.loads(p.stdout)["GREETING"] == "hello world"
