"""Handoff archives: schema, validation, migrations, versioned storage and the index.

An archive is one JSON object (UTF-8). Schema ``2.0`` (``CURRENT_SCHEMA``):

    schema_version   "2.0"
    id               "<session>_v<N>": set by save() (the file is handoffs/<id>.json)
    version          N, int >= 1: set by save(), per session, never reused
    session_id       str: the conversation session the archive packs
    created_at       str, ISO 8601 UTC ("2026-11-30T07:19:00Z")
    language         "en" | "zh": the teaching language (config or detected)
    topic            {title: str, current_subtopic: str, stage: str}
                     stage: "starting" | "learning" | "practicing" | "reviewing" | "unknown"
    progress         {completed: [str], in_progress: str | null, next_up: [str]}
    key_points       [{concept: str,
                       understanding_level: "definition" | "mechanism" | "edge_cases" | "unknown"
                           (the deepest kind of question the learner asked about it:
                            what it is / why and how it works / edge cases, trade-offs),
                       mastery_level: "low" | "medium" | "high",
                       mastery_source: "inferred" | "config" | "migrated"   (optional),
                       summary: str}]
    questions        [{question: str, status: "open" | "resolved", created_at: str,
                       resolved_at: str (only when resolved)}]
    learning_style   {preference: str, wants_code_examples: bool, wants_visual_descriptions: bool,
                      depth: "shallow" | "normal" | "deep", pace: "slow" | "normal" | "fast"}
    environment      {project_types: [str], version_pins: [{tool, version, file}],
                      git_branch: str | null, versions_mentioned: [str],
                      processes: [{pid: int, name: str, cwd: str, ports: [int]}]}
    context_footprint {tokens_compressed_from: int, tokens_compressed_to: int,
                       compression_ratio: number | null}
                     (tokens of the session's messages / tokens of this archive's JSON)
    facts            [{text: str, tag: "preference" | "requirement" | "background" | "todo" | "question",
                       superseded: bool}]
                     the context engine's facts, verbatim, within the token budget the
                     compression target leaves (config [handoff] compression_ratio, default 10)
    summary          str: the context engine's summary of the session (may be "")

Optional keys: ``project`` {root, name}; ``imported_from`` {id, path, at} (set by
import); ``migrated_from`` (the schema_version a loaded archive had before
migration; load() sets it, save() keeps it). Other extra top-level keys are
allowed and kept.

Schema ``1.0`` (the first format) was flat: ``session``, ``created``
("YYYY-MM-DD HH:MM:SS", UTC), ``topic`` and ``subtopic`` (strings),
``completed`` / ``in_progress`` / ``next`` at the top level, ``key_points`` and
``questions`` as lists of strings, ``answered`` (questions already resolved),
``style`` (a free-text preference), ``notes``; no environment or footprint.
load() migrates it to 2.0, filling defaults (see ``_migrate_1_0``).

Storage, under the project's context directory:

    handoffs/index.json          {"schema": 1, "next_version": {session: N}, "seq": M,
                                  "entries": [{id, session_id, version, file, topic, created_at,
                                               saved_at, updated, status, seq}]}
                                 seq: the order entries were stored in (newest = highest)
                                 status: "active" (the newest version of its session),
                                 "archived" (an older one), "shared" (exported)
    handoffs/<session>_v<N>.json one file per version; the last KEEP (5) per session stay
    handoffs/.lock               fileio.locked(): save, prune and index updates run under it

An archive file is written with ``fileio.atomic_write(exclusive=True)``: a temp
file, fsynced, hard-linked to its final name, which fails rather than replace
an existing file: nothing is ever overwritten. Two processes saving at once
both succeed, with versions N and N+1. The index is rebuilt from the files when it is missing or unreadable.
"""

import json
import os
import re
import time

from ctxd.activation.fileio import atomic_write, locked
from ctxd.errors import CtxdError, ExitCode, NotFoundError
from ctxd.isotime import format_utc, normalize

CURRENT_SCHEMA = "2.0"
SUPPORTED = ("1.0", "2.0")
KEEP = 5
DIRNAME = "handoffs"
INDEX = "index.json"
LOCK = ".lock"
INDEX_SCHEMA = 1

