"""Optional LLM summariser, run only in the background.

    # config.toml
    [summarizer]
    command = "llm -m gpt-4o-mini"   # prompt on stdin, summary on stdout
    timeout = 60                     # seconds per chunk

The older part of the conversation is cut into chunks (~12,000 characters,
~10 % overlap); each chunk is summarised from its source messages (never a
summary of a summary) and the chunk summaries are joined. The result is
cached with the id of the last message it covers; a job writes it only if no
newer result is there (an older job never overwrites a newer one). On any
failure nothing is written, the reason is recorded, and the context uses the
extractive summary: nothing is lost and nothing waits. Facts are extracted
separately, so a summariser that drops a number cannot lose it.
"""

import contextlib
import json
import os
import shlex
import subprocess
import time

from ctxd.activation.fileio import Busy, atomic_write, locked
from ctxd.memory.store.layout import MemoryPaths

CHUNK = 12000
OVERLAP = 0.1
KEEP_RECENT = 20  # the newest messages stay verbatim in the context, not summarised
PROMPT = (
    "Summarise this part of a conversation between a user and an AI assistant for the assistant's "
    "own later use. Keep verbatim every number with its unit or currency, every date, version, file "
    "path, URL and identifier, and every constraint with its negation or bound (do not, never, at "
    "most, at least). When a statement was corrected later, give only the corrected value. List open "
    "questions. Be brief.\n\n"
)


def settings(config):
    raw = (config or {}).get("raw", {}) if isinstance(config, dict) else {}
    s = raw.get("summarizer") if isinstance(raw, dict) else None
    if not isinstance(s, dict) or not isinstance(s.get("command"), str) or not s["command"].strip():
        return None
    t = s.get("timeout", 60)
    return {"command": s["command"], "timeout": float(t) if isinstance(t, (int, float)) else 60.0}


def cache_path(context_dir):
    return MemoryPaths(context_dir).llm_summary


def load(context_dir):
    try:
        with open(cache_path(context_dir), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def chunks(messages):
    """[(first id, last id, text)] of ~CHUNK characters with ~10 % overlap."""
    out, cur, size = [], [], 0
    for m in messages:
        line = f"{m.role}: {m.content}\n"
        cur.append((m.id, line))
        size += len(line)
        if size >= CHUNK:
            out.append(cur)
            keep, kept = [], 0
            for item in reversed(cur):  # carry ~10 % into the next chunk
                if kept >= CHUNK * OVERLAP:
                    break
                keep.insert(0, item)
                kept += len(item[1])
            cur, size = keep, kept
    if cur and (not out or cur != out[-1][-len(cur):]):
        out.append(cur)
    return [(c[0][0], c[-1][0], "".join(t for _, t in c)[: CHUNK * 2]) for c in out]


def run(command, prompt, timeout):
    p = subprocess.run(shlex.split(command), input=prompt, capture_output=True, text=True, timeout=timeout,
                       start_new_session=True)
    if p.returncode != 0:
        raise RuntimeError(f"exit {p.returncode}: {p.stderr.strip()[:200]}")
    if not p.stdout.strip():
        raise RuntimeError("empty output")
    return p.stdout.strip()


def refresh(store, config):
    """Summarise the older messages with the configured command. Returns a status line."""
    s = settings(config)
    if s is None:
        return "no summarizer configured"
    try:
        with locked(MemoryPaths(store.dir).summary_lock, blocking=False):
            return _summarise(store, s)
    except Busy:
        return "another refresh is running"


def _summarise(store, s):
    recent = store.recent(KEEP_RECENT)
    if not recent:
        return "nothing to summarise"
    upto = recent[0].id - 1
    have = load(store.dir)
    if have and have.get("upto", 0) >= upto:
        return "summary is current"
    older = [m for m in store.iter_all() if m.id <= upto]
    parts = []
    try:
        for _first, _last, text in chunks(older):
            parts.append(run(s["command"], PROMPT + text, s["timeout"]))
    except (OSError, RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
        reason = "timed out" if isinstance(e, subprocess.TimeoutExpired) else str(e)
        _status(store.dir, f"summarizer failed ({reason}); the extractive summary is used")
        return f"failed: {reason}"
    current = load(store.dir)
    if current and current.get("upto", 0) >= upto:  # a newer job finished first
        return "a newer summary exists"
    atomic_write(cache_path(store.dir), json.dumps({"upto": upto, "time": time.time(),
                                                    "text": "\n\n".join(parts)}, ensure_ascii=False))
    _status(store.dir, "ok")
    return "ok"


def _status(context_dir, text):
    try:
        atomic_write(MemoryPaths(context_dir).summarizer_status,
                     json.dumps({"time": time.time(), "status": text}))
    except OSError:
        pass


def last_status(context_dir):
    try:
        with open(MemoryPaths(context_dir).summarizer_status, encoding="utf-8") as f:
            return json.load(f).get("status")
    except (OSError, ValueError):
        return None


def spawn_refresh(project, store=None, now=False):
    """Start a detached `ctxd chat refresh` (daemon-free) when there is background work (*now*:
    there is, e.g. context.md to render): an LLM summarizer is configured, or facts or
    embeddings lag behind (semantic recall not switched off). Cheap to ask: no module with rules to compile
    is imported."""
    import sys

    lagging = now
    if store is not None and not lagging:
        lagging = store.count_after(store.facts_watermark(), cap=1) > 0  # fact_merge.backlog, without importing it
        if not lagging:
            from ctxd.memory.recall import embed

            lagging = embed.lagging(store, embed.SPAWN_FROM)
    if settings(project.config) is None and not lagging:
        return False
    if ask_running_refresh(project.context_dir):
        return True
    try:
        subprocess.Popen([sys.executable, "-m", "ctxd", "chat", "refresh"], cwd=project.root,
                         env=dict(os.environ, PWD=project.root), stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        return False
    return True


REFRESH_ROUNDS = 5  # `ctxd chat refresh` runs again while hooks keep asking, at most this often


def one_at_a_time(context_dir, once):
    """Run *once* () -> (messages read, status) under the refresh lock, again while a hook
    asked for it meanwhile (at most REFRESH_ROUNDS), and return the sums. While another
    refresh holds the lock, ask it for one more round and return at once."""
    paths = MemoryPaths(context_dir)
    n, status, rounds = 0, "nothing to do", 0
    for _attempt in range(2 * REFRESH_ROUNDS):
        try:
            with locked(paths.refresh_lock, blocking=False):
                rounds += 1
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(paths.refresh_again)
                more, status = once()
                n += more
        except Busy:
            if ask_running_refresh(context_dir):
                return (n, status) if rounds else (0, "another refresh is running; it runs once more for this")
            continue  # it has just finished: take the lock
        if rounds >= REFRESH_ROUNDS or not os.path.exists(paths.refresh_again):
            break
    return n, status


def ask_running_refresh(context_dir):
    """True when a `ctxd chat refresh` is running in *context_dir*: it is asked for one more
    round (the ``refresh_again`` marker) instead of a new process being started, so a burst of
    hooks during a long fact extraction does not queue a process each behind it. The marker
    is left before the lock is tried: a refresh that releases the lock afterwards sees it."""
    paths = MemoryPaths(context_dir)
    try:
        with open(paths.refresh_again, "a", encoding="utf-8"):
            pass
        with locked(paths.refresh_lock, blocking=False):
            return False
    except Busy:
        return True
    except OSError:
        return False
