"""One module per AI tool (claude, codex, gemini) and per plain transcript format (jsonl, aider,
llm), each with a ``TranscriptFormat`` (``ctxd.agents.base``); this registry lists them.

Adding a tool is one module and one line in ``REGISTRY``. The order is the order of
``--format`` choices, and detection's tie-break between formats equally sure of a line. A
module is imported when first asked for: an AI CLI hook loads only its own tool's.
"""

REGISTRY = (  # (module in ctxd/agents/ = the format's name, its TranscriptFormat class)
    ("jsonl", "Jsonl"),
    ("claude", "Claude"),
    ("codex", "Codex"),
    ("gemini", "Gemini"),
    ("aider", "Aider"),
    ("llm", "Llm"),
)
NAMES = tuple(name for name, _cls in REGISTRY)
_LOADED = {}


def named(name):
    """The TranscriptFormat called *name* (its module imported now), or None."""
    agent = _LOADED.get(name)
    if agent is None:
        cls = dict(REGISTRY).get(name)
        if cls is None:
            return None
        module = __import__(f"ctxd.agents.{name}", fromlist=[cls])
        agent = _LOADED[name] = getattr(module, cls)()
    return agent


def all_agents():
    """Every TranscriptFormat, in registry order."""
    return tuple(named(name) for name in NAMES)
