"""Values ctxd emits round-trip exactly through real tcsh, elvish, xonsh and
nushell, and never run: the same properties as tests/test_escaping.py (same
value strategies: quotes, $, backticks, !, newlines, controls, unicode,
sentinel payloads), with each shell evaluating the code the way its hook does.

Where a shell cannot hold a value at all (nushell strings are UTF-8, so an
undecodable byte cannot be in one), the Shell rejects it with ValueRejected,
as every shell does NUL; that is tested too.
"""

import os

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import shellkit
from ctxd.errors import ValueRejected
from ctxd.shells import get_shell
from scriptkit import (
    LOCALES, PATH_ENTRIES, PAYLOADS, SENTINEL, SETTINGS, TOUCH_BIN, VALUES, dump_env, eval_like_hook, explain, holds,
    if_cases, read, read_env, run_shell, scratch, write_code,
)

SHELLS = shellkit.MORE_SHELLS


def representable(shell, value):
    """Whether *shell* can hold *value* at all (see the module doc)."""
    if shell in ("nu",):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
    return True


def path_entry_kept(shell, entry):
    """xonsh expands a leading ~ and $VAR in every PATH entry itself, whoever
    set it ($EXPAND_ENV_VARS, on by default), and nu a leading ~ (when it
    hands PATH to a child): such entries are the shell's to change."""
    if shell == "xonsh":
        return not (entry.startswith("~") or "$" in entry)
    return not (shell == "nu" and entry.startswith("~"))


@pytest.fixture(params=SHELLS)
def sh(request):
    return request.param, shellkit.require(request.param)


# -- driving each shell: a variable into a file (scriptkit evaluates code as the hook does) --

def dump_var(shell, name, out):
    return {
        "tcsh": f"printf '%s' ${name}:q > {out}",
        "elvish": f"print $E:{name} > {out}",
        "xonsh": f"open('{out}', 'wb').write(__xonsh__.env.detype()['{name}'].encode('utf-8', 'surrogateescape'))",
        "nu": f"$env.{name} | save -f --raw {out}",
    }[shell]


def touch(shell, name):
    return f"^{TOUCH_BIN} {name}" if shell == "nu" else f"{TOUCH_BIN} {name}"


# calling the restore code the way the hook does, and telling whether it is still defined
CALL_RESTORE = {
    "tcsh": "printf '%s\\n' $_ctxd_restore:q > restore.code; source restore.code",
    "elvish": "$ctxd-restore",
    "xonsh": "ctxd_ns['_ctxd_restore']()",
    "nu": "_ctxd_restore_now",
}
DEFINED = {
    "tcsh": f"if ( $?_ctxd_restore ) {TOUCH_BIN} STILL",
    "elvish": f"if (not-eq $ctxd-restore $nil) {{ {TOUCH_BIN} STILL }}",
    "xonsh": f"if ctxd_ns.get('_ctxd_restore'): ![{TOUCH_BIN} STILL]",
    "nu": f"if $env._CTXD_NU.restore != null {{ ^{TOUCH_BIN} STILL }}",
}


# -- set_var -------------------------------------------------------------------

@SETTINGS
@given(values=st.lists(VALUES, min_size=1, max_size=4), locale=LOCALES)
@example(values=["", "\\", "a\\", "'\\''", "!", "!!", "a\nb\n"], locale="C.UTF-8")
@example(values=[os.fsdecode(b"\xff\xfe\x80"), "\uf600\ufdd0", "\x7f\x1b\r\n\t"], locale="C")
@example(values=[f"$(touch {SENTINEL})`touch {SENTINEL}`", f"'; touch {SENTINEL}; '"], locale="C.UTF-8")
def test_set_var_round_trips_and_never_executes(sh, values, locale):
    shell, path = sh
    s = get_shell(shell)
    with scratch() as d:
        lines, kept = [], []
        for i, v in enumerate(values):
            if not representable(shell, v):
                with pytest.raises(ValueRejected):
                    s.set_var(f"CTXD_A{i}", v)
                continue
            kept.append((i, v))
            write_code(d, f"hook{i}.code", s.join([s.set_var(f"CTXD_A{i}", v)]))
            lines.append(eval_like_hook(shell, f"hook{i}.code"))
            lines.append(dump_var(shell, f"CTXD_A{i}", f"a{i}.out"))
        lines.append(dump_env(shell))
        r = run_shell(shell, path, d, lines, locale=locale)
        assert r.returncode == 0 and not r.stderr, explain(r)
        assert not os.path.exists(os.path.join(d, SENTINEL)), "a value was executed"
        env = read_env(d)
        for i, v in kept:
            want = os.fsencode(v)
            assert env[f"CTXD_A{i}".encode()] == want, (i, v)
            assert read(d, f"a{i}.out") == want, (i, v)


