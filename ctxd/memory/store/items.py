"""The typed conversation model: what a stored item is, and how a tool call reads.

Every importer and hook adapter hands ``Store.add_many`` records of one of six
kinds, each with the fields it carries:

- ``prompt``: exactly what the human typed;
- ``reply``: the assistant's text;
- ``tool_call``: ``tool`` (the name), ``call_id``, ``data = {"args", "paths",
  "command"}`` and, as ``content``, one readable line (:func:`describe_call`);
- ``tool_result``: ``tool``, ``call_id`` (of the call it answers), ``data =
  {"is_error", "exit_code", "size"}``, the result text as ``content``;
- ``summary``: a CLI's own compaction summary or session title (``subtype``
  ``"compaction"`` / ``"title"`` / None);
- ``meta``: text a CLI injected on a user line (``subtype``: see META_SUBTYPES).

Every item also has a ``provenance``, who wrote it (PROVENANCES): ``human`` (a prompt a person
typed), ``agent`` (the main agent's replies, calls, results, summaries), ``subagent`` (a
sub-agent's lines and the prompt the main agent wrote for it), ``injected`` (text the CLI
or a hook put on a user line) or ``ctxd`` (ctxd's own text coming back: teach and handoff
prompts, SessionStart context, recall injections). Only ``human`` prompts are the user's;
``ctxd`` items are never conversation (:func:`settle` turns a generated "prompt" into meta).

It also re-reads rows the importers of earlier versions flattened into text
(:func:`reparse_legacy`), for the store migration.

Imported on the AI CLI hook path: standard library only, and nothing heavier
than ``json`` and ``re`` at import time.
"""

import json
import re

TYPE_CHECKING = False  # typing is not imported at run time: the AI CLI hooks import this module
if TYPE_CHECKING:
    from typing import TypedDict

    class Record(TypedDict, total=False):
        """What record() makes (every key) and Store.add_many takes (content and a kind or a
        role at least): one item of the typed model."""

        kind: str  # one of KINDS
        role: str  # ROLE_OF[kind]
        content: str
        session: str
        source: str  # the tool or format it came from: claude, codex, gemini, cli, sync...
        ts: float | None  # when it happened (None: when it is stored)
        dedup: str | None  # unique and stable across re-imports
        importance: float | None
        tool: str | None
        call_id: str | None
        subtype: str | None  # META_SUBTYPES, SUMMARY_SUBTYPES
        data: dict | list | None  # a call's {args, paths, command}; a result's {is_error, exit_code, size}
        provenance: str | None  # one of PROVENANCES; None: settle() decides when it is stored
        legacy: bool

    class TypedFields(TypedDict):
        """The typed fields reparse_legacy() reads back from a row an earlier version flattened."""

        kind: str
        content: str
        tool: str | None
        call_id: str | None
        subtype: str | None
        data: dict | list | None
        legacy: bool

KINDS = ("prompt", "reply", "tool_call", "tool_result", "summary", "meta")
ROLE_OF = {"prompt": "user", "reply": "assistant", "tool_call": "assistant", "tool_result": "tool",
           "summary": "system", "meta": "system"}
_KIND_OF_ROLE = {"user": "prompt", "assistant": "reply", "tool": "tool_result", "system": "meta"}
META_SUBTYPES = ("interrupt", "task_notification", "slash_command", "local_command", "environment",
                 "instructions", "injected_context", "compaction_prompt", "title", "error", "system",
                 "subagent_prompt", "ctxd")
PROVENANCES = ("human", "agent", "subagent", "injected", "ctxd")
SUMMARY_SUBTYPES = ("compaction", "title")

# Tools that change files (their paths are the files a session touched by editing).
EDIT_TOOLS = frozenset({
    "Edit", "Write", "MultiEdit", "NotebookEdit",  # Claude Code
    "apply_patch",  # Codex
    "write_file", "replace", "edit",  # Gemini CLI
    "edit_file", "create_file", "str_replace_editor", "str_replace_based_edit_tool",
})
# Tools that run a shell command.
SHELL_TOOLS = frozenset({"Bash", "shell", "shell_command", "exec_command", "local_shell", "container.exec", "run_shell_command",
                         "bash", "BashOutput"})
