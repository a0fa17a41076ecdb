"""The memory core: one project's conversation memory and every operation on it.

    mem = ProjectMemory.at("/path/in/project")     # or ProjectMemory.at() for $PWD
    mem.record([{"kind": "prompt", "content": "...", "session": "s1", "source": "claude"}])
    mem.context(budget=4000, query="when is the cutover?")
    mem.search("cutover"), mem.output(42), mem.add_fact("use uv, not pip", "preference")

Every surface is a thin translator over this class: the click commands
(``ctxd/commands``), the AI CLI hook runner (``ctxd.integrations.agent_hooks``), the
MCP server and the llm plugin. They turn their arguments or payload into one
call here and its result into their output; none of them runs SQL or knows
where a file lives.

The class owns
- the project's paths (``paths``): the store, ``outputs/``, ``context.md``,
  its lock, the cache and summary files, the decisions log, the handoffs;
- the store's lifecycle: opened lazily on the first operation that needs it,
  closed by ``close()`` or the ``with`` block; ``create=False`` operations never
  create a store just to read it;
- ``transaction()``: one atomic write unit over several operations.

Errors are ``CtxdError`` subclasses (``NoStore`` when nothing was recorded
yet); every protocol maps them the same way (``ctxd.boundary``).

Standard library only at import time: the AI CLI hooks import this module.
"""

import contextlib
import os

from ctxd.errors import CtxdError, ExitCode, NotFoundError
from ctxd.memory.layout import MemoryPaths

DEFAULT_BUDGET = 8000
RECALL_BUDGET = 1500  # tokens: ctxd recall and per-prompt recall, unless [context] recall_budget says otherwise
RECALL_THRESHOLD = 0.6  # share of the prompt's terms the best hits must hold for anything to be injected
PROMPT_RECALL_SECONDS = 0.1  # per-prompt recall gives up (injects nothing) rather than take longer
FACT_KINDS = ("preference", "requirement", "background", "todo")
FACT_MAX = 500  # characters: a fact is one statement (the context shows ~220 of it)
FACT_IMPORTANCE = 0.9
FACT_PRIORITY = 5.0  # a fact recorded on purpose ranks about like a preference the user stated
HOOK_CONTEXT_CHARS = 10_000  # Claude Code passes ~10K characters whole and cuts larger to a preview


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


class NoStore(NotFoundError):
    """Nothing was recorded for the project yet."""


