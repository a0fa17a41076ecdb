"""Redact secrets before anything is stored.

Three passes, in order: the literal values below; ctxd's own patterns
(BUILTIN, with the keyword-assignment rule); gitleaks' default rules
(ctxd.memory.text.gitleaks); then base64 runs whose decoded text holds a secret
any of them knows (``[REDACTED:b64:<kind>]``).

Each rule replaces what it matches with ``[REDACTED:<kind>]``. Where a rule
has a group named ``s``, only that group is replaced (``password=`` stays,
the value goes). Rules can be turned off (ctxd's kinds, gitleaks' rule ids,
"gitleaks" for all of those, "base64" for the last pass) and added in
config.toml:

    [redact]
    disable = ["bearer", "generic-api-key"]
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

Import cost matters (the hook path): only ``re`` at import time; a pattern is
compiled the first time its hints occur in a text.
"""

import re

from ctxd.memory.text import gitleaks

# Names of assignments whose value is a secret: the name ends with one of these words.
_ASSIGN_WORDS = {
    "password": "password", "passwd": "password", "passphrase": "password",
    "secret": "secret", "client_secret": "secret", "secret_key": "secret",
    "token": "token", "access_token": "token", "auth_token": "token", "refresh_token": "token",
    "api_key": "api-key", "apikey": "api-key", "access_key": "api-key", "private_key": "private-key",
    "encryption_key": "secret", "signing_key": "secret", "master_key": "secret", "hmac_key": "secret",
    "session_key": "secret", "app_key": "api-key", "license_key": "api-key",
}
# A name ending in "key" names a secret only with one of these words before it; any other
# (cache_key, sort_key, KEY) only when its value looks random (see _generic_key).
_NOT_SECRET_KEYS = ("primary", "foreign", "sort", "partition", "cache", "idempotency", "public", "pub", "hot",
                    "dict", "map", "object", "row", "group", "lookup", "unique", "composite", "index", "shortcut",
                    "hash", "routing", "dedup", "message", "translation", "i18n", "cursor", "s3")
_ASSIGN = (  # the name's head (db_, API_, self.) is read back from the keyword: a faster scan
    r"(?P<name>(?i:pass(?:word|wd|phrase)|secret|token|key|credentials?|salt|pwd))"
    r"(?P<nq>\\*[\"'])?"  # a quoted name ("password": ...), in JSON text escaped too (JSON in JSON: twice)
    r"(?P<sp>[ \t]*)(?P<sep>:=|=>|=(?!=)|:(?!:))[ \t]*"
    r"(?:(?P<q>\\*[\"'])(?P<qs>[^\"'\\\n\r]{1,200})(?P=q)"
    r"|(?P<us>[^\s\"'`\\<>(){}\[\],;|&]++)(?![(\[{]))"
)
_BY_LENGTH = sorted(_ASSIGN_WORDS.items(), key=lambda x: -len(x[0]))
_STOP = {"none", "null", "nil", "true", "false", "str", "string", "int", "bool", "any", "undefined", "optional",
         "required", "object", "bytes", "secretstr", "unknown", "redacted", "hidden", "env", "default", "empty"}
_CAMEL = re.compile(r"[a-z][A-Z]")
_IDENT_CHAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_PEM = (r"-----BEGIN (?P<pem>[A-Z0-9 ]*)PRIVATE KEY(?P<blk>(?: BLOCK)?)-----"  # BLOCK: PGP's
        r"(?:[\s\S]*?-----END (?P=pem)PRIVATE KEY(?P=blk)-----|(?:[A-Za-z0-9+/=:\s]|\\[nr]){40,})")
