"""ctxd teach and ctxd review: the prompt per style and mastery, knowledge (EMA, FSRS), the CLI."""

import json
import os
from datetime import datetime, timezone

import pytest

from ctxd.errors import ExitCode
from ctxd.handoff import archive as arch
from ctxd.handoff import archive_schema
from ctxd.handoff import knowledge as kn
from ctxd.handoff import teach
from ctxd.memory.store.db import Store
from ctxdtest import ctxd

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEED_V1 = os.path.join(REPO, "tests", "data", "handoff", "seed_v1.0.json")
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc).timestamp()
DAY = 86400


def make(title="Rust ownership", session="rust", language="en", **style):
    a = archive_schema.empty(session, "2026-11-01T12:00:00Z", language)
    a["topic"] = {"title": title, "current_subtopic": "Borrowing rules", "stage": "learning"}
    a["progress"] = {"completed": ["Move semantics", "The stack and the heap"], "in_progress": "Borrowing rules",
                     "next_up": ["Lifetimes", "Smart pointers"]}
    a["key_points"] = [
        {"concept": "Move semantics", "understanding_level": "mechanism", "mastery_level": "high",
         "summary": "Assigning a String moves ownership; the old binding is invalid."},
        {"concept": "Borrowing", "understanding_level": "definition", "mastery_level": "medium",
         "summary": "Either one &mut or any number of & at a time."},
        {"concept": "Lifetimes", "understanding_level": "definition", "mastery_level": "low",
         "summary": "A reference must not outlive the value it points to."},
    ]
    a["questions"] = [
        {"question": "Why can't I have two &mut to the same Vec?", "status": "open", "created_at": "2026-11-01T12:00:00Z"},
        {"question": "What does 'static mean?", "status": "resolved", "created_at": "2026-11-01T12:00:00Z",
         "resolved_at": "2026-11-01T12:05:00Z"},
        {"question": "Is Rc<RefCell<T>> a code smell?", "status": "open", "created_at": "2026-11-01T12:01:00Z"},
    ]
    a["learning_style"] = dict({"preference": "examples first", "wants_code_examples": True,
                                "wants_visual_descriptions": False, "depth": "normal", "pace": "normal"}, **style)
    return archive_schema.validate(a)


def section(prompt, heading):
    """The body of the markdown section whose heading starts with *heading*."""
    out, on = [], False
    for line in prompt.splitlines():
        if line.startswith("## "):
            on = line[3:].startswith(heading)
            continue
        if on:
            out.append(line)
    return "\n".join(out)


# -- the prompt -------------------------------------------------------------------------

def test_prompt_structure_state_goals_constraints():
    p = teach.build_prompt(make())
    assert p.startswith("# Teaching session: Rust ownership\n")
    heads = [l for l in p.splitlines() if l.startswith("## ")]
    assert heads == ["## Current state", "## What the learner knows", "## Learning style",
                     "## Teaching goals for Borrowing rules", "## Constraints"]
    state = section(p, "Current state")
    assert "- Completed: Move semantics; The stack and the heap" in state
    assert "- In progress: Borrowing rules" in state
    assert "- Next up: Lifetimes; Smart pointers" in state
    # only the open pool questions are listed, tagged in order; the resolved one is counted
    assert "  - [Q1] Why can't I have two &mut to the same Vec?" in state
    assert "  - [Q2] Is Rc<RefCell<T>> a code smell?" in state
    assert "'static" not in p and "Already resolved: 1 question(s)" in state
    goals = section(p, "Teaching goals")
    assert goals.count("\n") >= 3 and [l[:3] for l in goals.splitlines() if l] == ["1. ", "2. ", "3. ", "4. "]
    assert "Why it exists" in goals and "analogy" in goals and "rigorous explanation" in goals
    assert "real case" in goals.lower() and "three self-test questions" in goals
    rules = section(p, "Constraints")
    assert "At most 4 paragraphs per reply." in rules
    assert "Answer the open pool questions first" in rules and "`[Q1]`" in rules
    assert "Correct misunderstandings explicitly" in rules
    assert p.endswith("then the first teaching goal.\n")  # no new message: where to start


