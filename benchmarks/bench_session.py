"""Session memory on real sessions: is what `ctxd context --budget 4000` and the SessionStart
injection tell the next session true, clean and complete?

Each transcript in ../shared/data/real-transcripts/ (claude/*.jsonl, claude/daaain/*.jsonl,
codex/*.jsonl, gemini/*, aider/*) is imported alone into a fresh isolated project, as a user
imports one (`ctxd chat import FILE`); then all Claude and Codex transcripts together make one
multi-session project. For each: `ctxd context --budget 4000` (markdown), the SessionStart
injection (`ctxd chat hook claude`, its additionalContext), and `ctxd context --budget B` for
B in 300, 1000, 2000 (hard caps; commits kept at 2000).

Counted in the session memory part of each output (ground truth read from the raw files here, with
code of its own, never through ctxd's importers or its renderer's logic):

false lines
  - Current work holding none of: the last typed prompt, the todo in progress, text of the last
    assistant message;
  - a Pending line that is neither an open todo of the last todo list (in time, of any session) (TodoWrite, update_plan,
    write_todos, TaskCreate/TaskUpdate) nor text of a typed prompt; a completed todo shown there;
  - "not fixed" for a command whose last run (a command starting the same) succeeded;
  - a prompt written for a subagent (isSidechain lines, Task/Agent inputs) shown as the user's;
  - ctxd's tutor or handoff text in a coding context.
noise lines
  - narration ("Let me…", "Now I'll…", "I need to…", a line leading into a tool call with ":")
    outside the user's own words;
  - a bullet that starts or ends inside a word of the source text (ends: unless marked with …,
    then still false when the cut falls inside a word);
  - plumbing: raw JSON, escapes, output-file pointers, "characters omitted", compaction
    boilerplate, XML tags, stray `**`, empty labels ("Optional Next Step:"), empty error entries,
    CLI wrappers; near-duplicate lines.
presence
  - the 10 most-edited files, the last 5 typed requests, commit subjects, open todos.

A file counts as present when its last two path components appear; a request when its first 60
characters (whitespace collapsed) do, or for a redacted request its len/sha stamp; a commit or
todo when its text does. What it does not measure: the dev data holds no `git commit`, no
compaction summary of Claude and no TaskCreate (unit tests cover those), and its Codex rollouts
are redacted (no files, plans or commits to find).

Targets: 0 false and 0 noise lines; >= 80 % files, >= 80 % requests, >= 60 % commits, >= 80 %
todos; SessionStart <= 10,000 characters; every budget a hard cap.
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import REPO, isolated_env  # noqa: E402

DATA = os.path.join(os.path.dirname(REPO), "shared", "data", "real-transcripts")
BUDGET = 4000
SMALL = (300, 1000, 2000)
TARGETS = {"files": 0.8, "requests": 0.8, "commits": 0.6, "todos": 0.8}
SRC = None  # --ctxd-src: measure another ctxd checkout


# -- ground truth, from the raw files ---------------------------------------------------------

EDIT_NAMES = {"Edit", "Write", "MultiEdit", "NotebookEdit", "write_file", "replace"}
TODO_NAMES = {"TodoWrite", "update_plan", "write_todos"}
_INJECTED = ("<", "[Request interrupted", "Caveat:", "This session is being continued", "# AGENTS.md",
             "# Conversation context")
_PATCH = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.M)
_COMMIT_RESULT = re.compile(r"(?m)^\[[^\]\s]+(?: \(root-commit\))? [0-9a-f]{7,40}\] (.+)$")
_EXIT = re.compile(r"(?:Process exited with code|Exit code:?) (-?\d+)")


def _lines(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                yield json.loads(line)
            except ValueError:
                continue


def _strings(obj, out):
    """Every string in a JSON value (the text the memory may quote)."""
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _strings(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _strings(v, out)


def _commit_from_command(cmd):
    if "git" not in cmd or "commit" not in cmd:
        return None
    m = re.search(r"<<-?\s*'?(\w+)'?\n(.*?)\n", cmd, re.S)
    if m:
        return m.group(2).strip() or None
    m = re.search(r"-[a-z]*m\s+(?:\"([^\"]+)\"|'([^']+)'|(\S+))", cmd)
    if m:
        return (m.group(1) or m.group(2) or m.group(3)).splitlines()[0].strip()
    return None


def _truth():
    return {"edits": {}, "requests": [], "commits": [], "todos": None, "last_assistant": "", "subagent": [],
            "runs": [], "corpus": [], "ts": "", "todo_ts": ""}


def _todo_items(lst, text_keys=("content", "step", "description", "subject")):
    out = []
    for t in lst or []:
        if isinstance(t, dict):
            text = next((t[k] for k in text_keys if isinstance(t.get(k), str) and t[k].strip()), None)
            if text:
                out.append((text, str(t.get("status") or "pending").lower()))
    return out


def truth_claude(path):
    t = _truth()
    pending = {}  # tool_use id -> (kind, value)
    tasks, task_n = {}, 0
    for d in _lines(path):
        if not isinstance(d, dict):
            continue
        _strings(d.get("message"), t["corpus"])
        if isinstance(d.get("summary"), str):
            t["corpus"].append(d["summary"])
        msg = d.get("message") if isinstance(d.get("message"), dict) else {}
        content = msg.get("content")
        t["ts"] = max(t["ts"], d.get("timestamp") or "")
        if d.get("type") == "user" and d.get("isSidechain"):
            texts = [content] if isinstance(content, str) else [
                c.get("text", "") for c in content or [] if isinstance(c, dict) and c.get("type") == "text"]
            t["subagent"] += [x for x in texts if x.strip()]
            continue
        if d.get("type") == "user" and not d.get("isMeta") and not d.get("isCompactSummary"):
            texts = [content] if isinstance(content, str) else [
                c.get("text", "") for c in content or [] if isinstance(c, dict) and c.get("type") == "text"]
            for x in texts:
                if x.strip() and not x.lstrip().startswith(_INJECTED):
                    t["requests"].append((d.get("timestamp") or "", x))
            for c in content if isinstance(content, list) else []:
                if not (isinstance(c, dict) and c.get("type") == "tool_result" and c.get("tool_use_id") in pending):
                    continue
                out = c.get("content")
                out = out if isinstance(out, str) else " ".join(
                    x.get("text", "") for x in out or [] if isinstance(x, dict))
                kind, value = pending.pop(c["tool_use_id"])
                ok = not c.get("is_error")
                if kind == "bash":
                    t["runs"].append((value, ok))
                    m = _COMMIT_RESULT.search(out or "")
                    if m and ok:
                        t["commits"].append(m.group(1).strip())
                    elif ok and _commit_from_command(value):
                        t["commits"].append(_commit_from_command(value))
                elif kind == "task" and ok:
                    task_n += 1
                    m = re.search(r"Task #?(\w+)", out or "")
                    tasks[m.group(1) if m else str(task_n)] = [value, "pending"]
                    t["todos"] = list(tasks.values())
        if d.get("type") == "assistant" and isinstance(content, list):
            texts = [c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text"
                     and c.get("text", "").strip()]
            if texts:
                t["last_assistant"] = texts[-1]
            for c in content:
                if not isinstance(c, dict) or c.get("type") != "tool_use":
                    continue
                inp = c.get("input") if isinstance(c.get("input"), dict) else {}
                name = c.get("name")
                if name in EDIT_NAMES:
                    p = inp.get("file_path") or inp.get("notebook_path")
                    if p:
                        t["edits"][p] = t["edits"].get(p, 0) + 1
                elif name in TODO_NAMES and isinstance(inp.get("todos"), list):
                    t["todos"] = [list(x) for x in _todo_items(inp["todos"])]
                    t["todo_ts"] = d.get("timestamp") or t["todo_ts"]
                elif name == "TaskCreate" and inp.get("subject"):
                    pending[c.get("id")] = ("task", inp["subject"])
                elif name == "TaskUpdate":
                    tid = str(inp.get("taskId", "")).lstrip("#")
                    if tid in tasks and isinstance(inp.get("status"), str):
                        tasks[tid][1] = inp["status"]
                        if inp["status"] == "deleted":
                            del tasks[tid]
                        t["todos"] = list(tasks.values())
                elif name in ("Task", "Agent") and isinstance(inp.get("prompt"), str):
                    t["subagent"].append(inp["prompt"])
                elif name == "Bash" and isinstance(inp.get("command"), str):
                    pending[c.get("id")] = ("bash", inp["command"])
    for kind, value in pending.values():
        if kind == "bash" and _commit_from_command(value):
            t["commits"].append(_commit_from_command(value))
    return t


def truth_codex(path):
    t = _truth()
    items = []  # user messages as response items: the requests when no user_message event exists
    calls = {}
    for d in _lines(path):
        p = d.get("payload") if isinstance(d, dict) else None
        if not isinstance(p, dict):
            continue
        _strings(p, t["corpus"])
        t["ts"] = max(t["ts"], d.get("timestamp") or "")
        if d.get("type") == "event_msg" and p.get("type") == "user_message" and isinstance(p.get("message"), str):
            x = p["message"]
            if x.strip() and not x.lstrip().startswith(_INJECTED):
                t["requests"].append((d.get("timestamp") or "", x))
        if d.get("type") == "event_msg" and p.get("type") == "agent_message" and isinstance(p.get("message"), str):
            t["last_assistant"] = p["message"]
        if d.get("type") != "response_item":
            continue
        if p.get("type") == "message" and p.get("role") == "user":
            for c in p.get("content") or []:
                x = c.get("text") if isinstance(c, dict) and c.get("type") == "input_text" else None
                if isinstance(x, str) and x.strip() and not x.lstrip().startswith(_INJECTED):
                    items.append((d.get("timestamp") or "", x))
        if p.get("type") == "message" and p.get("role") == "assistant":
            x = " ".join(c.get("text", "") for c in p.get("content") or [] if isinstance(c, dict))
            if x.strip():
                t["last_assistant"] = x
        if p.get("type") in ("function_call_output", "custom_tool_call_output") and p.get("call_id") in calls:
            out = p.get("output")
            out = out if isinstance(out, str) else json.dumps(out)
            m = _EXIT.search(out or "")
            try:
                meta = json.loads(out).get("metadata", {})
                code = meta.get("exit_code")
            except (ValueError, AttributeError):
                code = int(m.group(1)) if m else None
            cmd = calls.pop(p["call_id"])
            t["runs"].append((cmd, code in (None, 0)))
        if p.get("type") in ("custom_tool_call", "function_call"):
            raw = p.get("input") if p.get("type") == "custom_tool_call" else p.get("arguments")
            raw = raw if isinstance(raw, str) else ""
            try:
                args = json.loads(raw)
            except ValueError:
                args = raw
            text = raw if p.get("name") == "apply_patch" else json.dumps(args)
            if p.get("name") == "apply_patch" or "*** Begin Patch" in text:
                patch = args if isinstance(args, str) else json.dumps(args)
                patch = patch.encode().decode("unicode_escape", "replace") if "\\n" in patch else patch
                for m in _PATCH.finditer(patch):
                    f = m.group(1) or m.group(2)
                    t["edits"][f.strip()] = t["edits"].get(f.strip(), 0) + 1
            if p.get("name") == "update_plan" and isinstance(args, dict) and isinstance(args.get("plan"), list):
                t["todos"] = [list(x) for x in _todo_items(args["plan"])]
                t["todo_ts"] = d.get("timestamp") or t["todo_ts"]
            cmd = args.get("cmd") or args.get("command") if isinstance(args, dict) else None
            if isinstance(cmd, list):
                cmd = " ".join(cmd[2:] if len(cmd) == 3 and cmd[1] in ("-lc", "-c") else cmd)
            if isinstance(cmd, str):
                calls[p.get("call_id")] = cmd
                s = _commit_from_command(cmd)
                if s:
                    t["commits"].append(s)
    if not t["requests"]:
        t["requests"] = items
    return t


def _gemini_messages(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        whole = json.loads(text)
        if isinstance(whole, dict) and isinstance(whole.get("messages"), list):
            return whole["messages"]
        if isinstance(whole, list):
            return whole
    except ValueError:
        pass
    msgs = []
    for line in text.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if not isinstance(d, dict):
            continue
        if isinstance(d.get("$set"), dict) and isinstance(d["$set"].get("messages"), list):
            msgs = list(d["$set"]["messages"])
        elif d.get("type") in ("user", "gemini", "model"):
            msgs.append(d)
    return msgs


def _gemini_text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def truth_gemini(path):
    t = _truth()
    for m in _gemini_messages(path):
        if not isinstance(m, dict):
            continue
        _strings(m, t["corpus"])
        role = m.get("type") or m.get("role")
        x = _gemini_text(m.get("content") if "content" in m else m.get("parts"))
        if role == "user" and x.strip() and not x.lstrip().startswith(_INJECTED):
            t["requests"].append((m.get("timestamp") or "", x))
        elif role in ("gemini", "model") and x.strip():
            t["last_assistant"] = x
        for c in m.get("toolCalls") or []:
            if not isinstance(c, dict):
                continue
            args = c.get("args") if isinstance(c.get("args"), dict) else {}
            ok = c.get("status") == "success"
            if c.get("name") in EDIT_NAMES and ok and args.get("file_path"):
                t["edits"][args["file_path"]] = t["edits"].get(args["file_path"], 0) + 1
            if c.get("name") in TODO_NAMES and isinstance(args.get("todos"), list):
                t["todos"] = [list(x) for x in _todo_items(args["todos"])]
            if c.get("name") == "run_shell_command" and isinstance(args.get("command"), str):
                t["runs"].append((args["command"], ok))
    return t


def truth_aider(path):
    t = _truth()
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    t["corpus"].append(text)
    cur, reply = [], []
    for line in text.splitlines():
        if line.startswith("#### "):
            cur.append(line[5:].rstrip())
        else:
            if cur:
                t["requests"].append(("", "\n".join(cur)))
                cur, reply = [], []
            if line.strip() and not line.startswith(("> ", "# aider chat")):
                reply.append(line)
                t["last_assistant"] = "\n".join(reply)
    if cur:
        t["requests"].append(("", "\n".join(cur)))
    return t


def truth_of(path):
    rel = os.path.relpath(path, DATA)
    if rel.startswith("codex/"):
        return truth_codex(path)
    if rel.startswith("gemini/"):
        return truth_gemini(path)
    if rel.startswith("aider/"):
        return truth_aider(path)
    return truth_claude(path)


def merged_truth(paths):
    """The truth of one project holding several sessions: edits summed, requests in time order,
    commits of all, the last todo list, the last assistant text of the newest session."""
    t = _truth()
    newest = ""
    for p in paths:
        x = truth_of(p)
        for f, n in x["edits"].items():
            t["edits"][f] = t["edits"].get(f, 0) + n
        t["requests"] += x["requests"]
        t["commits"] += x["commits"]
        t["subagent"] += x["subagent"]
        t["runs"] += x["runs"]
        t["corpus"] += x["corpus"]
        if x["ts"] >= newest:
            newest, t["last_assistant"] = x["ts"], x["last_assistant"]
        if x["todos"] is not None and x["todo_ts"] >= t["todo_ts"]:
            t["todos"], t["todo_ts"] = x["todos"], x["todo_ts"]
    t["requests"].sort(key=lambda r: r[0])
    return t


# -- checking an output -----------------------------------------------------------------------

_STAMP = re.compile(r"\[REDACTED_\w+ (len=\d+ sha=\w+)\]")


def _norm(s):
    return " ".join(s.split())


def _loose(s):
    """Text compared loosely: markdown and punctuation marks out, whitespace collapsed, lower case."""
    s = _STAMP.sub(lambda m: m.group(1), s or "")
    s = re.sub(r"[*_`#>|]+", " ", s)
    return " ".join(re.sub(r"[^\w\s]", " ", s.lower()).split())


def has_file(path, text):
    tail = "/".join(path.rstrip("/").split("/")[-2:])
    return tail in text


def has_request(req, text):
    m = _STAMP.fullmatch(req.strip())
    if m:
        return m.group(1) in text
    return _norm(req)[:60] in _norm(text) or _loose(req)[:60] in _loose(text)


def has_text(s, text):
    return _norm(s)[:80] in _norm(text) or _loose(s)[:80] in _loose(text)


def memory_sections(text):
    """{section: [bullet text]} of the "Session memory" part of a markdown output."""
    out, cur, inside = {}, None, False
    for line in text.splitlines():
        if re.match(r"^#{2,3} ", line):
            inside = line.lstrip("#").strip() == "Session memory"
            cur = None
            continue
        if not inside:
            continue
        m = re.match(r"^\*\*(.+)\*\*$", line.strip())
        if m:
            cur = m.group(1)
            out.setdefault(cur, [])
        elif cur and line.startswith("- "):
            out[cur].append(line[2:])
    return out


def user_turns(text):
    """The texts shown as the user's in the recent turns."""
    out, grab = [], False
    for line in text.splitlines():
        if re.match(r"^\*\*user\*\* #\d+:", line):
            grab = True
            continue
        if grab:
            out.append(line)
            grab = False
    return out


