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
        assert "ctxd/memory/text/gitleaks.toml" in names  # the redactor's rule set
        assert "ctxd/memory/recall/zh_en.txt" in names  # recall's Chinese-English keywords (CC BY-SA 4.0)
        z.extractall(tmp_path / "site")
    # rendered from the installed copy (not from this checkout's shell/)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from ctxd.shells.base import template_path; "
            "print(template_path('ctxd.zsh'))")
    out = subprocess.run([sys.executable, "-I", "-c", code, str(tmp_path / "site")], capture_output=True, text=True)
    assert out.stdout.strip() == str(tmp_path / "site" / "ctxd" / "_shell" / "ctxd.zsh"), out.stderr


HEAVY = ("click", "psutil", "shellingham", "platformdirs")


def _modules_after(code, stdin=None, cwd=None):
    """Run *code* in a fresh interpreter with this checkout first; the heavy modules it imported."""
    probe = (f"import sys; sys.path[:0] = [{REPO!r}]\n" + code +
             f"\nsys.stderr.write('\\nHEAVY=' + ','.join(m for m in {HEAVY!r} if m in sys.modules))\n")
    p = subprocess.run([sys.executable, "-I", "-c", probe], input=stdin, capture_output=True, text=True, cwd=cwd,
                       env=dict(os.environ), timeout=60)
    return p, p.stderr.rsplit("HEAVY=", 1)[-1]


def test_failures_on_the_hot_paths_import_nothing_heavy(tmp_path):
    """The error boundary is on the export and hook paths: a failure there (a bug in export, garbage on
    a hook's stdin) is logged and reported without loading click, psutil, shellingham or platformdirs."""
    export_bug = ("import ctxd.activation.export as ex\n"
                  "def boom(shell, environ): raise RuntimeError('boom')\n"
                  "ex.export = boom\n"
                  "from ctxd.fastpath.export_entry import export_main\n"
                  "try:\n    export_main(['bash'])\nexcept SystemExit as e:\n    print('exit', e.code)\n")
    p, heavy = _modules_after(export_bug, cwd=tmp_path)
    assert "exit 1" in p.stdout and "ctxd: export failed: RuntimeError: boom" in p.stdout, p.stderr
    assert heavy == ""
    hook_garbage = ("sys.argv = ['ctxd', 'chat', 'hook', 'gemini']\n"
                    "from ctxd.fastpath import console_entry\n"
                    "try:\n    console_entry.main()\nexcept SystemExit as e:\n    print('exit', e.code)\n")
    p, heavy = _modules_after(hook_garbage, stdin="not json", cwd=tmp_path)
    assert p.stdout.splitlines() == ["{}", "exit 0"], p.stderr
    assert "ctxd: chat hook gemini: nothing recorded (the payload is not JSON" in p.stderr
    assert heavy == ""
