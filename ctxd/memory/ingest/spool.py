"""The spool: what an AI CLI hook could not store (the store busy, full, read-only or corrupt).

One file per event in ``<context dir>/spool/`` (when that cannot be written, a
read-only directory say: ``<state dir>/spool/<key of the context dir>/``, the
log's file system), named by the time it was written
(``<ns>-<pid>-<random>.json``, 0600), written whole or not at all (a temp file
fsynced and linked into place: ``ctxd.activation.fileio.atomic_write``), so
concurrent hooks never interleave and a crash never leaves half an entry. The
records in it are redacted before they are written: a secret never reaches
the disk raw.

An entry::

    {"v": 1, "tool": "claude", "event": "UserPromptSubmit", "session": "...", "ts": 1770000000.0,
     "records": [{"kind": "prompt", "content": "...", "dedup": "..." | "dedup_nth": "prefix:"}],
     "transcript": "/path/to/transcript.jsonl" | null}

The next writer (``ProjectMemory.store()`` opened for writing: a hook, an
import, any write command) replays the entries in order, one process at a
time (``spool/.lock``). Each entry's records are stored in one transaction
with a marker (``meta`` key ``spool:<name>``), so a replay interrupted
between that commit and the file's removal never stores them twice; a
transcript is re-imported (imports are idempotent). Then the file goes.
"""

import contextlib
import json
import os
import time

VERSION = 1
MARK = "spool:"


def names(spool_dir):
    """The pending entries' file names, oldest first."""
    try:
        return sorted(n for n in os.listdir(spool_dir) if n.endswith(".json") and not n.startswith("."))
    except (FileNotFoundError, NotADirectoryError):
        return []


def redacted(records, redactor):
    """*records* with their content and data passed through *redactor* (text -> (text, counts))."""
    out = []
    for r in records:
        r = dict(r)
        if redactor is not None:
            r["content"] = redactor(r.get("content") or "")[0]
            if r.get("data") is not None:
                r["data"] = json.loads(redactor(json.dumps(r["data"], ensure_ascii=False))[0])
        out.append(r)
    return out


def put(spool_dir, tool, event, session, records=(), transcript=None, redactor=None):
    """Write one entry (records redacted with *redactor*); its path."""
    from ctxd.activation.fileio import atomic_write

    entry = {"v": VERSION, "tool": tool, "event": event, "session": session, "ts": time.time(),
             "records": redacted(records, redactor), "transcript": transcript}
    path = os.path.join(spool_dir, f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(3).hex()}.json")
    atomic_write(path, json.dumps(entry, ensure_ascii=False) + "\n", mode=0o600, exclusive=True)
    return path


def _pending(dirs):
    """[(name, dir)] of the entries in *dirs*, oldest first (names sort by time)."""
    return sorted((n, d) for d in dirs for n in names(d))


def _lock_dir(dirs):
    """Where the replay lock lives: the first of *dirs* that exists or can be made."""
    for d in dirs:
        try:
            os.makedirs(d, mode=0o700, exist_ok=True)
            if os.access(d, os.W_OK):
                return d
        except OSError:
            pass
    return dirs[-1]


def replay(mem, spool_dirs, time_limit=None):
    """Store the pending entries of *spool_dirs* into *mem*'s open store, oldest first (the
    entries of every dir in one order); how many were replayed.

    Stops at the first entry the store cannot take (still busy, full, ...: it stays for the
    next writer) and, with *time_limit* (seconds), once that much time has passed; with a
    time limit a store still held by another process is not waited for at all. Another
    process replaying already: nothing is done here. An entry that is not valid JSON is
    renamed ``.bad`` (kept, logged) so it never blocks the rest.
    """
    from ctxd import boundary
    from ctxd.activation.fileio import Busy, locked
    from ctxd.memory.store.errors import StoreUnavailable

    if not _pending(spool_dirs):
        return 0
    end = None if time_limit is None else time.monotonic() + time_limit
    done, changed = 0, False
    # with a time limit (a hook), a store still held is not waited for: the hook's own write waits
    wait = mem.store().waiting(0) if time_limit is not None else contextlib.nullcontext()
    try:
        with locked(os.path.join(_lock_dir(spool_dirs), ".lock"), blocking=False), wait:
            for name, spool_dir in _pending(spool_dirs):
                if end is not None and time.monotonic() > end:
                    break
                path = os.path.join(spool_dir, name)
                try:
                    with open(path, encoding="utf-8") as f:
                        entry = json.load(f)
                    if not isinstance(entry, dict):
                        raise ValueError("not a JSON object")
                except FileNotFoundError:
                    continue
                except ValueError as e:
                    os.replace(path, path + ".bad")
                    boundary.log_exception(f"spool: {path} is unreadable ({e}); kept as {path}.bad", e)
                    continue
                try:
                    changed |= _apply(mem, name, entry)
                except StoreUnavailable:
                    break
                os.unlink(path)
                mem.store().forget_spool_mark(MARK + name)
                done += 1
    except Busy:
        return 0
    if done:
        _log(f"spool: {done} queued hook event(s) stored in {mem.paths.store}")
    if changed:
        mem.changed()
    return done


def _apply(mem, name, entry):
    """Store one entry; whether anything new was stored."""
    from ctxd.agents import ai_cli

    tool, session = entry.get("tool") or "", entry.get("session") or ""
    cli = ai_cli(tool)  # None for a tool this ctxd does not know
    records = [r for r in entry.get("records") or () if isinstance(r, dict)]
    added = gone = 0
    store = mem.store()
    if records:
        with mem.transaction():
            if not store.spool_marked(MARK + name):
                added = len(mem.record(records, redact=True, render=False))  # redacting again changes nothing
                if added and cli is not None and cli.reconcile_on_record:
                    gone = mem.reconcile_tool(cli, session)
                store.mark_spool(MARK + name)
    transcript = entry.get("transcript")
    if isinstance(transcript, str) and os.path.isfile(transcript):
        n, _malformed = mem.import_transcript(transcript, tool)
        added += n
        if n and cli is not None:
            gone += mem.reconcile_tool(cli, session)
    return bool(added or gone)


def _log(line):
    """One line in ctxd's log file (no traceback)."""
    from ctxd import boundary

    boundary.log_line(line)
