"""The registry of AI tools and transcript formats (ctxd.agents): one module a format, each
loaded only when asked for."""

import json
import subprocess
import sys

import pytest

from ctxd import agents
from ctxd.agents.base import AgentTool, TranscriptFormat


def test_every_registered_format_loads_under_its_name():
    loaded = [agents.named(name) for name in agents.NAMES]
    assert all(isinstance(a, TranscriptFormat) for a in loaded)
    assert [a.name for a in loaded] == list(agents.NAMES) == ["jsonl", "claude", "codex", "gemini", "aider", "llm"]
    assert agents.named("cursor") is None


def test_a_hook_for_one_tool_loads_only_that_tools_module():
    """The Stop hook imports a Claude transcript through the driver: the other parsers (and
    their regexes) stay unloaded."""
    code = ("import json, sys\n"
            "from ctxd.memory.ingest import importing  # noqa: F401\n"
            "from ctxd.agents import named\n"
            "named('claude')\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('ctxd.agents.'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == ["ctxd.agents.base", "ctxd.agents.claude", "ctxd.agents.common"]


def test_the_ai_clis_are_agent_tools_and_handle_what_they_install():
    assert agents.AI_CLIS == ("claude", "codex", "gemini")
    assert agents.CONTEXT_FILES == {"claude-md": ("CLAUDE.md", "claude"), "agents-md": ("AGENTS.md", "codex"),
                                    "gemini-md": ("GEMINI.md", "gemini")}
    assert agents.ai_cli("jsonl") is None and agents.ai_cli("cursor") is None
    for name in agents.AI_CLIS:
        tool = agents.ai_cli(name)
        assert isinstance(tool, AgentTool) and tool.name == name and tool.label
        for event, _matcher in tool.hook_events:  # every hook ctxd installs does something
            assert event in tool.hook_handlers or event in tool.env_events, (name, event)
        for event, method in tool.hook_handlers.items():
            assert callable(getattr(tool, method, None)), (name, event, method)


@pytest.mark.parametrize("tool, event, loaded", [
    ("claude", "UserPromptSubmit", ["ctxd.agents.base", "ctxd.agents.claude", "ctxd.agents.common"]),
    ("codex", "UserPromptSubmit", ["ctxd.agents.base", "ctxd.agents.codex"]),  # not its rollout parser
    ("gemini", "BeforeAgent", ["ctxd.agents.base", "ctxd.agents.common", "ctxd.agents.gemini"]),
])
def test_a_prompt_hook_loads_only_its_tools_module(tmp_path, tool, event, loaded):
    payload = json.dumps({"hook_event_name": event, "session_id": "s1", "turn_id": "t1", "cwd": str(tmp_path),
                          "prompt": "hello"})
    code = (f"import io, json, sys; sys.argv = ['ctxd', 'chat', 'hook', {tool!r}]\n"
            f"sys.stdin = io.TextIOWrapper(io.BytesIO({payload.encode()!r}))\n"
            "from ctxd import _entry\n"
            "try:\n    _entry.main()\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('ctxd.agents.'))))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert json.loads(r.stdout.strip().splitlines()[-1]) == loaded, r.stdout + r.stderr
