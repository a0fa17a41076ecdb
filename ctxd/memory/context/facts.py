"""Extractive, deterministic fact finding: what a summary must never lose.

A *fact* is a sentence (clause) of the conversation holding something hard:
a number with a unit or currency, a date, a version, a file path, a URL, an
identifier (ticket id, #channel), a constraint with its negation or bound
("do not", "never", "at most", 不要, 不超过), a question, a preference or a
to-do. Facts are kept verbatim, tagged (preference, requirement, background,
todo, question), keyed by topic so a newer statement supersedes an older one
about the same thing, and de-duplicated.
"""

import re

_SENT = re.compile(r"(?<=[.!?。！？])\s+|\n+|(?<=[。！？])")

RX = {
    "money": re.compile(r"""
        [$€£¥]\s?\d[\d,.]*\s?[kKmM]?\b                          # $12k, € 3.5M
      | \b\d[\d,.]*\s?(?:[kKmM]\s?)?(?:USD|EUR|GBP|CNY|RMB|JPY|dollars?|euros?)\b   # 40k USD
      | \d[\d,.]*\s?(?:万|千|百)?\s?(?:元|美元|人民币|块)          # 5万元, 300 块
    """, re.X),
    "number": re.compile(r"""
        \b\d[\d,.]*\s?(?:                                       # a number and its unit
            %|ms|s|sec|seconds?|minutes?|min|hours?|h|days?|weeks?|months?|years?
          | [KMGT]i?B|bytes?|rps|qps|req/s|users?|nodes?|cores?|GB|MB|TB|x
          | errors?|timeouts?|requests?|failures?|retries|connections?|rows?|tables?|records?
          | replicas?|shards?|instances?|workers?|threads?|people|engineers?
        )\b
      | \b\d[\d,]*\s[a-z-]+\s(?:errors|timeouts|requests|failures|retries|connections|rows|records
                                |users|kills|warnings)\b        # 12 upstream timeouts
      | \b(?:port|pid|uid|gid|id|issue|pr|\#)\s*\#?\d{2,}\b     # port 5432, issue #123
      | \d+(?:\.\d+)?\s?(?:毫秒|秒|分钟|小时|天|周|个月|年|人|台|核|万|千|%)   # 200毫秒, 3台
      | (?:端口|编号|工号)\s*\d+                                  # 端口 8080
    """, re.X),
    "date": re.compile(r"""
        \b\d{1,2}:\d{2}(?::\d{2})?\s?(?:UTC|GMT|CET|PST|EST|[AaPp]\.?[Mm]\.?)\b   # 14:30 UTC, 9:00 am
      | \b\d{4}-\d{2}-\d{2}\b                                   # 2026-03-14
      | \b\d{1,2}/\d{1,2}/\d{2,4}\b                             # 3/14/26
      | \b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?\ \d{1,2}(?:st|nd|rd|th)?
        (?:,?\ \d{4})?\b                                        # March 14th, 2026
      | \d{4}年\d{1,2}月(?:\d{1,2}日)?                           # 2026年3月14日
      | \d{1,2}月\d{1,2}[日号]                                   # 3月14号
      | \b(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|tomorrow|today|next\ week)\b
      | (?:周[一二三四五六日]|星期[一二三四五六日天]|明天|下周)
    """, re.X),
    "version": re.compile(r"\bv\d+(?:\.\d+)+\b|\b[A-Za-z][\w.+-]*[ -]v?\d+\.\d+(?:\.\d+)*\b|\b[a-z]+-\d+(?:\.\d+)*\b"),
    "path": re.compile(r"(?:~|\.{1,2})?/(?:[\w.@+-]+/)*[\w.@+-]+|\b[\w.-]+/(?:[\w.-]+/)*[\w-]+\.[A-Za-z0-9]{1,6}\b"),
    "url": re.compile(r"\bhttps?://[^\s)>\]\"'，。]+"),
    "identifier": re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d+\b|#[\w-]{2,}|@[\w-]{2,}"),
    "constraint": re.compile(r"""
        \b(?:do\ not|don't|never|must\ not|mustn't|must|should\ not|cannot|can't
           |at\ most|at\ least|no\ more\ than|no\ less\ than|not\ exceed|not\ more\ than
           |hard\ (?:requirement|rule|limit)|forbidden|required|mandatory|red\ line)\b
      | 不要|不能|不得|不可|禁止|必须|至少|至多|最多|不超过|不少于|不低于|不高于|只能|务必|红线|硬性
    """, re.I | re.X),
    "question": None,  # ASKED or OPEN, below
    "progress": re.compile(r"(?i)\bI(?:'ve| have)?\s+(?:now\s+|already\s+|finally\s+|just\s+)?(?:learned|learnt|mastered|"
                           r"understood|figured out|got the hang of|nailed)\b|\bI (?:now )?(?:understand|get) (?:how|why|what)\b|"
                           r"我(?:已经|现在|终于|基本)?(?:掌握|学会|理解|搞懂|弄懂|弄明白|搞明白|熟悉)了"),
    "preference": re.compile(r"""
        \b(?:i\ prefer|i'd\ prefer|i\ like|i\ want|please\ (?:always|never|use|keep|answer|reply|write|be)
           |i'd\ rather|my\ preferences?|preferences?\ on\ how)\b
      | 我(?:更)?喜欢|我希望|我想要|请(?:用|使用|始终|总是|不要|先)|偏好|习惯
    """, re.I | re.X),
    "todo": re.compile(r"(?i)\b(?:todo|to-do|next step|action item|we need to|need to|remember to|follow up|pending)\b|待办|下一步|需要做|记得|跟进"),
    "correction": re.compile(r"""
        \b(?:actually|correction|change[sd]?\ to|move[sd]?\ to|no\ longer|update:|scratch\ that
           |not\ \S+\ anymore|revised|postponed|pushed\ (?:back|out)\ to
           |raised\ to|lowered\ to|increased\ to|reduced\ to|from\ \S+\ to)\b
      | 改为|改成|改到|推迟到|提前到|提高到|降低到|更正|不再|其实是|修改为|作废|以新的
    """, re.I | re.X),
}

