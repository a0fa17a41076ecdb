"""Which project (and which context directory) a directory belongs to."""

import os

from ctxd import paths
from ctxd.errors import CtxdError, ExitCode


class Project:
    __slots__ = ("root", "context_dir", "settings", "config", "secrets")

    def __init__(self, root, context_dir, settings, config, secrets=None):
        self.root = root
        self.context_dir = context_dir
        self.settings = settings  # merged trusted .contextrc [context] table
        self.config = config  # parsed config.toml (with "raw")
        self.secrets = secrets or {}  # {NAME: value} trusted .contextrc files set whose names look secret


def _git_root(start):
    d = start
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        if d in ("/", ""):
            return None
        d = os.path.dirname(d)


def locate(cwd=None, environ=None):
    """The project for *cwd*: the ctxd root (markers), else the git root, else cwd itself."""
    from ctxd.activation import config, planner
    from ctxd.activation.detectors import find_root
    from ctxd.errors import ConfigError

    environ = dict(os.environ) if environ is None else environ
    if cwd is None:
        from ctxd.activation.export import logical_pwd

        cwd = logical_pwd(environ)
    cwd = os.path.abspath(cwd)
    root = find_root(cwd) or _git_root(cwd) or cwd
    try:
        cfg = config.load(environ)
    except ConfigError:
        cfg = dict(config.DEFAULTS, raw={})
    plan = planner.build(root, dict(environ), environ)
    ctx_dir = None
    for name, value, _src, _o in plan.sets:
        if name == "CTXD_CONTEXT_DIR":
            ctx_dir = value
    from ctxd.memory.text.redact import secret_env

    return Project(root, ctx_dir or paths.context_dir(root, environ), plan.context, cfg, secret_env(plan))


def exclude_from_git(project):
    """Keep a project-local store (<root>/.ctxd) out of git via .git/info/exclude."""
    if os.path.dirname(project.context_dir) != project.root:
        return
    git = os.path.join(project.root, ".git")
    if not os.path.isdir(git):
        return
    exclude = os.path.join(git, "info", "exclude")
    line = "/" + os.path.basename(project.context_dir) + "/"
    try:
        with open(exclude, encoding="utf-8") as f:
            if line in (l.strip() for l in f):
                return
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(exclude), exist_ok=True)
    with open(exclude, "a", encoding="utf-8") as f:
        f.write(f"\n# ctxd conversation store\n{line}\n")


def redactor(project):
    """The project's redactor: config.toml's [redact] rules, and the values ctxd itself sets from
    trusted .contextrc files whose names look secret."""
    from ctxd.memory.text import redact as redact_mod

    raw = project.config.get("raw", {}) if isinstance(project.config, dict) else {}
    return redact_mod.from_config(raw, env=getattr(project, "secrets", None))


def open_store(project, *, redact=True, create=True, busy_timeout=None):
    from ctxd.memory.store.db import BUSY_TIMEOUT, DEFAULT_OFFLOAD, Store

    raw = project.config.get("raw", {}) if isinstance(project.config, dict) else {}
    threshold = (raw.get("store") or {}).get("offload_threshold", DEFAULT_OFFLOAD) if isinstance(raw, dict) else DEFAULT_OFFLOAD
    if create:
        exclude_from_git(project)
    return Store(project.context_dir, redactor=redactor(project) if redact else None,
                 offload_threshold=int(threshold), create=create,
                 busy_timeout=BUSY_TIMEOUT if busy_timeout is None else busy_timeout)


COMPACT_CHARS = 800  # the compact system block: the first paragraph, at most this long


def system_block(project):
    """(full, compact) project instructions from .contextrc [context] system / system_file;
    (None, None) when there are none."""
    s = project.settings or {}
    text = s.get("system")
    if s.get("system_file"):
        path = os.path.join(project.root, s["system_file"])
        real, root = os.path.realpath(path), os.path.realpath(project.root)
        if real != root and not real.startswith(root.rstrip("/") + "/") and _inside(path, project.root):
            # the reviewed .contextrc names a project file; a committed link must not feed the
            # agent a file from elsewhere (~/.ssh/..., another project's notes)
            raise CtxdError(f"[context] system_file {path} is a symlink out of the project (to {real}); "
                            "not reading it", ExitCode.UNTRUSTED)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise CtxdError(f"[context] system_file {path}: {e.strerror}", ExitCode.CONFIG) from None
    if not text:
        return None, None
    first_para = text.strip().split("\n\n", 1)[0]
    return text.strip(), first_para[:COMPACT_CHARS]


def _inside(path, d):
    """Whether *path* as written lies in *d* (an entry written outside, like ~/notes.md, is the
    reviewed .contextrc's own choice)."""
    path, d = os.path.normpath(path), os.path.normpath(d)
    return path == d or path.startswith(d.rstrip("/") + "/")
