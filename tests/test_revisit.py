"""The revisit cache's test (ctxd.activation.revisit): which variables it
compares, on a real project with a real trusted .contextrc and the real export."""

import os

from ctxd.activation import revisit
from ctxd.activation.export import render, transition
from ctxd.shells import get_shell
from ctxdtest import ctxd


def test_dollar_names():
    text = 'a = "${CT_HOST:-x}/$CT_USER" b = "$$ cost $5 ${UNCLOSED" c = "${_X1}"'
    assert revisit.dollar_names(text) >= {"CT_HOST", "CT_USER", "_X1", "UNCLOSED"}
    assert "" not in revisit.dollar_names("$ $$ ${}")


def project(tmp_path, rc):
    proj = tmp_path / "proj"
    (proj / ".venv" / "bin").mkdir(parents=True)
    # as venv writes it (in part): names the shell's own PS1
    (proj / ".venv" / "bin" / "activate").write_text('_OLD_VIRTUAL_PS1="${PS1:-}"\nPS1="(proj) ${PS1:-}"\n')
    (proj / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (proj / ".contextrc").write_text(rc)
    ctxd("allow", str(proj), script=True, check=0)
    return str(proj)


def test_the_test_names_what_the_output_depends_on(tmp_path):
    proj = project(tmp_path, '[env]\nCT_URL = "https://${CT_HOST:-localhost}/x"\n')
    env = dict(os.environ, PWD=proj, NVM_DIR="/opt/nvm", **{"BAD-NAME_DIR": "x", "UNRELATED": "y"})
    t = transition(env, proj)
    names = {n for n, _ in revisit.check_pairs(env, t, {"VIRTUAL_ENV", "CT_URL"})}
    assert {"PATH", "HOME", "CTXD_STATE", "CTXD_WATCH", "VIRTUAL_ENV", "CT_URL", "CT_HOST", "NVM_DIR",
            "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"} <= names
    assert "UNRELATED" not in names and "BAD-NAME_DIR" not in names
    for shell in ("bash", "zsh", "fish"):
        code = render(get_shell(shell), env, t)
        flag = get_shell(shell).revisit_var
        assert flag in code and "CT_HOST" in code.split(flag, 1)[1]


def test_no_replay_with_on_enter_or_on_leave_or_inside(tmp_path):
    proj = project(tmp_path, '[env]\nCT_A = "1"\n\n[hooks]\non_leave = "true"\n')
    env = dict(os.environ, PWD=proj)
    t = transition(env, proj)
    assert not revisit.cacheable(t) and revisit.check_pairs(env, t, set()) is None
    assert get_shell("bash").revisit_var not in render(get_shell("bash"), env, t)


def test_a_variable_an_env_file_expands_is_in_the_test(tmp_path):
    proj = project(tmp_path, '[env]\nfiles = [".env"]\n')
    with open(os.path.join(proj, ".env"), "w") as f:
        f.write("CT_URL=https://${CT_HOST:-localhost}/x\n")
    env = dict(os.environ, PWD=proj)
    t = transition(env, proj)
    assert t.target.get("CT_URL") == "https://localhost/x", t.warnings
    names = {n for n, _ in revisit.check_pairs(env, t, set())}
    assert "CT_HOST" in names
    # a venv's activate script is watched, its $PS1 (a shell's own variable) is no input
    assert "PS1" not in names
