"""One module per AI tool (claude, codex, gemini) and per plain transcript format (jsonl, aider,
llm), each a ``TranscriptFormat`` (``ctxd.agents.base``); this registry lists them.

Adding a tool is one module and one line in ``AGENTS``. The order is the order of ``--format``
choices, and detection's tie-break between formats equally sure of a line.
"""

from ctxd.agents import aider, claude, codex, gemini, jsonl, llm

AGENTS = (jsonl.Jsonl(), claude.Claude(), codex.Codex(), gemini.Gemini(), aider.Aider(), llm.Llm())
NAMES = tuple(a.name for a in AGENTS)
_BY_NAME = {a.name: a for a in AGENTS}


def named(name):
    """The TranscriptFormat called *name*, or None."""
    return _BY_NAME.get(name)