def test_prompt_is_deterministic_and_input_is_appended():
    a = make()
    assert teach.build_prompt(a) == teach.build_prompt(make())
    p = teach.build_prompt(a, user_input="  How do I borrow twice?\n")
    assert p.endswith("## The learner's new message\n\nHow do I borrow twice?\n")


@pytest.mark.parametrize("code,expect,absent", [
    (True, "include a short, runnable code example", "no code examples"),
    (False, "no code examples; explain in prose", "runnable code example"),
])
def test_style_code_examples(code, expect, absent):
    s = section(teach.build_prompt(make(wants_code_examples=code)), "Learning style")
    assert expect in s and absent not in s
    assert "- Preference: examples first" in s


@pytest.mark.parametrize("visual,expect", [(True, "describe a diagram in words"), (False, "no diagrams")])
def test_style_visual(visual, expect):
    assert expect in section(teach.build_prompt(make(wants_visual_descriptions=visual)), "Learning style")


@pytest.mark.parametrize("depth,expect", [("shallow", "Depth: overview"), ("normal", "Depth: working knowledge"),
                                          ("deep", "Depth: deep; the mechanism, edge cases, trade-offs")])
def test_style_depth(depth, expect):
    assert expect in section(teach.build_prompt(make(depth=depth)), "Learning style")


@pytest.mark.parametrize("pace,expect", [("slow", "Pace: slow; one idea per reply"),
                                         ("normal", "Pace: steady"), ("fast", "Pace: fast; several related ideas")])
def test_style_pace(pace, expect):
    assert expect in section(teach.build_prompt(make(pace=pace)), "Learning style")


def test_style_zh():
    s = section(teach.build_prompt(make(language="zh", wants_code_examples=False, wants_visual_descriptions=True,
                                        depth="deep", pace="slow")), "学习风格")
    assert "不用代码示例" in s and "用文字描述示意图" in s and "深度：深入" in s and "节奏：慢" in s


def test_mastery_high_mentioned_only_low_reviewed():
    k = section(teach.build_prompt(make()), "What the learner knows")
    lines = k.splitlines()
    high = next(l for l in lines if "Move semantics" in l)
    assert high.startswith("- Mastered, mention only") and "do not re-teach" in high
    assert "Assigning a String" not in k  # a mastered point: named, not explained
    assert next(l for l in lines if "Borrowing" in l).startswith("- Teach normally: Borrowing")
    i = next(n for n, l in enumerate(lines) if l.startswith("- Weak, start with a quick review"))
    assert lines[i + 1] == "  - Lifetimes: A reference must not outlive the value it points to."


def test_knowledge_overrides_archive_levels():
    know = {"Move semantics": {"mastery": 0.2, "errors": 3, "prerequisites": []},
            "Lifetimes": {"mastery": 0.9, "errors": 0, "prerequisites": []}}
    k = section(teach.build_prompt(make(), knowledge=know), "What the learner knows")
    assert "  - Move semantics (0.20, 3 earlier mistake(s)): Assigning a String moves ownership" in k
    assert "Mastered, mention only (one clause at most, do not re-teach): Lifetimes" in k


def test_weak_prerequisites_surfaced():
    know = {"Lifetimes": {"mastery": 0.3, "errors": 0, "prerequisites": ["Borrowing", "References", "Scopes"]},
            "Borrowing": {"mastery": 0.55, "errors": 1, "prerequisites": []},
            "References": {"mastery": 0.6, "errors": 0, "prerequisites": []}}
    k = section(teach.build_prompt(make(), knowledge=know), "What the learner knows")
    assert "- Weak prerequisites (mastery < 0.6)" in k
    assert "  - Borrowing (0.55; needed for Lifetimes)" in k
    assert "  - Scopes (not practised yet; needed for Lifetimes)" in k
    assert "References (" not in k  # exactly 0.6 is not weak


