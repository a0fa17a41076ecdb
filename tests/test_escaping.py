"""Values ctxd emits round-trip exactly through the real shells and never run.

Every property here evaluates the code each shell class prints in the real
shell (bash, zsh, fish), the way the hooks do it (command substitution, then
``eval`` / ``| source``) and also by sourcing a file, then compares the bytes
the shell holds and exports with ``os.fsencode(value)``. Values cover control
characters, quotes, ``$``, backticks, ``$(...)``, ``!``, newlines, CR, tabs,
trailing backslashes, unicode, fish's private-use and reserved code points,
undecodable bytes (surrogateescape, as ``os.environ`` holds them) and the
empty string. Payloads that create a sentinel file if anything executes are
mixed in, and every example checks that the sentinel does not exist.

One shell process per hypothesis example (several values per process).
"""

import os
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import shellkit
from ctxd.errors import ValueRejected
from ctxd.shells import get_shell
from scriptkit import (
    ENV_BIN, LOCALES, PATH_ENTRIES, PAYLOADS, SENTINEL, SETTINGS, TOUCH_BIN, VALUES, eval_like_hook, explain, holds,
    if_cases, read, read_env, run_shell, scratch, write_code,
)

SHELLS = ("bash", "zsh", "fish")


# --- running code in the real shell ---------------------------------------------


@pytest.fixture(params=SHELLS)
def sh(request):
    """(name, path) of a real shell; fails in CI when it is missing."""
    return request.param, shellkit.require(request.param)


def source_file(shell, filename):
    return f"source ./{filename}"


def dump_var(shell, name, out):
    if shell == "fish":
        return f"printf %s ${name} > {out}"
    return f'printf %s "${name}" > {out}'


# --- set_var ------------------------------------------------------------------


@SETTINGS
@given(values=st.lists(VALUES, min_size=1, max_size=4), locale=LOCALES)
@example(values=["a:=ls", "=ls", "/x:=cat"], locale="C.UTF-8")
@example(values=["", "\\", "a\\", "'\\''"], locale="C.UTF-8")
@example(values=[os.fsdecode(b"\xff\xfe\x80"), "\uf600\ufdd0", "\x7f\x1b\r\n\t"], locale="C")
@example(values=[f"$(touch {SENTINEL})`touch {SENTINEL}`", f"'; touch {SENTINEL}; '"], locale="C.UTF-8")
def test_set_var_round_trips_and_never_executes(sh, values, locale):
    shell, path = sh
    s = get_shell(shell)
    with scratch() as d:
        lines = []
        for i, v in enumerate(values):
            write_code(d, f"hook{i}.code", s.join([s.set_var(f"CTXD_A{i}", v)]))
            write_code(d, f"src{i}.code", s.join([s.set_var(f"CTXD_B{i}", v)]))
            lines.append(eval_like_hook(shell, f"hook{i}.code"))
            lines.append(source_file(shell, f"src{i}.code"))
            lines.append(dump_var(shell, f"CTXD_A{i}", f"a{i}.out"))
            lines.append(dump_var(shell, f"CTXD_B{i}", f"b{i}.out"))
        lines.append(f"{ENV_BIN} -0 > env.out")
        r = run_shell(shell, path, d, lines, locale=locale)
        assert r.returncode == 0 and not r.stderr, explain(r)
        assert not os.path.exists(os.path.join(d, SENTINEL)), "a value was executed"
        env = read_env(d)
        for i, v in enumerate(values):
            want = os.fsencode(v)
            assert read(d, f"a{i}.out") == want, (i, v)
            assert read(d, f"b{i}.out") == want, (i, v)
            assert env[f"CTXD_A{i}".encode()] == want, (i, v)
            assert env[f"CTXD_B{i}".encode()] == want, (i, v)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_sentinel_payloads_are_inert_in_every_shell(payload):
    """Each payload alone, in each shell, through the hook's eval path."""
    for shell in SHELLS:
        path = shellkit.require(shell)
        s = get_shell(shell)
        with scratch() as d:
            write_code(d, "code", s.join([s.set_var("CTXD_T", payload)]))
            r = run_shell(shell, path, d, [eval_like_hook(shell, "code"), dump_var(shell, "CTXD_T", "t.out")])
            assert r.returncode == 0 and not r.stderr, (shell, explain(r))
            assert not os.path.exists(os.path.join(d, SENTINEL)), (shell, payload)
            assert read(d, "t.out") == os.fsencode(payload), shell