_PATH_KEYS = ("file_path", "notebook_path", "absolute_path", "path", "filename", "target_file")
_PATHS_KEYS = ("paths", "file_paths")
_SHELLS = ("bash", "sh", "zsh", "dash", "ksh", "fish")
_PATCH_HEADER = re.compile(r"^\*\*\* (Update File|Add File|Delete File|Move to): *(.+?) *$", re.M)
_PATCH_OPS = {"Update File": "Update", "Add File": "Add", "Delete File": "Delete", "Move to": "Move to"}
_MAX_LINE = 200


def kind_of_role(role):
    """The kind a row with only a role has: user -> prompt, assistant -> reply, tool -> tool_result,
    system (and anything else) -> meta."""
    return _KIND_OF_ROLE.get(role, "meta") if isinstance(role, str) else "meta"


# -- tool calls ---------------------------------------------------------------------

def parse_args(args):
    """Tool arguments as a JSON value: a JSON text is decoded, anything else kept as it is."""
    if isinstance(args, (bytes, bytearray)):
        args = bytes(args).decode("utf-8", "replace")
    if isinstance(args, str):
        s = args.strip()
        if s[:1] in ("{", "[") or s in ("null", "true", "false"):
            try:
                return json.loads(s)
            except ValueError:
                return args
    return args


def _patch_text(name, args):
    """The apply_patch text of a call (``input``/``patch``, or the bare string), or None."""
    if isinstance(args, str):
        return args if "*** " in args else None
    if isinstance(args, dict):
        for k in ("input", "patch", "content"):
            if isinstance(args.get(k), str) and "*** " in args[k]:
                return args[k]
    return None


def patch_ops(text):
    """[(op, path)] of an apply_patch text: op is Update, Add, Delete or "Move to"."""
    if not isinstance(text, str):
        return []
    return [(_PATCH_OPS[m.group(1)], m.group(2)) for m in _PATCH_HEADER.finditer(text)]


def _dedup(seq):
    out = []
    for x in seq:
        if x not in out:
            out.append(x)
    return out


def command_of(name, args):
    """The shell command a call runs, as one string, or None.

    Claude ``Bash`` and Gemini ``run_shell_command`` carry a ``command`` string;
    Codex ``shell``/``local_shell`` an argv list (joined with shlex.join, a
    ``bash -lc "<cmd>"`` wrapper unwrapped) and ``exec_command`` a ``cmd``
    string. A local_shell call's arguments are its ``action``.
    """
    args = parse_args(args)
    if not isinstance(args, dict):
        return None
    if isinstance(args.get("action"), dict) and "command" not in args:
        args = args["action"]  # local_shell_call {"action": {"type": "exec", "command": [...]}}
    cmd = args.get("command")
    if cmd is None:
        cmd = args.get("cmd")
    if isinstance(cmd, str):
        return cmd if cmd.strip() else None
    if isinstance(cmd, list) and cmd and all(isinstance(a, str) for a in cmd):
        base = cmd[0].rsplit("/", 1)[-1]
        if len(cmd) == 3 and base in _SHELLS and cmd[1] in ("-lc", "-c", "-l", "-ic"):
            return cmd[2]
        if len(cmd) == 4 and base in _SHELLS and cmd[1] == "-l" and cmd[2] == "-c":
            return cmd[3]
        import shlex

        return shlex.join(cmd)
    return None