def test_focus_narrows_to_a_concept():
    know = {"Lifetimes": {"mastery": 0.3, "errors": 0, "prerequisites": ["Borrowing"]},
            "Borrowing": {"mastery": 0.4, "errors": 0, "prerequisites": []}}
    p = teach.build_prompt(make(), focus="lifetimes", knowledge=know)
    k = section(p, "What the learner knows")
    assert "Lifetimes" in k and "Move semantics" not in k and "Teach normally" not in k
    assert "  - Borrowing (0.40; needed for Lifetimes)" in k
    f = section(p, "Focus")
    assert "This session covers only: **lifetimes**." in f and "not in the archive" not in f
    assert "## Teaching goals for lifetimes" in p
    # a focus the archive does not know yet: new material, nothing narrowed away wrongly
    f = section(teach.build_prompt(make(), focus="Unsafe Rust"), "Focus")
    assert "not in the archive yet" in f


def test_topic_override_heading():
    p = teach.build_prompt(make(), topic="Interior mutability")
    assert p.startswith("# Teaching session: Interior mutability (continuing “Rust ownership”)\n")
    assert "## Teaching goals for Interior mutability" in p
    # a topic that only names the archive changes nothing
    assert teach.build_prompt(make(), topic="rust") == teach.build_prompt(make())


def test_language_zh_en_detection_and_override():
    a = make(language="en")
    a.pop("language")  # a hand-made archive: detected from its text
    assert teach.build_prompt(a).startswith("# Teaching session:")
    zh = arch.load(SEED_V1)  # the 1.0 Chinese seed, migrated
    zh.pop("language")
    p = teach.build_prompt(zh)
    assert p.startswith("# 教学会话：TCP 协议学习")
    heads = [l for l in p.splitlines() if l.startswith("## ")]
    assert heads[:2] == ["## 当前进度", "## 学习者的掌握情况"] and "## 约束" in heads
    assert "每次回复不超过 4 段。" in p and "用中文回答。" in p and "先回答待解答的问题" in p
    assert "  - [Q1] TIME_WAIT 太多会不会把端口耗尽？SO_REUSEADDR 能解决吗？" in p
    assert "为什么是三次握手而不是两次" not in p  # answered in the archive
    assert "Teaching session" not in p and "Reply in English" not in p
    # the archive's own language field, then an explicit language (config [handoff] language), win
    assert teach.build_prompt(make(language="zh")).startswith("# 教学会话：")
    assert teach.build_prompt(zh, language="en").startswith("# Teaching session: TCP 协议学习")
    # mixed text: Chinese with English terms is still Chinese; one Chinese term in English is not
    assert teach.cjk_share("学习 Kubernetes deployment 的滚动更新") >= teach.ZH_SHARE
    assert teach.cjk_share("Explain how 闭包 closures capture variables in JavaScript") < teach.ZH_SHARE


def test_session_outcome_reads_the_markers():
    p = teach.build_prompt(make())
    msgs = [
        {"role": "system", "source": "teach", "content": p},
        {"role": "user", "source": "cli", "content": "[Q2] hmm"},  # a user echo resolves nothing
        {"role": "assistant", "source": "claude", "content": "[Q1] Because two &mut could alias.\n\nMore."},
        {"role": "assistant", "source": "claude", "content": "Good.\n[done: Borrowing rules]\n"},
    ]
    out = teach.session_outcome(msgs)
    assert out == {"resolved": ["Why can't I have two &mut to the same Vec?"], "completed": ["Borrowing rules"]}
    assert teach.session_outcome(msgs[2:]) == {"resolved": [], "completed": []}  # no teach prompt: no tags
    # the prompt as the AI tool's hooks record it (`ctxd teach | claude`): a user message, another session
    piped = [{"role": "user", "source": "claude", "content": teach.build_prompt(make(language="zh"))}] + msgs[2:]
    assert teach.session_outcome(piped)["resolved"] == ["Why can't I have two &mut to the same Vec?"]
    # a later teach prompt starts over: its own tags
    later = msgs + [{"role": "system", "source": "teach", "content": "# Teaching session: x\n  - [Q1] Other?\n"},
                    {"role": "assistant", "source": "claude", "content": "[Q1] yes"}]
    assert teach.session_outcome(later)["resolved"] == ["Why can't I have two &mut to the same Vec?", "Other?"]


