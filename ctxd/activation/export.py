"""``ctxd export SHELL``: move the shell from its environment to the target.

1. read the state left in the environment by the last activation;
2. find the project root above $PWD and plan its environment;
3. restore the snapshot, apply the plan, and diff against what the shell has;
4. print that diff as shell code (with the new state), or nothing at all.
"""

import os
import time

from ctxd import paths
from ctxd.activation import detectors, envdiff
from ctxd.activation.state import STATE_VAR, TOLD_VAR, WATCH_VAR, decode, encode
from ctxd.errors import StateError

MANAGED = ("CTXD_ROOT", "CTXD_TYPES", "CTXD_CONTEXT_DIR", "CTXD_STATUS")


def _sha1_hex(text):
    try:  # the builtin module is cheap; hashlib loads OpenSSL (~13 ms)
        from _sha1 import sha1
    except ImportError:  # pragma: no cover - builds without builtin hashes
        from hashlib import sha1
    return sha1(text.encode("utf-8", "surrogateescape")).hexdigest()


def logical_pwd(environ):
    """$PWD as the shell has it (symlinks kept), when it is really the cwd."""
    pwd = environ.get("PWD", "")
    try:
        if pwd.startswith("/") and os.path.samefile(pwd, "."):
            return os.path.normpath(pwd) if pwd != "/" else "/"
    except OSError:
        pass
    return os.getcwd()


class Transition:
    """Everything one export decides; `ctxd show` renders the same object."""

    __slots__ = ("old", "plan", "base", "target", "state", "watch", "warnings", "told")

    def __init__(self):
        self.old = None
        self.plan = None
        self.base = None
        self.target = None
        self.state = None
        self.watch = None
        self.warnings = []
        self.told = {}  # warning -> its TOLD_VAR key: a version pin's notice, once per shell


def transition(environ, pwd=None, *, old_state="read", run_hooks=False, shell=None):
    """Compute the move from *environ* to the environment for *pwd*.

    With *run_hooks*, trusted on_leave commands of the project being left run
    first (in its environment), and on_enter commands of the project being
    entered run once its environment is computed; their output becomes
    warnings shown by the hook. With *shell*, the names it reserves are left
    out of the plan (see refuse()).
    """
    from ctxd.activation import planner

    t = Transition()
    if old_state == "read":
        token = environ.get(STATE_VAR)
        if token:
            t.old = decode(token)  # StateError propagates: the caller decides
    else:
        t.old = old_state
    pwd = pwd or logical_pwd(environ)
    root = detectors.find_root(pwd)
    old = t.old
    clean = envdiff.restore(environ, old)
    t.plan = planner.build(root, clean, environ) if root else None
    # The state records the hooks of the environment it loaded: the on_enter that ran (its
    # signature) and the on_leave owed for it. Unless the new plan loads the very same hooks
    # for the same root, that environment is being unloaded (a cd out, a deny, an edit that
    # blocks the file ...): its on_leave runs now, in it, and the new plan's on_enter after.
    sig = _sha1_hex("\0".join(t.plan.on_enter)) if t.plan and t.plan.on_enter else ""
    same_hooks = bool(old and old.root == root and old.enter_sig == sig
                      and (old.leave.get("cmds") or []) == (t.plan.on_leave if t.plan else []))
    if run_hooks and old and not same_hooks and old.leave.get("cmds"):
        from ctxd.activation import enter_leave

        t.warnings += enter_leave.run(old.leave["cmds"], dict(environ), old.leave.get("cwd") or old.root,
                                old.leave.get("timeout") or 5.0, "on_leave")
    if t.plan and shell is not None and shell.reserved:
        refuse(t.plan, shell)
    kept = ()
    if t.plan and old and old.root == root:
        kept = set(old.path_added) & {e for e, _ in t.plan.prepend + t.plan.append}
    t.base = envdiff.restore(environ, old, keep_path=kept) if kept else clean
    if not t.plan:
        t.target, t.state = dict(t.base), None
        _scrub_direnv(environ, t, kept)
        return t
    t.target, t.state = envdiff.apply(t.base, t.plan, kept=kept)
    _scrub_direnv(environ, t, kept)
    t.watch = watch_value(t.plan, environ)
    # notices: once per root, again only when they change
    seen = old.shown if (old and old.root == root) else []
    t.warnings += [w for w in t.plan.warnings if w not in seen]
    t.state.shown = list(t.plan.warnings)
    # a pin matching nothing installed: once per shell session (remembered in TOLD_VAR)
    if t.plan.pins:
        from ctxd.activation import pins

        keyed, told = pins.keyed_notices(t.plan, environ)
        if told:
            t.warnings += [line for _key, line in keyed]
            t.told.update((line, key) for key, line in keyed)
            t.target[TOLD_VAR] = told
    if t.plan.on_leave:
        t.state.leave = {"cmds": t.plan.on_leave, "timeout": t.plan.timeout, "cwd": root}
    t.state.enter_sig = sig
    if run_hooks and sig and not same_hooks:
        from ctxd.activation import enter_leave

        t.warnings += enter_leave.run(t.plan.on_enter, t.target, root, t.plan.timeout, "on_enter")
    return t


