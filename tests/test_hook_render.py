"""Every hook, rendered both by `ctxd hook SHELL` and by the Python API, runs
clean in the real shell under strict options, installs exactly once however
often it is evaluated, lints clean, and carries the detector registry's
marker list. Also: `ctxd hook` error handling and shell detection, and the
`ctxd export` output the hooks evaluate.
"""

import os
import shlex
import shutil
import subprocess

import pytest

import ctxdtest
from ctxd.activation.detectors import all_markers, find_root
from ctxd.shells import get_shell
from ctxd.shells.base import export_command
from shellkit import clean_env, literal as q, run_script as run

SHELLS = ("bash", "zsh", "fish")
HOWS = ("cli", "api")


def ctxd(*args, cwd=None, env=None):
    """ctxd ARGS as a hook runs it: the console script, in the clean environment."""
    return ctxdtest.ctxd(*args, cwd=cwd, env=env or clean_env(), script=True)


def render(shell, how):
    if how == "cli":
        r = ctxd("hook", shell)
        assert r.returncode == 0 and not r.stderr, r.stderr
        return r.stdout
    return get_shell(shell).hook(all_markers(), export_command())


def install(shell, hook_file, via="eval"):
    """The install line a user puts in the rc file (README), on a file; or
    plain `source` of the file."""
    if via == "source":
        return f"source {q(shell, hook_file)}"
    if shell == "fish":
        return f"command cat {q(shell, hook_file)} | source"
    return f'eval "$(cat {q(shell, hook_file)})"'


def explain(r):
    return f"rc={r.returncode}\nstdout={r.stdout}\nstderr={r.stderr}"


@pytest.fixture
def dirs(tmp_path):
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    plain = tmp_path / "plain"
    plain.mkdir()
    assert find_root(str(plain)) is None, "a marker file above the tmp dir makes 'plain' a project"
    return tmp_path, str(proj), str(plain)


def write_hook(tmp, shell, how):
    f = os.path.join(str(tmp), f"hook.{shell}")
    with open(f, "w", encoding="utf-8") as fh:
        fh.write(render(shell, how))
    return f


# --- runs clean under strict options ------------------------------------------------

ZSH_OPTIONS = [
    "",
    "setopt nounset",
    "setopt nounset errexit pipefail",
    # options a user may well have; the hook must not care
    "setopt nounset ksh_arrays sh_word_split warn_create_global no_function_argzero",
]


def strict_script(shell, hook_file, proj, plain, prelude="", via="eval"):
    """Plain dir, project, its subdir, plain again; $? kept by the hook."""
    if shell == "fish":
        fn = "__ctxd_hook"
        show = "printf 'root=%s state=%s\\n' \"$CTXD_ROOT\" (set -q CTXD_STATE; and echo yes; or echo no)"
        fail3 = "/bin/sh -c 'exit 3'; __ctxd_hook; echo status=$status"
    else:
        fn = "_ctxd_hook"
        show = 'printf "root=%s state=%s\\n" "${CTXD_ROOT-}" "$([[ -n ${CTXD_STATE-} ]] && echo yes || echo no)"'
        # under errexit a failing command may stand only on the left of ||
        fail3 = "(exit 3) || _ctxd_hook || echo status=$?"
    lines = [
        prelude,
        install(shell, hook_file, via),
        f"cd {q(shell, plain)}", fn, show,
        f"cd {q(shell, proj)}", fn, show,
        fn, show,  # nothing changed: the shortcut path
        f"cd {q(shell, os.path.join(proj, 'src'))}", fn, show,
        fail3,
        f"cd {q(shell, plain)}", fn, show,
        "echo end",
    ]
    return "\n".join(lines)


def expected_strict(proj):
    return [
        "root= state=no",
        f"root={proj} state=yes",
        f"root={proj} state=yes",
        f"root={proj} state=yes",
        "status=3",
        "root= state=no",
        "end",
    ]


