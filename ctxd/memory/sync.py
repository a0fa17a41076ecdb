"""Sharing a project's memory through git (``ctxd sync``): no server, no daemon.

The project's memory travels on its own ref, ``refs/ctxd/memory``, in the project's own
git repository, and through the repository's own remotes with the user's git config
and credentials. Only git plumbing touches it (``hash-object -w``, ``mktree``,
``commit-tree``, ``update-ref``, ``fetch``/``push`` of that one ref): never HEAD, a
branch, the index or the working tree.

The ref's tree holds segments, append-only and content-addressed::

    FORMAT                                       what the tree is (one constant blob)
    segments/<author dir>/<sha256>.jsonl.gz      gzip'd JSON lines: a header, then items

``<author dir>`` is a hash of the writer's git ``user.email`` and its store's machine id;
the file name is the hash of the segment's bytes. Two histories merge by the union of
their trees (names never clash: the same name is the same content), in a merge commit
with both parents. The first line of a segment is its header
``{"ctxd": "memory-segment", "format": 1, "author": email, "machine": host, "machine_id": id,
"items": n}``; each further line one item, ``t`` its type:

    msg      a message with its typed fields (kind, role, session, content, ts, importance,
             source, tool, call_id, subtype, data, legacy) under its dedup key ``key``
    fact     a fact recorded on purpose: the message key, its kind and priority
    task     a task (key, name, status, started, finished, notes), sent again when it changes
    handoff  a handoff archive (file name, the archive)
    tomb     a tombstone: the key of a deleted message

What is sent was redacted when it was stored and is redacted again (with the sender's rules)
as it is written; the receiver redacts each item again with its own rules before storing it.
Private sessions (``ctxd chat private``) are never written to a segment; offloaded outputs
travel as their preview unless ``ctxd sync init --outputs``. The store remembers the
messages not sent yet (a queue its triggers fill), the last tombstone sent, what task and
handoff was sent (digests) and which segment blobs it imported, so a sync moves only what
is new. A received tombstone deletes the message when it came from the tombstone's own sender
and stays, so a stale segment never brings it back. Whatever a segment claims is checked or
bounded on import (see import_ref, decode_segment and the MAX_* limits).

Standard library only; git is run with a timeout and an explicit environment.
"""

import getpass
import gzip
import hashlib
import json
import math
import os
import random
import socket
import subprocess
import sys
import time
import zlib

from ctxd.errors import ConfigError, CtxdError, ExitCode, NotFoundError, SyncError, UsageError
from ctxd.memory import origin as origin_mod

REF = "refs/ctxd/memory"
FORMAT = 1
MAGIC = "memory-segment"
SEGMENT_ITEMS = 5000  # items per segment blob: an initial sync of 100,000 messages writes 20
PUSH_ATTEMPTS = 5  # a push the remote rejects because it moved: fetch, merge, retry this often
GIT_TIMEOUT = 60  # seconds for local plumbing
NET_TIMEOUT = 300  # seconds for fetch and push
# Bounds on what a segment may cost the receiver (anyone who can push the ref can write one):
# it is inflated INFLATE_CHUNK bytes at a time, a line at a time, never whole.
MAX_BLOB = 32 * 1024 * 1024  # compressed bytes of one segment blob: a bigger one is not read
MAX_SEGMENT = 64 * 1024 * 1024  # bytes a segment may inflate to (a gzip bomb is refused)
MAX_LINE = 2 * 1024 * 1024  # bytes of one item's JSON line: a longer one is skipped unread
MAX_ITEM_CHARS = 256 * 1024  # characters of an item's text (a message, a task's name or note)
MAX_ITEMS = 2 * SEGMENT_ITEMS  # items in one segment
SEGMENT_BYTES = 16 * 1024 * 1024  # a segment written here closes at about this many bytes of JSON
INFLATE_CHUNK = 256 * 1024
MAX_PRIORITY = 5.0  # a received fact ranks at most like one recorded on purpose here
FORMAT_BLOB = (b"ctxd project memory (ctxd sync), format 1.\n"
               b"segments/<author>/<sha256>.jsonl.gz: gzip'd JSON lines, a header then one item a line.\n"
               b"Written and read by ctxd; do not edit.\n")
# git variables that point git at another repository, index or object store: never inherited
_REDIRECTING = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
                "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_CEILING_DIRECTORIES",
                "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_QUARANTINE_PATH", "GIT_REPLACE_REF_BASE",
                "GIT_SHALLOW_FILE", "GIT_GRAFT_FILE", "GIT_NO_REPLACE_OBJECTS")
FACT_KINDS = ("preference", "requirement", "background", "todo")


class SyncOff(UsageError):
    """Sharing is not switched on for this project."""


class SegmentError(CtxdError):
    """A blob on the ref that is not a segment this ctxd can read."""


