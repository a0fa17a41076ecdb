"""Redact secrets before anything is stored.

Each rule replaces what it matches with ``[REDACTED:<kind>]``. Where a rule
has a group named ``s``, only that group is replaced (``password=`` stays,
the value goes). Rules can be turned off and added in config.toml:

    [redact]
    disable = ["bearer"]
    [[redact.patterns]]
    name = "internal-token"
    regex = "itk_[0-9a-f]{32}"

On top of the patterns, the exact values of the variables a trusted
``.contextrc`` sets whose names look secret (API_TOKEN, DB_PASSWORD, ...) are
replaced literally wherever they appear, as ``[REDACTED:env:NAME]``
(``secret_env`` picks them from an activation plan; ``open_store`` passes them).

The text redacted can be JSON (a tool call's arguments are redacted as JSON
text and parsed again): no rule starts or ends its match inside an escape
sequence, and every replacement is plain ASCII without quotes or backslashes.
Redacting twice gives the same text as redacting once.

Import cost matters (the hook path): only ``re`` at import time; the patterns
are compiled when the first Redactor is built.
"""

import re
import string

# Names of assignments whose value is a secret: the name ends with one of these words.
_ASSIGN_WORDS = {
    "password": "password", "passwd": "password", "passphrase": "password",
    "secret": "secret", "client_secret": "secret", "secret_key": "secret",
    "token": "token", "access_token": "token", "auth_token": "token", "refresh_token": "token",
    "api_key": "api-key", "apikey": "api-key", "access_key": "api-key", "private_key": "private-key",
}
_ASSIGN = (  # the name's head (db_, API_, self.) is read back from the keyword: a faster scan
    r"(?P<name>(?i:pass(?:word|wd|phrase)|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key))"
    r"(?P<nq>\\?[\"'])?"  # a quoted name ("password": ...), in JSON text escaped too
    r"(?P<sp>[ \t]*)(?P<sep>:=|=>|=(?!=)|:(?!:))[ \t]*"
    r"(?:(?P<q>\\?[\"'])(?P<qs>[^\"'\\\n\r]{1,200})(?P=q)"
    r"|(?P<us>[^\s\"'`\\<>(){}\[\],;|&]++)(?![(\[{]))"
)
_BY_LENGTH = sorted(_ASSIGN_WORDS.items(), key=lambda x: -len(x[0]))
_STOP = {"none", "null", "nil", "true", "false", "str", "string", "int", "bool", "any", "undefined", "optional",
         "required", "object", "bytes", "secretstr", "unknown", "redacted", "hidden", "env", "default", "empty"}
_CAMEL = re.compile(r"[a-z][A-Z]")
_IDENT_CHAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_PEM = (r"-----BEGIN (?P<pem>[A-Z0-9 ]*)PRIVATE KEY-----"
        r"(?:[\s\S]*?-----END (?P=pem)PRIVATE KEY-----|(?:[A-Za-z0-9+/=\s]|\\[nr]){40,})")