@pytest.mark.parametrize("via", ["eval", "source"])
@pytest.mark.parametrize("how", HOWS)
def test_bash_hook_runs_clean_under_strict_mode(dirs, how, via):
    tmp, proj, plain = dirs
    hook = write_hook(tmp, "bash", how)
    r = run("bash", strict_script("bash", hook, proj, plain, via=via), plain, options=("-e", "-u", "-o", "pipefail"))
    assert r.returncode == 0 and not r.stderr, explain(r)
    assert r.stdout.splitlines() == expected_strict(proj)


@pytest.mark.parametrize("via", ["eval", "source"])
@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("options", ZSH_OPTIONS)
def test_zsh_hook_runs_clean(dirs, how, options, via):
    tmp, proj, plain = dirs
    hook = write_hook(tmp, "zsh", how)
    r = run("zsh", strict_script("zsh", hook, proj, plain, prelude=options, via=via), plain)
    assert r.returncode == 0 and not r.stderr, explain(r)
    assert r.stdout.splitlines() == expected_strict(proj)


@pytest.mark.parametrize("via", ["eval", "source"])
@pytest.mark.parametrize("how", HOWS)
def test_fish_hook_runs_clean(dirs, how, via):
    tmp, proj, plain = dirs
    hook = write_hook(tmp, "fish", how)
    r = run("fish", strict_script("fish", hook, proj, plain, via=via), plain)
    assert r.returncode == 0 and not r.stderr, explain(r)
    assert r.stdout.splitlines() == expected_strict(proj)


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_cd_alone_triggers_the_hook(dirs, shell):
    """zsh (chpwd) and fish (--on-variable PWD) react to cd without a prompt."""
    tmp, proj, plain = dirs
    hook = write_hook(tmp, shell, "api")
    show = 'printf "root=%s\\n" "$CTXD_ROOT"' if shell == "fish" else 'printf "root=%s\\n" "${CTXD_ROOT-}"'
    script = "\n".join([install(shell, hook), f"cd {q(shell, proj)}", show, f"cd {q(shell, plain)}", show])
    r = run(shell, script, plain)
    assert r.returncode == 0 and not r.stderr, explain(r)
    assert r.stdout.splitlines() == [f"root={proj}", "root="]


# --- installs exactly once ---------------------------------------------------------

# (PROMPT_COMMAND before, after two evaluations, "array"|"string"); None: unset
BASH_FORMS = {
    "unset": (None, ["_ctxd_hook"], "string"),
    "empty": ('PROMPT_COMMAND=""', ["_ctxd_hook"], "string"),
    "string": ("PROMPT_COMMAND='user_a; user_b'", ["_ctxd_hook;user_a; user_b"], "string"),
    "array": ("PROMPT_COMMAND=(user_a 'user b')", ["_ctxd_hook", "user_a", "user b"], "array"),
    "empty-array": ("PROMPT_COMMAND=()", ["_ctxd_hook"], "array"),
}


def _bash_pc_dump():
    return ("printf '%s\\0' \"${PROMPT_COMMAND[@]}\"; "
            "[[ ${PROMPT_COMMAND@a} == *a* ]] && printf array || printf string")


def _parse_pc(out):
    *items, kind = out.split("\0")
    return items, kind


def _hook_count(items):
    return sum(part.strip() == "_ctxd_hook" for item in items for part in item.split(";"))


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("form", sorted(BASH_FORMS))
def test_bash_installs_once_first_in_line(dirs, how, form):
    tmp, proj, plain = dirs
    before, after, kind = BASH_FORMS[form]
    hook = write_hook(tmp, "bash", how)
    script = "\n".join(filter(None, ["unset PROMPT_COMMAND", before, install("bash", hook),
                                     install("bash", hook), _bash_pc_dump()]))
    r = run("bash", script, plain, options=("-e", "-u", "-o", "pipefail"))
    assert r.returncode == 0 and not r.stderr, explain(r)
    items, got_kind = _parse_pc(r.stdout)
    assert (items, got_kind) == (after, kind)
    assert _hook_count(items) == 1