_STS_BARE = r"\b(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdz|FQoGZXIvYXdz)[A-Za-z0-9/+=]{80,}"  # STS tokens' base64 heads
_B64_40 = r"(?<![A-Za-z0-9/+=._-])(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=_-]|\.[A-Za-z0-9])"  # not in a JWT
_CLI_VALUE = r"(?P<s>(?!-|\$|\*|\[REDACTED)[^\s\"'\\`<>|;&$()]{1,200})"
_ARG_VALUE = r"(?![/.~])" + _CLI_VALUE  # after -p: not a path (mkdir -p /x on the same line)
# userinfo ends at the last "@" before the host (mongodb://admin:p@ss/w0rd@db/x); not a port
# before a path (localhost:3000/@vite/client)
_URL_PASSWORD = (r"(?<=://)[^\s:/@\\\"'<>]*:(?P<s>(?!\[REDACTED)(?!\d+/)[^\s?#\\\"'<>]+)"
                 r"(?=@[^\s@/?#\\\"'<>]*(?:[/?#\s\\\"'<>]|$))")
# passwords on command lines: mysql -pX, sshpass -p X, docker login -p X, --password X, .netrc
_QUOTE = r"(?:\\?[\"'])?"
_MYSQL = r"\bmysql(?:dump|admin|sh|import|check)?[ \t][^\n|;&]*?(?<=[ \t])-p" + _QUOTE + _ARG_VALUE
_SSHPASS = r"\bsshpass(?:[ \t]+-[A-Za-z]\S*)*?[ \t]+-p[ \t]*" + _QUOTE + _ARG_VALUE
_LOGIN = r"\b(?:docker|podman|buildah|skopeo|nerdctl)[ \t]+login\b[^\n|;&]*?[ \t]-p[ \t]+" + _QUOTE + _ARG_VALUE
_FLAG = (r"(?<![\w-])--(?:password|passwd|db-password|token|api-key|apikey|auth-token|access-token|"
         r"client-secret)(?:=|[ \t]+)(?:\\?[\"'])?" + _CLI_VALUE)
_NETRC = r"\bmachine[ \t]+\S+(?:\s+(?:login|account)\s+\S+)+\s+password\s+" + _CLI_VALUE
_BASIC = r"\b[Bb]asic[ \t]+(?P<s>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"

