"""ctxd next to zoxide (bash, zsh, fish) and next to zsh-autosuggestions and
zsh-syntax-highlighting with zle on: smoke tests with the real Debian
packages, ctxd's line before and after theirs (issue 13)."""

import os

import pytest

from coexistkit import STARSHIP_TOML, prompt_after, require_debian, require_tool
from e2ekit import path_list, python_project

ORDERS = ("ctxd-first", "ctxd-last")


def ctxd_line(shell):
    return "ctxd hook fish | source" if shell == "fish" else f'eval "$(ctxd hook {shell})"'


@pytest.mark.parametrize("order", ORDERS)
def test_cd_with_zoxides_z_activates(shell, order, sessions, tmp_path):
    zoxide = require_debian("zoxide")
    proj = python_project(tmp_path / "deep" / "down" / "myproj")
    z_line = (f"'{zoxide}' init fish | source" if shell == "fish" else f'eval "$(\'{zoxide}\' init {shell})"')
    s = sessions(shell, hook=False, env={"_ZO_DATA_DIR": str(tmp_path / "zo")})
    for line in ((ctxd_line(shell), z_line) if order == "ctxd-first" else (z_line, ctxd_line(shell))):
        s.run(line)
    s.run(f"'{zoxide}' add '{proj}'")
    s.run("z myproj")
    env = s.env_dump()
    assert env["PWD"] == proj
    assert env.get("VIRTUAL_ENV") == os.path.join(proj, ".venv")
    assert path_list(env).count(os.path.join(proj, ".venv", "bin")) == 1
    s.run("z -")  # back where we were: out of the project
    env = s.env_dump()
    assert "VIRTUAL_ENV" not in env and "CTXD_STATE" not in env
    assert os.path.join(proj, ".venv", "bin") not in path_list(env)


@pytest.mark.parametrize("order", ORDERS)
def test_zsh_autosuggestions_and_syntax_highlighting_with_zle(order, sessions, tmp_path, home):
    sugg = require_debian("zsh-autosuggestions")
    high = require_debian("zsh-syntax-highlighting")
    proj = python_project(tmp_path / "proj")
    (home / ".zshrc").write_text("")
    plugins = [f"source '{sugg}'", f"source '{high}'"]
    s = sessions("zsh", hook=False)
    s.run("setopt zle")  # the plugins work on the line editor the session turned off
    rc = [ctxd_line("zsh"), *plugins] if order == "ctxd-first" else [*plugins, ctxd_line("zsh")]
    for line in rc:
        s.run(line)
    # the prompt itself reports the environment the hooks left (prompt_subst)
    s.run("setopt prompt_subst; PS1='[${VIRTUAL_ENV:-none}]CTXDPROMPT>'")
    venv = os.path.join(proj, ".venv")
    assert f"[{venv}]" in prompt_after(s, f"cd '{proj}'")
    env = s.env_dump()
    assert env.get("VIRTUAL_ENV") == venv
    assert path_list(env).count(os.path.join(venv, "bin")) == 1
    assert "[none]" in prompt_after(s, "cd ..")
    assert "VIRTUAL_ENV" not in s.env_dump()
    # both plugins are really loaded next to ctxd
    out = s.run("print -r -- ${+functions[_zsh_autosuggest_start]} ${+functions[_zsh_highlight]}")
    assert "1 1" in out, out


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("shell_name", ["zsh", "fish"])
def test_starship_prompt_in_zsh_and_fish(shell_name, order, sessions, tmp_path):
    """(bash, with and without bash-preexec: test_e2e_coexist_preexec.py)"""
    starship = require_tool("starship")
    cfg = tmp_path / "starship.toml"
    cfg.write_text(STARSHIP_TOML)
    proj = python_project(tmp_path / "proj")
    s_line = (f"'{starship}' init fish | source" if shell_name == "fish"
              else f'eval "$(\'{starship}\' init zsh)"')
    s = sessions(shell_name, hook=False, env={"STARSHIP_CONFIG": str(cfg), "STARSHIP_CACHE": str(tmp_path / "sc"),
                                              "TERM": "xterm"})  # starship draws nothing on TERM=dumb
    for line in ((ctxd_line(shell_name), s_line) if order == "ctxd-first" else (s_line, ctxd_line(shell_name))):
        s.run(line)
    s.run("true")
    venv = os.path.join(proj, ".venv")
    shown = prompt_after(s, f"cd '{proj}'")
    assert f"venv={venv} " in shown, shown
    shown = prompt_after(s, "cd ..")
    assert "venv=" not in shown, shown
