"""Handoff archives: schema, migrations, storage, concurrency, corruption, import/export,
inference (mastery, style, questions), environment and the CLI."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ctxd.errors import ExitCode
from ctxd.handoff import archive, archive_schema, build, environment, learner
from ctxd.memory.store.db import Store
from ctxdtest import ctxd, write_config

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = os.path.join(HERE, "data", "handoff", "seed_v1.0.json")
REPO = os.path.dirname(HERE)


def sample(session="s1", **over):
    a = archive_schema.empty(session, "2026-11-30T10:00:00Z", "zh")
    a["topic"] = {"title": "学习 TCP", "current_subtopic": "TIME_WAIT", "stage": "learning"}
    a["progress"] = {"completed": ["三次握手"], "in_progress": "TIME_WAIT 为什么要等 2MSL？", "next_up": ["拥塞控制"]}
    a["key_points"] = [{"concept": "三次握手", "understanding_level": "mechanism", "mastery_level": "medium",
                        "mastery_source": "inferred", "summary": "SYN → SYN+ACK → ACK \"quoted\" \\ back"}]
    a["questions"] = [{"question": "为什么是三次握手？", "status": "resolved", "created_at": "2026-11-30T09:00:00Z",
                       "resolved_at": "2026-11-30T09:05:00Z"},
                      {"question": "是否需要支持 IPv6", "status": "open", "created_at": "2026-11-30T09:01:00Z"}]
    a["learning_style"] = {"preference": "先讲原理再给代码", "wants_code_examples": True,
                           "wants_visual_descriptions": False, "depth": "deep", "pace": "slow"}
    a["environment"] = {"project_types": ["python"], "version_pins": [{"tool": "python", "version": "3.12.4",
                                                                       "file": ".python-version"}],
                        "git_branch": "main", "versions_mentioned": ["jdk-17", "v1.2.3"],
                        "processes": [{"pid": 42, "name": "python", "cwd": "/p", "ports": [8000]}]}
    a["context_footprint"] = {"tokens_compressed_from": 30000, "tokens_compressed_to": 2900,
                              "compression_ratio": 10.34}
    a["facts"] = [{"text": "预算不超过 3 万元", "tag": "requirement"},
                  {"text": "答辩时间是 2026-06-30", "tag": "background", "superseded": True}]
    a["summary"] = "Earlier conversation: 3 messages."
    a["extra_key"] = {"kept": [1, 2]}
    a.update(over)
    return a


# -- schema ---------------------------------------------------------------------------

def test_round_trip_save_load_is_equal(tmp_path):
    a = sample()
    path = archive.save(str(tmp_path), a)
    assert os.path.basename(path) == "s1_v1.json" and a["id"] == "s1_v1" and a["version"] == 1
    assert archive.load(path) == a
    assert json.loads(archive.dumps(a)) == a
    # every list element on a line of its own
    text = open(path, encoding="utf-8").read()
    assert '  {"text": "答辩时间是 2026-06-30", "tag": "background", "superseded": true}' in text.splitlines()
    assert archive.latest(str(tmp_path)) == ("s1_v1", path, a)
    assert archive.recent(str(tmp_path)) == [("s1_v1", "学习 TCP", archive.entries(str(tmp_path))[0]["updated"], path)]
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"


def test_empty_is_valid_and_latest_of_nothing_is_none(tmp_path):
    assert archive_schema.validate(archive_schema.empty("x")) and archive_schema.problems(archive_schema.empty("x")) == []
    assert archive.latest(str(tmp_path)) is None and archive.recent(str(tmp_path)) == []


@pytest.mark.parametrize("mutate,where", [
    (lambda a: a.pop("topic"), "topic: missing"),
    (lambda a: a["topic"].update(stage="done"), "topic.stage: 'done' is not one of"),
    (lambda a: a["progress"].update(completed="x"), "progress.completed: expected list"),
    (lambda a: a["progress"].update(in_progress=3), "progress.in_progress: expected str or null"),
    (lambda a: a["key_points"][0].update(mastery_level="expert"), "key_points[0].mastery_level"),
    (lambda a: a["questions"][1].update(status="closed"), "questions[1].status"),
    (lambda a: a["learning_style"].update(wants_code_examples="yes"), "learning_style.wants_code_examples"),
    (lambda a: a["environment"]["processes"].append({"pid": "1"}), "environment.processes[1]"),
    (lambda a: a["context_footprint"].update(compression_ratio="10"), "context_footprint.compression_ratio"),
    (lambda a: a["facts"].append({"text": "x", "tag": "gossip"}), "facts[2].tag"),
    (lambda a: a.update(language="fr"), "language: 'fr'"),
])
def test_validation_names_the_field(tmp_path, mutate, where):
    a = sample()
    mutate(a)
    with pytest.raises(archive_schema.ArchiveError) as e:
        archive.save(str(tmp_path), a)
    assert where in e.value.message and e.value.exit_code == ExitCode.CONFIG
    assert not os.path.exists(os.path.join(str(tmp_path), "handoffs", "s1_v1.json"))


# -- migrations -----------------------------------------------------------------------

def test_seed_1_0_migrates_with_defaults_and_is_not_touched():
    before = open(SEED, "rb").read()
    assert json.loads(before)["schema_version"] == "1.0"
    a = archive.load(SEED)
    assert open(SEED, "rb").read() == before
    assert a["schema_version"] == archive_schema.CURRENT_SCHEMA and a["migrated_from"] == "1.0"
    assert archive_schema.problems(a) == []
    assert a["session_id"] == "tcp-study" and a["created_at"] == "2025-03-02T21:14:05Z" and a["language"] == "zh"
    assert a["topic"] == {"title": "TCP 协议学习", "current_subtopic": "TIME_WAIT 状态与 2MSL", "stage": "learning"}
    assert a["progress"]["completed"][0] == "TCP 三次握手"
    assert a["progress"]["in_progress"] == "TIME_WAIT 为什么要等待 2MSL"
    assert a["progress"]["next_up"][0] == "拥塞控制：慢启动与拥塞避免"
    kp = {k["concept"]: k for k in a["key_points"]}
    assert kp["TCP 三次握手"]["mastery_level"] == "medium"  # among the completed topics
    assert kp["TIME_WAIT"]["mastery_level"] == "low" and kp["TIME_WAIT"]["understanding_level"] == "unknown"
    assert "2MSL" in kp["TIME_WAIT"]["summary"]
    qs = {q["question"]: q for q in a["questions"]}
    assert qs["为什么是三次握手而不是两次？"]["status"] == "resolved"
    assert qs["拥塞控制和流量控制有什么区别？"] == {"question": "拥塞控制和流量控制有什么区别？", "status": "open",
                                           "created_at": "2025-03-02T21:14:05Z"}
    s = a["learning_style"]
    assert s["wants_code_examples"] and s["wants_visual_descriptions"] and s["pace"] == "slow"
    assert s["preference"].startswith("先讲原理再给代码")
    assert a["environment"]["processes"] == [] and a["context_footprint"]["compression_ratio"] is None
    assert "NET-2026-017" in a["summary"]


def test_migrated_archive_saves_as_current_and_reloads(tmp_path):
    a = archive.load(SEED)
    path = archive.save(str(tmp_path), a)
    again = archive.load(path)
    assert again == a and json.load(open(path))["schema_version"] == archive_schema.CURRENT_SCHEMA


def test_newer_and_unknown_schemas_are_clear_errors(tmp_path):
    newer = tmp_path / "n_v1.json"
    newer.write_text(json.dumps({"schema_version": "9.1", "session_id": "n"}))
    with pytest.raises(archive_schema.ArchiveTooNew) as e:
        archive.load(str(newer))
    assert "9.1 is newer than this ctxd supports (up to 2.0)" in e.value.message
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"schema_version": "0.5"}))
    with pytest.raises(archive_schema.ArchiveError, match="unknown schema_version '0.5'"):
        archive.load(str(odd))


# -- storage ----------------------------------------------------------------------------

def test_keeps_last_five_versions_and_never_reuses_a_number(tmp_path):
    d = str(tmp_path)
    paths = [archive.save(d, sample()) for _ in range(7)]
    hd = os.path.join(d, "handoffs")
    assert sorted(n for n in os.listdir(hd) if n.endswith(".json") and n != "index.json") == \
        [f"s1_v{i}.json" for i in range(3, 8)]
    assert [os.path.basename(p) for p in paths] == [f"s1_v{i}.json" for i in range(1, 8)]
    es = archive.entries(d)
    assert [e["id"] for e in es] == [f"s1_v{i}" for i in range(7, 2, -1)]
    assert [e["status"] for e in es] == ["active"] + ["archived"] * 4
    # another session keeps its own five
    archive.save(d, sample("s2"))
    assert {e["id"] for e in archive.entries(d)} >= {"s2_v1", "s1_v7"}
    assert archive.latest(d, "s1")[0] == "s1_v7" and archive.latest(d)[0] == "s2_v1"
    # a deleted index is rebuilt from the files; numbering continues
    os.unlink(os.path.join(hd, "index.json"))
    assert os.path.basename(archive.save(d, sample())) == "s1_v8.json"


def test_never_overwrites_an_existing_file(tmp_path):
    d = str(tmp_path)
    archive.save(d, sample())
    hd = os.path.join(d, "handoffs")
    stray = os.path.join(hd, "s1_v2.json")
    open(stray, "w").write("not mine")  # e.g. written by a copy of ctxd that did not lock
    path = archive.save(d, sample())
    assert os.path.basename(path) == "s1_v3.json" and open(stray).read() == "not mine"
    with pytest.raises(FileExistsError):
        archive._write_new(path, "x")
    assert archive.load(path)["version"] == 3


def test_unreadable_index_is_kept_aside_and_rebuilt(tmp_path):
    d = str(tmp_path)
    archive.save(d, sample())
    idx = os.path.join(d, "handoffs", "index.json")
    open(idx, "w").write("{broken")
    archive.save(d, sample())
    assert [e["id"] for e in archive.entries(d)] == ["s1_v2", "s1_v1"]
    assert any(n.startswith("index.json.corrupt-") for n in os.listdir(os.path.join(d, "handoffs")))


SAVER = """
import sys, time
sys.path.insert(0, {repo!r})
from ctxd.handoff import archive, archive_schema
start = float(sys.argv[2])
while time.time() < start:
    time.sleep(0.001)