_LABELS = re.compile(r"^(?:\[[ x~-]\] |In progress: |Last report: |Open question: |Unanswered request: |"
                     r"Goal: |Committed(?: \d{4}-\d\d-\d\d)?: )")
_STATUS = re.compile(r" \((?:pending|in progress|completed|cancelled)\)$")
NARRATION = re.compile(r"(?i)^(?:(?:ok|okay|now|so|first|next|then|great|good|perfect|alright)[,!.]?\s+)*"
                       r"(?:let me|let's|i'll|i will|i need to|i'm going to|i am going to|i should|we need to|"
                       r"now i)\b")
PLUMBING = [
    ("raw JSON", re.compile(r"^\s*(?:\{\s*\"|\[\s*\{\s*\")|\"\w+\":\s*[\[{\"]")),
    ("escape", re.compile(r"\\[nt\"]|\\u00[0-9a-f]{2}|\x1b\[")),
    ("output-file pointer", re.compile(r"</?output-file>|Output is being written to:|Read the output file|"
                                       r"characters omitted|full output \(|/outputs?/\S+\.txt|ctxd chat output \d",
                                       re.I)),
    ("compaction boilerplate", re.compile(r"(?i)read the full transcript at|before compaction|"
                                          r"continued from a previous conversation|continue the conversation from")),
    ("XML tag", re.compile(r"</?[a-z_][\w-]*>|</[a-z_]+\s*$")),
    ("flattened tool call", re.compile(r"\[tool_(?:use|call|result) ")),
    ("Read line numbers", re.compile(r"^\s*\d+→")),
    ("tool boilerplate", re.compile(r"REMINDER: You MUST include the sources|Todos have been modified successfully|"
                                    r"The user doesn't want to proceed with this tool use")),
    ("empty error entry", re.compile(r"failed: failed\b|`\w+` failed\s*—")),
]


