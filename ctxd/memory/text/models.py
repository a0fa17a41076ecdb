"""Context windows of the models ctxd budgets for, and the tokenizer that approximates each.

    lookup("claude-sonnet-4-5-20250929")   -> Model("claude-sonnet-4-5", 200000, "cl100k_base", ...)
    lookup("openai/gpt-4o-2024-08-06")     -> Model("gpt-4o", 128000, "o200k_base", ...)
    lookup("gpt-9")                        -> CtxdError (exit code 2) naming close matches

Names are matched exactly, then case-insensitively, then by the longest known name
the given one starts with, when what follows is a snapshot or variant tag
("-20250929", "@20250514", "-latest", ":8b", "-instruct") and not a newer version
number ("claude-opus-4" does not stand for "claude-opus-4-7"). A provider prefix
("anthropic/", "models/", "openai.") is dropped first.

The user's config.toml overrides or adds models:

    [models."claude-sonnet-4-5"]
    window = 1000000             # the 1M-token context beta
    [models."my-local-llama"]
    window = 32768
    encoding = "cl100k_base"     # optional; cl100k_base by default

Windows are total context (input + output) in tokens, as the providers publish them.
o200k_base is the real tokenizer of OpenAI's models from GPT-4o on. For every other
model (Claude, Gemini, GLM, Qwen, Llama, DeepSeek) cl100k_base stands in: their own
tokenizers are not public or not offline, and cl100k counts higher than o200k, which
errs on the side of fitting the window.
"""

from ctxd.errors import ConfigError, CtxdError, ExitCode
from ctxd.memory.text.tokens import CL100K, ENCODINGS, O200K


class Model:
    __slots__ = ("name", "window", "encoding", "note", "source")

    def __init__(self, name, window, encoding=CL100K, note="", source="built-in"):
        self.name = name
        self.window = window
        self.encoding = encoding
        self.note = note
        self.source = source  # "built-in" or "config"

    def __repr__(self):
        return (f"Model({self.name!r}, window={self.window}, encoding={self.encoding!r}, "
                f"source={self.source!r})")

    def __eq__(self, other):
        return isinstance(other, Model) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__)


# name: (window, encoding, note). Sources: the providers' model pages (Anthropic's
# models overview, OpenAI's model pages, Google's Gemini API model cards, Z.ai, Qwen
# and Meta model cards), as of 2026.
_TABLE = {
    # Anthropic. Sonnet 4 / 4.5 take 1M tokens with the context-1m-2025-08-07 beta header.
    "claude-opus-4-6": (1_000_000, CL100K, ""),
    "claude-sonnet-4-6": (1_000_000, CL100K, ""),
    "claude-opus-4-5": (200_000, CL100K, ""),
    "claude-haiku-4-5": (200_000, CL100K, ""),
    "claude-sonnet-4-5": (200_000, CL100K, "1M with the context-1m beta"),
    "claude-opus-4-1": (200_000, CL100K, ""),
    "claude-opus-4": (200_000, CL100K, ""),
    "claude-sonnet-4": (200_000, CL100K, "1M with the context-1m beta"),
    "claude-3-7-sonnet": (200_000, CL100K, ""),
    "claude-3-5-sonnet": (200_000, CL100K, ""),
    "claude-3-5-haiku": (200_000, CL100K, ""),
    "claude-3-haiku": (200_000, CL100K, ""),
    # OpenAI
    "gpt-5.4": (1_050_000, O200K, ""),
    "gpt-5.2": (400_000, O200K, ""),
    "gpt-5.1": (400_000, O200K, ""),
    "gpt-5": (400_000, O200K, ""),
    "gpt-5-mini": (400_000, O200K, ""),
    "gpt-5-nano": (400_000, O200K, ""),
    "gpt-5-codex": (400_000, O200K, ""),
    "gpt-5-chat-latest": (128_000, O200K, ""),
    "gpt-4.1": (1_047_576, O200K, ""),
    "gpt-4.1-mini": (1_047_576, O200K, ""),
    "gpt-4.1-nano": (1_047_576, O200K, ""),
    "gpt-4o": (128_000, O200K, ""),
    "gpt-4o-mini": (128_000, O200K, ""),
    "o1": (200_000, O200K, ""),
    "o3": (200_000, O200K, ""),
    "o3-mini": (200_000, O200K, ""),
    "o3-pro": (200_000, O200K, ""),
    "o4-mini": (200_000, O200K, ""),
    "gpt-4-turbo": (128_000, CL100K, ""),
    "gpt-4-32k": (32_768, CL100K, ""),
    "gpt-4": (8_192, CL100K, ""),
    "gpt-3.5-turbo": (16_385, CL100K, ""),
    # Google
    "gemini-3.1-pro-preview": (1_048_576, CL100K, ""),
    "gemini-3-pro-preview": (1_048_576, CL100K, ""),
    "gemini-2.5-pro": (1_048_576, CL100K, ""),
    "gemini-2.5-flash": (1_048_576, CL100K, ""),
    "gemini-2.5-flash-lite": (1_048_576, CL100K, ""),
    "gemini-2.0-flash": (1_048_576, CL100K, ""),
    # Z.ai (Zhipu)
    "glm-4.6": (200_000, CL100K, ""),
    "glm-4.5": (128_000, CL100K, ""),
    "glm-4.5-air": (128_000, CL100K, ""),
    # Alibaba Qwen: Qwen3 is 32K native, 128K with YaRN; the 2507 updates and Coder are 256K.
    "qwen3-coder": (262_144, CL100K, ""),
    "qwen3-max": (262_144, CL100K, ""),
    "qwen3-235b-a22b-instruct-2507": (262_144, CL100K, ""),
    "qwen3-235b-a22b-thinking-2507": (262_144, CL100K, ""),
    "qwen3-30b-a3b-instruct-2507": (262_144, CL100K, ""),
    "qwen3-30b-a3b-thinking-2507": (262_144, CL100K, ""),
    "qwen3": (131_072, CL100K, "32K native; 128K with YaRN rope scaling"),
    "qwen2.5": (131_072, CL100K, ""),
    # Meta Llama
    "llama-3.3": (131_072, CL100K, ""),
    "llama-3.1": (131_072, CL100K, ""),
    # DeepSeek API
    "deepseek-chat": (128_000, CL100K, ""),
    "deepseek-reasoner": (128_000, CL100K, ""),
}

