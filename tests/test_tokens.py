"""Token estimates and exact counts (ctxd.memory.text.tokens) and the model table (ctxd.memory.text.models)."""

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxd.activation import config as config_mod
from ctxd.errors import ConfigError, CtxdError, ExitCode
from ctxd.memory.text import models, tokens

ENGLISH = ("The date parser test fails on CI but not locally. It looks like the time zone "
           "differs between the two machines, so the expected hour is off by eight.\n")
CHINESE = "日期解析测试在持续集成环境上失败了，但在本地可以通过。看起来两台机器的时区设置不一样。\n"
CODE = textwrap.dedent("""\
    def parse(value: str) -> datetime:
        if not value:
            raise ValueError("empty date")
        return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=timezone.utc)
    """)
MIXED = "请看 `parse()`：它在 TZ=Asia/Shanghai 时返回 2025-01-01T08:00 😅\n" + CODE
SAMPLES = [ENGLISH, CHINESE, CODE, MIXED, "ok", "你好", " " * 40, "a" * 300, "\t\t\tx = 1\n" * 5]


def bpe_openai_package():
    """import bpe_openai (its 0.1.4 reads its data with a deprecated importlib call)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai
    return bpe_openai


def have_exact():
    return importlib.util.find_spec("bpe_openai") is not None


def need_exact():
    """Skip without bpe-openai on a developer's machine; in CI it must be there."""
    if not have_exact():
        if os.environ.get("CI"):
            pytest.fail("bpe-openai is not installed; CI installs it with the test extra "
                        "(pip install -e '.[test]')")
        pytest.skip("bpe-openai is not installed (pip install -e '.[tokens]')")


# -- the estimate ---------------------------------------------------------------------

def test_estimate_empty_and_tiny():
    for enc in tokens.ENCODINGS:
        assert tokens.estimate("", enc) == 0
        assert tokens.estimate("a", enc) == 1
        assert tokens.estimate(" ", enc) >= 1
    assert tokens.estimate(None) == 0


def test_estimate_default_encoding_is_cl100k():
    assert tokens.DEFAULT_ENCODING == tokens.CL100K
    assert tokens.estimate(MIXED) == tokens.estimate(MIXED, tokens.CL100K)


def test_estimate_unknown_encoding():
    with pytest.raises(ValueError, match="unknown encoding"):
        tokens.estimate("hello", "p50k_base")


