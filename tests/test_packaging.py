"""The wheel carries the hook templates (shell/ -> ctxd/_shell/) and hooks render from it."""

import os
import subprocess
import sys
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_wheel_ships_hook_templates_and_renders_hooks_from_them(tmp_path):
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), REPO],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    [wheel] = [f for f in os.listdir(tmp_path) if f.endswith(".whl")]
    with zipfile.ZipFile(tmp_path / wheel) as z:
        names = set(z.namelist())
        for shell in ("bash", "zsh", "fish"):
            assert f"ctxd/_shell/ctxd.{shell}" in names
        z.extractall(tmp_path / "site")
    # rendered from the installed copy (not from this checkout's shell/)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from ctxd.shells.base import template_path; "
            "print(template_path('ctxd.zsh'))")
    out = subprocess.run([sys.executable, "-I", "-c", code, str(tmp_path / "site")], capture_output=True, text=True)
    assert out.stdout.strip() == str(tmp_path / "site" / "ctxd" / "_shell" / "ctxd.zsh"), out.stderr