# -- git ----------------------------------------------------------------------------

class Git:
    """git plumbing for one repository (its common git dir: worktrees share the ref)."""

    def __init__(self, root, environ=None):
        self.root = root
        env = {k: v for k, v in (os.environ if environ is None else environ).items() if k not in _REDIRECTING}
        env.update(LC_ALL="C", LANGUAGE="C", GIT_OPTIONAL_LOCKS="0")
        if not (sys.stdin is not None and sys.stdin.isatty()):
            env["GIT_TERMINAL_PROMPT"] = "0"  # a credential prompt nobody can answer would hang
        self.env = env
        try:
            p = subprocess.run(["git", "-C", root, "rev-parse", "--path-format=absolute", "--git-common-dir",
                                "--is-shallow-repository", "--is-bare-repository"], capture_output=True,
                               env=env, timeout=GIT_TIMEOUT)
        except FileNotFoundError:
            raise NotFoundError("git is not installed (ctxd sync shares memory through git)") from None
        except subprocess.TimeoutExpired:
            raise SyncError(f"git rev-parse timed out after {GIT_TIMEOUT} s in {root}") from None
        if p.returncode != 0:
            raise NotFoundError(f"{root} is not in a git repository (ctxd sync shares memory through the "
                                f"project's git remotes: git init && git remote add origin URL)")
        common, shallow, _bare = p.stdout.decode().splitlines()[:3]
        self.git_dir = common
        self.shallow = shallow.strip() == "true"
        self.env["GIT_DIR"] = common

    def run(self, *args, input=None, timeout=GIT_TIMEOUT, check=True):
        """git *args* in the repository; (returncode, stdout bytes, stderr text)."""
        try:
            p = subprocess.run(["git", *args], input=input, capture_output=True, env=self.env, timeout=timeout,
                               cwd=self.root)
        except subprocess.TimeoutExpired:
            raise SyncError(f"git {args[0]} timed out after {timeout} s") from None
        err = p.stderr.decode("utf-8", "replace")
        if check and p.returncode != 0:
            raise SyncError(f"git {args[0]} failed: {_last_line(err) or f'exit status {p.returncode}'}")
        return p.returncode, p.stdout, err

    def out(self, *args, **kw):
        return self.run(*args, **kw)[1].decode("utf-8", "replace").strip()

    def rev(self, ref):
        rc, out, _ = self.run("rev-parse", "--verify", "-q", ref + "^{commit}", check=False)
        return out.decode().strip() if rc == 0 else None

    def config(self, key):
        rc, out, _ = self.run("config", "--get", key, check=False)
        return out.decode("utf-8", "replace").strip() if rc == 0 else None

    def remotes(self):
        return [r for r in self.out("remote").splitlines() if r]

    def remote_url(self, remote):
        return self.config(f"remote.{remote}.url")

    def identity(self):
        """(name, email): git's user.name / user.email, else the login at this host."""
        email = self.config("user.email") or f"{getpass.getuser()}@{socket.gethostname()}"
        name = self.config("user.name") or email.split("@")[0]
        return name, email

    def hash_blob(self, data):
        return self.out("hash-object", "-w", "--stdin", input=data)

    def ls_tree(self, commit):
        """{path: blob oid} of every file in *commit*'s tree."""
        out = self.run("ls-tree", "-r", "-z", "--full-tree", commit)[1]
        entries = {}
        for rec in out.split(b"\0"):
            if not rec:
                continue
            meta, _, path = rec.partition(b"\t")
            parts = meta.split()
            if len(parts) == 3 and parts[1] == b"blob":
                entries[path.decode("utf-8", "surrogateescape")] = parts[2].decode()
        return entries

    def mktree(self, entries):
        """The tree oid holding *entries* ({path: blob oid}), directories made as needed."""
        root = {}
        for path, oid in entries.items():
            node = root
            *dirs, name = path.split("/")
            for d in dirs:
                node = node.setdefault(d, {})
            node[name] = oid
        return self._mktree(root)

    def _mktree(self, node):
        recs = []
        for name in sorted(node):
            v = node[name]
            if isinstance(v, dict):
                recs.append(f"040000 tree {self._mktree(v)}\t{name}")
            else:
                recs.append(f"100644 blob {v}\t{name}")
        data = "".join(r + "\0" for r in recs).encode("utf-8", "surrogateescape")
        return self.out("mktree", "-z", input=data)

    def commit_tree(self, tree, parents, message):
        name, email = self.identity()
        env = dict(GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email, GIT_COMMITTER_NAME=name,
                   GIT_COMMITTER_EMAIL=email)
        args = ["commit-tree", tree]
        for p in parents:
            args += ["-p", p]
        saved = self.env
        self.env = dict(saved, **env)
        try:
            return self.out(*args, "-m", message)
        finally:
            self.env = saved

    def update_ref(self, ref, new, old):
        """Move *ref* to *new* if it is still at *old* (None: if it does not exist). Whether it moved."""
        rc, _, _ = self.run("update-ref", "-m", "ctxd sync", ref, new, old or "", check=False)
        return rc == 0

    def is_ancestor(self, a, b):
        rc, _, err = self.run("merge-base", "--is-ancestor", a, b, check=False)
        if rc not in (0, 1):
            raise SyncError(f"git merge-base failed: {_last_line(err)}")
        return rc == 0

    def cat_blobs(self, oids):
        """{oid: bytes or None (not a blob / missing)} through one git cat-file --batch."""
        if not oids:
            return {}
        out = self.run("cat-file", "--batch", input="".join(o + "\n" for o in oids).encode(),
                       timeout=NET_TIMEOUT)[1]
        res, pos = {}, 0
        for oid in oids:
            nl = out.index(b"\n", pos)
            head = out[pos:nl].decode().split()
            pos = nl + 1
            if len(head) == 2 and head[1] == "missing":
                res[oid] = None
                continue
            size = int(head[2])
            res[oid] = out[pos:pos + size] if head[1] == "blob" else None
            pos += size + 1
        return res

    def blob_sizes(self, oids):
        """{oid: size in bytes} of the blobs among *oids* (git cat-file --batch-check: nothing read)."""
        if not oids:
            return {}
        out = self.run("cat-file", "--batch-check", input="".join(o + "\n" for o in oids).encode())[1]
        res = {}
        for line in out.decode().splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] == "blob":
                res[parts[0]] = int(parts[2])
        return res

    def adders(self, commit):
        """{segment path: the author emails (lowercase) of the commits that added it}, over the
        history of *commit* (a merge adds nothing of its own: it only unites two trees)."""
        out = self.out("-c", "core.quotePath=false", "log", "--full-history", "--no-renames", "--diff-filter=A",
                       "--format=%x01%ae", "--name-only", commit, "--", "segments/", timeout=NET_TIMEOUT)
        res, email = {}, None
        for line in out.splitlines():
            if line.startswith("\x01"):
                email = line[1:].strip().lower()
            elif line.strip() and email is not None:
                res.setdefault(line.strip(), set()).add(email)
        return res

    def count_between(self, a, b):
        """(commits only in *a*, commits only in *b*)."""
        left, right = self.out("rev-list", "--left-right", "--count", f"{a}...{b}").split()
        return int(left), int(right)