MASTERY = ("low", "medium", "high")
UNDERSTANDING = ("definition", "mechanism", "edge_cases", "unknown")
STAGES = ("starting", "learning", "practicing", "reviewing", "unknown")
DEPTHS = ("shallow", "normal", "deep")
PACES = ("slow", "normal", "fast")
QSTATUS = ("open", "resolved")
TAGS = ("preference", "requirement", "background", "todo", "question")
STATUSES = ("active", "archived", "shared")

_ID = re.compile(r"^(?P<slug>.+)_v(?P<n>\d+)$")


class ArchiveError(CtxdError):
    """An archive that cannot be used (exit 3, like an invalid config file)."""

    exit_code = ExitCode.CONFIG


class ArchiveCorrupt(ArchiveError):
    """Not JSON, not an object, or not valid for its schema. ``readable`` lists the
    ids of earlier versions of the same session that still load."""

    def __init__(self, message, path=None, readable=()):
        super().__init__(message)
        self.path = path
        self.readable = list(readable)


class ArchiveTooNew(ArchiveError):
    pass


# -- small helpers ---------------------------------------------------------------------

now_iso = format_utc  # archives write times as YYYY-MM-DDTHH:MM:SSZ (UTC)


def handoff_dir(context_dir):
    return os.path.join(context_dir, DIRNAME)


