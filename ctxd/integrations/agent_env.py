"""The project's environment in Claude Code's Bash tool, through ``CLAUDE_ENV_FILE``.

Claude Code runs its Bash tool in non-interactive shells that never run a cd
hook. Before each Bash command it sources the files its SessionStart,
CwdChanged and FileChanged hooks wrote: each hook command gets its own file,
named by ``$CLAUDE_ENV_FILE`` (``<config>/session-env/<session>/<event>-hook-<n>.sh``),
and they are sourced in the order setup, sessionstart, cwdchanged, filechanged.
On a change of directory Claude Code empties the cwdchanged and filechanged
files before the CwdChanged hooks run; the sessionstart file stays for the
whole session, and a resumed session keeps the directory, files and all (so
SessionStart empties the CwdChanged / FileChanged files ctxd left there).
(Claude Code 2.1.83+; checked against 2.1.332.)

``ctxd chat hook claude`` on those events writes its file with what ``ctxd
export`` would give an interactive shell in that directory, computed by the
same activation engine from the hook's own environment (Claude Code's, which
is also where its Bash tool starts): trust applies, an untrusted
``.contextrc`` is never read, an untrusted root's detected environment
(``.venv`` ...) is withheld exactly as the cd hook withholds it, and PATH is
the cd hook's PATH (ctxd's entries in front, none duplicated, no empty entry).

Each file is complete on its own, so whichever of ctxd's files is sourced last
decides, and leaving a project clears it:

1. ``_ctxd_restore`` (defined by an earlier ctxd file of the session, if any)
   undoes what that file set;
2. every variable the activation touches (its own, ctxd's ``CTXD_*``, and
   those of a project environment inherited from the shell that started Claude
   Code) gets its target value: ``export NAME=value`` or ``unset NAME``, in
   bash quoting (``ctxd.shells.bash``; the Bash tool runs bash or zsh, both
   read it); PATH is set whole;
3. a new ``_ctxd_restore`` (or none, outside any project) and ``CTXD_STATE``
   / ``CTXD_WATCH``, so ``ctxd`` run inside the Bash tool sees a consistent
   activation.

The hook also returns the activation's watched files (``.contextrc`` files,
trust records, ctxd's config) as ``watchPaths``, so Claude Code fires
FileChanged when one of them changes and the file is written again.
on_enter / on_leave commands do not run here (they are for interactive shells).

Failure never reaches Claude Code: the file is written atomically (0600) only
once its whole text is computed; on any error it keeps what it had, the hook
exits 0, and the reason goes to ctxd's log.
"""

import os

from ctxd.errors import CtxdError

ENV_FILE_VAR = "CLAUDE_ENV_FILE"
HEADER = "# ctxd: the project environment for Claude Code's Bash tool"


class EnvHookError(CtxdError):
    """A payload the env file cannot be written for: logged, the file left as it was."""


def target_dir(payload):
    """The directory whose environment the Bash tool should have after this event.

    ``cwd`` is the Bash tool's directory when the hook runs. For CwdChanged it is
    ``new_cwd``, except when the agent went outside the directories it may work in:
    Claude Code then puts the shell back where it was and fires CwdChanged with
    ``new_cwd`` the refused directory and ``cwd`` the one the next command runs in.
    """
    for key in ("cwd", "new_cwd"):
        value = payload.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _transition(environ, pwd, shell):
    """The activation for *pwd* from *environ*; a corrupt inherited CTXD_STATE is ignored
    (there is no restore function to undo it with here) and said so."""
    from ctxd.activation.export import transition
    from ctxd.errors import StateError

    try:
        return transition(environ, pwd, run_hooks=False, shell=shell), []
    except StateError as e:
        return transition(environ, pwd, old_state=None, run_hooks=False, shell=shell), [f"ctxd: {e.message}; ignored it"]


def render(environ, pwd, event=""):
    """(text of the env file, transition, warnings) for the Bash tool in *pwd*."""
    from ctxd.activation import envdiff
    from ctxd.activation.export import MANAGED, restore_function
    from ctxd.activation.state import STATE_VAR, WATCH_VAR, encode
    from ctxd.shells.bash import Bash

    sh = Bash()
    t, notes = _transition(environ, pwd, sh)
    warnings = notes + list(t.warnings)
    root = t.plan.root if t.plan else None
    names = set(MANAGED)
    if t.old:
        names.update(t.old.snap)
    if t.state:
        names.update(t.state.snap)
    names.discard(envdiff.PATH)
    names.discard(STATE_VAR)
    names.discard(WATCH_VAR)
    where = f"{root} ({t.plan.status})" if root else f"{pwd}: no project"
    out = [f"{HEADER}: {where}",
           f"# written by `ctxd chat hook claude` on {event or 'an event'}; sourced before each Bash command"]
    for w in warnings:
        out.extend("# " + line for line in w.splitlines() or [""])
    out.append(f"if \\builtin typeset -f {sh.restore_fn} >/dev/null 2>&1; then {sh.restore_fn}; fi")
    target = t.target
    for name in sorted(names - sh.reserved):
        value = target.get(name)
        out.append(sh.unset_var(name) if value is None else sh.set_var(name, value))
    if envdiff.PATH in target:
        out.append(sh.set_path(envdiff.split_path(target[envdiff.PATH])))
    if t.state:
        out.append(sh.set_var(STATE_VAR, encode(t.state)))
        out.append(sh.set_var(WATCH_VAR, t.watch))
        out.append(restore_function(sh, t))
    else:
        out.append(sh.unset_var(STATE_VAR))
        out.append(sh.unset_var(WATCH_VAR))
        out.append(sh.drop_restore())
    return sh.join(out), t, warnings