@pytest.mark.parametrize("shell", SHELLS)
def test_sentinel_payloads_are_inert(shell):
    path = shellkit.require(shell)
    s = get_shell(shell)
    with scratch() as d:
        lines = []
        for i, p in enumerate(PAYLOADS):
            write_code(d, f"c{i}", s.join([s.set_var(f"CTXD_T{i}", p)]))
            lines += [eval_like_hook(shell, f"c{i}"), dump_var(shell, f"CTXD_T{i}", f"t{i}.out")]
        r = run_shell(shell, path, d, lines)
        assert r.returncode == 0 and not r.stderr, explain(r)
        assert not os.path.exists(os.path.join(d, SENTINEL))
        for i, p in enumerate(PAYLOADS):
            assert read(d, f"t{i}.out") == os.fsencode(p), p


NAIVE = {  # what a careless export would print: the payload runs, and the check sees it
    "tcsh": f'setenv CTXD_T "`touch {SENTINEL}`"',
    "elvish": f"set-env CTXD_T (e:touch {SENTINEL} | slurp)",
    "xonsh": f"$CTXD_T = $(touch {SENTINEL})",
    "nu": f"$env.CTXD_T = (^touch {SENTINEL} | complete | get stdout)",
}


def test_sentinel_check_can_fail(sh):
    shell, path = sh
    with scratch() as d:
        write_code(d, "code", NAIVE[shell] + "\n")
        # nu cannot evaluate a string: a naive export would be nu code to source
        r = run_shell(shell, path, d, ["source ./code" if shell == "nu" else eval_like_hook(shell, "code")])
        assert r.returncode == 0, explain(r)
        assert os.path.exists(os.path.join(d, SENTINEL))


# -- set_path --------------------------------------------------------------------

@SETTINGS
@given(entries=PATH_ENTRIES, locale=LOCALES)
@example(entries=["/usr/bin", "=ls"], locale="C.UTF-8")
@example(entries=["/a b", "~", "$HOME", f"$(touch {SENTINEL})", "x\\", "!x"], locale="C.UTF-8")
def test_set_path_round_trips(sh, entries, locale):
    shell, path = sh
    s = get_shell(shell)
    entries = [e for e in entries if representable(shell, e) and path_entry_kept(shell, e)] or ["/usr/bin"]
    with scratch() as d:
        write_code(d, "code", s.join([s.set_path(entries)]))
        r = run_shell(shell, path, d, [eval_like_hook(shell, "code"), dump_env(shell)], locale=locale)
        assert r.returncode == 0 and not r.stderr, explain(r)
        assert not os.path.exists(os.path.join(d, SENTINEL))
        assert read_env(d)[b"PATH"] == b":".join(os.fsencode(e) for e in entries)


# -- unset_var ---------------------------------------------------------------------

@pytest.mark.parametrize("before", ["x", "", "a b\nc"])
def test_unset_var_removes_the_variable(sh, before):
    shell, path = sh
    s = get_shell(shell)
    with scratch() as d:
        write_code(d, "code", s.join([s.unset_var("CTXD_T"), s.unset_var("CTXD_NEVER_SET")]))
        r = run_shell(shell, path, d, [eval_like_hook(shell, "code"), dump_env(shell)],
                      env={"CTXD_T": os.fsencode(before)})
        assert r.returncode == 0 and not r.stderr, explain(r)
        assert b"CTXD_T" not in read_env(d)


# -- warn ----------------------------------------------------------------------------

