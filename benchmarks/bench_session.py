"""Session memory on real coding sessions: what `ctxd context --budget 4000` and the SessionStart
injection keep of what a developer would write down for the next session.

For each Claude Code and Codex transcript in ../shared/data/real-transcripts/ (claude/*.jsonl,
claude/daaain/*.jsonl, codex/*.jsonl), in a fresh isolated project:

1. `ctxd chat import FILE` (the whole process, as a user runs it);
2. `ctxd context --budget 4000` (markdown) and `ctxd chat hook claude` with a SessionStart payload
   (its hookSpecificOutput.additionalContext);
3. in each output, the share of
   - the 10 most-edited files (Edit/Write/MultiEdit/NotebookEdit, apply_patch headers),
   - the last 5 typed requests (what the human typed: no tool results, no CLI-injected text),
   - the session's commit subjects (`git commit -m`, or the `[branch sha] subject` result line),
   - its open todos (the last TodoWrite / update_plan list, status not completed),
   and the number of noise lines: raw JSON, `\\n` / `\\"` escapes, `<output-file>` pointers,
   "Read the output file" lines, `[tool_use ...]` flattening, Read's line-number arrows,
   CLI wrappers (`<local-command-stdout>`, `<command-name>`, `<system-reminder>`).

The ground truth is computed here from the raw JSON lines with a few lines of code of its own,
not with ctxd's importers or parsers. A file counts as present when its last two path components
appear; a request when its first 60 characters (whitespace collapsed) do, or for a redacted
request (`[REDACTED_… len=N sha=S]`) its len/sha stamp; a commit or todo when its text does.

What it does not measure: whether the memory is *right* beyond presence (an error paired with
the wrong fix would pass), sessions longer than the files here, or other AI CLIs. The dev data
holds no `git commit` at all: the commit share is n/a until sessions that commit are added (the
unit tests cover commit subjects).

Targets: >= 80 % files, >= 80 % requests, >= 60 % commits, >= 80 % todos, 0 noise lines.
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
TARGETS = {"files": 0.8, "requests": 0.8, "commits": 0.6, "todos": 0.8}
SRC = None  # --ctxd-src: measure another ctxd checkout


# -- ground truth, from the raw lines --------------------------------------------------------

EDIT_NAMES = {"Edit", "Write", "MultiEdit", "NotebookEdit"}
_INJECTED = ("<", "[Request interrupted", "Caveat:", "This session is being continued", "# AGENTS.md")
_PATCH = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.M)
_COMMIT_RESULT = re.compile(r"(?m)^\[[^\]\s]+(?: \(root-commit\))? [0-9a-f]{7,40}\] (.+)$")


def _lines(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                yield json.loads(line)
            except ValueError:
                continue


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


def truth_claude(path):
    edits, requests, commits, todos = {}, [], [], None
    cmd_of = {}
    for d in _lines(path):
        if not isinstance(d, dict):
            continue
        msg = d.get("message") if isinstance(d.get("message"), dict) else {}
        content = msg.get("content")
        if d.get("type") == "user" and not d.get("isMeta") and not d.get("isSidechain"):
            texts = [content] if isinstance(content, str) else [
                c.get("text", "") for c in content or [] if isinstance(c, dict) and c.get("type") == "text"]
            for t in texts:
                if t.strip() and not t.lstrip().startswith(_INJECTED):
                    requests.append(t)
            for c in content if isinstance(content, list) else []:
                if isinstance(c, dict) and c.get("type") == "tool_result" and c.get("tool_use_id") in cmd_of:
                    out = c.get("content")
                    out = out if isinstance(out, str) else " ".join(
                        x.get("text", "") for x in out or [] if isinstance(x, dict))
                    m = _COMMIT_RESULT.search(out or "")
                    if m and not c.get("is_error"):
                        commits.append(m.group(1).strip())
                        cmd_of.pop(c["tool_use_id"])
        if d.get("type") == "assistant" and isinstance(content, list):
            for c in content:
                if not isinstance(c, dict) or c.get("type") != "tool_use":
                    continue
                inp = c.get("input") if isinstance(c.get("input"), dict) else {}
                if c.get("name") in EDIT_NAMES:
                    p = inp.get("file_path") or inp.get("notebook_path")
                    if p:
                        edits[p] = edits.get(p, 0) + 1
                elif c.get("name") == "TodoWrite" and isinstance(inp.get("todos"), list):
                    todos = [t for t in inp["todos"] if isinstance(t, dict)]
                elif c.get("name") == "Bash" and isinstance(inp.get("command"), str):
                    subject = _commit_from_command(inp["command"])
                    if subject:
                        cmd_of[c.get("id")] = subject
    commits += [s for s in cmd_of.values() if s not in commits]  # commands whose result said no subject
    open_todos = [t.get("content", "") for t in todos or [] if t.get("status") != "completed" and t.get("content")]
    return edits, requests, commits, open_todos


def truth_codex(path):
    edits, requests, commits, todos = {}, [], [], None
    items = []  # user messages as response items: the requests when no user_message event exists
    for d in _lines(path):
        p = d.get("payload") if isinstance(d, dict) else None
        if not isinstance(p, dict):
            continue
        if d.get("type") == "event_msg" and p.get("type") == "user_message" and isinstance(p.get("message"), str):
            t = p["message"]
            if t.strip() and not t.lstrip().startswith(_INJECTED):
                requests.append(t)
        if d.get("type") != "response_item":
            continue
        if p.get("type") == "message" and p.get("role") == "user":
            for c in p.get("content") or []:
                t = c.get("text") if isinstance(c, dict) and c.get("type") == "input_text" else None
                if isinstance(t, str) and t.strip() and not t.lstrip().startswith(_INJECTED):
                    items.append(t)
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
                    edits[f.strip()] = edits.get(f.strip(), 0) + 1
            if p.get("name") == "update_plan" and isinstance(args, dict) and isinstance(args.get("plan"), list):
                todos = [t for t in args["plan"] if isinstance(t, dict)]
            cmd = args.get("cmd") or args.get("command") if isinstance(args, dict) else None
            if isinstance(cmd, list):
                cmd = " ".join(cmd)
            if isinstance(cmd, str):
                s = _commit_from_command(cmd)
                if s:
                    commits.append(s)
    open_todos = [t.get("step", "") for t in todos or [] if t.get("status") != "completed" and t.get("step")]
    return edits, requests or items, commits, open_todos


# -- presence and noise ------------------------------------------------------------------------

_STAMP = re.compile(r"\[REDACTED_\w+ (len=\d+ sha=\w+)\]")


def _norm(s):
    return " ".join(s.split())


def has_file(path, text):
    tail = "/".join(path.rstrip("/").split("/")[-2:])
    return tail in text


def has_request(req, text):
    m = _STAMP.fullmatch(req.strip())
    if m:
        return m.group(1) in text
    return _norm(req)[:60] in _norm(text)


def has_text(s, text):
    return _norm(s)[:80] in _norm(text)


NOISE = [
    ("raw JSON", re.compile(r"^\s*(?:[-*]\s+)?(?:\{\s*\"|\[\s*\{\s*\")|\"\w+\":\s*[\[{\"]")),
    ("escape", re.compile(r"\\[nt\"]|\\u00[0-9a-f]{2}|\x1b\[")),
    ("output-file pointer", re.compile(r"</?output-file>|Output is being written to:|Read the output file", re.I)),
    ("flattened tool call", re.compile(r"\[tool_(?:use|call|result) ")),
    ("Read line numbers", re.compile(r"^\s*\d+→")),
    ("CLI wrapper", re.compile(r"</?(?:local-command-stdout|local-command-stderr|command-name|command-message|"
                               r"command-args|system-reminder|turn_aborted|user_shell_command|"
                               r"subagent_notification|task-notification)>")),
    ("tool boilerplate", re.compile(r"REMINDER: You MUST include the sources|Todos have been modified successfully|"
                                    r"The user doesn't want to proceed with this tool use")),
]


def noise_lines(text):
    out = []
    for line in text.splitlines():
        for name, rx in NOISE:
            if rx.search(line):
                out.append((name, line))
                break
    return out


# -- running ctxd ------------------------------------------------------------------------------

def ctxd(args, env, cwd, stdin=None):
    return subprocess.run([sys.executable, "-m", "ctxd", *args], env=env, cwd=cwd, capture_output=True, text=True,
                          input=stdin, timeout=600)


def run(path, keep=False, show=False):
    name = os.path.relpath(path, DATA)
    codex = "/codex/" in path
    edits, requests, commits, todos = (truth_codex if codex else truth_claude)(path)
    top = [p for p, _n in sorted(edits.items(), key=lambda kv: -kv[1])[:10]]
    last5 = list(dict.fromkeys(reversed(requests)))[:5]
    tmp = tempfile.mkdtemp(prefix="ctxd-session-")
    try:
        proj = os.path.join(tmp, "proj")
        os.makedirs(proj)
        with open(os.path.join(proj, ".contextrc"), "w", encoding="utf-8") as f:
            f.write("# session memory benchmark project\n")
        env = isolated_env(tmp, proj)
        if SRC:
            env["PYTHONPATH"] = SRC
        for args in (["allow", proj], ["chat", "import", path]):
            p = ctxd(args, env, proj)
            if p.returncode != 0:
                raise SystemExit(f"{name}: ctxd {' '.join(args[:2])} failed: {(p.stderr or p.stdout).strip()}")
        p = ctxd(["context", "--budget", str(BUDGET)], env, proj)
        if p.returncode != 0:
            raise SystemExit(f"{name}: ctxd context failed: {p.stderr.strip()}")
        context = p.stdout
        payload = {"session_id": "bench-new-session", "transcript_path": os.path.join(tmp, "none.jsonl"),
                   "cwd": proj, "hook_event_name": "SessionStart", "source": "startup"}
        p = ctxd(["chat", "hook", "claude"], env, proj, stdin=json.dumps(payload))
        try:
            inject = json.loads(p.stdout)["hookSpecificOutput"]["additionalContext"]
        except (ValueError, KeyError, TypeError):
            raise SystemExit(f"{name}: SessionStart gave no context: {p.stdout[:200]!r} {p.stderr[:200]!r}")
    finally:
        if keep:
            print(f"  kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if show:
        print(f"===== {name}: ctxd context --budget {BUDGET}\n{context}\n===== {name}: SessionStart\n{inject}\n")
    out = {"name": name, "truth": {"files": len(top), "requests": len(last5), "commits": len(commits),
                                   "todos": len(todos)}}
    for label, text in (("context", context), ("inject", inject)):
        out[label] = {
            "files": [has_file(f, text) for f in top],
            "requests": [has_request(r, text) for r in last5],
            "commits": [has_text(c, text) for c in commits],
            "todos": [has_text(t, text) for t in todos],
            "noise": noise_lines(text),
            "chars": len(text),
        }
    out["context_tokens"] = _tokens(context)
    return out


def _tokens(text):
    sys.path.insert(0, REPO)
    from ctxd.memory import tokens

    return tokens.count(text)


def _share(flags):
    return f"{sum(flags)}/{len(flags)}" if flags else "n/a"


def _pct(hit, total):
    return f"{100 * hit / total:5.1f}%" if total else "  n/a"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--show", action="store_true", help="print each output")
    ap.add_argument("--noise", action="store_true", help="print every noise line found")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--ctxd-src", help="measure the ctxd in this checkout (e.g. an older commit's tree)")
    a = ap.parse_args()
    global SRC
    SRC = os.path.abspath(a.ctxd_src) if a.ctxd_src else None
    files = sorted(glob.glob(os.path.join(a.data, "claude", "*.jsonl"))) + \
        sorted(glob.glob(os.path.join(a.data, "claude", "daaain", "*.jsonl"))) + \
        sorted(glob.glob(os.path.join(a.data, "codex", "*.jsonl")))
    if not files:
        raise SystemExit(f"no transcripts under {a.data}")
    results = [run(f, a.keep, a.show) for f in files]
    print(f"ctxd session memory benchmark: `ctxd context --budget {BUDGET}` | SessionStart injection "
          f"(`ctxd chat hook claude`), ground truth from the raw JSON")
    print(f"python {sys.version.split()[0]}; presence of the 10 most-edited files, the last 5 typed requests, "
          "commit subjects, open todos; noise lines\n")
    head = f"{'transcript':<44} {'files':>11} {'requests':>11} {'commits':>11} {'todos':>11} {'noise':>7} {'tokens':>6} {'inj chars':>9}"
    print(head)
    print("-" * len(head))
    totals = {side: {k: [0, 0] for k in ("files", "requests", "commits", "todos")} for side in ("context", "inject")}
    noise = {"context": 0, "inject": 0}
    for r in results:
        c, i = r["context"], r["inject"]
        cols = []
        for k in ("files", "requests", "commits", "todos"):
            cols.append(f"{_share(c[k]):>5}|{_share(i[k]):<5}")
            for side in ("context", "inject"):
                totals[side][k][0] += sum(r[side][k])
                totals[side][k][1] += len(r[side][k])
        noise["context"] += len(c["noise"])
        noise["inject"] += len(i["noise"])
        nm = r["name"] if len(r["name"]) <= 44 else r["name"][:20] + "…" + r["name"][-23:]
        print(f"{nm:<44} {cols[0]:>11} {cols[1]:>11} {cols[2]:>11} {cols[3]:>11} "
              f"{len(c['noise']):>3}|{len(i['noise']):<3} {r['context_tokens']:>6} {i['chars']:>9}")
        if a.noise:
            for side in ("context", "inject"):
                for kind, line in r[side]["noise"]:
                    print(f"    {side} {kind}: {line[:150]}")
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
    print(f"{'noise':<10} {noise['context']:>14} {noise['inject']:>14}   0")
    over = [r["name"] for r in results if r["context_tokens"] > BUDGET]
    big = [r["name"] for r in results if r["inject"]["chars"] > 10_000]
    print(f"\nbudget: {len(results) - len(over)}/{len(results)} contexts within {BUDGET} tokens (exact cl100k count "
          f"when the tokens extra is installed); {len(results) - len(big)}/{len(results)} injections within 10,000 "
          "characters")
    met = met and not noise["context"] and not noise["inject"] and not over and not big
    print(f"targets: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
