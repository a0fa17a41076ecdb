"""Drive real interactive bash, zsh and fish with pexpect.

A ShellSession starts the shell with no rc files, an isolated HOME and XDG
dirs, a plain prompt, and ctxd's hook evaluated exactly as a user would.
``run(cmd)`` types a command line and returns what it printed;
``env()`` returns the shell's exported environment exactly (via env -0).
``run_script`` runs a script in a non-interactive bash, zsh or fish instead,
in ``clean_env()``.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import uuid

import pexpect
import pytest

import ctxdtest

SHELLS = ("bash", "zsh", "fish")
# tcsh and elvish from Debian; xonsh (PyPI) and nushell (npm) into ~/.cache/ctxd-ci by .ci/run
MORE_SHELLS = ("tcsh", "elvish", "xonsh", "nu")
PROMPT = "CTXDPROMPT>"
CI_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "ctxd-ci")
CACHED = {  # where .ci/run installs the shells that are not Debian packages
    "xonsh": os.path.join(CI_CACHE, "xonsh", "bin", "xonsh"),
    "nu": os.path.join(CI_CACHE, "nushell", "node_modules", ".bin", "nu"),
}
INSTALL = {
    "tcsh": "apt-get install -y tcsh", "elvish": "apt-get install -y elvish",
    "xonsh": "python3 -m venv ~/.cache/ctxd-ci/xonsh && ~/.cache/ctxd-ci/xonsh/bin/pip install xonsh",
    "nu": "npm install --prefix ~/.cache/ctxd-ci/nushell nushell",
}


def find(shell):
    """The shell's path (PATH first, then .ci/run's cache), or None."""
    path = shutil.which(shell)
    if path:
        return path
    cached = CACHED.get(shell)
    return cached if cached and os.access(cached, os.X_OK) else None


def require(shell):
    """The shell's path; fails (never skips) in CI when it is missing."""
    path = find(shell)
    if path:
        return path
    how = INSTALL.get(shell, "apt-get install -y zsh fish")
    if os.environ.get("CI"):
        pytest.fail(f"shell {shell} is not installed; CI must install it ({how}; see .ci/run)")
    pytest.skip(f"shell {shell} is not installed ({how})")


def ctxd_bin_dir():
    return os.path.dirname(shutil.which("ctxd") or sys.executable)


def base_env(home, extra=None):
    home = str(home)
    env = {
        "HOME": home,
        "USER": os.environ.get("USER", "tester"),
        "TERM": "dumb",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PATH": os.pathsep.join([ctxd_bin_dir(), "/usr/local/bin", "/usr/bin", "/bin"]),
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "XDG_DATA_HOME": os.path.join(home, ".local/share"),
        "XDG_STATE_HOME": os.path.join(home, ".local/state"),
        "XDG_CACHE_HOME": os.path.join(home, ".cache"),
        "fish_greeting": "",
    }
    env.update(extra or {})
    return env


