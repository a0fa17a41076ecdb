"""ctxd with the real Claude Code, Codex CLI and Gemini CLI, run headless against a stub model.

Each test is one user's story with one CLI, in its own HOME (the CLI's config
dir inside it) and a tmp git project:

1. ``ctxd chat install X`` (the real command, from the project dir);
2. session 1: a prompt that states a fact;
3. session 2 (a new session): the prompts are stored as typed, with the right
   roles; the request session 2 sent the model (recorded by the stub) carries
   session 1's fact: ctxd's SessionStart injection reached the model;
4. the transcript the CLI wrote imports into a fresh project with the same
   counts, and adds 0 to the hook-fed store;
5. ``ctxd chat install X --uninstall`` gives the settings files back byte for byte.

Claude Code's Bash tool: the stub model asks for a Bash command (``bash_then_ok``,
``bash_steps``) and the tool result Claude Code sends back shows the project's
venv, which ctxd's SessionStart / CwdChanged hooks put in ``$CLAUDE_ENV_FILE``.

Codex: hooks run only once trusted; they are trusted as a user trusts them
(the folder trust prompt and ``/hooks`` write records into config.toml; see
realkit.trust_codex), and ``codex exec resume`` plus a third session store each
prompt once.

The CLIs come from tests/realcli/install.sh (pinned npm versions in a cache
outside the repository); without them every test here skips with
"realcli: <cli> not installed", which CI refuses.
"""

import json
import os
import subprocess

import pytest

from realkit import World, cli_path, ctxd_exe, trust_codex, wait_for_env_file
from stub_model import StubModel, bash_steps, bash_then_ok, offers_tool, tool_results

pytestmark = pytest.mark.realcli

FACT = "zebra-42"
PROMPT1 = f"Remember this: the deploy target is {FACT} on port 8123."
PROMPT2 = "Which deploy target did I name before?"


def need(name):
    if cli_path(name) is None:
        pytest.skip(f"realcli: {name} not installed")
    if ctxd_exe() is None:
        pytest.skip("realcli: the ctxd console script is not installed")


@pytest.fixture
def stub():
    with StubModel() as s:
        yield s


@pytest.fixture
def world(tmp_path, stub, isolated_paths):
    return World(tmp_path, stub, home=isolated_paths)


def snapshot(*paths):
    """{path: bytes or None} of files, to compare after uninstall."""
    out = {}
    for p in paths:
        try:
            with open(p, "rb") as f:
                out[p] = f.read()
        except FileNotFoundError:
            out[p] = None
    return out


def conversation(rows):
    """(kind, role, content) of the prompts and replies, in order."""
    return [(r["kind"], r["role"], r["content"]) for r in rows if r["kind"] in ("prompt", "reply")]


def prompts(rows):
    return [r["content"] for r in rows if r["kind"] == "prompt"]


def assert_no_injection_stored(rows):
    for r in rows:
        if r["kind"] == "prompt":
            assert "<hook_context>" not in r["content"] and FACT not in r["content"].replace(PROMPT1, ""), r


def import_counts(world, files):
    """Import *files* into a fresh project of the same user; its conversation (kind, role, content)."""
    other = os.path.join(world.base, "other")
    os.makedirs(other, exist_ok=True)
    subprocess.run(["git", "init", "-q", other], check=True)
    for f in files:
        r = world.ctxd("chat", "import", f, cwd=other)
        assert " added" in r.stdout, r.stdout + r.stderr
    return conversation(world.log(project=other))


def assert_reimport_adds_nothing(world, files):
    for f in files:
        r = world.ctxd("chat", "import", f)
        assert ": 0 added," in r.stdout, f"re-importing {f} into the hook-fed store: {r.stdout}{r.stderr}"