@SETTINGS
@given(messages=st.lists(VALUES, min_size=1, max_size=4), locale=LOCALES)
@example(messages=["ctxd: 100% done", "-n", "%s\\n", "", "!!"], locale="C.UTF-8")
def test_warn_prints_the_message_exactly_to_stderr(sh, messages, locale):
    shell, path = sh
    s = get_shell(shell)
    messages = [m for m in messages if representable(shell, m)] or ["x"]
    with scratch() as d:
        write_code(d, "code", s.join([s.warn(m) for m in messages]))
        r = run_shell(shell, path, d, [eval_like_hook(shell, "code")], locale=locale)
        assert r.returncode == 0, explain(r)
        assert r.stdout == b""
        assert r.stderr == b"".join(os.fsencode(m) + b"\n" for m in messages)
        assert not os.path.exists(os.path.join(d, SENTINEL))


# -- if_value inside the restore code -------------------------------------------------

@SETTINGS
@given(cases=st.lists(if_cases(), min_size=1, max_size=5), locale=LOCALES)
@example(cases=[(None, None), ("", None), (None, ""), ("", ""), ("x", "x")], locale="C.UTF-8")
@example(cases=[("*", "a"), ("a", "*"), ("[a]", "a"), ("!", "!"), ("(", "("), (")", ")")], locale="C.UTF-8")
@example(cases=[("-n", "-n"), ("=", "="), ("-z", ""), ("a b", "a  b"), ("x\n", "x"), ("a\nb", "a\nb")],
         locale="C.UTF-8")
@example(cases=[("", "-z"), ("-e", "-e"), ("", "-d"), ("!", "-f"), ("==", "=="), ("", "")], locale="C.UTF-8")
def test_if_value_runs_only_on_exact_match(sh, cases, locale):
    shell, path = sh
    s = get_shell(shell)
    cases = [(a, e) for a, e in cases if all(v is None or representable(shell, v) for v in (a, e))] or [(None, None)]
    env = {f"CTXD_T{i}": os.fsencode(actual) for i, (actual, _) in enumerate(cases) if actual is not None}
    if shell == "nu":  # a statement is a JSON operation there: set a variable, then look
        stmts = [s.if_value(f"CTXD_T{i}", e, s.set_var(f"CTXD_HIT{i}", "1")) for i, (_, e) in enumerate(cases)]
    else:
        stmts = [s.if_value(f"CTXD_T{i}", expected, touch(shell, f"HIT{i}")) for i, (_, expected) in enumerate(cases)]
    with scratch() as d:
        write_code(d, "define.code", s.join([s.define_restore(stmts)]))
        write_code(d, "drop.code", s.join([s.drop_restore()]))
        lines = [eval_like_hook(shell, "define.code"), CALL_RESTORE[shell], eval_like_hook(shell, "drop.code"),
                 DEFINED[shell]]
        if shell == "nu":
            lines += [f"if 'CTXD_HIT{i}' in $env {{ ^{TOUCH_BIN} HIT{i} }}" for i in range(len(cases))]
        r = run_shell(shell, path, d, lines, env=env, locale=locale)
        assert r.returncode == 0 and not r.stderr, explain(r)
        assert not os.path.exists(os.path.join(d, SENTINEL))
        assert not os.path.exists(os.path.join(d, "STILL")), "drop_restore left the restore code"
        for i, (actual, expected) in enumerate(cases):
            assert os.path.exists(os.path.join(d, f"HIT{i}")) == holds(actual, expected), (i, actual, expected)


# -- rejected values and names ------------------------------------------------------------

@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("value", ["\0", "a\0b"])
def test_nul_is_rejected(shell, value):
    s = get_shell(shell)
    for call in (lambda: s.set_var("CTXD_T", value), lambda: s.set_path(["/usr/bin", value]),
                 lambda: s.if_value("CTXD_T", value, "true")):
        with pytest.raises(ValueRejected):
            call()


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("name", ["A B", "1X", "X;rm", "", "X-Y", "$X", "X\n", "\u00e9", "`X`"])
def test_invalid_names_are_rejected(shell, name):
    s = get_shell(shell)
    for call in (lambda: s.set_var(name, "x"), lambda: s.unset_var(name), lambda: s.if_value(name, "x", "true")):
        with pytest.raises(ValueRejected):
            call()