class ShellSession:
    def __init__(self, shell, home, env=None, hook=True, cwd=None, timeout=20, trust_tree=None):
        self.shell = shell
        self.home = str(home)
        self.timeout = timeout
        path = require(shell)
        self.env = base_env(home, env)
        os.makedirs(os.path.join(self.home, ".config", "fish"), exist_ok=True)
        if trust_tree is not False:
            # like a user who trusts ~/work: projects next to this home apply their
            # detected environment without `ctxd allow` (see docs/security.md)
            write_config(self.home, trust_tree or os.path.dirname(self.home.rstrip("/")))
        if shell == "bash":
            argv = [path, "--norc", "--noprofile", "-i"]
        elif shell == "zsh":
            argv = [path, "-f", "-i"]
        elif shell == "xonsh":
            # the setup as the only rc file: the very first prompt is already ours
            rc = os.path.join(self.home, ".ctxd-test-setup.xsh")
            with open(rc, "w") as f:
                f.write(MORE_SETUP[shell] + "\n")
            argv = [path, "--rc", rc, "-i", "--shell-type=readline"]
        elif shell in MORE_SHELLS:
            argv = [path] + MORE_ARGV[shell]
        else:
            argv = [path, "--no-config", "-i"]
        self.child = pexpect.spawn(argv[0], argv[1:], env=self.env, cwd=cwd or self.home,
                                   encoding="utf-8", codec_errors="replace",
                                   timeout=timeout, dimensions=(50, 400))
        self._n = 0
        if shell == "bash":
            self.child.sendline(f"PS1='{PROMPT}'; PS2=''; unset PROMPT_COMMAND; bind 'set enable-bracketed-paste off' 2>/dev/null")
        elif shell == "zsh":
            self.child.sendline(f"PS1='{PROMPT}'; PS2=''; unsetopt zle 2>/dev/null; unsetopt prompt_sp")
        elif shell in MORE_SHELLS:
            if shell == "xonsh":
                # xonsh asks the terminal where the cursor is (ESC[6n) before each
                # prompt and reads the reply from stdin: type only once it shows
                self.child.expect_exact(PROMPT, timeout=60)
            else:
                if shell == "nu":
                    self._expect(">")  # nu's first prompt (its default one), after its queries
                self.child.sendline(MORE_SETUP[shell])
        else:
            self.child.sendline(f"function fish_prompt; printf '{PROMPT}'; end; function fish_right_prompt; end; "
                                "set -g fish_autosuggestion_enabled 0")
        self.run("true")
        if hook:
            self.install_hook()

    def install_hook(self):
        if self.shell == "nu":  # nu sources only files that exist when the line is parsed
            f = os.path.join(self.home, "ctxd-hook.nu")
            out = self.run(f"ctxd hook nu | save -f {more_literal('nu', f)}")
            return out + self.run(f"source {more_literal('nu', f)}")
        if self.shell == "fish":
            return self.run("ctxd hook fish | source")
        if self.shell in MORE_SHELLS:
            return self.run(MORE_INSTALL[self.shell])
        return self.run(f'eval "$(ctxd hook {self.shell})"')

    def run(self, command, timeout=None):
        """Type *command*, wait for it and the next prompt; return its output."""
        if self.shell in ONE_LINE:
            return self._run_one_line(command, timeout)
        if self.shell == "xonsh":
            return self._run_then_sync(command, timeout)
        if self.shell == "nu":
            return self._run_then_sync(command, timeout, start="^printf '__START_%s__\\n' {tag}; ")
        self._n += 1
        tag = uuid.uuid4().hex[:8]
        end = f"__END_{tag}_{self._n}__"
        # printf builds the end marker at run time, so the echoed input never matches it
        self.child.sendline(f"{command}\nprintf '__END_%s__\\n' '{tag}_{self._n}'")
        self.child.expect_exact(end, timeout=timeout or self.timeout)
        out = self.child.before
        self.child.expect_exact(PROMPT, timeout=timeout or self.timeout)
        if self.shell in MORE_SHELLS:
            out = ANSI.sub("", out)  # xonsh's readline switches bracketed paste on and off
        # drop the echo of our own lines
        lines = out.replace("\r\n", "\n").replace("\r", "").split("\n")
        kept = [l for l in lines if "__END_%s__" not in l and PROMPT not in l and l.strip() != command.strip()]
        return "\n".join(kept).strip("\n")

    def _run_one_line(self, command, timeout=None):
        """Shells whose line editor redraws the typed line in colour (elvish,
        nushell): start marker, command and end marker on one line, the
        output taken from between the two markers and from what the prompt
        hook printed before the next prompt, terminal codes removed."""
        self._n += 1
        tag = f"{uuid.uuid4().hex[:8]}_{self._n}"
        start, end = f"__START_{tag}__", f"__END_{tag}__"
        self.child.sendline(ONE_LINE[self.shell](command, tag))
        self.child.expect_exact(end, timeout=timeout or self.timeout)
        out = self.child.before
        self.child.expect_exact(PROMPT, timeout=timeout or self.timeout)
        out = out.split(start, 1)[1] if start in out else out
        out += "\n" + self.child.before  # what the prompt hook printed (it runs after the whole line)
        out = ANSI.sub("", out).replace("\r\n", "\n").replace("\r", "")
        out = re.sub("\u23ce *", "", out)  # the editor's missing-newline mark before a prompt
        return "\n".join(l.rstrip(" ") for l in out.split("\n") if PROMPT not in l).strip("\n ")

    def _expect(self, pattern, timeout=None):
        """expect_exact(pattern); answers the cursor-position queries (ESC[6n)
        nushell's line editor sends before each prompt and waits for. Returns
        everything before *pattern*."""
        if self.shell != "nu":
            self.child.expect_exact(pattern, timeout=timeout or self.timeout)
            return self.child.before
        seen = []
        while True:
            i = self.child.expect_exact([pattern, "\x1b[6n"], timeout=timeout or self.timeout)
            seen.append(self.child.before)
            if i == 0:
                return "".join(seen)
            self.child.send("\x1b[1;1R")

    def _run_then_sync(self, command, timeout=None, start=None):
        """xonsh reads typed-ahead lines before its pre-prompt event fires, so
        the command goes alone; its output is what comes before the next
        prompt (the prompt hook's included), then an end marker syncs. With
        *start* (nushell, whose editor redraws the line in colour), a start
        marker printed first on the same line says where the output begins."""
        self._n += 1
        tag = f"{uuid.uuid4().hex[:8]}_{self._n}"
        self.child.sendline((start.format(tag=tag) if start else "") + command)
        if start:
            self._expect(f"__START_{tag}__", timeout)
        out = ANSI.sub("", self._expect(PROMPT, timeout)).replace("\r\n", "\n").replace("\r", "")
        end = f"^printf '__END_%s__\\n' '{tag}'" if self.shell == "nu" else f"printf '__END_%s__\\n' '{tag}'"
        self.child.sendline(end)
        self._expect(f"__END_{tag}__", timeout)
        self._expect(PROMPT, timeout)
        lines = out.split("\n")
        if not start and lines and lines[0].strip() == command.strip().split("\n")[0].strip():
            lines = lines[1:]  # the echo of the typed line
        out = re.sub("\u23ce *", "", "\n".join(l.rstrip(" ") for l in lines))
        return out.strip("\n ")

    def cd(self, path):
        if self.shell in MORE_SHELLS:
            return self.run(f"cd {more_literal(self.shell, str(path))}")
        q = "'" + str(path).replace("'", "'\\''") + "'" if self.shell != "fish" else fish_literal(str(path))
        return self.run(f"cd {q}")

    def env_dump(self):
        """The shell's exported environment, exactly (bytes-faithful)."""
        f = os.path.join(self.home, f"env-{uuid.uuid4().hex}.bin")
        self.run(f"^env -0 o> '{f}'" if self.shell == "nu" else f"env -0 > '{f}'")
        with open(f, "rb") as fh:
            data = fh.read()
        os.unlink(f)
        env = {}
        for item in data.split(b"\0"):
            if not item:
                continue
            k, _, v = item.partition(b"=")
            env[os.fsdecode(k)] = os.fsdecode(v)
        return env

    def status_after(self, command):
        """$? (or $status) as the next command line sees it after *command*."""
        var = {"fish": "$status", "tcsh": "$status", "nu": "$env.LAST_EXIT_CODE",
               "xonsh": "@(__xonsh__.history[-1].rtn)"}.get(self.shell, "$?")
        self.child.sendline(command)
        self._expect(PROMPT)
        return int(self.run(f"echo STATUS={var}").split("STATUS=")[1].split()[0])

    def close(self):
        try:
            self.child.sendline("exit")
            self.child.expect(pexpect.EOF, timeout=5)
        except Exception:
            pass
        self.child.close(force=True)