# -- knowledge: EMA and FSRS ---------------------------------------------------------------

@pytest.fixture
def store(tmp_path):
    s = Store(str(tmp_path / "ctx"))
    yield s
    s.close()


def test_ema_math_and_clamping(store):
    assert kn.ALPHA == 0.3
    assert kn.ema(None, 0.8) == 0.8  # the first sample starts the average
    assert kn.ema(0.5, 1.0) == pytest.approx(0.65)
    assert kn.ema(0.5, 0.0) == pytest.approx(0.35)
    assert kn.ema(0.9, 1.7) == pytest.approx(0.93)  # a score above 1 counts as 1
    assert kn.ema(0.1, -3) == pytest.approx(0.07)
    assert kn.ema(2.0, 1.0) == 1.0 and kn.ema(-1.0, 0.0) == 0.0
    r = kn.practice(store, "Borrowing", 0.4, now=T0)
    assert r["mastery"] == pytest.approx(0.4) and r["practices"] == 1 and r["errors"] == 0
    r = kn.practice(store, "  borrowing ", 1.0, error=True, now=T0 + 60)  # same concept, any case/spacing
    assert r["name"] == "Borrowing" and r["mastery"] == pytest.approx(0.7 * 0.4 + 0.3 * 1.0)
    assert r["errors"] == 1 and r["practices"] == 2 and r["last_practice"] == T0 + 60
    for i in range(30):
        r = kn.practice(store, "Borrowing", 5.0, now=T0 + 120 + i)
    assert 0.99 < r["mastery"] <= 1.0


def test_ratings_from_scores():
    from fsrs import Rating

    assert [kn.rating_for(s) for s in (0.0, 0.29, 0.3, 0.59, 0.6, 0.84, 0.85, 1.0)] == [
        Rating.Again, Rating.Again, Rating.Hard, Rating.Hard, Rating.Good, Rating.Good, Rating.Easy, Rating.Easy]
    assert kn.rating_for(0.95, error=True) == Rating.Hard and kn.rating_for(0.1, error=True) == Rating.Again


def test_fsrs_again_is_due_sooner_than_easy(store):
    again = kn.practice(store, "Again concept", 0.1, now=T0)
    easy = kn.practice(store, "Easy concept", 0.95, now=T0)
    assert again["due"] < easy["due"]
    assert again["due"] - T0 < 3600 and easy["due"] - T0 >= DAY  # minutes vs days
    assert again["card"]["last_review"].startswith("2026-11-01T12:00")
    due = [r["name"] for r in kn.due(store, T0 + 2 * 3600)]
    assert due == ["Again concept"]
    assert kn.due(store, T0 + 2 * 3600)[0]["reason"] == "fsrs"


def test_untouched_for_14_days_is_due(store):
    for i in range(4):  # push the FSRS interval well beyond two weeks
        r = kn.practice(store, "Ownership", 1.0, now=T0 + i * 40 * DAY)
    last = r["last_practice"]
    assert r["due"] - last > 20 * DAY
    assert kn.due(store, last + 13 * DAY) == []
    d = kn.due(store, last + 14 * DAY)
    assert [x["name"] for x in d] == ["Ownership"] and d[0]["reason"] == "stale"
    assert d[0]["due_since"] == last + 14 * DAY