def slug(session):
    """A file-name-safe form of a session id (the id part of <slug>_v<N>)."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", session or "").strip("._")
    return (s or "default")[:80]


def _vtuple(v):
    try:
        return tuple(int(x) for x in str(v).split("."))
    except ValueError:
        return None


# -- validation ------------------------------------------------------------------------

def _t(value, kind):
    if kind == "str":
        return isinstance(value, str)
    if kind == "str?":
        return value is None or isinstance(value, str)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "num?":
        return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "list":
        return isinstance(value, list)
    if kind == "dict":
        return isinstance(value, dict)
    raise AssertionError(kind)


_TOP = (("schema_version", "str"), ("session_id", "str"), ("created_at", "str"), ("topic", "dict"),
        ("progress", "dict"), ("key_points", "list"), ("questions", "list"), ("learning_style", "dict"),
        ("environment", "dict"), ("context_footprint", "dict"), ("facts", "list"), ("language", "str"),
        ("summary", "str"))


def problems(archive):
    """Everything wrong with *archive* against the current schema: ["where: what"]."""
    out = []
    if not isinstance(archive, dict):
        return ["the archive is not a JSON object"]

    def need(obj, key, kind, where, allowed=None):
        if key not in obj:
            out.append(f"{where}{key}: missing")
            return False
        if not _t(obj[key], kind):
            out.append(f"{where}{key}: expected {kind.rstrip('?')}{' or null' if kind.endswith('?') else ''}, "
                       f"got {type(obj[key]).__name__}")
            return False
        if allowed and obj[key] not in allowed:
            out.append(f"{where}{key}: {obj[key]!r} is not one of {', '.join(allowed)}")
            return False
        return True

    for key, kind in _TOP:
        need(archive, key, kind, "")
    if out:
        return out
    if archive["schema_version"] != CURRENT_SCHEMA:
        out.append(f"schema_version: {archive['schema_version']!r} (current is {CURRENT_SCHEMA}; load() migrates)")
    if "version" in archive and not (_t(archive["version"], "int") and archive["version"] >= 1):
        out.append("version: expected an integer >= 1")
    if "id" in archive and not _t(archive["id"], "str"):
        out.append("id: expected str")
    if archive["language"] not in ("en", "zh"):
        out.append(f"language: {archive['language']!r} is not one of en, zh")
    t = archive["topic"]
    need(t, "title", "str", "topic.")
    need(t, "current_subtopic", "str", "topic.")
    need(t, "stage", "str", "topic.", STAGES)
    p = archive["progress"]
    if need(p, "completed", "list", "progress."):
        out += [f"progress.completed[{i}]: expected str" for i, x in enumerate(p["completed"]) if not _t(x, "str")]
    need(p, "in_progress", "str?", "progress.")
    if need(p, "next_up", "list", "progress."):
        out += [f"progress.next_up[{i}]: expected str" for i, x in enumerate(p["next_up"]) if not _t(x, "str")]
    for i, k in enumerate(archive["key_points"]):
        w = f"key_points[{i}]."
        if not isinstance(k, dict):
            out.append(f"key_points[{i}]: expected an object")
            continue
        need(k, "concept", "str", w)
        need(k, "understanding_level", "str", w, UNDERSTANDING)
        need(k, "mastery_level", "str", w, MASTERY)
        need(k, "summary", "str", w)
    for i, q in enumerate(archive["questions"]):
        w = f"questions[{i}]."
        if not isinstance(q, dict):
            out.append(f"questions[{i}]: expected an object")
            continue
        need(q, "question", "str", w)
        need(q, "status", "str", w, QSTATUS)
        need(q, "created_at", "str", w)
        if "resolved_at" in q:
            need(q, "resolved_at", "str?", w)
    s = archive["learning_style"]
    need(s, "preference", "str", "learning_style.")
    need(s, "wants_code_examples", "bool", "learning_style.")
    need(s, "wants_visual_descriptions", "bool", "learning_style.")
    need(s, "depth", "str", "learning_style.", DEPTHS)
    need(s, "pace", "str", "learning_style.", PACES)
    e = archive["environment"]
    if need(e, "project_types", "list", "environment."):
        out += [f"environment.project_types[{i}]: expected str" for i, x in enumerate(e["project_types"])
                if not _t(x, "str")]
    if need(e, "version_pins", "list", "environment."):
        for i, x in enumerate(e["version_pins"]):
            if not (isinstance(x, dict) and all(_t(x.get(k), "str") for k in ("tool", "version", "file"))):
                out.append(f"environment.version_pins[{i}]: expected {{tool, version, file}} strings")
    need(e, "git_branch", "str?", "environment.")
    if need(e, "versions_mentioned", "list", "environment."):
        out += [f"environment.versions_mentioned[{i}]: expected str"
                for i, x in enumerate(e["versions_mentioned"]) if not _t(x, "str")]
    if need(e, "processes", "list", "environment."):
        for i, x in enumerate(e["processes"]):
            ok = isinstance(x, dict) and _t(x.get("pid"), "int") and _t(x.get("name"), "str") \
                and _t(x.get("cwd"), "str") and isinstance(x.get("ports"), list) \
                and all(_t(p_, "int") for p_ in x["ports"])
            if not ok:
                out.append(f"environment.processes[{i}]: expected {{pid: int, name: str, cwd: str, ports: [int]}}")
    f = archive["context_footprint"]
    need(f, "tokens_compressed_from", "int", "context_footprint.")
    need(f, "tokens_compressed_to", "int", "context_footprint.")
    need(f, "compression_ratio", "num?", "context_footprint.")
    for i, x in enumerate(archive["facts"]):
        w = f"facts[{i}]."
        if not isinstance(x, dict):
            out.append(f"facts[{i}]: expected an object")
            continue
        need(x, "text", "str", w)
        need(x, "tag", "str", w, TAGS)
        if "superseded" in x:
            need(x, "superseded", "bool", w)
    return out


def validate(archive):
    """Raise ArchiveError naming every problem; return *archive* when it is valid."""
    errs = problems(archive)
    if errs:
        more = f" (and {len(errs) - 8} more)" if len(errs) > 8 else ""
        raise ArchiveError("invalid handoff archive: " + "; ".join(errs[:8]) + more)
    return archive


def empty(session_id="", created_at=None, language="en"):
    """A valid archive with every field at its default."""
    return {
        "schema_version": CURRENT_SCHEMA,
        "session_id": session_id,
        "created_at": created_at or now_iso(),
        "language": language,
        "topic": {"title": "", "current_subtopic": "", "stage": "unknown"},
        "progress": {"completed": [], "in_progress": None, "next_up": []},
        "key_points": [],
        "questions": [],
        "learning_style": {"preference": "", "wants_code_examples": False, "wants_visual_descriptions": False,
                           "depth": "normal", "pace": "normal"},
        "environment": {"project_types": [], "version_pins": [], "git_branch": None, "versions_mentioned": [],
                        "processes": []},
        "context_footprint": {"tokens_compressed_from": 0, "tokens_compressed_to": 0, "compression_ratio": None},
        "facts": [],
        "summary": "",
    }


# -- migrations ------------------------------------------------------------------------

_CJK = re.compile(r"[\u4e00-\u9fff]")


def _iso_from_v1(value):
    """v1's created time as the Z form; text that is no time is kept as it was."""
    if not isinstance(value, str) or not value.strip():
        return now_iso(0)
    return normalize(value) or value.strip()


