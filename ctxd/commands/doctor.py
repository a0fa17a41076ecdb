"""``ctxd doctor``: is ctxd set up right here, and if not, what to run.

Every check has a status (ok, warn, fail, or skip when it cannot be seen from
here) and, unless ok, one concrete fix. The exit status is 1 when a check
fails, 0 otherwise (warnings included).

The hook lives in the shell as functions a child process cannot see, so the
hook templates export ``_CTXD_HOOK=<shell>`` when they load; everything else
comes from the environment the shell passed down and from the files on disk.
The marker is inherited by child shells, so when the shell process already had
it at start-up (psutil reads its initial environment) and no rc file loads the
hook, the hook is reported as probably inherited rather than loaded. (A marker
naming the pid would tell them apart exactly, but it would change the exported
environment of every nested shell that loads the hook.)

This module checks the shell's side (hook, rc file, interpreter, state variables);
``ctxd.diagnose`` checks ctxd's own files (config, trust, store, recall, sync, log) and the
AI CLIs' hooks.
"""

import json
import os
import shlex
import subprocess
import sys

import click

from ctxd.diagnose import (FAIL, OK, SKIP, WARN, Check, check_ai_clis, check_config, check_log, check_recall,
                           check_store, check_sync, check_trust)

SCHEMA_VERSION = 1
SHIM_DIRS = ("/.pyenv/shims/", "/.asdf/shims/", "/mise/shims/", "/.rtx/shims/", "/rtx/shims/",
             "/.nodenv/shims/", "/.rbenv/shims/")


# -- helpers -------------------------------------------------------------------

def _hook_line(shell):
    from ctxd.shells import get_shell

    return get_shell(shell).install_line


def _load_fix(shell):
    return (f"load it now: {_hook_line(shell)}; and in every new shell: "
            f"ctxd setup --shell {shell} --write")


def _drop_state_cmd(shell):
    """Undo ctxd's changes with the hook's restore function (when there is one), drop the state."""
    from ctxd.shells import get_shell

    return get_shell(shell).drop_state_command()


def _rc_hook_line(shell, environ):
    """(file, line number) of the first uncommented line that loads ctxd's hook, or None."""
    from ctxd.shells import get_shell

    sh = get_shell(shell)
    for path in sh.rc_candidates(environ):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    if sh.loads_hook(line):
                        return path, n
        except OSError:
            continue
    return None


def _tilde(path, environ):
    home = (environ.get("HOME") or "").rstrip("/")
    if home and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home):]
    return path


def _shell_process(name):
    """The nearest ancestor process running shell *name*, or None (psutil)."""
    try:
        import psutil

        for p in psutil.Process().parents():
            try:
                names = {p.name().lstrip("-")}
                exe = p.exe()
                if exe:
                    names.add(os.path.basename(exe))
            except (psutil.Error, OSError):
                continue
            if name in names:
                return p
    except Exception:
        return None
    return None


def _inherited_marker(proc, marker):
    """True when *proc* already had _CTXD_HOOK=marker when it started (None: unknown)."""
    if proc is None:
        return None
    try:
        return proc.environ().get("_CTXD_HOOK") == marker
    except Exception:
        return None


# -- the checks ----------------------------------------------------------------

def check_shell(environ):
    import shellingham

    try:
        name, path = shellingham.detect_shell()
    except shellingham.ShellDetectionFailure:
        path = environ.get("SHELL", "")
        name = os.path.basename(path)
    name = os.path.basename(name or "").lstrip("-")
    from ctxd.shells import ALIASES, SUPPORTED

    name = ALIASES.get(name, name)
    if name in SUPPORTED:
        return name, Check("shell", OK, name if not path or path == name else f"{name} ({path})")
    return None, Check("shell", WARN, f"{name or 'unknown shell'}: ctxd's hook supports {', '.join(SUPPORTED)}",
                       f"run ctxd in one of {', '.join(SUPPORTED)}")