def paths_of(name, args):
    """The paths a tool call targets, in order, each once.

    ``file_path`` (Claude Edit/Write/MultiEdit/Read, Gemini write_file/replace/
    read_file), ``notebook_path`` (NotebookEdit), ``absolute_path``/``path``,
    ``paths`` lists, and the ``*** Update File:`` / ``Add File`` / ``Delete File``
    / ``Move to`` headers of an apply_patch text, given as the call's input or
    inside a shell command (``apply_patch <<'EOF' ... EOF``).
    """
    args = parse_args(args)
    out = []
    patch = _patch_text(name, args) if name == "apply_patch" else None
    if patch is None:
        cmd = command_of(name, args)
        if cmd and "*** Begin Patch" in cmd:
            patch = cmd
    if patch is not None:
        out += [p for _op, p in patch_ops(patch)]
    if isinstance(args, dict):
        for k in _PATH_KEYS:
            v = args.get(k)
            if isinstance(v, str) and v.strip():
                out.append(v)
        for k in _PATHS_KEYS:
            v = args.get(k)
            if isinstance(v, list):
                out += [p for p in v if isinstance(p, str) and p.strip()]
        edits = args.get("edits")
        if isinstance(edits, list):  # MultiEdit-like tools that name a file per edit
            out += [e[k] for e in edits if isinstance(e, dict) for k in ("file_path", "path")
                    if isinstance(e.get(k), str) and e[k].strip()]
    return _dedup(out)


def is_edit(name, args=None):
    """Whether the call changes files: an EDIT_TOOLS tool, or a shell command that applies a patch."""
    if name in EDIT_TOOLS:
        return True
    cmd = command_of(name, args) if args is not None else None
    return bool(cmd and "*** Begin Patch" in cmd)


def edits_of(name, args=None):
    """The paths a call edits (created, changed, deleted or moved to); [] for a call that edits nothing."""
    return paths_of(name, args) if is_edit(name, args) else []


def _one_line(text, limit=_MAX_LINE):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _value(v):
    if isinstance(v, str):
        return v
    try:
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(v)


def describe_call(name, args, paths=None, command=None):
    """One readable line for a tool call: "Edit src/app.py", "Bash: git commit -m 'fix x'",
    "apply_patch: Update src/a.py, Add src/b.py", "WebSearch: query", else "name key=value, ..."."""
    name = name if isinstance(name, str) and name else "tool"
    args = parse_args(args)
    if paths is None:
        paths = paths_of(name, args)
    if command is None:
        command = command_of(name, args)
    patch = _patch_text(name, args) if name == "apply_patch" else None
    if patch is None and command and "*** Begin Patch" in command:
        patch = command
    if patch is not None:
        ops = patch_ops(patch)
        if ops:
            return _one_line("apply_patch: " + ", ".join(f"{op} {p}" for op, p in ops))
    if command:
        return _one_line(f"{name}: {command}")
    d = args if isinstance(args, dict) else {}
    if isinstance(d.get("pattern"), str) and d["pattern"].strip():  # Glob, Grep, search_file_content
        return _one_line(f"{name}: {d['pattern']}" + (f" in {', '.join(paths)}" if paths else ""))
    for k in ("query", "url", "description", "prompt", "question", "request"):
        if isinstance(d.get(k), str) and d[k].strip() and not paths:
            return _one_line(f"{name}: {d[k]}")
    if paths:
        return _one_line(f"{name} {', '.join(paths)}")
    if isinstance(args, dict):
        if not args:
            return name
        return _one_line(name + " " + ", ".join(f"{k}={_value(v)}" for k, v in args.items()))
    if args is None or args == "":
        return name
    return _one_line(f"{name} {_value(args)}")


def call_data(name, args):
    """The ``data`` of a tool_call record: {"args", "paths", "command"}."""
    args = parse_args(args)
    return {"args": args, "paths": paths_of(name, args), "command": command_of(name, args)}


# -- text on a user line ------------------------------------------------------------