def test_bash_install_after_a_tool_appended_to_the_string_form(dirs):
    """Installed as a string, then a tool turned PROMPT_COMMAND into an array
    with +=, then the rc file is sourced again: still one _ctxd_hook."""
    tmp, proj, plain = dirs
    hook = write_hook(tmp, "bash", "api")
    script = "\n".join(["PROMPT_COMMAND='user_a'", install("bash", hook), "PROMPT_COMMAND+=(tool)",
                        install("bash", hook), _bash_pc_dump()])
    r = run("bash", script, plain, options=("-e", "-u", "-o", "pipefail"))
    assert r.returncode == 0 and not r.stderr, explain(r)
    items, kind = _parse_pc(r.stdout)
    assert (items, kind) == (["_ctxd_hook;user_a", "tool"], "array")
    assert _hook_count(items) == 1


@pytest.mark.parametrize("how", HOWS)
def test_zsh_installs_once_and_keeps_user_hooks(dirs, how):
    tmp, proj, plain = dirs
    hook = write_hook(tmp, "zsh", how)
    script = "\n".join([
        "setopt nounset",
        "user_precmd() { :; }; user_chpwd() { :; }",
        "precmd_functions=(user_precmd); chpwd_functions=(user_chpwd)",
        install("zsh", hook), install("zsh", hook),
        "print -r -- precmd: $precmd_functions", "print -r -- chpwd: $chpwd_functions",
    ])
    r = run("zsh", script, plain)
    assert r.returncode == 0 and not r.stderr, explain(r)
    lines = dict(line.split(": ", 1) for line in r.stdout.splitlines())
    for kind, user in (("precmd", "user_precmd"), ("chpwd", "user_chpwd")):
        fns = lines[kind].split()
        assert fns.count("_ctxd_hook") == 1, fns
        assert user in fns, fns


@pytest.mark.parametrize("how", HOWS)
def test_fish_installs_once_and_keeps_user_handlers(dirs, how):
    tmp, proj, plain = dirs
    hook = write_hook(tmp, "fish", how)
    script = "\n".join([
        "function user_on_pwd --on-variable PWD; end",
        install("fish", hook), install("fish", hook),
        "functions -q __ctxd_on_pwd; and echo has-on-pwd",
        "functions -q __ctxd_on_prompt; and echo has-on-prompt",
        "functions --handlers-type variable", "functions --handlers-type generic",
    ])
    r = run("fish", script, plain)
    assert r.returncode == 0 and not r.stderr, explain(r)
    words = r.stdout.split()
    assert "has-on-pwd" in words and "has-on-prompt" in words
    assert words.count("__ctxd_on_pwd") == 1
    assert words.count("__ctxd_on_prompt") == 1
    assert words.count("user_on_pwd") == 1


# --- lint ------------------------------------------------------------------------