def write_config(home, tree):
    d = os.path.join(str(home), ".config", "ctxd")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "config.toml")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write("[trust]\nroots = [%s]\n" % json.dumps(str(tree)))


def fish_literal(s):
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def literal(shell, s):
    """A word meaning exactly *s* to bash, zsh or fish."""
    return fish_literal(s) if shell == "fish" else shlex.quote(s)


# -- bash, zsh and fish run on a script, not interactive --------------------------------------

def clean_env(**extra):
    """This process's environment without a user's shell setup or ctxd's state, in UTF-8, with
    ctxd's console script first on PATH; *extra* on top."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CTXD_", "BASH_FUNC_"))
           and k not in ("PROMPT_COMMAND", "BASH_ENV", "ENV", "ZDOTDIR", "PWD", "OLDPWD")}
    env.update(LANG="C.UTF-8", LC_ALL="C.UTF-8", fish_greeting="")
    env["PATH"] = os.pathsep.join([os.path.dirname(ctxdtest.ctxd_script()), "/usr/local/bin", "/usr/bin", "/bin"])
    env.update(extra)
    return env


def run_script(shell, script, cwd, options=(), env=None):
    """Run *script* in a non-interactive *shell* without user config (*options*: bash's), in
    *env* (default: clean_env())."""
    path = require(shell)
    if shell == "bash":
        argv = [path, "--norc", "--noprofile", *options, "-c", script]
    elif shell == "zsh":
        argv = [path, "-f", "-c", script]
    else:
        argv = [path, "--no-config", "-c", script]
    return subprocess.run(argv, cwd=cwd, env=env or clean_env(), capture_output=True, text=True, timeout=60)


# -- tcsh, elvish, xonsh, nushell: started with no rc file and a plain prompt --

MORE_ARGV = {
    "tcsh": ["-f", "-i"],
    "elvish": ["-norc", "-i"],
    "xonsh": ["--no-rc", "-i", "--shell-type=readline"],
    "nu": ["--no-config-file", "--no-std-lib", "-i"],
}
MORE_SETUP = {
    "tcsh": f"set prompt = '{PROMPT}'; unset prompt2 prompt3; unset autologout",
    "elvish": f"set edit:prompt = {{ put '{PROMPT}' }}; set edit:rprompt = {{ }}",
    "xonsh": f"$PROMPT = '{PROMPT}'; $RIGHT_PROMPT = ''; $UPDATE_PROMPT_ON_KEYPRESS = False; "
             "$AUTO_SUGGEST = False; $XONSH_SHOW_TRACEBACK = False; $COMMANDS_CACHE_SAVE_INTERMEDIATE = False",
    "nu": f"$env.PROMPT_COMMAND = {{|| '{PROMPT}' }}; $env.PROMPT_COMMAND_RIGHT = ''; "
          "$env.PROMPT_INDICATOR = ''; $env.PROMPT_MULTILINE_INDICATOR = ''; $env.config.show_banner = false",
}
MORE_INSTALL = {
    "tcsh": 'eval "`ctxd hook tcsh`"',
    "elvish": "eval (ctxd hook elvish | slurp)",
    "xonsh": "execx($(ctxd hook xonsh))",
    "nu": "(see ShellSession.install_hook)",
}


def more_literal(shell, s):
    """A word meaning exactly *s* (no newline in it) to tcsh, elvish, xonsh or nu."""
    if shell == "tcsh":
        return "'" + s.replace("'", "'\\''").replace("!", "\\!") + "'"
    if shell == "elvish":
        return "'" + s.replace("'", "''") + "'"
    if shell == "xonsh":
        return "@(" + repr(s) + ")"
    return json.dumps(s)  # nu's double-quoted strings take JSON's escapes



def more_source_line(shell, path):
    """The line that sources the hook file *path* in tcsh, elvish, xonsh or nu."""
    q = more_literal(shell, path)
    return {"tcsh": f'eval "`cat {q}`"', "elvish": f"eval (slurp < {q})",
            "xonsh": f"execx(open({q[2:-1]}).read())", "nu": f"source-env {q}"}[shell]

ANSI = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-B]|[=>78])")
ONE_LINE = {
    # an exception in the command is printed and does not stop the end marker
    "elvish": lambda cmd, tag: (f'printf "__START_%s__\\n" {tag}; try {{ {cmd} }} catch e {{ echo (repr $e[reason]) }}; '
                                f'printf "__END_%s__\\n" {tag}'),
}
