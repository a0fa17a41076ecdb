"""`.env` files listed by `[env] files = [...]` in a trusted .contextrc (issue 13 item 8).

Real files, the real planner and the real python-dotenv; the real-shell scenario (edit the .env,
the next prompt picks it up) is tests/e2e/test_e2e_env_files.py.
"""

import io
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from ctxd.activation import dotenv_files, envdiff, planner
from ctxd.activation.allow import allow_rc
from ctxd.activation.contextrc import RcError, parse_bytes
from ctxd.activation.export import watch_value
from ctxdtest import ctxd

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def project(tmp_path, rc, env_files=None, name="proj"):
    d = tmp_path / name
    d.mkdir(parents=True, exist_ok=True)
    (d / ".contextrc").write_text(rc)
    for fname, text in (env_files or {}).items():
        (d / fname).write_text(text)
    return d


def plan_for(d, environ=None, allow=True):
    environ = dict(os.environ if environ is None else environ)
    if allow:
        allow_rc(str(d / ".contextrc"))
    return planner.build(str(d), environ, environ)


def sets(plan):
    return {name: (value, src) for name, value, src, _ in plan.sets if not name.startswith("CTXD_")}


# -- the .contextrc key ---------------------------------------------------------------------------

def test_files_key_parses_as_a_list_or_one_path():
    assert parse_bytes("f", b'[env]\nfiles = [".env", ".env.local"]\nA = "x"\n')["env_files"] == [".env", ".env.local"]
    p = parse_bytes("f", b'[env]\nfiles = ".env"\n')
    assert p["env_files"] == [".env"] and p["env"] == []  # `files` is the key, never a variable
    assert parse_bytes("f", b'[env]\nA = "x"\n')["env_files"] == []


@pytest.mark.parametrize("text", [b"[env]\nfiles = 3\n", b'[env]\nfiles = [""]\n', b"[env]\nfiles = [1]\n"])
def test_a_bad_files_value_is_located(text):
    with pytest.raises(RcError) as e:
        parse_bytes("f", text)
    assert e.value.line == 2 and "'env.files' must be a list of .env file paths" in e.value.what


# -- the reader: python-dotenv's syntax, python-dotenv's values -----------------------------------

DOTENV = """\
# a comment
export EXPORTED=1
PLAIN=plain value   # trailing comment
SINGLE='single ${PLAIN}'
DOUBLE="tab\\there \\"quoted\\""
MULTI="line one
line two"
EMPTY=
REF=${PLAIN}-${UNSET_X:-fallback}-${HOME}
NOVALUE
"""


def test_values_are_python_dotenvs_own(tmp_path):
    from dotenv import dotenv_values

    f = tmp_path / ".env"
    f.write_text(DOTENV)
    values, warnings, existed = dotenv_files.read(str(f), dict(os.environ))
    expected = {k: v for k, v in dotenv_values(stream=io.StringIO(DOTENV)).items() if v is not None}
    assert dict(values) == expected
    assert [n for n, _ in values] == list(expected)  # file order
    assert warnings == [f"ctxd: {f}:10: cannot parse 'NOVALUE' (skipped)"] and existed  # sets nothing, said
    assert dict(values)["MULTI"] == "line one\nline two"
    assert dict(values)["REF"] == f"plain value-fallback-{os.environ['HOME']}"


NAME = st.from_regex(r"[A-Z_][A-Z0-9_]{0,8}", fullmatch=True).filter(lambda n: n != "PATH" and not dotenv_files.runs_code(n))
VALUE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0\r"), max_size=30)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(NAME, VALUE), min_size=1, max_size=6))
def test_any_double_quoted_file_reads_as_python_dotenv_reads_it(tmp_path_factory, pairs):
    from dotenv import dotenv_values

    text = "".join(f'{n}="' + v.replace("\\", "\\\\").replace('"', '\\"') + '"\n' for n, v in pairs)
    f = tmp_path_factory.mktemp("d") / ".env"
    f.write_text(text, encoding="utf-8")
    values, warnings, _ = dotenv_files.read(str(f), {})
    assert warnings == []
    expected = dotenv_values(stream=io.StringIO(text), interpolate=False)
    # no ${...} in the values: interpolation cannot change them
    if not any("${" in v for _, v in pairs):
        assert dict(values) == expected