_META_PREFIXES = (
    ("[Request interrupted by user", "interrupt"),
    ("<turn_aborted>", "interrupt"),
    ("<task-notification>", "task_notification"),
    ("<subagent_notification>", "task_notification"),
    ("<command-name>", "slash_command"),
    ("<command-message>", "slash_command"),
    ("<command-args>", "slash_command"),
    ("<local-command-stdout>", "local_command"),
    ("<local-command-stderr>", "local_command"),
    ("<local-command-caveat>", "local_command"),
    ("Caveat: The messages below were generated by the user while running local commands", "local_command"),
    ("<bash-input>", "local_command"),
    ("<bash-stdout>", "local_command"),
    ("<bash-stderr>", "local_command"),
    ("<user_shell_command>", "local_command"),
    ("<environment_context>", "environment"),
    ("<session_context>", "environment"),  # Gemini CLI 0.61: its setup turn (date, OS, folders)
    ("<user_instructions>", "instructions"),
    ("# AGENTS.md instructions", "instructions"),
    ("<permissions instructions>", "instructions"),
    ("<INSTRUCTIONS>", "instructions"),
    ("<hook_context>", "injected_context"),
    ("# Conversation context:", "injected_context"),  # what ctxd renders (context.md, SessionStart)
    ("<!-- ctxd:begin", "injected_context"),  # ctxd's block in AGENTS.md / CLAUDE.md / GEMINI.md
    ("<system-reminder>", "system"),
)
_SUMMARY_PREFIXES = (
    "This session is being continued from a previous conversation",  # Claude Code after compaction
    "<state_snapshot>",  # Gemini CLI after /compress
)
# Claude Code's compaction agent is sent these instructions as a user message.
_COMPACTION_PROMPT = re.compile(r"Your task is to create a detailed summary of the conversation so far", re.I)
_CTXD_CONTEXT = "[ctxd: the full context file is"


def classify_user_text(text, source=None):
    """("prompt", None) for what the human typed; ("meta", subtype) for text the CLI injected on a
    user line; ("summary", "compaction") for a compaction summary sent as a user message."""
    if not isinstance(text, str):
        return "meta", "system"
    s = text.lstrip()
    for prefix, subtype in _META_PREFIXES:
        if s.startswith(prefix):
            return "meta", subtype
    for prefix in _SUMMARY_PREFIXES:
        if s.startswith(prefix):
            return "summary", "compaction"
    if _CTXD_CONTEXT in text:
        return "meta", "injected_context"
    if generated_by_ctxd(s):
        return "meta", "ctxd"
    if _COMPACTION_PROMPT.search(s[:2000]):
        return "meta", "compaction_prompt"
    return "prompt", None


# The first line of a `ctxd teach` prompt (ctxd.handoff.teach writes it), in either language.
TEACH_PROMPT_HEAD = r"# (?:Teaching session: |教学会话：)"
_TEACH_PROMPT = re.compile(r"^\s*" + TEACH_PROMPT_HEAD)


def is_teach_prompt(role, content, source=None):
    """A teach prompt: the system message ``ctxd teach`` records (source ``teach``), or
    the same prompt as it reached the AI tool (a user message starting with its title,
    as hooks and importers record ``ctxd teach | claude``)."""
    if role == "system" and source == "teach":
        return True
    return role in ("user", "system") and bool(_TEACH_PROMPT.match(content or ""))


# What ctxd itself prints for an AI tool, by its first line: the teach prompt, a handoff as
# markdown or JSON, the SessionStart / context.md text, a per-prompt recall, its AGENTS.md block.
_GENERATED = None


def generated_by_ctxd(text):
    """Whether *text* is (starts with) something ctxd generated: pasted or piped back into an AI
    CLI it is ctxd's, not the user's words."""
    global _GENERATED
    if not isinstance(text, str):
        return False
    if _GENERATED is None:
        _GENERATED = re.compile(
            r"\A\s*(?:" + TEACH_PROMPT_HEAD +
            r"|# Handoff: [^\n]*\n\n[^\n]*session `"
            r"|# Conversation context:"
            r"|Relevant earlier turns of this project \(ctxd recall"
            r"|<!-- ctxd:begin"
            r'|\{\s*"schema_version"\s*:\s*"\d[^"]*"\s*,[\s\S]{0,400}"session_id")')
    return bool(_GENERATED.match(text[:1000])) or _CTXD_CONTEXT in text[:20000]