def test_sentinel_check_can_fail(sh):
    """Positive control: naive quoting does run the payload, and we notice."""
    shell, path = sh
    naive = {"fish": f"set -gx CTXD_T (touch {SENTINEL})"}.get(shell, f'export CTXD_T="$(touch {SENTINEL})"')
    with scratch() as d:
        write_code(d, "code", naive + "\n")
        r = run_shell(shell, path, d, [eval_like_hook(shell, "code")])
        assert r.returncode == 0, explain(r)
        assert os.path.exists(os.path.join(d, SENTINEL))


# --- set_path -----------------------------------------------------------------


@SETTINGS
@given(entries=PATH_ENTRIES, locale=LOCALES)
@example(entries=["/usr/bin", "=ls"], locale="C.UTF-8")
@example(entries=["/a b", "~", "$HOME", f"$(touch {SENTINEL})", "x\\"], locale="C.UTF-8")
@example(entries=[os.fsdecode(b"/opt/\xff\xfe"), "\n", "-"], locale="C")
def test_set_path_round_trips(sh, entries, locale):
    """PATH as a list of entries (no ':' and none empty): exported exactly."""
    shell, path = sh
    s = get_shell(shell)
    with scratch() as d:
        write_code(d, "code", s.join([s.set_path(entries)]))
        lines = [eval_like_hook(shell, "code"), f"{ENV_BIN} -0 > env.out"]
        if shell == "fish":
            # fish keeps PATH as a list: check every element, not only the export
            lines.append("set -l i 0; for e in $PATH; set i (math $i + 1); printf %s $e > p.$i; end; "
                         "printf %s $i > count.out")
        else:
            lines.append(dump_var(shell, "PATH", "path.out"))
        r = run_shell(shell, path, d, lines, locale=locale)
        assert r.returncode == 0 and not r.stderr, explain(r)
        assert not os.path.exists(os.path.join(d, SENTINEL))
        want = b":".join(os.fsencode(e) for e in entries)
        assert read_env(d)[b"PATH"] == want
        if shell == "fish":
            assert read(d, "count.out") == str(len(entries)).encode()
            for i, e in enumerate(entries, 1):
                assert read(d, f"p.{i}") == os.fsencode(e), (i, e)
        else:
            assert read(d, "path.out") == want


# --- unset_var ----------------------------------------------------------------


@pytest.mark.parametrize("before", ["x", "", "a b\nc", os.fsdecode(b"\xff")])
def test_unset_var_removes_the_variable(sh, before):
    shell, path = sh
    s = get_shell(shell)
    with scratch() as d:
        write_code(d, "code", s.join([s.unset_var("CTXD_T")]))
        if shell == "fish":
            check = "set -q CTXD_T; or touch GONE"
        else:
            check = "[[ -n ${CTXD_T+x} ]] || touch GONE"
        r = run_shell(shell, path, d, [eval_like_hook(shell, "code"), check, f"{ENV_BIN} -0 > env.out"],
                      env={"CTXD_T": os.fsencode(before)})
        assert r.returncode == 0 and not r.stderr, explain(r)
        assert os.path.exists(os.path.join(d, "GONE"))
        assert b"CTXD_T" not in read_env(d)


def test_unset_var_of_an_unset_variable_is_quiet(sh):
    shell, path = sh
    s = get_shell(shell)
    with scratch() as d:
        write_code(d, "code", s.join([s.unset_var("CTXD_NEVER_SET")]))
        # bash and zsh return 0; fish's `set -e` returns 4 (nothing erased),
        # which no caller looks at: what matters is that it prints nothing
        r = run_shell(shell, path, d, [eval_like_hook(shell, "code"), "echo done"])
        assert r.returncode == 0 and r.stdout == b"done\n" and not r.stderr, explain(r)


# --- warn ---------------------------------------------------------------------


@SETTINGS
@given(messages=st.lists(VALUES, min_size=1, max_size=4), locale=LOCALES)
@example(messages=["ctxd: 100% done", "-n", "%s\\n", ""], locale="C.UTF-8")
def test_warn_prints_the_message_exactly_to_stderr(sh, messages, locale):
    shell, path = sh
    s = get_shell(shell)
    with scratch() as d:
        write_code(d, "code", s.join([s.warn(m) for m in messages]))
        r = run_shell(shell, path, d, [eval_like_hook(shell, "code")], locale=locale)
        assert r.returncode == 0, explain(r)
        assert r.stdout == b""
        assert r.stderr == b"".join(os.fsencode(m) + b"\n" for m in messages)
        assert not os.path.exists(os.path.join(d, SENTINEL))


# --- if_value (and the restore function that holds it) --------------------------


