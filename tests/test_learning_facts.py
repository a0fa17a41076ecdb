"""Learning conversations keep open questions, stated progress and offloaded outputs' pointers;
the assistant thinking aloud is never a fact (issue 23). Real store, the real facts engine."""

import pytest

from ctxd.memory.context import fact_merge, facts
from ctxd.memory.store import items
from ctxd.memory.store.db import Store


@pytest.fixture
def store(tmp_path):
    s = Store(str(tmp_path / "ctx"), offload_threshold=2000)
    yield s
    s.close()


def _facts(store):
    fact_merge.refresh_facts(store)
    return {r["text"]: r for r in fact_merge.live_facts(store, 400, answered=False)}


def _talk(store, turns):
    c = dict(session="s", source="claude")
    recs = []
    for i, (kind, text) in enumerate(turns):
        recs.append(items.user_record(text, dedup=str(i), **c) if kind == "prompt" else
                    items.record(kind, text, dedup=str(i), **c))
    store.add_many(recs)


@pytest.mark.parametrize("text", [
    "Still unresolved: why does the readiness probe pass while the pod logs show connection refused",
    "My open question: whether the liveness probe should share the readiness endpoint",
    "I still don't understand why the grace period does not cover the preStop hook",
    "我的疑问：写时复制在 fork 之后到底什么时候真正复制物理页",
    "还没弄懂多级反馈队列里优先级提升的时机",
    "仍然不明白为什么 Belady 异常只出现在 FIFO 里",
])
def test_a_question_declared_open_stays_after_a_reply(store, text):
    _talk(store, [("prompt", text), ("reply", "One explanation is the probe only checks the listener.")])
    got = _facts(store)
    assert got[text]["tag"] == "question" and facts.declared_open(text)


@pytest.mark.parametrize("text", ["Should we shard the orders table?", "TLB 命中之后还要检查保护位吗",
                                  "为什么 TCP 需要三次握手"])
def test_a_question_only_asked_is_answered_by_the_reply(store, text):
    _talk(store, [("prompt", text), ("reply", "No: it fits one node.")])
    fact_merge.refresh_facts(store)
    assert facts.extract(1, 0, "user", text)[0][0] == "question" and not facts.declared_open(text)
    assert text not in {r["text"] for r in fact_merge.live_facts(store, 400, answered=False)}


@pytest.mark.parametrize("text", ["I've mastered reading kubectl describe events.",
                                  "I have now learned how the kubelet retries probes.",
                                  "我已经掌握了进程调度、虚拟内存和页表", "我已经学会了信号量和管程的用法"])
def test_stated_progress_is_a_fact(store, text):
    _talk(store, [("prompt", text), ("reply", "Good.")])
    assert "progress" in _facts(store)[text]["kinds"].split(",")


@pytest.mark.parametrize("text", ["Let me check the mix.exs file in lib/spotter.ex first.",
                                  "Now let me close the task and move to the next one:",
                                  "I need to remove the duplicate definition in lib/a.ex.",
                                  "Before drafting beads, I need to clarify:", "让我先看一下 config/dev.exs 的端口 4000"])
def test_narration_is_never_a_fact(store, text):
    _talk(store, [("prompt", "Set up credo for the project"), ("reply", text)])
    assert text not in _facts(store)


def test_the_assistant_states_no_requirement(store):
    _talk(store, [("prompt", "Set up credo; do not touch the CI config."),
                  ("reply", "Credo may report style issues in existing code — don't fix them in this task.")])
    got = _facts(store)
    assert got["Set up credo; do not touch the CI config."]["tag"] == "requirement"
    assert got["Credo may report style issues in existing code — don't fix them in this task."]["tag"] == "background"


def test_an_offloaded_outputs_pointer_is_kept_not_its_preview(store):
    log = "\n".join(f"{i:05d} GET /api/items 200 {i % 90} ms" for i in range(200))
    c = dict(session="s", source="claude")
    store.add_many([items.user_record("Here is the access log.", dedup="0", **c),
                    items.call_record("Bash", {"command": "kubectl logs checkout-api-7"}, call_id="c1", dedup="1",
                                      **c),
                    items.result_record(log, call_id="c1", tool="Bash", dedup="2", **c)])
    got = _facts(store)
    (pointer,) = [t for t in got if t.startswith("Full output (")]
    path = store.get(3).output_path
    assert pointer == f"Full output ({len(log):,} characters): {path}" and "/outputs/" in path
    assert not [t for t in got if "characters omitted" in t or t.startswith("00")]
