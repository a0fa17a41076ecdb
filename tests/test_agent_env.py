"""The project's environment in Claude Code's Bash tool (ctxd.integrations.agent_env).

Every test runs the real ``ctxd chat hook claude`` process with the payloads
Claude Code 2.1.332 sent (tests/contracts/hooks/claude/: session_start,
cwd_changed, file_changed) and a ``CLAUDE_ENV_FILE`` laid out as Claude Code
lays it out (``session-env/<session>/<event>-hook-0.sh``), then sources the
files in Claude Code's order (sessionstart, cwdchanged, filechanged) in a real
bash and zsh and reads the environment they produce.
"""

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from ctxd import paths
from ctxdtest import ctxd, write_config
from shellkit import require

CTXD = shutil.which("ctxd")
CONTRACTS = Path(__file__).parent / "contracts" / "hooks" / "claude"
SHELLS = ("bash", "zsh")
NASTY = "it's \"quoted\" $HOME `x` \\ back\\slash\ttab ünï ☃ a:=b =c %d"


@pytest.fixture(autouse=True)
def no_claude_env(monkeypatch):
    for var in ("CLAUDE_CONFIG_DIR", "CLAUDE_PROJECT_DIR", "CLAUDE_ENV_FILE", "VIRTUAL_ENV", "PYTHONHOME"):
        monkeypatch.delenv(var, raising=False)


def make_project(path, venv=True, contextrc=None, marker="pyproject.toml"):
    path.mkdir(parents=True)
    (path / marker).write_text("")
    if venv:
        bindir = path / ".venv" / "bin"
        bindir.mkdir(parents=True)
        (bindir / "activate").write_text("# a venv's activate script\n")
        py = bindir / "python"
        py.write_text("#!/bin/sh\necho venv-python\n")
        py.chmod(0o755)
    if contextrc is not None:
        (path / ".contextrc").write_text(contextrc)
    return path


def allow(path):
    ctxd("allow", str(path), script=True, check=0)


class Session:
    """One Claude Code session's env files: session-env/<id>/<event>-hook-0.sh."""

    def __init__(self, base, env=None):
        self.dir = Path(base) / ".claude" / "session-env" / "6c306dce-548e-45a0-a253-e5277eb99d45"
        self.dir.mkdir(parents=True)
        self.env = dict(os.environ if env is None else env)

    def file(self, event):
        return self.dir / f"{event.lower()}-hook-0.sh"

    def hook(self, event, cwd, old_cwd=None, file_path=None, env=None):
        name = {"SessionStart": "session_start.json", "CwdChanged": "cwd_changed.json",
                "FileChanged": "file_changed.json"}[event]
        text = (CONTRACTS / name).read_text()
        for key, value in (("__OLD_CWD__", old_cwd), ("__FILE__", file_path), ("__CWD__", cwd),
                           ("__TRANSCRIPT__", "")):
            text = text.replace(key, json.dumps(str(value or ""))[1:-1])
        if event == "CwdChanged":  # Claude Code empties these before the CwdChanged hooks run
            for ev in ("CwdChanged", "FileChanged"):
                if self.file(ev).exists():
                    self.file(ev).write_text("")
        run_env = dict(self.env if env is None else env, CLAUDE_ENV_FILE=str(self.file(event)))
        return ctxd("chat", "hook", "claude", input=text.encode(), env=run_env, text=False, script=True, check=0)

    def files(self):
        return [str(self.file(ev)) for ev in ("SessionStart", "CwdChanged", "FileChanged") if self.file(ev).exists()]

    def bash_tool(self, shell, cwd, env=None):
        """What Claude Code's Bash tool sees: a fresh non-interactive shell that sources the
        env files in order; (environment, `command -v python`)."""
        script = "".join(f". '{f}'\n" for f in self.files())
        script += "command -v python || echo no-python; env -0"
        argv = {"bash": [require("bash"), "--noprofile", "--norc", "-c", script],
                "zsh": [require("zsh"), "-f", "-c", script]}[shell]
        r = subprocess.run(argv, cwd=cwd, env=self.env if env is None else env, capture_output=True, timeout=60)
        assert r.returncode == 0 and r.stderr == b"", r.stderr.decode()
        which, _, rest = r.stdout.partition(b"\n")
        out = dict(e.split("=", 1) for e in rest.decode("utf-8", "surrogateescape").split("\0") if "=" in e)
        for k in ("PWD", "OLDPWD", "SHLVL", "_"):
            out.pop(k, None)
        return out, which.decode()


