"""Handoff archives: versioned storage, the index, loading and writing (the schema, validation and
migrations are ctxd.handoff.archive_schema).

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
from ctxd.handoff.archive_schema import (CURRENT_SCHEMA, ArchiveCorrupt, ArchiveError, ArchiveTooNew, migrate,
                                         now_iso, problems, validate)

KEEP = 5
DIRNAME = "handoffs"
INDEX = "index.json"
LOCK = ".lock"
INDEX_SCHEMA = 1
STATUSES = ("active", "archived", "shared")

_ID = re.compile(r"^(?P<slug>.+)_v(?P<n>\d+)$")


# -- small helpers ---------------------------------------------------------------------

def handoff_dir(context_dir):
    return os.path.join(context_dir, DIRNAME)


def slug(session):
    """A file-name-safe form of a session id (the id part of <slug>_v<N>)."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", session or "").strip("._")
    return (s or "default")[:80]


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
    is redacted by *redactor* (ctxd.memory.text.redact) as its JSON text."""
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


__all__ = ["KEEP", "load", "readable_earlier", "dumps", "save", "entries", "set_status", "path_of", "resolve",
           "latest", "recent", "import_file", "export_file", "handoff_dir", "slug"]
