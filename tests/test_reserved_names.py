"""Names a shell reserves never reach its code (issue 22 item 6); real shells:
tests/e2e/test_e2e_reserved_names.py."""

import os

from ctxd.activation import export
from ctxd.activation.allow import allow_rc
from ctxd.shells import SUPPORTED, get_shell


def project(tmp_path, rc):
    d = tmp_path / "proj"
    d.mkdir()
    (d / ".contextrc").write_text(rc)
    allow_rc(str(d / ".contextrc"))
    return d


def test_an_inherited_snapshot_never_makes_zsh_touch_its_path_array(tmp_path):
    # bash may set `path` (a plain variable there); a zsh started inside inherits the state
    d = project(tmp_path, '[env]\npath = "/p"\nCT_X = "1"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXD")}
    t = export.transition(env, str(d), shell=get_shell("bash"))
    assert t.target["path"] == "/p" and t.warnings == []
    inside = dict(t.target, CTXD_STATE=export.encode(t.state))
    zsh = get_shell("zsh")
    code = export.render(zsh, inside, export.transition(inside, str(tmp_path), shell=zsh))
    assert "unset CT_X" in code and " path" not in code and "path=" not in code


def test_every_shell_refuses_only_valid_names_and_never_ctxds_own():
    for name in SUPPORTED:
        reserved = get_shell(name).reserved
        assert all(n.isidentifier() for n in reserved)
        assert not reserved & {"PATH", "HOME", "CTXD_ROOT", "CTXD_STATE", "VIRTUAL_ENV", "LANG"}
