"""The session memory: what a developer would write down for the next session, built from
the typed items of the store (ctxd.memory.items), never from patterns in flattened text.

``session_memory(store, root)`` reads the newest typed rows and returns a SessionMemory:

- requests: what the human typed (``prompt`` rows only; meta never), newest first;
- files: the paths EDIT tools (and patches) changed, relative to the project root, with how
  often each was edited; reads are kept apart;
- commands: each shell call paired with its result by ``call_id``: ok or failed, the exit
  code, and for test runs the passed/failed counts the output states (pytest, jest, vitest,
  go test, cargo test);
- commits: subjects, from the result's ``[branch abc1234] subject`` line, else from the
  command's ``-m``;
- errors and what fixed them: a failed call, and the next successful run of the same
  command (or tool and path) after it;
- todos: the last TodoWrite ``todos`` / update_plan ``plan`` list, with statuses;
- decisions and constraints: the user's own sentences that facts.py tags requirement or
  preference, verbatim;
- current work (the newest substantive request, the todo in progress) and the next step
  (the first pending todo, else the assistant's last stated next step).

``render(mem, ...)`` turns it into the 9-part layout (initial request, key technical points,
files, errors and fixes, problem solving, user messages, pending tasks, current work, next
step) as markdown lines, with nothing of the tools' plumbing (raw JSON, escapes, output-file
pointers).
"""

import json
import os
import re
import shlex

from ctxd.memory import facts as facts_mod
from ctxd.memory import items

SCAN = 3000  # the newest typed rows a session memory reads
MAX_REQUEST = 300  # characters of one request as shown
SECTIONS = ("Initial request", "Key technical points", "Files touched", "Errors and fixes", "Problem solving",
            "User messages", "Pending tasks", "Current work", "Next step")


class Command:
    __slots__ = ("id", "tool", "command", "ok", "exit_code", "passed", "failed", "error", "session", "key",
                 "stopped", "ts", "run_key")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    @property
    def is_test(self):
        return self.passed is not None or self.failed is not None


class SessionMemory:
    def __init__(self):
        self.initial_request = None  # text
        self.initial_id = None
        self.requests = []  # [(id, text)], newest first
        self.files = []  # [(path, edits)], most edited first
        self.reads = []  # paths read (not edited), most recent first
        self.commands = []  # [Command], oldest first
        self.commits = []  # [(day, subject)], newest first
        self.errors = []  # [(the last failed run, the run that fixed it or None)], open ones first
        self.runs = {}  # run key -> [Command], oldest first
        self.points = []  # technical points of the model's own compaction summary
        self.file_days = {}  # path -> the day it was last edited
        self.last_request = None  # what the human typed last (in the newest session)
        self.unanswered = False  # nothing followed that request
        self.report = None  # the start of the assistant's last report
        self.session = None
        self.sessions = 0
        self.todos = []  # [(text, status)] of the last list
        self.decisions = []  # the user's own sentences, newest last
        self.current = None  # the newest substantive request
        self.in_progress = None  # the todo in progress
        self.next_step = None
        self.ids = set()  # the messages it was built from

    def __bool__(self):
        return bool(self.requests or self.files or self.commands or self.todos or self.commits)


# -- reading text out of typed items ---------------------------------------------------

def _data(row):
    d = row["data"]
    if isinstance(d, str):
        try:
            return json.loads(d)
        except ValueError:
            return None
    return d


