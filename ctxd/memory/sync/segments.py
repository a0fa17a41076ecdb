"""The segments ctxd sync writes on its ref (ctxd.memory.sync.sharing): gzip'd JSON lines, append-only
and content-addressed, and how a receiver reads one without trusting it.

The first line of a segment is its header
``{"ctxd": "memory-segment", "format": 1, "author": email, "machine": host, "machine_id": id,
"items": n}``; each further line one item, ``t`` its type:

    msg      a message with its typed fields (kind, role, session, content, ts, importance,
             source, tool, call_id, subtype, data, legacy) under its dedup key ``key``
    fact     a fact recorded on purpose: the message key, its kind and priority
    task     a task (key, name, status, started, finished, notes), sent again when it changes
    handoff  a handoff archive (file name, the archive)
    tomb     a tombstone: the key of a deleted message

Whatever a segment claims is checked or bounded when it is read (decode_segment, MAX_*).
"""

import gzip
import hashlib
import json
import math
import zlib

from ctxd.errors import CtxdError

REF = "refs/ctxd/memory"  # the ref the segments travel on
FORMAT = 1
MAGIC = "memory-segment"
SEGMENT_ITEMS = 5000  # items per segment blob: an initial sync of 100,000 messages writes 20
# Bounds on what a segment may cost the receiver (anyone who can push the ref can write one):
# it is inflated INFLATE_CHUNK bytes at a time, a line at a time, never whole.
MAX_BLOB = 32 * 1024 * 1024  # compressed bytes of one segment blob: a bigger one is not read
MAX_SEGMENT = 64 * 1024 * 1024  # bytes a segment may inflate to (a gzip bomb is refused)
MAX_LINE = 2 * 1024 * 1024  # bytes of one item's JSON line: a longer one is skipped unread
MAX_ITEM_CHARS = 256 * 1024  # characters of an item's text (a message, a task's name or note)
MAX_ITEMS = 2 * SEGMENT_ITEMS  # items in one segment
SEGMENT_BYTES = 16 * 1024 * 1024  # a segment written here closes at about this many bytes of JSON
INFLATE_CHUNK = 256 * 1024
FACT_KINDS = ("preference", "requirement", "background", "todo")


class SegmentError(CtxdError):
    """A blob on the ref that is not a segment this ctxd can read."""


def encode_segment(header, items):
    """The bytes of one segment (deterministic: the same items make the same blob)."""

    def dump(o):
        return json.dumps(o, ensure_ascii=False, sort_keys=True, separators=(",", ":"))

    text = "\n".join([dump(dict(header, items=len(items)))] + [dump(i) for i in items]) + "\n"
    return gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)


def _lines(data):
    """The lines of gzip'd *data*, inflated INFLATE_CHUNK bytes at a time: bytes, or None for a
    line longer than MAX_LINE (dropped as it streams by). SegmentError past MAX_SEGMENT bytes."""
    if not data or data[:2] != b"\x1f\x8b":
        raise SegmentError("not a gzip'd segment")
    d = zlib.decompressobj(wbits=31)
    tail, total, parts, size, long_line = data, 0, [], 0, False
    while not d.eof:
        try:
            out = d.decompress(tail, INFLATE_CHUNK)
        except zlib.error as e:
            raise SegmentError(f"corrupt gzip data ({e})") from None
        tail = d.unconsumed_tail
        if not out and not tail and not d.eof:
            raise SegmentError("truncated gzip data")
        total += len(out)
        if total > MAX_SEGMENT:
            raise SegmentError(f"inflates to more than {MAX_SEGMENT} bytes")
        start = 0
        while True:
            nl = out.find(b"\n", start)
            piece = out[start:] if nl < 0 else out[start:nl]
            if not long_line:
                size += len(piece)
                if size > MAX_LINE:
                    long_line, parts = True, []
                else:
                    parts.append(piece)
            if nl < 0:
                break
            yield None if long_line else b"".join(parts)
            parts, size, long_line, start = [], 0, False, nl + 1
    if parts or long_line:
        yield None if long_line else b"".join(parts)