def check_hook(shell, environ, rc_found):
    marker = environ.get("_CTXD_HOOK", "")
    if shell is None:
        if marker:
            return Check("hook", OK, f"loaded by a {marker} (_CTXD_HOOK={marker}); this shell is unknown")
        return Check("hook", WARN, "not loaded (_CTXD_HOOK is not set)",
                     "in a supported shell: ctxd setup --write, then open a new shell")
    if not marker:
        if rc_found:
            fix = (f"{_tilde(rc_found[0], environ)} loads it: open a new shell (exec {shell}) "
                   f"or run {_hook_line(shell)}")
        else:
            fix = _load_fix(shell)
        return Check("hook", WARN, f"not loaded in this {shell} (_CTXD_HOOK is not set)", fix)
    if marker != shell:
        return Check("hook", WARN, f"loaded in a parent {marker}, not in this {shell} (_CTXD_HOOK={marker})",
                     _load_fix(shell))
    proc = _shell_process(shell)
    where = f" (pid {proc.pid})" if proc is not None else ""
    if _inherited_marker(proc, marker) and not rc_found:
        return Check("hook", WARN,
                     f"probably not loaded in this {shell}{where}: _CTXD_HOOK={marker} was inherited from a "
                     f"parent shell and no rc file loads the hook", _load_fix(shell))
    return Check("hook", OK, f"loaded in this {shell}{where}")


def check_rc(shell, environ, rc_found):
    from ctxd.shells import get_shell

    if shell is None:
        return Check("rc file", SKIP, "unknown shell")
    if rc_found:
        path, n = rc_found
        return Check("rc file", OK, f"{_tilde(path, environ)}:{n} loads the hook")
    sh = get_shell(shell)
    return Check("rc file", WARN, f"{sh.rc_file} does not load the hook (new shells start without ctxd)",
                 f"ctxd setup --shell {shell} --write   (adds: {sh.install_line})")


def check_startup_copy(shell, environ):
    """The copy of the hook the rc lines source at shell start: current (a new shell starts
    without ctxd), stale (it stands down: one slow start rewrites it) or missing."""
    from ctxd.shells import get_shell

    if shell is None:
        return Check("start-up copy", SKIP, "unknown shell")
    sh = get_shell(shell)
    if not sh.hook_cache:
        return Check("start-up copy", SKIP, f"{shell}: its rc lines run ctxd hook at start")
    from ctxd.fastpath import startup_copy

    path = startup_copy.cache_file(shell, environ)
    shown = _tilde(path, environ)
    fix = f"ctxd hook {shell} >/dev/null   (writes it; so does the next new shell)"
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        return Check("start-up copy", WARN, f"{shown} is missing: the next shell starts ctxd once to write it", fix)
    stale = [f for f in startup_copy.sources(sh) if os.stat(f).st_mtime_ns > mtime]
    with open(path, encoding="utf-8", errors="replace") as f:
        head = f.read(4096)
    info = startup_copy.dist_info()
    if stale or (info and info not in head) or sys.executable not in head:
        why = (f"{_tilde(stale[0], environ)} is newer" if stale
               else "written by another ctxd installation or version")
        return Check("start-up copy", WARN, f"{shown} is stale ({why}): the next shell starts ctxd once to rewrite it",
                     fix)
    return Check("start-up copy", OK, f"{shown} is current: a new {shell} loads the hook without starting ctxd")


def check_bundle(shell, environ):
    """The export bundle (ctxd.fastpath.bundle): current (a first visit loads the hot path from
    one file) or not (the export imports its modules one by one until `ctxd hook` rewrites it)."""
    from ctxd.fastpath import bundle
    from ctxd.shells import SUPPORTED

    if shell not in SUPPORTED:
        return Check("export bundle", SKIP, "unknown shell")
    path = bundle.bundle_path(shell, environ)
    shown = _tilde(path, environ)
    if bundle.current(path, bundle.modules_for(shell)):
        return Check("export bundle", OK, f"{shown} is current: a first visit loads ctxd's code from it")
    why = "is missing" if not os.path.exists(path) else "stands down (stale, torn, or another Python's)"
    return Check("export bundle", WARN,
                 f"{shown} {why}: each first visit of a project imports ctxd's modules one by one (~1 ms more)",
                 f"ctxd hook {shell} >/dev/null   (writes it; so does the next new shell when ctxd changed)")


def check_command(environ):
    import shutil

    found = shutil.which("ctxd", path=environ.get("PATH"))
    if found:
        return Check("command", OK, f"ctxd on PATH: {found}")
    return Check("command", WARN, "ctxd is not on PATH: the rc file line cannot run it in a new shell",
                 "add the directory holding the ctxd script to PATH in your profile (pipx: pipx ensurepath)")


