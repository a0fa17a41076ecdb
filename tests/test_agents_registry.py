"""The registry of AI tools and transcript formats (ctxd.agents): one module a format, each
loaded only when asked for."""

import json
import subprocess
import sys

from ctxd import agents
from ctxd.agents.base import TranscriptFormat


def test_every_registered_format_loads_under_its_name():
    loaded = [agents.named(name) for name in agents.NAMES]
    assert all(isinstance(a, TranscriptFormat) for a in loaded)
    assert [a.name for a in loaded] == list(agents.NAMES) == ["jsonl", "claude", "codex", "gemini", "aider", "llm"]
    assert agents.named("cursor") is None


def test_a_hook_for_one_tool_loads_only_that_tools_module():
    """The Stop hook imports a Claude transcript through the driver: the other parsers (and
    their regexes) stay unloaded."""
    code = ("import json, sys\n"
            "from ctxd.memory import importing  # noqa: F401\n"
            "from ctxd.agents import named\n"
            "named('claude')\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('ctxd.agents.'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == ["ctxd.agents.base", "ctxd.agents.claude", "ctxd.agents.common"]
