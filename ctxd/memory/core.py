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

from __future__ import annotations

import contextlib
import os

from ctxd.errors import CtxdError, ExitCode, NotFoundError
from ctxd.memory.store.layout import MemoryPaths

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping
    from sqlite3 import Row

    from ctxd.memory.context.engine import Context
    from ctxd.memory.ingest.importing import ImportResult
    from ctxd.memory.project import Project
    from ctxd.memory.recall.ranked import Hit, Recall
    from ctxd.memory.store.db import Recovery, Store
    from ctxd.memory.store.messages import Message
    from ctxd.memory.sync.sharing import Sync

DEFAULT_BUDGET = 8000
RECALL_BUDGET = 1500  # tokens: ctxd recall and per-prompt recall, unless [context] recall_budget says otherwise
RECALL_THRESHOLD = 0.6  # share of the prompt's terms the best hits must hold for anything to be injected
PROMPT_RECALL_SECONDS = 0.1  # per-prompt recall gives up (injects nothing) rather than take longer
FACT_KINDS = ("preference", "requirement", "background", "todo")
FACT_MAX = 500  # characters: a fact is one statement (the context shows ~220 of it)
FACT_IMPORTANCE = 0.9
FACT_PRIORITY = 5.0  # a fact recorded on purpose ranks about like a preference the user stated
HOOK_CONTEXT_CHARS = 10_000  # Claude Code passes ~10K characters whole and cuts larger to a preview


class NoStore(NotFoundError):
    """Nothing was recorded for the project yet."""