def test_prerequisites_and_never_practised(store):
    kn.set_prerequisites(store, "Lifetimes", ["Borrowing", "borrowing", "Lifetimes", "Scopes"], now=T0)
    rec = kn.get(store, "lifetimes")
    assert rec["prerequisites"] == ["Borrowing", "Scopes"] and rec["mastery"] is None
    kn.practice(store, "Borrowing", 0.9, now=T0)
    kn.practice(store, "Scopes", 0.5, now=T0)
    assert kn.weak_prerequisites(store, "Lifetimes") == [("Scopes", 0.5)]
    snap = kn.snapshot(store, ["Lifetimes"])
    assert set(snap) == {"Lifetimes", "Borrowing", "Scopes"}
    # a concept that exists but was never practised is due (new)
    assert [(x["name"], x["reason"]) for x in kn.due(store, T0 + 60)] == [("Lifetimes", "new")]


def test_archive_key_points_seed_once(store):
    a = make()
    assert kn.observe_archive(store, a, source="rust_v1") == 3
    assert kn.observe_archive(store, a, source="rust_v1") == 0  # idempotent
    assert kn.get(store, "Move semantics")["mastery"] == pytest.approx(0.85)
    assert kn.get(store, "Borrowing")["mastery"] == pytest.approx(0.6)
    assert kn.get(store, "Lifetimes")["mastery"] == pytest.approx(0.3)
    assert kn.get(store, "Lifetimes")["last_practice"] == T0  # timed at the archive
    # a newer archive moves it by the EMA
    b = make()
    b["created_at"] = "2026-11-03T12:00:00Z"
    b["key_points"][2]["mastery_level"] = "high"
    assert kn.observe_archive(store, b, source="rust_v2") == 3
    assert kn.get(store, "Lifetimes")["mastery"] == pytest.approx(0.7 * 0.3 + 0.3 * 0.85)
    # an archive older than the latest practice is old news
    kn.practice(store, "Borrowing", 0.0, now=T0 + 10 * DAY)
    c = make()
    c["key_points"][1]["mastery_level"] = "high"
    kn.observe_archive(store, c, source="rust_v0")
    assert kn.get(store, "Borrowing")["mastery"] == pytest.approx(0.7 * (0.7 * 0.6 + 0.3 * 0.6))


# -- the command line -------------------------------------------------------------------------

@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").touch()
    from ctxd.memory.project import locate

    return root, locate(str(root), dict(os.environ, PWD=str(root))).context_dir


def test_teach_errors_list_the_five_recent_archives(project):
    root, ctx = project
    p = ctxd("teach", cwd=root)
    assert p.returncode == ExitCode.NOT_FOUND == 4 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("ctxd: no handoff archive to teach from; ")
    assert "no handoff archives in" in p.stderr
    for i in range(7):
        a = make(title=f"Topic {i}", session=f"s{i}")
        arch.save(ctx, a)
    p = ctxd("teach", "--from", "nope", cwd=root)
    assert p.returncode == 4 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    # the five the handoff index calls most recent, newest first, with topic and time
    recent = arch.recent(ctx, n=5)
    assert len(recent) == 5
    listing = ", ".join(f"{hid} “{title}” ({updated})" for hid, title, updated, _p in recent)
    assert p.stderr == f"ctxd: no handoff archive 'nope'; recent archives: {listing}\n"
    assert sum(f"s{i}_v1 “Topic {i}”" in p.stderr for i in range(7)) == 5
    p = ctxd("teach", "--from", str(root / "missing.json"), cwd=root)
    assert p.returncode == 4 and "no handoff archive file" in p.stderr and listing in p.stderr
    p = ctxd("teach", "Quantum chromodynamics", cwd=root)
    assert p.returncode == 4 and "no handoff archive is about 'Quantum chromodynamics'" in p.stderr
    assert p.stderr.count("\n") == 1 and listing in p.stderr


