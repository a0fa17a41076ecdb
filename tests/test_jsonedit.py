"""ctxd.integrations.jsonedit: settings change only where ctxd's entries are, in any layout."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxd.agents import ai_cli
from ctxd.integrations import install as inst
from ctxd.integrations import jsonedit

GROUPS = {e: inst._group(e, m, "/home/ada/.local/bin/ctxd chat hook claude", 30, {})
          for e, m in ai_cli("claude").hook_events}

keys = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=10))
values = st.recursive(scalars, lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(keys, c, max_size=4)),
                      max_leaves=12)
hook_lists = st.lists(st.fixed_dictionaries({"hooks": st.lists(st.fixed_dictionaries(
    {"type": st.just("command"), "command": st.sampled_from(["echo hi", "./guard.sh", "notify-send done"])}),
    min_size=1, max_size=2)}, optional={"matcher": st.sampled_from(["Bash", "startup", ""])}), max_size=3)
settings_objs = st.fixed_dictionaries({}, optional={
    "model": st.text(max_size=6), "permissions": values, "env": st.dictionaries(keys, st.text(max_size=6), max_size=3),
    # (an empty "hooks": {} or event list of the user's is not kept: after uninstall it reads as ctxd's leftover)
    "hooks": st.dictionaries(st.sampled_from(["Stop", "SessionStart", "PreToolUse", "Notification"]),
                             hook_lists.filter(bool), min_size=1, max_size=3)})
layouts = st.tuples(st.sampled_from([None, 2, 4, "\t", 1]), st.sampled_from([": ", ":"]), st.booleans(), st.booleans())


def render(value, layout):
    indent, kv, final_newline, crlf = layout
    text = json.dumps(value, indent=indent, separators=("," if indent is not None else ", ", kv), ensure_ascii=False)
    if final_newline:
        text += "\n"
    return text.replace("\n", "\r\n") if crlf else text


def round_trip(text, comments=False):
    data = jsonedit.loads(text, comments)
    inst.merge_hooks(data, json.loads(json.dumps(GROUPS)))
    installed = jsonedit.edit(text, data, comments)
    assert jsonedit.loads(installed, comments) == data
    back = jsonedit.loads(installed, comments)
    inst.remove_hooks(back)
    return installed, jsonedit.edit(installed, back, comments)


@settings(max_examples=300, deadline=None)
@given(settings_objs, layouts)
def test_install_then_uninstall_gives_the_text_back(value, layout):
    text = render(value, layout)
    assert jsonedit.edit(text, json.loads(text)) == text  # no change, no edit
    installed, back = round_trip(text)
    assert back == text
    if layout[0] is not None and value:
        # nothing re-indented: every line of theirs is there, in order (a line may gain the comma
        # before ctxd's new entries)
        new_lines = iter(l.rstrip(",\r") for l in installed.split("\n"))
        assert all(any(l.rstrip(",\r") == n for n in new_lines) for l in text.split("\n"))


CLAUDE_LIKE = """{
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {
        "allow": ["Bash(npm run lint)", "Bash(npm test:*)"],
        "deny": ["Read(./.env)"]
    },
    "env": {"FOO": "bar"},
    "hooks": {
        "PostToolUse": [
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "prettier --write"}]}
        ]
    }
}"""

GEMINI_JSONC = """// Gemini CLI settings for this repo
{
  "general": {
    "vimMode": true, // I like it
  /* the model */ "model": {"name": "gemini-2.5-pro"}
  },
  "hooks": {
    "BeforeTool": [
      // keep this guard
      {"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "./guard.sh"}]}
    ]
  }
}
"""


@pytest.mark.parametrize("text", [CLAUDE_LIKE, CLAUDE_LIKE + "\n", CLAUDE_LIKE.replace("    ", "\t"),
                                  CLAUDE_LIKE.replace("    ", "  ").replace("\n", "\r\n")])
def test_one_line_arrays_and_inline_objects_stay_as_written(text):
    installed, back = round_trip(text)
    assert back == text
    assert '"allow": ["Bash(npm run lint)", "Bash(npm test:*)"]' in installed
    assert '{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "prettier --write"}]}' in installed
    nl = "\r\n" if "\r\n" in text else "\n"
    assert "\n" not in installed.replace(nl, "")  # the file's own line ends
    unit = "\t" if "\t" in text else ("  " if "\r\n" in text else "    ")
    assert f'{nl}{unit}{unit}"SessionStart": [' in installed  # ctxd's entries in the file's indentation


def test_comments_are_kept():
    installed, back = round_trip(GEMINI_JSONC, comments=True)
    assert back == GEMINI_JSONC
    for comment in ("// Gemini CLI settings for this repo", "// I like it", "/* the model */", "// keep this guard"):
        assert comment in installed


@pytest.mark.parametrize("bad", ['{"a": 1,}', '{"a": 1} x', '{"a": 1, "a": 2}', "{'a': 1}", '{"a": /* open'])
def test_what_is_not_json_is_refused(bad):
    with pytest.raises(jsonedit.EditError):
        jsonedit.parse(bad, comments=True)


def test_json_equality_is_strict():
    assert not jsonedit.same(True, 1) and not jsonedit.same(1, 1.0) and jsonedit.same({"a": [1]}, {"a": [1]})
