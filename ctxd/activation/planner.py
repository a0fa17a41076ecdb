"""Build the activation plan for a root: detectors + trusted .contextrc files.

Order of precedence (later wins): built-in detectors, then .contextrc files
from the farthest to the nearest (nearest wins per key), then the
[branch."glob"] sections matching the current git branch. PATH entries from
.contextrc files go in front of detected ones (nearest file first).
"""

import os

from ctxd import paths
from ctxd.activation import config, detectors, trust
from ctxd.activation.detectors import Plan
from ctxd.errors import ConfigError

UNTRUSTED_MSG = ("ctxd: {path} is not trusted, so nothing in it applies. Review it, then run: ctxd allow {dir}")
CHANGED_MSG = ("ctxd: {path} changed since you allowed it, so nothing in it applies. Review it, then run: "
               "ctxd allow {dir}")
# What the kernel lets a command start with: one NAME=value string (Linux MAX_ARG_STRLEN, with
# its NUL), and the whole environment (ARG_MAX is 1 MiB on macOS; Linux's 2 MiB also holds argv).
# A bigger value would make every command in the project fail with "Argument list too long".
ARG_STRLEN_MAX = 131072
ENV_TOTAL_MAX = 1 << 20
SIZE_MSG = ("ctxd: {src}: {name} is {size} bytes with its name; the kernel passes at most "
            f"{ARG_STRLEN_MAX} to a command (not set)")
LINK_MSG = ("ctxd: {path} is a symlink to {target} and is not trusted here, so nothing in it applies "
            "(trust is per directory, never borrowed from the file a link points at). Review it, then run: "
            "ctxd allow {dir}")
INHERIT_MSG = ("ctxd: {parent} is not trusted, so its detected environment is not inherited "
               "([ctxd] inherit_root). Run: ctxd allow {parent}")
ROOT_MSG = ("ctxd: {root} is not trusted, so its detected environment ({what}) is not applied. "
            "Run: ctxd allow {root}  (or trust the whole tree: ctxd allow --tree DIR)")


