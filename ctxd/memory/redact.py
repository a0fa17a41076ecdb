"""Redact secrets before anything is stored.

Each rule replaces what it matches with ``[REDACTED:<kind>]``. Rules can be
turned off and added in config.toml:

    [redact]
    disable = ["bearer"]
    [[redact.patterns]]
    name = "internal-token"
    regex = "itk_[0-9a-f]{32}"
"""

import re

# (kind, pattern, replacement group handling). Order matters: specific before generic.
BUILTIN = (
    ("private-key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----"),
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("aws-access-key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("bearer", r"(?i)(?<=\bbearer )[A-Za-z0-9\-._~+/]{8,}=*"),
    ("password", r"(?<=://)[^\s:/@]+:[^\s@/]+(?=@)"),
)


class Redactor:
    def __init__(self, disable=(), extra=()):
        rules = [(k, p) for k, p in BUILTIN if k not in set(disable)]
        rules += [(k, p) for k, p in extra]
        self.rules = [(k, re.compile(p)) for k, p in rules]

    def __call__(self, text):
        """(redacted text, {kind: count})."""
        counts = {}
        for kind, rx in self.rules:
            if kind == "password":
                def repl(m):
                    user = m.group(0).split(":", 1)[0]
                    return f"{user}:[REDACTED:password]"
            else:
                def repl(m, kind=kind):
                    return f"[REDACTED:{kind}]"
            text, n = rx.subn(repl, text)
            if n:
                counts[kind] = counts.get(kind, 0) + n
        return text, counts


def from_config(cfg):
    """A Redactor configured by config.toml's [redact] table (raw config dict)."""
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
    return Redactor(disable=disable, extra=extra)
