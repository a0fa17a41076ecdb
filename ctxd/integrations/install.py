"""Put ctxd's hooks into (and take them out of) Claude Code, Gemini CLI and Codex settings.

What a tool's settings are (directory, file, events, timeout unit, a notify program) is its
``AgentTool``'s (``ctxd/agents/``); this module edits them the same way for every tool.

The settings files belong to the user: ctxd merges its own entries in and
leaves every other key and hook as it was. ctxd's entries are recognised by
their command (it contains "ctxd" and "chat hook"), so installing twice is
the same as installing once and uninstalling removes only them. A file that
is not valid JSON (or TOML) is refused and left untouched. Writes are atomic
and keep the file's mode; a symlinked settings file is written through the
link, except in a project: a file there that a symlink (a clone can commit
one) takes out of the project is refused (``ctxd.integrations.userfiles``).

The JSON files are edited as text (``ctxd.integrations.jsonedit``): only ctxd's
entries change, every other byte (indentation, key order, one-line arrays, line
ends, a missing final newline; comments in Gemini's JSONC) stays as written, and
uninstalling gives the original text back. A settings file ctxd created is
recorded (``installed.json`` in the state directory) and removed by uninstall
when nothing else was written into it.

Where the hooks go. A project's ``.claude/settings.json`` is committed and
shared, so a command naming this machine's ctxd (``/home/ada/.local/bin/ctxd``)
breaks on every teammate's machine. By default Claude's hooks go in
``.claude/settings.local.json`` (Claude Code's own personal, uncommitted file)
with the absolute path; ``--user`` writes the user's settings; ``--shared``
writes ``.claude/settings.json`` with a portable command (``portable_command``)
that runs ctxd from PATH where it is installed and does nothing where it is
not. Gemini CLI and Codex have no personal project file: their project files
get the portable command too, user files the absolute path.

A tool's notify program (Codex's) is set in its TOML config by ``ctxd.integrations.notify_toml``.
"""

import json
import os
import shlex
import shutil
import sys

from ctxd.errors import ConfigError, CtxdError
from ctxd.integrations.notify_toml import install_notify, uninstall_notify
from ctxd.integrations.userfiles import read_text, refuse_link_out, write_text

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


def hook_command(command, program=None):
    """The shell command string a settings file runs: '<ctxd> chat hook <command>' (a tool's name)."""
    return shlex.join(list(program or ctxd_program()) + ["chat", "hook", command])


def portable_command(tool):
    """A command for a settings file other machines read: ctxd from PATH where it is installed,
    nothing (exit 0; for a tool that reads stdout as JSON, Gemini's, ``{}``) where it is not."""
    fallback = "; else echo '{}'" if tool.json_stdout else ""
    return f"if command -v ctxd >/dev/null 2>&1; then ctxd chat hook {tool.name}{fallback}; fi"


def is_ctxd_command(command):
    return isinstance(command, str) and "ctxd" in command and "chat hook" in command


# -- where the files are -----------------------------------------------------------

def normal_scope(tool, scope):
    """"project" is the tool's personal project file (Claude's); without one, its shared one."""
    if scope == "project" and not tool.personal_file:
        return "shared"
    return scope


def settings_path(tool, scope, root=None, environ=None):
    """The file ctxd edits for *tool* (an AgentTool) at *scope*: "project" (under *root*: its
    personal file, Claude's settings.local.json, else its one project file), "shared" (under
    *root*, the file a team commits) or "user"."""
    scope = normal_scope(tool, scope)
    if scope == "user":
        return os.path.join(tool.home_dir(environ), tool.settings_file)
    if scope == "project":
        return os.path.join(root, tool.settings_dir, tool.personal_file)
    return os.path.join(root, tool.settings_dir, tool.settings_file)


def notify_config_path(tool, environ=None):
    """The TOML file of *tool*'s notify program (Codex's config.toml)."""
    return os.path.join(tool.home_dir(environ), tool.notify_config)


# -- reading and writing -------------------------------------------------------------


def load_json(path, comments=False):
    """The settings object in *path* ({} when missing or empty). ConfigError if invalid."""
    return _load(path, comments)[0]


def _load(path, comments=False):
    """(settings object, text or None when missing or blank). ConfigError if invalid; with
    *comments*, ``//`` and ``/* */`` comments are allowed (Gemini CLI's JSONC)."""
    from ctxd.integrations import jsonedit

    _raw, text = read_text(path)
    if text is None or not text.strip():
        return {}, None
    try:
        data = jsonedit.loads(text, comments)
    except jsonedit.EditError as e:
        hint = ""
        if not comments and ("//" in text or "/*" in text):
            hint = " (this file must be plain JSON: remove the comments, or add the hooks by hand)"
        where = f"{path}:{e.line}:{e.col}" if e.line else path
        raise ConfigError(f"{where}: not valid JSON: {e.message}; nothing was changed{hint}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object at the top, found {type(data).__name__}; "
                          f"nothing was changed")
    return data, text