def _concept_of(point):
    """"三次握手：SYN → ..." -> "三次握手"; "Slow start: cwnd doubles" -> "Slow start"."""
    for sep in ("：", ": ", " - ", " — "):
        if sep in point:
            head = point.split(sep, 1)[0].strip()
            if 0 < len(head) <= 60:
                return head
    return point.strip()[:60]


def _strs(value):
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [x for x in value if isinstance(x, str) and x.strip()]
    return []


def _migrate_1_0(old):
    """1.0 -> 2.0. Defaults: stage "unknown" (or "learning" when something is in
    progress); key points mastery "medium" when their concept is among the
    completed topics, else "low", understanding "unknown"; questions open unless
    listed in ``answered``; learning style from the ``style`` text (code / 代码,
    diagram / 图, brief / 简短, detailed / 详细, slow / 慢); environment empty;
    footprint zeros with a null ratio; facts empty; ``notes`` becomes the summary."""
    created = _iso_from_v1(old.get("created") or old.get("created_at"))
    session = old.get("session") or old.get("session_id") or ""
    text_all = json.dumps(old, ensure_ascii=False)
    new = empty(str(session), created, "zh" if len(_CJK.findall(text_all)) > 20 else "en")
    topic = old.get("topic")
    if isinstance(topic, dict):  # tolerate a half-migrated shape
        new["topic"]["title"] = str(topic.get("title") or "")
        new["topic"]["current_subtopic"] = str(topic.get("current_subtopic") or topic.get("subtopic") or "")
    else:
        new["topic"]["title"] = str(topic or "")
        new["topic"]["current_subtopic"] = str(old.get("subtopic") or "")
    completed = _strs(old.get("completed"))
    in_progress = old.get("in_progress")
    in_progress = in_progress.strip() if isinstance(in_progress, str) and in_progress.strip() else None
    nxt = _strs(old.get("next") if "next" in old else old.get("next_up"))
    new["progress"] = {"completed": completed, "in_progress": in_progress, "next_up": nxt}
    new["topic"]["stage"] = "learning" if in_progress or completed else "unknown"
    done = " ".join(completed)
    for point in _strs(old.get("key_points")):
        concept = _concept_of(point)
        new["key_points"].append({"concept": concept, "understanding_level": "unknown",
                                  "mastery_level": "medium" if concept and concept in done else "low",
                                  "mastery_source": "migrated", "summary": point.strip()})
    answered = set(_strs(old.get("answered")))
    for q in _strs(old.get("questions")) + [a for a in _strs(old.get("answered"))
                                             if a not in _strs(old.get("questions"))]:
        item = {"question": q.strip(), "status": "resolved" if q in answered else "open", "created_at": created}
        if q in answered:
            item["resolved_at"] = created
        new["questions"].append(item)
    style = old.get("style")
    style = style if isinstance(style, str) else ""
    low = style.lower()
    new["learning_style"] = {
        "preference": style,
        "wants_code_examples": bool(re.search(r"code|example|代码|示例", low)),
        "wants_visual_descriptions": bool(re.search(r"diagram|visual|picture|chart|图", low)),
        "depth": "shallow" if re.search(r"brief|short|concise|简短|简单点|简洁", low)
        else "deep" if re.search(r"detail|deep|in depth|详细|深入", low) else "normal",
        "pace": "slow" if re.search(r"slow|step by step|慢", low) else "fast" if re.search(r"fast|quick|快", low)
        else "normal",
    }
    notes = old.get("notes")
    new["summary"] = notes if isinstance(notes, str) else ""
    for k, v in old.items():  # keep what the old format had beyond its known keys
        if k not in ("schema_version", "session", "session_id", "created", "created_at", "topic", "subtopic",
                     "completed", "in_progress", "next", "next_up", "key_points", "questions", "answered",
                     "style", "notes") and k not in new:
            new[k] = v
    return new


