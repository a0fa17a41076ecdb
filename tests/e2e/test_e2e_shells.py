"""How the hook lives in each shell: subshells, fresh shells, double install,
the user's own prompt hooks, $? and `set -u`."""

import os

import pytest

from e2ekit import (
    cd, comparable, ctxd_lines, enter_nested, hook_line, leave_nested, make_wrapper, output_lines,
    plain_dir, python_project, quote, runs, set_var, wrap_command,
)


def test_subshell_keeps_environment_and_leaves_clean(shell, sessions, tmp_path):
    py = python_project(tmp_path / "py")
    sub = plain_dir(os.path.join(py, "sub"))
    out = plain_dir(tmp_path / "out")
    s = sessions(shell)
    cd(s, out)
    before = comparable(s.env_dump())
    cd(s, py)
    inside = comparable(s.env_dump())
    assert inside["VIRTUAL_ENV"] == os.path.join(py, ".venv")

    enter_nested(s)
    assert comparable(s.env_dump()) == inside  # inherited as is
    assert s.install_hook() == ""
    assert comparable(s.env_dump()) == inside  # the hook's first run changes nothing
    cd(s, sub)
    assert comparable(s.env_dump()) == inside
    cd(s, out)  # leaving from the subshell
    assert comparable(s.env_dump()) == before
    cd(s, py)
    assert comparable(s.env_dump()) == inside
    leave_nested(s)

    # the parent is untouched by what the subshell did
    assert comparable(s.env_dump()) == inside
    cd(s, out)
    assert comparable(s.env_dump()) == before


def test_fresh_shell_in_project_activates_once(shell, sessions, tmp_path):
    py = python_project(tmp_path / "py")
    wrapper, log = make_wrapper(tmp_path)
    install = hook_line(shell) + "; " + wrap_command(shell, wrapper)

    # a clean shell started in the project dir (a new terminal, a tmux pane)
    s1 = sessions(shell, hook=False, cwd=py)
    assert s1.run(install) == ""
    assert runs(log) == 1
    inside = comparable(s1.env_dump())
    assert inside["VIRTUAL_ENV"] == os.path.join(py, ".venv")
    assert inside["CTXD_ROOT"] == py
    s1.run("true")
    s1.run("true")
    assert runs(log) == 1

    # `exec $SHELL` inside the project: same environment, non-exported cache gone
    s2 = sessions(shell, hook=False, cwd=py, env=inside)
    assert comparable(s2.env_dump()) == inside
    assert s2.run(install) == ""
    assert runs(log) == 2  # exactly one run in the new shell
    assert comparable(s2.env_dump()) == inside
    s2.run("true")
    assert runs(log) == 2
    cd(s2, tmp_path)
    after = comparable(s2.env_dump())
    assert "VIRTUAL_ENV" not in after and not [k for k in after if k.startswith("CTXD_")]
    assert after["PATH"].split(":")[0] != os.path.join(py, ".venv", "bin")
    s3 = sessions(shell, cwd=str(tmp_path))
    assert after == comparable(s3.env_dump())


def _hook_counts(s):
    """How many times the hook is registered in the shell, per mechanism."""
    if s.shell == "bash":
        return {"PROMPT_COMMAND": s.run("declare -p PROMPT_COMMAND").count("_ctxd_hook")}
    if s.shell == "zsh":
        return {"precmd": s.run("print -rl -- $precmd_functions").split().count("_ctxd_hook"),
                "chpwd": s.run("print -rl -- $chpwd_functions").split().count("_ctxd_hook")}
    handlers = s.run("functions --handlers").split()
    return {"pwd": handlers.count("__ctxd_on_pwd"), "prompt": handlers.count("__ctxd_on_prompt")}


USER_HOOKS = {
    # the user's own prompt/cd hooks, each counting its runs
    "bash": ["user_pc() { user_prompts=$(( ${user_prompts:-0} + 1 )); }",
             "PROMPT_COMMAND='user_pc'"],
    "bash-array": ["user_pc() { user_prompts=$(( ${user_prompts:-0} + 1 )); }",
                   "user_pc2() { user_cds=$(( ${user_cds:-0} + 1 )); }",
                   "PROMPT_COMMAND=(user_pc user_pc2)"],
    "zsh": ["user_precmd() { user_prompts=$(( ${user_prompts:-0} + 1 )) }",
            "user_chpwd() { user_cds=$(( ${user_cds:-0} + 1 )) }",
            "precmd_functions+=(user_precmd); chpwd_functions+=(user_chpwd)"],
    "fish": ["set -g user_prompts 0; set -g user_cds 0",
             "function user_prompt --on-event fish_prompt; set -g user_prompts (math $user_prompts + 1); end",
             "function user_pwd --on-variable PWD; set -g user_cds (math $user_cds + 1); end"],
}