def check_prompt_command(environ):
    pc = environ.get("PROMPT_COMMAND")
    if pc is None:
        return Check("PROMPT_COMMAND", SKIP,
                     "not exported, so its order cannot be seen from here; to check it: "
                     "PROMPT_COMMAND=\"${PROMPT_COMMAND[*]}\" ctxd doctor")
    from ctxd.shells import get_shell

    bash = get_shell("bash")
    if "__bp_precmd_invoke_cmd" in pc:
        # bash-preexec runs the precmd_functions first; ctxd's hook keeps itself first among them
        fns = environ.get("precmd_functions")
        if fns is None:
            return Check("PROMPT_COMMAND", SKIP, "bash-preexec runs the precmd functions, which are not exported; "
                         "to check them: precmd_functions=\"${precmd_functions[*]}\" ctxd doctor")
        if bash.hook_fn in fns.split():
            return Check("PROMPT_COMMAND", OK, f"{bash.hook_fn} runs first (bash-preexec's first precmd function)")
        return Check("PROMPT_COMMAND", WARN, f"bash-preexec's precmd_functions do not run {bash.hook_fn}",
                     _load_fix("bash"))
    runs, first = bash.prompt_command_order(pc)
    if not runs:
        return Check("PROMPT_COMMAND", WARN, f"does not run {bash.hook_fn}", _load_fix("bash"))
    if first == bash.hook_fn:
        return Check("PROMPT_COMMAND", OK, f"{bash.hook_fn} runs first")
    return Check("PROMPT_COMMAND", WARN,
                 f"{bash.hook_fn} runs after {first!r}, which sees the environment before ctxd updates it",
                 f"something in {bash.rc_file} prepends to PROMPT_COMMAND after ctxd's line: move "
                 f"{bash.install_line} below it (ctxd installs itself first in line)")