def assert_transcripts_agree(world, tool, count, rows):
    """The CLI's own transcripts (*count* files) import to exactly what the hooks recorded, and
    importing them into the hook-fed store adds nothing and changes nothing."""
    files = world.transcripts(tool)
    assert len(files) == count, files
    assert sorted(import_counts(world, files)) == sorted(conversation(rows))
    assert_reimport_adds_nothing(world, files)
    assert conversation(world.log()) == conversation(rows)


def session2_request_text(stub, api):
    """What session 2 sent the model, from the start of ctxd's SessionStart context on (the
    block ctxd renders, "# Conversation context: ..."; Gemini wraps it in <hook_context>)."""
    calls = stub.model_calls(api)
    assert calls, f"session 2 sent the model nothing (requests: {[(r.method, r.path) for r in stub.requests]})"
    sent = "\n".join(c.text() for c in calls)
    at = sent.find("# Conversation context:")
    assert at >= 0, "ctxd's SessionStart context is not in what session 2 sent the model"
    return sent[at:at + 10_000]


# -- Claude Code -----------------------------------------------------------------------

def test_claude_code(world, stub):
    need("claude")
    settings = os.path.join(world.project, ".claude", "settings.json")
    local = os.path.join(world.project, ".claude", "settings.local.json")
    before = snapshot(settings, local)

    out = world.ctxd("chat", "install", "claude").stdout
    assert "installed" in out, out

    world.claude(PROMPT1)
    rows = world.log()
    assert conversation(rows) == [("prompt", "user", PROMPT1), ("reply", "assistant", "OK")], rows
    assert all(r["source"] == "claude" for r in rows if r["kind"] in ("prompt", "reply"))

    stub.clear()
    world.claude(PROMPT2)
    sent = session2_request_text(stub, "anthropic")
    assert FACT in sent, "ctxd's SessionStart context in session 2's request lacks session 1's fact"
    rows = world.log()
    assert conversation(rows) == [("prompt", "user", PROMPT1), ("reply", "assistant", "OK"),
                                  ("prompt", "user", PROMPT2), ("reply", "assistant", "OK")], rows
    assert len({r["session"] for r in rows if r["kind"] == "prompt"}) == 2
    assert_no_injection_stored(rows)

    assert_transcripts_agree(world, "claude", 2, rows)

    world.ctxd("chat", "install", "claude", "--uninstall")
    assert snapshot(settings, local) == before


def test_claude_code_keeps_the_users_settings(world, stub):
    """Install into a settings file the user wrote, run a session, uninstall: the file as it was."""
    need("claude")
    settings = os.path.join(world.project, ".claude", "settings.json")
    os.makedirs(os.path.dirname(settings))
    with open(settings, "w") as f:
        f.write('{\n    "permissions": {"allow": ["Bash(ls:*)"]},\n    "env": {"FOO": "1"}\n}\n')
    before = snapshot(settings)
    world.ctxd("chat", "install", "claude")
    world.claude(PROMPT1)
    assert prompts(world.log()) == [PROMPT1]
    world.ctxd("chat", "install", "claude", "--uninstall")
    assert snapshot(settings) == before


# -- Claude Code's Bash tool gets the project's environment (CLAUDE_ENV_FILE) -----------------

WHICH_PYTHON = 'command -v python; echo "VIRTUAL_ENV=$VIRTUAL_ENV"; echo "shell=${ZSH_VERSION:+zsh}${BASH_VERSION:+bash}"'


def python_project(world):
    """The world's project with a real venv (python -m venv) and a marker, trusted."""
    import sys

    with open(os.path.join(world.project, "pyproject.toml"), "w") as f:
        f.write('[project]\nname = "demo"\nversion = "0"\n')
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", os.path.join(world.project, ".venv")], check=True)
    world.ctxd("allow", world.project)
    return os.path.join(world.project, ".venv")


