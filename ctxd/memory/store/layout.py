"""Where a project's memory lives: the layout of its context directory, in one place.

    <context dir>/
      store.db (+ -wal, -shm)   the conversation store (SQLite, 0600)
      outputs/<sha>.txt         huge tool outputs, offloaded behind a preview
      context.md                the rendered context AI CLIs read (.context.lock guards it)
      .context.stale            present while context.md lags behind the store (a hook wrote)
      cache/session-start.json  the SessionStart injection kept by the last render
      decisions.jsonl           every mode decision of the context engine
      cache/                    summaries by range, the LLM summary and its status
      handoffs/                 versioned handoff archives and their index
      spool/                    hook events the store could not take yet (ctxd.memory.ingest.spool)
      .summary.lock             one background summarizer at a time
      .facts.lock               one process extracting facts at a time
      .refresh.lock             one background `ctxd chat refresh` at a time
      .refresh.again            asked for while one ran: it runs another round

ProjectMemory.paths is the instance every caller uses; the store, render,
summarizer and engine modules take their file names from here.
"""

import os

DB_NAME = "store.db"
OUTPUTS = "outputs"


class MemoryPaths:
    """The files of one context directory (see the module docstring)."""

    __slots__ = ("context_dir", "store", "outputs", "context_file", "context_lock", "context_stale", "injection",
                 "cache", "decisions", "llm_summary", "summarizer_status", "summary_lock", "facts_lock", "handoffs",
                 "spool", "refresh_lock", "refresh_again")

    def __init__(self, context_dir):
        j = os.path.join
        self.context_dir = context_dir
        self.store = j(context_dir, DB_NAME)
        self.outputs = j(context_dir, OUTPUTS)
        self.context_file = j(context_dir, "context.md")
        self.context_lock = j(context_dir, ".context.lock")
        self.context_stale = j(context_dir, ".context.stale")
        self.injection = j(context_dir, "cache", "session-start.json")
        self.cache = j(context_dir, "cache")
        self.decisions = j(context_dir, "decisions.jsonl")
        self.llm_summary = j(context_dir, "cache", "llm-summary.json")
        self.summarizer_status = j(context_dir, "cache", "summarizer-status.json")
        self.summary_lock = j(context_dir, ".summary.lock")
        self.facts_lock = j(context_dir, ".facts.lock")
        self.handoffs = j(context_dir, "handoffs")
        self.spool = j(context_dir, "spool")
        self.refresh_lock = j(context_dir, ".refresh.lock")
        self.refresh_again = j(context_dir, ".refresh.again")

    def to_json(self):
        return {k: getattr(self, k) for k in self.__slots__}