# (kind, pattern). Order matters: specific before generic.
BUILTIN = (
    ("private-key", _PEM),
    # a cloud service account's key file: the key (when not already a redacted PEM) and its id
    ("private-key", r"\"private_key\\*\"\s*:\s*\\*\"(?P<s>(?!\[REDACTED)(?:[^\"\\]|\\.){16,}?)\""),
    ("private-key-id", r"\"private_key_id\\*\"\s*:\s*\\*\"(?P<s>[0-9a-f]{32,64})\\*\""),  # JSON in JSON too
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
    ("slack-token", r"\bx(?:ox[abposr]|app)-[A-Za-z0-9\-]{10,}"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"),
    ("aws-session-token", r"(?i:aws_?session_?token|x-amz-security-token|sessiontoken)(?:\\?[\"'])?[ \t]*[:=][ \t]*"
                          r"(?:\\?[\"'])?(?P<s>[A-Za-z0-9/+=]{100,})"),
    ("aws-session-token", _STS_BARE),
    ("aws-secret-key", _B64_40),
    ("azure-storage-key", r"(?i:AccountKey|SharedAccessKey)=(?P<s>[A-Za-z0-9+/]{20,}={0,2})"),
    ("azure-sas", r"[?&]sig=(?P<s>(?!\[REDACTED)[A-Za-z0-9%+/]{20,}(?:=|%3D){0,2})"),
    ("vault-token", r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}"),
    ("mailgun-key", r"\bkey-[0-9a-f]{32}\b"),
    ("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_\-]+(?:/[A-Za-z0-9_\-]+)+"),
    ("basic-auth", _BASIC),
    ("bearer", r"(?i)(?<=\bbearer )(?!\[REDACTED)[A-Za-z0-9\-._~+/]{8,}=*"),
    # userinfo ends at the last "@" before the host: mongodb://admin:p@ss@db/x
    ("password", _URL_PASSWORD),
    # passwords on command lines: mysql -pX, sshpass -p X, docker login -p X, --password X
    ("password", _MYSQL),
    ("password", _SSHPASS),
    ("password", _LOGIN),
    ("password", _FLAG),
    ("password", _NETRC),
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


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")  # no string module: its import compiles a regex

# Substrings without which a rule cannot match (in the text, or in the lower-cased text for
# HINTS_LOWER): a rule is not run over a text that has none of them. By kind, or by pattern where
# a kind has several.
HINTS = {
    "private-key": ("PRIVATE KEY", "private_key"), "private-key-id": ("private_key_id",),
    "anthropic-key": ("sk-ant-",), "openai-key": ("sk-",), "stripe-key": ("k_live_", "k_test_", "whsec_"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab-token": ("glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glcbt-", "glsoat-"), "huggingface-token": ("hf_",),
    "npm-token": ("npm_",), "aws-access-key": ("AKIA", "ASIA", "ABIA", "ACCA"), "slack-webhook": ("hooks.slack.com/",),
    "slack-token": ("xox", "xapp-"), "google-api-key": ("AIza",), "jwt": ("eyJ",), _URL_PASSWORD: ("://",),
    "vault-token": ("hvs.", "hvb.", "hvr."), "mailgun-key": ("key-",), "azure-sas": ("sig=",),
    _BASIC: ("asic",), _STS_BARE: ("IQoJb3JpZ2luX2Vj", "FwoGZXIvYXdz", "FQoGZXIvYXdz"),
    _SSHPASS: ("sshpass",), _FLAG: ("--",), _NETRC: ("machine",),
}
HINTS_LOWER = {
    "aws-secret-key": ("secret", "access"), "bearer": ("bearer ",),
    "assignment": ("pass", "secret", "token", "key", "credential", "salt", "pwd"),
    "aws-session-token": ("session", "security-token"),
    "azure-storage-key": ("accountkey=", "sharedaccesskey="), _MYSQL: ("mysql",), _LOGIN: (" login",),
}
_NO_HINT = {_B64_40}  # bare keys: run on every text


def _random_40(v):
    """A bare 40-character base64 word that is a key (AWS's secret key shape), not a word or a hash."""
    from ctxd.memory.text.gitleaks import entropy

    return (any(c.isupper() for c in v) and any(c.islower() for c in v) and any(c.isdigit() for c in v)
            and entropy(v) >= 4.3)


def _basic(v):
    """HTTP basic credentials: base64 of user:password."""
    import base64
    import binascii

    try:
        raw = base64.b64decode(v + "=" * (-len(v) % 4), validate=True).decode("ascii")
    except (binascii.Error, ValueError):
        return False
    return ":" in raw and raw.isprintable()


_CHECKS = {_B64_40: _random_40, _BASIC: _basic}  # (pattern: is the group "s" a secret?)
_B64_RUN = r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{24,}={0,2}(?![A-Za-z0-9+/=_-])"  # compiled on first use
_B64_MAX = 4096  # longer runs are data (images, archives), not an encoded token


def _json_safe(text, a, b):
    """(a, b) moved so that neither end splits a backslash escape (the text may be JSON)."""
    def odd_run(i):  # an odd run of backslashes ends just before i
        n = 0
        while i - n > 0 and text[i - n - 1] == "\\":
            n += 1
        return n % 2 == 1

    if odd_run(a):
        a -= 1
    while b > a and odd_run(b):
        b -= 1
    return a, b


_UUID = r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}"


def _looks_random(v):
    """A value of at least 16 characters, letters and digits, with the entropy of a random string."""
    from ctxd.memory.text.gitleaks import entropy

    return (len(v) >= 16 and any(c.isdigit() for c in v) and any(c.isalpha() for c in v)
            and not re.fullmatch(_UUID, v) and entropy(v) >= 3.5)


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
    kind = next((k for w, k in _BY_LENGTH if word.endswith(w)), None)
    if kind is None:  # *key, *credentials, *salt, *pwd: said of secrets and of much else, so only
        v = m.group("qs") if m.group("qs") is not None else m.group("us")  # a random-looking value
        head = word[:-3].rstrip("_-.") if word.endswith("key") else word
        if not head or head.endswith(_NOT_SECRET_KEYS) or not _looks_random(v):
            return None
        kind = "password" if word.endswith("pwd") else "secret"
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
        # gitleaks' rules (ctxd.memory.text.gitleaks), each disabled by its id, all by "gitleaks"
        self.gitleaks = None if "gitleaks" in disable else gitleaks.Rules(disable)
        self.base64 = "base64" not in disable
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

            def hints(table, k, p):
                if (k, p) not in builtin or p in _NO_HINT:
                    return None
                return table.get(p, table.get(k))

            # [kind, pattern, hints, hints_lower, check, compiled]: each compiled when its hints first occur
            self._rules = [[k, p, hints(HINTS, k, p), hints(HINTS_LOWER, k, p),
                            _CHECKS.get(p) if (k, p) in builtin else None, None] for k, p in self._sources]
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
        text = self._patterns(text, bump)
        if self.gitleaks is not None:
            for _ in range(4):  # again while it finds: a greedy rule (curl ... -u) finds one of two on a line
                spans = self.gitleaks.find(text)
                if not spans:
                    break
                text = self._spans(text, spans, bump)
        if self.base64:
            text = self._encoded(text, bump)
        return text, counts

    def _patterns(self, text, bump):
        lower = None
        for rule in self.rules:
            kind, source, hints, hints_lower, check, rx = rule
            if hints is not None and not any(h in text for h in hints):
                continue
            if hints_lower is not None:
                lower = text.lower() if lower is None else lower
                if not any(h in lower for h in hints_lower):
                    continue
            if rx is None:
                rx = rule[5] = re.compile(source)
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
                def repl(m, kind=kind, check=check):
                    if m.group("s") is None or check is not None and not check(m.group("s")):
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
        return text

    @staticmethod
    def _spans(text, spans, bump):
        """*text* with the (start, end, kind) spans replaced; of overlapping spans the first wins."""
        out, pos = [], 0
        for a, b, kind in sorted(spans, key=lambda x: (x[0], -x[1])):
            a, b = _json_safe(text, max(a, pos), b)
            if b <= a or text.startswith("[REDACTED", a):
                continue
            out.append(text[pos:a] + f"[REDACTED:{kind}]")
            bump(kind)
            pos = b
        return "".join(out) + text[pos:] if out else text

    def _encoded(self, text, bump):
        """Base64 of a secret (echo -n $TOKEN | base64, a Kubernetes Secret's data): a run of
        base64 whose decoded text holds a secret the rules know goes whole, as b64:<kind>."""
        if not any(c.isdigit() for c in text):  # cheap exit for prose
            return text
        import base64
        import binascii

        spans = []
        for m in re.finditer(_B64_RUN, text):
            if m.end() - m.start() > _B64_MAX:
                continue
            start = m.start()
            if start and text[start - 1] == "\\" and m.group(0)[0] in "nrt":  # JSON text: \nZ2hw...
                start += 1
            run = text[start:m.end()].rstrip("=")
            try:
                raw = base64.b64decode(run.replace("-", "+").replace("_", "/") + "=" * (-len(run) % 4))
                raw = raw.decode("ascii")
            except (binascii.Error, ValueError):
                continue
            if not raw.replace("\n", "").replace("\t", "").isprintable():
                continue
            inner = {}
            plain = self._patterns(raw, lambda k, inner=inner: inner.__setitem__(k, 1))
            if plain == raw and self.gitleaks is not None:
                inner.update((k, 1) for _a, _b, k in self.gitleaks.find(raw))
            if inner:
                spans.append((start, m.end(), "b64:" + sorted(inner)[0]))
        return self._spans(text, spans, bump) if spans else text


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