a = archive_schema.empty("race", "2026-11-30T10:00:00Z")
a["topic"]["title"] = "writer " + sys.argv[3]
print(archive.save(sys.argv[1], a))
"""


def test_two_processes_saving_at_once_both_succeed(tmp_path):
    d = str(tmp_path)
    code = SAVER.format(repo=REPO)
    start = time.time() + 0.5
    procs = [subprocess.Popen([sys.executable, "-c", code, d, str(start), str(i)], stdout=subprocess.PIPE, text=True)
             for i in range(2)]
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert sorted(os.path.basename(o) for o in outs) == ["race_v1.json", "race_v2.json"]
    titles = {archive.load(o)["topic"]["title"] for o in outs}
    assert titles == {"writer 0", "writer 1"}
    assert sorted(e["id"] for e in archive.entries(d)) == ["race_v1", "race_v2"]


# -- corrupt archives ---------------------------------------------------------------------

def test_corrupt_archive_names_readable_earlier_versions(tmp_path):
    d = str(tmp_path)
    p1, p2, p3 = (archive.save(d, sample()) for _ in range(3))
    garbage = b'{"schema_version": "2.0", "topic": {'
    open(p3, "wb").write(garbage)
    with pytest.raises(archive_schema.ArchiveCorrupt) as e:
        archive.load(p3)
    assert p3 in e.value.message and e.value.readable == ["s1_v2", "s1_v1"]
    assert "ctxd handoff show s1_v2" in e.value.message and e.value.exit_code == ExitCode.CONFIG
    # valid JSON but not an archive is corrupt too; v1 still loads
    open(p2, "w").write(json.dumps({"schema_version": "2.0", "topic": 3}))
    with pytest.raises(archive_schema.ArchiveCorrupt) as e:
        archive.latest(d)
    assert e.value.readable == ["s1_v1"]
    assert open(p3, "rb").read() == garbage  # never rewritten
    assert archive.load(p1)["version"] == 1


# -- inference tables -----------------------------------------------------------------------

@pytest.mark.parametrize("text,depth,level", [
    ("What is a TCP window?", "definition", "low"),
    ("what's TIME_WAIT", "definition", "low"),
    ("What does MSS mean?", "definition", "low"),
    ("Why is TIME_WAIT designed so?", "mechanism", "medium"),
    ("How does slow start work?", "mechanism", "medium"),
    ("What is the difference between LT and ET?", "mechanism", "medium"),
    ("What are the edge cases of Nagle's algorithm?", "edge_cases", "high"),
    ("Best practice for keepalive on mobile?", "edge_cases", "high"),
    ("What are the trade-offs of SO_REUSEPORT?", "edge_cases", "high"),
    ("什么是糊涂窗口综合征？", "definition", "low"),
    ("SYN flood 是怎么回事？", "definition", "low"),
    ("窗口缩放因子是干什么的？", "definition", "low"),
    ("三次握手为什么是三次？", "mechanism", "medium"),
    ("TIME_WAIT 为什么这样设计？", "mechanism", "medium"),
    ("快重传是怎么工作的？", "mechanism", "medium"),
    ("TIME_WAIT 的边界情况有哪些？", "edge_cases", "high"),
    ("连接池的最佳实践是什么？", "edge_cases", "high"),
    ("LT 和 ET 怎么权衡？", "edge_cases", "high"),
    ("CUBIC 和 BBR 选哪个？", "edge_cases", "high"),
    ("Let's move on.", None, "low"),
])
def test_question_depth_and_mastery(text, depth, level):
    assert learner.question_depth(text) == depth
    assert learner.mastery(depth) == level


def test_setbacks_lower_mastery_but_not_below_low():
    assert learner.mastery("edge_cases", 1) == "medium" and learner.mastery("edge_cases", 2) == "low"
    assert learner.mastery("mechanism", 5) == "low"


@pytest.mark.parametrize("text,yes", [
    ("Not quite: TIME_WAIT is on the side that closes first.", True),
    ("That's a common misconception.", True),
    ("不对，TIME_WAIT 出现在主动关闭的一方。", True),
    ("这是一个常见的误解。", True),
    ("Exactly right, well done.", False),
    ("对，就是这样。", False),
])
def test_correction_detection(text, yes):
    assert learner.is_correction(text) is yes


@pytest.mark.parametrize("text,concept", [
    ("SYN 队列和 accept 队列有什么区别？", "SYN 队列和 accept 队列"),
    ("室友问我：SYN flood 是怎么回事？我的服务器需要防吗？", "SYN flood"),
    ("实验室的师姐说直接用多线程更简单，为什么非要用 epoll？", "epoll"),
    ("什么是糊涂窗口综合征？", "糊涂窗口综合征"),
    ("前面讲过的这个我还是有点没懂：初始序列号为什么要随机？", "初始序列号"),
    ("What is a B-tree?", "B-tree"),
    ("How does TCP slow start work?", "TCP slow start"),
    ("Why is TIME_WAIT designed so?", "TIME_WAIT"),
    ("What are the edge cases of Nagle's algorithm?", "Nagle's algorithm"),
    ("How big is the connection pool per pod, and is that the bottleneck?", "connection pool per pod"),
])
def test_concept_of(text, concept):
    assert learner.concept_of(text) == concept


@pytest.mark.parametrize("texts,expect", [
    (["Can you show me the code for that?"], {"wants_code_examples": True}),
    (["请给代码示例"], {"wants_code_examples": True}),
    (["Could you draw a diagram of the state machine?"], {"wants_visual_descriptions": True}),
    (["能画个图说明一下吗"], {"wants_visual_descriptions": True}),
    (["Please keep answers brief."], {"depth": "shallow"}),
    (["简短一点就行"], {"depth": "shallow"}),
    (["Explain it in detail please."], {"depth": "deep"}),
    (["请详细讲讲"], {"depth": "deep"}),
    (["Slower please, step by step."], {"pace": "slow"}),
    (["讲慢一点"], {"pace": "slow"}),
    (["brief please", "actually, in detail this time"], {"depth": "deep"}),  # the latest request wins
    (["Hello there."], {"wants_code_examples": False, "wants_visual_descriptions": False, "depth": "normal",
                        "pace": "normal"}),
])
def test_learning_style_table(texts, expect):
    style = learner.infer_style(texts)
    assert {k: style[k] for k in expect} == expect


@pytest.mark.parametrize("text,yes", [
    ("Thanks, got it!", True), ("Makes sense, let's go with that.", True), ("明白了，谢谢！", True),
    ("懂了", True), ("How does it work?", False), ("这个会不会超出预算？", False),
])
def test_acknowledgements(text, yes):
    assert learner.is_ack(text) is yes


def test_versions_mentioned_skip_addresses_and_words():
    got = environment.versions_mentioned(["Upgrade to Django 4.2.11 and jdk-17, tag v1.2.3.",
                                "IP 127.0.0.1.8888 > 10.0.0.2.80", "finish within 3.5 hours", "Ubuntu 24.04"])
    assert got == ["Django 4.2.11", "jdk-17", "v1.2.3", "Ubuntu 24.04"]


# -- building from a store --------------------------------------------------------------------

CONVERSATION = [
    ("user", "Hi! I want to learn TCP congestion control for my thesis. The deadline is 2026-06-30, "
             "we run jdk-17 and the server listens on port 9527."),
    ("assistant", "Great, let's start with the basics."),
    ("user", "What is a congestion window?"),
    ("assistant", "The congestion window (cwnd) limits how much unacknowledged data the sender may have in flight."),
    ("user", "Thanks, got it!"),
    ("user", "So slow start grows cwnd linearly, why is it designed so?"),
    ("assistant", "Not quite: slow start doubles cwnd every round trip, it grows exponentially until ssthresh."),
    ("user", "Still open: whether we need to support IPv6, not decided yet."),
    ("user", "Please keep answers brief, and show me the code when you can."),
    ("user", "What are the edge cases of fast retransmit?"),
    ("assistant", "Three duplicate ACKs trigger it; with heavy reordering it can fire spuriously."),
]


@pytest.fixture
def store(tmp_path):
    s = Store(str(tmp_path / "ctx"))
    for role, text in CONVERSATION:
        s.add(role, text, session="study")
    yield s
    s.close()


def test_build_infers_learning_state(store, tmp_path):
    a = build.build(store, root=str(tmp_path), session=None, config_raw={})
    assert archive_schema.problems(a) == []
    assert a["session_id"] == "study" and a["language"] == "en"
    assert a["topic"]["title"] == "Learning TCP congestion control"
    assert a["topic"]["current_subtopic"] == "fast retransmit" and a["topic"]["stage"] == "learning"
    kp = {k["concept"]: k for k in a["key_points"]}
    assert kp["congestion window"]["mastery_level"] == "low"
    assert kp["congestion window"]["understanding_level"] == "definition"
    assert "cwnd" in kp["congestion window"]["summary"]
    slow = next(k for c, k in kp.items() if "slow start" in c)
    assert slow["understanding_level"] == "mechanism" and slow["mastery_level"] == "low"  # corrected once
    assert kp["fast retransmit"]["mastery_level"] == "high"
    qs = {q["question"]: q for q in a["questions"]}
    assert qs["What is a congestion window?"]["status"] == "resolved" and "resolved_at" in qs[
        "What is a congestion window?"]
    assert qs["What are the edge cases of fast retransmit?"]["status"] == "open"
    assert qs["Still open: whether we need to support IPv6, not decided yet."]["status"] == "open"
    assert "congestion window" in a["progress"]["completed"]
    assert a["progress"]["in_progress"] == "What are the edge cases of fast retransmit?"
    s = a["learning_style"]
    assert s["depth"] == "shallow" and s["wants_code_examples"] and not s["wants_visual_descriptions"]
    assert "jdk-17" in a["environment"]["versions_mentioned"]
    text = archive.dumps(a)
    for planted in ("2026-06-30", "9527", "jdk-17"):
        assert planted in text
    fp = a["context_footprint"]
    assert fp["tokens_compressed_from"] > 0 and fp["tokens_compressed_to"] > 0
    assert fp["compression_ratio"] == round(fp["tokens_compressed_from"] / fp["tokens_compressed_to"], 2)


def test_config_overrides_style_mastery_language_and_pool(store, tmp_path):
    raw = {"handoff": {"language": "zh", "auto_pool_questions": False, "compression_ratio": 2},
           "learning_style": {"pace": "fast", "wants_visual_descriptions": True},
           "mastery": {"Congestion Window": "high"}}
    a = build.build(store, root=str(tmp_path), config_raw=raw)
    assert a["language"] == "zh"
    assert a["learning_style"]["pace"] == "fast" and a["learning_style"]["wants_visual_descriptions"]
    kp = {k["concept"]: k for k in a["key_points"]}
    assert kp["congestion window"]["mastery_level"] == "high" and kp["congestion window"]["mastery_source"] == "config"
    assert a["questions"] == []  # no previous pool and new questions do not join it
    prev = dict(a, questions=[{"question": "What is a congestion window?", "status": "open",
                               "created_at": "2026-01-01T00:00:00Z"}])
    b = build.build(store, root=str(tmp_path), config_raw=raw, previous=prev)
    assert [(q["question"], q["status"], q["created_at"]) for q in b["questions"]] == \
        [("What is a congestion window?", "resolved", "2026-01-01T00:00:00Z")]


def test_teach_sessions_count_but_their_prompts_are_not_the_learner(store, tmp_path):
    prompt = ("# Teaching session: TCP\n- Open questions (answer these first):\n"
              "- [Q1] What are the edge cases of fast retransmit?\nUse diagrams, in detail, slower please.")
    store.add("system", prompt, source="teach", session="study")
    store.add("assistant", "[Q1] Reordering beyond three segments triggers it spuriously.\n[done: fast retransmit]",
              session="study")
    a = build.build(store, root=str(tmp_path), config_raw={})
    s = a["learning_style"]
    assert not s["wants_visual_descriptions"] and s["depth"] == "shallow" and s["pace"] == "normal"
    assert all(not k["concept"].startswith("#") for k in a["key_points"])
    qs = {q["question"]: q for q in a["questions"]}
    assert qs["What are the edge cases of fast retransmit?"]["status"] == "resolved"
    assert "fast retransmit" in a["progress"]["completed"]


@pytest.mark.parametrize("raw,msg", [
    ({"handoff": {"compression_ratio": 0}}, "compression_ratio"),
    ({"handoff": {"language": "fr"}}, "handoff.language"),
    ({"handoff": {"auto_pool_questions": "yes"}}, "auto_pool_questions"),
    ({"learning_style": {"depth": "bottomless"}}, "learning_style.depth"),
    ({"learning_style": {"colour": "blue"}}, "unknown key 'learning_style.colour'"),
    ({"mastery": {"x": "expert"}}, "[mastery]"),
])
def test_bad_config_is_a_config_error(store, raw, msg):
    from ctxd.errors import ConfigError

    with pytest.raises(ConfigError, match=msg.replace("[", r"\[").replace("]", r"\]")):
        build.build(store, config_raw=raw)


def test_facts_fit_the_compression_budget(tmp_path):
    s = Store(str(tmp_path / "ctx"))
    s.add("user", "Hard rules: the budget is at most 25,000 USD, never deploy on Fridays, use port 8443.",
          session="long")
    for i in range(300):
        s.add("user", f"Question {i}: how does the scheduler pick task {i} over the others?", session="long")
        s.add("assistant", "It looks at priority, then age, then the queue it came from. " * 6, session="long")
    for ratio in (10, 20):
        a = build.build(s, config_raw={"handoff": {"compression_ratio": ratio}})
        fp = a["context_footprint"]
        assert fp["tokens_compressed_to"] <= fp["tokens_compressed_from"] / ratio
        assert "25,000 USD" in archive.dumps(a)
    s.close()


# -- environment ------------------------------------------------------------------------

LISTENER = """
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(120)
"""


def test_environment_sees_a_listening_process_inside_the_project(tmp_path):
    root = tmp_path / "proj"
    (root / "web").mkdir(parents=True)
    (root / "pyproject.toml").touch()
    (root / ".python-version").write_text("3.12.4\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/feature/handoff\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    inside = subprocess.Popen([sys.executable, "-c", LISTENER], cwd=root / "web", stdout=subprocess.PIPE, text=True)
    other = subprocess.Popen([sys.executable, "-c", LISTENER], cwd=outside, stdout=subprocess.PIPE, text=True)
    try:
        port = int(inside.stdout.readline())
        other_port = int(other.stdout.readline())
        env = environment.environment(str(root), ["We use Django 4.2.11."])
        procs = {p["pid"]: p for p in env["processes"]}
        assert inside.pid in procs and procs[inside.pid]["ports"] == [port]
        assert os.path.realpath(procs[inside.pid]["cwd"]) == os.path.realpath(root / "web")
        assert other.pid not in procs and all(other_port not in p["ports"] for p in env["processes"])
        assert os.getpid() not in procs
        assert env["project_types"] == ["python"]
        assert env["version_pins"] == [{"tool": "python", "version": "3.12.4", "file": ".python-version"}]
        assert env["git_branch"] == "feature/handoff"
        assert env["versions_mentioned"] == ["Django 4.2.11"]
    finally:
        for p in (inside, other):
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=10)


# -- the CLI ----------------------------------------------------------------------------------

def project_with_conversation(path, session="study"):
    path.mkdir(parents=True, exist_ok=True)
    (path / "pyproject.toml").touch()
    lines = "".join(json.dumps({"role": r, "content": t, "session": session}) + "\n" for r, t in CONVERSATION)
    (path / "conv.jsonl").write_text(lines)
    p = ctxd("chat", "import", "--format", "jsonl", str(path / "conv.jsonl"), cwd=path)
    assert p.returncode == 0, p.stderr
    return path


def test_cli_handoff_list_show_markdown(tmp_path):
    proj = project_with_conversation(tmp_path / "a")
    p = ctxd("handoff", cwd=proj)
    assert p.returncode == 0, p.stderr
    path = p.stdout.strip()
    assert path.endswith(os.path.join("handoffs", "study_v1.json")) and archive.load(path)["session_id"] == "study"
    p = ctxd("handoff", "--format", "markdown", cwd=proj)
    md_path = p.stdout.strip()
    assert md_path.endswith("study_v2.md")
    md = open(md_path, encoding="utf-8").read()
    assert md.startswith("# Handoff: Learning TCP congestion control") and "## Key points" in md
    lst = ctxd("handoff", "list", cwd=proj).stdout
    assert lst.startswith("study_v2 ") and "active" in lst and "study_v1" not in lst
    assert "study_v1" in ctxd("handoff", "list", "--all", cwd=proj).stdout
    shown = ctxd("handoff", "show", "study_v1", "--format", "json", cwd=proj)
    assert json.loads(shown.stdout)["id"] == "study_v1"
    assert "# Handoff:" in ctxd("handoff", "show", cwd=proj).stdout
    out = tmp_path / "copy.json"
    assert ctxd("handoff", "--out", str(out), cwd=proj).returncode == 0 and json.load(open(out))["version"] == 3
    p = ctxd("handoff", "--out", str(out), cwd=proj)
    assert p.returncode == ExitCode.USAGE and "not overwriting" in p.stderr
    p = ctxd("handoff", "--session", "nope", cwd=proj)
    assert p.returncode == ExitCode.NOT_FOUND and p.stderr.startswith("ctxd: no messages in session 'nope'")


def test_cli_without_a_conversation_says_so(tmp_path):
    (tmp_path / "pyproject.toml").touch()
    p = ctxd("handoff", cwd=tmp_path)
    assert p.returncode == ExitCode.NOT_FOUND and p.stderr.startswith("ctxd: no conversation recorded")


def test_cli_two_terminals_at_once_both_get_a_version(tmp_path):
    proj = project_with_conversation(tmp_path / "a")
    e = dict(os.environ, PWD=str(proj))
    procs = [subprocess.Popen([sys.executable, "-m", "ctxd", "handoff"], cwd=proj, env=e, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    assert sorted(os.path.basename(o[0].strip()) for o in outs) == ["study_v1.json", "study_v2.json"]


def test_cli_corrupt_archive_one_line_exit_3(tmp_path):
    proj = project_with_conversation(tmp_path / "a")
    paths = [ctxd("handoff", cwd=proj).stdout.strip() for _ in range(3)]
    open(paths[2], "w").write("\x00garbage")
    before = open(paths[2], "rb").read()
    for args in (("handoff", "show", "study_v3"), ("handoff", "show")):
        p = ctxd(*args, cwd=proj)
        assert p.returncode == ExitCode.CONFIG and "Traceback" not in p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"ctxd: the handoff archive {paths[2]} is corrupt")
        assert "still load: study_v2, study_v1" in lines[0]
    assert open(paths[2], "rb").read() == before
    # a new handoff still works (the corrupt one is not its base) and overwrites nothing
    p = ctxd("handoff", cwd=proj)
    assert p.returncode == 0 and p.stdout.strip().endswith("study_v4.json") and open(paths[2], "rb").read() == before


def test_export_import_between_projects(tmp_path):
    a = project_with_conversation(tmp_path / "a")
    b = tmp_path / "b"
    b.mkdir()
    (b / "package.json").write_text("{}")
    src = ctxd("handoff", cwd=a).stdout.strip()
    out = tmp_path / "moved" / "study.json"
    p = ctxd("handoff", "export", "study", str(out), cwd=a)
    assert p.returncode == 0 and p.stdout.strip() == str(out)
    assert ctxd("handoff", "export", "study", str(out), cwd=a).returncode == ExitCode.USAGE  # never overwritten
    assert "shared" in ctxd("handoff", "list", cwd=a).stdout
    p = ctxd("handoff", "import", str(out), cwd=b)
    assert p.returncode == 0, p.stderr
    dest = p.stdout.strip()
    assert dest.endswith(os.path.join("handoffs", "study_v1.json")) and os.path.dirname(dest) != os.path.dirname(src)
    got, orig = archive.load(dest), archive.load(src)
    assert got["imported_from"]["id"] == "study_v1" and got["imported_from"]["path"] == str(out)
    strip = {"id", "version", "imported_from"}
    assert {k: v for k, v in got.items() if k not in strip} == {k: v for k, v in orig.items() if k not in strip}
    # an older schema imports through its migration; importing twice makes two versions
    p = ctxd("handoff", "import", SEED, cwd=b)
    assert p.returncode == 0 and archive.load(p.stdout.strip())["migrated_from"] == "1.0"
    assert ctxd("handoff", "import", str(out), cwd=b).stdout.strip().endswith("study_v2.json")


def test_global_config_applies_to_every_project(tmp_path, isolated_paths):
    write_config(isolated_paths, f"[trust]\nroots = [{str(tmp_path)!r}]\n[handoff]\nlanguage = \"zh\"\n"
                                 "compression_ratio = 4\n[learning_style]\npace = \"slow\"\n")
    for name in ("a", "b"):
        proj = project_with_conversation(tmp_path / name)
        a = archive.load(ctxd("handoff", cwd=proj).stdout.strip())
        assert a["language"] == "zh" and a["learning_style"]["pace"] == "slow"
    write_config(isolated_paths, "[handoff]\ncompression_ratio = -1\n")
    p = ctxd("handoff", cwd=tmp_path / "a")
    assert p.returncode == ExitCode.CONFIG and "compression_ratio" in p.stderr



def test_every_handoff_file_written_for_the_user_is_private_under_a_022_umask(tmp_path):
    proj = project_with_conversation(tmp_path / "a")
    old = os.umask(0o022)
    try:
        outs = [tmp_path / "out.json", tmp_path / "new-dir" / "out.md"]
        assert ctxd("handoff", "--out", str(outs[0]), cwd=proj).returncode == 0
        assert ctxd("handoff", "--format", "markdown", "--out", str(outs[1]), cwd=proj).returncode == 0
        md = ctxd("handoff", "--format", "markdown", cwd=proj).stdout.strip()  # into handoffs/
        exported = tmp_path / "exported.json"
        assert ctxd("handoff", "export", "study", str(exported), cwd=proj).returncode == 0
    finally:
        os.umask(old)
    for f in outs + [md, exported]:
        assert os.stat(f).st_mode & 0o777 == 0o600, f
