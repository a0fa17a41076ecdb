"""What the tools' calls and results say, for the session memory (ctxd.memory.context.session): the
paths they touched, test counts, commit subjects, the line naming an error, todo lists; and the
parts of a compaction summary the model already wrote.
"""

import os
import re
import shlex

from ctxd.memory.context.session_text import clean, tidy


def absolute_path(p, base):
    if not isinstance(p, str) or not p.strip():
        return None
    p = p.strip()
    if p.startswith("~/"):
        return p
    if not p.startswith("/") and base:
        p = os.path.join(base, p)
    return os.path.normpath(p) if p.startswith("/") else p


def anchor_dir(paths, workdirs, root):
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


def relative_to(p, anchor):
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
TEST_CMD = re.compile(r"\b(?:pytest|py\.test|jest|vitest|go test|cargo test|npm (?:run )?test|yarn test|pnpm test|"
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
    runs_tests = bool(command and TEST_CMD.search(command))
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


def todo_list(args):
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


def plan_todos(items_):
    """[(text, status)] of a summary's plan items marked [DONE]/[IN PROGRESS]/[TODO]."""
    status = {"DONE": "completed", "COMPLETED": "completed", "X": "completed", "IN PROGRESS": "in_progress",
              "~": "in_progress"}
    out = []
    for it in items_:
        m = re.match(r"^\[([A-Z ~]+)\] (.+)$", it)
        if m:
            out.append((tidy(m.group(2), 200), status.get(m.group(1).strip() or " ", "pending")))
    return [(t, st) for t, st in out if t]