@pytest.mark.parametrize("how", HOWS)
def test_bash_hook_passes_shellcheck(how):
    """`shellcheck -s bash` at its default severity, with no global excludes.

    The one intended finding, SC2128/SC2178 (PROMPT_COMMAND is handled both as
    an array and as a string, on purpose), is disabled by a directive right
    where it happens in shell/ctxd.bash, with the reason next to it.
    """
    sc = shutil.which("shellcheck")
    if not sc:
        pytest.skip("shellcheck is not installed")
    r = subprocess.run([sc, "-s", "bash", "-"], input=render("bash", how), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


# --- one source of truth ---------------------------------------------------------


def _dump_arrays(shell):
    if shell == "fish":
        return "string join0 -- $__ctxd_markers; echo ---; string join0 -- $__ctxd_cmd"
    return 'printf "%s\\0" "${_ctxd_markers[@]}"; echo ---; printf "%s\\0" "${_ctxd_cmd[@]}"'


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("shell", SHELLS)
def test_hook_markers_are_the_detector_registry(dirs, shell, how):
    """The shell's own idea of the marker list (and, for the API, the command)
    after evaluating the hook is exactly the Python registry's."""
    tmp, proj, plain = dirs
    hook = write_hook(tmp, shell, how)
    r = run(shell, install(shell, hook) + "\n" + _dump_arrays(shell), plain)
    assert r.returncode == 0 and not r.stderr, explain(r)
    markers, _, cmd = r.stdout.partition("---\n")
    assert markers.split("\0")[:-1] == all_markers()
    cmd = cmd.split("\0")[:-1]
    if how == "api":
        assert cmd == export_command()
    else:
        assert os.path.isabs(cmd[0]) and os.access(cmd[0], os.X_OK), cmd
        assert cmd[1:3] == ["-I", "-S"]


@pytest.mark.parametrize("shell", SHELLS)
def test_cli_and_api_render_the_same_hook(shell):
    """Only the interpreter path may differ (the console script's own)."""
    def body(text):
        return [line for line in text.splitlines()
                if not line.startswith(("_ctxd_cmd=(", "set -g __ctxd_cmd "))]
    cli, api = render(shell, "cli"), render(shell, "api")
    assert body(cli) == body(api)
    assert "@CTXD_" not in cli


# --- `ctxd hook` errors and detection ------------------------------------------------


@pytest.mark.parametrize("args", [["csh"], ["powershell"], ["bash;rm"], ["BASH"]])
def test_hook_rejects_an_unknown_shell(args):
    r = ctxd("hook", *args)
    assert r.returncode != 0
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctxd:"), r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("shell", SHELLS)
def test_hook_without_argument_detects_the_parent_shell(tmp_path, shell):
    """Detection looks at the process tree (shellingham), not at $SHELL, which
    is set to a different shell here on purpose."""
    other = {"bash": "zsh", "zsh": "fish", "fish": "bash"}[shell]
    env = clean_env(SHELL=shutil.which(other) or f"/bin/{other}")
    out = tmp_path / "hook.out"
    # `; true` keeps the shell from exec-ing ctxd in its own place
    script = f"{shlex.quote(ctxdtest.ctxd_script())} hook > {q(shell, str(out))}; true"
    r = run(shell, script, str(tmp_path), env=env)
    assert r.returncode == 0 and not r.stderr, explain(r)
    assert out.read_text() == ctxd("hook", shell).stdout


# --- `ctxd export` -------------------------------------------------------------------


@pytest.mark.parametrize("shell", SHELLS)
def test_export_in_a_project_prints_code_and_in_a_plain_dir_nothing(dirs, shell):
    tmp, proj, plain = dirs
    r = ctxd("export", shell, cwd=proj, env=clean_env(PWD=proj))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() and "CTXD_ROOT" in r.stdout
    r = ctxd("export", shell, cwd=plain, env=clean_env(PWD=plain))
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""


# --- SIGINT: the hook's own handling never replaces the user's ------------------------


@pytest.mark.parametrize("shell", SHELLS)
def test_hooks_give_back_the_users_sigint_trap(dirs, shell):
    """The hook holds SIGINT while it changes the environment (see
    tests/e2e/test_e2e_interrupt.py); afterwards the user's own trap (or none)
    is in place again, on the slow path, the fast leave and the no-change path."""
    tmp, proj, plain = dirs
    hook = write_hook(tmp, shell, "api")
    if shell == "fish":
        user = "function user_on_int --on-signal SIGINT; echo user-int; end"
        show = ("functions -q __ctxd_hold_sigint; and echo ctxd-handler-left; "
                "functions --handlers-type signal | string match -q '*user_on_int*'; and echo user-handler")
        none_show = "functions --handlers-type signal | string match -q '*SIGINT*'; and echo some-handler; or echo none"
        fn = "__ctxd_hook"
    else:
        user = "trap 'echo user-int' INT"
        # (zsh has no trap -p: it would set a trap named -p)
        show = "trap -p INT" if shell == "bash" else "trap | grep INT"
        none_show = f"[[ -z $({show}) ]] && echo none"
        fn = "_ctxd_hook"
    steps = [f"cd {q(shell, proj)}", fn, show, fn, show, f"cd {q(shell, plain)}", fn, show]
    r = run(shell, "\n".join([user, install(shell, hook)] + steps), plain)
    assert r.returncode == 0 and not r.stderr, explain(r)
    lines = r.stdout.splitlines()
    if shell == "fish":
        assert lines == ["user-handler"] * 3
    else:
        assert len(lines) == 3 and all("user-int" in line for line in lines), lines
    # no trap before: none after
    r = run(shell, "\n".join([install(shell, hook), f"cd {q(shell, proj)}", fn, none_show,
                              f"cd {q(shell, plain)}", fn, none_show]), plain)
    assert r.returncode == 0 and not r.stderr, explain(r)
    assert r.stdout.splitlines() == ["none", "none"]


@pytest.mark.parametrize("writable", [True, False], ids=["stamp-dir", "no-stamp-dir"])
def test_bash_keeps_the_users_int_trap_in_its_file_or_else_through_a_subshell(dirs, writable):
    """bash cannot read `trap -p` into a variable without a subshell: the hook
    writes it to this shell's file in the private stamp directory and sources it
    back; where that file cannot be written (here the stamp directory's path is a
    regular file) it takes the subshell, silently. Either way the user's trap, a
    quote in it and all, is in place after entering and after leaving."""
    tmp, proj, plain = dirs
    hook = write_hook(tmp, "bash", "api")
    from ctxd import paths

    stamps = paths.stamp_dir()
    if writable:
        os.makedirs(stamps, mode=0o700, exist_ok=True)
    else:
        shutil.rmtree(stamps, ignore_errors=True)
        os.makedirs(os.path.dirname(stamps), exist_ok=True)
        with open(stamps, "w") as f:
            f.write("not a directory\n")
    user = """trap 'echo "user'"'"'s int"' INT"""
    steps = [user, install("bash", hook), f"cd {q('bash', proj)}", "_ctxd_hook", "trap -p INT",
             'echo "root=$CTXD_ROOT"', f"cd {q('bash', plain)}", "_ctxd_hook", "trap -p INT",
             'echo "root=${CTXD_ROOT-}"', 'echo "pid=$$ host=${HOSTNAME-}"']
    r = run("bash", "\n".join(steps), plain)
    assert r.returncode == 0 and not r.stderr, explain(r)
    lines = r.stdout.splitlines()
    want = """trap -- 'echo "user'\\''s int"' SIGINT"""
    assert lines[:4] == [want, f"root={proj}", want, "root="], lines
    pid, host = (w.split("=", 1)[1] for w in lines[4].split(" "))
    held = os.path.join(stamps, f"int-trap.{host}.{pid}")
    if writable:
        with open(held) as f:
            assert f.read() == want + "\n"
    else:
        assert not os.path.isdir(stamps) and not os.path.exists(held)


@pytest.mark.parametrize("path_builtin", [True, False], ids=["path-filter", "fish-before-3.5"])
def test_fish_watch_check_sees_every_kind_of_change(dirs, path_builtin):
    """__ctxd_watch_changed (every prompt in a project): status 0 once a "-" path (absent at
    the export) appears, a "+" path disappears or gets newer than the stamp; 1 while none
    did. With `path` (two builtin calls for the existence checks) and without (fish < 3.5)."""
    tmp, proj, plain = dirs
    hook = write_hook(tmp, "fish", "api")
    stamp, kept, newer, gone, absent = (tmp / n for n in ("stamp", "kept", "newer", "gone", "absent"))
    for f in (kept, newer, gone):
        f.write_text("x")
    stamp.write_text("")
    for f in (kept, newer, gone):
        os.utime(f, (1_000_000_000, 1_000_000_000))  # older than the stamp
    watch = "\\n".join([str(stamp), f"+{kept}", f"+{newer}", f"+{gone}", f"-{absent}"])
    check = "__ctxd_watch_changed; and echo changed; or echo same"
    steps = [install("fish", hook)]
    if not path_builtin:
        steps.append("set -e __ctxd_path_filter")
    steps += [f"set -gx CTXD_WATCH {watch}", check,
              f"touch {q('fish', str(absent))}", check, f"rm {q('fish', str(absent))}", check,
              f"rm {q('fish', str(gone))}", check, f"touch {q('fish', str(gone))}",
              f"touch -d @1000000000 {q('fish', str(gone))}", check,
              f"touch {q('fish', str(newer))}", check,
              # the same answers for an older CTXD_WATCH given as the argument
              f"__ctxd_watch_changed {watch}; and echo changed; or echo same"]
    r = run("fish", "\n".join(steps), plain)
    assert r.returncode == 0 and not r.stderr, explain(r)
    assert r.stdout.split() == ["same", "changed", "same", "changed", "same", "changed", "changed"], r.stdout


@pytest.mark.parametrize("writable", [True, False], ids=["stamp-dir", "no-stamp-dir"])
@pytest.mark.parametrize("shell", ["bash", "fish"])
def test_markerless_walks_are_trusted_only_while_no_directory_of_them_changed(tmp_path, shell, writable):
    """bash and fish keep the verdict of their last two walks that found no marker, with a
    stamp written before each walk: while every directory of the walk is older than the
    stamp, the next walk there is one test. A marker created (in the directory or a parent)
    changes a directory's mtime and the verdict falls, also in the stamp's own second;
    another $HOME is another walk. The one thing a verdict hides is a directory whose mtime
    was set back (shown here, with `touch -d`, to prove the verdict is used). Without a
    stamp directory every walk is done, with nothing on stderr (in fish, until the export
    that the cd into a project runs makes it)."""
    home = tmp_path / "home"
    a, b = home / "plain" / "a", home / "plain" / "b"
    a.mkdir(parents=True)
    b.mkdir()
    hook = write_hook(tmp_path, shell, "api")
    from ctxd import paths

    stamps = paths.stamp_dir()
    if writable:
        os.makedirs(stamps, mode=0o700, exist_ok=True)
    else:
        shutil.rmtree(stamps, ignore_errors=True)

    def f(p):
        return q(shell, str(p))

    back = "touch -d @1000000000 " + " ".join(f(d) for d in (a, b, a.parent, home))
    pre = "__" if shell == "fish" else "_"
    walk = f'{pre}ctxd_find_root; echo "r=[${pre}ctxd_r]"'
    home_is = "set -gx HOME" if shell == "fish" else "export HOME="
    sep = " " if shell == "fish" else ""
    steps = [f"{home_is}{sep}{f(home)}", install(shell, hook), back,
             f"cd {f(a)}", walk,                                  # walked: a's verdict
             f"touch {f(a / 'Makefile')}", back, walk,            # a's mtime set back: held
             f"touch {f(a)}", walk,                               # a changed: found
             f"rm {f(a / 'Makefile')}", back, walk,              # walked again: a's verdict
             f"cd {f(b)}", walk,                                  # b's verdict, a's second
             f"touch {f(a.parent / 'go.mod')}", f"cd {f(a)}", walk,  # the parent changed
             f"rm {f(a.parent / 'go.mod')}", back, walk, f"cd {f(b)}", walk,
             f"touch {f(b / 'go.mod')}", back, f"{home_is}{sep}{f(b)}", walk,  # another HOME
             f'echo "v1=${pre}ctxd_v1_f"']
    r = run(shell, "\n".join(steps), str(tmp_path))
    assert r.returncode == 0 and not r.stderr, explain(r)
    lines = r.stdout.splitlines()
    held = "r=[]" if writable else f"r=[{a}]"
    assert lines[:9] == ["r=[]", held, f"r=[{a}]", "r=[]", "r=[]", f"r=[{a.parent}]", "r=[]", "r=[]",
                         f"r=[{b}]"], lines
    # this shell's stamps, in the private stamp directory (bash here runs no export)
    if writable or shell == "fish":
        assert lines[9].startswith("v1=" + os.path.join(stamps, f"{shell}-walk.")), lines
    else:
        assert lines[9:] == ["v1="] and not os.path.exists(stamps), lines