def clean(env):
    out = dict(env)
    for k in ("PWD", "OLDPWD", "SHLVL", "_"):
        out.pop(k, None)
    return out


def log_text():
    try:
        return Path(paths.log_file()).read_text()
    except FileNotFoundError:
        return ""


# -- entering, moving inside, leaving ---------------------------------------------------------------

@pytest.mark.parametrize("shell", SHELLS)
def test_session_start_gives_the_bash_tool_the_trusted_projects_venv(shell, tmp_path):
    proj = make_project(tmp_path / "proj")
    allow(proj)
    s = Session(tmp_path)
    r = s.hook("SessionStart", proj)
    f = s.file("SessionStart")
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    env, which = s.bash_tool(shell, proj)
    assert which == f"{proj}/.venv/bin/python"
    assert env["VIRTUAL_ENV"] == f"{proj}/.venv"
    assert env["CTXD_ROOT"] == str(proj)
    path = env["PATH"].split(":")
    assert path[0] == f"{proj}/.venv/bin" and path[1:] == os.environ["PATH"].split(":")
    assert "" not in path
    # watchPaths: the project's .contextrc (not there yet) and its trust record, never a directory
    out = json.loads(r.stdout)
    watch = out["hookSpecificOutput"]["watchPaths"]
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert str(proj / ".contextrc") in watch
    assert not any(os.path.isdir(p) for p in watch)


@pytest.mark.parametrize("shell", SHELLS)
def test_cd_inside_the_project_keeps_it_and_leaving_clears_it(shell, tmp_path):
    proj = make_project(tmp_path / "proj", contextrc='[env]\nGREETING = "hello"\n')
    (proj / "src").mkdir()
    allow(proj)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    s = Session(tmp_path)
    before, which0 = s.bash_tool(shell, proj)
    s.hook("SessionStart", proj)
    s.hook("CwdChanged", proj / "src", old_cwd=proj)
    env, which = s.bash_tool(shell, proj / "src")
    assert which == f"{proj}/.venv/bin/python" and env["GREETING"] == "hello"
    s.hook("CwdChanged", outside, old_cwd=proj / "src")
    env, which = s.bash_tool(shell, outside)
    assert which == which0
    assert env == before  # VIRTUAL_ENV, GREETING, CTXD_* gone, PATH as it was
    s.hook("CwdChanged", proj, old_cwd=outside)
    env, which = s.bash_tool(shell, proj)
    assert which == f"{proj}/.venv/bin/python" and env["GREETING"] == "hello"


@pytest.mark.parametrize("shell", SHELLS)
def test_moving_between_projects_leaves_nothing_of_the_first(shell, tmp_path):
    a = make_project(tmp_path / "a", contextrc='[env]\nONLY_A = "1"\nSHARED = "from a"\n')
    b = make_project(tmp_path / "b", venv=False, contextrc='[env]\nSHARED = "from b"\n', marker="package.json")
    (b / "node_modules" / ".bin").mkdir(parents=True)
    allow(a)
    allow(b)
    s = Session(tmp_path)
    before, _ = s.bash_tool(shell, a)
    s.hook("SessionStart", a)
    s.hook("CwdChanged", b, old_cwd=a)
    env, which = s.bash_tool(shell, b)
    assert "ONLY_A" not in env and "VIRTUAL_ENV" not in env and env["SHARED"] == "from b"
    assert env["CTXD_ROOT"] == str(b)
    assert env["PATH"].split(":") == [f"{b}/node_modules/.bin"] + before["PATH"].split(":")


