"""Running the real AI CLIs against the stub model, in an isolated HOME and a tmp git project.

Shared by tests/realcli/test_real_clis.py and benchmarks/bench_realcli.py.
The CLIs are the npm packages tests/realcli/install.sh puts in a cache
outside the repository; ``cli_path(name)`` finds them (``CTXD_REALCLI_BIN``
names another bin directory).
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time

# Read once at import, before a test's fixtures point HOME/XDG_* at tmp dirs.
_CACHE = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
BIN_DIR = os.environ.get("CTXD_REALCLI_BIN") or os.path.join(_CACHE, "ctxd-ci", "npm", "node_modules", ".bin")
NODE = shutil.which("node")

# Variables of the machine (or of an AI client running these tests) that must not reach the CLIs.
_DROP_PREFIXES = ("ANTHROPIC_", "CLAUDE", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "VERTEX", "AWS_", "CTXD_")


def cli_path(name):
    """The installed CLI's path, or None."""
    p = os.path.join(BIN_DIR, name)
    return p if os.path.isfile(p) and os.access(p, os.X_OK) and NODE else None


def ctxd_exe():
    """The ctxd console script of this interpreter (what a user runs)."""
    p = os.path.join(sysconfig.get_path("scripts"), "ctxd")
    if os.path.isfile(p):
        return p
    return shutil.which("ctxd")


class World:
    """One user: a HOME with each CLI's config pointed at the stub, and a git project."""

    def __init__(self, base, stub, home=None):
        self.base = str(base)
        self.stub = stub
        self.home = str(home) if home else os.path.join(self.base, "home")
        self.project = os.path.join(self.base, "proj")
        os.makedirs(self.home, exist_ok=True)
        os.makedirs(self.project, exist_ok=True)
        subprocess.run(["git", "init", "-q", self.project], check=True)
        self.claude_dir = os.path.join(self.home, ".claude")
        self.codex_home = os.path.join(self.home, ".codex")
        self.gemini_dir = os.path.join(self.home, ".gemini")
        for d in (self.claude_dir, self.codex_home, self.gemini_dir):
            os.makedirs(d, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP_PREFIXES)}
        env.update({
            "HOME": self.home,
            "PATH": os.pathsep.join([os.path.dirname(NODE or "/usr/bin/node"), os.path.dirname(sys.executable),
                                     "/usr/local/bin", "/usr/bin", "/bin"]),
            "NO_COLOR": "1", "TERM": "dumb", "CI": "true",
            # Codex 0.171 runs `git ls-remote https://github.com/openai/plugins.git` (its curated
            # plugins) on start: git may use local files only, so nothing leaves the machine.
            "GIT_ALLOW_PROTOCOL": "file", "GIT_TERMINAL_PROMPT": "0",
            # Claude Code
            "CLAUDE_CONFIG_DIR": self.claude_dir,
            "ANTHROPIC_BASE_URL": stub.url,
            "ANTHROPIC_API_KEY": "sk-ant-stub",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            # Codex
            "CODEX_HOME": self.codex_home,
            "STUB_API_KEY": "stub-key",
            # Gemini CLI
            "GOOGLE_GEMINI_BASE_URL": stub.url,
            "GEMINI_API_KEY": "stub-key",
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
        })
        self.env = env
        with open(os.path.join(self.codex_home, "config.toml"), "w") as f:
            f.write(codex_config(stub.url))
        with open(os.path.join(self.gemini_dir, "settings.json"), "w") as f:
            json.dump({"security": {"auth": {"selectedType": "gemini-api-key"}},
                       "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                       "privacy": {"usageStatisticsEnabled": False},
                       "telemetry": {"enabled": False}}, f, indent=2)

    # -- running things
    def run(self, argv, *, timeout=120, check=True, cwd=None, stdin=subprocess.DEVNULL):
        r = subprocess.run(argv, cwd=cwd or self.project, env=self.env, stdin=stdin, capture_output=True,
                           text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"{argv[:3]} exited {r.returncode}\nstdout: {r.stdout[-2000:]}\n"
                                 f"stderr: {r.stderr[-3000:]}")
        return r

    def ctxd(self, *args, check=True, cwd=None):
        return self.run([ctxd_exe(), *args], check=check, cwd=cwd, timeout=60)

    def claude(self, prompt, *extra):
        # its debug log tells when it has taken in what a hook wrote (wait_for_env_file)
        return self.run([cli_path("claude"), "-p", prompt, "--debug-file", self.claude_log, *extra])

    @property
    def claude_log(self):
        return os.path.join(self.base, "claude-debug.log")

    def codex(self, prompt, *extra, resume=False):
        head = [cli_path("codex"), "exec"] + (["resume", "--last"] if resume else [])
        return self.run(head + ["--skip-git-repo-check", *extra, prompt])

    def gemini(self, prompt, *extra):
        return self.run([cli_path("gemini"), "-p", prompt, *extra])

    # -- reading the store
    def log(self, project=None):
        """Every stored message, oldest first (ctxd chat log --json)."""
        p = self.ctxd("chat", "log", "-n", "100000", "--json", cwd=project, check=False)
        if p.returncode == 4 and "no conversation recorded" in p.stderr:
            return []  # nothing recorded at all: chat log says so (exit 4)
        assert p.returncode == 0, p.stderr
        return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]

    def export(self, project=None):
        out = self.ctxd("chat", "export", cwd=project).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    # -- transcripts the CLIs wrote
    def transcripts(self, tool):
        pattern = {"claude": os.path.join(self.claude_dir, "projects", "*", "*.jsonl"),
                   "codex": os.path.join(self.codex_home, "sessions", "*", "*", "*", "rollout-*.jsonl"),
                   "gemini": os.path.join(self.gemini_dir, "tmp", "*", "chats", "session-*")}[tool]
        return sorted(glob.glob(pattern), key=os.path.getmtime)


