"""[env] values name the project root and their own .contextrc's directory with
${CTXD_ROOT} and ${CTXD_RC_DIR}, whatever directory the shell entered from
(${PWD} is that directory, which is why `ctxd init` no longer suggests it)."""

import json

from ctxdtest import ctxd


def test_root_and_rc_dir_in_env_values(tmp_path):
    outer = tmp_path / "mono"
    proj = outer / "pkg"
    (proj / "src" / "deep").mkdir(parents=True)
    (proj / "pyproject.toml").touch()
    (outer / ".contextrc").write_text('[env]\nSHARED = "${CTXD_RC_DIR}/tools"\nSEEN_ROOT = "${CTXD_ROOT}"\n')
    (proj / ".contextrc").write_text('[env]\nPYTHONPATH = "${CTXD_ROOT}/src"\nHERE = "${CTXD_RC_DIR}"\n'
                                     'KEEP = "$${CTXD_ROOT}"\n')
    for d in (outer, proj):
        assert ctxd("allow", str(d), cwd=tmp_path).returncode == 0
    for cwd in (proj, proj / "src" / "deep"):
        p = ctxd("export", "json", cwd=cwd)
        assert p.returncode == 0, p.stderr
        env = json.loads(p.stdout)
        assert env["PYTHONPATH"] == f"{proj}/src"
        assert env["HERE"] == str(proj)
        assert env["SHARED"] == f"{outer}/tools"  # the parent's .contextrc: its own directory
        assert env["SEEN_ROOT"] == str(proj)  # ... and the project it applies to
        assert env["KEEP"] == "${CTXD_ROOT}"


def test_init_suggests_the_root_not_pwd(tmp_path):
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "pyproject.toml").touch()
    assert ctxd("init", cwd=proj).returncode == 0
    text = (proj / ".contextrc").read_text()
    assert "${PWD}" not in text and '"${CTXD_ROOT}/src"' in text
