"""The static model ctxd ships (ctxd.memory.recall.static, ctxd/memory/recall/static-minilm.bin): its
tokeniser, its vectors, the background embedder and recall with it, and a missing or corrupt
model file (recall stays lexical, one log line). The real file, no stubs; CTXD_SEMANTIC=static
chooses it where the semantic extra (e5) is installed too."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctxd.memory.recall import embed, static
from ctxdtest import plant_vector
from ctxd.memory.recall import ranked as recall
from ctxd.memory.store.db import Store
from ctxdtest import ctxd
import shellkit

HOBBIES = [  # four unrelated turns, each its own session (as in tests/test_recall.py)
    ("prompt", "Melanie: pottery is like therapy for me, it calms me down after a long week."),
    ("reply", "Caroline: I went to the LGBTQ support group yesterday, the stories were inspiring."),
    ("prompt", "Melanie: we took the kids camping at the lake last weekend."),
    ("reply", "Caroline: the parser bug was in the unicode table, fixed in the last commit."),
]


@pytest.fixture(scope="module")
def model():
    m = static.StaticModel(whole=True)
    yield m
    m.close()


@pytest.fixture
def chosen(monkeypatch):
    """The static model chosen (as without the extra), whatever is installed."""
    monkeypatch.setenv(embed.SWITCH, "static")
    monkeypatch.setattr(recall, "_SEMANTIC", {})


@pytest.fixture
def hobbies(tmp_path, chosen):
    s = Store(str(tmp_path / "ctx"))
    s.add_many([dict(kind=k, content=c, session=f"s{i}", ts=1_700_000_000 + i * 60, dedup=f"h{i}")
                for i, (k, c) in enumerate(HOBBIES)])
    yield s
    s.close()


def tokens(m, text):
    names = {i: t for t, i in m.vocab.items()}  # the whole table: a dictionary
    return [names[i] for i in m.token_rows(text)]


def cos(a, b):
    return sum(x * y for x, y in zip(a, b))


# -- the tokeniser ---------------------------------------------------------------------------

def test_english_is_lowercased_split_at_punctuation_and_into_word_pieces(model):
    assert tokens(model, "When is the DB cutover?") == ["when", "is", "the", "db", "cut", "##over", "?"]
    assert tokens(model, "e-mail foo_bar@x.com $100, 3.14") == [
        "e", "-", "mail", "foo", "_", "bar", "@", "x", ".", "com", "$", "100", ",", "3", ".", "14"]


# the expected tokens are what the transformers tokenizer of all-MiniLM-L6-v2 gives (unknown ones out)

def test_accents_are_stripped_and_control_characters_dropped(model):
    assert tokens(model, "Café déjà vu, naïve") == ["cafe", "de", "##ja", "vu", ",", "naive"]
    assert tokens(model, "tab\there\x01\x7fnow") == ["tab", "here", "##now"]  # dropped, not a space
    assert tokens(model, "“quoted” — fine…") == ["“", "quoted", "”", "—", "fine", "…"]


def test_chinese_characters_are_tokens_of_their_own(model):
    """Those the English vocabulary lacks are unknown: a Chinese text keeps few tokens."""
    assert tokens(model, "我们什么时候部署新版本？") == ["我", "部", "新", "版", "本", "？"]
    assert tokens(model, "deploy在周五") == ["deploy", "五"]


def test_unknown_words_are_left_out(model):
    assert tokens(model, "x" * 101) == [] and tokens(model, "ok " + "x" * 101) == ["ok"]
    assert model.vector("") == [0.0] * static.DIM and model.vector("\x00\x01") == [0.0] * static.DIM


# -- vectors ---------------------------------------------------------------------------------

def test_related_sentences_are_closer_than_unrelated_ones(model):
    pottery, stress, parser = model.passages([HOBBIES[0][1], "Which hobby helps with stress?", HOBBIES[3][1]])
    assert abs(cos(pottery, pottery) - 1.0) < 1e-9
    assert cos(pottery, stress) > cos(parser, stress) + 0.1
    q = model.query("did we fix the bug in the parser?")
    assert cos(q, parser) > cos(q, pottery) + 0.1


def test_a_question_reads_only_its_rows_and_gets_the_same_vector(model):
    lazy = static.StaticModel()
    try:
        text = "what did Melanie do to destress after work?"
        assert lazy.whole is None and lazy.query(text) == model.query(text)
        assert len(lazy.rows) < 20
    finally:
        lazy.close()


# -- in recall -------------------------------------------------------------------------------

def test_background_embedding_and_recall_with_the_static_model(hobbies):
    q = "Which hobby helps with stress?"  # no word of the pottery turn
    assert embed.choice() == "static" and embed.active() == (static.NAME, static.DIM)
    assert recall.meaning(hobbies, q) == []  # nothing embedded yet: lexical only
    assert embed.lagging(hobbies) and embed.backfill(hobbies) == len(HOBBIES) and embed.backlog(hobbies) == 0
    rows = hobbies.db.execute("SELECT model, length(bits), length(vec) FROM embeddings").fetchall()
    assert [tuple(r) for r in rows] == [(static.NAME, static.DIM // 8, static.DIM)] * len(HOBBIES)
    assert json.loads(hobbies.meta_get("embed_mean"))["model"] == static.NAME
    near = recall.meaning(hobbies, q)
    assert near[0][0] == 1 and len(near) == len(HOBBIES)
    r = recall.recall(hobbies, q, 500)
    assert max(r.items, key=lambda h: h.score).message.id == 1


OS_REVIEW = [  # Chinese turns of a study session (benchmarks/heldout/os_review_zh.jsonl), each its own session
    ("prompt", "我已经学会了信号量和管程的用法，也搞懂了死锁的四个必要条件"),
    ("prompt", "我的疑问：写时复制在 fork 之后到底什么时候真正复制物理页"),
    ("reply", "一般是每隔一个固定的时间片周期，把所有进程提升到最高优先级队列，防止饥饿。"),
    ("reply", "Caroline: the parser bug was in the unicode table, fixed in the last commit."),
]


def test_an_english_question_finds_a_chinese_turn(tmp_path, chosen):
    """The static model reads English only: a Chinese turn is embedded in its dictionary English
    (as a Chinese question is asked), so an English question meets a Chinese turn by meaning
    where no word of it matches (raw, its characters meant nothing to the model: neither turn was
    found); a Chinese question over the mixed history still finds its English turn first."""
    with Store(str(tmp_path / "ctx")) as s:
        s.add_many([dict(kind=k, content=c, session=f"s{i}", ts=1_700_000_000 + i * 60, dedup=f"z{i}")
                    for i, (k, c) in enumerate(OS_REVIEW)])
        assert embed.backfill(s) == len(OS_REVIEW)
        for q, want in (("Did I learn the conditions for deadlock?", 1),
                        ("How does the scheduler prevent starvation?", 3)):
            assert recall.rank(s, q, semantic=False) == []  # no word in common
            assert recall.meaning(s, q)[0][0] == want, q
            assert recall.rank(s, q)[0].message.id == want
        assert recall.rank(s, "哪个错误在上次提交里修好了？")[0].message.id == 4


def test_a_model_that_does_not_load_starts_no_refresh_until_it_changes(tmp_path, chosen, monkeypatch):
    """A model that fails to load (a damaged install) is noted in the store with one log line;
    the turns after it then start no background refresh for embedding (each would fail the
    same way) until the model's files change; once it loads, the note goes and it embeds."""
    from ctxd import paths

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    with Store(str(tmp_path / "ctx")) as s:
        s.add_many([dict(kind="prompt", content=f"turn {i} about the build queue", session="s", dedup=f"q{i}")
                    for i in range(embed.SPAWN_FROM + 4)])
        assert embed.lagging(s, embed.SPAWN_FROM)
        works = embed.model

        def broken(many=False):
            raise embed.Unavailable("the static model file is corrupt (its checksum does not match)")

        monkeypatch.setattr(embed, "model", broken)
        assert embed.catch_up(s) == 0 and embed.catch_up(s) == 0
        log = Path(paths.log_file()).read_text()
        assert log.count("semantic recall off, lexical only (the static model file is corrupt") == 1
        assert not embed.lagging(s, embed.SPAWN_FROM)  # no refresh for it
        monkeypatch.setattr(embed, "installed", lambda: "static|reinstalled")
        assert embed.lagging(s, embed.SPAWN_FROM)  # its files changed: try again
        monkeypatch.setattr(embed, "model", works)
        assert embed.catch_up(s) == embed.SPAWN_FROM + 4 and s.meta_get(embed.FAILED_KEY) is None
        assert not embed.lagging(s)