def bash_results(stub):
    """The Bash tool results Claude Code sent the model, in order (from its last request)."""
    calls = [c for c in stub.model_calls("anthropic") if offers_tool(c, "Bash")]
    assert calls, "Claude Code sent no request offering the Bash tool"
    return [text for _id, text in tool_results(calls[-1])]


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_claude_code_bash_tool_runs_in_the_projects_venv(world, stub, shell):
    """The stub model asks for `command -v python; echo $VIRTUAL_ENV`; Claude Code runs it in its
    Bash tool (a non-interactive shell, no cd hook) and sends the result back: the project's venv,
    once `ctxd chat install claude` is in (and not before: that is ctxd's doing)."""
    from shellkit import require

    need("claude")
    world.env["SHELL"] = require(shell)  # the Bash tool runs the user's shell: bash or zsh
    venv = python_project(world)
    local = os.path.join(world.project, ".claude", "settings.local.json")
    before = snapshot(local)

    stub.reply = bash_then_ok(WHICH_PYTHON)
    world.claude("Which python does this project use?", "--allowedTools", "Bash")
    [result] = bash_results(stub)
    assert f"shell={shell}" in result, result
    assert venv not in result, f"without ctxd's hooks the Bash tool already had the venv: {result}"

    world.ctxd("chat", "install", "claude")
    stub.clear()
    world.claude("Which python does this project use?", "--allowedTools", "Bash")
    [result] = bash_results(stub)
    lines = result.splitlines()
    assert lines[0] == os.path.join(venv, "bin", "python"), result
    assert f"VIRTUAL_ENV={venv}" in lines and f"shell={shell}" in lines, result

    world.ctxd("chat", "install", "claude", "--uninstall")
    assert snapshot(local) == before


def test_claude_code_bash_tool_leaves_and_reenters_the_project(world, stub):
    """--add-dir lets the agent cd out of the project: CwdChanged clears the environment there, and
    brings it back on the way in."""
    need("claude")
    venv = python_project(world)
    other = os.path.join(world.base, "notes")
    os.makedirs(other)
    world.ctxd("chat", "install", "claude")

    def wait(step):  # the stub answers at once; a model takes longer than the CwdChanged hook
        if step == 1:
            wait_for_env_file(world, "CwdChanged", f": {other}: no project")
        elif step == 3:
            wait_for_env_file(world, "CwdChanged", f": {world.project} (")

    stub.reply = bash_steps([f"cd {other}", WHICH_PYTHON, f"cd {world.project}", WHICH_PYTHON], before=wait)
    world.claude("Look around.", "--allowedTools", "Bash", "--add-dir", other)
    results = bash_results(stub)
    assert len(results) == 4, results
    outside, inside = results[1].splitlines(), results[3].splitlines()
    assert outside[0] != os.path.join(venv, "bin", "python") and "VIRTUAL_ENV=" in outside, results[1]
    assert inside[0] == os.path.join(venv, "bin", "python") and f"VIRTUAL_ENV={venv}" in inside, results[3]


def test_claude_code_resumed_session_starts_in_the_projects_environment(world, stub):
    """`claude --continue` keeps the session's env files: the CwdChanged file of where the last run
    ended must not win over the new SessionStart in the project."""
    need("claude")
    venv = python_project(world)
    other = os.path.join(world.base, "web")
    os.makedirs(other)
    with open(os.path.join(other, "package.json"), "w") as f:
        f.write("{}\n")
    world.ctxd("allow", other)
    world.ctxd("chat", "install", "claude")

    def wait(step):
        if step == 1:
            wait_for_env_file(world, "CwdChanged", f": {other} (")

    stub.reply = bash_steps([f"cd {other}", WHICH_PYTHON], before=wait)
    world.claude("Look at the web part.", "--allowedTools", "Bash", "--add-dir", other)
    assert "VIRTUAL_ENV=" in bash_results(stub)[1].splitlines()
    stub.clear()
    stub.reply = bash_steps([WHICH_PYTHON], earlier=2)
    world.claude("And now?", "--allowedTools", "Bash", "--add-dir", other, "--continue")
    result = bash_results(stub)[2]
    assert result.splitlines()[0] == os.path.join(venv, "bin", "python"), result
    assert f"VIRTUAL_ENV={venv}" in result.splitlines(), result