def build(root, base, environ):
    plan = Plan(root)
    try:
        cfg = config.load(environ)
    except ConfigError as e:
        plan.warnings.append(f"ctxd: {e.message}")
        cfg = config.DEFAULTS
    plan.watch.append(paths.config_file(environ))
    plan.timeout = cfg["hooks"]["timeout"]

    files, probed = detectors.rc_chain(root)
    if files:  # the parser loads only for a project that has one
        from ctxd.activation import contextrc
    for p in probed:
        if p not in files:
            plan.watch.append(p)  # a .contextrc appearing there re-activates
    layers = []  # (path, parsed) of trusted files, nearest first
    error = None
    for path in files:
        plan.watch.append(path)
        try:
            with open(path, "rb") as f:
                data = f.read()  # the one read: trust is decided on these bytes, and they are what applies
        except OSError as e:
            plan.files.append((path, "unreadable", e.strerror))
            plan.warnings.append(f"ctxd: {path}: {e.strerror}")
            continue
        from ctxd.activation.fileio import sha256_hex

        status = trust.file_status(path, sha256_hex(data), environ)
        plan.watch.extend(trust.rc_files(path, environ))
        if status == trust.CHANGED:
            # The user edited a file they trusted: a mistake in it deserves its
            # location now, not only once they run `ctxd allow`.
            try:
                contextrc.parse(path, data)
            except ConfigError as e:
                plan.files.append((path, status, e.message))
                error = e.message
                break
        if status != trust.ALLOWED:
            plan.files.append((path, status, None))
            d = os.path.dirname(path)
            if status == trust.UNTRUSTED and os.path.islink(path):
                plan.warnings.append(LINK_MSG.format(path=path, target=os.path.realpath(path), dir=_q(d)))
            elif status == trust.UNTRUSTED:
                plan.warnings.append(UNTRUSTED_MSG.format(path=path, dir=_q(d)))
            elif status == trust.CHANGED:
                plan.warnings.append(CHANGED_MSG.format(path=path, dir=_q(d)))
            continue
        try:
            parsed = contextrc.parse(path, data)
        except ConfigError as e:
            plan.files.append((path, status, e.message))
            error = e.message
            break
        plan.files.append((path, status, None))
        if parsed["unknown"]:
            plan.warnings.append(f"ctxd: {path}: unknown keys ignored: {', '.join(parsed['unknown'])}")
        layers.append((path, parsed))
        if not parsed["inherit"]:
            break

    # Is the root trusted to put its own directories on PATH (and activate a venv)?
    root_rc = os.path.join(root, detectors.CONTEXTRC)
    allow_file, deny_file = trust.root_files(root, environ)
    denied = os.path.exists(deny_file)
    plan.trusted = not denied and (
        any(p == root_rc for p, _ in layers)
        or trust.allows_dir(allow_file)
        or trust.under_trusted_tree(root, list(cfg["trust"]["roots"]) + trust.trees(environ))
    )
    plan.watch.append(allow_file)
    plan.watch.append(deny_file)
    plan.watch.append(trust.tree_dir(environ))

    if error:
        # Nothing half applied: the environment stays at the clean snapshot.
        plan.warnings.append(f"ctxd: {error}")
        detectors.detect(root, base, plan, apply=False)
        plan.notes.append("the .contextrc error above stops everything else from applying")
        _finish(plan, environ, error=True)
        return plan

    enabled = {}
    for _path, parsed in reversed(layers):
        enabled.update(parsed["detect"])
    probe = Plan(root)
    detectors.detect(root, base, probe, enabled=enabled)
    plan.types = probe.types
    plan.watch.extend(probe.watch)
    plan.notes.extend(probe.notes)
    plan.pins = probe.pins
    if plan.trusted:
        plan.sets.extend(probe.sets)
        plan.prepend.extend(probe.prepend)
    elif denied:
        plan.notes.append("detected environment withheld: you denied this root (ctxd allow undoes it)")
    elif probe.sets or probe.prepend:
        what = ", ".join(sorted({s.split(":")[0] for _, _, s, _ in probe.sets} |
                                {s.split(":")[0] for _, s in probe.prepend}))
        plan.warnings.append(ROOT_MSG.format(root=_q(root), what=what))
        plan.notes.append("detected environment withheld: root not trusted")
    # [ctxd] inherit_root (nearest file saying it wins): the enclosing root's detected environment
    if next((p["inherit_root"] for _, p in layers if p.get("inherit_root") is not None), False):
        _inherit_root(plan, base, environ, enabled, layers, cfg)

    # .contextrc layers, farthest first so the nearest wins per key
    running = dict(base)
    for s in plan.sets:
        running[s[0]] = s[1]
    home = environ.get("HOME") or os.path.expanduser("~")
    env_final = {}  # name -> (value, source), insertion order = first appearance
    front, back = [], []
    hooks = {"on_enter": None, "on_leave": None, "timeout": None}
    ctx = {}
    branch_layers = []
    for path, parsed in reversed(layers):
        d = os.path.dirname(path)
        for entry in parsed.get("env_files", ()):
            _env_file(plan, contextrc.resolve_dir(entry, d, home), d, running, env_final)
        for name, value in parsed["env"]:
            env_final[name] = (value, path, d)
        front[:0] = [(contextrc.resolve_dir(e, d, home), path) for e in parsed["path"]["prepend"]]
        back.extend((contextrc.resolve_dir(e, d, home), path) for e in parsed["path"]["append"])
        for k in ("on_enter", "on_leave"):
            if parsed["hooks"][k]:
                hooks[k] = (parsed["hooks"][k], d)
        if parsed["hooks"]["timeout"]:
            hooks["timeout"] = parsed["hooks"]["timeout"]
        ctx.update(parsed["context"])
        for glob, spec in parsed["branch"]:
            branch_layers.append((path, d, glob, spec))

    if branch_layers:
        branch, head = contextrc.git_branch(root)
        plan.branch = branch
        if head:
            plan.watch.append(head)
        if branch is not None:
            from fnmatch import fnmatchcase

            for path, d, glob, spec in branch_layers:
                if fnmatchcase(branch, glob):
                    src = f'{path} [branch."{glob}"]'
                    for name, value in spec["env"]:
                        env_final[name] = (value, src, d)
                    front[:0] = [(contextrc.resolve_dir(e, d, home), src) for e in spec["path"]["prepend"]]
                    back.extend((contextrc.resolve_dir(e, d, home), src) for e in spec["path"]["append"])

    added, too_many = 0, []
    for name, (value, src, d) in env_final.items():
        if value is None:
            plan.unset(name, src)
            running.pop(name, None)
        else:
            if d is not None:  # None: a .env value, resolved already (python-dotenv's ${VAR} rules)
                value = contextrc.expand(value, _Names(running, root, d), home)
            size = _env_bytes(name, value)
            if size > ARG_STRLEN_MAX:
                plan.warnings.append(SIZE_MSG.format(src=src, name=name, size=size))
                continue
            added += size
            if added > 65536 and _env_total(running, name) + size + 8 > ENV_TOTAL_MAX:
                too_many.append(name)
                continue
            plan.set(name, value, src)
            running[name] = value
    if too_many:
        plan.warnings.append(f"ctxd: {', '.join(too_many)} not set: with them the environment would pass "
                             f"{ENV_TOTAL_MAX} bytes, more than a command can be started with")
    plan.prepend[:0] = front
    plan.append.extend(back)
    if hooks["on_enter"]:
        plan.on_enter = hooks["on_enter"][0]
    if hooks["on_leave"]:
        plan.on_leave = hooks["on_leave"][0]
    if hooks["timeout"]:
        plan.timeout = hooks["timeout"]
    plan.context = ctx
    _finish(plan, environ)
    return plan


