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
with both parents. ctxd.memory.sync.segments writes and reads segments and says what they
hold; ctxd.memory.sync.receive imports them into the store; ctxd.memory.sync.git runs git.

What is sent was redacted when it was stored and is redacted again (with the sender's rules)
as it is written; the receiver redacts each item again with its own rules before storing it.
Private sessions (``ctxd chat private``) are never written to a segment; offloaded outputs
travel as their preview unless ``ctxd sync init --outputs``. The store remembers the
messages not sent yet (a queue its triggers fill), the last tombstone sent, what task and
handoff was sent (digests) and which segment blobs it imported, so a sync moves only what
is new. A received tombstone deletes the message when it came from the tombstone's own sender
and stays, so a stale segment never brings it back. Whatever a segment claims is checked or
bounded on import (see import_ref, decode_segment and the MAX_* limits).
"""

import json
import os
import random
import socket
import time

from ctxd.errors import ConfigError, CtxdError, NotFoundError, SyncError, UsageError
from ctxd.memory.sync.git import NET_TIMEOUT, Git, last_line, tracking_ref
from ctxd.memory.sync.receive import MAX_PRIORITY, Receive
from ctxd.memory.sync.segments import (FACT_KINDS, FORMAT, MAGIC, REF, author_dir, capped, encode_segment, sha,
                                       split_segments)

PUSH_ATTEMPTS = 5  # a push the remote rejects because it moved: fetch, merge, retry this often
FORMAT_BLOB = (b"ctxd project memory (ctxd sync), format 1.\n"
               b"segments/<author>/<sha256>.jsonl.gz: gzip'd JSON lines, a header then one item a line.\n"
               b"Written and read by ctxd; do not edit.\n")


class SyncOff(UsageError):
    """Sharing is not switched on for this project."""


# -- the project's sync --------------------------------------------------------------------

class Sync(Receive):
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
                                f"({last_line(err)}): git fetch --unshallow {remote}")
            raise SyncError(f"cannot fetch {REF} from {remote}: {last_line(err)}")
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
            why = last_line("\n".join(l for l in text.splitlines() if "[remote rejected]" in l or "!" in l[:2])) \
                or last_line(err)
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
            digest = sha(json.dumps(t, sort_keys=True))
            if digests.get(t["key"]) != digest:
                yield dict(t, t="task")
                sent.append((t["key"], digest))
        private = {r["session"] for r in st.private_sessions()}
        for name, data in self._handoff_files():
            key, digest = "h:" + name, sha(data)
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
        return dict(t, name=capped(self._redact(t["name"])),
                    notes=[dict(n, text=capped(self._redact(n["text"]))) for n in t["notes"]])

    def _msg_item(self, r, outputs):
        content = r["content"]
        if outputs and r["output_path"]:
            try:
                with open(r["output_path"], encoding="utf-8", errors="replace") as f:
                    content = f.read()
            except OSError:
                pass
        item = dict(t="msg", key=r["dedup"], kind=r["kind"], role=r["role"], session=r["session"],
                    content=capped(self._redact(content)), ts=r["ts"], importance=r["importance"], source=r["source"])
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
        chunks = split_segments(items)
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
            blobs.append((oid, f"segments/{adir}/{sha(data)[:40]}.jsonl.gz", len(chunk), len(data)))
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
                       ("sync ref", "fail", f"{REF} is damaged: {last_line(err)}",
                        f"git update-ref -d {REF} && ctxd sync pull"))
        rc, o, err = self.git.run("ls-remote", "--refs", remote, REF, timeout=timeout, check=False)
        if rc != 0:
            out.append(("sync remote", "fail",
                        f"cannot reach remote {remote}: {last_line(err) or 'git ls-remote failed'}",
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


def _float(v):
    try:
        return float(v) if v is not None else None
    except ValueError:
        return None


__all__ = ["MAX_PRIORITY", "REF", "Sync", "SyncOff"]
