"""Codex's notify program on the payload shapes Codex really sends (tests/contracts/real/hooks/codex/):
the docs' example (no thread-id, no cwd), Codex Desktop's title-generation turn, and `codex exec resume`
listing every prompt of the thread in each turn's input-messages."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ctxdtest import ctxd

SAMPLES = Path(__file__).parent / "contracts" / "real" / "hooks" / "codex"  # a copy of shared/data/real-transcripts

CTXD = shutil.which("ctxd")
pytestmark = pytest.mark.skipif(CTXD is None, reason="the ctxd console script is not on PATH")


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def notify(project, data, cwd=None):
    r = ctxd("chat", "hook", "codex-notify", json.dumps(data), cwd=cwd or project, script=True)
    assert r.returncode == 0 and r.stdout == "", r
    return r


def rows(project):
    p = ctxd("chat", "log", "-n", "1000", "--json", cwd=project, script=True)
    if p.returncode == 4 and "no conversation recorded" in p.stderr:
        return []  # nothing recorded at all: chat log says so (exit 4)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    return [(m["kind"], m["content"]) for m in map(json.loads, out.splitlines())]


def sample(name, project):
    data = json.loads((SAMPLES / name).read_text())
    if "cwd" in data:
        data["cwd"] = str(project)
    return data


def test_the_docs_example_records_the_turn_in_the_working_directory(project):
    data = sample("notify_docs_example.json", project)
    assert "cwd" not in data and "thread-id" not in data
    r = notify(project, data)
    assert r.stderr == ""
    assert rows(project) == [("prompt", "Rename `foo` to `bar` and update the callsites."),
                             ("reply", "Rename complete and verified `cargo build` succeeds.")]
    notify(project, data)  # Codex may run it again: nothing twice
    assert len(rows(project)) == 2


def test_codex_desktop_title_turn_is_not_a_conversation_turn(project):
    notify(project, sample("notify_desktop_title.json", project))
    assert rows(project) == []


def test_an_answer_that_only_looks_like_json_is_kept(project):
    data = dict(sample("notify_desktop_title.json", project), **{
        "input-messages": ["Give me the title field of package.json"],
        "last-assistant-message": '{"title": "ctxd", "version": "1.0"}'})
    notify(project, data)
    assert [k for k, _ in rows(project)] == ["prompt", "reply"]


def test_resume_listing_every_prompt_stores_each_once(project):
    real = sample("notify_real_shape.json", project)
    thread, first, second, third = real["thread-id"], *real["input-messages"]
    base = {"type": "agent-turn-complete", "thread-id": thread, "cwd": str(project)}
    notify(project, dict(base, **{"turn-id": "t1", "input-messages": [first], "last-assistant-message": "one"}))
    notify(project, dict(base, **{"turn-id": "t2", "input-messages": [first, second],
                                  "last-assistant-message": "two"}))
    notify(project, dict(base, **{"turn-id": "t3", "input-messages": [first, second, third],
                                  "last-assistant-message": "three"}))
    assert rows(project) == [("prompt", first), ("reply", "one"), ("prompt", second), ("reply", "two"),
                             ("prompt", third), ("reply", "three")]


def test_a_prompt_typed_again_is_a_new_prompt(project):
    base = {"type": "agent-turn-complete", "thread-id": "th", "cwd": str(project)}
    notify(project, dict(base, **{"turn-id": "t1", "input-messages": ["run the tests"],
                                  "last-assistant-message": "done"}))
    notify(project, dict(base, **{"turn-id": "t2", "input-messages": ["run the tests"],
                                  "last-assistant-message": "done again"}))
    assert [c for k, c in rows(project) if k == "prompt"] == ["run the tests", "run the tests"]


def test_a_turn_with_several_new_inputs_keeps_them_all(project):
    real = sample("notify_real_shape.json", project)
    notify(project, real)
    assert [c for k, c in rows(project) if k == "prompt"] == real["input-messages"]