def provenance_of(kind, subtype=None, content=None):
    """Who wrote an item of this kind: ``human`` for a prompt, ``ctxd`` for ctxd's own text,
    ``subagent`` for a sub-agent's prompt, ``injected`` for other meta, else ``agent``."""
    if kind == "prompt":
        return "ctxd" if generated_by_ctxd(content) else "human"
    if kind == "meta":
        if subtype == "ctxd" or generated_by_ctxd(content):
            return "ctxd"
        return "subagent" if subtype == "subagent_prompt" else "injected"
    return "agent"


def settle(rec: "Record") -> tuple[str, str | None, str]:
    """(kind, subtype, provenance) a record is stored with: its own provenance if it has a known one,
    else provenance_of(); a "prompt" ctxd generated or a sub-agent was given is meta, never a turn."""
    kind, subtype, content = rec.get("kind"), rec.get("subtype"), rec.get("content")
    provenance = rec.get("provenance")
    if provenance not in PROVENANCES:
        provenance = provenance_of(kind, subtype, content)
    if kind == "prompt" and generated_by_ctxd(content):
        return "meta", "ctxd", "ctxd"
    if kind == "prompt" and provenance == "subagent":
        return "meta", "subagent_prompt", "subagent"
    if kind == "prompt" and provenance != "human":
        return "meta", subtype or "injected_context", provenance
    return kind, subtype, provenance


_HOOK_CONTEXT = re.compile(r"\A\s*<hook_context>.*?</hook_context>[ \t]*\n?", re.S)


def strip_injected(text):
    """(what the user typed, the injected block or None): a leading ``<hook_context>…</hook_context>``
    block (Gemini CLI puts SessionStart context in front of the prompt) comes off."""
    if not isinstance(text, str):
        return text, None
    m = _HOOK_CONTEXT.match(text)
    if not m:
        return text, None
    return text[m.end():].lstrip("\n"), m.group(0).strip()


# -- records ------------------------------------------------------------------------

def record(kind: str, content: str, *, session: str, source: str, dedup: str | None, ts: float | None = None,
           importance: float | None = None, tool: str | None = None, call_id: str | None = None,
           subtype: str | None = None, data: dict | list | None = None, provenance: str | None = None) -> "Record":
    """A dict for Store.add_many (role included, so readers of the role alone keep working)."""
    return {"kind": kind, "role": ROLE_OF[kind], "content": content, "session": session, "source": source,
            "ts": ts, "dedup": dedup, "importance": importance, "tool": tool, "call_id": call_id,
            "subtype": subtype, "data": data, "provenance": provenance}  # None: settle() decides when stored


def call_record(name: str | None, args: object, *, call_id: str | None = None, **common: object) -> "Record":
    """A tool_call record: content describe_call(...), data call_data(...)."""
    data = call_data(name, args)
    content = describe_call(name, data["args"], data["paths"], data["command"])
    return record("tool_call", content, tool=name if isinstance(name, str) else None,
                  call_id=call_id or None, data=data, **common)


def result_record(text: str, *, tool: str | None = None, call_id: str | None = None, is_error: bool = False,
                  exit_code: int | None = None, **common: object) -> "Record":
    """A tool_result record: data {"is_error", "exit_code", "size"}."""
    text = text if isinstance(text, str) else ""
    return record("tool_result", text, tool=tool, call_id=call_id or None,
                  data={"is_error": bool(is_error), "exit_code": exit_code, "size": len(text)}, **common)