# schema_version -> (the version it migrates to, function)
MIGRATIONS = {"1.0": ("2.0", _migrate_1_0)}


def migrate(archive):
    """Bring a parsed archive to CURRENT_SCHEMA (a new dict); ArchiveError if impossible."""
    if not isinstance(archive, dict):
        raise ArchiveError("the archive is not a JSON object")
    v = archive.get("schema_version")
    if v is None:
        raise ArchiveError("the archive has no schema_version")
    v = str(v)
    if v == CURRENT_SCHEMA:
        return archive
    vt, ct = _vtuple(v), _vtuple(CURRENT_SCHEMA)
    if vt is not None and vt > ct:
        raise ArchiveTooNew(f"schema_version {v} is newer than this ctxd supports (up to {CURRENT_SCHEMA}); "
                            f"upgrade ctxd to read it")
    first = v
    seen = set()
    while v != CURRENT_SCHEMA:
        if v not in MIGRATIONS or v in seen:
            raise ArchiveError(f"unknown schema_version {v!r} (this ctxd reads {', '.join(SUPPORTED)})")
        seen.add(v)
        v, fn = MIGRATIONS[v]
        archive = fn(archive)
        archive["schema_version"] = v
    archive.setdefault("migrated_from", first)
    return archive


# -- reading ---------------------------------------------------------------------------

def _parse_file(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise NotFoundError(f"no handoff archive at {path}") from None
    except OSError as e:
        raise ArchiveError(f"cannot read the handoff archive {path}: {e.strerror}") from None
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ArchiveCorrupt(f"not UTF-8 (byte {e.start})", path) from None
    except json.JSONDecodeError as e:
        raise ArchiveCorrupt(f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno})", path) from None


def _load_quiet(path):
    """load() without the search for readable earlier versions (used by that search)."""
    raw = _parse_file(path)
    try:
        archive = migrate(raw)
    except ArchiveTooNew:
        raise
    except ArchiveError as e:
        raise ArchiveCorrupt(e.message, path) from None
    errs = problems(archive)
    if errs:
        raise ArchiveCorrupt("; ".join(errs[:5]) + (f" (and {len(errs) - 5} more)" if len(errs) > 5 else ""), path)
    return archive


def readable_earlier(path):
    """Ids of earlier versions of the same session, next to *path*, that still load (newest first)."""
    d, base = os.path.split(os.path.abspath(path))
    m = _ID.match(base[:-5]) if base.endswith(".json") else None
    if not m:
        return []
    n = int(m.group("n"))
    out = []
    for v, name in sorted(_versions_on_disk(d, m.group("slug")), reverse=True):
        if v >= n:
            continue
        try:
            _load_quiet(os.path.join(d, name))
        except CtxdError:
            continue
        out.append(name[:-5])
    return out


def load(path):
    """The archive at *path*, migrated to CURRENT_SCHEMA and validated (a dict).

    Raises NotFoundError (exit 4), ArchiveTooNew (a newer schema), or
    ArchiveCorrupt (exit 3) naming the file and the earlier versions of the
    same session that still load. The file is never modified.
    """
    try:
        return _load_quiet(path)
    except ArchiveCorrupt as e:
        earlier = readable_earlier(path)
        base = os.path.basename(path)
        if earlier:
            tail = (f"; earlier versions of this session that still load: {', '.join(earlier)} "
                    f"(ctxd handoff show {earlier[0]})")
        elif base.endswith(".json") and _ID.match(base[:-5]):
            tail = "; no earlier version of this session loads"
        else:
            tail = ""
        raise ArchiveCorrupt(f"the handoff archive {path} is corrupt: {e.message}. It was left untouched{tail}",
                             path, earlier) from None


