"""Text fit to show in a session memory or a context: one line, cut at a boundary, without
terminal escapes, markup or a tool's plumbing; and tests for narration, code and filler.
"""

import re

from ctxd.memory.context import facts as facts_mod


def clean(text, limit=None):
    """One readable line: whitespace collapsed, JSON-style escapes (``\\n``, ``\\"``, ``\\t``) and
    terminal escape sequences taken out."""
    if not isinstance(text, str):
        return ""
    text = _ANSI.sub("", text)
    text = text.replace("\\r\\n", " ").replace("\\n", " ").replace("\\t", " ").replace('\\"', '"')
    text = " ".join(text.split())
    if limit and len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\\x1b\[[0-9;?]*[A-Za-z]|\\u001b\[[0-9;?]*[A-Za-z]")


def strip_ansi(text):
    """*text* without terminal escape sequences (real or written as ``\\x1b[``/``\\u001b[``)."""
    return _ANSI.sub("", text) if isinstance(text, str) else text


# -- text that may be shown: cut at boundaries, no plumbing, no narration -----------------

_PLUMBING = re.compile(
    r"(?i)characters omitted|full output \(\d|/outputs?/\S+\.txt|read the full transcript at|"
    r"if you need specific details from before compaction|please continue the conversation from where|"
    r"this session is being continued from a previous conversation|</?output-file>|output is being written to|"
    r"read the output file|\[\.\.\. full output|tool_use_id|ctxd chat output \d")
_TAG = re.compile(r"</?[A-Za-z_][\w-]*(?:\s[^<>]*)?/?>|</?[A-Za-z_][\w-]*\s*$")
_MARKUP = re.compile(r"\*\*|__|^#{1,6}\s+|^>\s*|^[-*•]\s+|^\d+[.)]\s+(?=\S)")
_SENTENCE_END = re.compile(r"[.!?。！？](?=\s|$)")
_NARRATION = re.compile(
    r"(?i)^(?:(?:ok(?:ay)?|alright|great|good|perfect|excellent|now|so|first|next|then|finally)[,!.:]?\s+)*"
    r"(?:let me|let's|let us|i(?:'ll| will| need to| should| am going to|'m going to| want to| can now| must)|"
    r"we(?:'ll| will| need to| should)|time to|going to|now i|i'm now|i am now)\b")
_BARE_ACK = re.compile(r"(?i)^(?:ok(?:ay)?|alright|great|good|perfect|excellent|done|got it|thanks?)[.!]?$")


def is_narration(text):
    """Whether a line is the model thinking aloud ("Let me…", "Now I'll…", "I need to…", a line
    that leads into a tool call with ":"): never a task, a fact or a technical point."""
    s = clean(text).strip("*_ ")
    if not s:
        return True
    return bool(_NARRATION.match(s) or _BARE_ACK.match(s) or (s.endswith(":") and len(s) < 200))


_CODE = re.compile(r"^[\"'{\[(<$]|[;{}(,]$|\"\w+\"\s*:|^\w+\s*=\s|\b(?:def|return|import|const|let|var|function)\b.*[(=]|=>|^\.\w")


def looks_like_code(text):
    """Whether a line is code or data (a JSON key, a statement), not a sentence."""
    return bool(_CODE.search((text or "").strip()))


def is_plumbing(text):
    """Whether a line is a tool's or a CLI's plumbing: output-file pointers, "characters omitted"
    markers, compaction boilerplate."""
    return bool(_PLUMBING.search(text or ""))


def cut(text, limit):
    """*text* on one line within *limit* characters, cut at a sentence end when one is near, else
    at a word boundary, and the cut marked with …; never inside a word."""
    s = clean(text)
    if len(s) <= limit:
        return s
    head = s[: limit - 1]
    ends = [m.end() for m in _SENTENCE_END.finditer(head)]
    if ends and ends[-1] >= limit * 0.5:
        return head[: ends[-1]].rstrip() + " …"
    sp = head.rfind(" ")
    if sp >= limit * 0.3:
        return head[:sp].rstrip(" ,;:-–—(") + " …"
    # one long token (a path, a hash): cut after its last separator, else drop it
    seps = [head.rfind(c) for c in "/._-"]
    at = max(seps)
    return (head[: at + 1] + "…") if at > 0 else ""


def tidy(text, limit=300):
    """A line fit to show: one line, no XML tags, no stray markdown, no plumbing, cut at a boundary;
    "" when nothing true is left (plumbing, an empty label)."""
    if not isinstance(text, str) or is_plumbing(text):
        return ""
    s = _TAG.sub(" ", strip_ansi(text))
    s = clean(s)
    prev = None
    while prev != s:
        prev = s
        s = _MARKUP.sub("", s).strip()
    s = s.replace("**", "").replace("__", "")
    s = clean(s)
    if not s or re.fullmatch(r"[\W_]*", s) or (s.endswith(":") and len(s.split()) <= 5):
        return ""  # punctuation only, or a label with nothing after it ("Optional Next Step:")
    return cut(s, limit)


def is_substantive(text):
    """Whether a request says something: not a bare "continue", "ok", a greeting or thanks."""
    s = clean(text)
    if not s or facts_mod.is_filler(s):
        return False
    words = re.findall(r"\w+", s)
    cjk = len(re.findall(r"[\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af]", s))
    return len(words) >= 3 or cjk >= 4