def user_record(text: str, **common: object) -> "Record":
    """A record for text found on a user line: a prompt, or meta/summary when the CLI injected it.
    A leading <hook_context> block is kept in data["injected"], not in the prompt."""
    typed, injected = strip_injected(text)
    kind, subtype = classify_user_text(typed if injected is not None and typed.strip() else text)
    data = {"injected": injected} if injected is not None and kind == "prompt" else None
    if injected is not None and not typed.strip():
        typed = text
    return record(kind, typed if data else text, subtype=subtype, data=data, **common)


# -- rows the earlier importers flattened -------------------------------------------

_LEGACY_CALL = re.compile(r"\A\[(tool_use|tool_call) ([^\]\s]*)\] ?(.*)\Z", re.S)
_LEGACY_STATUS = re.compile(r"\A\[(error|cancelled)\] ?(.*)\Z", re.S)
_LEGACY_SUMMARY = re.compile(r"\A\[summary\] ?(.*)\Z", re.S)


def _typed(kind: str, content: str, tool: str | None = None, call_id: str | None = None, subtype: str | None = None,
           data: dict | list | None = None, legacy: bool = False) -> "TypedFields":
    return {"kind": kind, "content": content, "tool": tool, "call_id": call_id, "subtype": subtype,
            "data": data, "legacy": legacy}


def _reparse(role, content, source):
    if role == "assistant":
        m = _LEGACY_CALL.match(content)
        if m:
            flavour, name, rest = m.groups()
            if name == "local_shell" and flavour == "tool_call":
                args = parse_args(rest)
                if isinstance(args, dict) and "command" in args and "action" not in args:
                    args = {"action": args}
            elif flavour == "tool_use":
                try:
                    args = json.loads(rest) if rest.strip() else {}
                except ValueError:
                    return _typed("reply", content, legacy=True)
            else:
                args = parse_args(rest) if rest.strip() else {}
            data = call_data(name or None, args)
            return _typed("tool_call", describe_call(name or None, data["args"], data["paths"], data["command"]),
                          tool=name or None, data=data)
        if "\n[tool_call " in content or "\n[tool_use " in content:
            return _typed("reply", content, legacy=True)  # text and calls in one row: left as it was
        return _typed("reply", content)
    if role == "tool":
        m = _LEGACY_STATUS.match(content)
        text = m.group(2) if m else content
        return _typed("tool_result", text, data={"is_error": bool(m), "exit_code": None, "size": len(text)})
    if role == "system":
        m = _LEGACY_SUMMARY.match(content)
        if m:
            text = m.group(1)
            if text.lstrip().startswith(_SUMMARY_PREFIXES):
                subtype = "compaction"
            elif source == "claude" and "\n" not in text.strip():
                subtype = "title"  # Claude Code's {"type": "summary"} lines name the session
            else:
                subtype = None
            return _typed("summary", text, subtype=subtype)
        m = _LEGACY_STATUS.match(content)
        if m and m.group(1) == "error":
            return _typed("meta", m.group(2), subtype="error")
        return _typed("meta", content, subtype="system")
    if role == "user":
        typed, injected = strip_injected(content)
        if injected is not None and typed.strip():
            kind, subtype = classify_user_text(typed, source)
            if kind == "prompt":
                return _typed("prompt", typed, data={"injected": injected})
            return _typed(kind, content, subtype=subtype)
        kind, subtype = classify_user_text(content, source)
        return _typed(kind, content, subtype=subtype)
    return _typed(kind_of_role(role), content, legacy=True)


def reparse_legacy(role: str, content: str, source: str | None = None) -> "TypedFields":
    """The typed fields {kind, content, tool, call_id, subtype, data, legacy} of a row an earlier
    version stored with only a role and flattened text. What cannot be re-parsed keeps its
    content, gets the kind its role implies and ``legacy: True``. Never raises."""
    try:
        if not isinstance(content, str):
            return _typed(kind_of_role(role), content, legacy=True)
        return _reparse(role, content, source)
    except Exception:  # noqa: BLE001 - a migration must never stop on one odd row
        return _typed(kind_of_role(role), content, legacy=True)