def test_rows_of_the_other_model_are_embedded_again(hobbies):
    hobbies.db.execute("INSERT INTO embeddings(id, model, scale, bits, vec) VALUES (1, ?, 0.01, ?, ?)",
                       (embed.MODEL, bytes(48), bytes(384)))
    assert embed.backlog(hobbies) == len(HOBBIES) and embed.backfill(hobbies) == len(HOBBIES)
    models = hobbies.db.execute("SELECT DISTINCT model FROM embeddings").fetchall()
    assert [m[0] for m in models] == [static.NAME]


def test_semantic_recall_switched_off(hobbies, monkeypatch):
    embed.backfill(hobbies)
    monkeypatch.setenv(embed.SWITCH, "off")
    assert embed.choice() is None and not embed.lagging(hobbies) and embed.backlog(hobbies) == 0
    assert recall.meaning(hobbies, "Which hobby helps with stress?") == []
    with pytest.raises(embed.Unavailable):
        embed.backfill(hobbies)


# -- a missing or corrupt model file ---------------------------------------------------------

def _ctxd_copy(tmp_path):
    """A copy of the ctxd package (its model file included) to break, first on PYTHONPATH."""
    import ctxd as pkg

    root = tmp_path / "src"
    shutil.copytree(os.path.dirname(pkg.__file__), root / "ctxd", ignore=shutil.ignore_patterns("__pycache__"))
    return root, root / "ctxd" / "memory" / "recall" / "static-minilm.bin"


