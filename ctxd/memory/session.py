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
                 "stopped")

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
        self.commits = []  # subjects, oldest first
        self.errors = []  # [(Command failed, Command that fixed it or None)]
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


def session_memory(store, root=None, *, session=None, scan=SCAN, decisions=True):
    """The SessionMemory of the newest *scan* typed rows (of *session*, else of every session).
    *decisions*: also read the user's constraints and preferences (of the newest
    DECISION_PROMPTS prompts; a context that shows the facts has them already)."""
    # the newest session is one of this machine's: what came through ctxd sync never becomes the
    # current work, the initial request or the user's constraints here (facts and turns label it)
    local = session is None
    rows = store.session_rows(scan, session=session, local=local)
    mem = SessionMemory()
    if session is None:  # the session of the newest request (a title or summary row may come after it)
        session_of = next((r["session"] for r in reversed(rows) if r["kind"] == "prompt"),
                          rows[-1]["session"] if rows else None)
    else:
        session_of = session
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
    prompts = [r["id"] for r in rows if r["kind"] == "prompt"]
    read_from = prompts[-DECISION_PROMPTS] if decisions and len(prompts) >= DECISION_PROMPTS else \
        (0 if decisions else float("inf"))
    for r in rows:
        kind = r["kind"]
        if kind == "prompt":
            text = clean(r["content"])
            if text and text not in seen_requests:
                seen_requests.add(text)
                mem.requests.append((r["id"], clean(r["content"], MAX_REQUEST)))
            if r["id"] < read_from:
                continue
            for tag, kinds, s, _norm, _topic, _prio in facts_mod.extract(r["id"], r["ts"], "user", r["content"]):
                if tag in ("requirement", "preference") and not facts_mod.is_filler(s):
                    line = clean(s, 300)
                    if line not in mem.decisions:
                        mem.decisions.append(line)
            continue
        if kind != "tool_call":
            continue
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
                last_edit[p] = r["id"]
            mem.ids.add(r["id"])
        elif paths and not d.get("command") and re.search(r"(?i)read|view|cat|open", tool):
            for p in paths:
                reads[p] = r["id"]
        todos = _todo_list(args)
        if todos is not None and tool not in items.SHELL_TOOLS:
            mem.todos = todos  # the last list wins
            mem.ids.add(r["id"])

    anchor = _anchor(list(edits) + list(reads) + raw_paths, workdirs, root)
    mem.files = [(_relative(p, anchor), n) for p, n in
                 sorted(edits.items(), key=lambda kv: (-kv[1], -last_edit[kv[0]]))]
    mem.reads = [_relative(p, anchor) for p, _ in sorted(reads.items(), key=lambda kv: -kv[1]) if p not in edits]

    # commands and their outcomes; errors and what fixed them
    open_errors = {}  # key -> failed Command
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
                        passed=passed, failed=failed, session=r["session"], key=_command_key(cmd))
            mem.commands.append(c)
            subject = commit_subject(cmd, out if ok or res is None else None)
            if subject and (res is None or ok) and subject not in mem.commits:
                mem.commits.append(subject)
                mem.ids.add(r["id"])
        elif res is not None:
            paths = d.get("paths") or []
            ok = not is_error and exit_code in (None, 0)
            c = Command(id=r["id"], tool=tool, command=None, ok=ok, exit_code=exit_code,
                        session=r["session"], key=(tool, tuple(paths)))
        else:
            continue
        if c.ok is False and (r["session"], r["call_id"]) in stopped:
            c.stopped = True  # the user stopped it: not an error to fix
        elif c.ok is False:
            c.error = error_line(out) or (f"exit code {exit_code}" if exit_code not in (None, 0) else "failed")
            if c.key not in open_errors:
                open_errors[c.key] = c
                mem.errors.append([c, None])
        elif c.ok and c.key in open_errors:
            failed_c = open_errors.pop(c.key)
            for e in mem.errors:
                if e[0] is failed_c:
                    e[1] = c

    # current work and the next step
    mem.requests.reverse()  # newest first
    mem.current = next((t for _i, t in mem.requests if is_substantive(t)), None)
    mem.in_progress = next((t for t, s in mem.todos if s == "in_progress"), None)
    pending = [t for t, s in mem.todos if s not in ("completed", "done", "cancelled")
               and s != "in_progress"]
    if pending:
        mem.next_step = pending[0]
    else:
        for r in reversed(rows[-60:]):
            if r["kind"] != "reply":
                continue
            said = [s for s in facts_mod.sentences(r["content"]) if _NEXT.search(s)]
            if said:
                mem.next_step = clean(said[-1], 300)
                mem.ids.add(r["id"])
                break
    mem.ids.update(i for i, _t in mem.requests[:5])
    return mem


def _command_key(cmd):
    """What makes two runs "the same command": the command without its env assignments, pipes
    into head/tail and redirections of stderr."""
    c = re.sub(r"\s*2>&1\s*", " ", cmd)
    c = re.sub(r"\s*\|\s*(?:head|tail)\b[^|;&]*", "", c)
    c = re.sub(r"^(?:\w+=\S+\s+)+", "", c.strip())
    return " ".join(c.split())


# -- rendering ---------------------------------------------------------------------------

def command_line(c):
    """"`pytest -q`: 3 passed, 1 failed" / "`make`: failed (exit 2)" / "`ls`: ok"."""
    cmd = clean(c.command.splitlines()[0] if c.command else c.tool, 120)
    if "\n" in (c.command or ""):
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


def sections(mem, *, requests=5, files=15, commands=8, decisions=10):
    """{section: [lines]} in SECTIONS order, empty sections left out."""
    out = {k: [] for k in SECTIONS}
    if mem.initial_request:
        out["Initial request"].append(clean(mem.initial_request, 600))
    out["Key technical points"] += [f"{d}" for d in mem.decisions[-decisions:]]
    out["Files touched"] += [f"`{p}` (edited {n}×)" if n > 1 else f"`{p}` (edited)" for p, n in mem.files[:files]]
    if mem.reads:
        shown = mem.reads[:8]
        out["Files touched"].append("Read: " + ", ".join(f"`{p}`" for p in shown)
                                    + (f" and {len(mem.reads) - len(shown)} more" if len(mem.reads) > len(shown) else ""))
    for failed, fix in mem.errors[-8:]:
        what = clean(failed.command.splitlines()[0], 100) if failed.command else failed.tool
        line = f"`{what}` failed: {failed.error}"
        line += f" — fixed: {command_line(fix)}" if fix is not None else " — not fixed yet"
        out["Errors and fixes"].append(line)
    tests = [c for c in mem.commands if c.is_test]
    other = [c for c in mem.commands if not c.is_test and not commit_subject(c.command)]
    picked = sorted(tests[-3:] + other[-max(0, commands - len(tests[-3:])):], key=lambda c: c.id)
    out["Problem solving"] += [command_line(c) for c in picked]
    out["Problem solving"] += [f"Committed: {s}" for s in mem.commits[-10:]]
    out["User messages"] += [t for _i, t in mem.requests[:requests]]
    marks = {"completed": "x", "done": "x", "in_progress": "~", "cancelled": "-"}
    out["Pending tasks"] += [f"[{marks.get(s, ' ')}] {t} ({s.replace('_', ' ')})" for t, s in mem.todos]
    if mem.current:
        out["Current work"].append(mem.current)
    if mem.in_progress:
        out["Current work"].append(f"In progress: {mem.in_progress}")
    if mem.next_step:
        out["Next step"].append(mem.next_step)
    return {k: v for k, v in out.items() if v}


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
