"""The typed conversation model (ctxd.memory.store.items): tool-call reading, user-line classification,
and re-parsing what earlier importers flattened into text."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxd.memory.store import items

PATCH = ("*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: src/b.py\n+new\n"
         "*** Delete File: old.txt\n*** Update File: src/c.py\n*** Move to: src/d.py\n@@\n-a\n+b\n*** End Patch\n")


def test_kinds_and_roles():
    assert items.KINDS == ("prompt", "reply", "tool_call", "tool_result", "summary", "meta")
    assert items.ROLE_OF == {"prompt": "user", "reply": "assistant", "tool_call": "assistant",
                             "tool_result": "tool", "summary": "system", "meta": "system"}
    assert [items.kind_of_role(r) for r in ("user", "assistant", "tool", "system")] == [
        "prompt", "reply", "tool_result", "meta"]
    assert items.kind_of_role("nonsense") == items.kind_of_role(None) == items.kind_of_role(["x"]) == "meta"


# -- paths_of / edits_of -------------------------------------------------------------

@pytest.mark.parametrize("name,args,paths", [
    ("Edit", {"file_path": "src/app.py", "old_string": "a", "new_string": "b"}, ["src/app.py"]),
    ("Write", {"file_path": "/p/plan.md", "content": "x"}, ["/p/plan.md"]),
    ("MultiEdit", {"file_path": "m.py", "edits": [{"old_string": "a", "new_string": "b"}]}, ["m.py"]),
    ("NotebookEdit", {"notebook_path": "nb.ipynb", "new_source": "1"}, ["nb.ipynb"]),
    ("Read", {"file_path": "README.md"}, ["README.md"]),
    ("write_file", {"file_path": "hello.txt", "content": "Hello"}, ["hello.txt"]),
    ("replace", {"file_path": "a.py", "old_string": "1", "new_string": "2"}, ["a.py"]),
    ("read_file", {"absolute_path": "/home/dev/proj/Makefile"}, ["/home/dev/proj/Makefile"]),
    ("read_many_files", {"paths": ["a.md", "b.md", "a.md"]}, ["a.md", "b.md"]),
    ("apply_patch", PATCH, ["src/a.py", "src/b.py", "old.txt", "src/c.py", "src/d.py"]),
    ("apply_patch", {"input": PATCH}, ["src/a.py", "src/b.py", "old.txt", "src/c.py", "src/d.py"]),
    ("shell", {"command": ["apply_patch", PATCH]}, ["src/a.py", "src/b.py", "old.txt", "src/c.py", "src/d.py"]),
    ("shell", {"command": ["bash", "-lc", f"apply_patch <<'EOF'\n{PATCH}EOF\n"], "workdir": "/p"},
     ["src/a.py", "src/b.py", "old.txt", "src/c.py", "src/d.py"]),
    ("exec_command", json.dumps({"cmd": f"apply_patch <<'EOF'\n{PATCH}EOF"}),
     ["src/a.py", "src/b.py", "old.txt", "src/c.py", "src/d.py"]),
    ("Bash", {"command": "ls -la"}, []),
    ("WebSearch", {"query": "xterm.js"}, []),
    ("Edit", "not json", []),
    ("Edit", None, []),
])
def test_paths_of(name, args, paths):
    assert items.paths_of(name, args) == paths


def test_edits_of_tells_edits_from_reads():
    assert items.edits_of("Edit", {"file_path": "a.py"}) == ["a.py"]
    assert items.edits_of("Read", {"file_path": "a.py"}) == []
    assert items.edits_of("read_file", {"absolute_path": "/a"}) == []
    assert items.edits_of("shell", {"command": ["bash", "-lc", f"apply_patch <<'EOF'\n{PATCH}EOF"]})[:2] == [
        "src/a.py", "src/b.py"]
    assert items.edits_of("shell", {"command": ["bash", "-lc", "cat a.py"]}) == []
    assert {"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch", "write_file", "replace"} <= items.EDIT_TOOLS
    assert "Read" not in items.EDIT_TOOLS and "Bash" not in items.EDIT_TOOLS
    assert items.is_edit("apply_patch") and not items.is_edit("Glob", {"pattern": "*"})


# -- command_of ------------------------------------------------------------------------

@pytest.mark.parametrize("name,args,command", [
    ("Bash", {"command": "git commit -m 'fix x'", "description": "Commit"}, "git commit -m 'fix x'"),
    ("shell", {"command": ["bash", "-lc", "rg -l 'def sync' src"], "workdir": "/p"}, "rg -l 'def sync' src"),
    ("shell", '{"command":["bash","-lc","pytest -q"]}', "pytest -q"),
    ("shell", {"command": ["/bin/zsh", "-c", "make"]}, "make"),
    ("shell", {"command": ["git", "commit", "-m", "two words"]}, "git commit -m 'two words'"),
    ("exec_command", {"cmd": "npm test", "workdir": "/p"}, "npm test"),
    ("local_shell", {"type": "exec", "command": ["ls", "-la"], "working_directory": "/p"}, "ls -la"),
    ("local_shell", {"action": {"type": "exec", "command": ["bash", "-lc", "echo hi"]}}, "echo hi"),
    ("run_shell_command", {"command": "echo hello > hello.txt", "description": "x"}, "echo hello > hello.txt"),
    ("Read", {"file_path": "a.py"}, None),
    ("Bash", {"command": "   "}, None),
    ("shell", {"command": ["ls", 3]}, None),
    ("shell", "[REDACTED_ARGUMENTS len=83 sha=b4e1e5f7]", None),
])
def test_command_of(name, args, command):
    assert items.command_of(name, args) == command


# -- describe_call -----------------------------------------------------------------------

@pytest.mark.parametrize("name,args,line", [
    ("Edit", {"file_path": "src/app.py", "old_string": "a", "new_string": "b"}, "Edit src/app.py"),
    ("Bash", {"command": "git commit -m 'fix x'"}, "Bash: git commit -m 'fix x'"),
    ("Read", {"file_path": "README.md"}, "Read README.md"),
    ("apply_patch", "*** Begin Patch\n*** Update File: src/a.py\n*** Add File: src/b.py\n*** End Patch",
     "apply_patch: Update src/a.py, Add src/b.py"),
    ("shell", {"command": ["bash", "-lc", f"apply_patch <<'EOF'\n{PATCH}EOF"]},
     "apply_patch: Update src/a.py, Add src/b.py, Delete old.txt, Update src/c.py, Move to src/d.py"),
    ("WebSearch", {"query": "query text"}, "WebSearch: query text"),
    ("WebFetch", {"url": "https://example.org", "prompt": "sum it up"}, "WebFetch: https://example.org"),
    ("Glob", {"pattern": "**/*.py", "path": "/p"}, "Glob: **/*.py in /p"),
    ("TodoWrite", {"todos": [{"content": "a", "status": "pending"}]},
     'TodoWrite todos=[{"content":"a","status":"pending"}]'),
    ("llm_time", {}, "llm_time"),
    ("mcp__srv__tool", {"a": 1, "b": "two"}, "mcp__srv__tool a=1, b=two"),
    (None, {}, "tool"),
])
def test_describe_call(name, args, line):
    assert items.describe_call(name, args) == line


def test_describe_call_is_one_trimmed_line():
    line = items.describe_call("Bash", {"command": "echo " + "x" * 500 + "\necho two"})
    assert "\n" not in line and len(line) <= 200 and line.startswith("Bash: echo xxx") and line.endswith("…")
    assert items.describe_call("X", {"k": "v" * 300}).endswith("…")


# -- classify_user_text / strip_injected -----------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("fix the date parser", ("prompt", None)),
    ("[Request interrupted by user]", ("meta", "interrupt")),
    ("[Request interrupted by user for tool use]", ("meta", "interrupt")),
    ("<turn_aborted>\nThe user interrupted the previous turn on purpose.", ("meta", "interrupt")),
    ("<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>", ("meta", "task_notification")),
    ("<subagent_notification>\nA background task completed.\n</subagent_notification>", ("meta", "task_notification")),
    ("<command-name>/mcp</command-name>\n  <command-message>mcp</command-message>", ("meta", "slash_command")),
    ("<command-message>x:create</command-message>\n<command-name>/x:create</command-name>", ("meta", "slash_command")),
    ("<command-args>--verbose</command-args>", ("meta", "slash_command")),
    ("<local-command-stdout>Reconnected to tidewave.</local-command-stdout>", ("meta", "local_command")),
    ("<local-command-stderr>boom</local-command-stderr>", ("meta", "local_command")),
    ("<local-command-caveat>Caveat: The messages below were generated", ("meta", "local_command")),
    ("Caveat: The messages below were generated by the user while running local commands. DO NOT respond",
     ("meta", "local_command")),
    ("<user_shell_command>\n<command>ls</command>", ("meta", "local_command")),
    ("<environment_context>\n  <cwd>/p</cwd>\n</environment_context>", ("meta", "environment")),
    ("<user_instructions>\nAlways run the tests.\n</user_instructions>", ("meta", "instructions")),
    ("# AGENTS.md instructions for /p\n\n<INSTRUCTIONS>\nUse ruff.\n</INSTRUCTIONS>", ("meta", "instructions")),
    ("<permissions instructions>Filesystem sandboxing: workspace-write.</permissions instructions>",
     ("meta", "instructions")),
    ("<hook_context>ctxd context</hook_context>", ("meta", "injected_context")),
    ("# Conversation context: proj\n\n## Facts\n- budget 30,000", ("meta", "injected_context")),
    ("Earlier turns:\n[ctxd: the full context file is /x/context.md]", ("meta", "injected_context")),
    ("<!-- ctxd:begin created -->\nConversation context of this project", ("meta", "injected_context")),
    ("Your task is to create a detailed summary of the conversation so far, paying close attention to the user's "
     "explicit requests and your previous actions.", ("meta", "compaction_prompt")),
    ("This session is being continued from a previous conversation that ran out of context.",
     ("summary", "compaction")),
    ("<state_snapshot>\n  <overall_goal>x</overall_goal>\n</state_snapshot>", ("summary", "compaction")),
    ("  \n[Request interrupted by user]", ("meta", "interrupt")),
    ("please explain <command-name> tags", ("prompt", None)),
])
def test_classify_user_text(text, expected):
    assert items.classify_user_text(text, "claude") == expected


def test_classify_user_text_of_no_text():
    assert items.classify_user_text(None) == ("meta", "system")


def test_strip_injected():
    text = "<hook_context>\n# Conversation context: proj\n- fact\n</hook_context>\n\nwhat is the budget?"
    assert items.strip_injected(text) == (
        "what is the budget?", "<hook_context>\n# Conversation context: proj\n- fact\n</hook_context>")
    assert items.strip_injected("what is the budget?") == ("what is the budget?", None)
    assert items.strip_injected("<hook_context>unterminated") == ("<hook_context>unterminated", None)
    assert items.strip_injected("a <hook_context>x</hook_context> b") == ("a <hook_context>x</hook_context> b", None)


def test_user_record_keeps_the_injected_block_apart():
    r = items.user_record("<hook_context>ctx</hook_context>\nhi there", session="s", source="gemini", dedup="k")
    assert (r["kind"], r["role"], r["content"], r["data"]) == ("prompt", "user", "hi there",
                                                              {"injected": "<hook_context>ctx</hook_context>"})
    r = items.user_record("<hook_context>ctx</hook_context>", session="s", source="gemini", dedup="k")
    assert (r["kind"], r["subtype"], r["content"]) == ("meta", "injected_context", "<hook_context>ctx</hook_context>")


# -- reparse_legacy ------------------------------------------------------------------------

def test_reparse_legacy_claude_tool_use():
    f = items.reparse_legacy("assistant", '[tool_use Edit] {"file_path": "a.py", "old_string": "x", '
                                          '"new_string": "y"}', "claude")
    assert f == {"kind": "tool_call", "content": "Edit a.py", "tool": "Edit", "call_id": None, "subtype": None,
                 "data": {"args": {"file_path": "a.py", "old_string": "x", "new_string": "y"}, "paths": ["a.py"],
                          "command": None},
                 "legacy": False}


def test_reparse_legacy_codex_calls():
    f = items.reparse_legacy("assistant", '[tool_call shell] {"command":["bash","-lc","rg -l x src"],"workdir":"/p"}',
                             "codex")
    assert (f["kind"], f["tool"], f["content"], f["data"]["command"]) == (
        "tool_call", "shell", "shell: rg -l x src", "rg -l x src")
    f = items.reparse_legacy("assistant", "[tool_call apply_patch] " + PATCH, "codex")
    assert (f["kind"], f["data"]["args"], f["data"]["paths"][:2]) == ("tool_call", PATCH, ["src/a.py", "src/b.py"])
    assert f["content"].startswith("apply_patch: Update src/a.py, Add src/b.py")
    f = items.reparse_legacy("assistant", '[tool_call local_shell] {"type": "exec", "command": ["ls", "-l"]}', "codex")
    assert (f["kind"], f["data"]["command"], f["content"]) == ("tool_call", "ls -l", "local_shell: ls -l")
    f = items.reparse_legacy("assistant", '[tool_call read_file] {"absolute_path": "/p/Makefile"}', "gemini")
    assert (f["content"], f["data"]["paths"]) == ("read_file /p/Makefile", ["/p/Makefile"])
    f = items.reparse_legacy("assistant", "[tool_call llm_time] {}", "llm")
    assert (f["kind"], f["content"], f["data"]) == ("tool_call", "llm_time", {"args": {}, "paths": [], "command": None})


def test_reparse_legacy_results_summaries_and_meta():
    f = items.reparse_legacy("tool", "[error] FAILED 1 test", "claude")
    assert (f["kind"], f["content"], f["data"]) == ("tool_result", "FAILED 1 test",
                                                    {"is_error": True, "exit_code": None, "size": 13})
    f = items.reparse_legacy("tool", "[cancelled] ", "gemini")
    assert (f["kind"], f["content"], f["data"]["is_error"]) == ("tool_result", "", True)
    f = items.reparse_legacy("tool", "src/sync.py\n", "codex")
    assert (f["kind"], f["content"], f["data"]) == ("tool_result", "src/sync.py\n",
                                                    {"is_error": False, "exit_code": None, "size": 12})
    assert items.reparse_legacy("system", "[summary] Fix the flaky test", "claude")["subtype"] == "title"
    f = items.reparse_legacy("system", "[summary] This session is being continued from a previous conversation.",
                             "claude")
    assert (f["kind"], f["subtype"], f["content"]) == (
        "summary", "compaction", "This session is being continued from a previous conversation.")
    f = items.reparse_legacy("system", "[error] [API Error: 429]", "gemini")
    assert (f["kind"], f["subtype"], f["content"]) == ("meta", "error", "[API Error: 429]")
    f = items.reparse_legacy("system", "You are terse.", "jsonl")
    assert (f["kind"], f["subtype"], f["content"], f["legacy"]) == ("meta", "system", "You are terse.", False)
    f = items.reparse_legacy("user", "[Request interrupted by user]", "claude")
    assert (f["kind"], f["subtype"]) == ("meta", "interrupt")
    f = items.reparse_legacy("user", "<hook_context>ctx</hook_context>\nhello", "gemini")
    assert (f["kind"], f["content"], f["data"]) == ("prompt", "hello", {"injected": "<hook_context>ctx</hook_context>"})
    assert items.reparse_legacy("user", "hello", "cli") == {
        "kind": "prompt", "content": "hello", "tool": None, "call_id": None, "subtype": None, "data": None,
        "legacy": False}
    assert items.reparse_legacy("assistant", "Done.", "claude")["kind"] == "reply"


def test_reparse_legacy_marks_what_it_cannot_parse():
    f = items.reparse_legacy("assistant", "[tool_use Edit] {broken json", "claude")
    assert (f["kind"], f["content"], f["legacy"]) == ("reply", "[tool_use Edit] {broken json", True)
    text = "Let me check the time.\n[tool_call llm_time] {}"  # text and a call in one row
    f = items.reparse_legacy("assistant", text, "llm")
    assert (f["kind"], f["content"], f["legacy"]) == ("reply", text, True)
    f = items.reparse_legacy("robot", "beep", "x")
    assert (f["kind"], f["content"], f["legacy"]) == ("meta", "beep", True)
    f = items.reparse_legacy("user", None, "x")
    assert (f["kind"], f["content"], f["legacy"]) == ("prompt", None, True)


_json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                            lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                            max_leaves=12)
_flattened = st.builds(lambda flavour, name, rest: f"[{flavour} {name}] {rest}",
                       st.sampled_from(["tool_use", "tool_call"]), st.text(max_size=12),
                       st.one_of(st.text(max_size=60), _json_values.map(json.dumps)))
_odd = st.one_of(st.none(), st.integers(), st.binary(max_size=20), st.lists(st.text(max_size=5), max_size=3),
                 st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3))


@settings(max_examples=400, deadline=None)
@given(role=st.one_of(st.sampled_from(["user", "assistant", "tool", "system"]), st.text(max_size=8), _odd),
       content=st.one_of(st.text(), _flattened,
                         st.builds(lambda p, t: p + t, st.sampled_from(
                             ["[summary] ", "[error] ", "[cancelled] ", "<hook_context>", "[Request interrupted",
                              "<command-name>", "*** Begin Patch\n*** Update File: "]), st.text()),
                         _odd),
       source=st.one_of(st.none(), st.sampled_from(["claude", "codex", "gemini", "llm", "jsonl", "aider"]),
                        st.text(max_size=5)))
def test_reparse_legacy_never_raises(role, content, source):
    f = items.reparse_legacy(role, content, source)
    assert set(f) == {"kind", "content", "tool", "call_id", "subtype", "data", "legacy"}
    assert f["kind"] in items.KINDS
    if f["legacy"]:
        assert f["content"] is content  # what it cannot parse it keeps as it was
    if f["kind"] == "tool_call":
        assert isinstance(f["content"], str) and "\n" not in f["content"]
        assert set(f["data"]) == {"args", "paths", "command"}
    json.dumps(f["data"])  # what it gives the store is JSON


@settings(max_examples=200, deadline=None)
@given(args=st.dictionaries(st.sampled_from(["file_path", "old_string", "new_string", "command", "x"]),
                            st.text(min_size=1, max_size=20), min_size=1, max_size=4),
       name=st.sampled_from(["Edit", "Write", "Bash", "Read", "Custom"]))
def test_reparse_legacy_reads_back_what_the_old_claude_importer_wrote(args, name):
    old = f"[tool_use {name}] " + json.dumps(args, ensure_ascii=False, separators=(", ", ": "))
    f = items.reparse_legacy("assistant", old, "claude")
    assert (f["kind"], f["tool"], f["data"]["args"], f["legacy"]) == ("tool_call", name, args, False)
    assert f["content"] == items.describe_call(name, args)