def _log_lines(env):
    path = subprocess.run([sys.executable, "-c", "from ctxd import paths; print(paths.log_file())"], env=env,
                          capture_output=True, text=True).stdout.strip()
    try:
        return [line for line in Path(path).read_text().splitlines() if "semantic recall off" in line]
    except FileNotFoundError:
        return []


@pytest.mark.parametrize("damage", ["missing", "truncated", "not a model"])
def test_a_missing_or_broken_model_file_leaves_recall_lexical_with_one_log_line(tmp_path, damage):
    src, path = _ctxd_copy(tmp_path)
    if damage == "missing":
        path.unlink()
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:100_000])
    else:
        path.write_bytes(b"\0" * 4096)
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    env = dict(os.environ, PWD=str(proj), PYTHONPATH=str(src), CTXD_SEMANTIC="static")
    for role, text in (("user", "When is the database cutover scheduled?"),
                       ("assistant", "The cutover is scheduled for 2026-04-12 at 14:00 UTC.")):
        assert ctxd("chat", "add", "--role", role, text, cwd=proj, env=env).returncode == 0
    db = json.loads(ctxd("paths", "--json", cwd=proj, env=env).stdout)["store"]
    plant_vector(db, static.NAME, static.DIM)  # vectors exist (as if the working model had embedded them)
    for _ in range(2):
        p = ctxd("recall", "cutover date?", cwd=proj, env=env)
        assert p.returncode == 0 and "2026-04-12" in p.stdout and p.stderr == ""
    lines = _log_lines(env)
    assert len(lines) == 2 and all("static model file" in line for line in lines)  # one a process
    p = ctxd("chat", "embed", cwd=proj, env=env)
    assert p.returncode != 0 and p.stderr.startswith("ctxd: no semantic model") and p.stderr.count("\n") == 1


def test_a_flipped_byte_is_found_by_the_embedder_and_doctor(tmp_path):
    src, path = _ctxd_copy(tmp_path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(bytes(data))
    home, proj = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    (proj / ".git").mkdir(parents=True)
    env = shellkit.base_env(home, {"PWD": str(proj), "PYTHONPATH": str(src), "CTXD_SEMANTIC": "static"})
    assert ctxd("chat", "add", "pottery calms me down", cwd=proj, env=env).returncode == 0
    p = ctxd("chat", "embed", cwd=proj, env=env)
    assert p.returncode != 0 and "corrupt" in p.stderr
    rec = next(c for c in json.loads(ctxd("doctor", "--json", cwd=proj, env=env).stdout)["checks"]
               if c["name"] == "recall")
    assert rec["status"] == "warn" and rec["message"].startswith("lexical only") and "corrupt" in rec["message"]


def test_doctor_names_the_static_model_and_how_far_embedding_has_come(tmp_path):
    home, proj = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    (proj / ".git").mkdir(parents=True)
    env = shellkit.base_env(home, {"PWD": str(proj), "CTXD_SEMANTIC": "static"})

    def check():
        out = ctxd("doctor", "--json", cwd=proj, env=env).stdout
        return next(c for c in json.loads(out)["checks"] if c["name"] == "recall")

    for text in ("pottery calms me down", "we went camping at the lake"):
        assert ctxd("chat", "add", text, cwd=proj, env=env).returncode == 0
    rec = check()
    assert rec["status"] == "ok" and static.NAME in rec["message"] and "0 of 2 messages embedded" in rec["message"]
    p = ctxd("chat", "embed", cwd=proj, env=env)
    assert p.returncode == 0 and static.NAME in p.stdout, p.stderr
    assert "2 of 2 messages embedded" in check()["message"]
    off = shellkit.base_env(home, {"PWD": str(proj), "CTXD_SEMANTIC": "off"})
    out = ctxd("doctor", "--json", cwd=proj, env=off).stdout
    rec = next(c for c in json.loads(out)["checks"] if c["name"] == "recall")
    assert rec["status"] == "ok" and rec["message"].startswith("lexical only")