def refuse(plan, shell):
    """Drop from *plan* every variable *shell* reserves (zsh's ``path``, bash's ``UID``, fish's
    ``status``): setting one fails or stops the shell's eval half-way. One warning names them."""
    bad = [(s[0], s[2]) for s in plan.sets if s[0] in shell.reserved]
    if bad:
        plan.sets[:] = [s for s in plan.sets if s[0] not in shell.reserved]
        what = ", ".join(dict.fromkeys(f"{name} ({src})" for name, src in bad))
        plan.warnings.append(f"ctxd: {shell.name} reserves {what}: not set (skipped)")


def _scrub_direnv(environ, t, kept):
    """Undo the old activation in direnv's snapshot too (see activation/direnv.py)."""
    token = environ.get("DIRENV_DIFF")
    if token and t.old:
        from ctxd.activation import direnv

        new = direnv.scrub(token, t.old, kept)
        if new:
            t.target[direnv.VAR] = new


def watch_value(plan, environ):
    """The CTXD_WATCH text for *plan*; creates the stamp file it names."""
    lines, newest = [], None
    for path in dict.fromkeys(plan.watch):
        if "\n" in path:
            continue
        try:
            st = os.stat(path)
        except OSError:
            lines.append("-" + path)
            continue
        lines.append("+" + path)
        newest = st.st_mtime_ns if newest is None else max(newest, st.st_mtime_ns)
    stamp = ""
    if newest is not None:
        stamp = _stamp(plan.root, newest, environ)
    return "\n".join([stamp] + lines)


def _stamp(root, mtime_ns, environ):
    """A file whose mtime is *mtime_ns*: the hooks test `watched -nt stamp`."""
    d = paths.stamp_dir(environ)
    name = _sha1_hex(f"{root}\0{mtime_ns}")[:20]
    path = os.path.join(d, name)
    try:
        if os.stat(path).st_mtime_ns == mtime_ns:
            return path
    except OSError:
        pass
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        with open(path, "wb"):
            pass
        os.utime(path, ns=(mtime_ns, mtime_ns))
        _prune_stamps(d)
    except OSError:
        return ""  # no stamp: edits go unnoticed until the next cd, never an error
    return path


def _prune_stamps(d, max_age=7 * 86400):
    # A stamp is written only when a watched file changed; old ones are dropped
    # now and then (by ctime, which utime sets to the moment of writing).
    if int(time.time()) % 16:
        return
    now = time.time()
    for entry in os.scandir(d):
        try:
            if now - entry.stat().st_ctime > max_age:
                os.unlink(entry.path)
        except OSError:
            pass


