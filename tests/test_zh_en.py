"""Chinese questions over English turns: the vendored keyword list (ctxd/memory/recall/zh_en.txt),
segmentation, translation, and recall with it on the real store."""

import os
import random
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ctxd import paths
from ctxd.memory.recall import ranked as recall, zh_en
from ctxd.memory.store.db import Store


@pytest.fixture(autouse=True)
def fresh_dictionary():
    """Each test opens the list itself (a test may point zh_en at another file)."""
    zh_en._opened.clear()
    zh_en.translate.cache_clear()
    yield
    zh_en._opened.clear()
    zh_en.translate.cache_clear()


def headwords():
    out = {}
    with open(zh_en.PATH, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#"):
                head, words = line.rstrip("\n").split("\t")
                out[head] = tuple(words.split())
    return out


def test_the_list_is_small_sorted_utf8_and_says_where_it_comes_from():
    assert os.path.getsize(zh_en.PATH) < 6_000_000
    raw = open(zh_en.PATH, "rb").read()
    text = raw.decode("utf-8")
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert text.startswith(zh_en.MAGIC.decode()) and text.count("\n#") == len(header) - 1  # the header, on top
    notice = "\n".join(header)
    assert "CC-CEDICT" in notice and "MDBG" in notice and "https://www.mdbg.net/chinese/dictionary?page=cc-cedict" in notice
    assert "Creative Commons Attribution-ShareAlike 4.0" in notice and "creativecommons.org/licenses/by-sa/4.0" in notice
    heads = [line.split(b"\t", 1)[0] for line in raw.splitlines() if not line.startswith(b"#")]
    assert heads == sorted(heads) and len(set(heads)) == len(heads) > 100_000
    words = headwords()
    assert all(2 <= len(h) <= zh_en.LONGEST and zh_en.RUN.fullmatch(h) for h in words)  # no letters, digits, characters alone
    assert all(w == w.lower() and w.isascii() and len(w) > 2 for e in words.values() for w in e)
    assert sum(1 for e in words.values() if e) > 0.95 * len(words) and words["我们"] == ()  # kept to segment
    assert "的" not in words and "李" not in words and "毛泽东" not in words  # a character alone; names
    assert "瑞典" in words and "sweden" in words["瑞典"]  # a place stays


def test_a_few_words():
    d = zh_en.dictionary()
    assert "camping" in d.get("露营") and "birthday" in d.get("生日") and "research" in d.get("研究")
    assert "dance" in d.get("跳舞") and "studio" in d.get("工作室") and "monday" in d.get("星期一")
    assert d.get("露營") == d.get("露营")  # traditional and simplified
    for missing in ("", "x", "的", "露营露营", "\uffff", "#", "a\tb"):
        assert d.get(missing) is None


def test_segmentation_takes_the_longest_headword_and_matches_a_plain_reading_of_the_file():
    d = zh_en.dictionary()
    words = [w for w, _e in zh_en.segment("我们打算去自驾游", d.longest)]
    assert words == ["我们", "打算", "去", "自驾游"]  # 自驾游, not 自驾 + 游
    heads = headwords()

    def plain(run):  # forward maximum matching over a dict
        i = 0
        while i < len(run):
            n = next(n for n in range(min(zh_en.LONGEST, len(run) - i), 0, -1) if n == 1 or run[i:i + n] in heads)
            yield run[i:i + n], heads.get(run[i:i + n])
            i += n

    rng, keys = random.Random(7), sorted(heads)
    for _ in range(500):
        run = "".join(rng.choice(keys) if rng.random() < 0.5 else rng.choice("的了是我你他在有一个人中国大学生") for _ in range(5))
        assert list(zh_en.segment(run, d.longest)) == list(plain(run)), run


def test_translation_drops_function_words_and_keeps_the_order():
    got = zh_en.translate("Caroline 打算什么时候去露营？")
    assert [w for w, _e in got] == ["打算", "露营"] and "camping" in got[1][1]
    assert zh_en.translate("When is the cutover?") == ()
    assert len(zh_en.translate("露营生日研究舞蹈" * 50)) == 4  # each word once
    assert recall.translated("Melanie 最近去露营了吗") == (zh_en.dictionary().get("最近"), zh_en.dictionary().get("露营"))
    assert "camping" in recall.asked("Melanie 打算什么时候去露营？")
    assert recall.asked("Melanie 打算什么时候去露营？")[0] == "melanie"  # its own words first


TURNS = [  # English turns, each its own session
    ("prompt", "Melanie: we took the kids camping at the lake last weekend."),
    ("reply", "Caroline: I went to the LGBTQ support group yesterday, the stories were inspiring."),
    ("prompt", "Melanie: I finished a painting of a sunset for my birthday."),
    ("reply", "Caroline: the database migration script runs on Friday night."),
]


@pytest.fixture
def store_en(tmp_path):
    s = Store(str(tmp_path / "ctx"))
    s.add_many([dict(kind=k, content=c, session=f"s{i}", ts=1_700_000_000 + i * 60, dedup=f"e{i}")
                for i, (k, c) in enumerate(TURNS)])
    yield s
    s.close()


def test_a_chinese_question_finds_english_turns_lexically(store_en):
    """No vectors: the translation's English words are what the question shares with the turns."""
    for q, want in (("Melanie 打算什么时候去露营？", 1), ("Caroline 什么时候去参加互助小组的？", 2),
                    ("生日那天画了什么？", 3), ("数据库迁移脚本什么时候执行？", 4)):
        hits = recall.rank(store_en, q, semantic=False)
        assert hits and hits[0].message.id == want, (q, [(h.message.id, h.score) for h in hits])
        assert hits[0].raw >= 0.5  # its coverage counts the Chinese words found in English
    r = recall.recall(store_en, "Melanie 打算什么时候去露营？", 300)
    assert 1 in [h.message.id for h in r.items] and "camping" in r.text


def test_without_the_list_a_chinese_question_is_what_it_was_with_one_log_line(store_en, tmp_path, monkeypatch):
    q = "Melanie 打算什么时候去露营？"
    for bad in (None, b"", b"\x00\xff" * 100, b"# ctxd zh-en 1: header\n\xe9\x9c\xb2\xe8\x90\xa5\t\xff\xfe\n"):
        zh_en._opened.clear()
        zh_en.translate.cache_clear()
        path = tmp_path / "zh_en.txt"
        if bad is None:
            path = tmp_path / "missing.txt"
        else:
            path.write_bytes(bad)
        monkeypatch.setattr(zh_en, "PATH", str(path))
        log = paths.log_file()
        before = open(log).read() if os.path.exists(log) else ""
        assert recall.translated(q) == () and recall.translated(q + "？") == ()  # tried once a process
        assert recall.rank(store_en, "露营生日", semantic=False) == []  # lexical: nothing in common, as before
        hits = recall.rank(store_en, q, semantic=False)
        assert all(h.raw < 0.5 for h in hits)  # the name only (Melanie), as before
        lines = open(log).read()[len(before):].splitlines()
        assert len(lines) == 1 and "Chinese questions are not translated" in lines[0], lines


CHINESE = [  # a Chinese history
    ("prompt", "我们什么时候部署新版本？"),
    ("reply", "新版本在周五下午部署，先在测试环境验证。"),
    ("prompt", "数据库迁移的脚本写好了吗？"),
    ("reply", "迁移脚本已经写好了，明天早上执行。"),
    ("prompt", "上周去露营的照片发给我看看。"),
    ("reply", "好的，露营的照片在共享相册里。"),
]


def test_chinese_questions_over_a_chinese_history_rank_as_without_the_list(tmp_path, monkeypatch):
    s = Store(str(tmp_path / "ctx"))
    s.add_many([dict(kind=k, content=c, session="s1", ts=1_700_000_000 + i * 60, dedup=f"c{i}")
                for i, (k, c) in enumerate(CHINESE)])
    questions = {"新版本什么时候部署？": {1, 2}, "迁移脚本什么时候执行？": {3, 4}, "露营的照片在哪里？": {5, 6}}
    with_list = {q: [h.message.id for h in recall.rank(s, q, semantic=False)] for q in questions}
    for q, want in questions.items():
        assert set(with_list[q][:2]) == want, (q, with_list[q])
    assert all(recall.translated(q) for q in questions)
    monkeypatch.setattr(zh_en, "PATH", str(tmp_path / "missing.txt"))
    zh_en._opened.clear()
    zh_en.translate.cache_clear()
    without = {q: [h.message.id for h in recall.rank(s, q, semantic=False)] for q in questions}
    assert with_list == without
    s.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(max_size=200), st.text(alphabet=st.characters(min_codepoint=0x3400, max_codepoint=0x9fff),
                                                 max_size=200),
                 st.sampled_from(["的" * 5000, "露营" * 3000, "㐀\u4e00\uf900", "中文 OR 英文", '"露营" NEAR(生日)'])))
def test_any_text_is_a_question(store_en, q):
    got = zh_en.translate(q)
    assert isinstance(got, tuple) and len(got) <= zh_en.MAX_WORDS
    assert all(word in q and english and all(w.isascii() for w in english) for word, english in got)
    recall.rank(store_en, q, semantic=False)
    assert recall.recall(store_en, q, 200).tokens <= 200


def test_an_english_question_never_opens_the_list(tmp_path):
    code = ("import sys; from ctxd.memory.recall import ranked as recall; from ctxd.memory.store.db import Store\n"
            f"s = Store({str(tmp_path / 'ctx')!r})\n"
            "s.add_many([dict(kind='prompt', content='camping at the lake', session='s', ts=1, dedup='a')])\n"
            "recall.recall(s, 'when did we go camping?', 300)\n"
            "print('ctxd.memory.recall.zh_en' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr
