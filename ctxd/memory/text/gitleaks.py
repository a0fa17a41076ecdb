"""gitleaks' default rule set (the vendored ``gitleaks.toml``), run with Python's ``re``.

``find(text)`` returns the spans of the secrets gitleaks' rules find, as gitleaks decides
them: a rule runs only when one of its keywords occurs in the lower-cased text; the secret
is the rule's ``secretGroup`` (else its first non-empty group, else the whole match); a
secret whose Shannon entropy is not above the rule's ``entropy`` is dropped, a ``generic*``
rule's secret needs a digit, and the global and the rule's allowlists (``regexes`` on the
secret, the match or the line, ``stopwords`` in the secret) let it go. Rules that only look
at file paths, and allowlists that need a path, do not apply to conversation text.

The Go (RE2) patterns are translated once (``translate``): a flag group in mid-pattern
becomes a scoped one, POSIX classes become ranges, ``\\z`` becomes ``\\Z``, and the
``[\\w.-]{0,50}?`` that only widens a match to the name before the keyword is dropped (it
costs Python's backtracking engine ~50 steps per character; a match-target allowlist gets
the name back). The translated rules are cached as JSON under the cache directory, keyed by
the file's hash: importing tomllib and parsing the file costs ~12 ms, reading the cache ~1.
A rule's regex is compiled the first time its keywords occur.

Refresh the file with ``benchmarks/refresh_gitleaks_rules.py``.
"""

import os
import re

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gitleaks.toml")
CACHE_SCHEMA = 2
_NAME_PREFIX = r"[\w.-]{0,50}?"
_POSIX = {"alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "digit": "0-9", "lower": "a-z", "upper": "A-Z",
          "space": r"\s", "xdigit": "0-9a-fA-F", "word": r"\w", "punct": r"!-/:-@\[-`{-~"}


def translate(go):
    """A Go RE2 pattern as a Python ``re`` pattern (the subset gitleaks' rules use)."""
    go = go.replace(r"\z", r"\Z").replace(r"|\\[nr]|", r"|\\|")  # any escape ends a secret: JSON in JSON
    for name, rng in _POSIX.items():
        go = go.replace(f"[:{name}:]", rng)
    out, closers, i, n = [], [0], 0, len(go)  # closers: extra ")" owed when each open group ends
    while i < n:
        c = go[i]
        if c == "\\":
            out.append(go[i:i + 2])
            i += 2
            continue
        if c == "[":  # a class: copied whole ("]" first is a literal)
            j = i + 1
            if j < n and go[j] == "^":
                j += 1
            if j < n and go[j] == "]":
                j += 1
            while j < n and go[j] != "]":
                j += 2 if go[j] == "\\" else 1
            out.append(go[i:j + 1])
            i = j + 1
            continue
        if c == "(":
            m = re.match(r"\(\?([imsU]*(?:-[imsU]+)?)\)", go[i:])
            if m and (out or len(closers) > 1):  # a flag group in mid-pattern: scope it to the rest
                out.append(f"(?{m.group(1)}:")
                closers[-1] += 1
                i += m.end()
                continue
            closers.append(0)
        elif c == ")" and len(closers) > 1:
            out.append(")" * closers.pop())
        out.append(c)
        i += 1
    out.append(")" * closers[0])
    return "".join(out)


def _allowlists(items):
    out = []
    for a in items or ():
        if a.get("paths") and a.get("condition", "OR").upper() == "AND":
            continue  # needs a file path too: never true for conversation text
        regexes = [translate(r) for r in a.get("regexes", ())]
        stop = [s.lower() for s in a.get("stopwords", ())]
        if regexes or stop:
            out.append({"target": a.get("regexTarget", "secret"), "regexes": regexes, "stopwords": stop})
    return out