def render(shell, environ, t):
    """Shell code for transition *t*, or "" when the shell is already there."""
    new_token = encode(t.state) if t.state else None
    new_watch = t.watch if t.state else None
    names = set(MANAGED)
    names.add("DIRENV_DIFF")  # rewritten only when ctxd's undo reaches direnv's snapshot
    names.add(TOLD_VAR)  # set once a missing pin was reported; never restored
    if t.old:
        names.update(t.old.snap)
    if t.state:
        names.update(t.state.snap)
    names.discard(envdiff.PATH)
    out, told = [], []
    names.difference_update(shell.reserved)  # never touched, not even from an inherited snapshot
    for name, value in envdiff.changed_names(environ, t.target, sorted(names)):
        # TOLD_VAR goes after the notices it marks shown (a replay tests it before printing them)
        (told if name == TOLD_VAR else out).append(shell.unset_var(name) if value is None
                                                   else shell.set_var(name, value))
    if environ.get(envdiff.PATH) != t.target.get(envdiff.PATH):
        if envdiff.PATH in t.target:
            out.append(shell.set_path(envdiff.split_path(t.target[envdiff.PATH])))
        else:
            out.append(shell.unset_var(envdiff.PATH))
    changed = bool(out or told)
    for var, value in ((STATE_VAR, new_token), (WATCH_VAR, new_watch)):
        if environ.get(var) != value:
            changed = True
            out.append(shell.unset_var(var) if value is None else shell.set_var(var, value))
    # the hook says it has no restore function (a subshell inherited the state)
    need = bool(t.state) and environ.get("CTXD_NEED_RESTORE") == "1"
    if not changed and not t.warnings and not need:
        return ""
    replay = False
    if changed or need:
        out.append(restore_function(shell, t) if t.state else shell.drop_restore())
        # Without on_leave hooks, leaving for a plain directory needs no ctxd process:
        # the hook may call the restore function itself (see shell/ templates).
        out.append(shell.fast_leave(bool(t.state and not t.state.leave)))
        if changed and shell.revisit_var and t.state:  # the hook may replay this code (activation/revisit.py)
            from ctxd.activation import revisit

            pairs = revisit.check_pairs(environ, t, names)
            if pairs is not None:
                replay = True
                out.append(shell.set_flag(shell.revisit_var, shell.env_check(pairs, revisit.needed_files())))
    if t.warnings:
        from ctxd.termtext import visible  # each warning is one line: names in it may hold escapes
    for w in t.warnings:
        # A replay (entering again, the test holding TOLD_VAR's new value) is what ctxd
        # would print then: the pin's notice is not shown a second time in this shell.
        key = t.told.get(w) if replay else None
        w = visible(w)
        out.append(shell.warn(w) if key is None else shell.warn_unless_listed(w, TOLD_VAR, key))
    out += told
    return shell.join(out)


def restore_function(shell, t):
    """A shell function that undoes this activation without ctxd.

    The hooks call it when ctxd cannot run (uninstalled, crashed, state
    corrupt), so the shell still returns to the clean environment. Each
    variable is put back only while it still holds the value ctxd gave it.
    """
    # not t.base: on a re-export of the same root it keeps the PATH entries reused
    clean = envdiff.restore(t.target, t.state)
    stmts = []
    for name in sorted(t.state.snap):
        if name in shell.reserved:
            continue
        before = clean.get(name)
        undo = shell.unset_var(name) if before is None else shell.set_var(name, before)
        stmts.append(shell.if_value(name, t.target.get(name), undo))
    if t.state.path_added:
        before = clean.get(envdiff.PATH)
        undo = (shell.unset_var(envdiff.PATH) if before is None
                else shell.set_path(envdiff.split_path(before)))
        stmts.append(shell.if_value(envdiff.PATH, t.target.get(envdiff.PATH), undo))
    stmts.append(shell.unset_var(STATE_VAR))
    stmts.append(shell.unset_var(WATCH_VAR))
    return shell.define_restore(stmts)


def export(shell, environ, pwd=None):
    """(code, exit status) for `ctxd export`. Domain errors become warnings."""
    try:
        t = transition(environ, pwd, run_hooks=True, shell=shell)
    except StateError as e:
        # The snapshot cannot be read: the hook undoes the last activation with
        # the restore function it holds, drops the state, and asks again.
        from ctxd.termtext import visible

        code = shell.join([shell.warn(visible(f"ctxd: {e.message}; unloading the project environment"))])
        return code, e.exit_code
    return render(shell, environ, t), 0