def _inherit_root(plan, base, environ, enabled, layers, cfg):
    """Add the detected environment of the project root enclosing *plan*'s root (a package in a
    monorepo gets the monorepo's node_modules/.bin), like direnv's source_up: its variables go
    before the root's own in plan.sets (so the root's win), its PATH entries behind the root's
    own. Only when that root is trusted itself; its files and trust records are watched."""
    root = plan.root
    if root == "/" or detectors.ceiling(root) == root:
        return
    parent = detectors.find_root(os.path.dirname(root))
    if parent is None:
        plan.notes.append("[ctxd] inherit_root: no project root encloses this one")
        return
    allow_file, deny_file = trust.root_files(parent, environ)
    plan.watch += [allow_file, deny_file]
    rc = os.path.join(parent, detectors.CONTEXTRC)
    trusted = not os.path.exists(deny_file) and (
        any(p == rc for p, _ in layers)
        or trust.allows_dir(allow_file)
        or trust.under_trusted_tree(parent, list(cfg["trust"]["roots"]) + trust.trees(environ))
        or _rc_allowed(rc, plan, environ)
    )
    probe = Plan(parent)
    detectors.detect(parent, base, probe, enabled=enabled)
    plan.watch.extend(probe.watch)
    if not trusted:
        if probe.sets or probe.prepend:
            plan.warnings.append(INHERIT_MSG.format(parent=_q(parent)))
        plan.notes.append(f"inherit_root: {parent} not trusted, its detected environment not inherited")
        return
    via = f" (inherited from {parent})"
    plan.sets[:0] = [(n, v, src + via, if_unset) for n, v, src, if_unset in probe.sets]
    plan.prepend.extend((e, src + via) for e, src in probe.prepend)
    plan.notes.append(f"inherit_root: the detected environment of {parent} applies behind this root's")


def _rc_allowed(rc, plan, environ):
    """Whether the .contextrc *rc* (of the enclosing root, beyond where the chain stopped) is allowed."""
    if not os.path.isfile(rc):
        return False
    from ctxd.activation.fileio import sha256_hex

    plan.watch.append(rc)
    plan.watch.extend(trust.rc_files(rc, environ))
    try:
        with open(rc, "rb") as f:
            return trust.file_status(rc, sha256_hex(f.read()), environ) == trust.ALLOWED
    except OSError:
        return False


class _Names:
    """What ${NAME} in an [env] value sees: ${CTXD_ROOT} (the project root) and
    ${CTXD_RC_DIR} (the directory of the .contextrc setting it), else the environment."""

    __slots__ = ("env", "root", "rc_dir")

    def __init__(self, env, root, rc_dir):
        self.env, self.root, self.rc_dir = env, root, rc_dir

    def get(self, name, default=None):
        if name == "CTXD_ROOT":
            return self.root
        if name == "CTXD_RC_DIR":
            return self.rc_dir
        return self.env.get(name, default)


