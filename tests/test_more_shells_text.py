"""tcsh, elvish, xonsh and nushell: the Shell methods other commands call
(`ctxd setup`, `ctxd doctor`), run in the real shell: the fast-leave flag is
a plain shell variable (never exported), and the drop-state command runs the
restore code, then drops ctxd's state, quietly when there is no restore code."""

import pytest

import shellkit
from ctxd.shells import SUPPORTED, get_shell
from ctxd.shells.base import template_path
from scriptkit import dump_env, eval_like_hook, read, read_env, run_shell, scratch, write_code

SHELLS = shellkit.MORE_SHELLS

# what the hook has defined before it runs anything (tcsh: its private dir and copy of the template)
PRELUDE = {
    "tcsh": lambda d: [f"set _ctxd_dir = {get_shell('tcsh').quote(d)}",
                       f"set _ctxd_file = {get_shell('tcsh').quote(template_path('ctxd.tcsh'))}"],
}
SHOW_VAR = {  # the shell variable's value into a file ("" when unset)
    "tcsh": lambda v, out: f"if ( $?{v} ) printf '%s' ${v}:q > {out}",
    "elvish": lambda v, out: f"if (has-key $flags {v}) {{ print $flags[{v}] > {out} }}",  # the hook's own flag
    "xonsh": lambda v, out: f"open('{out}', 'w').write(ctxd_ns.get('{v}', ''))",
    "nu": lambda v, out: f"if '{v}' in $env._CTXD_NU.flags {{ $env._CTXD_NU.flags.{v} | save -f --raw {out} }}",
}
# elvish's, xonsh's and nu's drop-state command is the hook's own function: tests/e2e/test_e2e_more_shells.py
DROP_IN_SCRIPT = [s for s in SHELLS if s not in ("elvish", "xonsh", "nu")]


def test_every_new_shell_is_registered():
    assert set(SHELLS) <= set(SUPPORTED)
    for name in SHELLS:
        sh = get_shell(name)
        assert sh.name == name and name in sh.install_line and sh.rc_file


@pytest.mark.parametrize("shell", SHELLS)
def test_fast_leave_flag_is_a_plain_shell_variable(shell):
    path = shellkit.require(shell)
    sh = get_shell(shell)
    for allowed, want in ((True, b"1"), (False, b"0")):
        with scratch() as d:
            write_code(d, "code", sh.join([sh.fast_leave(allowed)]))
            lines = [eval_like_hook(shell, "code"), SHOW_VAR[shell](sh.fast_leave_var, "v.out"), dump_env(shell)]
            r = run_shell(shell, path, d, lines)
            assert r.returncode == 0 and not r.stderr, r
            assert read(d, "v.out") == want
            assert sh.fast_leave_var.encode() not in read_env(d)


@pytest.mark.parametrize("shell", DROP_IN_SCRIPT)
def test_drop_state_command_runs_the_restore_code_then_drops_the_state(shell):
    path = shellkit.require(shell)
    sh = get_shell(shell)
    env = {"CTXD_STATE": "x", "CTXD_WATCH": "y"}
    for with_restore in (True, False):
        with scratch() as d:
            code = [sh.define_restore([sh.set_var("CT_BACK", "restored")])] if with_restore else []
            write_code(d, "code", sh.join(code + [sh.drop_state_command()]))
            lines = PRELUDE.get(shell, lambda d: [])(d) + [eval_like_hook(shell, "code"), dump_env(shell)]
            r = run_shell(shell, path, d, lines, env=env)
            assert r.returncode == 0 and not r.stderr, r
            got = read_env(d)
            assert b"CTXD_STATE" not in got and b"CTXD_WATCH" not in got
            assert got.get(b"CT_BACK") == (b"restored" if with_restore else None)