def test_a_bad_line_is_one_warning_with_its_line_and_the_rest_applies(tmp_path):
    f = tmp_path / ".env"
    f.write_text('A=1\n\n\nthis is not an assignment\nB="unterminated\nC=3\nF-G=4\nPATH=/evil\nD=4\n')
    values, warnings, _ = dotenv_files.read(str(f), {})
    assert dict(values) == {"A": "1", "C": "3", "D": "4"}
    assert warnings == [
        f"ctxd: {f}:4: cannot parse 'this is not an assignment' (skipped)",
        f"ctxd: {f}:5: cannot parse 'B=\"unterminated' (skipped)",
        f"ctxd: {f}:7: 'F-G' is not a valid environment variable name (skipped)",
        f"ctxd: {f}:8: PATH is not set from .env files (skipped); put directories in the .contextrc's [path] prepend",
    ]


def test_missing_unreadable_and_non_utf8_files(tmp_path):
    assert dotenv_files.read(str(tmp_path / "nope"), {}) == ([], [], False)
    (tmp_path / "dir").mkdir()
    assert dotenv_files.read(str(tmp_path / "dir"), {}) == ([], [f"ctxd: {tmp_path / 'dir'}: is a directory, not a .env file"], True)
    bad = tmp_path / "latin1"
    bad.write_bytes(b"A=caf\xe9\n")
    values, warnings, _ = dotenv_files.read(str(bad), {})
    assert values == [] and warnings == [f"ctxd: {bad}: not UTF-8 (invalid continuation byte at byte 5); nothing in it applies"]


# -- the planner ----------------------------------------------------------------------------------

def test_trusted_contextrc_applies_its_env_files_in_order_and_env_keys_win(tmp_path):
    d = project(tmp_path, '[env]\nfiles = [".env", ".env.local"]\nTOP = "rc sees ${FROM_ENV}"\nBOTH = "rc"\n',
                {".env": "FROM_ENV=base\nOVER=base\nBOTH=env\n", ".env.local": "OVER=local\n"})
    plan = plan_for(d)
    got = sets(plan)
    env, local, rc = str(d / ".env"), str(d / ".env.local"), str(d / ".contextrc")
    assert got == {"FROM_ENV": ("base", env), "OVER": ("local", local), "BOTH": ("rc", rc),
                   "TOP": ("rc sees base", rc)}
    assert env in plan.watch and local in plan.watch
    assert plan.warnings == []


def test_nearest_contextrc_wins_over_a_parents_env_file(tmp_path):
    parent = project(tmp_path, '[env]\nfiles = [".env"]\n', {".env": "X=parent\nY=parent\n"}, name="outer")
    child = project(parent, '[env]\nfiles = ["../shared.env"]\n', name="inner")
    (parent / "shared.env").write_text("Y=child\n")
    allow_rc(str(parent / ".contextrc"))
    got = sets(plan_for(child))
    assert got["X"] == ("parent", str(parent / ".env"))
    assert got["Y"] == ("child", str(parent / "shared.env"))


def test_an_untrusted_or_changed_contextrc_never_reads_its_env_files(tmp_path):
    d = project(tmp_path, '[env]\nfiles = [".env"]\n', {".env": "SECRET=1\n"})
    plan = plan_for(d, allow=False)
    assert "SECRET" not in sets(plan) and str(d / ".env") not in plan.watch
    assert any("is not trusted" in w for w in plan.warnings)
    allow_rc(str(d / ".contextrc"))
    (d / ".contextrc").write_text('[env]\nfiles = [".env"]\nB = "1"\n')
    plan = plan_for(d, allow=False)
    assert "SECRET" not in sets(plan)
    assert any("changed since you allowed it" in w for w in plan.warnings)


def test_env_file_warnings_and_a_missing_file_in_the_plan(tmp_path):
    d = project(tmp_path, '[env]\nfiles = [".env", ".env.local"]\n', {".env": "A=1\nnot valid\n"})
    plan = plan_for(d)
    assert sets(plan) == {"A": ("1", str(d / ".env"))}
    assert plan.warnings == [f"ctxd: {d / '.env'}:2: cannot parse 'not valid' (skipped)"]
    assert f"env file {d / '.env.local'}: not found (watched: creating it applies it)" in plan.notes