def _env_bytes(name, value):
    """What NAME=value takes in a new process's environment block, its NUL included."""
    return len(name) + len(value.encode("utf-8", "surrogateescape")) + 2


def _env_total(env, but):
    """The environment block *env* makes without *but* (+ 8: the pointer to each string)."""
    return sum(_env_bytes(k, v) + 8 for k, v in env.items() if k != but and v is not None)


def _env_file(plan, path, d, running, env_final):
    """Add a trusted .contextrc's .env file to the plan: its values (source: the file), its
    warnings, and the file itself to the watched paths (an edit, or the file appearing,
    re-runs the hook like an edit of the .contextrc does). python-dotenv loads only here.
    A file in the .contextrc's directory *d* that a symlink takes out of it is not read."""
    from ctxd.activation import dotenv_files

    plan.watch.append(path)
    real = _link_out(path, d)
    if real:
        plan.warnings.append(f"ctxd: {path} is a symlink out of {d} (to {real}), so it is not loaded "
                             f"(an [env] files entry never reads outside its project through a link)")
        return
    values, warnings, existed = dotenv_files.read(path, running)
    plan.warnings.extend(warnings)
    if not existed:
        plan.notes.append(f"env file {path}: not found (watched: creating it applies it)")
    else:
        plan.notes.append(f"env file {path}: treat it as code: ctxd allow does not cover its content, and "
                          "its variables reach every command (NODE_OPTIONS, PAGER, GIT_SSH_COMMAND ... run code)")
    for name, value in values:
        env_final[name] = (value, path, None)
        running[name] = value


def _inside(path, d):
    return path == d or path.startswith(d.rstrip("/") + "/")


def _link_out(path, d):
    """The real path of *path* when it lies in *d* as written but a symlink takes it out, else None.
    (An entry written outside *d*, like ~/secrets.env, is the reviewed .contextrc's own choice.)"""
    if not _inside(path, d):
        return None
    real = os.path.realpath(path)
    return None if _inside(real, os.path.realpath(d)) else real


def _foreign_dir(path, root):
    """Why the project-local context directory *path* must not be used, or None: a symlink
    out of *root*, or a directory another user owns (a clone can commit the first; a shared
    checkout can hold the second). One that does not exist yet is ctxd's to create."""
    try:
        if os.path.islink(path):
            real = os.path.realpath(path)
            if not _inside(real, os.path.realpath(root)):
                return f"is a symlink out of the project (to {real})"
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"cannot be checked ({e.strerror})"
    if st.st_uid != os.getuid():
        return f"belongs to another user (uid {st.st_uid})"
    return None


def _finish(plan, environ, error=False):
    root = plan.root
    ctx_dir = paths.context_dir(root, environ)
    if plan.context.get("store") == "project":
        local = os.path.join(root, ".ctxd")
        why = _foreign_dir(local, root)
        if why:
            plan.warnings.append(f"ctxd: {local} {why}, so the conversation store is not kept there "
                                 f"(it stays in {ctx_dir}); remove it, and ctxd creates its own")
        else:
            ctx_dir = local
    types = ",".join(t for t, _ in plan.types)
    flags = []
    if error:
        flags.append("error")
    elif any(st in (trust.UNTRUSTED, trust.CHANGED, trust.DENIED) for _, st, _ in plan.files):
        flags.append("blocked")
    elif not plan.trusted and "detected environment withheld: root not trusted" in plan.notes:
        flags.append("untrusted")
    name = os.path.basename(root.rstrip("/")) or "/"
    plan.status = name + (f" ({types})" if types else "") + "".join(f" !{f}" for f in flags)
    plan.set("CTXD_ROOT", root, "ctxd: project root")
    plan.set("CTXD_TYPES", types, "ctxd: detected types")
    plan.set("CTXD_CONTEXT_DIR", ctx_dir, "ctxd: conversation context")
    plan.set("CTXD_STATUS", plan.status, "ctxd: prompt summary")


def _q(path):
    """Quote a path for the suggested command line only when it needs it."""
    if path and all(c.isalnum() or c in "/._-+~@%,=" for c in path):
        return path
    return "'" + path.replace("'", "'\\''") + "'"