# A question asked (a "?", 吗/呢 at the end, 为什么/为何/怎么): the next reply answers it. A question
# declared open ("Still unresolved: …", "My open question: …", "I still don't understand …", 我的疑问,
# 还没弄懂, 仍然不明白, 待定) stays open whatever follows, until it is said to be settled.
ASKED = re.compile(r"(?i)[?？]\s*$|[吗呢嘛][。.!！]?\s*$|为什么|为何|^(?:why|how come)\b")
OPEN = re.compile(r"(?i)\b(?:still open|open questions?|(?:my|one|an|the) question(?: is)?\s*:|not (?:yet )?(?:decided|resolved|"
                  r"answered|settled|clear)|undecided|unresolved|tbd|to be decided|unclear whether|not sure (?:whether|why|how)|"
                  r"no answer yet|still (?:don't|do not|can't|cannot|didn't) (?:understand|see|get|figure out|tell)|"
                  r"still (?:unclear|confused|puzzled|no idea|not sure|wondering))\b|"
                  r"没定|未定|待定|还没(?:有)?(?:回复|决定|确定)|悬而未决|疑问|不懂|不明白|没明白|没懂|没搞懂|没弄懂|没想通|"
                  r"还没(?:弄|搞|想)?(?:懂|明白|清楚|通)|仍然(?:不|没)|依然(?:不|没)|还是(?:不|没)(?:懂|明白|理解)|未解决|没解决")
RX["question"] = re.compile(f"(?:{ASKED.pattern[4:]})|(?:{OPEN.pattern[4:]})", re.I)

# The assistant thinking aloud ("Let me check…", "Now I'll…", "I need to…", 让我…): never a fact.
NARRATION = re.compile(r"(?i)^(?:[^,.;:!?\n]{1,60},\s*)?"  # "Before drafting beads, I need to…"
                       r"(?:(?:ok(?:ay)?|good|great|perfect|now|first|next|then|alright|so|all right)[,.!:—-]*\s+)*"
                       r"(?:let me|let's|let us|i'll|i will|i need to|i'm going to|i am going to|i should|i want to|"
                       r"i'm now|i can now|now i)\b|^(?:让我|我来|我先|接下来我|现在我|我需要|我要先)")

