"""Shells own their text: every line of shell syntax ctxd prints or looks for
(the hook, the export code, the rc-file line, the rc-file scan, the fast-leave
flag, the drop-state command, PROMPT_COMMAND's order) comes from a Shell in
ctxd/shells/, and the hot path imports nothing heavy. The Shell methods other commands call
(`ctxd setup`, `ctxd doctor`) run in every real shell.
"""

import ast
import os
import subprocess
from pathlib import Path

import pytest

import shellkit
from ctxd.shells import SUPPORTED, get_shell
from ctxd.shells.base import template_path
from ctxdtest import ctxd
from scriptkit import dump_env, eval_like_hook, read, read_env, run_shell, scratch, write_code

PKG = Path(__file__).resolve().parent.parent / "ctxd"
HOT = [PKG / "activation" / "export.py", *sorted((PKG / "shells").glob("*.py"))]
HEAVY = {"click", "psutil", "shellingham", "platformdirs", "typing", "re", "json", "base64", "tomllib"}


def imported_modules(path):
    """Every module *path* imports, at any level (lazy imports included)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.append((node.module or "", node.lineno))
    return found


def test_hot_path_modules_import_nothing_heavy():
    bad = [f"{p.relative_to(PKG.parent)}:{line}: {mod}" for p in HOT for mod, line in imported_modules(p)
           if mod.split(".")[0] in HEAVY]
    assert bad == []


def test_the_import_scan_sees_lazy_imports(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import os\ndef f():\n    import click\n    from platformdirs import user_data_dir\n")
    assert [m for m, _ in imported_modules(f) if m in HEAVY] == ["click", "platformdirs"]


# What used to be spelled out in commands/ and export.py: none of it may come back.
SHELL_TEXT = ['ctxd hook fish | source', 'eval "$(ctxd hook', "~/.bashrc", "~/.zshrc", "config.fish",
              "_ctxd_restore", "__ctxd_restore", "_ctxd_fast_leave", "_ctxd_hook", "unset CTXD_",
              "set -e CTXD_", ".bash_profile", ".zprofile", "conf.d", "ZDOTDIR"]


def code_without_docstrings(path):
    """The source's string constants, docstrings left out (help text may show examples)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node) is not None:
            docs.add(id(node.body[0].value))
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


@pytest.mark.parametrize("name", ["commands/setup.py", "commands/doctor.py", "diagnose.py", "commands/hook.py",
                                  "activation/export.py"])
def test_no_shell_text_outside_the_shells(name):
    strings = code_without_docstrings(PKG / name)
    assert [(t, s) for s in strings for t in SHELL_TEXT if t in s] == []


def test_hook_help_shows_each_shells_install_line_and_rc_file():
    from ctxd.commands.hook import hook

    for shell in SUPPORTED:
        sh = get_shell(shell)
        assert f"{sh.name}: " in hook.help
        line = next(l for l in hook.help.splitlines() if l.strip().startswith(f"{sh.name}:"))
        assert sh.install_line in line and sh.rc_file in line, line


# -- the Shell methods ----------------------------------------------------------------------


def test_install_lines_and_rc_files():
    assert [(get_shell(s).rc_file, get_shell(s).install_line) for s in SUPPORTED] == [
        ("~/.bashrc", 'eval "$(ctxd hook bash)"'),
        ("~/.zshrc", 'eval "$(ctxd hook zsh)"'),
        ("~/.config/fish/config.fish", "ctxd hook fish | source"),
        ("~/.tcshrc", 'eval "`ctxd hook tcsh`"'),
        ("~/.config/elvish/rc.elv", "eval (ctxd hook elvish | slurp)"),
        ("~/.xonshrc", "execx($(ctxd hook xonsh))"),
        ("~/.config/nushell/config.nu", "ctxd hook nu | save -f ($nu.user-autoload-dirs | first | path join ctxd.nu)"),
    ]
    for s in SUPPORTED:
        sh = get_shell(s)
        # the block is a guarded form of the install line (issue 13: PATH fallback, fish guard)
        block = sh.rc_block("/opt/ctxd/bin/ctxd")
        assert block.endswith("\n") and "# ctxd" in block and "/opt/ctxd/bin/ctxd" in block
        assert any(sh.loads_hook(line) for line in block.splitlines())


@pytest.mark.parametrize("shell", SUPPORTED)
def test_loads_hook(shell):
    sh = get_shell(shell)
    assert sh.loads_hook(sh.install_line)
    assert sh.loads_hook("  " + sh.install_line + "  # on cd\n")
    assert sh.loads_hook("command -v ctxd >/dev/null && " + sh.install_line)
    assert sh.loads_hook('eval "$(ctxd hook)"')  # detected shell
    assert not sh.loads_hook("# " + sh.install_line)
    assert not sh.loads_hook("ctxd setup")
    other = {"bash": "zsh", "zsh": "fish", "fish": "bash"}.get(shell, "bash")
    assert not sh.loads_hook(get_shell(other).install_line)


