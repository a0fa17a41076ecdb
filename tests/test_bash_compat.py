"""The bash hook and the code `ctxd export bash` prints run on bash 3.2
(macOS /bin/bash).

bash 3.2 itself is not packaged for Debian (or on PyPI), so this checks what
can be checked here:

1. a scan of everything ctxd prints for bash (the rendered hook, and export
   code with every kind of statement) for syntax bash 3.2 does not have; the
   scanner is tested on each construct, so a regression fails;
2. the hook in a real interactive bash 5 in its closest modes to an old or a
   strict bash: ``BASH_COMPAT=3.2`` with ``shopt -s compat32`` (3.2's
   behaviour where it differs at run time: interrupted command lists, [[ <
   and > locale rules) and ``bash --posix``: enter, nested, leave, install
   twice.

Neither mode makes bash 5 reject bash-4 syntax, which is why (1) exists.
"""

import re

import pytest

import shellkit
from ctxd.activation.detectors import all_markers
from ctxd.activation.export import export
from ctxd.shells import get_shell
from ctxd.shells.base import export_command
from shellkit import PROMPT, ShellSession

# (name, regex): syntax added after bash 3.2, or bash-4-only behaviour
BASH4_ONLY = [
    ("${x@Q} / ${x@a} transformations (4.4)", r"\$\{[#!]?\w+(\[[^]]*\])?@[QEPAaKkUuL]\}"),
    ("associative arrays (4.0)", r"\b(declare|local|typeset)\s+-[a-zA-Z]*A"),
    ("declare -g / -n / -l / -u / -c (4.x)", r"\b(declare|local|typeset)\s+-[a-zA-Z]*[gnluc]\b"),
    ("mapfile / readarray (4.0)", r"\b(mapfile|readarray)\b"),
    ("case modification ${x,,} ${x^^} (4.0)", r"\$\{\w+(\[[^]]*\])?(\^\^|,,|\^|,)[^}]*\}"),
    ("case fall-through ;& ;;& (4.0)", r";;?&"),
    ("|& pipe (4.0)", r"\|&"),
    ("&>> redirection (4.0)", r"&>>"),
    ("coproc (4.0)", r"\bcoproc\b"),
    ("{fd}> redirections (4.1)", r"\{\w+\}[<>]"),
    ("negative substring offset/length (4.2)", r"\$\{\w+:(\s+-\d|\(-)|\$\{\w+:[^-}:][^}:]*:\s*-\d"),
    ("negative array index (4.3)", r"\[\s*-\d+\s*\]\}"),
    ("printf %(...)T (4.2)", r"%\([^)]*\)T"),
    ("wait -n (4.3)", r"\bwait\s+-n\b"),
    ("read -i (4.0)", r"\bread\s+(-\w+\s+)*-\w*i"),
    ("bash-4/5 variables", r"\b(BASHPID|EPOCHSECONDS|EPOCHREALTIME|BASH_ARGV0|SRANDOM|READLINE_MARK)\b"),
    ("bash-4 shopt options", r"\bshopt\s+-s\s+(globstar|lastpipe|autocd|checkjobs|direxpand|dirspell|"
                             r"globasciiranges|inherit_errexit|localvar_\w+|assoc_expand_once|"
                             r"compat4\d|progcomp_alias|complete_fullquote)\b"),
    ("=~ (its quoting rules changed in 3.2: not worth the risk)", r"=~"),
]


def offending(text):
    """[(construct, line)] for every bash>=4 construct in *text* (comments skipped)."""
    found = []
    for line in text.splitlines():
        code = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
        for name, rx in BASH4_ONLY:
            if re.search(rx, code):
                found.append((name, line.strip()))
    return found


@pytest.mark.parametrize("snippet", [
    'x=${PROMPT_COMMAND@a}', 'echo "${v@Q}"', "declare -A m", "local -A m=()", "declare -g X=1",
    "local -n ref=x", "typeset -l low", "mapfile -t lines < f", "readarray a", 'echo "${x,,}"',
    'echo "${x^^}"', 'echo "${x^}"', "case $x in a) :;& b) :;; esac", "case $x in a) :;;& esac",
    "ls |& cat", "echo hi &>> log", "coproc cat", "exec {fd}>file", 'echo "${x: -1}"',
    'echo "${x:(-2)}"', 'echo "${x:1:-1}"', 'echo "${a[-1]}"', "printf '%(%s)T' -1", "wait -n",
    "read -e -i def x", "echo $BASHPID", "echo $EPOCHSECONDS", "shopt -s globstar",
    "shopt -s lastpipe", '[[ $x =~ ^a ]]',
])
def test_the_scanner_finds_each_construct(snippet):
    assert offending(snippet), snippet


