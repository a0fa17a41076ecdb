"""The session memory: what a developer would write down for the next session, built from
the typed items of the store (ctxd.memory.store.items), never from patterns in flattened text.

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

from ctxd.memory.context import facts as facts_mod
from ctxd.memory.store import items
from ctxd.memory.context.session_text import clean, cut, is_narration, is_substantive, looks_like_code, tidy
from ctxd.memory.context.session_tools import (NEXT_PARTS, PLAN_PARTS, POINT_PARTS, TEST_CMD, TaskBoard, absolute_path,
                                       anchor_dir, commit_subject, error_line, is_open, plan_todos, relative_to,
                                       summary_parts, test_counts, todo_list)

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


def _data(row):
    d = row["data"]
    if isinstance(d, str):
        try:
            return json.loads(d)
        except ValueError:
            return None
    return d


# -- building ----------------------------------------------------------------------------

DECISION_PROMPTS = 40  # the newest prompts whose constraints and preferences are read
HISTORY = 4000  # the newest edit and commit calls read across the project's sessions
TASK_CREATE = ("TaskCreate",)
TASK_UPDATE = ("TaskUpdate",)
_NEXT = re.compile(r"(?i)\b(?:next step|next,? (?:i|we)(?:'ll| will| should)|then (?:i|we)(?:'ll| will)|"
                   r"after that,? (?:i|we)|i'll now|the remaining step)\b|下一步|接下来")


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
        paths = [p for p in (absolute_path(p, base) for p in (d.get("paths") or [])) if p]
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
        todos = todo_list(args)
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
            for p in (p for p in (absolute_path(p, None) for p in (d.get("paths") or [])) if p):
                edits[p] = edits.get(p, 0) + 1
                last_edit[p] = max(last_edit.get(p, (0, 0)), (r["ts"] or 0, r["id"]))
                raw_paths.append(p)
    anchor = anchor_dir(list(edits) + list(reads) + raw_paths, workdirs, root)
    mem.files = [(relative_to(p, anchor), n) for p, n in
                 sorted(edits.items(), key=lambda kv: (-kv[1], -last_edit[kv[0]][0], -last_edit[kv[0]][1]))]
    mem.file_days = {relative_to(p, anchor): _day(last_edit[p][0]) for p in edits}
    mem.reads = [relative_to(p, anchor) for p, _ in sorted(reads.items(), key=lambda kv: -kv[1]) if p not in edits]

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
            todos = plan_todos(plan)
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
    m = TEST_CMD.search(cmd)
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
    todos = todo_list(d.get("args"))
    if todos is not None and tool not in items.SHELL_TOOLS:
        done = sum(1 for _t, s in todos if s in ("completed", "done"))
        return f"{tool}: {len(todos)} items, {done} done"
    line = clean(content, 200)
    if re.search(r"[\[{]\"|\":|=\[|=\{", line) and not d.get("command"):
        paths = d.get("paths") or []
        line = tool + (" " + ", ".join(paths) if paths else "")
    return line
