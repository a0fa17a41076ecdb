"""The interfaces every AI tool or transcript format implements, and what its parser yields.

A ``TranscriptFormat`` knows one tool's transcript files: how to tell one (``sniff_*``) and
how to read one into typed items (``parse``), as ``ctxd.shells.base.Shell`` knows one shell's
text. ``ctxd.memory.ingest.importing`` (the import driver) calls them through the registry in
``ctxd.agents``. An ``AgentTool`` is a TranscriptFormat whose tool is an AI CLI that runs
ctxd's hooks (Claude Code, Codex, Gemini CLI), and knows the rest of it: its settings and
hook events (``ctxd.integrations.install``), what its hook payloads become
(``ctxd.integrations.agent_hooks``, the hook driver), what keeps it from running the hooks
(``ctxd doctor``) and the pointer in its context file (``ctxd.integrations.contextfiles``).

A parser yields, line by line:

- records of the typed model (``ctxd.memory.store.items``) for ``Store.add_many``, each with a
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

TYPE_CHECKING = False  # typing is not imported at run time: the AI CLI hooks import this module
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import BinaryIO

    from ctxd.memory.store.items import Record

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

    def __init__(self, path: str, *, start: int = 0, line_no: int = 1, complete_only: bool = False,
                 size: int | None = None):
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

    def sniff_line(self, obj: dict, n: int) -> "Evidence | None":
        """The Evidence that JSON line *n* (a dict) is of this format, or None."""
        return None

    def sniff_text(self, line: bytes) -> bool:
        """Whether raw line *line* (bytes, among the first lines) marks a file of this format."""
        return False

    def one_document(self, f: "BinaryIO") -> bool:
        """Whether binary file *f* is this format written as one JSON document: detection's
        last resort, and such a file is imported whole each time it changes."""
        return False

    def parse(self, source: "BinaryIO | str", cursor: ParseCursor) -> "Iterator[Record | Malformed | Forget]":
        """Records, Malformed and Forget items from *source* (a binary file, or the path when
        ``wants_path``), starting at ``cursor.start`` and advancing ``cursor.pos``."""
        raise NotImplementedError


class HookError(CtxdError):
    """A hook payload ctxd cannot use: logged, never shown to the AI CLI."""


def payload_text(payload, key):
    """A text field of a hook payload; "" when absent or not text."""
    v = payload.get(key)
    return v if isinstance(v, str) else ""


def payload_id(payload, key):
    """An id field of a hook payload as text (ids may come as numbers); "" when absent."""
    v = payload.get(key)
    if isinstance(v, bool):
        return ""
    return str(v) if isinstance(v, (str, int)) else ""


def read_line(intro, context_md):
    """The context-file line that asks the model to read *context_md* (no import syntax)."""
    return f"{intro}: read `{context_md}` when you start, and again when the user refers to earlier work."


class AgentTool(TranscriptFormat):
    """An AI CLI that runs ctxd's hooks: its transcripts (the TranscriptFormat part) and the rest
    of what ctxd knows of it. Subclasses set the attributes; the methods' defaults fit a tool
    with nothing special.

    Hook handlers (the methods ``hook_handlers`` names) take ``(driver, payload)``: *driver* is
    the hook driver module, ``ctxd.integrations.agent_hooks`` (passed in: a tool module imports
    no adapter), which offers ``write(tool, payload, records, ...)``, ``on_session_start``,
    ``on_prompt``, ``on_transcript`` (each ``(tool, payload)``) and ``project_memory(payload)``.
    A handler returns the JSON object to print, or None.
    """

    label = ""  # what its users call it: "Claude Code"
    # its settings (ctxd.integrations.install), in the project root and in the user's home
    settings_dir = ""  # ".claude"
    settings_file = ""  # the file ctxd's hooks go in, in settings_dir: shared when in a project
    personal_file = None  # a project file of the user's own, not committed (settings.local.json)
    settings_comments = False  # the settings file may hold // and /* */ comments (JSONC)
    home_env = None  # the variable that moves settings_dir out of the home directory
    hook_events = ()  # ((event, matcher or None), ...): the hooks ctxd installs
    hook_timeout = 30  # in the unit the tool reads
    hook_extra = {}  # more keys of each of ctxd's hook entries
    json_stdout = False  # it reads a hook's stdout as JSON only: one object is printed every time
    # a program it runs at the end of each turn, set at user scope by a top-level ``notify`` key
    # in this TOML file of its home directory (Codex's config.toml); ``notify_command`` runs it
    notify_config = None
    # the hooks: event -> the name of the method of this class that handles it
    hook_handlers = {}
    env_events = ()  # the events that hand the hook an env file for its shell tool (agent_env)
    # its live records may come after the import that holds them: reconcile at every write
    reconcile_on_record = False
    doctor_ok_note = ""  # what `ctxd doctor` adds to the line saying it runs ctxd's hooks

    def live_key_prefixes(self, session):
        """The dedup-key prefixes its hooks give the live records of *session*; none when its
        importer keys records as the hooks do (nothing to reconcile)."""
        return ()

    def is_imported_key(self, session, key):
        """Whether *key* (of a record of *session*) is its transcript importer's."""
        return False

    @property
    def notify_command(self):
        """The word after ``ctxd chat hook`` that runs the notify program (``<name>-notify``)."""
        return f"{self.name}-notify"

    def home_dir(self, environ=None):
        """Its settings directory in the user's home (or where ``home_env`` moves it)."""
        env = os.environ if environ is None else environ
        override = env.get(self.home_env, "") if self.home_env else ""
        if override.strip():
            return os.path.abspath(os.path.expanduser(override))
        return os.path.join(os.path.expanduser("~"), self.settings_dir)

    def on_session_start(self, driver, payload):
        return driver.on_session_start(self, payload)

    def on_prompt(self, driver, payload):
        return driver.on_prompt(self, payload)

    def on_transcript(self, driver, payload):
        return driver.on_transcript(self, payload)

    def on_notify(self, driver, args):
        """The notify program (``notify_config``): its payload is in *args*, not on stdin."""
        raise HookError(f"{self.label} runs no notify program")

    def prompt_key(self, payload, session, text):
        """{"dedup": key} or {"dedup_nth": prefix} for the prompt *text* a hook records: the n-th
        identical prompt gets prefix + n, the first n not stored yet (ProjectMemory.record).
        Probing the keys (rather than comparing contents) counts the same prompt however it was
        stored, redacted or offloaded, by a hook or by an import; it happens when the prompt is
        stored, a spooled one included."""
        from ctxd.activation.fileio import sha256_hex

        return {"dedup_nth": f"{self.name}-hook:{session}:user:{sha256_hex(text)[:32]}:"}

    def install_notes(self, scope, root, environ=None):
        """Lines for the user after ctxd's hooks went into its *scope* ("user", else a project's)
        settings: what else they need to run."""
        return []

    def hook_problems(self, installed, root, environ):
        """What keeps it from running ctxd's hooks, for ``ctxd doctor``: (problems, the one step
        that fixes them, or None). *installed*: [(scope, settings path, [(event, group index, hook
        index)])] of ctxd's entries; *root*: the project, or None."""
        return [], None

    def context_pointer(self, intro, context_md, relative):
        """(lines of ctxd's block in its context file, notes for the user) pointing at
        *context_md*; *relative* is its ``./`` path when it is inside the project, else None.
        Default: a line asking the model to read it (AGENTS.md has no import syntax)."""
        return [read_line(intro, context_md)], []
