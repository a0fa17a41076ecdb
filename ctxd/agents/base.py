"""The interface every AI tool or transcript format implements, and what its parser yields.

A ``TranscriptFormat`` knows one tool's transcript files: how to tell one (``sniff_*``) and
how to read one into typed items (``parse``), as ``ctxd.shells.base.Shell`` knows one shell's
text. ``ctxd.memory.importing`` (the import driver) calls them through the registry in
``ctxd.agents``. A tool's other knowledge (settings spec and hook events, hook payload -> typed
items, trust problems, context-file name) is to move here in later steps of issue 24.

A parser yields, line by line:

- records of the typed model (``ctxd.memory.items``) for ``Store.add_many``, each with a
  ``dedup`` key unique and stable across re-imports, so importing a file twice adds nothing;
- ``Malformed(line_no, reason)`` for a line it cannot use (counted and reported, never fatal);
- ``Forget(keys)`` when messages imported earlier must go (a Gemini rewind): the rows whose
  dedup key is one of *keys*, or starts with key + ":".

Standard library only at the top: the AI CLI hooks import this.
"""

import enum
import os
from collections import namedtuple

from ctxd.errors import CtxdError, ExitCode

Malformed = namedtuple("Malformed", "line_no reason")  # a line that could not be used
Forget = namedtuple("Forget", "keys")  # dedup keys (and their "key:..." children) to delete


class ImportFailed(CtxdError):
    """A whole file could not be imported (missing, unreadable, unknown format)."""

    exit_code = ExitCode.NOT_FOUND


class ReadFromStart(CtxdError):
    """An incremental parse met what only a pass over the whole file can apply (a Gemini
    rewind); the import driver reads the file again from its start. Never reaches a user."""

    def __init__(self, message="this import must read the file from its start"):
        super().__init__(message)


class Evidence(enum.IntEnum):
    """How surely one JSON line names its format; detection takes the surest line's format,
    and among formats equally sure, the first in the registry."""

    HINT = 1  # a record shape another tool might write too (an id and a type)
    SHAPE = 2  # the plain chat-message shape several tools share ({"role", "content"})
    MARK = 3  # keys only this tool writes


class ParseCursor:
    """Where a parse of one file starts and how far it got.

    ``pos`` is the byte offset just after the last line consumed; with ``complete_only`` a last
    line without its newline is not consumed (a writer may be in the middle of it).
    ``default_session`` is the file's name without its extension: the session of records
    that name none.
    """

    def __init__(self, path, *, start=0, line_no=1, complete_only=False, size=None):
        self.path = path
        self.start = start
        self.first_line_no = line_no
        self.complete_only = complete_only
        self.pos = start
        self.size = size
        stem = os.path.basename(path)
        for ext in (".jsonl", ".json", ".md", ".db"):
            if stem.endswith(ext):
                stem = stem[: -len(ext)]
        self.default_session = stem or "import"


class TranscriptFormat:
    """One AI tool's (or plain format's) transcripts. Subclasses set ``name`` and ``parse``
    and the sniffers that apply; the defaults claim nothing."""

    name = ""
    magic = b""  # the first bytes of every file of this format (b"" = none)
    magic_name = ""  # what those bytes are, for "not a ..." errors
    extensions = ()  # file-name endings that settle the format (lower case, with the dot)
    tails = True  # a live file can be imported incrementally (False: read whole every time)
    wants_path = False  # parse() takes the path (a database), not an open binary file

    def sniff_line(self, obj, n):
        """The Evidence that JSON line *n* (a dict) is of this format, or None."""
        return None

    def sniff_text(self, line):
        """Whether raw line *line* (bytes, among the first lines) marks a file of this format."""
        return False

    def one_document(self, f):
        """Whether binary file *f* is this format written as one JSON document: detection's
        last resort, and such a file is imported whole each time it changes."""
        return False

    def parse(self, source, cursor):
        """Records, Malformed and Forget items from *source* (a binary file, or the path when
        ``wants_path``), starting at ``cursor.start`` and advancing ``cursor.pos``."""
        raise NotImplementedError