@pytest.mark.parametrize("snippet", [
    'x=${y:-default}', 'x=${y:-1}', 'x=${y:+alt}', 'echo "${a[@]}"', "declare -F f", "declare -p PROMPT_COMMAND",
    "local -r x=1", 'echo "${x:1}"', 'x=${x%%"$nl"*}', "a &>/dev/null", "a+=(b)", "(( x > 1 ))",
    "printf -v out '%s' x", "# mapfile in a comment",
])
def test_the_scanner_accepts_bash_3_2_syntax(snippet):
    assert not offending(snippet), snippet


def bash_export_samples(tmp_path):
    """Export code with every kind of statement: variables set and unset, PATH,
    warnings, the restore function (if_value both ways), the fast-leave flag,
    drop_restore, the state-error path."""
    sh = get_shell("bash")
    proj = tmp_path / "proj"
    (proj / "bin").mkdir(parents=True)
    (proj / "pyproject.toml").write_text("[project]\nname='p'\n")
    env = {"PATH": "/usr/bin:/bin", "PWD": str(proj), "HOME": str(tmp_path),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "VIRTUAL_ENV": "/old venv"}
    entered, _ = export(sh, env, str(proj))
    statements = [
        sh.set_var("A", "x y\n'\\"), sh.unset_var("B"), sh.set_path(["/a b", "/c"]), sh.warn("w'\n"),
        sh.define_restore([sh.if_value("A", "v", sh.unset_var("A")), sh.if_value("B", None, sh.set_var("B", "1"))]),
        sh.define_restore([]), sh.fast_leave(True), sh.drop_restore(),
    ]
    broken, _ = export(sh, dict(env, CTXD_STATE="garbage!"), str(proj))
    return [entered, sh.join(statements), broken, sh.drop_state_command()]


def test_everything_ctxd_prints_for_bash_is_bash_3_2_syntax(tmp_path):
    hook = get_shell("bash").hook(all_markers(), export_command())
    assert "PROMPT_COMMAND" in hook and "trap" in hook  # the scan sees the real hook
    assert offending(hook) == []
    samples = bash_export_samples(tmp_path)
    assert "_ctxd_restore()" in samples[0] and "CTXD_STATE" in samples[0]
    for code in samples:
        assert offending(code) == [], code


# -- a real interactive bash in compat32 and posix modes ---------------------------------

def _session(mode, home, cwd):
    env = {"BASH_COMPAT": "3.2"} if mode == "compat32" else {}
    s = ShellSession("bash", home, env=env, hook=False, cwd=cwd)
    if mode == "posix":
        # the same interactive bash, started again as `bash --posix`
        s.child.sendline(f"export PS1='{PROMPT}'; exec {shellkit.require('bash')} --posix --norc --noprofile -i")
        s.child.expect_exact(PROMPT)
        s.run("bind 'set enable-bracketed-paste off' 2>/dev/null; true")
        assert s.run("shopt -o posix | cut -f2 | tr -d ' '") == "on"
    else:
        s.run("shopt -s compat32")
        # (shopt -s compat32 spells BASH_COMPAT as 32)
        assert s.run("echo $BASH_COMPAT; shopt compat32 | tr -s ' \\t' ' '") == "32\ncompat32 on"
    return s


def without_cd(env):
    return {k: v for k, v in env.items() if k not in ("_", "OLDPWD", "PWD")}


@pytest.mark.parametrize("mode", ["compat32", "posix"])
def test_hook_in_bash_compat32_and_posix_mode(mode, tmp_path):
    home = tmp_path / "home"
    proj = tmp_path / "proj"
    (proj / "sub").mkdir(parents=True)
    (proj / "pyproject.toml").write_text("[project]\nname='p'\n")
    (proj / ".venv" / "bin").mkdir(parents=True)
    (proj / ".venv" / "bin" / "activate").write_text("# venv\n")
    s = _session(mode, home, str(tmp_path))
    try:
        assert s.run("set -u; PROMPT_COMMAND='user_pc=1'") == ""
        for _ in range(2):
            assert s.install_hook() == ""
        before = s.env_dump()
        assert s.run("printf '%s\\n' \"$PROMPT_COMMAND\"") == "_ctxd_hook;user_pc=1"
        assert s.cd(proj) == ""
        env = s.env_dump()
        assert env["CTXD_ROOT"] == str(proj)
        assert env["VIRTUAL_ENV"] == str(proj / ".venv")
        assert env["PATH"].split(":")[0] == str(proj / ".venv" / "bin")
        assert s.cd(proj / "sub") == ""
        assert without_cd(s.env_dump()) == without_cd(env)
        assert s.status_after("(exit 3)") == 3  # $? survives the hook
        assert s.cd(tmp_path) == ""
        assert without_cd(s.env_dump()) == without_cd(before)
        assert s.run("echo alive") == "alive"
    finally:
        s.close()
