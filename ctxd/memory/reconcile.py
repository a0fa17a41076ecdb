"""Live records an imported transcript now holds: found and deleted, one to one.

AI CLI hooks record prompts and replies as they happen; the tool's transcript, imported later,
is the record (tool calls and all). Claude's live prompts share their dedup key with its
importer, so nothing is left to do; the Gemini and Codex importers key by record id or line, so
after an import the live copies it now holds are deleted here.

Imported by the AI CLI hooks: nothing imported at all.
"""


def tool_keys(tool, session):
    """(prefixes of the keys AI CLI *tool*'s hooks give live records of *session*, is_imported(key):
    whether a key is its importer's). No prefixes for a tool whose importer shares the hooks' keys."""
    prefixes = {"gemini": (f"gemini-hook:{session}:",),
                "codex": (f"codex:{session}:", f"codex-hook:{session}:")}.get(tool, ())

    def is_imported(key):
        if not key:
            return False
        if tool == "gemini":
            return key.startswith(f"gemini:{session}:")
        if tool == "codex":
            head = f"codex:{session}:"
            return key.startswith(head) and key[len(head):].isdigit()  # the rollout importer's codex:<id>:<line>
        return False

    return prefixes, is_imported


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
