"""`.contextrc`: per-directory settings in TOML, validated into plain data.

Schema (docs/contextrc.md documents it for users):

    [ctxd]      inherit = true          # false: parent .contextrc files do not apply
                inherit_root = false    # true: the enclosing project root's detected
                                        # environment applies too, behind this root's
    [env]       NAME = "value"          # ~ and ${VAR} / ${VAR:-default} expanded; $$ is a $;
                                        # ${CTXD_ROOT}: the project root, ${CTXD_RC_DIR}: this file's dir
                NAME = false            # unset NAME
                files = [".env"]        # dotenv files (python-dotenv syntax), relative to this
                                        # file's directory; later files and [env] keys win
    [path]      prepend = ["bin"]       # relative to this file's directory
                append = ["tools"]
    [detect]    node = false            # turn a built-in detector off (or back on) here
    [hooks]     on_enter = "cmd" | ["cmd", ...]   # run by /bin/sh, the same in every shell
                on_leave = ...
                timeout = 5             # seconds
    [branch."release/*".env]            # applied while the git branch matches the glob
    [branch."release/*".path]
    [context]   store = "data"|"project"  model = "..."  budget = 8000
                recall_budget = 1500  recall_threshold = 0.6  (per-prompt recall)
                system = "..."  system_file = "docs/ai.md"
"""

import os

from ctxd.activation.fileio import cached_parse, toml_error_location
from ctxd.errors import ConfigError

FILENAME = ".contextrc"
KNOWN_TOP = ("ctxd", "env", "path", "detect", "hooks", "branch", "context")
KNOWN_CONTEXT = ("store", "model", "budget", "system", "system_file", "recall_budget", "recall_threshold",
                 "share")


class RcError(ConfigError):
    def __init__(self, path, line, col, what):
        super().__init__(f"{path}:{line}:{col}: {what}")
        self.path, self.line, self.col, self.what = path, line, col, what


def locate(text, table, key=None):
    """(line, col) of *key* in [table] (a tuple of names), best effort."""
    current = ()
    first_table_line = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("[") and not line.startswith("[["):
            current = tuple(_split_dotted(line.strip("[] \t")))
            if current == table and first_table_line is None:
                first_table_line = n
            continue
        if key is not None and "=" in line and not line.startswith("#"):
            k = line.split("=", 1)[0].strip()
            parts = tuple(_split_dotted(k))
            if current + parts[:-1] == table and parts[-1:] == (key,):
                return n, raw.index("=") + 2 + (len(raw.split("=", 1)[1]) - len(raw.split("=", 1)[1].lstrip()))
    return (first_table_line or 1), 1


def _split_dotted(s):
    out, cur, quote = [], "", None
    for ch in s:
        if quote:
            if ch == quote:
                quote = None
            else:
                cur += ch
        elif ch in "\"'":
            quote = ch
        elif ch == ".":
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    out.append(cur.strip())
    return [p for p in out]


