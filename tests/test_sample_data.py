"""The long sample conversations under tests/data/conversations are what the retention benchmark needs.

benchmarks/bench_retention.py measures which planted facts `ctxd context` keeps.
That only means something when the data holds up: valid JSONL that `ctxd chat
import` reads, 20K-100K tokens each, every fact planted early (a correction's
new value later, after the value it replaces), none of them within reach of a
sliding window at the end, and files the generator reproduces exactly.
"""

import json
import os
import subprocess
import sys

import pytest

from ctxd.memory.text.tokens import estimate

DATA = os.path.join(os.path.dirname(__file__), "data", "conversations")
GENERATOR = os.path.join(DATA, "generate.py")
KINDS = {"number", "date", "version", "path", "url", "identifier", "constraint", "correction", "question",
         "preference"}
ROLES = {"user", "assistant", "tool"}
WINDOW = 4000  # the benchmark's budget: the tail a sliding window of that size keeps
NAMES = sorted(n[: -len(".jsonl")] for n in os.listdir(DATA) if n.endswith(".jsonl"))


def load(name):
    with open(os.path.join(DATA, name + ".jsonl"), encoding="utf-8") as f:
        lines = f.read().split("\n")
    assert lines[-1] == "", "the file ends with a newline"
    turns = [json.loads(line) for line in lines[:-1]]
    with open(os.path.join(DATA, name + ".facts.json"), encoding="utf-8") as f:
        facts = json.load(f)
    return turns, facts


def first(turns, text):
    return next((i for i, t in enumerate(turns) if text in t["content"]), None)


def test_the_set_is_there():
    assert len(NAMES) >= 4
    for name in NAMES:
        assert os.path.exists(os.path.join(DATA, name + ".facts.json")), name
    total = sum(os.path.getsize(os.path.join(DATA, n)) for n in os.listdir(DATA))
    assert total < 3 * 1024 * 1024  # a few MB at most, generator included


@pytest.mark.parametrize("name", NAMES)
def test_conversation_is_valid_jsonl_of_the_right_size(name):
    turns, _ = load(name)
    for i, t in enumerate(turns):
        assert isinstance(t, dict) and set(t) == {"role", "content"}, f"line {i + 1}: {t!r:.80}"
        assert t["role"] in ROLES, f"line {i + 1}: role {t['role']!r}"
        assert isinstance(t["content"], str) and t["content"].strip(), f"line {i + 1}: empty content"
    assert turns[0]["role"] == "user"
    tokens = sum(estimate(t["content"]) for t in turns)
    assert 20_000 <= tokens <= 100_000, f"{name}: {tokens} estimated tokens"


@pytest.mark.parametrize("name", NAMES)
def test_facts_are_planted_early_and_corrections_come_later(name):
    turns, facts = load(name)
    early = max(1, len(turns) // 10)
    assert isinstance(facts, list) and len(facts) >= 10
    ids = [f["id"] for f in facts]
    assert len(ids) == len(set(ids)), "fact ids are unique"
    for f in facts:
        assert set(f) >= {"id", "kind", "text"}, f
        assert f["kind"] in KINDS, f
        assert isinstance(f["text"], str) and f["text"].strip(), f
        where = first(turns, f["text"])
        assert where is not None, f"{f['id']}: {f['text']!r} is not in the conversation"
        if f["kind"] == "correction":
            old = f.get("superseded")
            assert isinstance(old, str) and old, f"{f['id']}: a correction names the value it supersedes"
            assert old not in f["text"] and f["text"] not in old, f"{f['id']}: old and new must be told apart"
            was = first(turns, old)
            assert was is not None and was < early, f"{f['id']}: {old!r} is planted early"
            assert was < where, f"{f['id']}: {old!r} comes before its correction {f['text']!r}"
        else:
            assert "superseded" not in f, f"{f['id']}: only corrections supersede"
            assert where < early, f"{f['id']}: {f['text']!r} first at turn {where}, after the first {early}"
    kinds = {f["kind"] for f in facts}
    assert {"correction", "constraint", "question"} <= kinds, f"{name} lacks {({'correction', 'constraint', 'question'} - kinds)}"


def test_every_kind_and_both_languages_are_covered():
    kinds, cjk_heavy, huge_tool = set(), 0, 0
    for name in NAMES:
        turns, facts = load(name)
        kinds |= {f["kind"] for f in facts}
        text = "".join(t["content"] for t in turns)
        if sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff") > len(text) * 0.2:
            cjk_heavy += 1
        huge_tool += any(t["role"] == "tool" and len(t["content"]) >= 40_000 for t in turns)
    assert kinds == KINDS
    assert cjk_heavy >= 2  # the Chinese one and the mixed one
    assert huge_tool >= 1  # a huge tool output, which the store offloads


@pytest.mark.parametrize("name", NAMES)
def test_a_sliding_window_at_the_end_holds_no_fact(name):
    """So the benchmark measures what ctxd keeps, not what happens to be recent."""
    turns, facts = load(name)
    tail, used = [], 0
    for t in reversed(turns):
        cost = estimate(t["content"]) + 4
        if used + cost > WINDOW and len(tail) >= 2:
            break
        tail.append(t["content"])
        used += cost
    # twice the window, for a margin against a differently calibrated estimator
    more = turns[-2 * len(tail):]
    text = "\n".join(t["content"] for t in more)
    found = [f["id"] for f in facts if f["text"] in text or (f.get("superseded") and f["superseded"] in text)]
    assert not found, f"{name}: facts near the end: {found}"


def test_the_generator_reproduces_the_files(tmp_path):
    p = subprocess.run([sys.executable, GENERATOR, "--out", str(tmp_path)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    made = sorted(os.listdir(tmp_path))
    committed = sorted(n for n in os.listdir(DATA) if n.endswith((".jsonl", ".facts.json")))
    assert made == committed
    for n in made:
        with open(os.path.join(DATA, n), "rb") as a, open(tmp_path / n, "rb") as b:
            assert a.read() == b.read(), f"{n} differs from what generate.py writes: run it and commit the result"


@pytest.mark.parametrize("name", NAMES)
def test_conversation_imports_as_typed_items(name, tmp_path):
    """What the benchmark does first: `ctxd chat import` of the file, every line one item of the
    kind its role means (user -> prompt, assistant -> reply, tool -> tool_result)."""
    from ctxd.memory.ingest.importing import import_file
    from ctxd.memory.store.db import Store

    turns, _ = load(name)
    with Store(str(tmp_path / "ctx")) as store:
        r = import_file(store, os.path.join(DATA, name + ".jsonl"))
        assert (r.format, r.added, r.malformed) == ("jsonl", len(turns), 0)
        kinds = {"user": "prompt", "assistant": "reply", "tool": "tool_result"}
        assert [m.kind for m in store.iter_all()] == [kinds[t["role"]] for t in turns]
