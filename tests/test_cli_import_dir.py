"""ctxd chat import: a file in another tool's format than --format names is refused, not
"0 added"; a directory (a Claude Code project folder) imports every session in it,
sub-agents included, oldest first. Real transcripts from tests/contracts/real."""

import json
import os
from pathlib import Path

import pytest

from ctxdtest import ctxd

REAL = Path(__file__).parent / "contracts" / "real"
SHORT, SUB, HEAVY = (REAL / "claude" / n for n in ("short.jsonl", "subagent.jsonl", "tool_heavy.jsonl"))


def project(path):
    (path / ".git").mkdir(parents=True)
    return path


@pytest.mark.parametrize("fmt", ["codex", "gemini", "jsonl", "aider"])
def test_claude_file_named_as_another_format_is_refused(tmp_path, fmt):
    proj = project(tmp_path / "p")
    p = ctxd("chat", "import", str(SHORT), "--format", fmt, cwd=proj)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == (f"ctxd: {SHORT}: this is a claude file, not {fmt}: nothing imported "
                        f"(leave --format out, or --format claude)\n")
    assert ctxd("chat", "log", cwd=proj).stdout == ""


def test_nothing_recognised_in_a_named_format_is_refused(tmp_path):
    proj = project(tmp_path / "p")
    f = tmp_path / "notes.jsonl"
    f.write_text('{"a": 1}\n{"b": 2}\n')
    p = ctxd("chat", "import", str(f), "--format", "codex", cwd=proj)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == f"ctxd: {f}: nothing in it reads as a codex file: nothing imported (check --format)\n"


def test_the_right_format_still_imports(tmp_path):
    proj = project(tmp_path / "p")
    p = ctxd("chat", "import", str(SHORT), "--format", "claude", cwd=proj)
    assert p.returncode == 0 and " added, 0 already present (claude)" in p.stdout


def _as_sidechain(src, dst):
    dst.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for line in src.read_text().splitlines():
        obj = json.loads(line)
        if "sessionId" in obj:
            obj["isSidechain"] = True
        out.append(json.dumps(obj))
    dst.write_text("\n".join(out) + "\n")


def test_a_claude_project_folder_imports_every_session_oldest_first(tmp_path):
    folder = tmp_path / ".claude" / "projects" / "-home-me-proj"
    folder.mkdir(parents=True)
    # names sort against time (491e… is the later session), mtimes too
    (folder / "55604662-cf2a-4331-851a-ec234028f8ca.jsonl").write_text(SHORT.read_text())
    (folder / "491e126e-1e71-469c-ade2-fcc8af567c74.jsonl").write_text(SUB.read_text())
    agent = folder / "491e126e-1e71-469c-ade2-fcc8af567c74" / "subagents" / "agent-a1b2c3.jsonl"
    _as_sidechain(HEAVY, agent)
    for n, f in enumerate([agent, folder / "491e126e-1e71-469c-ade2-fcc8af567c74.jsonl",
                           folder / "55604662-cf2a-4331-851a-ec234028f8ca.jsonl"]):
        os.utime(f, (1_000_000 + n, 1_000_000 + n))

    proj = project(tmp_path / "p")
    p = ctxd("chat", "import", str(folder) + "/", cwd=proj)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        str(folder / "55604662-cf2a-4331-851a-ec234028f8ca.jsonl"),
        str(folder / "491e126e-1e71-469c-ade2-fcc8af567c74.jsonl"), str(agent)]
    assert all(line.endswith("(claude)") for line in lines)

    # the same as importing the three files one by one, in that order
    other = project(tmp_path / "q")
    for f in (SHORT, SUB, agent):
        assert ctxd("chat", "import", str(f), cwd=other).returncode == 0

    def count(d):
        return len(ctxd("chat", "log", "-n", "100000", "--json", cwd=d).stdout.splitlines())

    assert count(proj) == count(other) > 0
    again = ctxd("chat", "import", str(folder), cwd=proj)
    assert again.returncode == 0 and all(" 0 added" in line for line in again.stdout.splitlines())


def test_a_folder_without_transcripts_is_one_line(tmp_path):
    proj = project(tmp_path / "p")
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    (empty / "sub" / "readme.txt").write_text("hi")
    p = ctxd("chat", "import", str(empty), cwd=proj)
    assert p.returncode == 4 and p.stdout == ""
    assert p.stderr == f"ctxd: {empty}: no transcripts in it (.jsonl, .json, .aider.chat.history.md, logs.db)\n"