def test_claude_code_bash_tool_follows_an_edited_contextrc(world, stub):
    """SessionStart hands Claude Code the .contextrc as a watchPath: when the agent edits it, FileChanged
    writes the environment again, and an edited (so no longer trusted) .contextrc stops applying."""
    need("claude")
    python_project(world)
    rc = os.path.join(world.project, ".contextrc")
    with open(rc, "w") as f:
        f.write('[env]\nGREETING = "hello"\n')
    world.ctxd("allow", world.project)
    world.ctxd("chat", "install", "claude")

    def wait(step):
        if step == 2:
            wait_for_env_file(world, "FileChanged", "changed since you allowed it")

    show = 'echo "GREETING=$GREETING"'
    stub.reply = bash_steps([show, f"printf '[env]\\nGREETING = \"bye\"\\n' > {rc}", show], before=wait)
    world.claude("Change the greeting.", "--allowedTools", "Bash")
    results = bash_results(stub)
    assert len(results) == 3, results
    assert results[0].strip() == "GREETING=hello", results[0]
    with open(rc) as f:
        assert "bye" in f.read()
    assert results[2].strip() == "GREETING=", results[2]


# -- Codex -------------------------------------------------------------------------------

def test_codex(world, stub):
    need("codex")
    hooks_json = os.path.join(world.project, ".codex", "hooks.json")
    before = snapshot(hooks_json)

    out = world.ctxd("chat", "install", "codex").stdout
    assert "installed" in out, out
    assert "codex_hooks" not in out, f"ctxd recommends the deprecated [features] codex_hooks: {out}"

    # Installed but not trusted: Codex skips the hooks silently (ctxd must say so, not pretend).
    trusted = trust_codex(world, world.project)
    assert len(trusted) == 3, trusted

    r = world.codex(PROMPT1)
    assert "deprecated" not in r.stderr.lower(), r.stderr
    rows = world.log()
    assert conversation(rows) == [("prompt", "user", PROMPT1), ("reply", "assistant", "OK")], rows

    stub.clear()
    world.codex(PROMPT2)
    assert FACT in session2_request_text(stub, "openai"), "session 2's request does not carry session 1's fact"

    world.codex("And the port?", resume=True)
    world.codex("Thanks, that is all.")
    rows = world.log()
    assert prompts(rows) == [PROMPT1, PROMPT2, "And the port?", "Thanks, that is all."], conversation(rows)
    assert [r["role"] for r in rows if r["kind"] == "reply"] == ["assistant"] * 4
    assert_no_injection_stored(rows)
    sessions = [r["session"] for r in rows if r["kind"] == "prompt"]
    assert sessions[1] == sessions[2] and len(set(sessions)) == 3, sessions

    assert_transcripts_agree(world, "codex", 3, rows)

    world.ctxd("chat", "install", "codex", "--uninstall")
    assert snapshot(hooks_json) == before


# -- Gemini CLI --------------------------------------------------------------------------

def test_gemini_cli(world, stub):
    need("gemini")
    settings = os.path.join(world.project, ".gemini", "settings.json")
    before = snapshot(settings)

    out = world.ctxd("chat", "install", "gemini").stdout
    assert "installed" in out, out

    world.gemini(PROMPT1)
    rows = world.log()
    assert conversation(rows) == [("prompt", "user", PROMPT1), ("reply", "assistant", "OK")], rows
    routing = [r for r in stub.requests if r.kind == "routing"]
    assert routing, "Gemini made no routing call (the stub's schema answer is untested)"

    stub.clear()
    world.gemini(PROMPT2)
    assert FACT in session2_request_text(stub, "gemini"), "session 2's request does not carry session 1's fact"
    rows = world.log()
    assert conversation(rows) == [("prompt", "user", PROMPT1), ("reply", "assistant", "OK"),
                                  ("prompt", "user", PROMPT2), ("reply", "assistant", "OK")], rows
    assert_no_injection_stored(rows)

    assert_transcripts_agree(world, "gemini", 2, rows)

    world.ctxd("chat", "install", "gemini", "--uninstall")
    assert snapshot(settings) == before


