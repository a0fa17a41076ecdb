"""One module per AI tool (claude, codex, gemini) and per plain transcript format (jsonl, aider,
llm), each with a ``TranscriptFormat`` (``ctxd.agents.base``); an AI CLI that runs ctxd's hooks
has an ``AgentTool``, which is one. This registry lists them.

Adding a tool is one module and one line in ``REGISTRY``. The order is the order of
``--format`` choices, and detection's tie-break between formats equally sure of a line. A
module is imported when first asked for: an AI CLI hook loads only its own tool's.
"""

REGISTRY = (  # (module in ctxd/agents/ = the name, its class, for an AgentTool the context file it reads)
    ("jsonl", "Jsonl", None),
    ("claude", "Claude", "CLAUDE.md"),
    ("codex", "Codex", "AGENTS.md"),
    ("gemini", "Gemini", "GEMINI.md"),
    ("aider", "Aider", None),
    ("llm", "Llm", None),
)
NAMES = tuple(name for name, _cls, _file in REGISTRY)
AI_CLIS = tuple(name for name, _cls, file in REGISTRY if file)  # those with an AgentTool
# `ctxd chat install claude-md` ...: {kind: (file name, the tool whose context_pointer writes it)}
CONTEXT_FILES = {file.lower().replace(".", "-"): (file, name) for name, _cls, file in REGISTRY if file}
_CLASSES = {name: cls for name, cls, _file in REGISTRY}
_LOADED = {}


def named(name):
    """The TranscriptFormat called *name* (its module imported now), or None."""
    agent = _LOADED.get(name)
    if agent is None:
        cls = _CLASSES.get(name)
        if cls is None:
            return None
        module = __import__(f"ctxd.agents.{name}", fromlist=[cls])
        agent = _LOADED[name] = getattr(module, cls)()
    return agent


def ai_cli(name):
    """The AgentTool called *name* (its module imported now), or None."""
    return named(name) if name in AI_CLIS else None


def all_agents():
    """Every TranscriptFormat, in registry order."""
    return tuple(named(name) for name in NAMES)