def _bare(line):
    return _STATUS.sub("", _LABELS.sub("", line)).strip()


def _word_char(c):
    return c.isalnum() or c == "_"


def _cut_inside_word(piece, corpus, at_start):
    """Whether every occurrence of *piece* in the source text sits inside a longer word."""
    if len(piece) < 6:
        return False
    hits = 0
    for src in corpus:
        i = src.find(piece)
        while i != -1:
            hits += 1
            c = src[i - 1] if at_start and i > 0 else (src[i + len(piece)] if not at_start and
                                                       i + len(piece) < len(src) else "")
            if not (c and _word_char(c)):
                return False
            i = src.find(piece, i + 1)
            if hits > 50:
                return False
    return hits > 0


def check(text, t):
    """(false lines, noise lines) of one output: [(rule, line)] each."""
    secs = memory_sections(text)
    typed = [r for _ts, r in t["requests"]]
    typed_loose = [_loose(r) for r in typed]
    todos = t["todos"] or []
    open_todos = [x for x, s in todos if s not in ("completed", "cancelled", "deleted")]
    done_todos = [x for x, s in todos if s == "completed"]
    in_progress = [x for x, s in todos if s == "in_progress"]
    false, noise = [], []

    def from_typed(line):
        b = _loose(line.rstrip("…").strip())
        return bool(b) and any(b[:80] in r for r in typed_loose)

    cw = secs.get("Current work", [])
    if cw:
        last = typed[-1] if typed else None
        said = _loose(t["last_assistant"])
        hold = False
        for line in cw:
            b = _bare(line).rstrip("…").strip()
            if last and (_loose(last)[:60] in _loose(b) or (_loose(b) and _loose(b) in _loose(last))):
                hold = True
            if any(_loose(x)[:60] in _loose(b) for x in in_progress):
                hold = True
            if line.startswith("Last report: ") and _loose(b) and _loose(b) in said:
                hold = True
        if not hold:
            false.append(("current work", " | ".join(cw)))
    for line in secs.get("Pending tasks", []):
        b = _bare(line).rstrip("…").strip()
        if any(_loose(b) == _loose(x) for x in done_todos):
            false.append(("completed todo shown as pending", line))
        elif not any(_loose(x)[:60] in _loose(b) or _loose(b) in _loose(x) for x in open_todos) and not from_typed(b):
            false.append(("pending neither open todo nor typed", line))
    for line in secs.get("Errors and fixes", []):
        if "not fixed" not in line:
            continue
        m = re.match(r"`([^`]+)`", line)
        if not m:
            continue
        shown = m.group(1).rstrip("…").strip()
        runs = [ok for cmd, ok in t["runs"] if _norm(cmd.splitlines()[0] if cmd else "").startswith(_norm(shown))]
        if runs and runs[-1]:
            false.append(("not fixed but the last run succeeded", line))
    shown_as_user = [l for k in ("Current work", "User messages", "Initial request", "Pending tasks")
                     for l in secs.get(k, [])] + user_turns(text)
    for prompt in t["subagent"]:
        if any(_loose(prompt) == r for r in typed_loose):
            continue
        key = _loose(prompt)[:60]
        if key and any(key in _loose(l) for l in shown_as_user):
            false.append(("subagent prompt shown as the user's", prompt[:80]))
    if re.search(r"You are the learner's tutor|# Teaching session:|# 教学会话", text):
        false.append(("generated tutor text", "tutor prompt"))

    all_lines = [(k, l) for k, v in secs.items() for l in v]
    seen = {}
    for k, line in all_lines:
        b = _bare(line)
        user_words = k in ("User messages", "Initial request") or from_typed(b)
        if not user_words and (NARRATION.match(b.strip("*` ")) or (b.endswith(":") and not b.endswith("`:"))):
            noise.append(("narration", line))
            continue
        hit = next((name for name, rx in PLUMBING if rx.search(line)), None)
        if hit is None and line.count("**") % 2:
            hit = "stray **"
        if hit:
            noise.append((hit, line))
            continue
        core = b.rstrip("…").strip()
        if core and _word_char(core[0]) and _cut_inside_word(core[:12], t["corpus"], True):
            noise.append(("starts mid-word", line))
            continue
        if core and _word_char(core[-1]) and _cut_inside_word(core[-12:], t["corpus"], False):
            noise.append(("ends mid-word", line))
            continue
        ln = _loose(b)
        if len(ln) >= 20 and any(ln == s or (len(ln) >= 30 and (s.startswith(ln) or ln.startswith(s)))
                                 for s in seen.get(k, [])):
            noise.append(("near-duplicate in a section", line))
            continue
        seen.setdefault(k, []).append(ln)
    return false, noise


