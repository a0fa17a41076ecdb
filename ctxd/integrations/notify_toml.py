"""A tool's ``notify`` program (Codex's) in its TOML config (``config.toml``), put in and taken out.

People comment that file: it is edited with tomlkit, which keeps comments, order and formatting. The
key goes at the top level before the first table (and the comments above its
header); uninstalling takes out exactly what installing put in, so the file
comes back byte for byte when nothing else changed it. Every edit is checked
by parsing the result with tomllib and comparing it with what was meant; one
that cannot be made safely is refused with the line to add by hand.
"""

from ctxd.errors import ConfigError, CtxdError, ExitCode
from ctxd.integrations.userfiles import read_text, write_text


def notify_line(words):
    """``notify = [...]`` as TOML, for messages that ask the user to edit by hand."""
    import tomlkit

    return tomlkit.dumps({"notify": list(words)})


def is_ctxd_notify(value, command):
    """Whether a notify value runs ctxd's hook *command* (``codex-notify``)."""
    return (isinstance(value, list) and all(isinstance(w, str) for w in value) and command in value
            and any("ctxd" in w for w in value))


def _toml(path, text):
    import tomllib

    from ctxd.activation.fileio import toml_error_location

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        line, col, msg = toml_error_location(text, e)
        raise ConfigError(f"{path}:{line}:{col}: not valid TOML: {msg}; nothing was changed") from None


def _editable(path, text):
    """Refuse (ConfigError) TOML that tomllib read but tomlkit cannot."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        tomlkit.parse(text)
    except TOMLKitError as e:
        raise ConfigError(f"{path}: cannot edit this TOML ({e}); nothing was changed") from None


def _render(pairs):
    """The TOML text of (key, item) pairs as tomlkit writes them in a document of their own,
    in its parsing mode (what it read, as it read it, without blank lines of its own)."""
    import tomlkit

    doc = tomlkit.document()
    doc.parsing(True)
    for key, item in pairs:
        if key is None:
            doc.add(item)  # a comment or whitespace
        else:
            doc.add(key, item)
    doc.parsing(False)
    return doc.as_string()


def _offset(text, body, n):
    """Where the text of the first *n* items of *body* ends in *text*; None when tomlkit
    would not write them back exactly as they are written there."""
    head = _render(body[:n])
    return len(head) if text.startswith(head) else None


def _is_blank(item):
    from tomlkit.items import Whitespace

    return isinstance(item, Whitespace) and "\n" in item.s


def _notify_place(body):
    """Where a new top-level key goes: before the first table header and the comments above it
    (a dotted key such as ``a.b = 1`` is a table to tomlkit, but a line of the top level)."""
    from tomlkit.items import AoT, Comment, Table

    at = next((i for i, (k, item) in enumerate(body)
               if isinstance(item, AoT) or (isinstance(item, Table) and not k.is_dotted())), len(body))
    while at > 0 and isinstance(body[at - 1][1], Comment):
        at -= 1
    return at


def add_notify(text, words):
    """*text* (a config.toml, valid TOML) with ``notify = words`` at the top level; None when
    ctxd cannot place it so that remove_notify gives *text* back.

    tomlkit reads the file and writes the key. A notify that is there is set in
    place (its line and comment stay). A new one goes before the first table
    header and the comments just above it (they belong to the table); it is a
    paragraph of its own (a blank line after it) when it starts the file or
    follows a blank line, so removing it restores the layout. The file's line
    ends are kept; everything from the insertion point on stays as written.
    """
    import tomlkit

    doc = tomlkit.parse(text)
    if "notify" in doc:
        return _replace_notify(text, doc.body, words)
    newline = "\r\n" if text.partition("\n")[0].endswith("\r") else "\n"
    base = text
    at = _notify_place(doc.body)
    if at == len(doc.body) and text and not text.endswith("\n"):
        base = text + newline  # the new last line needs a line break before it
        doc = tomlkit.parse(base)
    body = doc.body
    cut = _offset(base, body, at)
    if cut is None:
        return None
    item = tomlkit.item(list(words))
    item.trivia.trail = newline
    insert = [("notify", item)]
    if at < len(body) and (at == 0 or _is_blank(body[at - 1][1])):
        insert.append((None, tomlkit.ws(newline)))
    new = base[:cut] + _render(insert) + base[cut:]
    if remove_notify(new) != base:
        return None
    return new


def _notify_index(body):
    mine = [i for i, (k, _item) in enumerate(body) if k is not None and k.key == "notify"]
    return mine[0] if len(mine) == 1 else None


def _replace_notify(text, body, words):
    """*text* with the value of its notify replaced, the key as written and its comment kept."""
    import tomlkit

    j = _notify_index(body)
    start, end = (None, None) if j is None else (_offset(text, body, j), _offset(text, body, j + 1))
    if start is None or end is None:
        return None
    key, old = body[j]
    item = tomlkit.item(list(words))
    for attr in ("indent", "comment_ws", "comment", "trail"):
        setattr(item.trivia, attr, getattr(old.trivia, attr))
    return text[:start] + _render([(key, item)]) + text[end:]


def remove_notify(text):
    """*text* without its top-level ``notify`` (and the blank line add_notify put after it);
    None when there is none or it cannot be taken out alone."""
    import tomlkit

    body = tomlkit.parse(text).body
    j = _notify_index(body)
    if j is None:
        return None
    start, end = _offset(text, body, j), _offset(text, body, j + 1)
    if start is None or end is None:
        return None
    if j + 1 < len(body) and _is_blank(body[j + 1][1]) and (j == 0 or _is_blank(body[j - 1][1])):
        ws = body[j + 1][1].s
        if not text.startswith(ws, end):
            return None
        end += ws.index("\n") + 1  # one line break of the blank line after it was ctxd's
    return text[:start] + text[end:]


def install_notify(path, words, *, write=True):
    """Add ctxd's notify (*words*, which end with the hook command) to a TOML config (Codex's
    config.toml). Returns (status, detail).

    status: "added", "updated", "unchanged", or "foreign" (another program is
    the notify; left as it is; detail is its value).
    """
    _raw, text = read_text(path)
    text = text or ""
    doc = _toml(path, text)
    _editable(path, text)
    current = doc.get("notify")
    if current == words:
        return "unchanged", None
    if current is not None and not is_ctxd_notify(current, words[-1]):
        return "foreign", current
    new = add_notify(text, words)
    if new is None or _toml(path, new) != dict(doc, notify=list(words)):
        raise CtxdError(f"{path}: could not place the notify line safely; add it by hand at the top: "
                        f"{notify_line(words).strip()}", ExitCode.CONFIG)
    if write:
        write_text(path, new)
    return ("updated" if current is not None else "added"), None


def uninstall_notify(path, command):
    """Remove ctxd's notify line (running hook *command*). Returns "removed", "absent" or "foreign"."""
    _raw, text = read_text(path)
    if text is None:
        return "absent"
    doc = _toml(path, text)
    _editable(path, text)
    current = doc.get("notify")
    if current is None:
        return "absent"
    if not is_ctxd_notify(current, command):
        return "foreign"
    new = remove_notify(text)
    without = dict(doc)
    del without["notify"]
    if new is None or _toml(path, new) != without:
        raise CtxdError(f"{path}: could not find ctxd's notify line; remove it by hand", ExitCode.CONFIG)
    write_text(path, new)
    return "removed"