def dumps(archive):
    """The archive as JSON text: top-level keys one per line, objects below them one key
    per line, and every element of a list on a line of its own (one fact, question or
    key point per line, so a reader or a diff sees each whole)."""
    def enc(v):
        return json.dumps(v, ensure_ascii=False)

    items = list(archive.items())
    lines = ["{"]
    for n, (k, v) in enumerate(items):
        comma = "," if n < len(items) - 1 else ""
        if isinstance(v, dict) and v:
            inner = list(v.items())
            lines.append(f" {enc(k)}: {{")
            lines += [f"  {enc(k2)}: {enc(v2)}{',' if m < len(inner) - 1 else ''}" for m, (k2, v2) in enumerate(inner)]
            lines.append(f" }}{comma}")
        elif isinstance(v, list) and v:
            lines.append(f" {enc(k)}: [")
            lines += [f"  {enc(x)}{',' if m < len(v) - 1 else ''}" for m, x in enumerate(v)]
            lines.append(f" ]{comma}")
        else:
            lines.append(f" {enc(k)}: {enc(v)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- storage ---------------------------------------------------------------------------

def _versions_on_disk(d, slug_):
    """[(N, file name)] of <slug>_v<N>.json files in *d*."""
    out = []
    try:
        names = os.listdir(d)
    except OSError:
        return out
    for name in names:
        if not name.endswith(".json") or name == INDEX:
            continue
        m = _ID.match(name[:-5])
        if m and m.group("slug") == slug_:
            out.append((int(m.group("n")), name))
    return out


def _lock(d):
    return locked(os.path.join(d, LOCK))


def _write_new(path, data):
    """Write *data* to a new file *path*, atomically; FileExistsError if it exists."""
    atomic_write(path, data, exclusive=True)


def _read_index(d):
    try:
        with open(os.path.join(d, INDEX), encoding="utf-8") as f:
            idx = json.load(f)
        if isinstance(idx, dict) and isinstance(idx.get("entries"), list) \
                and isinstance(idx.get("next_version", {}), dict):
            idx.setdefault("next_version", {})
            idx["entries"] = [e for e in idx["entries"] if isinstance(e, dict) and isinstance(e.get("id"), str)]
            return idx
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        pass
    # unreadable: keep it aside (never overwritten) and rebuild from the files
    src = os.path.join(d, INDEX)
    try:
        os.link(src, os.path.join(d, f"{INDEX}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"))
    except OSError:
        pass
    return None


def _entry_from_file(d, name):
    m = _ID.match(name[:-5])
    path = os.path.join(d, name)
    try:
        a = _load_quiet(path)
        title, session, created = a["topic"]["title"], a["session_id"], a["created_at"]
    except CtxdError:
        title, session, created = "(unreadable)", m.group("slug"), now_iso(os.path.getmtime(path))
    mtime = os.stat(path).st_mtime_ns
    saved = now_iso(mtime / 1e9)
    return {"id": name[:-5], "session_id": session, "version": int(m.group("n")), "file": name, "topic": title,
            "created_at": created, "saved_at": saved, "updated": saved, "status": "archived", "_mtime": mtime}


def _rebuild_index(d):
    entries = []
    try:
        names = sorted(os.listdir(d))
    except OSError:
        names = []
    for name in names:
        if name.endswith(".json") and name != INDEX and _ID.match(name[:-5]):
            entries.append(_entry_from_file(d, name))
    entries.sort(key=lambda e: (e.pop("_mtime"), e["version"]))
    for n, e in enumerate(entries, 1):
        e["seq"] = n
    idx = {"schema": INDEX_SCHEMA, "next_version": {}, "seq": len(entries), "entries": entries}
    _mark_active(idx)
    return idx


def _mark_active(idx):
    """After a rebuild: the newest version of each session active, the others archived."""
    newest = {}
    for e in idx["entries"]:
        s = _ID.match(e["id"]).group("slug")
        if s not in newest or e["version"] > newest[s]["version"]:
            newest[s] = e
    for e in idx["entries"]:
        e["status"] = "active" if newest[_ID.match(e["id"]).group("slug")] is e else "archived"


def _index(d):
    idx = _read_index(d)
    if idx is None:
        idx = _rebuild_index(d)
    # entries whose file vanished go; files missing from the index come back
    present = {n for n in os.listdir(d) if n.endswith(".json") and n != INDEX} if os.path.isdir(d) else set()
    idx["entries"] = [e for e in idx["entries"] if e.get("file") in present and _ID.match(e["id"])]
    known = {e["file"] for e in idx["entries"]}
    for name in sorted(present - known):
        if _ID.match(name[:-5]):
            e = _entry_from_file(d, name)
            e.pop("_mtime")
            idx["seq"] = e["seq"] = max([idx.get("seq", 0)] + [x.get("seq", 0) for x in idx["entries"]]) + 1
            idx["entries"].append(e)
    return idx


def _order(e):
    """Entries sort by the order they were stored (``seq``, one counter per project): an
    imported or migrated archive keeps its old created_at but is the newest here."""
    return (e.get("seq", 0), e.get("saved_at") or e.get("created_at", ""), e.get("version", 0))


def _write_index(d, idx):
    idx["entries"].sort(key=_order)
    atomic_write(os.path.join(d, INDEX), json.dumps(idx, ensure_ascii=False, indent=1) + "\n")


def save(context_dir, archive, keep=KEEP):
    """Store *archive* as the next version of its session; return the new file's path.

    Validates first (ArchiveError), sets ``id`` and ``version`` (in *archive* too),
    writes handoffs/<session>_v<N>.json without ever replacing a file, updates the
    index (this version active, earlier ones archived) and removes all but the
    last *keep* versions of that session. Safe to run from several processes at once.
    """
    if isinstance(archive, dict) and archive.get("schema_version") != CURRENT_SCHEMA:
        archive.update(migrate(dict(archive)))
    validate(archive)
    d = handoff_dir(context_dir)
    s = slug(archive["session_id"])
    with _lock(d):
        idx = _index(d)
        on_disk = [v for v, _ in _versions_on_disk(d, s)]
        n = max([idx["next_version"].get(s, 1) - 1] + on_disk + [0]) + 1
        while True:
            vid = f"{s}_v{n}"
            path = os.path.join(d, vid + ".json")
            archive["id"], archive["version"] = vid, n
            archive.setdefault("created_at", now_iso())
            try:
                _write_new(path, dumps(archive))
                break
            except FileExistsError:  # a writer without the lock (another machine on NFS): next number
                n += 1
        idx["next_version"][s] = n + 1
        idx["seq"] = max([idx.get("seq", 0)] + [e.get("seq", 0) for e in idx["entries"]]) + 1
        stamp = now_iso()
        for e in idx["entries"]:
            if _ID.match(e["id"]).group("slug") == s and e.get("status") == "active":
                e["status"], e["updated"] = "archived", stamp
        idx["entries"].append({"id": vid, "session_id": archive["session_id"], "version": n, "file": vid + ".json",
                               "topic": archive["topic"]["title"], "created_at": archive["created_at"],
                               "saved_at": stamp, "updated": stamp, "status": "active", "seq": idx["seq"]})
        # keep the last `keep` versions of this session
        mine = sorted((e for e in idx["entries"] if _ID.match(e["id"]).group("slug") == s),
                      key=lambda e: e["version"])
        for e in mine[:-keep] if keep > 0 else []:
            for name in (e["file"], e["id"] + ".md"):  # its markdown rendering goes with it
                try:
                    os.unlink(os.path.join(d, name))
                except FileNotFoundError:
                    pass
            idx["entries"].remove(e)
        _write_index(d, idx)
    return path


def entries(context_dir):
    """The index entries (dicts), newest first; [] when there are no handoffs."""
    d = handoff_dir(context_dir)
    if not os.path.isdir(d):
        return []
    with _lock(d):
        idx = _index(d)
    return sorted(idx["entries"], key=_order, reverse=True)


def set_status(context_dir, hid, status):
    if status not in STATUSES:
        raise ArchiveError(f"unknown status {status!r}")
    d = handoff_dir(context_dir)
    with _lock(d):
        idx = _index(d)
        for e in idx["entries"]:
            if e["id"] == hid:
                e["status"], e["updated"] = status, now_iso()
                _write_index(d, idx)
                return
    raise NotFoundError(f"no handoff {hid!r} in {d}")


def path_of(context_dir, hid):
    return os.path.join(handoff_dir(context_dir), hid + ".json")


def resolve(context_dir, ref=None):
    """(id, path) for *ref*: a handoff id, a session id (its newest version), or None
    (the newest handoff). NotFoundError when there is none."""
    es = entries(context_dir)
    if not es:
        raise NotFoundError(f"no handoff archives in {handoff_dir(context_dir)} yet (run: ctxd handoff)")
    if ref is None:
        e = es[0]
        return e["id"], path_of(context_dir, e["id"])
    for e in es:
        if e["id"] == ref:
            return e["id"], path_of(context_dir, e["id"])
    mine = [e for e in es if e["session_id"] == ref or _ID.match(e["id"]).group("slug") == slug(ref)]
    if mine:
        e = max(mine, key=lambda e: e["version"])
        return e["id"], path_of(context_dir, e["id"])
    known = ", ".join(e["id"] for e in es[:8])
    raise NotFoundError(f"no handoff {ref!r} (known: {known})")


def latest(context_dir, session=None):
    """(id, path, archive) of the newest handoff (of *session* when given), or None.

    The archive is loaded (migrated, validated); a corrupt newest version raises
    ArchiveCorrupt naming the earlier versions that still load.
    """
    try:
        hid, path = resolve(context_dir, session)
    except NotFoundError:
        return None
    return hid, path, load(path)


def recent(context_dir, n=5, all_versions=False):
    """[(id, topic title, updated, path)], newest first: the newest version of each
    session (every version with *all_versions*), at most *n*."""
    out, seen = [], set()
    for e in entries(context_dir):
        s = _ID.match(e["id"]).group("slug")
        if not all_versions and s in seen:
            continue
        seen.add(s)
        out.append((e["id"], e.get("topic", ""), e.get("updated") or e.get("created_at", ""),
                    path_of(context_dir, e["id"])))
        if len(out) >= n:
            break
    return out


def import_file(context_dir, path, redactor=None):
    """Load an archive from anywhere (any supported schema) and save it here as a new
    version of its session; return (id, path). The source file is not modified; the copy
    is redacted by *redactor* (ctxd.memory.redact) as its JSON text."""
    archive = load(path)
    if redactor is not None:
        archive = json.loads(redactor(json.dumps(archive, ensure_ascii=False))[0])
    orig = archive.get("id")
    archive = dict(archive)
    archive.pop("id", None)
    archive.pop("version", None)
    archive["imported_from"] = {"id": orig, "path": os.path.abspath(path), "at": now_iso()}
    dest = save(context_dir, archive)
    return archive["id"], dest


def export_file(context_dir, ref, dest):
    """Write the archive *ref* (migrated to the current schema) to *dest*, a new file;
    mark it shared in the index. Returns (id, dest)."""
    hid, path = resolve(context_dir, ref)
    archive = load(path)
    dest = os.path.abspath(dest)
    if os.path.exists(dest):
        raise CtxdError(f"{dest} exists; not overwriting it (choose another name)", ExitCode.USAGE)
    os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
    try:
        _write_new(dest, dumps(archive))
    except FileExistsError:
        raise CtxdError(f"{dest} exists; not overwriting it (choose another name)", ExitCode.USAGE) from None
    set_status(context_dir, hid, "shared")
    return hid, dest


__all__ = ["CURRENT_SCHEMA", "SUPPORTED", "KEEP", "ArchiveError", "ArchiveCorrupt", "ArchiveTooNew", "load",
           "latest", "recent", "save", "validate", "problems", "migrate", "empty", "entries", "resolve",
           "import_file", "export_file", "set_status", "handoff_dir", "slug", "dumps"]