@pytest.mark.parametrize("text", [ENGLISH, CHINESE, CODE, MIXED])
def test_estimate_grows_with_the_text(text):
    for enc in tokens.ENCODINGS:
        one = tokens.estimate(text, enc)
        assert one > 0
        # Doubling the text about doubles the estimate; prefixes never cost more.
        assert abs(tokens.estimate(text * 2, enc) - 2 * one) <= 2
        assert tokens.estimate(text * 10, enc) > tokens.estimate(text * 9, enc)
        assert tokens.estimate(text[: len(text) // 2], enc) <= one


def test_cjk_costs_more_per_character_than_ascii():
    ascii_text = "the quick brown fox jumps over the lazy dog " * 5
    cjk_text = CHINESE * 4
    for enc in tokens.ENCODINGS:
        per_char_ascii = tokens.estimate(ascii_text, enc) / len(ascii_text)
        per_char_cjk = tokens.estimate(cjk_text, enc) / len(cjk_text)
        assert 0.15 < per_char_ascii < 0.35
        assert 0.6 < per_char_cjk < 1.6
        # Common characters are one token, rare ones two or three.
        assert tokens.estimate("的" * 50, enc) < tokens.estimate("龘" * 50, enc)
    # o200k has far more Chinese in its vocabulary than cl100k.
    assert tokens.estimate(CHINESE * 4, tokens.O200K) < tokens.estimate(CHINESE * 4, tokens.CL100K)


def test_estimate_odd_characters_do_not_break_it():
    for text in ["\ud800 lone surrogate", "\x00\x01\x1b[31mred\x1b[0m", "\x85\x80\x9f C1",
                 "é" * 10, "🎉" * 5, "\u2028\u3000\ufeff", "𠀀𠀁 ext B", "नमस्ते", "Привет мир"]:
        for enc in tokens.ENCODINGS:
            assert tokens.estimate(text, enc) >= 1


def test_estimate_within_reach_of_the_exact_count():
    """A loose check on a few samples; benchmarks/bench_tokens.py measures it properly."""
    need_exact()
    for enc in tokens.ENCODINGS:
        exact = tokens.exact_counter(enc)
        for text in (ENGLISH * 3, CHINESE * 3, CODE * 3, MIXED * 3):
            assert abs(tokens.estimate(text, enc) - exact(text)) <= 0.25 * exact(text)


def _reference_features(text):
    """features() as plain loops over the class string: what the bytes tricks must equal."""
    import itertools
    codes = tokens.classes(text).decode("ascii")
    f = [0] * len(tokens.FEATURES)

    def runs(keep):
        return [len(list(g)) for k, g in itertools.groupby(codes, lambda c: c in keep) if k]

    for n in runs("aAl"):
        i = n - 1 if n <= 8 else 8 if n <= 10 else 9 if n <= 12 else 10
        f[i] += 1
        f[11] += max(0, n - 12)
    f[12], f[13] = codes.count("A"), codes.count("aA")
    for n in runs("0"):
        f[14] += (n + 2) // 3
        f[15] += 1
    f[16] = codes.count(" 0") if f[15] else 0
    for n in runs("."):
        f[16 + min(n, 3)] += 1
        f[20] += max(0, n - 2)
    f[21] = codes.count(".a") + codes.count(".A")
    for n in runs(" "):
        if n > 1:
            f[22 if n <= 3 else 23 if n <= 7 else 24] += 1
            f[25] += max(0, n - 7)
    f[26], f[27], f[28] = codes.count("n"), len(runs("n")), codes.count("t")
    if not text.isascii():
        for i, c in enumerate("hjHkgclrioesy", 29):
            f[i] = codes.count(c)
        for c, i in (("r", 42), ("i", 43), ("k", 44), ("g", 45), ("o", 46), ("y", 47)):
            # runs of one script: a character whose left neighbour is of no such script
            f[i] = sum(1 for j, ch in enumerate(codes) if ch == c and codes[j - 1] not in "rikgoy")
    return f


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aaaaBBz09  \n\t.,(_-你好龘かカ한éжΣ🎉—", max_size=60))
def test_features_match_a_plain_loop(text):
    assert tokens.features(text) == _reference_features(text)


# -- exact counts -----------------------------------------------------------------------

def test_count_falls_back_to_the_estimate_without_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "bpe_openai", None)  # import bpe_openai -> ImportError
    monkeypatch.setattr(tokens, "_EXACT", {})
    for enc in tokens.ENCODINGS:
        assert tokens.exact_counter(enc) is None
        assert not tokens.exact_available(enc)
        info = tokens.count_info(MIXED, enc)
        assert info == (tokens.estimate(MIXED, enc), False, enc, "estimate")
        assert (info.exact, info.method, info.encoding) == (False, "estimate", enc)
        assert tokens.count(MIXED, enc) == tokens.estimate(MIXED, enc)
    assert tokens.count("") == 0


def test_count_falls_back_in_a_process_that_cannot_import_the_extra(tmp_path):
    """Block the import with a meta-path finder, as on a machine without the extra."""
    script = textwrap.dedent("""\
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "bpe_openai" or name.startswith("bpe_openai."):
                    raise ImportError("blocked for the test")

        sys.meta_path.insert(0, Block())
        from ctxd.memory.text import tokens
        info = tokens.count_info("hello world, 你好", "o200k_base")
        assert not info.exact and info.method == "estimate", info
        assert info.tokens == tokens.estimate("hello world, 你好", "o200k_base")
        print("fallback ok")
        """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "fallback ok" in out.stdout


def test_exact_count_equals_the_package_count():
    need_exact()
    bpe_openai = bpe_openai_package()
    for enc in tokens.ENCODINGS:
        own = bpe_openai.get_encoding(enc)
        assert tokens.exact_available(enc)
        for text in SAMPLES + ["<|endoftext|> is text here, not a special token"]:
            info = tokens.count_info(text, enc)
            assert info.exact and info.method == "bpe-openai" and info.encoding == enc
            assert info.tokens == len(own.encode_ordinary(text))
            assert tokens.count(text, enc) == info.tokens


def test_public_api_counts_in_pieces_without_changing_the_count(monkeypatch):
    """Counts of pieces cut at pre-token boundaries add up to the count of the whole."""
    need_exact()
    bpe_openai = bpe_openai_package()
    text = (ENGLISH + CHINESE + CODE + MIXED + "word " * 30 + "\n") * 40
    monkeypatch.setattr(tokens, "CHUNK", 997)
    for enc in tokens.ENCODINGS:
        whole = len(bpe_openai.get_encoding(enc).encode_ordinary(text))
        assert tokens._public_counter(enc)(text) == whole
        pieces = list(tokens._pieces(text, 997))
        assert "".join(pieces) == text and len(pieces) > 20
        assert all(len(p) <= 997 for p in pieces)


def test_the_public_api_answers_when_the_rust_shortcut_fails(monkeypatch):
    need_exact()

    def broken(spec, enc):
        raise AttributeError("no tokenizer_for_encoding in this version")

    monkeypatch.setattr(tokens, "_rust_counter", broken)
    monkeypatch.setattr(tokens, "_EXACT", {})
    for enc in tokens.ENCODINGS:
        info = tokens.count_info(MIXED, enc)
        assert info.exact and info.method == "bpe-openai"
        assert info.tokens == tokens._public_counter(enc)(MIXED)
        assert tokens.count("\ud800 lone surrogate", enc) >= 3


@pytest.mark.parametrize("which", ["shortcut", "public"])
def test_exact_count_past_the_package_limits(which, monkeypatch):
    """bpe-openai's public API refuses 1,000,000 characters (and 200,000 tokens) a call."""
    need_exact()
    if which == "public":
        monkeypatch.setattr(tokens, "_rust_counter", lambda spec, enc: None)
    monkeypatch.setattr(tokens, "_EXACT", {})
    para = "Every line starts with a letter and ends with a newline, 每行都以换行结束。\n"
    n = 1_100_000 // len(para) + 1
    for enc in tokens.ENCODINGS:
        assert tokens.count(para * n, enc) == n * tokens.count(para, enc)
    # No line break and no space at all: cut anyway (public API), close to exact.
    run = "漢字" * 40_000
    for enc in tokens.ENCODINGS:
        expected = 40 * tokens.count("漢字" * 1000, enc)
        assert tokens.count(run, enc) == pytest.approx(expected, rel=0.01)


# -- the model table -------------------------------------------------------------------

@pytest.mark.parametrize("name,canonical,window,encoding", [
    ("claude-sonnet-4-5", "claude-sonnet-4-5", 200_000, tokens.CL100K),
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5", 200_000, tokens.CL100K),
    ("Claude-Opus-4-1", "claude-opus-4-1", 200_000, tokens.CL100K),
    ("claude-opus-4-1-20250805", "claude-opus-4-1", 200_000, tokens.CL100K),
    ("claude-opus-4-20250514", "claude-opus-4", 200_000, tokens.CL100K),
    ("claude-3-5-haiku-20241022", "claude-3-5-haiku", 200_000, tokens.CL100K),
    ("anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5", 200_000, tokens.CL100K),
    ("claude-sonnet-4@20250514", "claude-sonnet-4", 200_000, tokens.CL100K),
    ("gpt-4o", "gpt-4o", 128_000, tokens.O200K),
    ("openai/gpt-4o-2024-08-06", "gpt-4o", 128_000, tokens.O200K),
    ("gpt-4o-mini-2024-07-18", "gpt-4o-mini", 128_000, tokens.O200K),
    ("GPT-4.1", "gpt-4.1", 1_047_576, tokens.O200K),
    ("gpt-4.1-nano-2025-04-14", "gpt-4.1-nano", 1_047_576, tokens.O200K),
    ("o3", "o3", 200_000, tokens.O200K),
    ("o4-mini-2025-04-16", "o4-mini", 200_000, tokens.O200K),
    ("gpt-5", "gpt-5", 400_000, tokens.O200K),
    ("gpt-5-2025-08-07", "gpt-5", 400_000, tokens.O200K),
    ("gpt-4-0613", "gpt-4", 8_192, tokens.CL100K),
    ("models/gemini-2.5-pro", "gemini-2.5-pro", 1_048_576, tokens.CL100K),
    ("gemini-2.5-flash-preview-05-20", "gemini-2.5-flash", 1_048_576, tokens.CL100K),
    ("glm-4.5", "glm-4.5", 128_000, tokens.CL100K),
    ("qwen2.5-coder-32b-instruct", "qwen2.5", 131_072, tokens.CL100K),
    ("qwen3-235b-a22b", "qwen3", 131_072, tokens.CL100K),
    ("qwen3-coder-480b-a35b-instruct", "qwen3-coder", 262_144, tokens.CL100K),
    ("llama3.1:8b", "llama-3.1", 131_072, tokens.CL100K),
    ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.3", 131_072, tokens.CL100K),
])
def test_lookup(name, canonical, window, encoding):
    m = models.lookup(name)
    assert (m.name, m.window, m.encoding, m.source) == (canonical, window, encoding, "built-in")
    assert models.window(name) == window
    assert models.encoding_for(name) == encoding


@pytest.mark.parametrize("name", ["claude-opus-4-7", "gpt-5.3", "gpt-4o1", "o30", "", "llama"])
def test_unknown_model_is_a_usage_error_with_close_matches(name):
    with pytest.raises(CtxdError) as exc:
        models.lookup(name)
    assert exc.value.exit_code == ExitCode.USAGE == 2
    assert "unknown model" in exc.value.message
    assert "[models." in exc.value.message


def test_unknown_model_names_close_matches():
    with pytest.raises(CtxdError) as exc:
        models.lookup("claude-sonet-4-5")
    assert "did you mean" in exc.value.message and "claude-sonnet-4-5" in exc.value.message
    with pytest.raises(CtxdError) as exc:
        models.lookup("gpt-5.3")
    assert "gpt-5.2" in exc.value.message or "gpt-5.4" in exc.value.message


def write_config(home, text):
    d = home / ".config" / "ctxd"
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.toml").write_text(text)


def test_config_overrides_and_adds_models(isolated_paths):
    write_config(isolated_paths, textwrap.dedent("""\
        [models."claude-sonnet-4-5"]
        window = 1000000

        [models."My-Local-Llama"]
        window = 32768
        encoding = "o200k_base"
        """))
    cfg = config_mod.load()
    m = models.lookup("claude-sonnet-4-5-20250929", cfg)
    assert (m.window, m.source) == (1_000_000, "config")
    assert models.lookup("claude-sonnet-4-5").window == 200_000  # no config, no override
    local = models.lookup("my-local-llama:q4_k_m", cfg)
    assert (local.name, local.window, local.encoding) == ("My-Local-Llama", 32768, tokens.O200K)
    assert "My-Local-Llama" in models.known(cfg)
    assert models.lookup("gpt-4o", cfg).window == 128_000  # others untouched


@pytest.mark.parametrize("body,needle", [
    ('[models."x"]\nwindow = 0\n', "positive integer"),
    ('[models."x"]\nwindow = "big"\n', "positive integer"),
    ('[models."x"]\nwindow = 1000\nencoding = "gpt2"\n', "encoding"),
    ('models = 3\n', "table"),
])
def test_bad_model_config_is_a_config_error(isolated_paths, body, needle):
    write_config(isolated_paths, body)
    with pytest.raises(ConfigError) as exc:
        models.lookup("gpt-4o", config_mod.load())
    assert exc.value.exit_code == ExitCode.CONFIG
    assert needle in exc.value.message
