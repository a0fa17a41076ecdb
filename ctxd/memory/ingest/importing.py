"""The import driver: what other AI CLIs recorded -> typed items in the conversation store.

Tells a file's format (the registry in ``ctxd.agents``: magic bytes, file name, the first
lines, a whole JSON document), runs that format's parser and stores what it yields in batches
of ``BATCH``. ``import_file`` imports a whole file (``ctxd chat import``); ``import_transcript``
imports what a live transcript gained since its last call (the AI CLI hooks), from the byte
offset the store keeps per file.

This module is imported by the AI CLI hooks: standard library only at the top.
"""

import json
import os

from ctxd.agents import NAMES, all_agents, named
from ctxd.agents.base import Forget, ImportFailed, Malformed, ParseCursor, ReadFromStart
from ctxd.agents.common import SNIFF_LINE_BYTES, sha
from ctxd.errors import ExitCode

__all__ = ["BATCH", "FORMATS", "ImportFailed", "ImportResult", "detect_format", "import_file", "import_transcript"]

FORMATS = NAMES
BATCH = 500
SHOW_LINES = 20  # malformed line numbers listed in a report
SNIFF_LINES = 50  # lines read to tell a format


# -- telling the format -------------------------------------------------------------

def _line_format(agents, obj, n):
    """The format JSON line *n* (a dict) is surest of, or None (equally sure: the registry's first)."""
    best, surest = None, None
    for agent in agents:
        evidence = agent.sniff_line(obj, n)
        if evidence is not None and (surest is None or evidence > surest):
            best, surest = agent.name, evidence
    return best


def _sniff(f, path, ext):
    agents = all_agents()
    head = f.read(16)
    for agent in agents:
        if agent.magic and head.startswith(agent.magic):
            return agent.name
    for agent in agents:
        if ext in agent.extensions:
            if agent.magic:
                raise ImportFailed(f"{path}: not a {agent.magic_name}", ExitCode.USAGE)
            return agent.name
    f.seek(0)
    for n in range(1, SNIFF_LINES + 1):
        line = f.readline(SNIFF_LINE_BYTES)
        if not line:
            break
        if n == 1 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        for agent in agents:
            if agent.sniff_text(line):
                return agent.name
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            fmt = _line_format(agents, obj, n)
            if fmt:
                return fmt
    for agent in agents:
        if agent.one_document(f):
            return agent.name
    return None


def detect_format(path):
    """The name of *path*'s format (jsonl, claude, codex, gemini, aider or llm), from its first
    bytes, its name and its first lines."""
    try:
        with open(path, "rb") as f:
            fmt = _sniff(f, path, os.path.splitext(path)[1].lower())
    except OSError as e:
        raise ImportFailed(f"{path}: cannot read it: {e.strerror or e}") from None
    if fmt is None:
        raise ImportFailed(f"{path}: cannot tell which tool wrote it; name the format with --format",
                           ExitCode.USAGE)
    return fmt


def _agent(fmt):
    agent = named(fmt)
    if agent is None:
        raise ImportFailed(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})", ExitCode.USAGE)
    return agent


# -- importing ----------------------------------------------------------------------

class ImportResult:
    def __init__(self, path, fmt):
        self.path = path
        self.format = fmt
        self.added = 0
        self.present = 0
        self.forgotten = 0
        self.malformed = 0
        self.malformed_lines = []  # the first SHOW_LINES line numbers
        self.reasons = {}  # line number -> reason, for those listed

    def note_malformed(self, m):
        self.malformed += 1
        if len(self.malformed_lines) < SHOW_LINES:
            self.malformed_lines.append(m.line_no)
            self.reasons[m.line_no] = m.reason

    def malformed_message(self, name=None):
        """'FILE: 3 malformed lines skipped (lines 4, 9, 17)', or '' when there were none."""
        if not self.malformed:
            return ""
        listed = ", ".join(str(n) for n in self.malformed_lines)
        more = ", ..." if self.malformed > len(self.malformed_lines) else ""
        word = "line" if self.malformed == 1 else "lines"
        return (f"{name or self.path}: {self.malformed} malformed {word} skipped "
                f"({'line' if len(self.malformed_lines) == 1 else 'lines'} {listed}{more})")


