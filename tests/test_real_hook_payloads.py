"""Every hook payload the real AI CLIs sent (../shared/data/real-transcripts/hooks; its copy in
tests/contracts/real) through the real `ctxd chat hook`: as recorded on another machine (a cwd
that does not exist here), and moved into a project with the transcript it names, which is one of
the real transcripts beside it. Codex's notify payloads: tests/test_codex_notify.py.

The copy in tests/contracts/real is checked against ../shared file by file, so a file added
there is not missed here nor in tests/test_real_transcripts.py."""

import filecmp
import json
import os
import shutil
from pathlib import Path

import pytest

from ctxdtest import ctxd

COPY = Path(__file__).parent / "contracts" / "real"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "real-transcripts"
PAYLOADS = sorted(str(p.relative_to(COPY / "hooks")) for p in (COPY / "hooks").glob("*/*.json")
                  if p.parent.name != "codex")
PROMPT_EVENTS = {"UserPromptSubmit", "BeforeAgent"}  # a prompt typed twice is two prompts
READS_TRANSCRIPT = {"Stop", "SessionEnd", "PreCompact", "PreCompress"}  # Gemini's AfterAgent: its reply
INJECTING = {"SessionStart", "UserPromptSubmit", "BeforeAgent"}


def test_the_copy_is_the_shared_data_file_by_file():
    if not SHARED.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{SHARED} is missing: CI runs with ../shared beside the clone")
        pytest.skip(f"{SHARED} is not beside this checkout")

    def differences(cmp, where=""):
        out = [f"{where}{n}" for n in cmp.left_only + cmp.right_only + cmp.diff_files + cmp.funny_files]
        for name, sub in cmp.subdirs.items():
            out += differences(sub, f"{where}{name}/")
        return out

    assert differences(filecmp.dircmp(SHARED, COPY, ignore=["__pycache__"])) == []


def _payload(rel):
    tool = rel.split("/")[0]
    return tool, json.loads((COPY / "hooks" / rel).read_text(encoding="utf-8"))


def _transcript(path):
    """The real transcript a payload names (recorded under /tmp/rt-samples/... or ~/.claude/...),
    found by its file name among the real transcripts, or None."""
    name = os.path.basename(path or "")
    found = [p for p in COPY.rglob(name) if "hooks" not in p.parts] if name else []
    return found[0] if found else None


def hook(tool, data, cwd):
    r = ctxd("chat", "hook", tool, input=json.dumps(data), cwd=cwd, script=shutil.which("ctxd") is not None)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r
    return r


def _checked_output(tool, event, r):
    """Claude: nothing, or the JSON that injects; Gemini: always a JSON object."""
    if tool == "claude" and not r.stdout.strip():
        return None
    out = json.loads(r.stdout)
    assert isinstance(out, dict)
    if out:
        assert event in INJECTING and out["hookSpecificOutput"]["hookEventName"] == event
        assert isinstance(out["hookSpecificOutput"]["additionalContext"], str)
    return out


def rows(project):
    p = ctxd("chat", "log", "-n", "10000", "--json", cwd=project)
    if p.returncode == 4:
        return []
    assert p.returncode == 0, p.stderr
    return [json.loads(line) for line in p.stdout.splitlines()]


@pytest.mark.parametrize("rel", PAYLOADS)
def test_a_payload_recorded_elsewhere_stores_nothing_and_says_why_in_one_line(rel, tmp_path):
    tool, data = _payload(rel)
    assert not os.path.exists(data["cwd"])  # recorded on another machine
    home = Path(os.environ["HOME"])
    before = {p for p in home.rglob("*") if p.is_file()}
    r = hook(tool, data, tmp_path)
    _checked_output(tool, data["hook_event_name"], r)
    log = home / ".local" / "state" / "ctxd" / "ctxd.log"
    assert r.stderr == (f"ctxd: chat hook {tool}: nothing recorded (the payload's cwd {data['cwd']} does not "
                        f"exist); see {log}\n")
    assert {p for p in home.rglob("*") if p.is_file()} - before <= {log}  # no store, no spool: a log line


@pytest.mark.parametrize("rel", PAYLOADS)
def test_a_payload_in_a_project_records_what_it_carries_once(rel, tmp_path):
    tool, data = _payload(rel)
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    data["cwd"] = str(project)
    real = _transcript(data.get("transcript_path"))
    if real is None and str(data.get("transcript_path", "")).startswith("~/"):
        real = COPY / "claude" / "short.jsonl"  # that session's file is not public: another real one there
    if real is not None:  # where the CLI wrote it, a ~/ path kept as the CLI sent it
        where = data["transcript_path"]
        target = Path(os.path.expanduser(where)) if where.startswith("~") else tmp_path / "t" / real.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(real, target)
        if not where.startswith("~"):
            data["transcript_path"] = str(target)
    event = data["hook_event_name"]

    r = hook(tool, data, project)
    _checked_output(tool, event, r)
    assert r.stderr == ""
    got = rows(project)
    prompts = [m["content"] for m in got if m.get("kind") == "prompt"]
    if event in PROMPT_EVENTS:
        assert data["prompt"] in prompts  # what the user typed, as typed
    if event == "AfterAgent":
        assert data["prompt_response"].strip() in [m["content"].strip() for m in got if m.get("kind") == "reply"]
    if real is not None and event in READS_TRANSCRIPT:
        # these events import the transcript: the user's prompts are those `ctxd chat import` finds
        other = tmp_path / "imported"
        (other / ".git").mkdir(parents=True)
        assert ctxd("chat", "import", str(real), cwd=other).returncode == 0
        typed = {m["content"] for m in rows(other) if m.get("kind") == "prompt"}
        assert typed and typed <= set(prompts)

    if event not in PROMPT_EVENTS:
        hook(tool, data, project)  # the same event again (a resumed session, a retry): nothing twice
        again = rows(project)
        assert [(m["kind"], m["content"]) for m in again] == [(m["kind"], m["content"]) for m in got]