# -- running ctxd ------------------------------------------------------------------------------

def ctxd(args, env, cwd, stdin=None):
    return subprocess.run([sys.executable, "-m", "ctxd", *args], env=env, cwd=cwd, capture_output=True, text=True,
                          input=stdin, timeout=600)


def run(name, paths, t, keep=False, show=False):
    top = [p for p, _n in sorted(t["edits"].items(), key=lambda kv: -kv[1])[:10]]
    last5 = list(dict.fromkeys(r for _ts, r in reversed(t["requests"])))[:5]
    todos = [x for x, s in t["todos"] or [] if s not in ("completed", "cancelled", "deleted")]
    tmp = tempfile.mkdtemp(prefix="ctxd-session-")
    small = {}
    try:
        proj = os.path.join(tmp, "proj")
        os.makedirs(proj)
        with open(os.path.join(proj, ".contextrc"), "w", encoding="utf-8") as f:
            f.write("# session memory benchmark project\n")
        env = isolated_env(tmp, proj)
        if SRC:
            env["PYTHONPATH"] = SRC
        for args in [["allow", proj]] + [["chat", "import", p] for p in paths]:
            p = ctxd(args, env, proj)
            if p.returncode != 0:
                raise SystemExit(f"{name}: ctxd {' '.join(args[:2])} failed: {(p.stderr or p.stdout).strip()}")
        p = ctxd(["context", "--budget", str(BUDGET)], env, proj)
        if p.returncode != 0:
            raise SystemExit(f"{name}: ctxd context failed: {p.stderr.strip()}")
        context = p.stdout
        for b in SMALL:
            q = ctxd(["context", "--budget", str(b)], env, proj)
            small[b] = q.stdout
        payload = {"session_id": "bench-new-session", "transcript_path": os.path.join(tmp, "none.jsonl"),
                   "cwd": proj, "hook_event_name": "SessionStart", "source": "startup"}
        p = ctxd(["chat", "hook", "claude"], env, proj, stdin=json.dumps(payload))
        try:
            inject = json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"] if p.stdout.strip() else ""
        except (ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"{name}: SessionStart gave no context: {p.stdout[:200]!r} {p.stderr[:200]!r}") from e
    finally:
        if keep:
            print(f"  kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if show:
        print(f"===== {name}: ctxd context --budget {BUDGET}\n{context}\n===== {name}: SessionStart\n{inject}\n")
    out = {"name": name, "truth": {"files": len(top), "requests": len(last5), "commits": len(t["commits"]),
                                   "todos": len(todos)}}
    for label, text in (("context", context), ("inject", inject)):
        false, noise = check(text, t)
        out[label] = {
            "files": [has_file(f, text) for f in top],
            "requests": [has_request(r, text) for r in last5],
            "commits": [has_text(c, text) for c in t["commits"]],
            "todos": [has_text(x, text) for x in todos],
            "false": false,
            "noise": noise,
            "chars": len(text),
        }
    out["context_tokens"] = _tokens(context)
    out["small"] = {b: _tokens(x) for b, x in small.items()}
    out["commits_2000"] = [has_text(c, small[2000]) for c in t["commits"]]
    return out


def _tokens(text):
    sys.path.insert(0, REPO)
    from ctxd.memory.text import tokens

    return tokens.count(text)


def _share(flags):
    return f"{sum(flags)}/{len(flags)}" if flags else "n/a"


def _pct(hit, total):
    return f"{100 * hit / total:5.1f}%" if total else "  n/a"


def inputs(data):
    files = sorted(glob.glob(os.path.join(data, "claude", "*.jsonl"))) + \
        sorted(glob.glob(os.path.join(data, "claude", "daaain", "*.jsonl"))) + \
        sorted(glob.glob(os.path.join(data, "codex", "*.jsonl"))) + \
        sorted(glob.glob(os.path.join(data, "gemini", "*.json*"))) + \
        sorted(glob.glob(os.path.join(data, "aider", "*.md")))
    runs = [(os.path.relpath(f, data), [f], truth_of(f)) for f in files]
    multi = [f for f in files if "/claude/" in f or "/codex/" in f]
    if len(multi) > 1:
        runs.append(("project: claude + codex sessions", multi, merged_truth(multi)))
    return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None)
    ap.add_argument("--show", action="store_true", help="print each output")
    ap.add_argument("--lines", action="store_true", help="print every false and noise line found")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--ctxd-src", help="measure the ctxd in this checkout (e.g. an older commit's tree)")
    a = ap.parse_args()
    global SRC, DATA
    SRC = os.path.abspath(a.ctxd_src) if a.ctxd_src else None
    DATA = os.path.abspath(a.data) if a.data else DATA
    todo = inputs(DATA)
    if not todo:
        raise SystemExit(f"no transcripts under {a.data}")
    results = [run(name, paths, t, a.keep, a.show) for name, paths, t in todo]
    print(f"ctxd session memory benchmark: `ctxd context --budget {BUDGET}` | SessionStart injection "
          f"(`ctxd chat hook claude`), ground truth from the raw files")
    print(f"python {sys.version.split()[0]}; presence of the 10 most-edited files, the last 5 typed requests, "
          "commit subjects, open todos; false and noise lines in the session memory\n")
    head = (f"{'transcript':<44} {'files':>11} {'requests':>11} {'commits':>11} {'todos':>11} {'false':>7} "
            f"{'noise':>7} {'tokens':>6} {'inj chars':>9}")
    print(head)
    print("-" * len(head))
    totals = {side: {k: [0, 0] for k in ("files", "requests", "commits", "todos")} for side in ("context", "inject")}
    bad = {"false": {"context": 0, "inject": 0}, "noise": {"context": 0, "inject": 0}}
    for r in results:
        c, i = r["context"], r["inject"]
        cols = []
        for k in ("files", "requests", "commits", "todos"):
            cols.append(f"{_share(c[k]):>5}|{_share(i[k]):<5}")
            for side in ("context", "inject"):
                totals[side][k][0] += sum(r[side][k])
                totals[side][k][1] += len(r[side][k])
        for kind in ("false", "noise"):
            for side in ("context", "inject"):
                bad[kind][side] += len(r[side][kind])
        nm = r["name"] if len(r["name"]) <= 44 else r["name"][:20] + "…" + r["name"][-23:]
        print(f"{nm:<44} {cols[0]:>11} {cols[1]:>11} {cols[2]:>11} {cols[3]:>11} "
              f"{len(c['false']):>3}|{len(i['false']):<3} {len(c['noise']):>3}|{len(i['noise']):<3} "
              f"{r['context_tokens']:>6} {i['chars']:>9}")
        if a.lines:
            for side in ("context", "inject"):
                for kind in ("false", "noise"):
                    for rule, line in r[side][kind]:
                        print(f"    {side} {kind} [{rule}]: {line[:150]}")
    print("-" * len(head))
    print(f"\n{'total':<10} {'ctxd context':>14} {'SessionStart':>14}   target")
    met = True
    for k in ("files", "requests", "commits", "todos"):
        cells = []
        for side in ("context", "inject"):
            hit, tot = totals[side][k]
            cells.append(f"{hit:>3}/{tot:<3} {_pct(hit, tot)}")
            if tot and hit / tot < TARGETS[k]:
                met = False
        print(f"{k:<10} {cells[0]:>14} {cells[1]:>14}   >= {TARGETS[k]:.0%}")
    for kind in ("false", "noise"):
        print(f"{kind:<10} {bad[kind]['context']:>14} {bad[kind]['inject']:>14}   0")
        met = met and not bad[kind]["context"] and not bad[kind]["inject"]
    over = [r["name"] for r in results if r["context_tokens"] > BUDGET]
    over_small = [(r["name"], b) for r in results for b, n in r["small"].items() if n > b]
    big = [r["name"] for r in results if r["inject"]["chars"] > 10_000]
    c2000 = [f for r in results for f in r["commits_2000"]]
    print(f"\nbudget: {len(results) - len(over)}/{len(results)} contexts within {BUDGET} tokens, "
          f"{len(results) * len(SMALL) - len(over_small)}/{len(results) * len(SMALL)} within "
          f"{'/'.join(map(str, SMALL))} (exact cl100k count when the tokens extra is installed); "
          f"{len(results) - len(big)}/{len(results)} injections within 10,000 characters; "
          f"commits at --budget 2000: {_share(c2000)}")
    met = met and not over and not over_small and not big
    print(f"targets: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