# Other spellings of the same models (Ollama tags, Hugging Face names, vendor aliases).
_ALIASES = {
    "claude-sonnet-4-0": "claude-sonnet-4",
    "claude-opus-4-0": "claude-opus-4",
    "claude-3-5-haiku-latest": "claude-3-5-haiku",
    "claude-3-7-sonnet-latest": "claude-3-7-sonnet",
    "llama3.1": "llama-3.1",
    "llama3.3": "llama-3.3",
    "meta-llama-3.1": "llama-3.1",
    "meta-llama-3.3": "llama-3.3",
    "qwen-2.5": "qwen2.5",
    "chatgpt-4o-latest": "gpt-4o",
}

_SEPARATORS = "-_.:@ "


def _normalize(name):
    n = name.strip().lower()
    if "/" in n:
        n = n.rsplit("/", 1)[1]  # anthropic/claude-..., models/gemini-..., openai/gpt-...
    for vendor in ("anthropic.", "openai.", "google.", "meta."):  # Bedrock-style ids
        if n.startswith(vendor):
            n = n[len(vendor):]
    return n


def _is_tag(rest):
    """True if `rest` (what follows a known name) is a snapshot or variant, not a version."""
    if not rest:
        return True
    if rest[0] not in _SEPARATORS:
        return False
    tail = rest[1:]
    digits = len(tail) - len(tail.lstrip("0123456789"))
    # "-1", "-4-5", ".1": a newer version; "-20250929", "-2024-08-06", ":8b", "-70b": a tag.
    return not (1 <= digits <= 2 and (digits == len(tail) or tail[digits] in _SEPARATORS))


def _overrides(config):
    """{normalized name: Model} from config.toml's [models."name"] tables."""
    raw = (config or {}).get("raw", {}).get("models", {})
    if not isinstance(raw, dict):
        raise ConfigError("config.toml: [models] must be a table of models")
    out = {}
    for name, spec in raw.items():
        where = f'config.toml: [models."{name}"]'
        if not isinstance(spec, dict):
            raise ConfigError(f"{where} must be a table (window = N)")
        window = spec.get("window")
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
            raise ConfigError(f"{where}: 'window' must be a positive integer (tokens)")
        encoding = spec.get("encoding", CL100K)
        if encoding not in ENCODINGS:
            raise ConfigError(f"{where}: 'encoding' must be one of {', '.join(ENCODINGS)}")
        out[_normalize(name)] = Model(name, window, encoding, spec.get("note", ""), "config")
    return out


def _builtin(key):
    key = _ALIASES.get(key, key)
    window, encoding, note = _TABLE[key]
    return Model(key, window, encoding, note)


def known(config=None):
    """Every model name lookup() knows: the built-in table and the config's."""
    return sorted(set(_TABLE) | set(_ALIASES) | {m.name for m in _overrides(config).values()})


def lookup(name, config=None):
    """The Model for `name`. CtxdError (exit code 2) with close matches if unknown.

    `config` is ctxd.activation.config.load()'s result (its "raw" TOML is read for
    [models."name"] tables); None means no overrides.
    """
    key = _normalize(name or "")
    over = _overrides(config)
    candidates = [over, _TABLE, _ALIASES]
    for table in candidates:
        if key in table:
            return over[key] if table is over else _builtin(key)
    best = None
    for table in candidates:
        for known_name in table:
            if key.startswith(known_name) and _is_tag(key[len(known_name):]):
                if best is None or len(known_name) > len(best[1]):
                    best = (table, known_name)
    if best is not None:
        table, known_name = best
        return over[known_name] if table is over else _builtin(known_name)
    import difflib  # only for the error: it imports and compiles re

    names = known(config)
    close = difflib.get_close_matches(key, names, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise CtxdError(
        f"unknown model {name!r}{hint} (add it to config.toml as "
        f'[models."{name}"] window = N)', ExitCode.USAGE)


def window(name, config=None):
    """The context window of `name`, in tokens."""
    return lookup(name, config).window


def encoding_for(name, config=None):
    """The tokenizer family that approximates `name`: o200k_base or cl100k_base."""
    return lookup(name, config).encoding
