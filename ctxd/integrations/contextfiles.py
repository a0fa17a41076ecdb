"""Point the context files AI CLIs already read at the project's context.md.

``ctxd chat install agents-md|claude-md|gemini-md`` writes one managed block
into the project root's AGENTS.md / CLAUDE.md / GEMINI.md, between two marker
comments::

    <!-- ctxd:begin sep=1 (managed by ctxd; ...) -->
    ...the pointer...
    <!-- ctxd:end -->

Which file is whose is in the registry (``ctxd.agents.CONTEXT_FILES``); what
the pointer is, the tool's ``AgentTool.context_pointer`` (from the tools' docs
and source): an ``@path`` import in CLAUDE.md, an ``@./path`` import in
GEMINI.md when context.md is inside the project (``[context] store =
"project"``), else an instruction line naming the file to read (AGENTS.md, read
by Codex and other tools, has no import syntax).

The file belongs to the user: everything outside the block stays byte for
byte as it was. Installing twice is installing once; a context directory that
moved rewrites the block in place. The begin marker records what ctxd added
around the block (``created``: ctxd created the file; ``sep=N``: the line
breaks it put before the block), so ``--uninstall`` takes out exactly that:
the file as it was before, and a file ctxd created is deleted when nothing
else is left in it (a file you emptied yourself, or wrote into, stays).
Writes are atomic (``install.write_text``); a file a symlink takes out of the
project is refused (``install.refuse_link_out``). A block with a missing end marker,
or a file ending inside an unclosed code fence (an import there would not be
read), is refused with nothing changed.
"""

import os
import re

from ctxd.agents import CONTEXT_FILES, ai_cli
from ctxd.errors import ConfigError
from ctxd.integrations.userfiles import read_text, refuse_link_out, write_text

FILES = {kind: file for kind, (file, _tool) in CONTEXT_FILES.items()}  # "claude-md": "CLAUDE.md"
BEGIN = "<!-- ctxd:begin"
END = "<!-- ctxd:end -->"
_BEGIN_RX = re.compile(r"<!-- ctxd:begin((?:\s+(?:created|sep=\d))*)")
_FENCE_RX = re.compile(r" {0,3}(```|~~~)")
INTRO = ("Conversation context of this project (facts, decisions and recent turns from earlier sessions "
         "in any AI CLI), kept current by ctxd")


def path_for(kind, root):
    return os.path.join(root, FILES[kind])


def _inside(path, root):
    try:
        return os.path.commonpath([os.path.abspath(path), os.path.abspath(root)]) == os.path.abspath(root)
    except ValueError:
        return False


def _relative_import(context_md, root):
    return "./" + os.path.relpath(context_md, root).replace(os.sep, "/")


def pointer(kind, root, context_md):
    """(lines of the block's body, notes for the user) for *kind*: its tool's context_pointer."""
    relative = _relative_import(context_md, root) if _inside(context_md, root) else None
    return ai_cli(CONTEXT_FILES[kind][1]).context_pointer(INTRO, context_md, relative)


# -- the block in a file ---------------------------------------------------------------

def _newline(text):
    return "\r\n" if "\r\n" in text else "\n"


def _block_newline(text, start, end):
    """The line ending a block was written with (and the line breaks before it)."""
    return _newline(text[start:end])


def _begin_line(kind, flags):
    f = "".join(f" {x}" for x in flags)
    return f"{BEGIN}{f} (managed by ctxd; remove with: ctxd chat install {kind} --uninstall) -->"


def _flags(line):
    m = _BEGIN_RX.match(line.strip())
    return m.group(1).split() if m else []


def _render(kind, flags, body, nl):
    return nl.join([_begin_line(kind, flags), *body, END]) + nl


