"""The handoff archive's schema: its fields and their values, validation, a new empty archive, and
the migrations from older schemas (ctxd.handoff.archive stores and loads archives).

An archive is one JSON object (UTF-8). Schema ``2.0`` (``CURRENT_SCHEMA``):
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
"""

import json
import re

from ctxd.errors import CtxdError, ExitCode
from ctxd.isotime import format_utc, normalize

CURRENT_SCHEMA = "2.0"
SUPPORTED = ("1.0", "2.0")

MASTERY = ("low", "medium", "high")
UNDERSTANDING = ("definition", "mechanism", "edge_cases", "unknown")
STAGES = ("starting", "learning", "practicing", "reviewing", "unknown")
DEPTHS = ("shallow", "normal", "deep")
PACES = ("slow", "normal", "fast")
QSTATUS = ("open", "resolved")
TAGS = ("preference", "requirement", "background", "todo", "question")


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


now_iso = format_utc  # archives write times as YYYY-MM-DDTHH:MM:SSZ (UTC)


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
