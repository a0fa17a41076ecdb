"""Put ctxd's hooks into (and take them out of) Claude Code, Gemini CLI and Codex settings.

The settings files belong to the user: ctxd merges its own entries in and
leaves every other key and hook as it was. ctxd's entries are recognised by
their command (it contains "ctxd" and "chat hook"), so installing twice is
the same as installing once and uninstalling removes only them. A file that
is not valid JSON (or TOML) is refused and left untouched. Writes are atomic
and keep the file's mode; a symlinked settings file is written through the
link.

Codex's ``notify`` program lives in ``config.toml``, which people comment:
the line is inserted as text at the top level (before the first table
header) and removed the same way, and every edit is checked by parsing the
result and comparing it with what was meant.
"""

import json
import os
import re
import shlex
import shutil
import sys

from ctxd.errors import ConfigError, CtxdError, ExitCode

CLAUDE = {
    "name": "Claude Code",
    "dir": ".claude",
    "file": "settings.json",
    "home_env": "CLAUDE_CONFIG_DIR",
    # (event, matcher or None); timeouts in seconds
    "events": (("SessionStart", "startup|resume|clear|compact"), ("UserPromptSubmit", None), ("Stop", None),
               ("PreCompact", None), ("SessionEnd", None)),
    "timeout": 30,
    "extra": {},
}
GEMINI = {
    "name": "Gemini CLI",
    "dir": ".gemini",
    "file": "settings.json",
    "home_env": None,
    # Gemini matches lifecycle events by exact string: no matcher means every source.
    "events": (("SessionStart", None), ("BeforeAgent", None), ("AfterAgent", None), ("PreCompress", None),
               ("SessionEnd", None)),
    "timeout": 30000,  # milliseconds
    "extra": {"name": "ctxd"},
}
CODEX = {
    "name": "Codex",
    "dir": ".codex",
    "file": "hooks.json",
    "home_env": "CODEX_HOME",
    "events": (("SessionStart", None), ("UserPromptSubmit", None), ("Stop", None)),
    "timeout": 30,  # seconds
    "extra": {},
}
TOOLS = {"claude": CLAUDE, "gemini": GEMINI, "codex": CODEX}


# -- the command written into the settings ---------------------------------------

def ctxd_program():
    """The words that start ctxd: its console script by absolute path when found."""
    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) == "ctxd" and os.path.isfile(argv0):
        return [os.path.abspath(argv0)]
    found = shutil.which("ctxd")
    if found:
        return [os.path.abspath(found)]
    return [sys.executable, "-m", "ctxd"]


def hook_command(tool, program=None):
    """The shell command string a settings file runs: '<ctxd> chat hook <tool>'."""
    return shlex.join(list(program or ctxd_program()) + ["chat", "hook", tool])


def is_ctxd_command(command):
    return isinstance(command, str) and "ctxd" in command and "chat hook" in command


# -- where the files are -----------------------------------------------------------

def _home_dir(spec, environ=None):
    env = os.environ if environ is None else environ
    override = env.get(spec["home_env"], "") if spec["home_env"] else ""
    if override.strip():
        return os.path.abspath(os.path.expanduser(override))
    return os.path.join(os.path.expanduser("~"), spec["dir"])


def settings_path(tool, scope, root=None, environ=None):
    """The file ctxd edits for *tool* at *scope* ("project": under *root*, or "user")."""
    spec = TOOLS[tool]
    if scope == "user":
        return os.path.join(_home_dir(spec, environ), spec["file"])
    return os.path.join(root, spec["dir"], spec["file"])


def codex_config_path(environ=None):
    return os.path.join(_home_dir(CODEX, environ), "config.toml")


# -- reading and writing -------------------------------------------------------------

