"""``ctxd export json|dotenv|gha [DIR]``: DIR's project environment for tools that are not shells.

What is printed is the same for the three formats: the changes that move the
*clean* environment (the caller's, with its own shell's activation undone, see
ctxd.activation.target) to DIR's project environment, i.e. what ``ctxd exec
DIR`` would change: every variable the activation sets (including CTXD_ROOT,
CTXD_CONTEXT_DIR ...), every variable it unsets, and PATH as the whole new
value. The hook's own state (CTXD_STATE, CTXD_WATCH) is left out: nothing
but a shell hook can use it.

- ``json``: one object, name -> value, null for a variable the project unsets
  (the shape of ``direnv export json``), keys sorted.
- ``dotenv``: ``NAME=value`` lines python-dotenv (and so docker compose, IDE
  env-file settings) read back exactly: a value with anything but plain
  characters is double-quoted with ``\\\\``, ``\\"`` and control characters
  escaped. A dotenv file cannot unset: those are ``# unset NAME`` comments.
- ``gha``: GitHub Actions' environment files. Variables go to ``$GITHUB_ENV`` as
  ``NAME=value``, a multi-line value in the ``NAME<<DELIMITER`` form GitHub
  documents (a random delimiter that is not in the value). Directories put in
  front of PATH go to ``$GITHUB_PATH``, one a line, in the order that leaves
  them in the same order in front of PATH (the runner prepends each line); a
  PATH it cannot express that way (an appended entry) goes to ``$GITHUB_ENV``
  whole. Both are appended to with one write each. Outside Actions (the
  variables unset) the same lines are printed, PATH as a ``PATH=`` line.
"""

import os

from ctxd.activation import envdiff

FORMATS = ("json", "dotenv", "gha")


def render_json(t):
    import json

    return json.dumps(dict(t.changes()), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


_PLAIN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./:@%+,=")
_DQ_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\a": "\\a", "\b": "\\b",
               "\f": "\\f", "\v": "\\v"}


def dotenv_value(value):
    """*value* as python-dotenv reads it back unchanged, as it reads by default (``${...}``
    interpolated) and as ctxd's own ``[env] files`` read it. dotenv has no escape for ``${``:
    it is written ``${:-$}{`` (an unset, empty name whose default is ``$``)."""
    if value and all(c in _PLAIN for c in value):
        return value
    return '"' + "".join(_DQ_ESCAPES.get(c, c) for c in value).replace("${", "${:-$}{") + '"'


def render_dotenv(t):
    lines = []
    for name, value in t.changes():
        lines.append(f"# unset {name}" if value is None else f"{name}={dotenv_value(value)}")
    return "".join(line + "\n" for line in lines)


def gha_line(name, value):
    """One $GITHUB_ENV entry: NAME=value, or the heredoc form for a multi-line value."""
    if "\n" not in value and "\r" not in value:
        return f"{name}={value}\n"
    while True:
        delim = f"ctxd_{os.urandom(8).hex()}"
        if delim not in value:
            break
    return f"{name}<<{delim}\n{value}\n{delim}\n"


def gha_blocks(t, path_file_available=True):
    """(the $GITHUB_ENV text, the $GITHUB_PATH text, [names GitHub cannot unset])."""
    env_text, path_text, unset = [], "", []
    changes = t.changes()
    front, back = t.path_added()
    clean_path = envdiff.split_path(t.clean.get(envdiff.PATH))
    target_path = envdiff.split_path(t.env.get(envdiff.PATH))
    prepend_only = not back and target_path == front + clean_path
    for name, value in changes:
        if value is None:
            unset.append(name)
        elif name == envdiff.PATH:
            if prepend_only and path_file_available:
                # the runner puts each new line in front of the previous ones: last line first
                path_text = "".join(e + "\n" for e in reversed(front))
            else:
                env_text.append(gha_line(name, value))
        else:
            env_text.append(gha_line(name, value))
    return "".join(env_text), path_text, unset


def _append(path, text):
    """Append *text* to a GitHub environment file with one write (appends are how the
    runner's files are meant to be written; the runner reads them after the step)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        data = text.encode("utf-8", "surrogateescape")
        while data:
            n = os.write(fd, data)
            data = data[n:]
    finally:
        os.close(fd)


def write_gha(t, environ, out, say):
    """Write to $GITHUB_ENV / $GITHUB_PATH when set, else print to *out* (a text writer)."""
    env_file, path_file = environ.get("GITHUB_ENV"), environ.get("GITHUB_PATH")
    env_text, path_text, unset = gha_blocks(t, path_file_available=bool(path_file and env_file))
    for name in unset:
        if name in t.clean:
            say(f"ctxd: {name} is unset in the project environment, but $GITHUB_ENV cannot unset a variable")
    if not env_file:
        out(env_text)  # PATH (if it changes) is a PATH= line there
        return
    if env_text:
        _append(env_file, env_text)
    if path_text:
        _append(path_file, path_text)
    n_vars = sum(1 for name, v in t.changes() if v is not None and not (name == envdiff.PATH and path_text))
    n_path = len(path_text.splitlines())
    say(f"ctxd: {n_vars} variable{'' if n_vars == 1 else 's'} written to $GITHUB_ENV"
        + (f", {n_path} PATH entr{'y' if n_path == 1 else 'ies'} to $GITHUB_PATH" if n_path else ""))