def find_blocks(text, path):
    """[(start, end, flags)]: character spans of ctxd's blocks (end marker line included)."""
    blocks, start, flags, pos, begin_no = [], None, None, 0, 0
    for no, line in enumerate(text.splitlines(keepends=True), 1):
        s = line.strip()
        if s.startswith(BEGIN):
            if start is not None:
                raise ConfigError(f"{path}:{begin_no}: ctxd's block has no end marker ({END}); nothing was changed")
            start, flags, begin_no = pos, _flags(s), no
        elif s.startswith("<!-- ctxd:end"):
            if start is None:
                raise ConfigError(f"{path}:{no}: an end marker without ctxd's begin marker; nothing was changed "
                                  f"(remove the stray marker line)")
            blocks.append((start, pos + len(line), flags))
            start = None
        pos += len(line)
    if start is not None:
        raise ConfigError(f"{path}:{begin_no}: ctxd's block has no end marker ({END}); nothing was changed")
    return blocks


def _open_fence(text):
    """Whether *text* ends inside a fenced code block (an import there would be read as code)."""
    fence = None
    for line in text.splitlines():
        m = _FENCE_RX.match(line)
        if m and (fence is None or m.group(1) == fence):
            fence = None if fence else m.group(1)
    return fence is not None


def install(kind, root, context_dir):
    """Write or update ctxd's block in the project's context file; return lines to show the user."""
    from ctxd.memory.context.render import FILENAME

    path = path_for(kind, root)
    refuse_link_out(path, root)
    context_md = os.path.join(context_dir, FILENAME)
    body, notes = pointer(kind, root, context_md)
    _raw, text = read_text(path)
    if text is None:
        new, status = _render(kind, ["created", "sep=0"], body, "\n"), "created"
    else:
        nl = _newline(text)
        blocks = find_blocks(text, path)
        if blocks:
            start, end, flags = blocks[0]
            new = text[:start] + _render(kind, flags, body, _block_newline(text, start, end)) + text[end:]
            off = len(new) - len(text)
            for s, e, _f in reversed(blocks[1:]):  # one block is enough
                new = new[:s + off] + new[e + off:]
            status = "unchanged" if new == text else "updated"
        else:
            if _open_fence(text):
                raise ConfigError(f"{path} ends inside a code block (an unclosed ``` fence), where the pointer "
                                  f"would not be read; close it first. Nothing was changed")
            if not text or text.endswith(nl + nl) or text.endswith("\n\n"):
                sep = 0
            elif text.endswith("\n"):
                sep = 1
            else:
                sep = 2
            new = text + nl * sep + _render(kind, [f"sep={sep}"], body, nl)
            status = "added"
    out = []
    if status == "unchanged":
        out.append(f"ctxd: {FILES[kind]} already points at {context_md} ({path})")
    else:
        write_text(path, new)
        verb = {"created": "created", "added": "added to", "updated": "updated in"}[status]
        out.append(f"ctxd: pointer to {context_md} {verb} {path}")
    if not os.path.exists(context_md):
        out.append("ctxd: note: context.md appears after the first recorded turn (ctxd chat add / import, or the "
                   "AI CLI hooks)")
    out += [f"ctxd: note: {n}" for n in notes]
    return out


def uninstall(kind, root):
    """Take ctxd's block out again (and what ctxd added around it); return lines to show the user."""
    path = path_for(kind, root)
    refuse_link_out(path, root)
    _raw, text = read_text(path)
    if text is None:
        return [f"ctxd: no ctxd block in {path} (no such file)"]
    blocks = find_blocks(text, path)
    if not blocks:
        return [f"ctxd: no ctxd block in {path}"]
    created = False
    new = text
    for start, end, flags in reversed(blocks):
        nl = _block_newline(new, start, end)
        created = created or "created" in flags
        sep = next((int(f[4:]) for f in flags if f.startswith("sep=")), 0)
        if end == len(new) and sep and new[:start].endswith(nl * sep):
            start -= len(nl * sep)  # the line breaks ctxd put before it, when it is still the last thing
        new = new[:start] + new[end:]
    if created and not new.strip():
        os.unlink(os.path.realpath(path))
        return [f"ctxd: removed {path} (ctxd had created it and nothing else was in it)"]
    write_text(path, new)
    return [f"ctxd: removed ctxd's block from {path}"]
