"""What the transcript parsers share: record builders, line readers, JSON and text helpers."""

import json

from ctxd.agents.base import Malformed
from ctxd.memory.store import items

SNIFF_LINE_BYTES = 1 << 20  # at most this much of a line is read to tell a format


def sha(data):
    from ctxd.activation.fileio import sha256_hex

    return sha256_hex(data)


def timestamp(value):
    """ISO 8601 text (naive = UTC) or a number (seconds, or milliseconds) -> unix seconds, or None."""
    from ctxd.isotime import parse

    return parse(value)


def record(kind, content, session, source, dedup, ts=None, importance=None, **typed):
    """A record of the typed model (ctxd.memory.store.items): kind, content and the fields the kind carries."""
    return items.record(kind, content, session=session, source=source, dedup=dedup, ts=ts,
                        importance=importance, **typed)


def user_record(text, session, source, dedup, ts=None, importance=None):
    """Text on a user line: a prompt, or meta/summary when the CLI injected it (items.user_record)."""
    return items.user_record(text, session=session, source=source, dedup=dedup, ts=ts, importance=importance)


def call_record(name, args, session, source, dedup, ts=None, call_id=None):
    return items.call_record(name, args, call_id=call_id, session=session, source=source, dedup=dedup, ts=ts)


def result_record(text, session, source, dedup, ts=None, *, tool=None, call_id=None, is_error=False,
                  exit_code=None):
    return items.result_record(text, tool=tool, call_id=call_id, is_error=is_error, exit_code=exit_code,
                               session=session, source=source, dedup=dedup, ts=ts)


def dumps(value):
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def text_parts(parts, types=("text", "input_text", "output_text")):
    """The text of a list of content parts (dicts with "text"); other parts are left out."""
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, dict) and isinstance(p.get("text"), str) and p.get("type", "text") in types:
            out.append(p["text"])
    return "\n".join(out)


def as_subagent(rec):
    """Mark a record as a sub-agent's: its "prompts" were written by the main agent."""
    rec["provenance"] = "subagent"
    if rec.get("kind") == "prompt":
        rec.update(kind="meta", role=items.ROLE_OF["meta"], subtype="subagent_prompt")
    return rec


def with_env(rec, cwd, branch):
    """*rec* with the session's working directory and git branch in its data, when it is a prompt:
    where the session stood when the user typed it (the handoff's environment)."""
    if isinstance(rec, dict) and rec.get("kind") == "prompt" and isinstance(cwd, str) and cwd:
        rec["data"] = dict(rec.get("data") or {}, cwd=cwd, git_branch=branch if isinstance(branch, str) and branch
                           else None)
    return rec


# -- reading lines -------------------------------------------------------------------

def lines(f, cursor, start=None, line_no=None, end=None):
    """(line number, line without its newline) from byte *start* (default: the cursor's) up to
    byte *end*; the cursor's ``pos`` follows."""
    pos = cursor.start if start is None else start
    n = cursor.first_line_no if line_no is None else line_no
    f.seek(pos)
    while end is None or pos < end:
        raw = f.readline()
        if not raw:
            return
        if not raw.endswith(b"\n") and cursor.complete_only:
            return
        pos += len(raw)
        cursor.pos = pos
        if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        yield n, raw.rstrip(b"\n").rstrip(b"\r")
        n += 1


def json_object(n, raw):
    """The dict on line *n*, or Malformed."""
    try:
        obj = json.loads(raw)
    except ValueError as e:  # UnicodeDecodeError is a ValueError too
        return Malformed(n, f"invalid JSON: {e}")
    if not isinstance(obj, dict):
        return Malformed(n, f"a JSON {type(obj).__name__}, not an object")
    return obj


def json_lines(f, cursor, **kw):
    """(line number, dict or Malformed) for each line; blank lines are skipped."""
    for n, raw in lines(f, cursor, **kw):
        if raw.strip():
            yield n, json_object(n, raw)


def first_json(f):
    """The first line of *f* as a dict (or None); the file position is kept."""
    here = f.tell()
    try:
        f.seek(0)
        line = f.readline(SNIFF_LINE_BYTES)
        if line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]
        obj = json.loads(line)
        return obj if isinstance(obj, dict) else None
    except ValueError:
        return None
    finally:
        f.seek(here)
