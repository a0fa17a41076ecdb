"""Receiving segments from ctxd sync's ref (ctxd.memory.sync.sharing): the Receive half of Sync.

Whatever a segment claims is checked or bounded here: its author against the commit that
added it, its size (MAX_BLOB), a fact's priority (MAX_PRIORITY), and each item is redacted
again with this store's rules before it is stored.
"""

import json
import os
import time

from ctxd.errors import CtxdError
from ctxd.memory.store import origin as origin_mod
from ctxd.memory.sync.segments import MAX_BLOB, REF, SegmentError, author_dir, decode_segment, sha

MAX_PRIORITY = 5.0  # a received fact ranks at most like one recorded on purpose here


class Receive:
    """Importing the local ref's new segments into the store; mixed into Sync, whose git,
    store, report, save_handoff, _redact and _task_view it uses."""

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
            st.record_sent(sent=[(it["key"], sha(json.dumps(self._task_view(now), sort_keys=True)))])
            stats["tasks"] += 1
        if facts:
            from ctxd.memory.context import fact_merge

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
        key = "hr:" + sha(json.dumps(it["archive"], sort_keys=True, ensure_ascii=False))
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
            digest = sha(f.read())
        self.store.record_sent(sent=[(key, "received"), ("h:" + os.path.basename(dest), digest)])
        return 1


def _str(v):
    return v if isinstance(v, str) else None


def _ident(v, default="?"):
    """A sender's claimed name (an email, a host) as stored and shown: a string, control
    characters out, at most 120 characters."""
    if not isinstance(v, str) or not v.strip():
        return default
    return "".join(c if c.isprintable() else "?" for c in v.strip())[:120]