def test_env_files_are_watched_like_the_contextrc(tmp_path):
    d = project(tmp_path, '[env]\nfiles = [".env", ".env.local"]\n', {".env": "A=1\n"})
    plan = plan_for(d)
    lines = watch_value(plan, dict(os.environ)).split("\n")
    stamp = lines[0]
    assert f"+{d / '.env'}" in lines and f"-{d / '.env.local'}" in lines
    # the stamp carries the newest watched mtime: an edit of .env makes it newer than the stamp
    assert os.stat(stamp).st_mtime_ns >= os.stat(d / ".env").st_mtime_ns
    st = os.stat(d / ".env")
    os.utime(d / ".env", ns=(st.st_atime_ns, os.stat(stamp).st_mtime_ns + 10**9))
    assert os.stat(d / ".env").st_mtime_ns > os.stat(stamp).st_mtime_ns


def test_leaving_restores_what_the_env_file_set(tmp_path):
    d = project(tmp_path, '[env]\nfiles = [".env"]\n', {".env": "HOME=/elsewhere\nNEWVAR=x\n"})
    base = dict(os.environ)
    target, state = envdiff.apply(base, plan_for(d, base))
    assert target["HOME"] == "/elsewhere" and target["NEWVAR"] == "x"
    assert envdiff.restore(target, state) == base


# -- nothing heavy on the hot path ----------------------------------------------------------------

def _imports_dotenv(d, home):
    """Does `ctxd export bash` in *d* load python-dotenv? (a fresh interpreter)"""
    code = ("import sys; sys.argv=['ctxd','export','bash']\nfrom ctxd.fastpath.console_entry import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write('DOTENV=%s' % ('dotenv' in sys.modules))\n")
    env = dict(os.environ, HOME=str(home), PWD=str(d))
    p = subprocess.run([sys.executable, "-c", code], cwd=d, env=env, capture_output=True, text=True, timeout=60,)
    return p.stderr.rsplit("DOTENV=", 1)[-1], p.stdout


def test_python_dotenv_loads_only_for_a_trusted_files_key_and_only_once_per_content(tmp_path, isolated_paths):
    plain = project(tmp_path, '[env]\nA = "1"\n', name="plain")
    allow_rc(str(plain / ".contextrc"))
    assert _imports_dotenv(plain, isolated_paths)[0] == "False"
    untrusted = project(tmp_path, '[env]\nfiles = [".env"]\n', {".env": "A=1\n"}, name="untrusted")
    assert _imports_dotenv(untrusted, isolated_paths)[0] == "False"
    d = project(tmp_path, '[env]\nfiles = [".env"]\n', {".env": "FROM_DOTENV=1\n"}, name="used")
    allow_rc(str(d / ".contextrc"))
    loaded, out = _imports_dotenv(d, isolated_paths)
    assert loaded == "True" and "export FROM_DOTENV=1" in out
    loaded, out = _imports_dotenv(d, isolated_paths)  # the same bytes: the cached parse
    assert loaded == "False" and "export FROM_DOTENV=1" in out
    (d / ".env").write_text("FROM_DOTENV=2\n")
    loaded, out = _imports_dotenv(d, isolated_paths)
    assert loaded == "True" and "export FROM_DOTENV=2" in out


# -- ctxd init offers it --------------------------------------------------------------------------

def _init(d, *args):
    return ctxd("init", str(d), *args, stdin=subprocess.DEVNULL, script=True)


def test_init_without_a_terminal_writes_the_line_commented_and_says_how(tmp_path):
    d = tmp_path / "p"
    d.mkdir()
    (d / ".env").write_text("FROM_DOTENV=1\n")
    (d / ".env.local").write_text("LOCAL=1\n")
    p = _init(d)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[1] == ("ctxd: .env and .env.local not loaded: uncomment files = [...] in [env] "
                                        "(then ctxd allow), or run ctxd init --force --dotenv")
    text = (d / ".contextrc").read_text()
    assert '# files = [".env", ".env.local"]' in text
    assert "FROM_DOTENV" not in sets(plan_for(d, allow=False))


def test_init_dotenv_loads_the_files_and_no_env_file_means_no_offer(tmp_path):
    d = tmp_path / "p"
    d.mkdir()
    (d / ".env").write_text("FROM_DOTENV=1\n")
    p = _init(d, "--dotenv")
    assert p.stdout.splitlines() == [f"ctxd: wrote and allowed {d / '.contextrc'}",
                                     f"ctxd: .env loaded here ([env] files in {d / '.contextrc'})"]
    assert sets(plan_for(d, allow=False))["FROM_DOTENV"] == ("1", str(d / ".env"))
    e = tmp_path / "e"
    e.mkdir()
    p = _init(e)
    assert p.stdout.splitlines() == [f"ctxd: wrote and allowed {e / '.contextrc'}"]
    assert '# files = [".env"]' in (e / ".contextrc").read_text()
    assert parse_bytes("f", (e / ".contextrc").read_bytes())["env_files"] == []