class ProjectMemory:
    """The conversation memory of one project (see the module docstring)."""

    def __init__(self, project: Project, *, redact: bool = True, busy_timeout: float | None = None,
                 replay_limit: float | None = None, render_later: bool = False) -> None:
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
    def at(cls, cwd: str | None = None, environ: Mapping[str, str] | None = None, *, redact: bool = True,
           busy_timeout: float | None = None, replay_limit: float | None = None,
           render_later: bool = False) -> ProjectMemory:
        """The memory of the project holding *cwd* ($PWD by default)."""
        from ctxd.memory.project import locate

        return cls(locate(cwd, environ), redact=redact, busy_timeout=busy_timeout, replay_limit=replay_limit,
                   render_later=render_later)

    @property
    def context_dir(self) -> str:
        return self.paths.context_dir

    @property
    def settings(self) -> dict:
        return self.project.settings or {}

    @property
    def config_raw(self) -> dict:
        raw = self.project.config.get("raw", {}) if isinstance(self.project.config, dict) else {}
        return raw if isinstance(raw, dict) else {}

    def exists(self) -> bool:
        """Whether anything was recorded for this project (a store exists)."""
        return os.path.exists(self.paths.store)

    def store(self, create: bool = True) -> Store:
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

    # -- the spool (ctxd.memory.ingest.spool): what hooks could not store yet ---------------
    def spool(self, tool: str, event: str, session: str, records: Iterable[dict] = (),
              transcript: str | None = None) -> str:
        """Queue a hook event the store cannot take now (records redacted first); the entry's path."""
        from ctxd.memory.ingest import spool
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

    def spooled(self) -> int:
        """How many hook events wait in the spool."""
        from ctxd.memory.ingest import spool

        return sum(len(spool.names(d)) for d in self._spool_dirs())

    def replay_spool(self, time_limit: float | None = None) -> int:
        """Store what the spool holds (oldest first, at most *time_limit* seconds); how many
        entries. Never raises: a store that still cannot take them leaves them for the next
        writer, and anything else is logged."""
        from ctxd.memory.ingest import spool

        dirs = [d for d in self._spool_dirs() if os.path.isdir(d)]
        if not dirs:
            return 0
        try:
            return spool.replay(self, dirs, time_limit)
        except Exception as e:
            from ctxd import boundary

            boundary.log_exception(f"spool: replay into {self.paths.store} stopped ({boundary.describe(e)})", e)
            return 0

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> ProjectMemory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[ProjectMemory]:
        """One atomic write unit: every store write inside commits together or not at all."""
        with self.store().transaction():
            yield self

    def count(self) -> int:
        return self.store(create=False).count() if self.exists() else 0

    # -- recording ----------------------------------------------------------------
    def record(self, messages: Iterable[dict], *, redact: bool = True, render: bool = True) -> list[int]:
        """Store typed messages (dicts of ctxd.memory.store.items); return the ids added.

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

    def add(self, role: str, content: str, **kw) -> int | None:
        """Store one message by role (``ctxd chat add``); its id."""
        if not content.strip():
            raise CtxdError("refusing to store an empty message", ExitCode.USAGE)
        redact = kw.pop("redact", True)
        added = self.record([dict(role=role, content=content, **kw)], redact=redact)
        return added[0] if added else None

    def has(self, dedup: str) -> bool:
        return self.store().has_dedup(dedup)

    def reconcile_tool(self, tool, session: str | None) -> int:
        """Delete the live records AI CLI *tool*'s hooks (an ``AgentTool``) keep in *session* that
        an imported transcript now holds (ctxd.memory.ingest.reconcile); how many."""
        prefixes = tool.live_key_prefixes(session) if session else ()
        if not prefixes:
            return 0
        from ctxd.memory.ingest import reconcile

        return reconcile.reconcile_live(self.store(), prefixes, lambda key: tool.is_imported_key(session, key),
                                        session)

    def import_file(self, path: str, fmt: str = "auto", *, session: str | None = None,
                    progress: Callable[[int], None] | None = None) -> ImportResult:
        """Import a whole file (idempotent); the ImportResult."""
        from ctxd.memory.ingest.importing import import_file

        result = import_file(self.store(), path, fmt, session=session, progress=progress)
        if result.added or getattr(result, "forgotten", 0):
            self.changed()
        return result

    def import_transcript(self, path: str, fmt: str = "auto", *, session: str | None = None) -> tuple[int, int]:
        """Import what a live transcript gained since the last call: (added, malformed)."""
        from ctxd.memory.ingest.importing import import_transcript

        return import_transcript(self.store(), path, fmt, session=session)

    def forget(self, **what) -> int:
        """Delete messages; each leaves a tombstone (the store's trigger, by dedup key) that
        ``ctxd sync`` carries, so the other clones drop it too (private sessions leave none)."""
        n = self.store(create=False).forget(**what)
        self.changed()
        return n

    # -- sharing through git (ctxd.memory.sync.sharing) -------------------------------------
    def sync(self, environ: Mapping[str, str] | None = None, report: Callable[[str], None] | None = None,
             save_handoff: Callable[[str, dict], str] | None = None) -> Sync:
        """The project's ctxd.memory.sync.sharing.Sync (push, pull, status over its git remotes);
        *report* receives one line per problem found on the ref; *save_handoff* stores a
        handoff archive received (ctxd.handoff.archive.save; a pull needs it)."""
        from ctxd.memory.sync import sharing as sync

        return sync.Sync(self, environ, report=report, fact_priority=FACT_PRIORITY, save_handoff=save_handoff)

    def set_private(self, session: str, private: bool = True) -> int:
        """Keep *session* out of every sync segment (or share it again, what it holds included):
        how many of its messages were sent before it was marked."""
        if not session:
            raise CtxdError("a session id is needed", ExitCode.USAGE)
        store = self.store()
        store.set_private(session, private)
        return store.session_count(session, sent=True)

    def private_sessions(self) -> list[Row]:
        """Rows (session, ts, messages) of the sessions kept private."""
        return self.store(create=False).private_sessions() if self.exists() else []

    # -- reading ------------------------------------------------------------------
    def recent(self, n: int = 20, session: str | None = None) -> list[Message]:
        return self.store(create=False).recent(n, session=session) if self.exists() else []

    def iter_all(self, session: str | None = None) -> Iterator[Message]:
        if not self.exists():
            return iter(())
        return self.store(create=False).iter_all(session=session)

    def search(self, query: str, limit: int = 20) -> list[Hit]:
        """The best *limit* messages for *query*, ranked as recall ranks them (``recall.search``), as Hits."""
        from ctxd.memory.recall import ranked as recall

        if not self.exists():
            return []
        return recall.search(self.store(create=False), query, limit)

    def recall(self, query: str, budget: int | None = None, *, exclude: Iterable[int] = (),
               threshold: float = 0.0) -> Recall:
        """Ranked recall (ctxd.memory.recall.ranked) of the turns that answer *query*, packed to
        *budget* tokens ([context] recall_budget, else 1,500). An empty store recalls nothing."""
        from ctxd.memory.recall import ranked as recall

        if budget is None:
            budget = int(self.settings.get("recall_budget") or RECALL_BUDGET)
        if not self.exists():
            return recall.Recall(query, [], 0, "", 0)
        return recall.recall(self.store(create=False), query, budget, exclude=exclude, threshold=threshold)

    def prompt_context(self, session: str | None, prompt: str, *, budget: int | None = None,
                       time_limit: float = PROMPT_RECALL_SECONDS, limit_chars: int = HOOK_CONTEXT_CHARS) -> str:
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
        from ctxd.memory.recall import ranked as recall
        from ctxd.memory.store.errors import StoreError

        if not self.exists() or not prompt.strip():
            return ""
        if budget is None:
            budget = int(self.settings.get("recall_budget") or RECALL_BUDGET)
        threshold = float(self.settings.get("recall_threshold") or RECALL_THRESHOLD)
        try:
            return recall.for_prompt(self.store(create=False), session, prompt, budget=budget, threshold=threshold,
                                     time_limit=time_limit, limit_chars=limit_chars)
        except StoreError as e:  # timed out, corrupt, written by a newer ctxd: nothing, and why
            why = e.message
        boundary.log_exception(f"per-prompt recall for session {session or '?'}: nothing injected ({why})")
        return ""

    def get(self, mid: int) -> Message:
        m = self.store(create=False).get(mid)
        if m is None:
            raise NotFoundError(f"no message #{mid}")
        return m

    def output(self, mid: int) -> str:
        """The full text of message *mid* (an offloaded output read back in full)."""
        m = self.get(mid)
        if not m.output_path:
            return m.content
        try:
            with open(m.output_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            raise NotFoundError(f"the offloaded output of #{mid} is missing: {m.output_path}") from None

    def sessions(self) -> list[str]:
        return self.store(create=False).sessions() if self.exists() else []

    def last_session(self) -> str | None:
        return self.store(create=False).last_session() if self.exists() else None

    # -- context ------------------------------------------------------------------
    def budget_for(self, model: str | None = None, budget: int | None = None) -> tuple[int, str]:
        """(budget tokens, how it was chosen): --budget, a model's window, .contextrc, default."""
        if model and budget:
            raise CtxdError("give --model or --budget, not both", ExitCode.USAGE)
        if budget:
            return budget, "--budget"
        model = model or self.settings.get("model")
        if model:
            from ctxd.memory.context import engine
            from ctxd.memory.text import models

            window = models.window(model, self.project.config)
            return max(1024, window - engine.RESERVE), f"model {model}: window {window} - reserve {engine.RESERVE}"
        if self.settings.get("budget"):
            return int(self.settings["budget"]), ".contextrc [context] budget"
        return DEFAULT_BUDGET, "default"

    def system_block(self) -> tuple[str | None, str | None]:
        """(full, compact) project instructions from .contextrc [context] system / system_file."""
        from ctxd.memory.project import system_block

        return system_block(self.project)

    def context(self, *, budget: int | None = None, model: str | None = None, mode: str = "auto",
                query: str | None = None) -> Context:
        """The assembled context (ctxd.memory.context.engine.Context) within the budget."""
        from ctxd.memory.context import engine, fact_merge, summarizer

        n, how = self.budget_for(model, budget)
        store = self.store(create=False)
        system, compact = self.system_block()
        llm = summarizer.load(self.context_dir) if summarizer.settings(self.project.config) else None
        # a big imported backlog of facts is left to the detached `ctxd chat refresh` (started here
        # when it lags), so the first context after importing 100,000 messages does not wait minutes
        from ctxd.memory.context import render

        ctx = engine.assemble(store, budget=n, mode=mode, query=query, system=system, system_compact=compact,
                              log_dir=self.context_dir, llm_summary=llm, refresh_limit=render.REFRESH_LIMIT,
                              root=self.root)
        ctx.budget_source = how
        if fact_merge.backlog(store):
            summarizer.spawn_refresh(self.project, store)
        return ctx

    def summarizer_note(self) -> str:
        from ctxd.memory.context import summarizer

        if not summarizer.settings(self.project.config):
            return ""
        return f"summarizer: {summarizer.last_status(self.context_dir) or 'no run finished yet'}"

    def render(self, max_chars: int | None = None, shown: set[int] | None = None) -> str:
        """context.md's text (not written); *shown* (a set) receives the ids of what it carries."""
        from ctxd.memory.context import render

        return render.render(self.store(create=False), self.root, shown=shown,
                             **({"max_chars": max_chars} if max_chars else {}))

    def write_context_file(self, injection: bool = False) -> str:
        """Re-render context.md under its lock, atomically (*injection*: keep the SessionStart
        injection ready too); its path."""
        from ctxd.memory.context import render

        return render.write(self.store(create=False), self.root,
                            injection_chars=HOOK_CONTEXT_CHARS if injection else None)

    def changed(self) -> str | None:
        """After a change: context.md now, the LLM summary and a facts backlog in the background.
        With render_later (a hook): context.md is only marked stale (``refresh_later``)."""
        from ctxd.memory.context import render

        if self._render_later:
            render.mark_stale(self.context_dir)
            return None
        from ctxd.memory.context import summarizer

        path = self.write_context_file()
        summarizer.spawn_refresh(self.project, self._store)
        return path

    def refresh_later(self) -> bool:
        """At the end of a turn: start the detached `ctxd chat refresh` when context.md is stale
        (it renders it) or other background work waits; whether one was started."""
        import sqlite3

        from ctxd.memory.context import render, summarizer
        from ctxd.memory.store.errors import StoreError

        try:
            return summarizer.spawn_refresh(self.project, self._store, now=render.is_stale(self.context_dir))
        except (sqlite3.Error, StoreError):  # a busy or damaged store: the next turn's end asks again
            return False

    def session_context(self, limit_chars: int = HOOK_CONTEXT_CHARS, session: str | None = None) -> str:
        """What a new AI CLI session starts with: at most *limit_chars* characters, "" when empty.

        The injection the last render kept is used when the store has not changed since
        (``render.cached_injection``); else it is rendered now. With *session*, the messages it
        carries are remembered as injected into that session, so per-prompt recall never
        gives them again."""
        from ctxd.memory.context import render

        if not self.exists():
            return ""
        cached = render.cached_injection(self.context_dir) if limit_chars == HOOK_CONTEXT_CHARS else None
        text, shown = cached or render.injection(self.store(create=False), self.root, self.paths.context_file,
                                                 limit_chars)
        if session and shown:
            try:
                self.store(create=False).mark_injected(session, sorted(shown))
            except Exception:  # a read-only or busy store: the injection still goes out
                pass
        return text

    def rendered_context(self, limit_chars: int = HOOK_CONTEXT_CHARS) -> str:
        """context.md as last rendered (the store is not read), cut at a line boundary to
        *limit_chars*; "" when there is none. What a session starts with when the store is busy."""
        from ctxd.memory.context import render

        return render.last_rendered(self.paths.context_file, limit_chars)

    def refresh(self) -> tuple[int, str]:
        """What hooks queued stored (the spool), facts, context.md (with the SessionStart
        injection) and (when configured) the LLM summary up to date, then the embeddings:
        (messages read, summarizer status). context.md is rendered before the summarizer
        runs, so it never waits for an LLM. One at a time: ``summarizer.one_at_a_time``."""
        from ctxd.memory.context import summarizer

        return summarizer.one_at_a_time(self.context_dir, self._refresh_once)

    def _refresh_once(self) -> tuple[int, str]:
        from ctxd.memory.recall import embed
        from ctxd.memory.context import fact_merge, render, summarizer

        store = self.store(create=False)
        self.replay_spool()
        n = fact_merge.refresh_facts(store)
        if n or render.is_stale(self.context_dir) or render.cached_injection(self.context_dir) is None:
            self.write_context_file(injection=True)
        status = summarizer.refresh(store, self.project.config)
        if status == "ok":  # a new LLM summary: the context shows it
            self.write_context_file(injection=True)
        embed.catch_up(store)
        return n, status

    def integrity(self) -> str:
        """"ok" or what SQLite's integrity check found."""
        return self.store(create=False).integrity()

    def recover(self) -> Recovery:
        from ctxd.memory.store import db as store_mod

        self.close()
        return store_mod.recover(self.context_dir)

    # -- facts --------------------------------------------------------------------
    def add_fact(self, text: str, kind: str, *, session: str | None = None,
                 source: str = "mcp") -> tuple[bool, int, str]:
        """Record *text* as a fact of *kind* on purpose: (known, message id, stored text).

        The fact is stored as a system message (importance 0.9) in *session*, else the
        latest session (a handoff of the conversation going on then packs it), redacted
        like every write; its facts get *kind* as their tag and at least the priority of
        a preference the user stated. A statement that is a live fact already is not
        stored again: that fact is re-tagged and ``known`` is true (its message id given).
        """
        from ctxd.memory.context import fact_merge

        if kind not in FACT_KINDS:
            raise CtxdError(f"kind must be one of {', '.join(FACT_KINDS)} (got {kind!r})", ExitCode.USAGE)
        text = " ".join(text.split())
        if not text:
            raise CtxdError("refusing to record an empty fact", ExitCode.USAGE)
        if len(text) > FACT_MAX:
            raise CtxdError(f"a fact is one statement of at most {FACT_MAX} characters (got {len(text)}); "
                            "split it, or keep the detail in the conversation", ExitCode.USAGE)
        store = self.store()
        known, mid, redacted = fact_merge.record_fact(store, text, kind, FACT_PRIORITY, importance=FACT_IMPORTANCE,
                                                      session=session, source=source)
        if known:
            return True, mid, redacted
        self.write_context_file()
        return False, mid, store.get(mid).content

    def facts(self, limit: int = 400) -> list[Row]:
        from ctxd.memory.context import fact_merge

        if not self.exists():
            return []
        store = self.store(create=False)
        fact_merge.refresh_facts(store)
        return fact_merge.live_facts(store, limit, answered=False)

    # -- working memory -------------------------------------------------------------
    def task_start(self, name: str) -> int:
        from ctxd.memory.context import tasks

        tid = tasks.start(self.store(), name)
        self.changed()
        return tid

    def task_note(self, text: str) -> str:
        from ctxd.memory.context import tasks

        name = tasks.note(self.store(), text)
        self.changed()
        return name

    def task_done(self) -> tuple[str, int]:
        from ctxd.memory.context import tasks

        done = tasks.done(self.store())
        self.changed()
        return done

    def task_take(self, name: str | None = None) -> str:
        from ctxd.memory.context import tasks

        taken = tasks.take(self.store(), name)
        self.changed()
        return taken

    def shared_task_text(self) -> str:
        """The open tasks received from other machines, one labelled line each ("" when none)."""
        from ctxd.memory.context import tasks

        return tasks.render_shared(self.store(create=False)) if self.exists() else ""

    def task_text(self) -> str:
        """The open task and its notes as the context shows them ("" when none)."""
        from ctxd.memory.context import tasks

        return tasks.render_open(self.store(create=False)) if self.exists() else ""