HARD = ("money", "number", "date", "version", "path", "url", "identifier")

# Words that name what a value is about: the topic under which a newer statement
# replaces an older one ("the deadline is ..." / "deadline moved to ...").
TOPICS = (
    "deadline", "due", "launch", "release", "budget", "cost", "price", "latency", "p95", "p99", "timeout",
    "throughput", "memory", "ram", "disk", "storage", "cpu", "port", "region", "database", "db", "cache",
    "queue", "version", "python", "node", "java", "jdk", "django", "postgres", "postgresql", "mysql",
    "redis", "mongodb", "kafka", "kubernetes", "k8s", "team", "headcount", "meeting", "demo", "freeze",
    "sla", "slo", "retention", "backup", "rate limit", "limit", "quota", "environment", "env", "staging",
    "production", "cluster", "owner", "channel", "ticket", "branch", "domain", "endpoint",
    "预算", "截止", "期限", "上线", "发布", "延迟", "版本", "端口", "数据库", "缓存", "内存", "成本", "价格",
    "时间", "日期", "团队", "人数", "环境", "服务器", "带宽",
)


def sentences(text):
    """Split into sentences/clauses (English and CJK punctuation, newlines)."""
    out = []
    for part in _SENT.split(text):
        part = part.strip(" \t-*>•#")
        if 3 <= len(part):
            out.append(part[:600])
    return out


def classify(sentence, role):
    kinds = [k for k, rx in RX.items() if rx.search(sentence)]
    for k in ("question", "progress"):  # the learner's questions and progress are the learner's own
        if k in kinds and role != "user":
            kinds.remove(k)
    return kinds


def is_narration(sentence):
    """The assistant thinking aloud: "Let me…", "Now I'll…", "I need to…", 让我…"""
    return bool(NARRATION.search(sentence.strip()))


def topic_of(sentence):
    low = sentence.lower()
    found = [t for t in TOPICS if t in low]
    return found[0] if found else ""


def tag_of(kinds, role):
    """The fact's tag; requirements and preferences are only what the user said."""
    if "question" in kinds:
        return "question"
    if "preference" in kinds and role == "user":
        return "preference"
    if "todo" in kinds:
        return "todo"
    if ("constraint" in kinds or "correction" in kinds) and role in ("user", "system"):
        return "requirement"
    return "background"


def priority(kinds, role, importance, sentence=""):
    """How much a fact deserves a place in a tight budget.

    Hard values count per value (a line with a ticket id and a channel name
    outranks a line with one number); what the user said outranks what the
    assistant or a tool said; a bare imperative from the assistant is cheap.
    """
    hard = sum(len(RX[k].findall(sentence)) if sentence else 1 for k in kinds if k in HARD)
    p = min(hard, 4) * 1.0
    for k in kinds:
        p += {"constraint": 2.0, "correction": 3.0, "preference": 2.5, "todo": 1.0, "progress": 3.0}.get(k, 0)
    if "question" in kinds:
        p += 2.5 if declared_open(sentence) else 0.8  # a declared open question > a passing one
    if role == "user":
        p *= 1.5
    elif role == "assistant":
        p *= 0.6
    elif role == "tool":
        p *= 0.4
    return p * (0.5 + importance)


QMARK = re.compile(r"[?？]\s*$")


def declared_open(sentence):
    """Whether a question says it is open ("still open", "not decided", "Still unresolved: …",
    我的疑问, 还没弄懂, 待定), as opposed to one that is only asked (a "?", 吗), which the next
    reply answers."""
    return bool(OPEN.search(sentence))


def is_fact(kinds):
    """Every kind above marks a fact; plain prose marks none."""
    return bool(kinds)


def hard_values(sentence, kinds=HARD):
    """[(start, end, text)] of the hard values in *sentence* (of the given kinds)."""
    out = []
    for k in kinds:
        for m in RX[k].finditer(sentence):
            out.append((m.start(), m.end(), m.group(0)))
    return sorted(set(out))