# (kind, pattern). Order matters: specific before generic.
BUILTIN = (
    ("private-key", _PEM),
    # a cloud service account's key file: the key (when not already a redacted PEM) and its id
    ("private-key", r"\"private_key\"\s*:\s*\"(?P<s>(?!\[REDACTED)(?:[^\"\\]|\\.){16,}?)\""),
    ("private-key-id", r"\"private_key_id\"\s*:\s*\"(?P<s>[0-9a-f]{32,64})\""),
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    ("stripe-key", r"\b(?:[sr]k_(?:live|test)_[0-9A-Za-z]{16,}|whsec_[0-9A-Za-z]{24,})"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("gitlab-token", r"\bgl(?:pat|dt|rt|ptt|ft|cbt|soat)-[A-Za-z0-9_\-]{20,}(?:\.[A-Za-z0-9_\-]{2,})*"),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    ("aws-secret-key", r"(?i:aws_?secret_?(?:access_?)?key|secret_?access_?key)(?:\\?[\"'])?[ \t]*[:=][ \t]*"
                       r"(?:\\?[\"'])?(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"),
    ("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_\-]+(?:/[A-Za-z0-9_\-]+)+"),
    ("slack-token", r"\bx(?:ox[abposr]|app)-[A-Za-z0-9\-]{10,}"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"),
    ("bearer", r"(?i)(?<=\bbearer )(?!\[REDACTED)[A-Za-z0-9\-._~+/]{8,}=*"),
    ("password", r"(?<=://)[^\s:/@\\\"'<>]+:(?P<s>(?!\[REDACTED)[^\s@/\\\"'<>]+)(?=@)"),
    ("assignment", _ASSIGN),
)

# Names of variables whose values are secrets (the name ends with one of these).
_SECRET_NAME = re.compile(r"(?i)(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$")
MIN_ENV_SECRET = 8


def looks_secret(name):
    return bool(_SECRET_NAME.search(name or ""))


def secret_env(plan):
    """{name: value} of what a plan's trusted .contextrc files set whose names look secret
    (values of at least MIN_ENV_SECRET characters). Only trusted files are ever read by the
    planner, and only their values are taken here (not the detectors', not ctxd's own)."""
    from ctxd.activation import trust

    trusted = [p for p, status, _err in plan.files if status == trust.ALLOWED]
    out = {}
    for name, value, src, _only in plan.sets:
        if value is None or not looks_secret(name) or len(value) < MIN_ENV_SECRET:
            continue
        if any(src == p or src.startswith(p + " [") for p in trusted):
            out[name] = value
    return out


_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "_.-")

# Substrings without which a rule cannot match (in the text, or in the lower-cased text for the
# names ending "_lower"): a rule is not run over a text that has none of them.
HINTS = {
    "private-key": ("PRIVATE KEY", '"private_key"'), "private-key-id": ('"private_key_id"',),
    "anthropic-key": ("sk-ant-",), "openai-key": ("sk-",), "stripe-key": ("k_live_", "k_test_", "whsec_"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab-token": ("glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glcbt-", "glsoat-"), "huggingface-token": ("hf_",),
    "npm-token": ("npm_",), "aws-access-key": ("AKIA", "ASIA", "ABIA", "ACCA"), "slack-webhook": ("hooks.slack.com/",),
    "slack-token": ("xox", "xapp-"), "google-api-key": ("AIza",), "jwt": ("eyJ",), "password": ("://",),
}
HINTS_LOWER = {
    "aws-secret-key": ("secret", "access"), "bearer": ("bearer ",),
    "assignment": ("pass", "secret", "token", "key"),
}


def _full_name(m):
    """(name, start) of the assignment's name: the keyword and the name characters before it."""
    text, i = m.string, m.start()
    while i > 0 and text[i - 1] in _NAME_CHARS:
        i -= 1
    return text[i:m.end("name")], i


def _assignment(m):
    """(kind, start, end) of the value to replace, or None when it is not a secret."""
    name, _start = _full_name(m)
    word = name.lower().replace("-", "_")
    kind = next((k for w, k in _BY_LENGTH if word.endswith(w)), "secret")
    if m.group("qs") is not None:
        group, v = "qs", m.group("qs")
    else:
        group, v = "us", m.group("us")
        settings = m.group("sep") == ":" or m.group("sep") == "=" and not m.group("sp") and v[0] != "="
        if v.isdigit() and len(v) < 8:
            return None  # a count, a flag, a port: 'HAVE_STRUCT_PASSWD_PW_PASSWD': 1
        if name.isupper() and settings:
            pass  # PASSWORD=x (shell, .env), DB_TOKEN: x (YAML) are settings, whatever the value
        elif name.isupper() and (v.isdigit() or _IDENT_CHAIN.fullmatch(v)):
            return None  # ERRORTOKEN = 59, MAX_TOKEN = LIMIT: code constants
        else:
            # Code passes secrets by name (token=token, password=self.password, key: cfg.token):
            # only values too long to be a placeholder and, after "=", not an identifier.
            if len(v) < 6 or v.isdigit() or "." in v and _IDENT_CHAIN.fullmatch(v):
                return None
            if _IDENT_CHAIN.fullmatch(v) and (not settings or not any(c.isdigit() for c in v)
                                              or len(v) < 16 and _CAMEL.search(v)):
                return None  # in "key: x", "key=x": a word with a digit, not a camelCase name
    low = v.lower()
    if (low in _STOP or v.startswith(("[REDACTED", "$", "%", "{{", "<", "*", "#", "@", "/", "~", ".", ":", "="))
            or len(v) >= 3 and len(set(v)) == 1 or low in _ASSIGN_WORDS or low.endswith(("...", "…"))):
        return None
    return kind, m.start(group), m.end(group)


class Redactor:
    def __init__(self, disable=(), extra=(), env=None):
        disable = set(disable)
        self._sources = [(k, p) for k, p in BUILTIN if k not in disable] + [(k, p) for k, p in extra]
        self._rules = None  # compiled on first use: a store opened only to read never pays for it
        self.env = {}  # literal -> name
        if env:
            import json
        for name, value in sorted((env or {}).items()):
            if isinstance(value, str) and len(value) >= MIN_ENV_SECRET:
                self.env.setdefault(value, name)
                escaped = json.dumps(value, ensure_ascii=False)[1:-1]  # as it reads inside JSON text
                self.env.setdefault(escaped, name)
        self.env_rx = (re.compile("|".join(re.escape(v) for v in sorted(self.env, key=len, reverse=True)))
                       if self.env else None)

    @property
    def rules(self):
        if self._rules is None:
            builtin = set(BUILTIN)
            self._rules = [(k, re.compile(p), HINTS.get(k) if (k, p) in builtin else None,
                            HINTS_LOWER.get(k) if (k, p) in builtin else None) for k, p in self._sources]
        return self._rules

    def __call__(self, text):
        """(redacted text, {kind: count})."""
        counts = {}

        def bump(kind):
            counts[kind] = counts.get(kind, 0) + 1

        if self.env_rx is not None:
            def env_repl(m):
                kind = "env:" + self.env[m.group(0)]
                bump(kind)
                return f"[REDACTED:{kind}]"

            text = self.env_rx.sub(env_repl, text)
        lower = None
        for kind, rx, hints, hints_lower in self.rules:
            if hints is not None and not any(h in text for h in hints):
                continue
            if hints_lower is not None:
                lower = text.lower() if lower is None else lower
                if not any(h in lower for h in hints_lower):
                    continue
            if kind == "assignment":
                def repl(m):
                    hit = _assignment(m)
                    if hit is None:
                        return m.group(0)
                    k, a, b = hit
                    bump(k)
                    s = m.start()
                    return m.group(0)[:a - s] + f"[REDACTED:{k}]" + m.group(0)[b - s:]
            elif "s" in rx.groupindex:
                def repl(m, kind=kind):
                    if m.group("s") is None:
                        return m.group(0)
                    bump(kind)
                    s = m.start()
                    return m.group(0)[:m.start("s") - s] + f"[REDACTED:{kind}]" + m.group(0)[m.end("s") - s:]
            else:
                def repl(m, kind=kind):
                    bump(kind)
                    return f"[REDACTED:{kind}]"
            text, n = rx.subn(repl, text)
            if n:
                lower = None
        return text, counts


def from_config(cfg, env=None):
    """A Redactor configured by config.toml's [redact] table (raw config dict), redacting
    the literal values in *env* ({NAME: value}, see secret_env) too."""
    from ctxd.errors import ConfigError

    r = (cfg or {}).get("redact", {}) if isinstance(cfg, dict) else {}
    disable = r.get("disable", [])
    extra = []
    for i, p in enumerate(r.get("patterns", [])):
        if not isinstance(p, dict) or not isinstance(p.get("regex"), str):
            raise ConfigError(f"config.toml: redact.patterns[{i}] needs name and regex")
        try:
            re.compile(p["regex"])
        except re.error as e:
            raise ConfigError(f"config.toml: redact.patterns[{i}]: invalid regex: {e}") from None
        extra.append((str(p.get("name", f"custom-{i}")), p["regex"]))
    return Redactor(disable=disable, extra=extra, env=env)
