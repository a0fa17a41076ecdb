"""The project environment for a directory, computed for a process other than the shell:
``ctxd exec DIR -- CMD`` runs CMD in it, ``ctxd export json|dotenv|gha [DIR]`` prints it.

Both start from the *clean* environment: the caller's, with the activation of
the shell it was started from undone through the saved snapshot (CTXD_STATE),
exactly as the hook undoes it on a cd. So a command run from inside project A
for project B never inherits A's venv on PATH, and what gets printed for DIR
does not depend on where the caller's shell happens to be.

The target is then what the hook would build for DIR, with one difference in
what counts as a failure: the hook applies what it may and says the rest once
at the prompt; here anything withheld (an untrusted or edited .contextrc, an
untrusted root whose detected environment is held back, a .contextrc error)
means the *plain* environment and one stderr line, or with ``--strict`` a
refusal with its exit code (docs/exit-codes.md). An untrusted .contextrc is
never applied, not even in part.
"""

import os

from ctxd.activation import detectors, envdiff, trust
from ctxd.activation.state import STATE_VAR, WATCH_VAR, decode, encode
from ctxd.errors import ExitCode, StateError

# variables of the calling shell's hook, never meaningful in another process
SHELL_ONLY = (STATE_VAR, WATCH_VAR, "CTXD_NEED_RESTORE")


class Target:
    """What DIR's project environment is, for a process started from *environ*.

    ``clean``: the caller's environment without its shell's activation;
    ``env``: the environment to use (``clean`` when something is withheld);
    ``problem``: None, or (kind, exit code, reason) when the project environment does not
    apply; kind is "missing" (no such directory), "none" (no project there), "config" (a
    .contextrc error) or "untrusted" (something in the chain is not trusted or denied);
    ``state_problem``: (exit code, reason) when the caller's CTXD_STATE could not be read (its
    shell's activation cannot be undone; the rest still applies unless --strict);
    ``warnings``: lines the plan wants shown (a .env line that does not parse ...);
    ``state``: the activation's State (None when nothing applies).
    """

    __slots__ = ("directory", "exists", "root", "plan", "clean", "env", "state", "problem", "state_problem",
                 "warnings")

    def __init__(self, directory):
        self.directory = directory
        self.exists = False
        self.root = None
        self.plan = None
        self.clean = {}
        self.env = {}
        self.state = None
        self.problem = None
        self.state_problem = None
        self.warnings = []

    def changes(self):
        """[(name, value or None)] moving ``clean`` to ``env``, PATH last (as one value)."""
        names = sorted(n for n in set(self.clean) | set(self.env) if n != envdiff.PATH)
        out = envdiff.changed_names(self.clean, self.env, names)
        if self.clean.get(envdiff.PATH) != self.env.get(envdiff.PATH):
            out.append((envdiff.PATH, self.env.get(envdiff.PATH)))
        return out

    def path_added(self):
        """(front, back): the PATH entries the activation puts before and after the clean PATH."""
        if not self.state:
            return [], []
        entries = envdiff.split_path(self.env.get(envdiff.PATH))
        added = set(self.state.path_added)
        front = []
        for e in entries:
            if e not in added:
                break
            front.append(e)
        back = [e for e in entries[len(front):] if e in added]
        return front, back


def clean_environment(environ):
    """(clean env, warning or None): *environ* with its shell's activation undone."""
    env = dict(environ)
    warning = None
    token = env.get(STATE_VAR)
    old = None
    if token:
        try:
            old = decode(token)
        except StateError as e:
            warning = (ExitCode.STATE, f"{e.message}, so the calling shell's project environment is not undone")
    env = envdiff.restore(env, old)
    for name in SHELL_ONLY:
        env.pop(name, None)
    return env, warning


def resolve_dir(directory, environ):
    from ctxd.activation.export import logical_pwd

    here = logical_pwd(environ)
    if not directory:
        return here
    home = environ.get("HOME") or os.path.expanduser("~")
    if directory == "~" or directory.startswith("~/"):
        directory = home + directory[1:]
    return os.path.normpath(os.path.join(here, directory))


def build(environ, directory=None):
    """The Target for *directory* (default: the logical $PWD) from the caller's *environ*."""
    from ctxd.activation import planner

    t = Target(resolve_dir(directory, environ))
    t.clean, t.state_problem = clean_environment(environ)
    t.env = dict(t.clean)
    t.exists = os.path.isdir(t.directory)
    if not t.exists:
        what = "not a directory" if os.path.exists(t.directory) else "no such directory"
        t.problem = ("missing", ExitCode.NOT_FOUND, f"{what}: {t.directory}")
        return t
    t.root = detectors.find_root(t.directory)
    if not t.root:
        t.problem = ("none", ExitCode.NOT_FOUND, f"no project at {t.directory} (no marker or .contextrc here or above)")
        return t
    t.plan = plan = planner.build(t.root, t.clean, environ)
    err = next((e for _, _, e in plan.files if e), None)
    if err:
        t.problem = ("config", ExitCode.CONFIG, err)
        return t
    withheld = [(p, st) for p, st, _ in plan.files if st in (trust.UNTRUSTED, trust.CHANGED, trust.DENIED)]
    if withheld:
        path, st = withheld[0]
        d = os.path.dirname(path)
        what = {trust.UNTRUSTED: f"is not trusted (review it, then: ctxd allow {d})",
                trust.CHANGED: f"changed since you allowed it (review it, then: ctxd allow {d})",
                trust.DENIED: f"is denied (ctxd allow {d} undoes it)"}[st]
        t.problem = ("untrusted", ExitCode.UNTRUSTED, f"{path} {what}")
        return t
    if trust.is_denied(t.root, environ):
        t.problem = ("untrusted", ExitCode.UNTRUSTED, f"{t.root} is denied (ctxd allow {t.root} undoes it)")
        return t
    if "detected environment withheld: root not trusted" in plan.notes:
        t.problem = ("untrusted", ExitCode.UNTRUSTED, f"{t.root} is not trusted (ctxd allow {t.root})")
        return t
    t.env, t.state = envdiff.apply(t.clean, plan)
    t.warnings = list(plan.warnings)
    return t


def child_environment(t):
    """The environment for a command run in *t*: the project's, with the state a hook in a
    shell started there needs to undo it on leaving (CTXD_STATE, CTXD_WATCH)."""
    env = dict(t.env)
    if t.state:
        from ctxd.activation.export import watch_value

        env[STATE_VAR] = encode(t.state)
        env[WATCH_VAR] = watch_value(t.plan, env)
    return env


def judge(t, strict, command, fallback, refused):
    """(stderr lines, exit code or None) for *t*: what to say, and whether to refuse (--strict).

    *fallback* says what happens instead when not strict ("running make without the project
    environment"), *refused* what does not happen when strict ("make not run").
    """
    if t.state_problem and strict:
        return [f"ctxd: {command}: {t.state_problem[1]} (--strict: {refused})"], t.state_problem[0]
    lines = [f"ctxd: {command}: {t.state_problem[1]}"] if t.state_problem else []
    if t.problem:
        kind, code, reason = t.problem
        if strict:
            return lines + [f"ctxd: {command}: {reason} (--strict: {refused})"], code
        if kind != "none":  # no project there: nothing to apply, nothing to say
            lines.append(f"ctxd: {command}: {reason}; {fallback}")
        return lines, None
    return lines + list(t.warnings), None
