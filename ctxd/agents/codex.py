"""Codex: its rollout files (the parser is ``ctxd.agents.codex_rollout``)."""

from ctxd.agents.base import Evidence, TranscriptFormat


class Codex(TranscriptFormat):
    name = "codex"

    def sniff_line(self, obj, n):
        if "payload" in obj and "type" in obj:
            return Evidence.MARK
        if n == 1 and isinstance(obj.get("id"), str) and "instructions" in obj:
            return Evidence.HINT  # the first line of rollouts before session_meta
        return None

    def parse(self, source, cursor):
        from ctxd.agents.codex_rollout import parse_codex

        return parse_codex(source, cursor)