def decode_segment(data):
    """(header, items, bad lines) of a segment's bytes; SegmentError when it is none or when it
    is over a bound (MAX_SEGMENT bytes inflated, MAX_ITEMS items). Memory stays bounded: the
    segment is inflated a chunk at a time and an item over MAX_LINE / MAX_ITEM_CHARS is skipped."""
    lines = _lines(data)
    first = next(lines, None)
    try:
        header = json.loads(first.decode("utf-8")) if first else None
    except (UnicodeDecodeError, ValueError):
        header = None
    if not isinstance(header, dict) or header.get("ctxd") != MAGIC:
        raise SegmentError("no segment header")
    fmt = header.get("format")
    if not isinstance(fmt, int) or fmt < 1:
        raise SegmentError("no segment header")
    if fmt > FORMAT:
        raise SegmentError(f"format {fmt}, written by a newer ctxd (upgrade ctxd to read it)")
    items, bad = [], 0
    for line in lines:
        if line is None:
            bad += 1
            continue
        if not line.strip():
            continue
        if len(items) >= MAX_ITEMS:
            raise SegmentError(f"more than {MAX_ITEMS} items")
        try:
            item = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            bad += 1
            continue
        if isinstance(item, dict) and _valid(item) and _small(item):
            items.append(item)
        else:
            bad += 1
    return header, items, bad


def _small(item):
    """Whether an item's texts are within MAX_ITEM_CHARS."""
    t = item["t"]
    if t == "msg":
        return len(item["content"]) <= MAX_ITEM_CHARS
    if t == "task":
        return len(item["name"]) <= MAX_ITEM_CHARS and all(len(n["text"]) <= MAX_ITEM_CHARS for n in item["notes"])
    return True


def _valid(item):
    from ctxd.memory.store import items as items_mod

    t = item.get("t")

    def s(k):
        return isinstance(item.get(k), str)

    def num(k):
        v = item.get(k)
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    if t == "msg":
        return (s("key") and item["key"] and item.get("kind") in items_mod.KINDS and s("content") and num("ts")
                and isinstance(item.get("session", ""), str) and isinstance(item.get("source", ""), str)
                and (item.get("importance") is None or (num("importance") and 0 <= item["importance"] <= 1))
                and (item.get("data") is None or isinstance(item["data"], (dict, list))))
    if t == "tomb":
        return s("key") and bool(item["key"]) and num("ts")
    if t == "fact":
        return s("key") and item.get("kind") in FACT_KINDS and num("priority")
    if t == "task":
        return (s("key") and s("name") and item.get("status") in ("open", "done") and num("started")
                and (item.get("finished") is None or num("finished")) and isinstance(item.get("notes"), list)
                and all(isinstance(n, dict) and isinstance(n.get("text"), str) and isinstance(n.get("ts"), (int, float))
                        for n in item["notes"]))
    if t == "handoff":
        return s("file") and isinstance(item.get("archive"), dict)
    return False


def sha(data):
    return hashlib.sha256(data if isinstance(data, bytes) else data.encode("utf-8")).hexdigest()


def author_dir(email, machine_id):
    return sha(f"{email}\0{machine_id}")[:16]


def capped(text):
    """*text* within MAX_ITEM_CHARS (what a receiver accepts), its cut said."""
    if not text or len(text) <= MAX_ITEM_CHARS:
        return text
    note = f"\n[... {len(text):,} characters: cut to ctxd sync's limit of {MAX_ITEM_CHARS:,} an item]"
    return text[:MAX_ITEM_CHARS - len(note)] + note


def split_segments(items):
    """*items* in lists of at most SEGMENT_ITEMS items and about SEGMENT_BYTES bytes of JSON."""
    chunk, size = [], 0
    for it in items:
        n = len(json.dumps(it, ensure_ascii=False)) + 1
        if chunk and (len(chunk) >= SEGMENT_ITEMS or size + n > SEGMENT_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(it)
        size += n
    if chunk:
        yield chunk