@pytest.mark.parametrize("variant", ["bash", "bash-array", "zsh", "fish"])
def test_hook_evaluated_twice_is_one_hook(variant, sessions, tmp_path):
    shell = variant.split("-")[0]
    py = python_project(tmp_path / "py")
    out = plain_dir(tmp_path / "out")
    s = sessions(shell, hook=False)
    for line in USER_HOOKS[variant]:
        assert s.run(line) == ""
    assert s.install_hook() == ""
    assert s.install_hook() == ""
    counts = _hook_counts(s)
    assert set(counts.values()) == {1}, counts
    if variant == "bash":
        assert s.run('printf "%s\\n" "$PROMPT_COMMAND"') == "_ctxd_hook;user_pc"
    if variant == "bash-array":
        assert s.run('printf "%s\\n" "${PROMPT_COMMAND[@]}"').split() == ["_ctxd_hook", "user_pc", "user_pc2"]
    # evaluating it once more after more use changes nothing either
    cd(s, out)
    before = s.env_dump()
    assert s.install_hook() == ""
    assert _hook_counts(s) == counts

    # the user's hooks still run
    var = "$user_prompts"
    n0 = int(s.run(f"echo {var}"))
    s.run("true")
    assert int(s.run(f"echo {var}")) > n0
    if variant != "bash":
        c0 = int(s.run("echo $user_cds"))
        cd(s, py)
        assert int(s.run("echo $user_cds")) > c0

    # and ctxd still works, with exactly one run per change
    cd(s, out)
    wrapper, log = make_wrapper(tmp_path)
    s.run(wrap_command(shell, wrapper))
    # (a change in py, entered above: else the revisit cache applies it without a run)
    open(os.path.join(py, "changed"), "w").close()
    cd(s, py)
    env = s.env_dump()
    assert env["VIRTUAL_ENV"] == os.path.join(py, ".venv")
    assert runs(log) == 1
    cd(s, out)  # leaving for a plain dir: the restore function, no process
    assert runs(log) == 1
    assert comparable(s.env_dump()) == comparable(before)


def test_bash_prompt_command_array_appended_after_install(sessions, tmp_path):
    """Users (and tools) append with += after the hook is installed."""
    py = python_project(tmp_path / "py")
    s = sessions("bash", hook=False)
    s.run("user_pc() { user_prompts=$(( ${user_prompts:-0} + 1 )); }")
    s.run("PROMPT_COMMAND=(user_pc)")
    s.install_hook()
    s.run("PROMPT_COMMAND+=('user_pc')")
    s.install_hook()
    assert _hook_counts(s) == {"PROMPT_COMMAND": 1}
    cd(s, py)
    assert s.env_dump()["CTXD_ROOT"] == py
    # a string PROMPT_COMMAND turned into an array by += after the install
    s2 = sessions("bash", hook=False)
    s2.run("user_pc() { user_prompts=$(( ${user_prompts:-0} + 1 )); }")
    s2.run("PROMPT_COMMAND='user_pc'")
    s2.install_hook()
    s2.run("PROMPT_COMMAND+=(true)")
    s2.install_hook()
    assert _hook_counts(s2) == {"PROMPT_COMMAND": 1}
    n0 = int(s2.run("echo $user_prompts"))
    s2.run("true")
    assert int(s2.run("echo $user_prompts")) > n0
    cd(s2, py)
    assert s2.env_dump()["CTXD_ROOT"] == py


def test_exit_status_is_preserved(shell, sessions, tmp_path):
    py = python_project(tmp_path / "py")
    out = plain_dir(tmp_path / "out")
    s = sessions(shell)
    qpy, qout = quote(shell, py), quote(shell, out)
    assert s.status_after("false") == 1
    assert s.status_after("sh -c 'exit 3'") == 3
    # the cd itself triggers activation, then the status of the last command shows
    assert s.status_after(f"cd {qpy}; false") == 1
    assert s.env_dump()["CTXD_ROOT"] == py
    assert s.status_after("false") == 1
    assert s.status_after(f"cd {qout}; sh -c 'exit 4'") == 4
    assert "CTXD_ROOT" not in s.env_dump()
    assert s.status_after(f"cd {qpy}") == 0
    assert s.status_after("true") == 0
    # a hook run that fails inside (corrupt state) keeps $? too
    assert s.status_after(set_var(shell, "CTXD_STATE", "garbage") + "; false") == 1
    assert s.env_dump()["CTXD_ROOT"] == py
    assert s.status_after(f"cd {qout}; false") == 1


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_nounset_shell(shell, sessions, tmp_path):
    py = python_project(tmp_path / "py")
    sub = plain_dir(os.path.join(py, "sub"))
    nested = python_project(os.path.join(py, "nested"))
    out = plain_dir(tmp_path / "out")
    s = sessions(shell, hook=False)
    assert s.run("set -u" if shell == "bash" else "setopt nounset") == ""
    assert s.install_hook() == ""
    assert s.install_hook() == ""
    assert s.run("true") == ""
    cd(s, out)
    before = s.env_dump()
    for d in (py, sub, nested, py, out, nested, out):
        assert cd(s, d) == "", d
        assert s.run("true") == ""
    assert comparable(s.env_dump()) == comparable(before)
    assert cd(s, py) == ""
    # a watched change, and a corrupt state: only ctxd's own notice is printed
    assert s.run("touch .venv/bin") == ""
    text = s.run(set_var(shell, "CTXD_STATE", "garbage"))
    assert len(ctxd_lines(text)) == 1 and output_lines(text) == ctxd_lines(text), text
    assert cd(s, out) == ""
    assert comparable(s.env_dump()) == comparable(before)
    # and the array form of PROMPT_COMMAND under set -u
    if shell == "bash":
        s2 = sessions(shell, hook=False)
        s2.run("set -u; PROMPT_COMMAND=(true)")
        assert s2.install_hook() == ""
        assert cd(s2, py) == ""
        assert s2.env_dump()["CTXD_ROOT"] == py
        assert cd(s2, out) == ""