def test_init_asks_on_a_terminal(tmp_path):
    import shutil

    import pexpect

    for answer, loaded in (("y", True), ("n", False)):
        d = tmp_path / answer
        d.mkdir()
        (d / ".env").write_text("FROM_DOTENV=1\n")
        child = pexpect.spawn(shutil.which("ctxd"), ["init", str(d)], env=dict(os.environ), encoding="utf-8",
                              timeout=30)
        child.expect(r"\.env found here\. Load it whenever you are in this project \(\[env\] files\)\? "
                     r"Every command run here, AI CLIs included, then sees its variables \[Y/n\]: ")
        child.sendline(answer)
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
        assert ("FROM_DOTENV" in sets(plan_for(d, allow=False))) is loaded


# -- a value the kernel cannot pass on (issue 22 item 13) -------------------------------------

def test_a_value_over_the_kernels_limit_is_refused_with_one_line(tmp_path):
    big = "x" * (131072 - len("CT_BIG=") - 1)  # NAME=value and its NUL: exactly MAX_ARG_STRLEN
    d = project(tmp_path, '[env]\nfiles = [".env"]\nCT_RC = "' + big + 'yy"\nCT_OK = "1"\n',
                {".env": f"CT_BIG={big}\nCT_HUGE={big}yy\nCT_E=2\n"})
    plan = plan_for(d)
    got = sets(plan)
    assert got["CT_BIG"][0] == big and got["CT_OK"][0] == "1" and got["CT_E"][0] == "2"
    assert "CT_HUGE" not in got and "CT_RC" not in got
    lines = [w for w in plan.warnings if "131072" in w]
    assert lines == [f"ctxd: {d / '.env'}: CT_HUGE is 131075 bytes with its name; the kernel passes at most "
                     "131072 to a command (not set)",
                     f"ctxd: {d / '.contextrc'}: CT_RC is 131073 bytes with its name; the kernel passes at most "
                     "131072 to a command (not set)"]
    # and every command run in the project still starts
    env = dict(os.environ)
    env.update({k: v for k, (v, _) in got.items()})
    assert subprocess.run(["true"], env=env).returncode == 0


def test_values_that_together_outgrow_the_environment_are_refused(tmp_path):
    chunk = "x" * 100_000
    rc = "[env]\n" + "".join(f'CT_{i} = "{chunk}"\n' for i in range(30)) + 'CT_LAST = "1"\n'
    plan = plan_for(project(tmp_path, rc))
    got = sets(plan)
    assert "CT_0" in got and "CT_29" not in got and got["CT_LAST"][0] == "1"
    assert len([w for w in plan.warnings if "environment" in w]) == 1
    env = dict(os.environ)
    env.update({k: v for k, (v, _) in got.items()})
    assert subprocess.run(["true"], env=env).returncode == 0


# -- names that make a shell (or every program) run code (issue 22 item 8) ----------------------

def test_a_dotenv_file_cannot_set_names_that_run_code_but_the_contextrc_can(tmp_path):
    d = project(tmp_path, '[env]\nfiles = [".env"]\nPS4 = "+ "\n',
                {".env": "CT_A=1\nPROMPT_COMMAND='touch /tmp/pwned'\nexport BASH_ENV=/tmp/x\n"
                         "LD_PRELOAD=/tmp/evil.so\nprecmd_functions=evil\nPS1='$(id) '\nCT_B=2\n"})
    plan = plan_for(d)
    got = sets(plan)
    assert got["CT_A"][0] == "1" and got["CT_B"][0] == "2" and got["PS4"][0] == "+ "  # [env] is trusted text
    for name in ("PROMPT_COMMAND", "BASH_ENV", "LD_PRELOAD", "precmd_functions", "PS1"):
        assert name not in got
    env_file = d / ".env"
    assert [w for w in plan.warnings if "runs code" in w] == [
        f"ctxd: {env_file}:{n}: {name} runs code in your shell or every program; a .env file cannot set it "
        "(skipped): set it in the .contextrc's [env], which ctxd allow covers"
        for n, name in ((2, "PROMPT_COMMAND"), (3, "BASH_ENV"), (4, "LD_PRELOAD"), (5, "precmd_functions"),
                        (6, "PS1"))]
    assert any(f"env file {env_file}" in n and "code" in n for n in plan.notes)  # what `ctxd show` says