def parse_bytes(path, data):
    """Validate a .contextrc's bytes into plain data; RcError on any problem."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RcError(path, 1, 1, f"not UTF-8 ({e.reason} at byte {e.start})") from None
    import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        line, col, msg = toml_error_location(text, e)
        raise RcError(path, line, col, msg) from None
    return _validate(path, text, doc)


def _validate(path, text, doc):
    unknown = []

    def fail(table, key, what):
        line, col = locate(text, table, key)
        raise RcError(path, line, col, what)

    def table(name, parent=()):
        value = doc_get(parent + (name,))
        if value is None:
            return {}
        if not isinstance(value, dict):
            fail(parent, name, f"'{'.'.join(parent + (name,))}' must be a table")
        return value

    def doc_get(keys):
        cur = doc
        for k in keys:
            if not isinstance(cur, dict) or k not in cur:
                return None
            cur = cur[k]
        return cur

    for k in doc:
        if k not in KNOWN_TOP:
            unknown.append(k)

    ctxd_t = table("ctxd")
    inherit = ctxd_t.get("inherit", True)
    if not isinstance(inherit, bool):
        fail(("ctxd",), "inherit", "'ctxd.inherit' must be true or false")
    inherit_root = ctxd_t.get("inherit_root")  # None: not said here (a farther file may)
    if inherit_root is not None and not isinstance(inherit_root, bool):
        fail(("ctxd",), "inherit_root", "'ctxd.inherit_root' must be true or false")
    unknown += [f"ctxd.{k}" for k in ctxd_t if k not in ("inherit", "inherit_root")]

    def env_table(tbl, where):
        out = []
        for name, value in tbl.items():
            if not _is_identifier(name):
                fail(where, name, f"'{name}' is not a valid environment variable name")
            if value is False:
                out.append([name, None])
            elif isinstance(value, bool) or not isinstance(value, (str, int, float)):
                fail(where, name, f"'{'.'.join(where + (name,))}' must be a string, a number, or false to unset "
                                  f"(got {type(value).__name__})")
            else:
                if isinstance(value, str) and "\0" in value:
                    fail(where, name, f"'{name}' contains a NUL byte")
                out.append([name, str(value)])
        return out

    def path_table(tbl, where):
        out = {"prepend": [], "append": []}
        for k, v in tbl.items():
            if k not in out:
                unknown.append(".".join(where + (k,)))
                continue
            if isinstance(v, str):
                v = [v]
            if not isinstance(v, list) or not all(isinstance(e, str) and e and ":" not in e and "\0" not in e
                                                  for e in v):
                fail(where, k, f"'{'.'.join(where + (k,))}' must be a list of non-empty paths without ':'")
            out[k] = v
        return out

    env_t = dict(table("env"))
    files = env_t.pop("files", [])
    if isinstance(files, str):
        files = [files]
    if not isinstance(files, list) or not all(isinstance(e, str) and e and "\0" not in e for e in files):
        fail(("env",), "files", "'env.files' must be a list of .env file paths, e.g. [\".env\"]")
    env = env_table(env_t, ("env",))
    path_ = path_table(table("path"), ("path",))

    detect = {}
    for k, v in table("detect").items():
        if not isinstance(v, bool):
            fail(("detect",), k, f"'detect.{k}' must be true or false")
        detect[k] = v

    hooks_t = table("hooks")
    hooks = {"on_enter": [], "on_leave": [], "timeout": None}
    for k, v in hooks_t.items():
        if k in ("on_enter", "on_leave"):
            if isinstance(v, str):
                v = [v]
            if not isinstance(v, list) or not all(isinstance(c, str) and c.strip() for c in v):
                fail(("hooks",), k, f"'hooks.{k}' must be a command string or a list of them")
            hooks[k] = v
        elif k == "timeout":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 600:
                fail(("hooks",), k, "'hooks.timeout' must be a number of seconds between 0 and 600")
            hooks["timeout"] = float(v)
        else:
            unknown.append(f"hooks.{k}")

    branches = []
    for glob, spec in table("branch").items():
        if not isinstance(spec, dict):
            fail(("branch",), glob, f"'branch.\"{glob}\"' must be a table with env and/or path")
        b = {"env": [], "path": {"prepend": [], "append": []}}
        for k, v in spec.items():
            if k == "env":
                if not isinstance(v, dict):
                    fail(("branch", glob), k, "branch env must be a table")
                b["env"] = env_table(v, ("branch", glob, "env"))
            elif k == "path":
                if not isinstance(v, dict):
                    fail(("branch", glob), k, "branch path must be a table")
                b["path"] = path_table(v, ("branch", glob, "path"))
            else:
                unknown.append(f'branch."{glob}".{k}')
        branches.append([glob, b])

    ctx = {}
    for k, v in table("context").items():
        if k not in KNOWN_CONTEXT:
            unknown.append(f"context.{k}")
            continue
        if k == "store":
            if v not in ("data", "project"):
                fail(("context",), k, "'context.store' must be \"data\" or \"project\"")
        elif k in ("budget", "recall_budget"):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                fail(("context",), k, f"'context.{k}' must be a positive integer (tokens)")
        elif k == "share":  # ctxd sync: "git" shares the project's memory through git, "off" never
            if v not in ("git", "off"):
                fail(("context",), k, "'context.share' must be \"git\" or \"off\"")
        elif k == "recall_threshold":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                fail(("context",), k, "'context.recall_threshold' must be a number from 0 to 1 (share of the prompt's terms)")
        elif not isinstance(v, str):
            fail(("context",), k, f"'context.{k}' must be a string")
        ctx[k] = v

    return {"inherit": inherit, "inherit_root": inherit_root, "env": env, "env_files": files, "path": path_,
            "detect": detect, "hooks": hooks, "branch": branches, "context": ctx, "unknown": unknown}


def _is_identifier(name):
    return bool(name) and (name[0].isalpha() or name[0] == "_") and name.isascii() and \
        all(c.isalnum() or c == "_" for c in name)


def parse(path, data):
    """parse_bytes(), memoised by content. The planner hashes and parses the bytes of
    one read: never the file again, which may have been swapped since."""
    # "contextrc+files": [env] files changed what a parse holds; older cached parses are not reused
    return cached_parse("contextrc+files", data, lambda d: parse_bytes(path, d))


def load(path):
    """(parsed, content sha256, raw bytes) for the .contextrc at *path* (one read)."""
    from ctxd.activation.fileio import sha256_hex

    with open(path, "rb") as f:
        data = f.read()
    return parse(path, data), sha256_hex(data), data


def chain(root, environ=None):
    """.contextrc files that apply at *root*: nearest first, until inherit=false.

    Returns (files, probed): files are paths that exist, nearest first (the
    caller loads them and cuts the chain where one says inherit = false);
    probed are every path looked at, so the hooks can notice one appearing.
    Under $HOME the chain stops at $HOME, like the root walk (a .contextrc
    above your home directory never layers onto a project in it).
    (Lives in detectors.py: the cd path needs it without loading this parser.)
    """
    from ctxd.activation.detectors import rc_chain

    return rc_chain(root, environ)


def expand(value, env, home):
    """~ at the start, then ${VAR} and ${VAR:-default}; $$ is a literal $."""
    if value == "~" or value.startswith("~/"):
        value = home + value[1:]
    out, i, n = [], 0, len(value)
    while i < n:
        ch = value[i]
        if ch == "$" and i + 1 < n and value[i + 1] == "$":
            out.append("$")
            i += 2
        elif ch == "$" and i + 1 < n and value[i + 1] == "{":
            end = value.find("}", i + 2)
            if end == -1:
                out.append(value[i:])
                break
            body = value[i + 2:end]
            name, sep, default = body.partition(":-")
            got = env.get(name)
            out.append(got if got else (default if sep else (got or "")))
            i = end + 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def resolve_dir(entry, base_dir, home):
    entry = home + entry[1:] if entry == "~" or entry.startswith("~/") else entry
    return os.path.normpath(os.path.join(base_dir, entry))


def git_branch(start):
    """(branch or None, HEAD file path or None) for the repository holding *start*."""
    d = start
    while True:
        dotgit = os.path.join(d, ".git")
        if os.path.isdir(dotgit):
            head = os.path.join(dotgit, "HEAD")
            break
        if os.path.isfile(dotgit):  # worktree / submodule: "gitdir: <path>"
            try:
                with open(dotgit, encoding="utf-8") as f:
                    line = f.read().strip()
            except OSError:
                return None, None
            if not line.startswith("gitdir:"):
                return None, None
            gitdir = os.path.normpath(os.path.join(d, line[7:].strip()))
            head = os.path.join(gitdir, "HEAD")
            break
        if d in ("/", ""):
            return None, None
        d = os.path.dirname(d)
    try:
        with open(head, encoding="utf-8") as f:
            ref = f.read().strip()
    except OSError:
        return None, head
    if ref.startswith("ref: refs/heads/"):
        return ref[len("ref: refs/heads/"):], head
    return None, head  # detached HEAD matches no branch glob