def _last_line(text):
    lines = [l.strip() for l in text.splitlines() if l.strip() and not l.startswith("hint:")]
    return lines[-1] if lines else ""


def tracking_ref(remote):
    return f"refs/ctxd/remotes/{remote}/memory"


# -- segments -------------------------------------------------------------------------

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
    from ctxd.memory import items as items_mod

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


def _sha(data):
    return hashlib.sha256(data if isinstance(data, bytes) else data.encode("utf-8")).hexdigest()


def author_dir(email, machine_id):
    return _sha(f"{email}\0{machine_id}")[:16]


# -- the project's sync --------------------------------------------------------------------

class Sync:
    """ctxd sync for one project's memory (a ctxd.memory.core.ProjectMemory)."""

    def __init__(self, mem, environ=None, *, report=None, fact_priority=5.0, save_handoff=None):
        """*save_handoff(context_dir, archive)* stores a handoff archive received and returns its
        path (ctxd.handoff.archive.save; the memory knows no archive format): a pull needs it."""
        self.mem = mem
        self.save_handoff = save_handoff
        self.fact_priority = fact_priority  # facts at least this high were recorded on purpose: they travel
        self.report = report or (lambda line: None)  # one line per problem found on the ref
        self.environ = environ
        self._git = None

    @property
    def git(self):
        if self._git is None:
            self._git = Git(self.mem.root, self.environ)
        return self._git

    # -- settings ---------------------------------------------------------------------
    @property
    def store(self):
        return self.mem.store()

    def enabled(self):
        """(on, why): `ctxd sync init` recorded in the store, or [context] share = "git"."""
        share = self.mem.settings.get("share")
        if share == "off":
            return False, '.contextrc [context] share = "off"'
        if share == "git":
            return True, '.contextrc [context] share = "git"'
        if self.mem.exists() and self.store.meta_get("sync_enabled") == "1":
            return True, "ctxd sync init"
        return False, "off"

    def require(self):
        on, why = self.enabled()
        if not on:
            raise SyncOff(f"sharing this project's memory is off ({why}): ctxd sync init "
                          f"(or [context] share = \"git\" in a trusted .contextrc)")

    def init(self, remote=None, outputs=False):
        if self.mem.settings.get("share") == "off":
            raise ConfigError('.contextrc [context] share = "off" keeps this project\'s memory here; remove it first')
        self.git  # not a git repository: say so before recording anything  # noqa: B018
        if remote is not None:
            self._check_remote(remote)
        st = self.store
        with st.transaction():
            st.meta_set("sync_enabled", "1")
            if remote is not None:
                st.meta_set("sync_remote", remote)
            st.meta_set("sync_outputs", "1" if outputs else None)
        return self.remote(required=False)

    def off(self):
        if self.mem.exists():
            self.store.meta_set("sync_enabled", None)

    def _check_remote(self, remote):
        names = self.git.remotes()
        if remote not in names:
            have = f" (it has: {', '.join(names)})" if names else ""
            raise NotFoundError(f"this repository has no remote named {remote!r}{have}")

    def remote(self, required=True):
        """The remote to sync through: the one set by `sync init --remote`, else the current
        branch's upstream remote, else origin, else the only remote."""
        names = self.git.remotes()
        chosen = self.store.meta_get("sync_remote") if self.mem.exists() else None
        if chosen:
            if chosen not in names:
                raise NotFoundError(f"the sync remote {chosen!r} is gone from this repository "
                                    f"(ctxd sync init --remote NAME)")
            return chosen
        if not names:
            if not required:
                return None
            raise NotFoundError("this repository has no remote to share memory through "
                                "(git remote add origin URL, then ctxd sync)")
        rc, out, _ = self.git.run("symbolic-ref", "-q", "--short", "HEAD", check=False)
        branch = out.decode().strip() if rc == 0 else None
        if branch:
            up = self.git.config(f"branch.{branch}.remote")
            if up in names:
                return up
        if "origin" in names:
            return "origin"
        if len(names) == 1:
            return names[0]
        if not required:
            return None
        where = f"branch {branch} has no upstream" if branch else "HEAD is detached"
        raise UsageError(f"{where} and there are several remotes ({', '.join(names)}): "
                         f"ctxd sync init --remote NAME")

    # -- fetch, merge, push ---------------------------------------------------------------
    def fetch(self, remote):
        """Fetch the remote's ref into refs/ctxd/remotes/<remote>/memory: its oid, or None
        when the remote has no memory yet."""
        track = tracking_ref(remote)
        rc, _, err = self.git.run("fetch", "--no-tags", "--no-write-fetch-head", "--quiet", remote,
                                  f"+{REF}:{track}", timeout=NET_TIMEOUT, check=False)
        if rc != 0:
            if "couldn't find remote ref" in err:
                return None
            if "shallow" in err:
                raise SyncError(f"this is a shallow clone and git refused to fetch {REF} into it "
                                f"({_last_line(err)}): git fetch --unshallow {remote}")
            raise SyncError(f"cannot fetch {REF} from {remote}: {_last_line(err)}")
        return self.git.rev(track)

    def merge(self, other):
        """Bring the local ref to include commit *other*: fast-forward, or a merge commit whose
        tree is the union of both. The local ref's oid after."""
        for _ in range(PUSH_ATTEMPTS):
            local = self.git.rev(REF)
            if other is None or local == other:
                return local
            if local is None:
                if self.git.update_ref(REF, other, None):
                    return other
                continue
            if self.git.is_ancestor(other, local):
                return local
            if self.git.is_ancestor(local, other):
                if self.git.update_ref(REF, other, local):
                    return other
                continue
            mine, theirs = self.git.ls_tree(local), self.git.ls_tree(other)
            union = dict(theirs)
            for path, oid in mine.items():
                if union.get(path, oid) != oid:  # the same name, other bytes: not ours; keep both
                    union[f"{path}~{union[path][:12]}"] = union[path]
                union[path] = oid
            commit = self.git.commit_tree(self.git.mktree(union), [local, other], "ctxd memory: merge")
            if self.git.update_ref(REF, commit, local):
                return commit
        raise SyncError(f"{REF} kept moving while merging (another ctxd sync is running?); try again")

    def push_ref(self, remote):
        """Push the local ref; fetch, merge and retry when the remote moved. Attempts used."""
        for attempt in range(1, PUSH_ATTEMPTS + 1):
            if self.git.rev(REF) is None:
                return 0
            rc, out, err = self.git.run("push", "--porcelain", "--no-verify", remote, f"{REF}:{REF}",
                                        timeout=NET_TIMEOUT, check=False)
            text = out.decode("utf-8", "replace") + "\n" + err
            if rc == 0:
                return attempt
            moved = "[rejected]" in text and ("fetch first" in text or "non-fast-forward" in text)
            # another push updating the ref at the same moment: the remote could not lock it
            racing = "[remote rejected]" in text and ("failed to update ref" in text or "cannot lock ref" in text)
            if (moved or racing) and attempt < PUSH_ATTEMPTS:
                if racing:
                    time.sleep(random.uniform(0.05, 0.25) * attempt)
                self.merge(self.fetch(remote))
                continue
            why = _last_line("\n".join(l for l in text.splitlines() if "[remote rejected]" in l or "!" in l[:2])) \
                or _last_line(err)
            raise SyncError(f"{remote} did not take {REF}: {why}")
        raise SyncError(f"{remote} kept moving: {PUSH_ATTEMPTS} pushes of {REF} were rejected; try again")

    # -- export ---------------------------------------------------------------------
    def _redact(self, text):
        r = self.store.redactor
        return r(text)[0] if r is not None and text else text

    def pending_items(self, marks):
        """Yield what was not sent yet: messages (read in batches, so a 100,000-message first
        sync never holds them all), facts, tombstones, tasks, handoffs. *marks* (a dict) gets
        what to record once they are on the ref: ids, tomb_hwm, sent."""
        st = self.store
        tomb_hwm = int(st.meta_get("sync_tomb_hwm", 0))
        outputs = st.meta_get("sync_outputs") == "1"
        st.assign_keys()
        ids = marks.setdefault("ids", [])
        sent = marks.setdefault("sent", [])
        marks["tomb_hwm"] = None
        for rows in st.unsent_rows():
            for r in rows:
                if r["provenance"] != "ctxd":  # ctxd's own text (a teach prompt pasted back) is nobody's turn
                    yield self._msg_item(r, outputs)
                ids.append(r["id"])
        for f in st.kept_facts(ids, self.fact_priority):
            if f["tag"] in FACT_KINDS:
                yield dict(t="fact", key=f["key"], kind=f["tag"], priority=f["priority"])
        tombs = st.local_tombstones(tomb_hwm)
        for r in tombs:
            yield dict(t="tomb", key=r["key"], ts=r["ts"])
        marks["tomb_hwm"] = tombs[-1]["id"] if tombs else None
        digests = st.sent_digests()
        for t in st.sync_tasks():  # received ones too: a note or a done here goes back
            t = self._task_view(t)
            digest = _sha(json.dumps(t, sort_keys=True))
            if digests.get(t["key"]) != digest:
                yield dict(t, t="task")
                sent.append((t["key"], digest))
        private = {r["session"] for r in st.private_sessions()}
        for name, data in self._handoff_files():
            key, digest = "h:" + name, _sha(data)
            if digests.get(key) == digest:
                continue
            try:
                archive = json.loads(self._redact(data.decode("utf-8")))
            except (UnicodeDecodeError, ValueError):
                continue
            if not isinstance(archive, dict) or archive.get("session_id") in private:
                continue
            yield dict(t="handoff", file=name, archive=archive)
            sent.append((key, digest))

    def _task_view(self, t):
        return dict(t, name=_capped(self._redact(t["name"])),
                    notes=[dict(n, text=_capped(self._redact(n["text"]))) for n in t["notes"]])

    def _msg_item(self, r, outputs):
        content = r["content"]
        if outputs and r["output_path"]:
            try:
                with open(r["output_path"], encoding="utf-8", errors="replace") as f:
                    content = f.read()
            except OSError:
                pass
        item = dict(t="msg", key=r["dedup"], kind=r["kind"], role=r["role"], session=r["session"],
                    content=_capped(self._redact(content)), ts=r["ts"], importance=r["importance"], source=r["source"])
        for k in ("tool", "call_id", "subtype"):
            if r[k] is not None:
                item[k] = r[k]
        if r["provenance"]:
            item["provenance"] = r["provenance"]
        if r["data"]:
            try:
                item["data"] = json.loads(self._redact(r["data"]))
            except ValueError:
                pass
        if r["legacy"]:
            item["legacy"] = 1
        return item

    def _handoff_files(self):
        d = self.mem.paths.handoffs
        try:
            names = sorted(n for n in os.listdir(d) if n.endswith(".json") and n != "index.json")
        except FileNotFoundError:
            return
        for n in names:
            try:
                with open(os.path.join(d, n), "rb") as f:
                    yield n, f.read()
            except OSError:
                continue

    def export(self):
        """Write what is new into segments on the local ref (one commit). (commit or None, blobs, items)."""
        st = self.store
        marks = {}
        items = self.pending_items(marks)
        chunks = _segments(items)
        chunk = next(chunks, None)
        if not chunk:
            st.record_sent(ids=marks["ids"], tomb_hwm=marks["tomb_hwm"])
            return None, 0, 0
        _name, email = self.git.identity()
        machine_id = st.machine_id()
        header = dict(ctxd=MAGIC, format=FORMAT, author=email, machine=socket.gethostname(), machine_id=machine_id)
        adir = author_dir(email, machine_id)
        blobs, n_items, n_msgs = [], 0, 0
        while chunk:
            data = encode_segment(header, chunk)
            oid = self.git.hash_blob(data)
            blobs.append((oid, f"segments/{adir}/{_sha(data)[:40]}.jsonl.gz", len(chunk), len(data)))
            n_items += len(chunk)
            n_msgs += sum(1 for it in chunk if it["t"] == "msg")
            chunk = next(chunks, None)
        for _ in range(PUSH_ATTEMPTS):
            local = self.git.rev(REF)
            entries = self.git.ls_tree(local) if local else {}
            entries["FORMAT"] = self.git.hash_blob(FORMAT_BLOB)
            entries.update({path: oid for oid, path, _n, _b in blobs})
            msg = f"ctxd memory: {n_msgs} messages, {n_items - n_msgs} other items from {email} ({header['machine']})"
            commit = self.git.commit_tree(self.git.mktree(entries), [local] if local else [], msg)
            if self.git.update_ref(REF, commit, local):
                break
        else:
            raise SyncError(f"{REF} kept moving while writing (another ctxd sync is running?); try again")
        st.record_sent(ids=marks["ids"], tomb_hwm=marks["tomb_hwm"], sent=marks["sent"],
                       blobs=[(o, p, n) for o, p, n, _b in blobs])
        self.last_bytes = sum(b for *_x, b in blobs)
        return commit, len(blobs), n_items

    # -- import -------------------------------------------------------------------------
    def import_ref(self):
        """Import every segment blob on the local ref not imported yet. A dict of counts.

        What a segment says of its sender is a claim: each segment's header author is checked
        against the commit that added the segment (its author email); when they differ its items
        are stored as "<author> (unverified)" and its deletions are not applied. A deletion
        removes only the items of the store that sent it; a fact only ranks one of its sender's
        messages, at most MAX_PRIORITY; a task stays the other machine's until taken here."""
        stats = dict(blobs=0, messages=0, deleted=0, tasks=0, handoffs=0, facts=0, skipped=0, bad_items=0)
        local = self.git.rev(REF)
        if local is None:
            return stats
        st = self.store
        known = st.known_blobs()
        new = [(p, o) for p, o in sorted(self.git.ls_tree(local).items())
               if p.startswith("segments/") and o not in known]
        if not new:
            return stats
        sizes = self.git.blob_sizes(sorted({o for _p, o in new}))
        readable = []
        for path, oid in new:
            if (sizes.get(oid) or 0) > MAX_BLOB:
                self._skip(stats, path, oid, f"{sizes[oid]} bytes, more than {MAX_BLOB}")
            else:
                readable.append((path, oid))
        datas = self.git.cat_blobs(sorted({o for _p, o in readable}))  # compressed: ~220 bytes a message
        adders = self.git.adders(local) if readable else {}
        # first pass: every tombstone (and the few other items) of every new segment, so a
        # tombstone deletes its message whichever segment, read in whichever order, holds it
        good, tombs, facts, tasks, handoffs = [], [], [], [], []
        for path, oid in readable:
            try:
                header, items, bad = decode_segment(datas.get(oid))
            except SegmentError as e:
                self._skip(stats, path, oid, e)
                datas.pop(oid, None)
                continue
            if bad:
                self.report(f"{path} ({oid[:12]}) on {REF}: {bad} unreadable or oversized item"
                            f"{'s' if bad != 1 else ''} skipped, the rest imported")
                stats["bad_items"] += bad
            claimed, machine = _ident(header.get("author")), _ident(header.get("machine"))
            origin = author_dir(claimed, _ident(header.get("machine_id"), ""))
            by = adders.get(path, set())
            author = claimed if claimed.lower() in by else f"{claimed} (unverified)"
            n_tombs = sum(1 for it in items if it["t"] == "tomb")
            if author != claimed:
                self.report(f"{path} ({oid[:12]}) on {REF} says it is from {claimed} but was added by "
                            f"{', '.join(sorted(by)) or 'no single commit'}: its items are marked unverified"
                            + (f", its {n_tombs} deletion{'s' if n_tombs != 1 else ''} ignored" if n_tombs else ""))
            good.append((path, oid, author, machine, origin))
            for it in items:
                t = it["t"]
                if t == "tomb":
                    if author == claimed:
                        tombs.append((it["key"], it["ts"], origin))
                elif t == "fact":
                    facts.append((it, origin))
                elif t == "task":
                    tasks.append((it, author, machine, origin))
                elif t == "handoff":
                    handoffs.append(it)
            del items
        stats["deleted"] = st.apply_tombstones(tombs)
        # second pass: the messages, one segment (one transaction) at a time
        for path, oid, author, machine, origin in good:
            _h, items, _bad = decode_segment(datas.pop(oid))
            msgs = [it for it in items if it["t"] == "msg"]
            dead = st.tombstoned((it["key"] for it in msgs), origin)
            rows = [dict(kind=it["kind"], role=it.get("role") if it.get("role") in ("user", "assistant", "system", "tool")
                         else None, content=it["content"], session=it.get("session") or "",
                         source=it.get("source") or "sync", ts=it["ts"], importance=it.get("importance"),
                         dedup=it["key"], tool=_str(it.get("tool")), call_id=_str(it.get("call_id")),
                         subtype=_str(it.get("subtype")), data=it.get("data"), legacy=bool(it.get("legacy")),
                         provenance=_str(it.get("provenance")))
                    for it in msgs if it["key"] not in dead and it["content"].strip()]
            with st.transaction():
                added = st.add_many(rows, redact=True)
                st.set_authors(added, author, machine, origin)
                st.record_blob(oid, path, "imported", len(items))
            stats["messages"] += len(added)
            stats["blobs"] += 1
        for it, author, machine, origin in tasks:
            label = origin_mod.label(author, machine)
            st.upsert_task(dict(it, name=self._redact(it["name"]), finished=it.get("finished"),
                                notes=[dict(n, text=self._redact(n["text"])) for n in it["notes"]]),
                           author, origin, label=label)
            # what is stored now counts as sent: only a later change here goes back
            (now,) = st.sync_tasks(it["key"])
            st.record_sent(sent=[(it["key"], _sha(json.dumps(self._task_view(now), sort_keys=True)))])
            stats["tasks"] += 1
        if facts:
            from ctxd.memory import fact_merge

            for it, origin in facts:
                ids = st.ids_of_keys([it["key"]], origin)  # only its sender's own message
                if it["key"] in ids:
                    priority = min(max(float(it["priority"]), 0.0), MAX_PRIORITY)
                    fact_merge.keep_fact(st, ids[it["key"]], it["kind"], priority)
                    stats["facts"] += 1
        for it in handoffs:
            stats["handoffs"] += self._import_handoff(it)
        return stats

    def _skip(self, stats, path, oid, why):
        self.report(f"skipped {path} ({oid[:12]}) on {REF}: {why}")
        stats["skipped"] += 1
        if "newer ctxd" not in str(why):  # a newer ctxd's segment is read after an upgrade
            with self.store.transaction():
                self.store.record_blob(oid, path, f"skipped: {why}")

    def _import_handoff(self, it):
        key = "hr:" + _sha(json.dumps(it["archive"], sort_keys=True, ensure_ascii=False))
        if key in self.store.sent_digests():  # received before
            return 0
        try:
            arch = json.loads(self._redact(json.dumps(it["archive"], ensure_ascii=False)))
            orig = arch.pop("id", None)
            arch.pop("version", None)
            arch["imported_from"] = {"id": orig, "path": f"git:{REF}", "at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                          time.gmtime())}
            dest = self.save_handoff(self.mem.context_dir, arch)
        except (CtxdError, ValueError, TypeError, KeyError) as e:
            self.report(f"skipped handoff {it['file']} on {REF}: {getattr(e, 'message', e)}")
            return 0
        with open(dest, "rb") as f:
            digest = _sha(f.read())
        self.store.record_sent(sent=[(key, "received"), ("h:" + os.path.basename(dest), digest)])
        return 1

    # -- the commands ---------------------------------------------------------------------
    def _locked(self):
        from ctxd.activation.fileio import locked

        os.makedirs(self.mem.context_dir, mode=0o700, exist_ok=True)
        return locked(os.path.join(self.mem.context_dir, ".sync.lock"))

    def pull(self, remote=None):
        if self.save_handoff is None:  # a segment's handoffs would be marked imported and lost
            raise TypeError("Sync.pull needs save_handoff")
        self.require()
        remote = remote or self.remote()
        with self._locked():
            other = self.fetch(remote)
            self.merge(other)
            stats = self.import_ref()
            self.store.meta_set("sync_last_pull", time.time())
        stats["remote"] = remote
        if stats["messages"] or stats["deleted"] or stats["tasks"]:
            self.mem.changed()
        return stats

    def push(self, remote=None):
        self.require()
        remote = remote or self.remote()
        self.last_bytes = 0
        with self._locked():
            commit, blobs, items = self.export()
            before = self.git.rev(tracking_ref(remote))
            local = self.git.rev(REF)
            attempts = 0
            if local is not None and local != before:
                attempts = self.push_ref(remote)
                self.git.run("update-ref", tracking_ref(remote), self.git.rev(REF))
            self.store.meta_set("sync_last_push", time.time())
        return dict(remote=remote, commit=commit, blobs=blobs, items=items, attempts=attempts,
                    bytes=self.last_bytes, pushed=attempts > 0)

    def sync(self, remote=None):
        """Pull, then push."""
        pulled = self.pull(remote)
        pushed = self.push(pulled["remote"])
        return pulled, pushed

    def status(self, fetch=False, remote=None):
        st = self.store if self.mem.exists() else None
        on, why = self.enabled()
        out = dict(enabled=on, how=why, git_dir=self.git.git_dir, shallow=self.git.shallow, ref=REF)
        try:
            remote = remote or self.remote()
        except CtxdError as e:
            remote, out["remote_problem"] = None, e.message
        out["remote"], out["url"] = remote, self.git.remote_url(remote) if remote else None
        if remote and fetch:
            self.fetch(remote)
        local = self.git.rev(REF)
        theirs = self.git.rev(tracking_ref(remote)) if remote else None
        out["local"], out["remote_ref"] = local, theirs
        if local and theirs:
            out["ahead"], out["behind"] = self.git.count_between(local, theirs)
        else:
            out["ahead"] = int(self.git.out("rev-list", "--count", local)) if local else 0
            out["behind"] = int(self.git.out("rev-list", "--count", theirs)) if theirs else 0
        out["unsent_messages"] = st.pending_count() if st else 0
        out["unsent_tombstones"] = len(st.local_tombstones(int(st.meta_get("sync_tomb_hwm", 0)))) if st else 0
        if local and st:
            known = st.known_blobs()
            out["unimported_segments"] = sum(1 for p, o in self.git.ls_tree(local).items()
                                             if p.startswith("segments/") and o not in known)
        else:
            out["unimported_segments"] = 0
        out["last_push"] = _float(st.meta_get("sync_last_push")) if st else None
        out["last_pull"] = _float(st.meta_get("sync_last_pull")) if st else None
        out["private"] = [dict(session=r["session"], messages=r["messages"]) for r in st.private_sessions()] if st else []
        out["authors"] = [dict(author=r["author"], machine=r["machine"], messages=r["n"]) for r in st.authors()] if st else []
        out["skipped"] = [dict(oid=r["oid"], path=r["path"]) for r in st.skipped_blobs()] if st else []
        out["outputs"] = bool(st and st.meta_get("sync_outputs") == "1")
        return out

    def diagnose(self, timeout=15):
        """[(name, status, message, fix)] for ctxd doctor: sharing, the local ref, the remote."""
        on, why = self.enabled()
        if not on:
            return [("sync", "ok", f"sharing through git is off for this project ({why})", None)]
        try:
            remote = self.remote()
        except CtxdError as e:
            return [("sync", "fail", e.message, "git remote add origin URL, or ctxd sync init --remote NAME")]
        out = [("sync", "ok", f"on ({why}), through remote {remote}"
                + (" (a shallow clone: the memory ref is fetched whole)" if self.git.shallow else ""), None)]
        local = self.git.rev(REF)
        if local is not None:
            rc, _o, err = self.git.run("fsck", "--no-dangling", "--connectivity-only", local, check=False)
            out.append(("sync ref", "ok", f"{REF} at {local[:12]}", None) if rc == 0 else
                       ("sync ref", "fail", f"{REF} is damaged: {_last_line(err)}",
                        f"git update-ref -d {REF} && ctxd sync pull"))
        rc, o, err = self.git.run("ls-remote", "--refs", remote, REF, timeout=timeout, check=False)
        if rc != 0:
            out.append(("sync remote", "fail",
                        f"cannot reach remote {remote}: {_last_line(err) or 'git ls-remote failed'}",
                        f"git ls-remote {remote}  (check the URL, the network and your credentials)"))
        elif not o.strip():
            out.append(("sync remote", "warn", f"remote {remote} has no {REF} yet", "ctxd sync push"))
        else:
            theirs = o.decode().split()[0]
            same = local == theirs
            out.append(("sync remote", "ok" if same else "warn",
                        f"remote {remote} has {REF} at {theirs[:12]} "
                        f"({'in step with this clone' if same else 'not the same as this clone'})",
                        None if same else "ctxd sync"))
        return out


def _str(v):
    return v if isinstance(v, str) else None


def _capped(text):
    """*text* within MAX_ITEM_CHARS (what a receiver accepts), its cut said."""
    if not text or len(text) <= MAX_ITEM_CHARS:
        return text
    note = f"\n[... {len(text):,} characters: cut to ctxd sync's limit of {MAX_ITEM_CHARS:,} an item]"
    return text[:MAX_ITEM_CHARS - len(note)] + note


def _segments(items):
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


def _ident(v, default="?"):
    """A sender's claimed name (an email, a host) as stored and shown: a string, control
    characters out, at most 120 characters."""
    if not isinstance(v, str) or not v.strip():
        return default
    return "".join(c if c.isprintable() else "?" for c in v.strip())[:120]


def _float(v):
    try:
        return float(v) if v is not None else None
    except ValueError:
        return None


__all__ = ["REF", "FORMAT", "Sync", "SyncOff", "SegmentError", "Git", "encode_segment",
           "decode_segment", "tracking_ref", "ExitCode"]