class ProjectMemory:
    """The conversation memory of one project (see the module docstring)."""

    def __init__(self, project, *, redact=True, busy_timeout=None, replay_limit=None, render_later=False):
        """*busy_timeout*: seconds a write waits for another process's lock (the store's default
        when None); *replay_limit*: seconds the first write open may spend replaying the spool
        (all of it when None); *render_later* (AI CLI hooks): a change marks context.md stale
        for the detached refresh (``refresh_later``) instead of rendering it at once."""
        self.project = project
        self.root = project.root
        self.paths = MemoryPaths(project.context_dir)
        self._redact = redact
        self._store = None
        self._busy_timeout = busy_timeout
        self._replay_limit = replay_limit
        self._render_later = render_later

    # -- opening ------------------------------------------------------------------
    @classmethod
    def at(cls, cwd=None, environ=None, *, redact=True, busy_timeout=None, replay_limit=None, render_later=False):
        """The memory of the project holding *cwd* ($PWD by default)."""
        from ctxd.memory.project import locate

        return cls(locate(cwd, environ), redact=redact, busy_timeout=busy_timeout, replay_limit=replay_limit,
                   render_later=render_later)

    @property
    def context_dir(self):
        return self.paths.context_dir

    @property
    def settings(self):
        return self.project.settings or {}

    @property
    def config_raw(self):
        raw = self.project.config.get("raw", {}) if isinstance(self.project.config, dict) else {}
        return raw if isinstance(raw, dict) else {}

    def exists(self):
        """Whether anything was recorded for this project (a store exists)."""
        return os.path.exists(self.paths.store)

    def store(self, create=True):
        """The open store (opened on first use). ``create=False``: NoStore when there is none."""
        if self._store is None:
            if not create and not self.exists():
                raise NoStore(f"no conversation recorded for {self.root} yet (ctxd chat add / import / install)")
            from ctxd.memory.project import open_store

            self._store = open_store(self.project, redact=self._redact, create=create,
                                     busy_timeout=self._busy_timeout)
            if create:  # a writer: what hooks spooled goes in first
                self.replay_spool(self._replay_limit)
        return self._store

    # -- the spool (ctxd.memory.spool): what hooks could not store yet ---------------
    def spool(self, tool, event, session, records=(), transcript=None):
        """Queue a hook event the store cannot take now (records redacted first); the entry's path."""
        from ctxd.memory import spool
        from ctxd.memory.project import redactor

        red = redactor(self.project) if self._redact else None
        beside, elsewhere = self._spool_dirs()
        try:
            return spool.put(beside, tool, event, session, records, transcript, redactor=red)
        except OSError as e:  # a read-only or full context dir: the state dir may be elsewhere
            try:
                return spool.put(elsewhere, tool, event, session, records, transcript, redactor=red)
            except OSError:
                raise e from None

    def _spool_dirs(self):
        """(the spool beside the store, the one under the state dir for when that cannot be written)."""
        from ctxd import paths
        from ctxd.activation.fileio import sha256_hex

        return self.paths.spool, os.path.join(paths.state_dir(), "spool", sha256_hex(self.context_dir)[:16])

    def spooled(self):
        """How many hook events wait in the spool."""
        from ctxd.memory import spool

        return sum(len(spool.names(d)) for d in self._spool_dirs())

    def replay_spool(self, time_limit=None):
        """Store what the spool holds (oldest first, at most *time_limit* seconds); how many
        entries. Never raises: a store that still cannot take them leaves them for the next
        writer, and anything else is logged."""
        from ctxd.memory import spool

        dirs = [d for d in self._spool_dirs() if os.path.isdir(d)]
        if not dirs:
            return 0
        try:
            return spool.replay(self, dirs, time_limit)
        except Exception as e:
            from ctxd import boundary

            boundary.log_exception(f"spool: replay into {self.paths.store} stopped ({boundary.describe(e)})", e)
            return 0

    def close(self):
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @contextlib.contextmanager
    def transaction(self):
        """One atomic write unit: every store write inside commits together or not at all."""
        with self.store().transaction():
            yield self

    def count(self):
        return self.store(create=False).count() if self.exists() else 0

    # -- recording ----------------------------------------------------------------
    def record(self, messages, *, redact=True, render=True):
        """Store typed messages (dicts of ctxd.memory.items); return the ids added.

        A dict's ``dedup`` may be a function of the store (keys that depend on what is
        stored already, e.g. the n-th identical prompt); it is resolved here. Live
        records that an imported transcript holds already are reconciled (dropped) by
        ``reconcile_live``. context.md is re-rendered when anything was new.
        """
        messages = [m for m in messages if m.get("content", "").strip()]
        if not messages:
            return []
        store = self.store()
        for m in messages:
            if callable(m.get("dedup")):
                m["dedup"] = m["dedup"](store)
            elif m.get("dedup_nth"):  # the n-th identical record: the prefix + the first n not stored
                prefix, k = m.pop("dedup_nth"), 1
                while store.has_dedup(f"{prefix}{k}"):
                    k += 1
                m["dedup"] = f"{prefix}{k}"
        added = store.add_many(messages, redact=redact)
        if added and render:
            self.changed()
        return added

    def add(self, role, content, **kw):
        """Store one message by role (``ctxd chat add``); its id."""
        if not content.strip():
            raise CtxdError("refusing to store an empty message", ExitCode.USAGE)
        redact = kw.pop("redact", True)
        added = self.record([dict(role=role, content=content, **kw)], redact=redact)
        return added[0] if added else None

    def has(self, dedup):
        return self.store().has_dedup(dedup)

    def reconcile_live(self, live_prefixes, is_imported, session):
        """Delete live records (keys under *live_prefixes*) whose imported twin (same session,
        role and content, key for which *is_imported* is true) is stored; one to one. How many."""
        if not session:
            return 0
        store = self.store()
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

    def reconcile_tool(self, tool, session):
        """reconcile_live for the live records AI CLI *tool*'s hooks keep in *session*: Gemini's and
        Codex's (their importers key by record id or line; Claude's prompts share the importer's key)."""
        prefixes = {"gemini": (f"gemini-hook:{session}:",),
                    "codex": (f"codex:{session}:", f"codex-hook:{session}:")}.get(tool, ())

        def imported(key):
            if not key:
                return False
            if tool == "gemini":
                return key.startswith(f"gemini:{session}:")
            if tool == "codex":
                head = f"codex:{session}:"
                return key.startswith(head) and key[len(head):].isdigit()  # the rollout importer's codex:<id>:<line>
            return False

        return self.reconcile_live(prefixes, imported, session)

    def import_file(self, path, fmt="auto", *, session=None, progress=None):
        """Import a whole file (idempotent); the ImportResult."""
        from ctxd.memory.importing import import_file

        result = import_file(self.store(), path, fmt, session=session, progress=progress)
        if result.added or getattr(result, "forgotten", 0):
            self.changed()
        return result

    def import_transcript(self, path, fmt="auto", *, session=None):
        """Import what a live transcript gained since the last call: (added, malformed)."""
        from ctxd.memory.importing import import_transcript

        return import_transcript(self.store(), path, fmt, session=session)

    def forget(self, **what):
        """Delete messages; each leaves a tombstone (the store's trigger, by dedup key) that
        ``ctxd sync`` carries, so the other clones drop it too (private sessions leave none)."""
        n = self.store(create=False).forget(**what)
        self.changed()
        return n

    # -- sharing through git (ctxd.memory.sync) -------------------------------------
    def sync(self, environ=None, report=None, save_handoff=None):
        """The project's ctxd.memory.sync.Sync (push, pull, status over its git remotes);
        *report* receives one line per problem found on the ref; *save_handoff* stores a
        handoff archive received (ctxd.handoff.archive.save; a pull needs it)."""
        from ctxd.memory import sync

        return sync.Sync(self, environ, report=report, fact_priority=FACT_PRIORITY, save_handoff=save_handoff)

    def set_private(self, session, private=True):
        """Keep *session* out of every sync segment (or share it again, what it holds included):
        how many of its messages were sent before it was marked."""
        if not session:
            raise CtxdError("a session id is needed", ExitCode.USAGE)
        store = self.store()
        store.set_private(session, private)
        return store.session_count(session, sent=True)

    def private_sessions(self):
        """Rows (session, ts, messages) of the sessions kept private."""
        return self.store(create=False).private_sessions() if self.exists() else []

    # -- reading ------------------------------------------------------------------
    def recent(self, n=20, session=None):
        return self.store(create=False).recent(n, session=session) if self.exists() else []

    def iter_all(self, session=None):
        if not self.exists():
            return iter(())
        return self.store(create=False).iter_all(session=session)

    def search(self, query, limit=20):
        """The best *limit* messages for *query*, ranked (the same ranking as recall), as Hits."""
        from ctxd.memory import recall

        if not self.exists():
            return []
        return recall.rank(self.store(create=False), query, expand=False)[:limit]

    def recall(self, query, budget=None, *, exclude=(), threshold=0.0):
        """Ranked recall (ctxd.memory.recall) of the turns that answer *query*, packed to
        *budget* tokens ([context] recall_budget, else 1,500). An empty store recalls nothing."""
        from ctxd.memory import recall

        if budget is None:
            budget = int(self.settings.get("recall_budget") or RECALL_BUDGET)
        if not self.exists():
            return recall.Recall(query, [], 0, "", 0)
        return recall.recall(self.store(create=False), query, budget, exclude=exclude, threshold=threshold)

    def prompt_context(self, session, prompt, *, budget=None, time_limit=PROMPT_RECALL_SECONDS,
                       limit_chars=HOOK_CONTEXT_CHARS):
        """What a just-submitted prompt should come with: the earlier turns relevant to it
        (at most *budget* tokens, [context] recall_budget, else 1,500, and *limit_chars*
        characters), "" when none of the best hits holds the share of the prompt's terms
        [context] recall_threshold asks (``recall.answerable``).

        Never what *session* holds already (its own turns, its SessionStart context,
        earlier recalls: recorded in the store as injected), never the prompt itself.
        Gives up, returning "", rather than take more than *time_limit* seconds; an empty,
        busy or corrupt store also gives "" (the reason is logged).
        """
        from ctxd import boundary
        from ctxd.memory import recall
        from ctxd.memory.store import StoreError

        if not self.exists() or not prompt.strip():
            return ""
        if budget is None:
            budget = int(self.settings.get("recall_budget") or RECALL_BUDGET)
        threshold = float(self.settings.get("recall_threshold") or RECALL_THRESHOLD)
        why = None
        try:
            store = self.store(create=False)
            with store.deadline(time_limit):
                held = store.injected_ids(session) | store.session_ids(session)
                def own(hits):  # the prompt itself, stored before it reached this hook
                    return [h for h in hits if h.message.content.strip() != prompt.strip()]

                def answerable(lexical):  # embed the prompt only when the history can answer it
                    return bool(recall.answerable(own(lexical), threshold))

                hits = recall.answerable(own(recall.rank(store, prompt, exclude=held, semantic=answerable)),
                                         threshold)
            items, text, _used = recall.pack(hits, budget)
            if items:
                store.mark_injected(session, [h.message.id for h in items])
        except StoreError as e:  # timed out, corrupt, written by a newer ctxd: nothing, and why
            why, text = e.message, ""
        if why:
            boundary.log_exception(f"per-prompt recall for session {session or '?'}: nothing injected ({why})")
        if not text:
            return ""
        out = f"Relevant earlier turns of this project (ctxd recall for this prompt):\n{text}\n"
        if len(out) > limit_chars:  # Claude Code shows the model only a preview of more than ~10K
            cut = out[:limit_chars]
            out = cut[:cut.rfind("\n") + 1] or cut
        return out

    def get(self, mid):
        m = self.store(create=False).get(mid)
        if m is None:
            raise NotFoundError(f"no message #{mid}")
        return m

    def output(self, mid):
        """The full text of message *mid* (an offloaded output read back in full)."""
        m = self.get(mid)
        if not m.output_path:
            return m.content
        try:
            with open(m.output_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            raise NotFoundError(f"the offloaded output of #{mid} is missing: {m.output_path}") from None

    def sessions(self):
        return self.store(create=False).sessions() if self.exists() else []

    def last_session(self):
        return self.store(create=False).last_session() if self.exists() else None

    # -- context ------------------------------------------------------------------
    def budget_for(self, model=None, budget=None):
        """(budget tokens, how it was chosen): --budget, a model's window, .contextrc, default."""
        if model and budget:
            raise CtxdError("give --model or --budget, not both", ExitCode.USAGE)
        if budget:
            return budget, "--budget"
        model = model or self.settings.get("model")
        if model:
            from ctxd.memory import engine, models

            window = models.window(model, self.project.config)
            return max(1024, window - engine.RESERVE), f"model {model}: window {window} - reserve {engine.RESERVE}"
        if self.settings.get("budget"):
            return int(self.settings["budget"]), ".contextrc [context] budget"
        return DEFAULT_BUDGET, "default"

    def system_block(self):
        """(full, compact) project instructions from .contextrc [context] system / system_file."""
        s = self.settings
        text = s.get("system")
        if s.get("system_file"):
            path = os.path.join(self.root, s["system_file"])
            real, root = os.path.realpath(path), os.path.realpath(self.root)
            if real != root and not real.startswith(root.rstrip("/") + "/") and _inside(path, self.root):
                # the reviewed .contextrc names a project file; a committed link must not feed the
                # agent a file from elsewhere (~/.ssh/..., another project's notes)
                raise CtxdError(f"[context] system_file {path} is a symlink out of the project (to {real}); "
                                "not reading it", ExitCode.UNTRUSTED)
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                raise CtxdError(f"[context] system_file {path}: {e.strerror}", ExitCode.CONFIG) from None
        if not text:
            return None, None
        first_para = text.strip().split("\n\n", 1)[0]
        return text.strip(), first_para[:800]

    def context(self, *, budget=None, model=None, mode="auto", query=None):
        """The assembled context (ctxd.memory.engine.Context) within the budget."""
        from ctxd.memory import engine, fact_merge, summarizer

        n, how = self.budget_for(model, budget)
        store = self.store(create=False)
        system, compact = self.system_block()
        llm = summarizer.load(self.context_dir) if summarizer.settings(self.project.config) else None
        # a big imported backlog of facts is left to the detached `ctxd chat refresh` (started here
        # when it lags), so the first context after importing 100,000 messages does not wait minutes
        from ctxd.memory import render

        ctx = engine.assemble(store, budget=n, mode=mode, query=query, system=system, system_compact=compact,
                              log_dir=self.context_dir, llm_summary=llm, refresh_limit=render.REFRESH_LIMIT,
                              root=self.root)
        ctx.budget_source = how
        if fact_merge.backlog(store):
            summarizer.spawn_refresh(self.project, store)
        return ctx

    def summarizer_note(self):
        from ctxd.memory import summarizer

        if not summarizer.settings(self.project.config):
            return ""
        return f"summarizer: {summarizer.last_status(self.context_dir) or 'no run finished yet'}"

    def render(self, max_chars=None, shown=None):
        """context.md's text (not written); *shown* (a set) receives the ids of what it carries."""
        from ctxd.memory import render

        return render.render(self.store(create=False), self.root, shown=shown,
                             **({"max_chars": max_chars} if max_chars else {}))

    def write_context_file(self, injection=False):
        """Re-render context.md under its lock, atomically (*injection*: keep the SessionStart
        injection ready too); its path."""
        from ctxd.memory import render

        return render.write(self.store(create=False), self.root,
                            injection=self._injection if injection else None)

    def changed(self):
        """After a change: context.md now, the LLM summary and a facts backlog in the background.
        With render_later (a hook): context.md is only marked stale (``refresh_later``)."""
        from ctxd.memory import render

        if self._render_later:
            render.mark_stale(self.context_dir)
            return None
        from ctxd.memory import summarizer

        path = self.write_context_file()
        summarizer.spawn_refresh(self.project, self._store)
        return path

    def refresh_later(self):
        """At the end of a turn: start the detached `ctxd chat refresh` when context.md is stale
        (it renders it) or other background work waits; whether one was started."""
        import sqlite3

        from ctxd.memory import render, summarizer
        from ctxd.memory.store import StoreError

        try:
            return summarizer.spawn_refresh(self.project, self._store, now=render.is_stale(self.context_dir))
        except (sqlite3.Error, StoreError):  # a busy or damaged store: the next turn's end asks again
            return False

    def session_context(self, limit_chars=HOOK_CONTEXT_CHARS, session=None):
        """What a new AI CLI session starts with: at most *limit_chars* characters, "" when empty.

        The injection the last render kept is used when the store has not changed since
        (``render.cached_injection``); else it is rendered now. With *session*, the messages it
        carries are remembered as injected into that session, so per-prompt recall never
        gives them again."""
        from ctxd.memory import render

        if not self.exists():
            return ""
        cached = render.cached_injection(self.context_dir) if limit_chars == HOOK_CONTEXT_CHARS else None
        text, shown = cached or self._injection(self.store(create=False), limit_chars)
        if session and shown:
            try:
                self.store(create=False).mark_injected(session, sorted(shown))
            except Exception:  # a read-only or busy store: the injection still goes out
                pass
        return text

    def _injection(self, store, limit_chars=HOOK_CONTEXT_CHARS):
        """(text, ids it carries) of the SessionStart injection, rendered from *store*; ("", ())
        for an empty store."""
        from ctxd.memory import render

        if store.count() == 0:
            return "", ()
        note = (f"\n[ctxd: the full context file is {self.paths.context_file}; search every earlier turn with: "
                f"ctxd chat search QUERY]\n")
        room = limit_chars - len(note)
        budget = room
        shown = set()
        text = render.render(store, self.root, max_chars=budget, shown=shown)
        for _ in range(6):  # CJK and markup make characters per token vary: shrink until it fits
            if len(text) <= room:
                break
            budget = int(budget * room / len(text) * 0.95)
            shown = set()
            text = render.render(store, self.root, max_chars=budget, shown=shown)
        if len(text) > room:  # a single huge turn: cut at a line boundary
            cut = text[:room]
            nl = cut.rfind("\n")
            text = cut[: nl + 1] if nl > room // 2 else cut
        return text.rstrip("\n") + "\n" + note, shown

    def rendered_context(self, limit_chars=HOOK_CONTEXT_CHARS):
        """context.md as last rendered (the store is not read), cut at a line boundary to
        *limit_chars*; "" when there is none. What a session starts with when the store is busy."""
        try:
            with open(self.paths.context_file, encoding="utf-8", errors="replace") as f:
                text = f.read(limit_chars + 1)
        except OSError:
            return ""
        if len(text) > limit_chars:
            cut = text[:limit_chars]
            text = cut[: cut.rfind("\n") + 1] or cut
        return text if text.strip() else ""

    def refresh(self):
        """What hooks queued stored (the spool), facts, context.md (with the SessionStart
        injection) and (when configured) the LLM summary up to date, then the embeddings:
        (messages read, summarizer status). context.md is rendered before the summarizer
        runs, so it never waits for an LLM."""
        from ctxd.memory import fact_merge, render, summarizer

        store = self.store(create=False)
        self.replay_spool()
        n = fact_merge.refresh_facts(store)
        if n or render.is_stale(self.context_dir) or render.cached_injection(self.context_dir) is None:
            self.write_context_file(injection=True)
        status = summarizer.refresh(store, self.project.config)
        if status == "ok":  # a new LLM summary: the context shows it
            self.write_context_file(injection=True)
        self.embed_backlog(store)
        return n, status

    @staticmethod
    def embed_backlog(store):
        """Embed what is not embedded yet when the semantic extra is there (resumable; one
        process at a time); never raises: recall stays lexical for what is left."""
        from ctxd.memory import embed

        try:
            return embed.backfill(store)
        except embed.Unavailable:
            return 0
        except Exception:  # a busy or damaged store: the next refresh resumes
            from ctxd import boundary

            boundary.log_exception("embedding in the background stopped")
            return 0

    def integrity(self):
        """"ok" or what SQLite's integrity check found."""
        return self.store(create=False).integrity()

    def recover(self):
        from ctxd.memory import store as store_mod

        self.close()
        return store_mod.recover(self.context_dir)

    # -- facts --------------------------------------------------------------------
    def add_fact(self, text, kind, *, session=None, source="mcp"):
        """Record *text* as a fact of *kind* on purpose: (known, message id, stored text).

        The fact is stored as a system message (importance 0.9) in *session*, else the
        latest session (a handoff of the conversation going on then packs it), redacted
        like every write; its facts get *kind* as their tag and at least the priority of
        a preference the user stated. A statement that is a live fact already is not
        stored again: that fact is re-tagged and ``known`` is true (its message id given).
        """
        from ctxd.memory import fact_merge, facts

        if kind not in FACT_KINDS:
            raise CtxdError(f"kind must be one of {', '.join(FACT_KINDS)} (got {kind!r})", ExitCode.USAGE)
        text = " ".join(text.split())
        if not text:
            raise CtxdError("refusing to record an empty fact", ExitCode.USAGE)
        if len(text) > FACT_MAX:
            raise CtxdError(f"a fact is one statement of at most {FACT_MAX} characters (got {len(text)}); "
                            "split it, or keep the detail in the conversation", ExitCode.USAGE)
        store = self.store()
        fact_merge.refresh_facts(store)
        redacted = store.prepare(text)[0]
        with store.transaction():
            known = store.live_fact_with_norm(facts.normalize(redacted))
            if known is not None:  # the same statement is a live fact already: keep the first, with this kind
                store.promote_fact(known["id"], kind, FACT_PRIORITY)
                return True, known["msg_id"], redacted
            mid = store.add("system", text, session=session or store.last_session() or source, source=source,
                            importance=FACT_IMPORTANCE)
            fact_merge.keep_fact(store, mid, kind, FACT_PRIORITY)
        self.write_context_file()
        return False, mid, store.get(mid).content

    def facts(self, limit=400):
        from ctxd.memory import fact_merge

        if not self.exists():
            return []
        store = self.store(create=False)
        fact_merge.refresh_facts(store)
        return fact_merge.live_facts(store, limit, answered=False)

    # -- working memory -------------------------------------------------------------
    def task_start(self, name):
        from ctxd.memory import tasks

        tid = tasks.start(self.store(), name)
        self.changed()
        return tid

    def task_note(self, text):
        from ctxd.memory import tasks

        name = tasks.note(self.store(), text)
        self.changed()
        return name

    def task_done(self):
        from ctxd.memory import tasks

        done = tasks.done(self.store())
        self.changed()
        return done

    def task_take(self, name=None):
        from ctxd.memory import tasks

        taken = tasks.take(self.store(), name)
        self.changed()
        return taken

    def shared_task_text(self):
        """The open tasks received from other machines, one labelled line each ("" when none)."""
        from ctxd.memory import tasks

        return tasks.render_shared(self.store(create=False)) if self.exists() else ""

    def task_text(self):
        """The open task and its notes as the context shows them ("" when none)."""
        from ctxd.memory import tasks

        return tasks.render_open(self.store(create=False)) if self.exists() else ""


def _inside(path, d):
    """Whether *path* as written lies in *d* (an entry written outside, like ~/notes.md, is the
    reviewed .contextrc's own choice)."""
    path, d = os.path.normpath(path), os.path.normpath(d)
    return path == d or path.startswith(d.rstrip("/") + "/")