def check_interpreter():
    from ctxd.shells.base import EXPORT_CALL, export_command

    cmd = export_command()
    exe = cmd[0]
    if not exe or not os.path.isfile(exe) or not os.access(exe, os.X_OK):
        return Check("interpreter", FAIL, f"{exe or '(none)'} does not exist or is not executable",
                     "reinstall ctxd (python3 -m pip install ctxd), then open a new shell")
    shim = any(d in exe for d in SHIM_DIRS) or "shims" in exe.split(os.sep)
    if not shim:
        try:
            with open(exe, "rb") as f:
                shim = f.read(2) == b"#!"  # a script standing in for python
        except OSError:
            pass
    if shim:
        return Check("interpreter", WARN,
                     f"{exe} is a version-manager shim or wrapper script: each cd into a project pays for it "
                     f"(~50 ms) and a project's version pin can switch the interpreter",
                     "install ctxd with a real interpreter (e.g. pipx install ctxd), then re-run "
                     "ctxd setup and open a new shell")
    code = cmd[4]
    tail = ";" + EXPORT_CALL
    probe = "import ctxd,ctxd.fastpath.export_entry,ctxd.activation.export;print(ctxd.__file__)"
    code = code[: -len(tail)] + ";" + probe if code.endswith(tail) else probe
    try:
        r = subprocess.run([exe, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return Check("interpreter", FAIL, f"{exe} cannot run: {e}",
                     "reinstall ctxd (python3 -m pip install ctxd), then open a new shell")
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        return Check("interpreter", FAIL, f"{exe} -I -S cannot import ctxd: {last}",
                     f"reinstall ctxd for this interpreter: {shlex.quote(exe)} -m pip install ctxd")
    import ctxd

    got = os.path.dirname(os.path.realpath(r.stdout.strip()))
    mine = os.path.dirname(os.path.realpath(ctxd.__file__))
    if got != mine:
        return Check("interpreter", WARN, f"{exe} -I -S imports another ctxd ({got}, this one is {mine})",
                     "reinstall ctxd, then open a new shell")
    return Check("interpreter", OK, f"{exe} imports ctxd with -I -S")


def check_state(shell, environ):
    from ctxd.activation.state import STATE_VAR, decode
    from ctxd.errors import StateError

    token = environ.get(STATE_VAR)
    if token is None:
        return None, Check("state", OK, "no project active (CTXD_STATE is not set)")
    try:
        state = decode(token)
    except StateError as e:
        return None, Check("state", FAIL, e.message,
                           f"run: {_drop_state_cmd(shell or 'bash')}   (the hook re-activates at the next prompt)")
    return state, Check("state", OK, f"CTXD_STATE decodes: {state.root or 'no project'} is active")


def check_watch(shell, environ, state_set):
    w = environ.get("CTXD_WATCH")
    if w is None:
        if state_set:
            return Check("watch", WARN, "CTXD_STATE is set but CTXD_WATCH is not: edits to the project's "
                         "files go unnoticed until the next cd", "cd out of the project and back in")
        return Check("watch", OK, "nothing watched (CTXD_WATCH is not set)")
    fix = f"run: {_drop_state_cmd(shell or 'bash')}   (the hook re-activates at the next prompt)"
    if not state_set:
        return Check("watch", WARN, "CTXD_WATCH is set without CTXD_STATE (left over)", fix)
    lines = w.split("\n")
    stamp, entries = lines[0], lines[1:]
    if stamp and not stamp.startswith("/"):
        return Check("watch", FAIL, f"CTXD_WATCH is malformed: its first line {stamp!r} is not a stamp path", fix)
    for n, line in enumerate(entries, 2):
        if not (line[:1] in ("+", "-") and line[1:].startswith("/")):
            return Check("watch", FAIL, f"CTXD_WATCH is malformed: line {n} {line!r} is not +PATH or -PATH", fix)
    if stamp and not os.path.exists(stamp):
        return Check("watch", WARN, f"the stamp file {stamp} is gone: edits go unnoticed until the next cd",
                     "cd out of the project and back in")
    return Check("watch", OK, f"{len(entries)} paths watched")


def check_root(environ, state, hook_loaded):
    from ctxd.activation import detectors
    from ctxd.activation.export import logical_pwd

    pwd = logical_pwd(environ)
    root = detectors.find_root(pwd)
    active = environ.get("CTXD_ROOT")
    again = "press Enter (the hook updates at the next prompt); if it stays: ctxd show"
    if not hook_loaded:
        again = "load the hook (see the hook check)"
    if state is not None and state.root and active and state.root != active:
        return Check("root", WARN, f"CTXD_ROOT={active} but CTXD_STATE was made for {state.root}", again)
    if active == root:
        if root is None:
            return Check("root", OK, "no project here and none active")
        return Check("root", OK, f"CTXD_ROOT is this directory's project root ({root})")
    if active is None:
        return Check("root", WARN, f"this directory is in the project {root}, but none is active", again)
    if root is None:
        return Check("root", WARN, f"CTXD_ROOT={active}, but this directory is in no project", again)
    return Check("root", WARN, f"CTXD_ROOT={active}, but this directory's project root is {root}", again)


def run_checks(environ=None):
    environ = dict(os.environ) if environ is None else environ
    checks = []
    shell, c = check_shell(environ)
    checks.append(c)
    rc_found = _rc_hook_line(shell, environ) if shell else None
    hook = check_hook(shell, environ, rc_found)
    checks.append(hook)
    checks.append(check_rc(shell, environ, rc_found))
    checks.append(check_startup_copy(shell, environ))
    checks.append(check_bundle(shell, environ))
    checks.append(check_command(environ))
    if shell == "bash" or (shell is None and environ.get("_CTXD_HOOK") == "bash"):
        checks.append(check_prompt_command(environ))
    checks.append(check_interpreter())
    state, c = check_state(shell, environ)
    checks.append(c)
    checks.append(check_watch(shell, environ, "CTXD_STATE" in environ))
    checks.append(check_root(environ, state, hook.status == OK))
    checks.append(check_config(environ))
    checks.append(check_trust(environ))
    checks.extend(check_store(environ))
    checks.append(check_recall(environ))
    checks.extend(check_sync(environ))
    checks.extend(check_ai_clis(environ))
    checks.append(check_log(environ))
    return shell, checks


@click.command()
@click.option("--json", "json_", is_flag=True, help="Machine-readable output.")
@click.pass_context
def doctor(ctx, json_):
    """Check the hook, the shell, the interpreter, the state variables, the trust
    store, this project's conversation store and the log; print the fixes.

    Exit status 1 when a check fails, 0 otherwise (warnings included).
    """
    shell, checks = run_checks()
    failed = any(c.status == FAIL for c in checks)
    if json_:
        click.echo(json.dumps({"schema_version": SCHEMA_VERSION, "ok": not failed, "shell": shell,
                               "checks": [c.to_json() for c in checks]}, ensure_ascii=False))
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            click.echo(f"{c.status:<4}  {c.name:<{width}}  {c.message}")
        fixes = [c for c in checks if c.fix and c.status in (WARN, FAIL)]
        counts = {s: sum(c.status == s for c in checks) for s in (OK, WARN, FAIL, SKIP)}
        click.echo("\n" + ", ".join(f"{n} {s}" for s, n in counts.items() if n or s != SKIP))
        if fixes:
            click.echo("\nfixes:")
            for c in fixes:
                click.echo(f"  {c.name}: {c.fix}")
    ctx.exit(1 if failed else 0)