def _read(path):
    """(bytes, text) of a file, or (None, None) when it does not exist."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None, None
    except OSError as e:
        raise CtxdError(f"cannot read {path}: {e.strerror}", ExitCode.ERROR) from None
    try:
        return raw, raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text; nothing was changed") from None


def load_json(path):
    """The settings object in *path* ({} when missing or empty). ConfigError if invalid."""
    _raw, text = _read(path)
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        hint = ""
        if "//" in text or "/*" in text:
            hint = " (ctxd edits plain JSON only: remove the comments, or add the hooks by hand)"
        raise ConfigError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}; nothing was changed{hint}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object at the top, found {type(data).__name__}; "
                          f"nothing was changed")
    return data


def write_text(path, text):
    """Atomically replace *path* (through a symlink), keeping its mode; new files get 0644."""
    from ctxd.activation.fileio import atomic_write

    target = os.path.realpath(path)
    try:
        mode = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644
    os.makedirs(os.path.dirname(target), exist_ok=True)
    atomic_write(target, text, mode=mode)
    try:
        os.chmod(target, mode)  # the umask may have narrowed it
    except OSError:
        pass


def dump_json(data):
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# -- merging hook entries ------------------------------------------------------------

def _strip_group(group):
    """(group without ctxd's hooks or None when nothing else was in it, how many removed)."""
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        return group, 0
    kept = [h for h in group["hooks"] if not (isinstance(h, dict) and is_ctxd_command(h.get("command")))]
    removed = len(group["hooks"]) - len(kept)
    if not removed:
        return group, 0
    if not kept:
        return None, removed
    return dict(group, hooks=kept), removed


def _has_ctxd(group):
    return _strip_group(group)[1] > 0


def _group(event, matcher, command, timeout, extra):
    hook = {"type": "command", "command": command, "timeout": timeout}
    hook.update(extra)
    group = {}
    if matcher:
        group["matcher"] = matcher
    group["hooks"] = [hook]
    return group


def merge_hooks(settings, groups, path="settings"):
    """Put each {event: group} into settings["hooks"]; return whether anything changed.

    An identical ctxd group is left alone; otherwise ctxd's old hooks in that
    event are removed and the new group takes the place of the first of them.
    """
    hooks = settings.get("hooks")
    if hooks is None:
        hooks = settings["hooks"] = {}
    elif not isinstance(hooks, dict):
        raise ConfigError(f"{path}: 'hooks' is not an object; nothing was changed")
    changed = False
    for event, group in groups.items():
        current = hooks.get(event)
        if current is None:
            hooks[event] = [group]
            changed = True
            continue
        if not isinstance(current, list):
            raise ConfigError(f"{path}: 'hooks.{event}' is not a list; nothing was changed")
        mine = [i for i, g in enumerate(current) if _has_ctxd(g)]
        if len(mine) == 1 and current[mine[0]] == group:
            continue
        pos = mine[0] if mine else len(current)
        new = []
        for i, g in enumerate(current):
            if i == pos:
                new.append(group)
            stripped, _n = _strip_group(g)
            if stripped is not None:
                new.append(stripped)
        if pos == len(current):
            new.append(group)
        hooks[event] = new
        changed = True
    return changed


def remove_hooks(settings):
    """Take every ctxd hook out of settings["hooks"]; return how many were removed.

    Groups and event lists that held only ctxd's hooks go too; so does "hooks"
    when nothing is left in it.
    """
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return 0
    total = 0
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept, removed = [], 0
        for g in groups:
            stripped, n = _strip_group(g)
            removed += n
            if stripped is not None:
                kept.append(stripped)
        if removed:
            total += removed
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
    if total and not hooks:
        del settings["hooks"]
    return total


# -- Codex notify in config.toml (as text) ---------------------------------------------

def _toml_string(s):
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\u{o:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def notify_line(words):
    return "notify = [" + ", ".join(_toml_string(w) for w in words) + "]\n"


def is_ctxd_notify(value):
    return (isinstance(value, list) and all(isinstance(w, str) for w in value) and "codex-notify" in value
            and any("ctxd" in w for w in value))


def _toml(path, text):
    import tomllib

    from ctxd.activation.fileio import toml_error_location

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        line, col, msg = toml_error_location(text, e)
        raise ConfigError(f"{path}:{line}:{col}: not valid TOML: {msg}; nothing was changed") from None


def _parses_to(text, expected):
    import tomllib

    try:
        return tomllib.loads(text) == expected
    except tomllib.TOMLDecodeError:
        return False


def _blank(line):
    return not line.strip()


def _insert_top_level(text, line, expected):
    """*text* with *line* at the top level, before the first table header (and its comments)."""
    if text and not text.endswith("\n"):
        text += "\n"
    lines = text.splitlines(keepends=True)
    headers = [i for i, l in enumerate(lines) if l.lstrip().startswith("[")]
    for h in headers:
        at = h
        while at > 0 and lines[at - 1].lstrip().startswith("#"):
            at -= 1  # the comment lines just above a header belong to it
        for i in dict.fromkeys((at, h)):
            # A paragraph of its own where the line before is blank (or none); _remove_top_level
            # undoes exactly this.
            after = ["\n"] if i == 0 or _blank(lines[i - 1]) else []
            candidate = "".join(lines[:i] + [line] + after + lines[i:])
            if _parses_to(candidate, expected):
                return candidate
    candidate = text + line
    if _parses_to(candidate, expected):
        return candidate
    return None


def _remove_top_level(text, key, expected):
    """*text* without the top-level `key = ...` (one or more lines), or None if not found."""
    import tomllib

    lines = text.splitlines(keepends=True)
    rx = re.compile(rf"\s*{re.escape(key)}\s*=")
    for i, l in enumerate(lines):
        if not rx.match(l):
            continue
        for end in range(i + 1, len(lines) + 1):
            try:
                chunk = tomllib.loads("".join(lines[i:end]))
            except tomllib.TOMLDecodeError:
                continue
            if list(chunk) != [key]:
                break
            rest = lines[:i] + lines[end:]
            if i < len(rest) and _blank(rest[i]) and (i == 0 or _blank(rest[i - 1])):
                del rest[i]  # the blank line that separated it
            candidate = "".join(rest)
            if _parses_to(candidate, expected):
                return candidate
            break
    return None


def install_notify(path, words, *, write=True):
    """Add ctxd's notify to Codex's config.toml. Returns (status, detail).

    status: "added", "updated", "unchanged", or "foreign" (another program is
    Codex's notify; left as it is; detail is its value).
    """
    _raw, text = _read(path)
    text = text or ""
    doc = _toml(path, text)
    current = doc.get("notify")
    if current == words:
        return "unchanged", None
    status = "added"
    if current is not None:
        if not is_ctxd_notify(current):
            return "foreign", current
        without = dict(doc)
        del without["notify"]
        text = _remove_top_level(text, "notify", without)
        if text is None:
            raise CtxdError(f"{path}: could not find the notify line to update; edit it by hand to read: "
                            f"{notify_line(words).strip()}", ExitCode.CONFIG)
        status = "updated"
    new = _insert_top_level(text, notify_line(words), dict(doc, notify=words))
    if new is None:
        raise CtxdError(f"{path}: could not place the notify line safely; add it by hand at the top: "
                        f"{notify_line(words).strip()}", ExitCode.CONFIG)
    if write:
        write_text(path, new)
    return status, None


def uninstall_notify(path):
    """Remove ctxd's notify line. Returns "removed", "absent" or "foreign"."""
    _raw, text = _read(path)
    if text is None:
        return "absent"
    doc = _toml(path, text)
    current = doc.get("notify")
    if current is None:
        return "absent"
    if not is_ctxd_notify(current):
        return "foreign"
    without = dict(doc)
    del without["notify"]
    new = _remove_top_level(text, "notify", without)
    if new is None:
        raise CtxdError(f"{path}: could not find ctxd's notify line; remove it by hand", ExitCode.CONFIG)
    write_text(path, new)
    return "removed"


def _codex_hooks_enabled(environ=None):
    import tomllib

    try:
        with open(codex_config_path(environ), "rb") as f:
            doc = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError):
        return False
    features = doc.get("features")
    return isinstance(features, dict) and features.get("codex_hooks") is True


# -- the operations ------------------------------------------------------------------

def install(tool, scope, root=None, program=None, environ=None):
    """Merge ctxd's hooks for *tool* into its settings; return lines to show the user."""
    spec = TOOLS[tool]
    program = list(program or ctxd_program())
    path = settings_path(tool, scope, root, environ)
    settings = load_json(path)  # refuses an invalid file before anything is written
    notify = None
    if tool == "codex" and scope == "user":
        # Check config.toml too before writing anything.
        notify = install_notify(codex_config_path(environ), program + ["chat", "hook", "codex-notify"],
                                write=False)
    command = hook_command(tool, program)
    groups = {event: _group(event, matcher, command, spec["timeout"], spec["extra"])
              for event, matcher in spec["events"]}
    events = ", ".join(groups)
    out = []
    if merge_hooks(settings, groups, path):
        write_text(path, dump_json(settings))
        out.append(f"ctxd: {spec['name']} hooks ({events}) installed in {path}")
    else:
        out.append(f"ctxd: {spec['name']} hooks already installed in {path}")
    if notify is not None:
        cfg = codex_config_path(environ)
        status, value = notify
        if status == "foreign":
            out.append(f"ctxd: {cfg} already sets notify = {json.dumps(value)}, which is not ctxd's; left it as it "
                       f"is (Codex runs one notify program; the hooks above still record prompts and transcripts)")
        elif status == "unchanged":
            out.append(f"ctxd: Codex notify already runs ctxd ({cfg})")
        else:
            install_notify(cfg, program + ["chat", "hook", "codex-notify"])
            out.append(f"ctxd: Codex notify {'set' if status == 'added' else 'updated'} in {cfg}")
    if tool == "codex" and not _codex_hooks_enabled(environ):
        out.append(f"ctxd: note: Codex runs hooks.json only with `codex_hooks = true` under [features] in "
                   f"{codex_config_path(environ)}")
    return out


def uninstall(tool, scope, root=None, environ=None):
    """Remove ctxd's hooks for *tool*; return lines to show the user."""
    spec = TOOLS[tool]
    path = settings_path(tool, scope, root, environ)
    out = []
    if os.path.exists(path):
        settings = load_json(path)
        n = remove_hooks(settings)
        if n:
            write_text(path, dump_json(settings))
            out.append(f"ctxd: removed {n} ctxd hook{'s' if n != 1 else ''} from {path}")
        else:
            out.append(f"ctxd: no ctxd hooks in {path}")
    else:
        out.append(f"ctxd: no ctxd hooks in {path} (no such file)")
    if tool == "codex" and scope == "user":
        cfg = codex_config_path(environ)
        status = uninstall_notify(cfg)
        if status == "removed":
            out.append(f"ctxd: removed ctxd's notify from {cfg}")
        elif status == "foreign":
            out.append(f"ctxd: the notify in {cfg} is not ctxd's; left it")
    return out