def clean(text, limit=None):
    """One readable line: whitespace collapsed, JSON-style escapes (``\\n``, ``\\"``, ``\\t``) and
    terminal escape sequences taken out."""
    if not isinstance(text, str):
        return ""
    text = _ANSI.sub("", text)
    text = text.replace("\\r\\n", " ").replace("\\n", " ").replace("\\t", " ").replace('\\"', '"')
    text = " ".join(text.split())
    if limit and len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\\x1b\[[0-9;?]*[A-Za-z]|\\u001b\[[0-9;?]*[A-Za-z]")


def strip_ansi(text):
    """*text* without terminal escape sequences (real or written as ``\\x1b[``/``\\u001b[``)."""
    return _ANSI.sub("", text) if isinstance(text, str) else text


# -- text that may be shown: cut at boundaries, no plumbing, no narration -----------------

_PLUMBING = re.compile(
    r"(?i)characters omitted|full output \(\d|/outputs?/\S+\.txt|read the full transcript at|"
    r"if you need specific details from before compaction|please continue the conversation from where|"
    r"this session is being continued from a previous conversation|</?output-file>|output is being written to|"
    r"read the output file|\[\.\.\. full output|tool_use_id|ctxd chat output \d")
_TAG = re.compile(r"</?[A-Za-z_][\w-]*(?:\s[^<>]*)?/?>|</?[A-Za-z_][\w-]*\s*$")
_MARKUP = re.compile(r"\*\*|__|^#{1,6}\s+|^>\s*|^[-*•]\s+|^\d+[.)]\s+(?=\S)")
_SENTENCE_END = re.compile(r"[.!?。！？](?=\s|$)")
_NARRATION = re.compile(
    r"(?i)^(?:(?:ok(?:ay)?|alright|great|good|perfect|excellent|now|so|first|next|then|finally)[,!.:]?\s+)*"
    r"(?:let me|let's|let us|i(?:'ll| will| need to| should| am going to|'m going to| want to| can now| must)|"
    r"we(?:'ll| will| need to| should)|time to|going to|now i|i'm now|i am now)\b")
_BARE_ACK = re.compile(r"(?i)^(?:ok(?:ay)?|alright|great|good|perfect|excellent|done|got it|thanks?)[.!]?$")


def is_narration(text):
    """Whether a line is the model thinking aloud ("Let me…", "Now I'll…", "I need to…", a line
    that leads into a tool call with ":"): never a task, a fact or a technical point."""
    s = clean(text).strip("*_ ")
    if not s:
        return True
    return bool(_NARRATION.match(s) or _BARE_ACK.match(s) or (s.endswith(":") and len(s) < 200))


_CODE = re.compile(r"^[\"'{\[(<$]|[;{}(,]$|\"\w+\"\s*:|^\w+\s*=\s|\b(?:def|return|import|const|let|var|function)\b.*[(=]|=>|^\.\w")


def looks_like_code(text):
    """Whether a line is code or data (a JSON key, a statement), not a sentence."""
    return bool(_CODE.search((text or "").strip()))


def is_plumbing(text):
    """Whether a line is a tool's or a CLI's plumbing: output-file pointers, "characters omitted"
    markers, compaction boilerplate."""
    return bool(_PLUMBING.search(text or ""))


def cut(text, limit):
    """*text* on one line within *limit* characters, cut at a sentence end when one is near, else
    at a word boundary, and the cut marked with …; never inside a word."""
    s = clean(text)
    if len(s) <= limit:
        return s
    head = s[: limit - 1]
    ends = [m.end() for m in _SENTENCE_END.finditer(head)]
    if ends and ends[-1] >= limit * 0.5:
        return head[: ends[-1]].rstrip() + " …"
    sp = head.rfind(" ")
    if sp >= limit * 0.3:
        return head[:sp].rstrip(" ,;:-–—(") + " …"
    # one long token (a path, a hash): cut after its last separator, else drop it
    seps = [head.rfind(c) for c in "/._-"]
    at = max(seps)
    return (head[: at + 1] + "…") if at > 0 else ""


def tidy(text, limit=300):
    """A line fit to show: one line, no XML tags, no stray markdown, no plumbing, cut at a boundary;
    "" when nothing true is left (plumbing, an empty label)."""
    if not isinstance(text, str) or is_plumbing(text):
        return ""
    s = _TAG.sub(" ", strip_ansi(text))
    s = clean(s)
    prev = None
    while prev != s:
        prev = s
        s = _MARKUP.sub("", s).strip()
    s = s.replace("**", "").replace("__", "")
    s = clean(s)
    if not s or re.fullmatch(r"[\W_]*", s) or (s.endswith(":") and len(s.split()) <= 5):
        return ""  # punctuation only, or a label with nothing after it ("Optional Next Step:")
    return cut(s, limit)


def _abs(p, base):
    if not isinstance(p, str) or not p.strip():
        return None
    p = p.strip()
    if p.startswith("~/"):
        return p
    if not p.startswith("/") and base:
        p = os.path.join(base, p)
    return os.path.normpath(p) if p.startswith("/") else p


def _anchor(paths, workdirs, root):
    """The directory paths are shown relative to: the project root when they lie under it, else
    the working directory the session's commands ran in most, else the paths' common directory."""
    absolute = sorted({p for p in paths if p.startswith("/")})
    if not absolute:
        return None
    for cand in ([root] if root else []) + [os.getcwd()]:
        cand = os.path.normpath(cand)
        if cand != "/" and all(p == cand or p.startswith(cand + "/") for p in absolute):
            return cand
    if workdirs:
        best = max(set(workdirs), key=workdirs.count)
        if sum(1 for p in absolute if p.startswith(best.rstrip("/") + "/")) * 2 >= len(absolute):
            return best.rstrip("/")
    common = os.path.commonpath(absolute) if len(absolute) > 1 else os.path.dirname(absolute[0])
    return common if common != "/" else None


def _relative(p, anchor):
    if anchor and p.startswith(anchor.rstrip("/") + "/"):
        return p[len(anchor.rstrip("/")) + 1:]
    return p


# test output: what the runners print as their summary
_PYTEST_SUMMARY = re.compile(r"^=+ .*\b\d+ (?:passed|failed)\b.* in [\d.]+m?s\b.*=+\s*$")
_PASSED = re.compile(r"\b(\d+) passed\b")
_FAILED = re.compile(r"\b(\d+) failed\b")
_JEST = re.compile(r"(?m)^\s*Tests:?\s+(.*)$")
_CARGO = re.compile(r"test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed")
_GO_OK = re.compile(r"(?m)^ok\s+\S+")
_GO_FAIL = re.compile(r"(?m)^(?:FAIL\s+\S+|--- FAIL: )")
_TEST_CMD = re.compile(r"\b(?:pytest|py\.test|jest|vitest|go test|cargo test|npm (?:run )?test|yarn test|pnpm test|"
                       r"mix test|tox|nox|unittest|rspec|phpunit|ctest|make (?:test|check))\b")


def test_counts(command, output):
    """(passed, failed) a test run's output states, or (None, None). The runners' own summary
    lines are read anywhere (cargo's "test result:", jest/vitest's "Tests:", pytest's "=== N passed
    in 0.1s ==="); a bare "N passed" only when the command runs tests."""
    output = output or ""
    m = _CARGO.findall(output)
    if m:
        return sum(int(a) for a, _ in m), sum(int(b) for _, b in m)
    jm = _JEST.findall(output)
    if jm:
        line = jm[-1]
        p, f = _PASSED.search(line), _FAILED.search(line)
        if p or f:
            return int(p.group(1)) if p else 0, int(f.group(1)) if f else 0
    tail = output[-3000:]
    runs_tests = bool(command and _TEST_CMD.search(command))
    lines = [l for l in tail.splitlines() if (_PASSED.search(l) or _FAILED.search(l))
             and (runs_tests or _PYTEST_SUMMARY.search(l))]
    if lines:
        p, f = _PASSED.search(lines[-1]), _FAILED.search(lines[-1])
        return int(p.group(1)) if p else 0, int(f.group(1)) if f else 0
    if command and re.search(r"\bgo test\b", command):
        ok, fail = len(_GO_OK.findall(output)), len(_GO_FAIL.findall(output))
        if ok or fail:
            return ok, fail
    return None, None


_COMMIT_LINE = re.compile(r"(?m)^\[([^\]\s]+)(?: \(root-commit\))? ([0-9a-f]{7,40})\] (.+)$")
_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?\s*\n(.*?)\n\s*\1\b", re.S)


def commit_subject(command, output=None):
    """The subject of the commit a ``git commit`` made, or None."""
    if output:
        m = _COMMIT_LINE.search(output)
        if m:
            return clean(m.group(3), 200)
    if not command or not re.search(r"\bgit\b[^|;&]*\bcommit\b", command):
        return None
    h = _HEREDOC.search(command)
    if h and "commit" in command[: h.start()]:
        first = next((l.strip() for l in h.group(2).splitlines() if l.strip()), "")
        return clean(first, 200) or None
    seg = command[command.find("commit"):]
    try:
        words = shlex.split(seg, posix=True)
    except ValueError:
        words = seg.split()
    for i, w in enumerate(words):
        msg = None
        if w in ("-m", "--message") and i + 1 < len(words):
            msg = words[i + 1]
        elif w.startswith("--message="):
            msg = w.split("=", 1)[1]
        elif w.startswith("-m") and len(w) > 2 and not w.startswith("--"):
            msg = w[2:]
        elif re.fullmatch(r"-[a-zA-Z]*m", w) and i + 1 < len(words):  # -am "msg"
            msg = words[i + 1]
        if msg:
            first = next((l.strip() for l in msg.splitlines() if l.strip()), "")
            return clean(first, 200) or None
    return None


_ERROR_NAMED = re.compile(r"(?:Error|Exception|Traceback|FAIL(?:ED)?\b|panic:|fatal:|error:|error\[)")
_ERROR_LINE = re.compile(r"(?i)\b(?:error|failed|failure|fatal|not found|denied|cannot|can't|no such|invalid|"
                         r"undefined|refused)\b")


def error_line(text):
    """The line of a failed result that says what went wrong: one naming an error, else one
    saying something failed, else the first."""
    lines = [l for l in (text or "").splitlines() if l.strip() and not l.lstrip().startswith(("[...", "<"))]
    for rx in (_ERROR_NAMED, _ERROR_LINE):
        for l in lines:
            if rx.search(l) and not l.lstrip().startswith("Traceback (most recent"):
                return clean(l, 160)
    return clean(lines[0], 160) if lines else ""


def _todo_list(args):
    """[(text, status)] of a TodoWrite / update_plan / write_todos call, or None."""
    if not isinstance(args, dict):
        return None
    lst = None
    for k in ("todos", "plan", "items"):
        if isinstance(args.get(k), list):
            lst = args[k]
            break
    if lst is None:
        return None
    out = []
    for t in lst:
        if not isinstance(t, dict):
            continue
        text = next((t[k] for k in ("content", "step", "description", "title", "text", "task")
                     if isinstance(t.get(k), str) and t[k].strip()), None)
        if text:
            out.append((clean(text, 200), str(t.get("status") or "pending").lower()))
    return out


_TASK_ID = re.compile(r"Task #?(\w+)")
_CLOSED = ("completed", "complete", "done", "cancelled", "canceled", "deleted", "skipped")


class TaskBoard:
    """The todo list of Claude Code's newer task tools: TaskCreate (subject; its result names the
    id: "Task #3 created successfully") and TaskUpdate (taskId, status, subject; status "deleted"
    removes it). ``items()`` is the list in creation order as [(text, status)]."""

    def __init__(self):
        self.tasks = {}  # id -> [text, status]
        self.n = 0

    def create(self, args, result):
        text = next((args[k] for k in ("subject", "content", "title", "description")
                     if isinstance(args, dict) and isinstance(args.get(k), str) and args[k].strip()), None)
        if not text:
            return False
        self.n += 1
        m = _TASK_ID.search(result or "")
        tid = m.group(1) if m else str(self.n)
        status = args.get("status") if isinstance(args.get("status"), str) else "pending"
        self.tasks[tid] = [clean(text, 200), status.lower()]
        return True

    def update(self, args):
        if not isinstance(args, dict):
            return False
        tid = str(args.get("taskId") or args.get("task_id") or args.get("id") or "").lstrip("#")
        if tid not in self.tasks:
            return False
        t = self.tasks[tid]
        if isinstance(args.get("subject"), str) and args["subject"].strip():
            t[0] = clean(args["subject"], 200)
        if isinstance(args.get("status"), str):
            t[1] = args["status"].lower()
        if t[1] == "deleted":
            del self.tasks[tid]
        return True

    def items(self):
        return [(t, s) for t, s in self.tasks.values()]


def is_open(status):
    return (status or "pending").lower() not in _CLOSED


# -- what the model already wrote: compaction summaries -----------------------------------

_SUM_HEAD = re.compile(r"^\s*(?:#{1,6}\s*|\d+\.\s+|\*\*)?([A-Z][A-Za-z /&'-]{2,60}?)(?:\*\*)?\s*:\s*(?:\*\*)?\s*(.*)$")
_XML_PART = re.compile(r"<([a-z_]+)>(.*?)</\1>", re.S)
_PLAN_MARK = re.compile(r"^\s*(?:\d+[.)]\s*)?\[(DONE|IN PROGRESS|TODO|PENDING|COMPLETED|X| |~)\]\s*(.+)$", re.I)
POINT_PARTS = ("key technical concepts", "key technical points", "key_knowledge", "key knowledge", "overall_goal",
               "technical concepts", "important decisions", "decisions", "constraints", "key facts")
NEXT_PARTS = ("optional next step", "next step", "next steps")
PLAN_PARTS = ("current_plan", "current plan", "plan")


def summary_parts(text):
    """{part: [items]} of a compaction summary: Claude's numbered sections ("2. Key Technical
    Concepts:"), markdown headings, or Gemini's <state_snapshot> XML parts. The analysis a summary
    wraps in <analysis> is dropped; items are its bullets, else its sentences; never markup."""
    if not isinstance(text, str):
        return {}
    body = re.sub(r"(?s)<analysis>.*?</analysis>", " ", text)
    body = re.sub(r"</?(?:summary|state_snapshot)>", "\n", body)
    parts = {}
    xml = [(m.group(1), m.group(2)) for m in _XML_PART.finditer(body)]
    if xml:
        for name, inner in xml:
            parts.setdefault(name.lower(), []).extend(_part_items(inner))
        return parts
    cur = None
    for line in body.splitlines():
        m = _SUM_HEAD.match(line)
        if m and not line.lstrip().startswith(("-", "*   ", "* ")) and m.group(1).lower().strip() in _KNOWN_HEADS:
            cur = m.group(1).lower().strip()
            parts.setdefault(cur, [])
            if m.group(2).strip():
                parts[cur].extend(_part_items(m.group(2)))
        elif cur is not None:
            parts[cur].extend(_part_items(line))
    return parts


_KNOWN_HEADS = set(POINT_PARTS + NEXT_PARTS + PLAN_PARTS + (
    "primary request and intent", "files and code sections", "errors and fixes", "problem solving",
    "all user messages", "pending tasks", "current work", "summary", "analysis", "context", "progress",
    "remaining work", "open questions", "what was done", "status"))


def _part_items(text):
    out = []
    for line in text.splitlines():
        if not line.strip() or line.strip().startswith("```"):
            continue
        m = _PLAN_MARK.match(line.strip().lstrip("-*• "))
        if m:
            out.append(f"[{m.group(1).upper()}] {m.group(2).strip()}")
            continue
        if re.match(r"^\s*(?:[-*•]|\d+[.)])\s+", line) or len(out) == 0 or not out[-1]:
            out.append(line.strip())
        else:
            out[-1] += " " + line.strip()
    return out


def _plan_todos(items_):
    """[(text, status)] of a summary's plan items marked [DONE]/[IN PROGRESS]/[TODO]."""
    status = {"DONE": "completed", "COMPLETED": "completed", "X": "completed", "IN PROGRESS": "in_progress",
              "~": "in_progress"}
    out = []
    for it in items_:
        m = re.match(r"^\[([A-Z ~]+)\] (.+)$", it)
        if m:
            out.append((tidy(m.group(2), 200), status.get(m.group(1).strip() or " ", "pending")))
    return [(t, st) for t, st in out if t]


_NEXT = re.compile(r"(?i)\b(?:next step|next,? (?:i|we)(?:'ll| will| should)|then (?:i|we)(?:'ll| will)|"
                   r"after that,? (?:i|we)|i'll now|the remaining step)\b|下一步|接下来")


def is_substantive(text):
    """Whether a request says something: not a bare "continue", "ok", a greeting or thanks."""
    s = clean(text)
    if not s or facts_mod.is_filler(s):
        return False
    words = re.findall(r"\w+", s)
    cjk = len(re.findall(r"[\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af]", s))
    return len(words) >= 3 or cjk >= 4


# -- building ----------------------------------------------------------------------------

DECISION_PROMPTS = 40  # the newest prompts whose constraints and preferences are read
HISTORY = 4000  # the newest edit and commit calls read across the project's sessions
TASK_CREATE = ("TaskCreate",)
TASK_UPDATE = ("TaskUpdate",)


def _day(ts):
    import time

    return time.strftime("%Y-%m-%d", time.gmtime(ts)) if ts else ""


def session_memory(store, root=None, *, session=None, scan=SCAN, decisions=True):
    """The SessionMemory of the newest *scan* typed rows (of *session*, else of every session),
    with the files and commits of the project's earlier sessions. The end state (current work,
    todos, open errors, the last report) is the newest session's. *decisions*: also read the
    user's constraints and preferences (of the newest DECISION_PROMPTS prompts; a context that
    shows the facts has them already)."""
    # the newest session is one of this machine's: what came through ctxd sync never becomes the
    # current work, the initial request or the user's constraints here (facts and turns label it)
    local = session is None
    rows = store.session_rows(scan, session=session, local=local)
    mem = SessionMemory()
    newest = store.last_prompt(session, local=local) if rows and hasattr(store, "last_prompt") else None
    if session is None:  # the session of the newest request (a title or summary row may come after it)
        session_of = next((r["session"] for r in reversed(rows) if r["kind"] == "prompt"),
                          newest["session"] if newest is not None else rows[-1]["session"] if rows else None)
    else:
        session_of = session
    mem.session = session_of
    mem.sessions = len({r["session"] for r in rows})
    first = store.first_prompt(session_of, local=local) if rows else None
    if first is not None:
        mem.initial_request = first["content"][:4000]
        mem.initial_id = first["id"]
        mem.ids.add(first["id"])

    results, stopped, since = {}, set(), {}
    for r in rows:
        kind = r["kind"]
        if kind == "tool_result" and r["call_id"]:
            results.setdefault((r["session"], r["call_id"]), r)
            since.setdefault(r["session"], []).append((r["session"], r["call_id"]))
        elif kind == "meta":  # an interrupt: the results since the last turn were the user stopping the calls
            stopped.update(since.pop(r["session"], []))
        elif kind in ("prompt", "reply"):
            since.pop(r["session"], None)

    edits, last_edit, reads, workdirs, raw_paths = {}, {}, {}, [], []
    calls = []  # (row, data, result row)
    seen_requests = set()
    board, todo_at = TaskBoard(), -1
    last_prompt = last_reply = summary = None
    activity_after_prompt = False
    prompts = [r["id"] for r in rows if r["kind"] == "prompt"]
    read_from = prompts[-DECISION_PROMPTS] if decisions and len(prompts) >= DECISION_PROMPTS else \
        (0 if decisions else float("inf"))
    for pos, r in enumerate(rows):
        kind = r["kind"]
        mine = r["session"] == session_of
        # a subagent shares its parent's session id: its report and todo list are not the session's
        main_agent = r["provenance"] in (None, "", "agent", "human")
        if kind == "summary" and mine and (r["subtype"] == "compaction" or summary_parts(r["content"])):
            summary = (pos, r)
            continue
        if kind == "reply" and mine:
            if main_agent:
                last_reply = (pos, r)
            activity_after_prompt = True
            continue
        if kind == "prompt":
            if mine:
                last_prompt, activity_after_prompt = (pos, r), False
            text = clean(r["content"])
            if text and text not in seen_requests:
                seen_requests.add(text)
                mem.requests.append((r["id"], clean(r["content"])))
            if r["id"] < read_from:
                continue
            for tag, _kinds, s, _norm, _topic, _prio in facts_mod.extract(r["id"], r["ts"], "user", r["content"]):
                if tag in ("requirement", "preference") and not facts_mod.is_filler(s):
                    line = tidy(s, 300)
                    if line and line not in mem.decisions:
                        mem.decisions.append(line)
            continue
        if kind != "tool_call":
            continue
        if mine:
            activity_after_prompt = True
        d = _data(r) or {}
        args = d.get("args")
        res = results.get((r["session"], r["call_id"])) if r["call_id"] else None
        calls.append((r, d, res))
        if isinstance(args, dict) and isinstance(args.get("workdir"), str):
            workdirs.append(args["workdir"])
        base = args.get("workdir") if isinstance(args, dict) and isinstance(args.get("workdir"), str) else None
        paths = [p for p in (_abs(p, base) for p in (d.get("paths") or [])) if p]
        raw_paths += paths
        tool = r["tool"] or ""
        if items.is_edit(tool, args):
            if res is not None and (_data(res) or {}).get("is_error"):
                continue  # an edit that failed changed nothing
            for p in paths:
                edits[p] = edits.get(p, 0) + 1
                last_edit[p] = (r["ts"] or 0, r["id"])
            mem.ids.add(r["id"])
        elif paths and not d.get("command") and re.search(r"(?i)read|view|cat|open", tool):
            for p in paths:
                reads[p] = r["id"]
        if not main_agent:
            continue
        if tool in TASK_CREATE or tool in TASK_UPDATE:
            if res is not None and (_data(res) or {}).get("is_error"):
                continue
            changed = board.create(args, res["content"] if res is not None else "") if tool in TASK_CREATE \
                else board.update(args)
            if changed:
                mem.todos, todo_at = board.items(), pos
                mem.ids.add(r["id"])
            continue
        todos = _todo_list(args)
        if todos is not None and tool not in items.SHELL_TOOLS:
            mem.todos, todo_at = todos, pos  # the last list wins
            mem.ids.add(r["id"])

    # earlier sessions: what they edited and committed (beyond the rows read above)
    seen_ids = {r["id"] for r in rows}
    history = []
    if hasattr(store, "history_rows"):
        history = [(r, res) for r, res in store.history_rows(tuple(sorted(items.EDIT_TOOLS)), HISTORY)
                   if r["id"] not in seen_ids]
    for r, res in history:
        d = _data(r) or {}
        args = d.get("args")
        if items.is_edit(r["tool"] or "", args) and not (res is not None and (_data(res) or {}).get("is_error")):
            for p in (p for p in (_abs(p, None) for p in (d.get("paths") or [])) if p):
                edits[p] = edits.get(p, 0) + 1
                last_edit[p] = max(last_edit.get(p, (0, 0)), (r["ts"] or 0, r["id"]))
                raw_paths.append(p)
    anchor = _anchor(list(edits) + list(reads) + raw_paths, workdirs, root)
    mem.files = [(_relative(p, anchor), n) for p, n in
                 sorted(edits.items(), key=lambda kv: (-kv[1], -last_edit[kv[0]][0], -last_edit[kv[0]][1]))]
    mem.file_days = {_relative(p, anchor): _day(last_edit[p][0]) for p in edits}
    mem.reads = [_relative(p, anchor) for p, _ in sorted(reads.items(), key=lambda kv: -kv[1]) if p not in edits]

    commits = {}  # subject -> (ts, id)
    for r, res in history:
        d = _data(r) or {}
        cmd = d.get("command")
        rd = _data(res) if res is not None else None
        if cmd and not (rd and (rd.get("is_error") or rd.get("exit_code") not in (None, 0))):
            subject = commit_subject(cmd, res["content"] if res is not None else None)
            if subject:
                commits.setdefault(subject, (r["ts"] or 0, r["id"]))

    # commands and their outcomes
    for r, d, res in calls:
        tool = r["tool"] or ""
        cmd = d.get("command")
        rd = _data(res) if res is not None else None
        is_error = bool(rd and rd.get("is_error"))
        exit_code = rd.get("exit_code") if rd else None
        out = res["content"] if res is not None else ""
        if cmd:
            passed, failed = test_counts(cmd, out) if res is not None else (None, None)
            ok = res is not None and not is_error and exit_code in (None, 0) and not failed
            c = Command(id=r["id"], tool=tool, command=cmd, ok=ok if res is not None else None, exit_code=exit_code,
                        passed=passed, failed=failed, session=r["session"], key=_command_key(cmd), ts=r["ts"])
            mem.commands.append(c)
            subject = commit_subject(cmd, out if ok or res is None else None)
            if subject and (res is None or ok):
                commits[subject] = max(commits.get(subject, (0, 0)), (r["ts"] or 0, r["id"]))
                mem.ids.add(r["id"])
        elif res is not None:
            paths = d.get("paths") or []
            ok = not is_error and exit_code in (None, 0)
            c = Command(id=r["id"], tool=tool, command=None, ok=ok, exit_code=exit_code,
                        session=r["session"], key=(tool, tuple(paths)), ts=r["ts"])
        else:
            continue
        if c.ok is False and (r["session"], r["call_id"]) in stopped:
            c.stopped = True  # the user stopped it: not an error to fix
        elif c.ok is False:
            c.error = error_line(out) or (f"exit code {exit_code}" if exit_code not in (None, 0) else "")
        c.run_key = _run_key(c)
        if c.ok is not None and not c.stopped:
            mem.runs.setdefault(c.run_key, []).append(c)
    mem.commits = [(_day(ts), s) for s, (ts, _i) in sorted(commits.items(), key=lambda kv: kv[1], reverse=True)]

    # errors: open while the last run of that command (or test) still fails; else what fixed it
    for runs in mem.runs.values():
        fails = [i for i, c in enumerate(runs) if c.ok is False]
        if not fails:
            continue
        last_fail = runs[fails[-1]]
        if not last_fail.error and last_fail.command is None:
            continue  # a tool failed without saying why: nothing to tell the next session
        fix = runs[-1] if runs[-1].ok else None
        mem.errors.append([last_fail, fix])
    mem.errors.sort(key=lambda e: (e[1] is not None, -e[0].id))  # open ones first, newest first

    # the summary the model wrote at compaction: its technical points, its plan, its next step
    latest_own = max([p[0] for p in (last_prompt, last_reply) if p is not None] + [todo_at])
    if summary is not None:
        spos, srow = summary
        parts = summary_parts(srow["content"])
        mem.ids.add(srow["id"])
        for name in POINT_PARTS:
            for it in parts.get(name, []):
                line = tidy(it, 220)
                if line and not is_narration(line) and line not in mem.points:
                    mem.points.append(("Goal: " + line) if name == "overall_goal" else line)
        plan = next((parts[n] for n in PLAN_PARTS if parts.get(n)), None)
        if plan and todo_at < spos:
            todos = _plan_todos(plan)
            if todos:
                mem.todos = todos
        if spos > latest_own:  # nothing happened after it: its next step is still the next step
            nxt = next((parts[n] for n in NEXT_PARTS if parts.get(n)), None)
            if nxt:
                mem.next_step = tidy(" ".join(nxt), 300) or None

    # current work: the last typed request, the todo in progress, the start of the last report
    mem.requests.reverse()  # newest first
    if last_prompt is not None:
        mem.last_request = clean(last_prompt[1]["content"])
        mem.ids.add(last_prompt[1]["id"])
        mem.unanswered = not activity_after_prompt
    elif newest is not None and newest["session"] == session_of:  # asked before the rows read
        mem.last_request = clean(newest["content"])
        mem.ids.add(newest["id"])
        if not mem.requests:
            mem.requests.append((newest["id"], mem.last_request))
    mem.current = next((t for _i, t in mem.requests if is_substantive(t)), None)
    if mem.last_request and (is_substantive(mem.last_request) or not mem.current):
        mem.current = mem.last_request
    mem.in_progress = next((t for t, s in mem.todos if s == "in_progress"), None)
    if last_reply is not None and (last_prompt is None or last_reply[0] > last_prompt[0]):
        mem.report = _report_start(last_reply[1]["content"])
        if mem.report:
            mem.ids.add(last_reply[1]["id"])
    pending = [t for t, s in mem.todos if is_open(s) and s != "in_progress"]
    if pending:
        mem.next_step = pending[0]
    elif mem.next_step is None and last_reply is not None and last_reply[0] == len(rows) - 1 - _trailing(rows):
        said = [s for s in facts_mod.sentences(last_reply[1]["content"]) if _NEXT.search(s) and not is_narration(s)]
        if said:
            mem.next_step = tidy(said[-1], 300) or None
    mem.ids.update(i for i, _t in mem.requests[:5])
    return mem


def _trailing(rows):
    """How many rows at the end are not conversation (titles, results of the last calls)."""
    n = 0
    for r in reversed(rows):
        if r["kind"] in ("prompt", "reply", "tool_call"):
            break
        n += 1
    return n


def _report_start(text, limit=240):
    """The start of the assistant's last report: its first lines that are not narration (a
    heading and the sentence after it), cut at a boundary."""
    got = []
    for line in (text or "").splitlines():
        line = tidy(line, 1000)
        if not line or line.startswith("|") or looks_like_code(line):
            continue
        sents = [s for s in re.split(r"(?<=[.!?。！？])\s+", line) if s and not is_narration(s)]
        if not sents:
            continue
        got.append(" ".join(sents))
        if sum(len(g) for g in got) >= 80:
            break
    if not got:
        return None
    joined = " ".join(g if g[-1:] in ".!?。！？…" else g + "." for g in got[:-1]) + (" " if len(got) > 1 else "") + got[-1]
    return cut(joined, limit)


def _command_key(cmd):
    """What makes two runs "the same command": the command without its env assignments, pipes
    into head/tail and redirections of stderr."""
    c = re.sub(r"\s*2>&1\s*", " ", cmd)
    c = re.sub(r"\s*\|\s*(?:head|tail)\b[^|;&]*", "", c)
    c = re.sub(r"^(?:\w+=\S+\s+)+", "", c.strip())
    return " ".join(c.split())


def _run_key(c):
    """What a later run must match to tell whether an error is still open: for a test run the
    runner (a later green run of it closes earlier failures), else the command without a leading
    ``cd DIR &&`` and env assignments, else the tool and its paths."""
    if c.command is None:
        return c.key
    cmd = c.key or ""
    cmd = re.sub(r"^(?:cd\s+\S+\s*(?:&&|;)\s*)+", "", cmd)
    cmd = re.sub(r"^(?:\w+=\S+\s+)+", "", cmd)
    m = _TEST_CMD.search(cmd)
    if c.is_test and m:
        return ("test", m.group(0))
    return ("cmd", cmd)


# -- rendering ---------------------------------------------------------------------------

def command_line(c):
    """"`pytest -q`: 3 passed, 1 failed" / "`make`: failed (exit 2)" / "`ls`: ok"."""
    first = c.command.splitlines()[0] if c.command else c.tool
    cmd = cut(first, 100) or clean(first)[:100]
    if "\n" in (c.command or "") and not cmd.endswith("…"):
        cmd += " …"
    if c.is_test:
        outcome = f"{c.passed or 0} passed, {c.failed or 0} failed"
    elif c.stopped:
        outcome = "stopped by the user"
    elif c.ok is None:
        outcome = "no result recorded"
    elif c.ok:
        outcome = "ok"
    else:
        outcome = "failed" + (f" (exit {c.exit_code})" if c.exit_code not in (None, 0) else "")
    return f"`{cmd}`: {outcome}"


def _label(c):
    if c.command:
        first = c.command.splitlines()[0]
        return cut(first, 100) or clean(first)[:100]
    paths = c.key[1] if isinstance(c.key, tuple) and len(c.key) > 1 else ()
    return c.tool + (" " + ", ".join(os.path.basename(p) for p in paths[:2]) if paths else "")


def sections(mem, *, requests=5, files=15, commands=8, decisions=10, commits=10):
    """{section: [lines]} in SECTIONS order, empty sections left out: the end state of the
    session (current work, open todos, open errors) and what it leaves (files, commits)."""
    out = {k: [] for k in SECTIONS}
    current = clean(mem.current) if mem.current else None
    if mem.initial_request:
        first = cut(mem.initial_request, 400)
        if first and clean(mem.initial_request) != current:
            out["Initial request"].append(first)
    out["Key technical points"] += mem.points[:8] + mem.decisions[-decisions:] if decisions else mem.points[:4]
    dated = mem.sessions > 1
    out["Files touched"] += [f"`{p}` (edited {n}×" + (f", last {mem.file_days.get(p)})" if dated and
                                                      mem.file_days.get(p) else ")") if n > 1 else
                             f"`{p}` (edited" + (f" {mem.file_days.get(p)})" if dated and mem.file_days.get(p) else ")")
                             for p, n in mem.files[:files]]
    if mem.reads and files >= 8:
        shown = mem.reads[:8]
        out["Files touched"].append("Read: " + ", ".join(f"`{p}`" for p in shown)
                                    + (f" and {len(mem.reads) - len(shown)} more" if len(mem.reads) > len(shown) else ""))
    for failed, fix in mem.errors[:8]:
        what = _label(failed)
        why = f": {failed.error}" if failed.error else ""
        if fix is None:
            out["Errors and fixes"].append(f"`{what}` still fails at the end of the session{why} — not fixed yet")
        elif commands > 2:
            out["Errors and fixes"].append(f"`{what}` failed{why} — fixed: {command_line(fix)}")
    # commits first (newest first, dated), then the last result of each test, then the latest commands
    out["Problem solving"] += [f"Committed{f' {d}' if d else ''}: {s}" for d, s in mem.commits[:commits]]
    last_runs = [runs[-1] for runs in mem.runs.values()]
    tests = sorted((c for c in last_runs if c.is_test), key=lambda c: c.id)[-3:]
    other = [c for c in mem.commands if not c.is_test and c.ok is not None and not commit_subject(c.command)
             and runs_last(mem, c)]
    picked = sorted(tests + other[-max(0, commands - len(tests)):], key=lambda c: c.id) if commands else tests[-1:]
    out["Problem solving"] += [command_line(c) for c in picked]
    out["User messages"] += [cut(t, MAX_REQUEST) for _i, t in mem.requests[:requests]]
    marks = {"in_progress": "~"}
    out["Pending tasks"] += [f"[{marks.get(s, ' ')}] {t} ({s.replace('_', ' ')})" for t, s in mem.todos if is_open(s)]
    if mem.unanswered and mem.last_request and is_substantive(mem.last_request):
        out["Pending tasks"].append(f"Unanswered request: {cut(mem.last_request, 300)}")
    if current:
        out["Current work"].append(cut(current, 400))
    if mem.in_progress:
        out["Current work"].append(f"In progress: {mem.in_progress}")
    if mem.report:
        out["Current work"].append(f"Last report: {mem.report}")
    if mem.next_step and mem.next_step != mem.in_progress:
        out["Next step"].append(mem.next_step)
    return {k: v for k, v in out.items() if v}


def runs_last(mem, c):
    """Whether *c* is the last run of its command (older runs of it say nothing new)."""
    runs = mem.runs.get(c.run_key) if c.run_key is not None else None
    return not runs or runs[-1] is c


def call_line(tool, content, data=None):
    """A tool call as one readable line for the recent turns: no raw JSON, no escapes."""
    d = data if isinstance(data, dict) else {}
    todos = _todo_list(d.get("args"))
    if todos is not None and tool not in items.SHELL_TOOLS:
        done = sum(1 for _t, s in todos if s in ("completed", "done"))
        return f"{tool}: {len(todos)} items, {done} done"
    line = clean(content, 200)
    if re.search(r"[\[{]\"|\":|=\[|=\{", line) and not d.get("command"):
        paths = d.get("paths") or []
        line = tool + (" " + ", ".join(paths) if paths else "")
    return line