def test_claude_started_from_an_activated_shell_leaves_cleanly(tmp_path):
    """Claude Code inherits the shell's activation (CTXD_STATE and all): leaving the project in
    the agent undoes it, as the cd hook would."""
    proj = make_project(tmp_path / "proj", contextrc='[env]\nGREETING = "hello"\n')
    allow(proj)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    plain = clean(os.environ)
    r = subprocess.run([require("bash"), "--noprofile", "--norc", "-c", 'eval "$(ctxd export bash)"; env -0'],
                       cwd=proj, env=dict(os.environ, PWD=str(proj)), capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    activated = dict(e.split("=", 1) for e in r.stdout.decode().split("\0") if "=" in e)
    assert activated["VIRTUAL_ENV"] == f"{proj}/.venv" and "CTXD_STATE" in activated
    s = Session(tmp_path, env=activated)
    s.hook("SessionStart", proj)
    env, which = s.bash_tool("bash", proj)
    assert which == f"{proj}/.venv/bin/python" and env["GREETING"] == "hello"
    s.hook("CwdChanged", outside, old_cwd=proj)
    env, which = s.bash_tool("bash", outside)
    assert env == plain and which == (shutil.which("python", path=plain["PATH"]) or "no-python")


def test_cwd_changed_follows_cwd_when_claude_code_put_the_shell_back(tmp_path):
    """Outside the directories the agent may work in, Claude Code resets the shell and fires
    CwdChanged with new_cwd the refused directory and cwd the one the next command runs in."""
    proj = make_project(tmp_path / "proj")
    allow(proj)
    s = Session(tmp_path)
    s.hook("SessionStart", proj)
    text = (CONTRACTS / "cwd_changed.json").read_text()
    payload = json.loads(text.replace("__TRANSCRIPT__", ""))
    payload.update(cwd=str(proj), old_cwd=str(proj), new_cwd="/tmp")
    r = subprocess.run([CTXD, "chat", "hook", "claude"], input=json.dumps(payload).encode(),
                       env=dict(s.env, CLAUDE_ENV_FILE=str(s.file("CwdChanged"))), capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    env, which = s.bash_tool("bash", proj)
    assert which == f"{proj}/.venv/bin/python"


@pytest.mark.parametrize("shell", SHELLS)
def test_file_changed_applies_an_edited_contextrc_once_allowed(shell, tmp_path):
    proj = make_project(tmp_path / "proj", contextrc='[env]\nGREETING = "hello"\n')
    allow(proj)
    s = Session(tmp_path)
    s.hook("SessionStart", proj)
    rc = proj / ".contextrc"
    rc.write_text(f'[env]\nGREETING = "bye"\nNASTY = {json.dumps(NASTY, ensure_ascii=False)}\n')
    r = s.hook("FileChanged", proj, file_path=rc)
    env, _ = s.bash_tool(shell, proj)
    assert "GREETING" not in env and "NASTY" not in env  # changed since allowed: nothing of it applies
    assert "changed since you allowed it" in json.loads(r.stdout)["systemMessage"]
    assert env["VIRTUAL_ENV"] == f"{proj}/.venv"  # the root is still trusted
    allow(proj)
    s.hook("FileChanged", proj, file_path=rc)
    env, _ = s.bash_tool(shell, proj)
    assert env["GREETING"] == "bye" and env["NASTY"] == NASTY


def test_a_resumed_session_starts_fresh_and_other_hooks_files_stay(tmp_path):
    """A resumed session keeps its session-env directory: SessionStart empties the CwdChanged file ctxd
    left there (it would be sourced after, and win), never another hook's file."""
    a = make_project(tmp_path / "a")
    b = make_project(tmp_path / "b", venv=False, marker="package.json")
    allow(a)
    allow(b)
    s = Session(tmp_path)
    s.hook("SessionStart", a)
    s.hook("CwdChanged", b, old_cwd=a)
    foreign = s.dir / "cwdchanged-hook-1.sh"
    foreign.write_text("export FROM_DIRENV=1\n")
    s.hook("SessionStart", a)  # claude --continue
    assert s.file("CwdChanged").read_text() == ""
    assert foreign.read_text() == "export FROM_DIRENV=1\n"
    script = "".join(f". '{f}'\n" for f in s.files() + [str(foreign)]) + "echo $CTXD_ROOT $FROM_DIRENV"
    r = subprocess.run([require("bash"), "--noprofile", "--norc", "-c", script], capture_output=True, text=True)
    assert r.stdout.split() == [str(a), "1"], r.stderr


# -- trust ------------------------------------------------------------------------------------------

def test_untrusted_root_gets_no_venv_and_the_user_is_told(tmp_path, isolated_paths):
    write_config(isolated_paths, "")  # no trusted tree: nothing is trusted until allowed
    proj = make_project(tmp_path / "proj", contextrc='[env]\nSECRET_TOKEN = "x"\n')
    s = Session(tmp_path)
    before, which0 = s.bash_tool("bash", proj)
    r = s.hook("SessionStart", proj)
    env, which = s.bash_tool("bash", proj)
    assert which == which0 and "VIRTUAL_ENV" not in env and "SECRET_TOKEN" not in env
    assert env["CTXD_ROOT"] == str(proj) and env["PATH"] == before["PATH"]  # as the cd hook: ctxd's own only
    out = json.loads(r.stdout)
    assert "is not trusted" in out["systemMessage"] and "ctxd allow" in out["systemMessage"]
    assert "SECRET_TOKEN" not in s.file("SessionStart").read_text()
    assert "additionalContext" not in out.get("hookSpecificOutput", {})  # never the model's to act on


def test_untrusted_contextrc_in_a_trusted_root_never_applies(tmp_path):
    proj = make_project(tmp_path / "proj", contextrc='[env]\nSECRET_TOKEN = "x"\n[path]\nprepend = ["tools"]\n')
    s = Session(tmp_path)
    s.hook("SessionStart", proj)
    env, which = s.bash_tool("bash", proj)
    assert "SECRET_TOKEN" not in env and f"{proj}/tools" not in env["PATH"].split(":")
    assert which == f"{proj}/.venv/bin/python"  # the trusted tree's markers apply, as in the cd hook


def test_the_same_warning_is_not_repeated_on_every_cd_inside_the_project(tmp_path, isolated_paths):
    write_config(isolated_paths, "")
    proj = make_project(tmp_path / "proj")
    (proj / "src").mkdir()
    s = Session(tmp_path)
    assert "systemMessage" in json.loads(s.hook("SessionStart", proj).stdout)
    r = s.hook("CwdChanged", proj / "src", old_cwd=proj)
    assert "systemMessage" not in json.loads(r.stdout or b"{}")


# -- never breaking Claude Code -----------------------------------------------------------------------

def test_session_start_context_and_env_in_one_output(tmp_path):
    from ctxd.memory.context import render
    from ctxd.memory.project import locate, open_store

    proj = make_project(tmp_path / "proj")
    allow(proj)
    p = locate(str(proj))
    with open_store(p) as store:
        store.add_many([dict(role="user", content="the deploy target is zebra-42", session="seed")])
        render.write(store, p.root)
    s = Session(tmp_path)
    out = json.loads(s.hook("SessionStart", proj).stdout)
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == "SessionStart" and "zebra-42" in spec["additionalContext"]
    assert str(proj / ".contextrc") in spec["watchPaths"]
    assert s.bash_tool("bash", proj)[1] == f"{proj}/.venv/bin/python"


def test_an_env_file_that_cannot_be_written_leaves_the_session_alone(tmp_path):
    proj = make_project(tmp_path / "proj")
    allow(proj)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the env dir should be\n")
    payload = (CONTRACTS / "session_start.json").read_text().replace("__CWD__", str(proj)).replace(
        "__TRANSCRIPT__", "")
    r = subprocess.run([CTXD, "chat", "hook", "claude"], input=payload.encode(), capture_output=True, timeout=60,
                       env=dict(os.environ, CLAUDE_ENV_FILE=str(blocker / "sessionstart-hook-0.sh")))
    assert r.returncode == 0 and r.stdout == b""
    assert len(r.stderr.decode().splitlines()) == 1 and "left as it was" in r.stderr.decode()
    assert blocker.read_text() == "a file where the env dir should be\n"
    assert "chat hook claude: CLAUDE_ENV_FILE: " in log_text() and str(blocker) in log_text()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_payload_without_a_usable_cwd_keeps_what_the_file_had(tmp_path):
    proj = make_project(tmp_path / "proj")
    allow(proj)
    s = Session(tmp_path)
    s.hook("SessionStart", proj)
    s.hook("CwdChanged", proj, old_cwd=proj)
    kept = s.file("CwdChanged").read_text()
    gone = tmp_path / "gone"
    r = subprocess.run([CTXD, "chat", "hook", "claude"], capture_output=True, timeout=60,
                       input=json.dumps({"session_id": "x", "hook_event_name": "CwdChanged", "cwd": str(gone),
                                         "old_cwd": str(proj), "new_cwd": str(gone)}).encode(),
                       env=dict(s.env, CLAUDE_ENV_FILE=str(s.file("CwdChanged"))))
    assert r.returncode == 0 and r.stdout == b"" and len(r.stderr.splitlines()) == 1
    assert s.file("CwdChanged").read_text() == kept
    assert f"{gone} does not exist" in log_text()


def test_a_corrupt_inherited_state_is_ignored_not_fatal(tmp_path):
    proj = make_project(tmp_path / "proj")
    allow(proj)
    s = Session(tmp_path, env=dict(os.environ, CTXD_STATE="not-a-state"))
    r = s.hook("SessionStart", proj)
    env, which = s.bash_tool("bash", proj)
    assert which == f"{proj}/.venv/bin/python" and env["CTXD_STATE"] != "not-a-state"
    assert "CTXD_STATE is corrupt" in json.loads(r.stdout)["systemMessage"]


def test_without_claude_env_file_nothing_is_written(tmp_path):
    proj = make_project(tmp_path / "proj")
    allow(proj)
    payload = (CONTRACTS / "cwd_changed.json").read_text().replace("__CWD__", str(proj)).replace(
        "__OLD_CWD__", str(proj)).replace("__TRANSCRIPT__", "")
    r = subprocess.run([CTXD, "chat", "hook", "claude"], input=payload.encode(), capture_output=True, timeout=60)
    assert r.returncode == 0 and r.stdout == b"" and r.stderr == b""
    assert log_text() == ""


# -- install -------------------------------------------------------------------------------------------

def test_install_adds_the_env_events_and_uninstall_gives_the_file_back(tmp_path):
    proj = make_project(tmp_path / "proj")
    (proj / ".git").mkdir()
    settings = proj / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text('{\n  "permissions": {"allow": ["Bash(ls:*)"]}\n}')
    original = settings.read_bytes()
    r = subprocess.run([CTXD, "chat", "install", "claude"], cwd=proj, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    hooks = json.loads(settings.read_text())["hooks"]
    for event in ("SessionStart", "CwdChanged", "FileChanged"):
        [group] = hooks[event]
        [h] = group["hooks"]
        assert h["command"].endswith(" chat hook claude")
        assert "matcher" not in group or event == "SessionStart"
    r = subprocess.run([CTXD, "chat", "install", "claude", "--uninstall"], cwd=proj, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert settings.read_bytes() == original


def test_the_env_hook_imports_nothing_heavy(tmp_path):
    """CwdChanged runs on every cd of the agent: the hook path loads no click, psutil, shellingham
    or platformdirs (the console script dispatches `chat hook` before the click app)."""
    import sys

    proj = make_project(tmp_path / "proj")
    allow(proj)
    s = Session(tmp_path)
    payload = (CONTRACTS / "cwd_changed.json").read_text().replace("__CWD__", str(proj)).replace(
        "__OLD_CWD__", str(tmp_path)).replace("__TRANSCRIPT__", "")
    code = ("import sys\nsys.argv = ['ctxd', 'chat', 'hook', 'claude']\nfrom ctxd.fastpath import console_entry\n"
            "try:\n    console_entry.main()\nexcept SystemExit as e:\n    code = e.code\n"
            "heavy = sorted(m for m in ('click', 'psutil', 'shellingham', 'platformdirs') if m in sys.modules)\n"
            "sys.stderr.write('HEAVY=' + ','.join(heavy))\nsys.exit(code)\n")
    r = subprocess.run([sys.executable, "-c", code], input=payload.encode(), capture_output=True, timeout=60,
                       env=dict(os.environ, CLAUDE_ENV_FILE=str(s.file("CwdChanged"))))
    assert r.returncode == 0, r.stderr
    assert r.stderr.decode().rsplit("HEAVY=", 1)[-1] == ""
    assert f"{proj}/.venv" in s.file("CwdChanged").read_text()  # it did the work


def test_session_start_in_a_vanished_directory_says_so_once(tmp_path):
    """Both halves of SessionStart (the env file, the context) fail for a cwd that is gone: both are
    logged, one line on stderr, nothing on stdout, exit 0, the env file as it was."""
    s = Session(tmp_path)
    s.file("SessionStart").write_text("# what was there\n")
    gone = tmp_path / "gone"
    payload = (CONTRACTS / "session_start.json").read_text().replace("__CWD__", str(gone)).replace(
        "__TRANSCRIPT__", "")
    r = subprocess.run([CTXD, "chat", "hook", "claude"], input=payload.encode(), capture_output=True, timeout=60,
                       env=dict(s.env, CLAUDE_ENV_FILE=str(s.file("SessionStart"))))
    assert r.returncode == 0 and r.stdout == b""
    assert len(r.stderr.decode().splitlines()) == 1, r.stderr
    assert s.file("SessionStart").read_text() == "# what was there\n"
    log = log_text()
    assert "chat hook claude: CLAUDE_ENV_FILE: " in log and log.count(f"{gone}") >= 2