def test_rc_candidates(tmp_path):
    env = {"HOME": str(tmp_path)}
    assert get_shell("bash").rc_candidates(env) == [str(tmp_path / f) for f in
                                                    (".bashrc", ".bash_profile", ".bash_login", ".profile")]
    assert get_shell("zsh").rc_candidates(dict(env, ZDOTDIR=str(tmp_path / "z")))[0] == str(tmp_path / "z" / ".zshrc")
    (tmp_path / ".config" / "fish" / "conf.d").mkdir(parents=True)
    (tmp_path / ".config" / "fish" / "conf.d" / "b.fish").write_text("")
    (tmp_path / ".config" / "fish" / "conf.d" / "a.fish").write_text("")
    (tmp_path / ".config" / "fish" / "conf.d" / "notes.txt").write_text("")
    fish = tmp_path / ".config" / "fish"
    assert get_shell("fish").rc_candidates(env) == [str(fish / "config.fish"), str(fish / "conf.d" / "a.fish"),
                                                    str(fish / "conf.d" / "b.fish")]
    # a relative XDG_CONFIG_HOME is ignored, as the XDG spec says
    assert get_shell("fish").rc_candidates(dict(env, XDG_CONFIG_HOME="rel"))[0] == str(fish / "config.fish")


def test_prompt_command_order():
    order = get_shell("bash").prompt_command_order
    assert order("_ctxd_hook") == (True, "_ctxd_hook")
    assert order(" _ctxd_hook;user_pc") == (True, "_ctxd_hook")
    assert order("_ctxd_hook user_pc") == (True, "_ctxd_hook")  # an array, joined by spaces
    assert order("user_pc;_ctxd_hook") == (True, "user_pc")
    assert order("user_pc") == (False, "user_pc")
    assert order("") == (False, "")


def _run(shell, script, env):
    path = shellkit.require(shell)
    argv = [path, "--no-config", "-c", script] if shell == "fish" else [path, "-c", script]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("shell", shellkit.SHELLS)  # the others: below
def test_fast_leave_flag_is_a_plain_shell_variable(shell, tmp_path):
    """Set, readable by the hook, never exported (a child shell must not inherit it)."""
    sh = get_shell(shell)
    var = sh.fast_leave_var
    show = f'echo "v=${var}"; env | grep -c "^{var}=" || true'
    env = shellkit.base_env(tmp_path)
    for allowed, want in ((True, "1"), (False, "0")):
        r = _run(shell, sh.join([sh.fast_leave(allowed)]) + show, env)
        assert r.stdout.split() == [f"v={want}", "0"], r.stdout + r.stderr


@pytest.mark.parametrize("shell", shellkit.SHELLS)  # the others: below
def test_drop_state_command_runs_the_restore_function_then_drops_the_state(shell, tmp_path):
    sh = get_shell(shell)
    restore = sh.define_restore([sh.set_var("CT_BACK", "restored")])
    show = 'echo "back=$CT_BACK"; env | grep -c "^CTXD_" || true'
    env = dict(shellkit.base_env(tmp_path), CTXD_STATE="x", CTXD_WATCH="y")
    r = _run(shell, sh.join([restore, sh.drop_state_command()]) + show, env)
    assert r.stdout.split() == ["back=restored", "0"], r.stdout + r.stderr
    # without a restore function (a new shell): quiet, still drops the state
    r = _run(shell, sh.drop_state_command() + "\n" + show, env)
    assert r.stdout.split() == ["back=", "0"] and r.stderr == "", r.stdout + r.stderr


def test_setup_writes_the_shells_block_once_and_sees_a_looser_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # the block names the start-up copy of the hook "$HOME"-relative
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ".cache"))
    env = dict(os.environ, HOME=str(tmp_path))
    rc = tmp_path / ".bashrc"
    rc.write_text('command -v ctxd >/dev/null && eval "$(ctxd hook bash)"\n')
    r = ctxd("setup", "--shell", "bash", "--write", env=env, script=True)
    # seen as set up (a line of the user's own: left alone), named as the slow kind
    assert r.returncode == 0 and "is set up in ~/.bashrc" in r.stdout and "every shell start" in r.stdout
    assert rc.read_text() == 'command -v ctxd >/dev/null && eval "$(ctxd hook bash)"\n'
    rc.write_text('# eval "$(ctxd hook bash)"\n')
    r = ctxd("setup", "--shell", "bash", "--write", env=env, script=True)
    assert r.returncode == 0 and rc.read_text().endswith(get_shell("bash").rc_block())


# -- tcsh, elvish, xonsh and nushell: the same methods, in a script run as each hook runs code -----

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
# elvish's, xonsh's and nu's drop-state command is the hook's own function: tests/e2e/test_e2e_tcsh_elvish_xonsh_nu.py
DROP_IN_SCRIPT = [s for s in shellkit.MORE_SHELLS if s not in ("elvish", "xonsh", "nu")]


def test_tcsh_elvish_xonsh_nu_are_registered():
    assert set(shellkit.MORE_SHELLS) <= set(SUPPORTED)
    for name in shellkit.MORE_SHELLS:
        sh = get_shell(name)
        assert sh.name == name and name in sh.install_line and sh.rc_file


@pytest.mark.parametrize("shell", shellkit.MORE_SHELLS)
def test_fast_leave_flag_is_a_plain_variable_in_tcsh_elvish_xonsh_nu(shell):
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
