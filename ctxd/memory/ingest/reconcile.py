"""Live records an imported transcript now holds: found and deleted, one to one.

AI CLI hooks record prompts and replies as they happen; the tool's transcript, imported later,
is the record (tool calls and all). Where a tool's importer keys records otherwise than its
hooks (``AgentTool.live_key_prefixes`` / ``is_imported_key``), the live copies an import now
holds are deleted here.

Imported by the AI CLI hooks: nothing imported at all.
"""


def reconcile_live(store, live_prefixes, is_imported, session):
    """Delete live records (keys under *live_prefixes*) whose imported twin (same session, role and
    content, key for which *is_imported* is true) is stored; one to one. How many."""
    used, gone = set(), 0
    replies = None
    for row in store.dedup_range(live_prefixes):
        if is_imported(row["dedup"]):
            continue
        twin = next((t["id"] for t in store.twins(session, row["role"], row["content"])
                     if t["id"] not in used and is_imported(t["dedup"])), None)
        if twin is None and row["role"] == "assistant":
            # a live record of a whole turn (Gemini's AfterAgent: every reply of the turn joined
            # with newlines) is held by the imported replies it joins
            if replies is None:
                replies = [r for r in store.session_replies(session) if is_imported(r["dedup"])]
            twin = _joined_run(replies, row["content"], used)
        if twin is not None:
            used.add(twin)
            gone += store.forget(mid=row["id"])
    return gone


def _joined_run(rows, text, used):
    """The id of the first row of a run of consecutive *rows* whose contents joined with newlines
    are *text* (and none of which is *used*), or None."""
    for i in range(len(rows)):
        acc, j = rows[i]["content"], i
        while len(acc) < len(text) and j + 1 < len(rows):
            j += 1
            acc += "\n" + rows[j]["content"]
        if acc == text and not any(r["id"] in used for r in rows[i:j + 1]):
            return rows[i]["id"]
    return None
