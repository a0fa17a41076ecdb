#!/usr/bin/env python3
"""Write the held-out conversations for the retention benchmark (and check them).

    python3 benchmarks/heldout/generate.py [--check]
    python3 benchmarks/bench_retention.py --data benchmarks/heldout

Cases the planted set of tests/data/conversations does not have, in English and Chinese:
questions declared unresolved (a reply follows them and does not settle them), open questions
without a question mark ("My open question: …", "我的疑问：…"), a learner's stated progress
("I've mastered …", "我已经学会了…") and the pointer to a tool output too large to keep inline
(ctxd offloads it to outputs/<hash>.txt). The facts are planted in the first tenth of the turns;
the rest of each conversation is the filler of a conversation of the planted set (its own
early turns, where its facts live, left out), so a sliding window keeps none of them.
Deterministic; nothing here depends on ctxd.
"""

import argparse
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PLANTED = os.path.join(REPO, "tests", "data", "conversations")


def _filler(name):
    with open(os.path.join(PLANTED, name + ".jsonl"), encoding="utf-8") as f:
        turns = [json.loads(l) for l in f if l.strip()]
    return turns[len(turns) // 10 + 2:]  # past the planted set's own facts


def _log(lines, seed):
    """A tool output too large to keep inline (> 8,192 characters), deterministic."""
    out = []
    for i in range(lines):
        h = hashlib.sha256(f"{seed}:{i}".encode()).hexdigest()[:12]
        out.append(f"{i:05d} level=info req={h} path=/api/v1/items status=200 dur={(i * 37) % 400}ms")
    return "\n".join(out)


def _pointer(content):
    return f"outputs/{hashlib.sha256(content.encode('utf-8')).hexdigest()[:24]}.txt"


def probe_en():
    log = _log(260, "probe")
    early = [
        ("user", "We're chasing a flaky rollout of checkout-api on cluster prod-eu-2; the readiness probe hits "
                 "/healthz/ready on port 8443."),
        ("assistant", "Understood. Share the pod events and the probe definition and we can go through them."),
        ("user", "Still unresolved: why does the readiness probe pass while the pod logs show connection refused "
                 "from postgres-primary"),
        ("assistant", "One explanation is that the probe only checks the HTTP listener, not the database pool. "
                      "Compare the probe handler with the startup sequence."),
        ("user", "Here is the full access log of the failing pod."),
        ("tool", log),
        ("assistant", "The access log is long; the relevant part is the burst of 200s right before the restart."),
        ("user", "I've mastered reading kubectl describe events, so skip the basics there."),
        ("assistant", "Good, then we focus on the probe timings."),
        ("user", "My open question: whether the liveness probe should share the readiness endpoint at all"),
        ("assistant", "Sharing it is common but risky: a slow dependency can then restart healthy pods."),
        ("user", "I still don't understand why terminationGracePeriodSeconds does not cover the preStop hook"),
        ("assistant", "The grace period starts when the pod is marked for deletion, and the preStop hook runs "
                      "inside it, so a long hook eats into the time left for SIGTERM handling."),
        ("user", "I have now learned how the kubelet schedules probe retries with periodSeconds and failureThreshold."),
        ("assistant", "Then the next step is to line those numbers up against the restart timestamps."),
    ]
    facts = [
        {"id": "unresolved", "kind": "question", "text": "why does the readiness probe pass while the pod logs "
                                                          "show connection refused from postgres-primary"},
        {"id": "pointer", "kind": "pointer", "text": _pointer(log)},
        {"id": "mastered", "kind": "progress", "text": "I've mastered reading kubectl describe events"},
        {"id": "open", "kind": "question", "text": "whether the liveness probe should share the readiness endpoint"},
        {"id": "still", "kind": "question", "text": "why terminationGracePeriodSeconds does not cover the preStop "
                                                     "hook"},
        {"id": "learned", "kind": "progress", "text": "learned how the kubelet schedules probe retries"},
    ]
    return "probe_unresolved_en", early, _filler("incident_debug_en"), facts


def os_zh():
    log = _log(240, "os")
    early = [
        ("user", "我在复习操作系统，准备下个月的期末考试，想把内存管理这一块彻底弄清楚。"),
        ("assistant", "好的，我们从你已经会的部分开始，再看还没弄懂的地方。"),
        ("user", "我已经学会了信号量和管程的用法，也搞懂了死锁的四个必要条件"),
        ("assistant", "很好，这些是后面讲进程同步的基础。"),
        ("user", "我的疑问：写时复制在 fork 之后到底什么时候真正复制物理页"),
        ("assistant", "写时复制时，父子进程先共享只读的物理页，任何一方第一次写入触发缺页异常，内核这时才复制该页。"),
        ("user", "还没弄懂多级反馈队列里优先级提升的时机"),
        ("assistant", "一般是每隔一个固定的时间片周期，把所有进程提升到最高优先级队列，防止饥饿。"),
        ("user", "这是我跑模拟器得到的完整页面置换日志。"),
        ("tool", log),
        ("assistant", "日志很长，关键是缺页次数随帧数增加反而上升的那一段。"),
        ("user", "仍然不明白为什么 Belady 异常只出现在 FIFO 这类算法里"),
        ("assistant", "因为 LRU 和 OPT 属于栈式算法，帧数增加时驻留集合是包含关系，FIFO 不满足这个性质。"),
        ("user", "TLB 命中之后还需要检查页表项里的保护位吗"),
        ("assistant", "TLB 项本身缓存了保护位，命中时直接检查，不需要再访问页表。"),
        ("user", "我已经掌握了两级页表的地址划分方法"),
        ("assistant", "那下一步可以练习反置页表的计算题。"),
    ]
    facts = [
        {"id": "learned", "kind": "progress", "text": "我已经学会了信号量和管程的用法"},
        {"id": "doubt", "kind": "question", "text": "写时复制在 fork 之后到底什么时候真正复制物理页"},
        {"id": "not-yet", "kind": "question", "text": "多级反馈队列里优先级提升的时机"},
        {"id": "pointer", "kind": "pointer", "text": _pointer(log)},
        {"id": "still", "kind": "question", "text": "为什么 Belady 异常只出现在 FIFO 这类算法里"},
        {"id": "mastered", "kind": "progress", "text": "我已经掌握了两级页表的地址划分方法"},
    ]
    return "os_review_zh", early, _filler("tcp_learning_zh"), facts


def build(case):
    name, early, filler, facts = case()
    turns = [{"role": r, "content": c} for r, c in early]
    # the planted turns must sit in the first tenth: filler after them
    need = len(turns) * 10
    body = (filler * (need // len(filler) + 1))[:max(need, len(filler))]
    turns += body
    n = len(turns)
    for f in facts:
        if f["kind"] == "pointer":  # ctxd writes the pointer: the output it names is planted early
            where = [i for i, t in enumerate(turns) if _pointer(t["content"]) == f["text"]]
        else:
            where = [i for i, t in enumerate(turns) if f["text"] in t["content"]]
        assert where and max(where) < n // 10, (name, f["id"], where, n)
    jsonl = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in turns)
    return name, jsonl, json.dumps(facts, ensure_ascii=False, indent=1) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the files here; write nothing")
    args = ap.parse_args(argv)
    stale = []
    for case in (probe_en, os_zh):
        name, jsonl, facts = build(case)
        for suffix, text in ((".jsonl", jsonl), (".facts.json", facts)):
            path = os.path.join(HERE, name + suffix)
            if args.check:
                try:
                    with open(path, encoding="utf-8") as f:
                        if f.read() != text:
                            stale.append(path)
                except FileNotFoundError:
                    stale.append(path)
            else:
                with open(path, "w", encoding="utf-8", newline="\n") as f:
                    f.write(text)
        print(f"{name}: {jsonl.count(chr(10))} turns")
    if stale:
        print("out of date: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