LATER_FILES = ("cwdchanged-hook-", "filechanged-hook-")


def clear_stale(path):
    """Empty ctxd's own CwdChanged / FileChanged files left in this session's directory.

    Claude Code empties those files on a change of directory only, and a resumed
    session (``claude --continue``) keeps its session directory: a file ctxd wrote
    for where the last run ended would be sourced after the new SessionStart file
    and win. Files that are not ctxd's (their first line is not ctxd's header) are
    left alone.
    """
    d = os.path.dirname(path)
    try:
        names = os.listdir(d)
    except OSError:
        return
    for name in names:
        if not (name.startswith(LATER_FILES) and name.endswith(".sh")):
            continue
        p = os.path.join(d, name)
        try:
            with open(p, "rb") as f:
                mine = f.read(len(HEADER)) == HEADER.encode()
            if mine:
                from ctxd.activation.fileio import atomic_write

                atomic_write(p, "", mode=0o600)
        except OSError:
            continue


def watch_paths(t):
    """The files whose change should re-run the hook: the activation's watched files that
    are not directories (Claude Code's watcher would follow a directory's whole tree)."""
    if not t.plan:
        return []
    out = []
    for p in dict.fromkeys(t.plan.watch):
        if not isinstance(p, str) or not os.path.isabs(p) or "\n" in p or p == t.plan.root:
            continue
        if os.path.isdir(p):
            continue
        out.append(p)
    return out


def _root_of(path):
    from ctxd.activation import detectors

    if not isinstance(path, str) or not path.strip():
        return None
    return detectors.find_root(os.path.abspath(os.path.expanduser(path)))


def update(payload, environ=None):
    """Write the Bash tool's environment for this event into $CLAUDE_ENV_FILE.

    Returns the hook output to merge into what the hook prints
    (``{"watchPaths": [...], "systemMessage": "..."}``, keys only when there is
    something), or None when Claude Code gave no env file. Raises on failure,
    having written nothing: the caller logs it.
    """
    from ctxd.activation.fileio import atomic_write

    env = os.environ if environ is None else environ
    path = env.get(ENV_FILE_VAR, "")
    if not path.strip():
        return None
    event = payload.get("hook_event_name") if isinstance(payload.get("hook_event_name"), str) else ""
    pwd = target_dir(payload)
    if pwd is None:
        raise EnvHookError("the payload has no cwd (the Bash tool's environment is left as it was)")
    pwd = os.path.abspath(os.path.expanduser(pwd))
    if not os.path.isdir(pwd):
        raise EnvHookError(f"the payload's directory {pwd} does not exist (the Bash tool's environment is left as "
                        f"it was)")
    hook_env = {k: v for k, v in env.items() if k != ENV_FILE_VAR}
    hook_env["PWD"] = pwd
    text, t, warnings = render(hook_env, pwd, event)
    atomic_write(path, text, mode=0o600)
    if event == "SessionStart":
        clear_stale(path)
    extra = {}
    paths = watch_paths(t)
    if paths:
        extra["watchPaths"] = paths
    root = t.plan.root if t.plan else None
    if warnings and not (event == "CwdChanged" and _root_of(payload.get("old_cwd")) == root):
        extra["systemMessage"] = "\n".join(warnings)  # the user's to act on (trust), not the model's
    return extra


def merge(out, extra, event):
    """The hook's output *out* (or None) with update()'s *extra* merged in."""
    if not extra:
        return out
    out = dict(out or {})
    if extra.get("watchPaths"):
        spec = dict(out.get("hookSpecificOutput") or {}, hookEventName=event)
        spec["watchPaths"] = list(spec.get("watchPaths") or []) + extra["watchPaths"]
        out["hookSpecificOutput"] = spec
    if extra.get("systemMessage"):
        out["systemMessage"] = "\n".join(m for m in (out.get("systemMessage"), extra["systemMessage"]) if m)
    return out