def _edited(path, text, new, comments):
    """The new text of a settings file: *text* with only ctxd's entries changed."""
    from ctxd.integrations import jsonedit

    if text is None:
        return dump_json(new)
    try:
        return jsonedit.edit(text, new, comments)
    except jsonedit.EditError as e:
        raise ConfigError(f"{path}: cannot change ctxd's entries without rewriting the rest ({e.message}); "
                          f"nothing was changed") from None


# -- files ctxd created (so uninstall can remove them) -------------------------------------

def _created_record(environ=None):
    from ctxd import paths

    return os.path.join(paths.state_dir(environ), "installed.json")


def _created(environ=None):
    try:
        with open(_created_record(environ), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_created(data, environ=None):
    from ctxd.activation.fileio import atomic_write

    atomic_write(_created_record(environ), json.dumps(data, indent=2, sort_keys=True) + "\n", mode=0o600)


def _remember_created(path, dirs, environ=None):
    data = _created(environ)
    data[os.path.realpath(path)] = {"dirs": [os.path.realpath(d) for d in dirs]}
    _save_created(data, environ)


def _missing_dirs(path):
    """The directories above *path* that do not exist yet (nearest last)."""
    out, d = [], os.path.dirname(os.path.realpath(path))
    while d and not os.path.exists(d):
        out.insert(0, d)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return out


def _remove_if_created(path, text, environ=None, empty="{}"):
    """Remove *path* when ctxd created it and nothing but ctxd's entries was ever in it
    (*text* is what is left once they are out); True when removed."""
    data = _created(environ)
    key = os.path.realpath(path)
    if key not in data:
        return False
    if text.strip() != empty:
        return False  # someone wrote into it: theirs now
    os.unlink(key)
    for d in reversed(data[key].get("dirs", [])):
        try:
            os.rmdir(d)  # only when empty
        except OSError:
            break
    del data[key]
    _save_created(data, environ)
    return True



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



def _forget_created(path, environ=None):
    data = _created(environ)
    if data.pop(os.path.realpath(path), None) is not None:
        _save_created(data, environ)


def _has_ctxd_hooks(path, tool):
    try:
        settings = _load(path, tool.settings_comments)[0]
    except (ConfigError, CtxdError):
        return False
    return _settings_have_ctxd(settings)


def _settings_have_ctxd(settings):
    hooks = settings.get("hooks")
    return isinstance(hooks, dict) and any(isinstance(groups, list) and any(_has_ctxd(g) for g in groups)
                                           for groups in hooks.values())


def _exclude_from_git(tool, root, path):
    """Keep a personal settings file ctxd created (Claude's settings.local.json) out of git, as
    Claude Code does with the one it creates: a line in .git/info/exclude (local to this clone,
    never committed), unless git already ignores it."""
    import subprocess

    git = os.path.join(root, ".git")
    if not root or not os.path.isdir(git):
        return
    rel = os.path.relpath(path, root)
    try:
        r = subprocess.run(["git", "-C", root, "check-ignore", "-q", "--", rel], capture_output=True, timeout=10)
        if r.returncode == 0:
            return
    except (OSError, subprocess.SubprocessError):
        pass
    exclude = os.path.join(git, "info", "exclude")
    line = "/" + rel.replace(os.sep, "/")
    try:
        with open(exclude, encoding="utf-8") as f:
            if line in (x.strip() for x in f):
                return
    except FileNotFoundError:
        pass
    except OSError:
        return
    try:
        os.makedirs(os.path.dirname(exclude), exist_ok=True)
        with open(exclude, "a", encoding="utf-8") as f:
            f.write(_exclude_block(tool, line))
    except OSError:
        pass


def _exclude_block(tool, line):
    return f"\n# ctxd: personal {tool.label} settings (machine paths)\n{line}\n"


def _unexclude_from_git(tool, root, path):
    """Take back the lines _exclude_from_git() wrote for *path* (once the file is gone)."""
    if not root:
        return
    exclude = os.path.join(root, ".git", "info", "exclude")
    block = _exclude_block(tool, "/" + os.path.relpath(path, root).replace(os.sep, "/"))
    try:
        with open(exclude, encoding="utf-8") as f:
            text = f.read()
        if block in text:
            write_text(exclude, text.replace(block, "", 1))
    except OSError:
        pass


def _placement_notes(tool, scope, root, environ):
    """One line each about where the hooks went and what else they need to run."""
    notes = []
    if scope == "project":  # the personal file: the shared one may hold ctxd's hooks too
        shared = settings_path(tool, "shared", root, environ)
        if _has_ctxd_hooks(shared, tool):
            notes.append(f"ctxd: note: {shared} (shared) runs ctxd's hooks too, so they would run twice; remove "
                         f"them with `ctxd chat install {tool.name} --shared --uninstall`")
    if scope == "shared":
        notes.append("ctxd: note: this file is shared: its command runs the ctxd on each machine's PATH "
                     "(and does nothing where ctxd is not installed)")
    notes.extend(tool.install_notes(scope, root, environ))
    return notes


# -- the operations ------------------------------------------------------------------

def install(tool, scope, root=None, program=None, environ=None):
    """Merge ctxd's hooks for *tool* (an AgentTool) into its settings; return lines to show the user.

    *scope*: "project" (the default: Claude's personal settings.local.json; Gemini's and
    Codex's project file), "shared" (the project file a team commits: a portable command)
    or "user".
    """
    import copy

    scope = normal_scope(tool, scope)
    program = list(program or ctxd_program())
    path = settings_path(tool, scope, root, environ)
    if scope != "user":
        refuse_link_out(path, root)
    settings, text = _load(path, tool.settings_comments)  # refuses an invalid file before anything is written
    notify = None
    if tool.notify_config and scope == "user":
        # Check config.toml too before writing anything.
        notify = install_notify(notify_config_path(tool, environ), program + ["chat", "hook", tool.notify_command],
                                write=False)
    command = portable_command(tool) if scope == "shared" else hook_command(tool.name, program)
    groups = {event: _group(event, matcher, command, tool.hook_timeout, tool.hook_extra)
              for event, matcher in tool.hook_events}
    events = ", ".join(groups)
    out = []
    new = copy.deepcopy(settings)
    if merge_hooks(new, groups, path):
        new_text = _edited(path, text, new, tool.settings_comments)
        exists = os.path.lexists(path)
        dirs = _missing_dirs(path)
        write_text(path, new_text)
        if not exists:
            _remember_created(path, dirs, environ)
            if scope == "project":
                _exclude_from_git(tool, root, path)
        out.append(f"ctxd: {tool.label} hooks ({events}) installed in {path}")
    else:
        out.append(f"ctxd: {tool.label} hooks already installed in {path}")
    if text is not None and not _settings_have_ctxd(settings):
        _forget_created(path, environ)  # a file of the user's (a record of an old one of ctxd's is stale)
    if notify is not None:
        cfg = notify_config_path(tool, environ)
        status, value = notify
        if status == "foreign":
            out.append(f"ctxd: {cfg} already sets notify = {json.dumps(value)}, which is not ctxd's; left it as it "
                       f"is ({tool.label} runs one notify program; the hooks above still record prompts and "
                       f"transcripts)")
        elif status == "unchanged":
            out.append(f"ctxd: {tool.label} notify already runs ctxd ({cfg})")
        else:
            existed, dirs = os.path.lexists(cfg), _missing_dirs(cfg)
            install_notify(cfg, program + ["chat", "hook", tool.notify_command])
            if not existed:
                _remember_created(cfg, dirs, environ)
            out.append(f"ctxd: {tool.label} notify {'set' if status == 'added' else 'updated'} in {cfg}")
    out.extend(_placement_notes(tool, scope, root, environ))
    return out


def uninstall(tool, scope, root=None, environ=None):
    """Remove ctxd's hooks for *tool* (an AgentTool); return lines to show the user.

    Only ctxd's entries go: the rest of the file stays byte for byte, and a file ctxd
    created that holds nothing else is removed (with the directories ctxd made for it).
    """
    import copy

    scope = normal_scope(tool, scope)
    path = settings_path(tool, scope, root, environ)
    if scope != "user":
        refuse_link_out(path, root)
    out, later = [], []
    if tool.notify_config and scope == "user":
        # config.toml first: a ~/.codex ctxd made goes once both files are out of it
        cfg = notify_config_path(tool, environ)
        status = uninstall_notify(cfg, tool.notify_command)
        if status == "removed":
            _raw, left = read_text(cfg)
            gone = left is not None and _remove_if_created(cfg, left, environ, empty="")
            later.append(f"ctxd: removed ctxd's notify from {cfg}" + (" (and the file ctxd had created)" if gone else ""))
        elif status == "foreign":
            later.append(f"ctxd: the notify in {cfg} is not ctxd's; left it")
    if os.path.lexists(path):
        settings, text = _load(path, tool.settings_comments)
        new = copy.deepcopy(settings)
        n = remove_hooks(new)
        if n:
            new_text = _edited(path, text, new, tool.settings_comments)
            what = f"removed {n} ctxd hook{'s' if n != 1 else ''} from {path}"
            if not new and _remove_if_created(path, new_text, environ):
                if scope == "project":
                    _unexclude_from_git(tool, root, path)
                out.append(f"ctxd: {what} (ctxd had created it and nothing else was in it: removed the file)")
            else:
                write_text(path, new_text)
                out.append(f"ctxd: {what}")
        else:
            out.append(f"ctxd: no ctxd hooks in {path}")
    else:
        out.append(f"ctxd: no ctxd hooks in {path} (no such file)")
    if scope == "project":  # the personal file
        shared = settings_path(tool, "shared", root, environ)
        if _has_ctxd_hooks(shared, tool):
            out.append(f"ctxd: note: {shared} (shared) runs ctxd's hooks too; remove them with "
                       f"`ctxd chat install {tool.name} --shared --uninstall`")
    return out + later
