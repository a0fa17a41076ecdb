"""The console script's fast exit (ctxd.fastpath.console_entry.run): once ``chat hook``,
``recall`` or ``context`` has answered, the process ends with os._exit, its output flushed,
without the interpreter's teardown. What must survive that: every byte of the output through
a pipe, the exit code (an error's too) and what the command stored. ``main`` (what console
scripts installed earlier call) ends the ordinary way with the same output."""

import json
import os
import subprocess
import sys
import tomllib

import pytest

from ctxdtest import ctxd

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# a console script as pip writes it, calling *entry*; an atexit handler shows whether the
# interpreter's teardown ran
SCRIPT = ("import atexit, json, sys\n"
          "atexit.register(lambda: sys.stderr.write('[teardown]'))\n"
          "sys.argv = ['ctxd'] + json.loads(sys.argv[1])\n"
          "from ctxd.fastpath import console_entry\n"
          "sys.exit(getattr(console_entry, sys.argv.pop(1))())\n")


def entry(name, args, cwd, input=None, env=None):
    return subprocess.run([sys.executable, "-c", SCRIPT, json.dumps([name, *args])], cwd=cwd, input=input,
                          env=dict(env or os.environ, PWD=str(cwd)), capture_output=True, text=True, timeout=120)


class Project:
    def __init__(self, path, env):
        self.path, self.env = path, env

    def run(self, name, *args, input=None):
        return entry(name, args, self.path, input=input, env=self.env)


@pytest.fixture(scope="module")
def proj(tmp_path_factory):
    """A project with 400 long turns (`ctxd chat import`): answers longer than a pipe's buffer."""
    home = tmp_path_factory.mktemp("console-entry-home")  # the module's own user: the store outlives a test
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_DATA_HOME=str(home / ".local/share"), XDG_STATE_HOME=str(home / ".local/state"),
               XDG_CACHE_HOME=str(home / ".cache"))
    proj = tmp_path_factory.getbasetemp() / "console-entry-proj"
    (proj / ".git").mkdir(parents=True)
    lines = [json.dumps({"role": ("user", "assistant")[i % 2], "session": f"s{i // 40}",
                         "time": f"2026-03-{1 + i // 40:02d}T10:{i % 60:02d}:00Z",
                         "content": f"turn {i}: the zebra service listens on port {8000 + i}. " + "detail " * 60})
             for i in range(400)]
    src = proj.parent / "console-entry.jsonl"
    src.write_text("\n".join(lines) + "\n")
    ctxd("chat", "import", str(src), "--format", "jsonl", cwd=proj, env=env, check=0)
    return Project(proj, env)


def test_the_console_script_calls_run_and_main_still_answers():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        scripts = tomllib.load(f)["project"]["scripts"]
    assert scripts["ctxd"] == "ctxd.fastpath.console_entry:run"
    from ctxd.fastpath import console_entry

    assert callable(console_entry.main)  # scripts installed before run() existed call it


@pytest.mark.parametrize("args", [["recall", "zebra port", "--budget", "40000"],
                                  ["recall", "zebra port", "--json", "--budget", "40000"],
                                  ["context", "--format", "json", "--budget", "40000"]])
def test_all_output_and_the_exit_code_arrive_without_teardown(proj, args):
    fast, plain = proj.run("run", *args), proj.run("main", *args)
    assert fast.returncode == plain.returncode == 0, (fast.stderr, plain.stderr)
    assert len(fast.stdout) > 65_536 and fast.stdout.endswith("\n")  # more than a pipe buffer holds
    assert fast.stdout == plain.stdout
    assert "[teardown]" not in fast.stderr and "[teardown]" in plain.stderr
    if "--json" in args or "json" in args:
        json.loads(fast.stdout)


def test_an_error_exit_code_arrives(tmp_path):
    (tmp_path / "empty" / ".git").mkdir(parents=True)
    fast, plain = entry("run", ["recall", "zebra"], tmp_path / "empty"), entry("main", ["recall", "zebra"],
                                                                                tmp_path / "empty")
    assert fast.returncode == plain.returncode == 4  # NoStore: nothing recorded here
    assert "no conversation recorded" in fast.stderr and "[teardown]" not in fast.stderr
    assert fast.stderr.replace("[teardown]", "") == plain.stderr.replace("[teardown]", "")


def test_click_answers_end_the_ordinary_way(proj):
    bad = proj.run("run", "recall", "--budget", "3", "zebra")  # a usage error: click's to print
    assert bad.returncode == 2 and "--budget" in bad.stderr and "[teardown]" in bad.stderr
    help_ = proj.run("run", "context", "--help")
    assert help_.returncode == 0 and "Usage:" in help_.stdout and "[teardown]" in help_.stderr


def test_a_prompt_hook_answers_and_its_prompt_is_stored(proj, tmp_path):
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    payload = {"session_id": "fast-exit", "cwd": str(proj.path), "transcript_path": str(transcript),
               "hook_event_name": "UserPromptSubmit", "prompt": "which port does the zebra service listen on?"}
    p = proj.run("run", "chat", "hook", "claude", input=json.dumps(payload))
    assert p.returncode == 0 and "[teardown]" not in p.stderr, p.stderr
    out = json.loads(p.stdout)
    assert "zebra service" in out["hookSpecificOutput"]["additionalContext"]
    stored = ctxd("chat", "export", "--format", "jsonl", cwd=proj.path, env=proj.env, check=0).stdout
    assert "which port does the zebra service listen on?" in stored  # committed before the exit