def _core(question):
    """A question without its lead-in ("Coming back to this: ..."), for de-duplication."""
    return question.rsplit(":", 1)[-1].rsplit("：", 1)[-1]


def normalize(sentence):
    return re.sub(r"[\W_]+", " ", sentence.lower()).strip()


SHOWN_CHARS = 220  # of a fact's text, in a context or a layout (a fact is at most 500)


def trim(text, limit=SHOWN_CHARS):
    """*text* cut to *limit* characters, the cut marked with …"""
    return text if len(text) <= limit else text[: limit - 1] + "…"


EARLY_USER_TURNS = 6
EARLY_BOOST = 1.4


def extract(message_id, ts, role, content, importance=0.5, early=False):
    """Facts of one message: [(tag, kinds, text, norm, topic, priority)].

    *early*: the message is one of the first user turns of its session, where
    people state the task and its constraints: its facts weigh more.
    """
    if role == "tool":
        # tool output: only its first hard lines (errors, versions); the rest is offloaded anyway
        lines = [l for l in content.splitlines()[:40] if l.strip()]
        content = "\n".join(lines)
    out = []
    for s in sentences(content):
        if s.startswith("[... ") or s.startswith("[REDACTED"):
            continue  # ctxd's own offload pointer, not something said
        if role != "user" and is_narration(s):
            continue
        kinds = classify(s, role)
        if not kinds or not is_fact(kinds):
            continue
        if is_filler(s):
            continue  # "How have you been?", "Can't wait.", "Thanks!": never a fact
        if kinds == ["constraint"] and len(s) > 300:
            continue
        out.append((tag_of(kinds, role), ",".join(kinds), s, normalize(_core(s) if "question" in kinds else s),
                    topic_of(s), priority(kinds, role, importance, s) * (EARLY_BOOST if early else 1.0)))
    return out


_OFFLOADED = re.compile(r"\[\.\.\. (\d+) characters omitted; full output \((\d+) characters\): (\S+) \.\.\.\]")


def offload_pointer(content):
    """(tag, kinds, text, norm, topic, priority) of the pointer to an output ctxd moved to a file
    (the preview names it), or None: the pointer is a fact, the preview is not."""
    m = _OFFLOADED.search(content or "") if "characters omitted" in (content or "") else None
    if not m:
        return None
    text = f"Full output ({int(m.group(2)):,} characters): {m.group(3)}"
    return "background", "pointer", text, normalize(text), "", 3.0


# -- filler: greetings, thanks, pleasantries are never facts --------------------------

_SOCIAL = set("""hi hello hey hiya yo thanks thank thx ty you so much very great awesome cool nice wow ok okay sure
yes no yeah yep yup nope lol haha hah good morning afternoon evening night bye goodbye see soon later take care talk
cant can't cannot wait how have been are doing what's whats up your day weekend going it i i'm im am well fine
me too glad hear that sounds love really excited happy for congrats congratulations amazing wonderful perfect
welcome there again all right alright np problem cheers oh ah hmm um uh indeed totally absolutely definitely
lovely fantastic brilliant hope doing good to be is was the a an and what about things life been up with
appreciate it's its just nice meet meeting same here as always miss missed ya u thanks! exactly true right
""".split())
_SOCIAL_ZH = re.compile(r"^(?:你好|您好|嗨|哈喽|谢谢|多谢|感谢|好的|好|嗯|哈哈|没问题|再见|拜拜|太好了|不客气|辛苦了)+[!！,，.。~ ]*$")


def is_filler(sentence):
    """A greeting, thanks or pleasantry ("How have you been?", "Can't wait.", "Thanks!"): every
    word is a social word and nothing hard (a number, a date, a name in code) is in it."""
    s = sentence.strip()
    if not s:
        return True
    if _SOCIAL_ZH.match(s):
        return True
    if any(RX[k].search(s) for k in HARD):
        return False
    words = re.findall(r"[a-z']+", s.lower().replace("’", "'"))
    if not words or re.search(r"[\u4e00-\u9fff]", s):
        return False
    return all(w in _SOCIAL or w.strip("'") in _SOCIAL for w in words)