def translate_config(doc):
    """The parsed TOML as the JSON-able rule list ``find`` uses (every regex checked to compile)."""
    import warnings

    rules = []
    for r in doc.get("rules", ()):
        if not r.get("regex"):
            continue  # a path-only rule
        rx = translate(r["regex"])
        widened = False
        for head in ("(?i)" + _NAME_PREFIX, _NAME_PREFIX):
            if rx.startswith(head):
                rx, widened = rx[:len(head) - len(_NAME_PREFIX)] + rx[len(head):], True
                break
        rules.append({"id": r["id"], "regex": rx, "keywords": [k.lower() for k in r.get("keywords", ())],
                      "entropy": float(r.get("entropy", 0)), "group": int(r.get("secretGroup", 0)),
                      "widened": widened, "allow": _allowlists(r.get("allowlists"))})
    glob = doc.get("allowlist") or {}
    allow = _allowlists([glob] + list(doc.get("allowlists", ())))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        for r in rules:
            re.compile(r["regex"])
            for a in r["allow"]:
                for x in a["regexes"]:
                    re.compile(x)
    return {"rules": rules, "allow": allow}


_DOC = []  # the loaded rules, once per process


def _load():
    if not _DOC:
        _DOC.append(_read())
    return _DOC[0]


def _read():
    import json

    from ctxd import paths
    from ctxd.activation.fileio import atomic_write, sha256_hex

    with open(PATH, "rb") as f:
        data = f.read()
    cache = os.path.join(paths.cache_dir(), "parsed", f"gitleaks-{CACHE_SCHEMA}-{sha256_hex(data)[:32]}.json")
    try:
        with open(cache, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        pass
    import tomllib

    value = translate_config(tomllib.loads(data.decode("utf-8")))
    try:
        atomic_write(cache, json.dumps(value))
    except OSError:
        pass  # a read-only cache costs speed, never correctness
    return value


def entropy(s):
    """Shannon entropy of *s* in bits per character."""
    import math

    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in (s.count(ch) for ch in set(s))) if n else 0.0


class Rules:
    """gitleaks' rules, less those named in *disable*; loaded and compiled on first use."""

    def __init__(self, disable=()):
        self.disable = set(disable)
        self._rules = None
        self._compiled = {}

    def _get(self):
        if self._rules is None:
            doc = _load()
            self._rules = [r for r in doc["rules"] if r["id"] not in self.disable]
            self._allow = doc["allow"]
        return self._rules

    def _rx(self, rule):
        rx = self._compiled.get(rule["id"])
        if rx is None:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                rx = self._compiled[rule["id"]] = re.compile(rule["regex"])
        return rx, rule["allow"]

    @staticmethod
    def _compiled_allow(a):
        """The allowlist's regexes, compiled the first time a candidate secret meets them."""
        rx = a.get("rx")
        if rx is None:
            rx = a["rx"] = [re.compile(x) for x in a["regexes"]]
        return rx

    def find(self, text, lower=None):
        """[(start, end, rule id)] of the secrets in *text*, in no particular order."""
        lower = text.lower() if lower is None else lower
        out, seen = [], {}
        for rule in self._get():
            if rule["keywords"]:
                for k in rule["keywords"]:
                    hit = seen.get(k)
                    if hit is None:
                        hit = seen[k] = k in lower
                    if hit:
                        break
                else:
                    continue
            rx, allow = self._rx(rule)
            for m in rx.finditer(text):
                span = self._secret(rule, m, allow)
                if span is not None:
                    out.append((span[0], span[1], rule["id"]))
        return out

    def _secret(self, rule, m, allow):
        g = rule["group"]
        if not g:
            g = next((i for i in range(1, (m.re.groups or 0) + 1) if m.group(i)), 0)
        secret = m.group(g)
        if not secret:
            return None
        if rule["entropy"] and entropy(secret) <= rule["entropy"]:
            return None
        if rule["id"].startswith("generic") and not any(c.isdigit() for c in secret):
            return None
        for a in self._allow + allow:
            if self._allowed(a, rule, m, secret):
                return None
        return m.start(g), m.end(g)

    @staticmethod
    def _allowed(a, rule, m, secret):
        low = secret.lower()
        if any(s in low for s in a["stopwords"]):
            return True
        if not a["regexes"]:
            return False
        text = m.string
        if a["target"] == "match":
            start = m.start()
            if rule["widened"]:  # the name the dropped [\w.-]{0,50}? would have taken
                while start > 0 and m.start() - start < 50 and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
                    start -= 1
            target = text[start:m.end()]
        elif a["target"] == "line":
            target = text[text.rfind("\n", 0, m.start()) + 1:(text.find("\n", m.end()) + 1 or len(text) + 1) - 1]
        else:
            target = secret
        return any(x.search(target) for x in Rules._compiled_allow(a))