def codex_config(url):
    return (f'model = "gpt-stub"\nmodel_provider = "stub"\ncheck_for_update_on_startup = false\n\n'
            f'[model_providers.stub]\nname = "stub"\nbase_url = "{url}/v1"\nwire_api = "responses"\n'
            f'env_key = "STUB_API_KEY"\n')


# -- Codex hook trust, as a user gives it ---------------------------------------------

def codex_hooks_list(world, cwd, timeout=30):
    """The hooks Codex sees for *cwd*, from ``codex app-server``'s hooks/list (what /hooks shows)."""
    p = subprocess.Popen([cli_path("codex"), "app-server"], cwd=cwd, env=world.env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        def send(obj):
            p.stdin.write(json.dumps(obj) + "\n")
            p.stdin.flush()

        def answer(i):
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                line = p.stdout.readline()
                if not line:
                    break
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if msg.get("id") == i:
                    return msg
            raise AssertionError(f"codex app-server gave no answer to request {i}")

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"clientInfo": {"name": "ctxd-tests", "version": "1"}}})
        answer(1)
        send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        send({"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [cwd]}})
        res = answer(2)
    finally:
        p.kill()
        p.wait()
    hooks = []
    for d in (res.get("result") or {}).get("data") or []:
        hooks.extend(d.get("hooks") or [])
    return hooks


def trust_codex(world, project):
    """Trust the project and its hooks as a Codex 0.171 user does: the first-run folder prompt
    writes ``[projects."<dir>"] trust_level = "trusted"``, and ``/hooks`` writes
    ``[hooks.state."<file>:<event>:<group>:<handler>"] trusted_hash = "<currentHash>"`` into
    $CODEX_HOME/config.toml for each hook reviewed. Returns the trusted keys."""
    import tomlkit

    cfg = os.path.join(world.codex_home, "config.toml")

    def edit(fn):
        with open(cfg) as f:
            doc = tomlkit.parse(f.read())
        fn(doc)
        with open(cfg, "w") as f:
            f.write(tomlkit.dumps(doc))

    def trust_project(doc):
        projects = doc.setdefault("projects", tomlkit.table(is_super_table=True))
        t = tomlkit.table()
        t["trust_level"] = "trusted"
        projects[os.path.realpath(project)] = t

    edit(trust_project)
    hooks = [h for h in codex_hooks_list(world, project) if "ctxd" in (h.get("command") or "")]
    assert hooks, "Codex lists no ctxd hook for the project"

    def trust_hooks(doc):
        hooks_t = doc.setdefault("hooks", tomlkit.table(is_super_table=True))
        state = hooks_t.setdefault("state", tomlkit.table(is_super_table=True))
        for h in hooks:
            t = tomlkit.table()
            t["trusted_hash"] = h["currentHash"]
            state[h["key"]] = t

    edit(trust_hooks)
    after = {h["key"]: h["trustStatus"] for h in codex_hooks_list(world, project) if "ctxd" in (h.get("command") or "")}
    assert after and set(after.values()) == {"trusted"}, after
    return sorted(after)


# -- Claude Code's session env files (CLAUDE_ENV_FILE) -----------------------------------

def claude_env_files(world, event):
    """The files Claude Code named $CLAUDE_ENV_FILE for *event*'s hooks, in every session."""
    return sorted(glob.glob(os.path.join(world.claude_dir, "session-env", "*", f"{event.lower()}-hook-*.sh")))


def _ctxd_hooks_running(world):
    """Whether a ``ctxd chat hook claude`` of this world (its CLAUDE_CONFIG_DIR) is still running."""
    mine = f"CLAUDE_CONFIG_DIR={world.claude_dir}".encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if b"chat" not in argv or b"hook" not in argv:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if mine in f.read().split(b"\0"):
                    return True
        except OSError:
            continue
    return False


def wait_for_env_file(world, event, text, timeout=60):
    """Wait until ctxd's *event* hook has written *text* into its env file and exited.

    Claude Code runs CwdChanged hooks alongside the conversation: the next Bash
    command can start before the hook is done. A model takes seconds to answer;
    the stub answers at once, so a test waits here before sending the next step.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in claude_env_files(world, event):
            try:
                with open(path, encoding="utf-8") as f:
                    written = text in f.read()
            except OSError:
                written = False
            if written and not _ctxd_hooks_running(world) and _claude_took_it_in(world, event):
                return path
        time.sleep(0.05)
    raise AssertionError(f"no {event} env file with {text!r} after {timeout}s: {claude_env_files(world, event)}")


def _claude_took_it_in(world, event):
    """Whether Claude Code, after the last *event* hook it saw complete, dropped its cached
    session environment. It reads the env files into a cache and drops that cache when it
    handles a hook's end, on its own event loop, which can lag the hook process's exit on a
    busy machine: a Bash command run in between still gets the old environment."""
    try:
        with open(world.claude_log, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return False
    done = [i for i, line in enumerate(lines)
            if re.search(rf"\b{event}\b[^\[]* \[.*\] completed with status", line)]
    return bool(done) and any("Invalidating session environment cache" in line for line in lines[done[-1]:])