def _store_all(store, parsed, cursor, result, session=None, progress=None, batch_size=BATCH):
    """Store what a parser yields (records in batches, Forget at once, Malformed counted)."""
    batch = []

    def flush():
        if batch:
            added = len(store.add_many(batch))
            result.added += added
            result.present += len(batch) - added
            batch.clear()
        if progress:
            progress(cursor.pos)

    for item in parsed:
        if isinstance(item, Malformed):
            result.note_malformed(item)
        elif isinstance(item, Forget):
            flush()
            result.forgotten += store.forget_dedup(item.keys)
        else:
            if session:
                item["session"] = session
            batch.append(item)
            if len(batch) >= batch_size:
                flush()
    flush()
    return result


def _open_bin(path):
    try:
        f = open(path, "rb")
    except OSError as e:
        raise ImportFailed(f"{path}: cannot open it: {e.strerror or e}") from None
    if not os.path.isfile(path):
        f.close()
        raise ImportFailed(f"{path}: not a file", ExitCode.USAGE)
    return f


def import_file(store, path, fmt="auto", *, session=None, progress=None, batch_size=BATCH):
    """Import the whole of *path*; return an ImportResult. ImportFailed when nothing could be read.

    *progress*, when given, is called with the byte offset reached after each batch.
    """
    if fmt == "auto":
        fmt = detect_format(path)
    agent = _agent(fmt)
    result = ImportResult(path, fmt)
    if agent.wants_path:
        if not os.path.isfile(path):
            _open_bin(path).close()  # the same error as for any other file
        cursor = ParseCursor(path, size=os.path.getsize(path))
        return _store_all(store, agent.parse(path, cursor), cursor, result, session, progress, batch_size)
    with _open_bin(path) as f:
        cursor = ParseCursor(path, size=os.fstat(f.fileno()).st_size)
        return _store_all(store, agent.parse(f, cursor), cursor, result, session, progress, batch_size)


def _count_lines(f, end):
    f.seek(0)
    n, left = 0, end
    while left > 0:
        chunk = f.read(min(left, 1 << 20))
        if not chunk:
            break
        n += chunk.count(b"\n")
        left -= len(chunk)
    return n


def import_transcript(store, path, fmt="auto", *, session=None):
    """Import what the transcript at *path* gained since the last call; return (added, malformed).

    The store keeps, per file, the byte offset reached and a hash of the first
    line. A file that shrank or whose first line changed (rewritten, replaced)
    is read again from the start: the dedup keys keep that harmless. A last
    line without its newline is left for the next call. Formats that do not
    tail (aider, llm), and sessions written as one JSON document, are imported
    whole each time (dedup keys again).
    """
    real = os.path.realpath(path)
    if fmt == "auto":
        fmt = detect_format(real)
    agent = _agent(fmt)
    if agent.tails:
        with _open_bin(real) as f:
            if not agent.one_document(f):
                f.seek(0)
                return _tail(store, real, agent, f, session)
    r = import_file(store, real, fmt, session=session)
    return r.added, r.malformed


def _tail(store, real, agent, f, session):
    """Import *f* (at byte 0) from the offset the store keeps for it."""
    first = f.readline()
    if not first.endswith(b"\n"):
        return 0, 0  # not even one whole line yet
    head = sha(first)[:16]
    size = os.fstat(f.fileno()).st_size
    offset, old_head = store.get_offset(real)
    if old_head != head or offset > size:
        offset = 0
    if offset == size:
        return 0, 0
    result = ImportResult(real, agent.name)
    cursor = ParseCursor(real, start=offset, line_no=_count_lines(f, offset) + 1 if offset else 1,
                         complete_only=True, size=size)
    try:
        _store_all(store, agent.parse(f, cursor), cursor, result, session)
    except ReadFromStart:
        cursor = ParseCursor(real, complete_only=True, size=size)
        _store_all(store, agent.parse(f, cursor), cursor, result, session)
    store.set_offset(real, cursor.pos, head)
    return result.added, result.malformed
