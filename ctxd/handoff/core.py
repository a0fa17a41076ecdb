"""Handoffs, teach prompts and review over one project's memory.

    mem = ProjectMemory.at()
    hid, path, archive = ProjectHandoffs(mem).handoff(session="s1")

The surfaces (``ctxd handoff``, ``ctxd teach``/``review``/``practice``, the MCP server) call
these methods as they call ``ProjectMemory`` for the conversation itself; the memory core
knows nothing of archives or learning (``tests/test_architecture.py`` checks it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxd.errors import CtxdError, ExitCode

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ctxd.memory.core import ProjectMemory


class ProjectHandoffs:
    """The handoff archives and the learner's knowledge of the project *mem* holds."""

    def __init__(self, mem: ProjectMemory):
        self.mem = mem

    def handoff(self, session: str | None = None) -> tuple[str, str, dict]:
        """Build and store the next version of a session's handoff archive: (id, path, archive)."""
        from ctxd.handoff import build

        mem = self.mem
        return build.make(mem.project, mem.store(create=False), session=session, config_raw=mem.config_raw)

    def language(self) -> str | None:
        """The teach/handoff language set in config.toml ([handoff] language = "zh" | "en"), or None."""
        lang = (self.mem.config_raw.get("handoff") or {}).get("language")
        return lang if lang in ("zh", "en") else None

    def teach_prompt(self, hid: str, archive: dict, *, topic: str | None = None, focus: str | None = None,
                     user_input: str | None = None, record: bool = True) -> str:
        """The teach prompt for *archive* (id *hid*), with what the project's knowledge says of
        its concepts (the archive's key points are applied first, once per archive).

        Nothing is added to the conversation: the prompt is printed, not said (pasted or piped
        back into an AI CLI it is stored as ctxd's own text, ``origin`` "ctxd", and the next
        handoff still reads its markers). *record* false: a store is never created just to
        read the knowledge.
        """
        from ctxd.handoff import knowledge, teach

        know = None
        if record or self.mem.exists():
            store = self.mem.store()
            knowledge.observe_archive(store, archive, source=hid)
            names = [k.get("concept") for k in archive.get("key_points") or []
                     if isinstance(k, dict) and k.get("concept")]
            know = knowledge.snapshot(store, names + ([focus] if focus else []))
        return teach.build_prompt(archive, topic=topic or None, focus=focus or None, user_input=user_input,
                                  knowledge=know, language=self.language())

    def find_archive(self, ref: str | None = None, topic: str | None = None, hint: str = "") -> tuple[str, dict]:
        """(id, archive): --from REF (a file, an archive id or a session id), else the newest
        archive about TOPIC, else the newest. NotFoundError names the recent ones."""
        from ctxd.handoff import select

        return select.find_archive(self.mem.context_dir, ref, topic, hint)

    def review_due(self, now: float) -> list[dict]:
        """What is due for review at *now* (the recent archives' key points applied first):
        the knowledge records, each with ``weak`` [(prerequisite, mastery)]."""
        from ctxd.handoff import archive, knowledge, select

        mem = self.mem
        if not mem.exists() and not archive.recent(mem.context_dir, n=1):
            return []  # nothing recorded, nothing archived: no store is created to say so
        store = mem.store()
        select.seed(store, mem.context_dir)
        return [dict(r, weak=knowledge.weak_prerequisites(store, r["name"])) for r in knowledge.due(store, now)]

    def practice(self, concept: str, score: float, *, error: bool = False) -> tuple[dict | None, dict]:
        """Record one practice of *concept*: (the record before or None, the record after)."""
        from ctxd.handoff import knowledge

        if not concept.strip():
            raise CtxdError("a concept needs a name", ExitCode.USAGE)
        store = self.mem.store()
        before = knowledge.get(store, concept)
        return before, knowledge.practice(store, concept, score, error=error)

    def set_prerequisites(self, concept: str,
                          prerequisites: Sequence[str]) -> tuple[dict, list[tuple[str, float | None]]]:
        """Set *concept*'s prerequisites: (its record, its weak prerequisites)."""
        from ctxd.handoff import knowledge

        if not concept.strip():
            raise CtxdError("a concept needs a name", ExitCode.USAGE)
        store = self.mem.store()
        rec = knowledge.set_prerequisites(store, concept, prerequisites)
        return rec, knowledge.weak_prerequisites(store, concept)