def test_teach_cli_prints_and_seeds_records_nothing(project):
    root, ctx = project
    arch.save(ctx, make(title="Rust ownership", session="rust"))
    arch.save(ctx, arch.load(SEED_V1))
    # TOPIC picks the archive about it; INPUT from stdin
    p = ctxd("teach", "Rust", "-", "--focus", "Lifetimes", cwd=root, input="why 'a?\n")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("# Teaching session: Rust")
    assert "This session covers only: **Lifetimes**." in p.stdout
    assert p.stdout.endswith("## The learner's new message\n\nwhy 'a?\n")
    # no TOPIC: the newest archive; --from by session id; the Chinese one comes out in Chinese
    p = ctxd("teach", cwd=root)
    newest = arch.latest(ctx)[2]["topic"]["title"]
    assert p.returncode == 0 and p.stdout.split("\n", 1)[0] in (f"# Teaching session: {newest}", f"# 教学会话：{newest}")
    p = ctxd("teach", "--from", "tcp-study", cwd=root)
    assert p.returncode == 0 and p.stdout.startswith("# 教学会话：TCP 协议学习") and "用中文回答。" in p.stdout
    p = ctxd("teach", "--from", "rust_v1", cwd=root)
    assert p.returncode == 0 and p.stdout.startswith("# Teaching session: Rust ownership")
    path = os.path.join(arch.handoff_dir(ctx), "rust_v1.json")
    assert ctxd("teach", "--from", path, cwd=root).stdout == p.stdout
    # the prompt is printed, not said: nothing is added to the conversation (issue 23)
    assert ctxd("chat", "log", "--json", cwd=root).stdout == ""


def test_review_json_whole_process(project):
    root, ctx = project
    p = ctxd("review", "--json", cwd=root)
    assert p.returncode == 0 and json.loads(p.stdout)["due"] == []
    assert ctxd("review", cwd=root).stdout == "nothing is due for review\n"
    arch.save(ctx, make())  # created 2026-11-01 12:00 UTC
    p = ctxd("review", "--json", "--at", "2026-11-01T12:00:30Z", cwd=root)
    out = json.loads(p.stdout)
    assert p.returncode == 0 and out["schema_version"] == 1 and out["now"] == "2026-11-01T12:00:30Z"
    assert out["due"] == []  # just seeded from the handoff: scheduled, nothing due yet
    p = ctxd("review", "--json", "--at", "2026-11-20", cwd=root)
    out = json.loads(p.stdout)
    assert [d["concept"] for d in out["due"]] == ["Lifetimes", "Borrowing", "Move semantics"]
    first = out["due"][0]
    assert set(first) == {"concept", "mastery", "practices", "errors", "last_practice", "days_since_practice",
                          "next_review", "reason", "due_since", "prerequisites", "weak_prerequisites"}
    assert first["mastery"] == 0.3 and first["last_practice"] == "2026-11-01T12:00:00Z"
    assert first["reason"] == "fsrs" and first["days_since_practice"] == 18
    # practise and set prerequisites from the command line
    p = ctxd("review", "practice", "Lifetimes", "--score", "0.9", "--error", cwd=root)
    assert p.returncode == 0 and p.stdout.startswith("ctxd: Lifetimes: mastery 0.30 -> 0.48, errors 1")
    p = ctxd("review", "prereq", "Lifetimes", "Borrowing", "Scopes", cwd=root)
    assert p.stdout == "ctxd: Lifetimes needs Borrowing, Scopes; weak: Scopes\n"
    assert ctxd("review", "practice", "X", "--score", "1.5", cwd=root).returncode == ExitCode.USAGE
    p = ctxd("review", "--json", "--at", "2027-06-01", cwd=root)
    life = next(d for d in json.loads(p.stdout)["due"] if d["concept"] == "Lifetimes")
    assert life["errors"] == 1 and life["mastery"] == 0.48
    assert life["weak_prerequisites"] == [{"concept": "Scopes", "mastery": None}]
    text = ctxd("review", "--at", "2027-06-01", cwd=root).stdout
    assert text.startswith("3 concepts due") and "weak prerequisites: Scopes" in text
