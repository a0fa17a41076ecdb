"""What ctxd says about trust: a denied .contextrc is withheld, so the prompt line says
!blocked as for an untrusted one; `ctxd show` says which trust its last line is about; the
unknown-key warning is said once, not by `ctxd allow` and again by the hook."""

import os
import subprocess

from ctxdtest import ctxd


def make(tmp_path, rc='[env]\nA = "1"\n'):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").touch()
    (proj / ".contextrc").write_text(rc)
    return proj


def test_denied_contextrc_is_blocked_in_the_status(tmp_path):
    proj = make(tmp_path)
    assert ctxd("deny", cwd=proj).returncode == 0
    assert ctxd("status", cwd=proj).stdout == "proj (python) !blocked\n"
    bash = subprocess.run(["bash", "--norc", "-c", 'eval "$(ctxd export bash)"; printf %s "$CTXD_STATUS"'],
                          cwd=proj, env=dict(os.environ, PWD=str(proj)), capture_output=True, text=True)
    assert bash.stdout == "proj (python) !blocked", bash.stderr
    assert ctxd("allow", cwd=proj).returncode == 0
    assert ctxd("status", cwd=proj).stdout == "proj (python)\n"


def test_show_says_the_trust_line_is_the_roots(tmp_path):
    proj = make(tmp_path)
    out = ctxd("show", cwd=proj).stdout
    assert f"contextrc    {proj / '.contextrc'}  [untrusted]" in out
    assert "\nroot trusted yes\n" in out and "\ntrusted " not in out


def test_unknown_key_warning_is_left_to_the_hook_in_an_active_shell(tmp_path):
    proj = make(tmp_path, '[env]\nA = "1"\n[bogus]\nx = 1\n')
    # a shell with the hook, in the project: its next prompt says it (the notice)
    inside = ctxd("allow", cwd=proj, extra_env={"_CTXD_HOOK": "bash"})
    assert inside.returncode == 0 and "unknown keys" not in inside.stderr
    p = ctxd("export", "json", cwd=proj)
    assert p.stderr.count("unknown keys ignored: bogus") == 1
    # no hook here (a script, another directory): allow says it itself
    ctxd("deny", cwd=proj)
    outside = ctxd("allow", str(proj), cwd=tmp_path)
    assert outside.stderr.count("unknown keys ignored: bogus") == 1