def test_codex_user_scope_with_notify(world, stub):
    """--user: hooks in $CODEX_HOME/hooks.json and notify in config.toml both record; with
    `codex exec resume` (notify then lists every prompt of the thread) each prompt is stored once."""
    import tomllib

    need("codex")
    cfg = os.path.join(world.codex_home, "config.toml")
    hooks_json = os.path.join(world.codex_home, "hooks.json")
    with open(cfg) as f:
        original = tomllib.loads(f.read())
    out = world.ctxd("chat", "install", "codex", "--user").stdout
    assert "notify" in out, out
    trust_codex(world, world.project)

    world.codex(PROMPT1)
    world.codex("And the port?", resume=True)
    world.codex("One more thing.", resume=True)
    stub.clear()
    world.codex(PROMPT2)
    assert FACT in session2_request_text(stub, "openai")
    rows = world.log()
    assert prompts(rows) == [PROMPT1, "And the port?", "One more thing.", PROMPT2], conversation(rows)
    assert [r["content"] for r in rows if r["kind"] == "reply"] == ["OK"] * 4
    files = world.transcripts("codex")
    assert len(files) == 2, files
    assert_reimport_adds_nothing(world, files)

    world.ctxd("chat", "install", "codex", "--user", "--uninstall")
    with open(cfg) as f:
        after = tomllib.loads(f.read())
    assert "notify" not in after
    # what is left is the user's: their config plus the trust they gave (projects, hooks.state)
    assert {k: v for k, v in after.items() if k not in ("projects", "hooks")} == original
    assert not os.path.exists(hooks_json) or "ctxd" not in open(hooks_json).read()


# -- ctxd doctor agrees with the real CLIs ---------------------------------------------------

def doctor_check(world, tool):
    r = world.ctxd("doctor", "--json", check=False)
    assert r.returncode in (0, 1), r.stderr
    checks = {c["name"]: c for c in json.loads(r.stdout)["checks"]}
    return checks.get(f"{tool} hooks")


def test_doctor_tells_when_codex_will_run_the_hooks(world, stub):
    need("codex")
    world.ctxd("chat", "install", "codex")
    c = doctor_check(world, "codex")
    assert c["status"] == "warn" and "/hooks" in c["fix"], c
    world.codex(PROMPT1)
    assert world.log() == [], "Codex ran hooks doctor calls untrusted"
    trust_codex(world, world.project)
    c = doctor_check(world, "codex")
    assert c["status"] == "ok", c
    world.codex(PROMPT1)
    assert prompts(world.log()) == [PROMPT1], "doctor says ok, but Codex did not run the hooks"


def test_doctor_tells_when_gemini_will_run_the_hooks(world, stub):
    need("gemini")
    world.ctxd("chat", "install", "gemini")
    del world.env["GEMINI_CLI_TRUST_WORKSPACE"]
    c = doctor_check(world, "gemini")
    assert c["status"] == "warn" and "trust" in c["fix"], c
    r = world.run([cli_path("gemini"), "-p", PROMPT1], check=False)
    assert r.returncode != 0 or world.log() == [], "Gemini ran project hooks in a folder doctor calls untrusted"
    with open(os.path.join(world.gemini_dir, "trustedFolders.json"), "w") as f:
        json.dump({world.project: "TRUST_FOLDER"}, f)
    c = doctor_check(world, "gemini")
    assert c["status"] == "ok", c
    world.gemini(PROMPT1)
    assert prompts(world.log()) == [PROMPT1], "doctor says ok, but Gemini did not run the hooks"