@SETTINGS
@given(cases=st.lists(if_cases(), min_size=1, max_size=5), locale=LOCALES)
@example(cases=[(None, None), ("", None), (None, ""), ("", ""), ("x", "x")], locale="C.UTF-8")
@example(cases=[("*", "a"), ("a", "*"), ("[a]", "a"), ("a", "?"), ("!", "!"), ("(", "(")], locale="C.UTF-8")
@example(cases=[("-n", "-n"), ("=", "="), ("-z", ""), ("a b", "a  b"), ("x\n", "x")], locale="C.UTF-8")
@example(cases=[(os.fsdecode(b"\xff"), os.fsdecode(b"\xff")), (os.fsdecode(b"\xff"), "\u00ff"),
                ("\x01", "\x01"), ("\x7f", "\x7f")], locale="C")
def test_if_value_runs_only_on_exact_match(sh, cases, locale):
    """if_value(name, value, stmt) in a restore function: stmt runs iff the
    variable holds exactly *value* (None: unset; set-but-empty is not unset)."""
    shell, path = sh
    s = get_shell(shell)
    env = {f"CTXD_T{i}": os.fsencode(actual) for i, (actual, _) in enumerate(cases) if actual is not None}
    if shell == "fish" and locale == "C" and not all(v.isascii() for v in env.values()):
        # fish itself mangles non-ASCII bytes it inherits under LC_ALL=C (it
        # re-exports an inherited "é" as "Ã©"), so nothing could match them
        locale = "C.UTF-8"
    stmts = [s.if_value(f"CTXD_T{i}", expected, f"{TOUCH_BIN} HIT{i}") for i, (_, expected) in enumerate(cases)]
    with scratch() as d:
        write_code(d, "define.code", s.join([s.define_restore(stmts)]))
        write_code(d, "drop.code", s.join([s.drop_restore()]))
        if shell == "fish":
            call, still = s.restore_fn, f"functions -q {s.restore_fn}; and touch STILL; true"
        else:
            call, still = s.restore_fn, f"type {s.restore_fn} >/dev/null 2>&1 && touch STILL || true"
        lines = [eval_like_hook(shell, "define.code"), call, eval_like_hook(shell, "drop.code"), still]
        r = run_shell(shell, path, d, lines, env=env, locale=locale)
        assert r.returncode == 0 and not r.stderr, explain(r)
        assert not os.path.exists(os.path.join(d, SENTINEL))
        assert not os.path.exists(os.path.join(d, "STILL")), "drop_restore left the function"
        for i, (actual, expected) in enumerate(cases):
            ran = os.path.exists(os.path.join(d, f"HIT{i}"))
            assert ran == holds(actual, expected), (i, actual, expected)


def test_empty_restore_function_is_valid(sh):
    shell, path = sh
    s = get_shell(shell)
    with scratch() as d:
        write_code(d, "code", s.join([s.define_restore([])]))
        r = run_shell(shell, path, d, [eval_like_hook(shell, "code"), s.restore_fn])
        assert r.returncode == 0 and not r.stderr, explain(r)


# --- rejected values and names ----------------------------------------------------

BAD_NAMES = ["A B", "1X", "X;rm", "", "X-Y", "X=Y", "$X", "X\n", "\u00e9", "X.Y", "X$(touch S)", "`X`", " X"]
_VALID_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("value", ["\0", "a\0b", "abc\0", os.fsdecode(b"\xff\0")])
def test_nul_in_a_value_is_rejected(shell, value):
    s = get_shell(shell)
    with pytest.raises(ValueRejected):
        s.set_var("CTXD_T", value)
    with pytest.raises(ValueRejected):
        s.set_path(["/usr/bin", value])
    with pytest.raises(ValueRejected):
        s.if_value("CTXD_T", value, "true")


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("name", BAD_NAMES)
def test_invalid_names_are_rejected(shell, name):
    s = get_shell(shell)
    with pytest.raises(ValueRejected):
        s.set_var(name, "x")
    with pytest.raises(ValueRejected):
        s.unset_var(name)
    with pytest.raises(ValueRejected):
        s.if_value(name, "x", "true")
    with pytest.raises(ValueRejected):
        s.if_value(name, None, "true")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(max_size=12))
def test_only_identifiers_pass_as_names(name):
    for shell in SHELLS:
        s = get_shell(shell)
        if _VALID_NAME.fullmatch(name) and name.isascii():
            assert name in s.set_var(name, "x")
        else:
            with pytest.raises(ValueRejected):
                s.set_var(name, "x")
