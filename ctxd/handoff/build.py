"""Build a handoff archive from a project's conversation store.

Everything is inferred offline and deterministically from the session's
messages and the facts kept in the store (``ctxd.memory.fact_merge``):

- **topic.title**: the gist of the session's first substantive user request
  ("I want to learn X" / "学习 X" gives "Learning X" / "学习 X"; otherwise its first
  sentence, cut at 80 characters). **current_subtopic**: the concept of the
  latest learner question. **stage**: ``starting`` (under 3 learner turns),
  ``reviewing`` (the latest learner turns revisit earlier points: "again",
  "recap", "review", "复习", "再确认", "再讲一遍"...), ``practicing`` (they paste code
  or say they will try it: "let me try", "我先去试一下", "练习"), else ``learning``.
- **progress**: ``completed`` = progress facts (done, finished, 完成...) and the
  concepts whose questions were resolved; ``in_progress`` = the open
  ``ctxd task``, else the latest substantive learner request; ``next_up`` = next
  steps and to-dos from the facts arranged by what they say (``render_formats.facts_layout``).
- **key_points**: the concepts the learner asked about, most asked first.
  ``understanding_level`` is the deepest kind of question asked about it
  (``definition``: "what is", "是什么", "什么是", "怎么回事"; ``mechanism``: "why",
  "how does", "difference between", "为什么", "怎么", "区别", "原理"; ``edge_cases``:
  "edge case", "best practice", "trade-off", "pitfall", "边界", "最佳实践", "权衡",
  "优缺点", "选哪个"); ``mastery_level`` maps it to low / medium / high and loses
  one level for each time the assistant corrected the learner about it ("not
  quite", "a common misconception", "不对", "不是这样", "误解") or the learner said
  they still did not get it ("still don't understand", "还是没懂", "还是有点没懂").
  ``[mastery]`` in config.toml overrides a concept's level.
- **questions**: the learner's questions from the facts table (tag
  ``question``). A question is **resolved** when the assistant answered it and
  the learner's next message acknowledges the answer ("thanks", "got it",
  "makes sense", "明白了", "懂了", "谢谢"...), or a later learner message says it is
  resolved / decided ("resolved", "decided", "已解决", "定了", "确定了") sharing two
  or more words with it; asking it again ("还是没懂: ...", "again: ...") reopens
  it. Questions of the previous archive of the session are kept (with their
  first ``created_at``); with ``[handoff] auto_pool_questions = false`` new
  questions do not join that pool.
- **learning_style**: from the learner's requests: "show code", "code example",
  "给代码", "代码示例" (code); "diagram", "draw", "画图", "图示" (visual); "brief",
  "keep answers short", "简短", "简洁" (shallow) vs "detailed", "in depth", "详细",
  "深入" (deep); "slower", "step by step", "慢一点", "一步一步" (slow) vs "faster",
  "快一点" (fast). The latest request wins; ``[learning_style]`` overrides.
- **environment**: detected project types, version pins, the git branch,
  versions mentioned in the facts (v1.2.3, jdk-17, Django 4.2.11), and the
  processes whose working directory is inside the project with their
  listening ports (psutil).
- **facts**: the facts kept of the session (current ones first by
  priority), verbatim, as many as the token budget allows: tokens of the
  session's messages / ``[handoff] compression_ratio`` (default 10), minus what
  the rest of the archive takes (at least MIN_TARGET tokens, so a short
  conversation still gets a useful archive). Key points and the question pool
  get up to 18 % of the budget each; a tool output's facts rank at half their
  priority; passing "...?" questions stay in the pool. **context_footprint**
  records the outcome (offloaded outputs count at their full size).

``ctxd teach`` prompts in the session (recorded with source ``teach`` or pasted
into an AI CLI) are not read as the learner; their ``[Qn]`` answers and
``[done: item]`` markers (``ctxd.handoff.teach.session_outcome``) resolve pool
questions and complete items.
"""

import os
import re

from ctxd.errors import CtxdError, NotFoundError
from ctxd.handoff import archive as A
from ctxd.memory.tokens import estimate

DEFAULT_RATIO = 10.0
MIN_TARGET = 1200  # tokens: a short conversation still gets a useful archive (its ratio is then below target)
MAX_KEY_POINTS = 15
MAX_QUESTIONS = 40

# -- question kinds -------------------------------------------------------------------

_LOW = re.compile(r"(?i)\bwhat(?:'s| is| are| was| were)\b|\bwhat does .{1,40}? mean\b|\bmeaning of\b|\bdefine\b|"
                  r"\bwhat do you mean\b|是什么|(?<!为)什么是|是啥|啥是|什么意思|干什么的|干嘛的|是怎么回事|怎么回事|指的是什么")
_MEDIUM = re.compile(r"(?i)\bwhy\b|\bhow (?:does|do|did|is|are|can|could|would|should|come|to)\b|\bdesigned\b|"
                     r"\bdifference\b|\bdiffer\b|\bcompared? (?:to|with)\b|\bunder the hood\b|\bwork(?:s)? internally\b|"
                     r"为什么|为何|怎么|如何|怎样|原理|机制|区别|关系|设计|有什么不同|会怎样")
_HIGH = re.compile(r"(?i)\bedge[- ]cases?\b|\bcorner[- ]cases?\b|\bbest[- ]practices?\b|\btrade-?offs?\b|\bpitfalls?\b|"
                   r"\bgotchas?\b|\bpros and cons\b|\bfailure modes?\b|\bwhen (?:not to|should(?:n't| not) i)\b|"
                   r"\bin production\b|边界|极端情况|最佳实践|权衡|取舍|优缺点|利弊|坑|适用场景|选哪个|哪个更好|哪个好")

LEVELS = ("low", "medium", "high")
DEPTH_LEVEL = {"definition": "low", "mechanism": "medium", "edge_cases": "high", "unknown": "low"}
_DEPTH_ORDER = {"unknown": 0, "definition": 1, "mechanism": 2, "edge_cases": 3}


def question_depth(text):
    """The kind of a learner question: "definition", "mechanism", "edge_cases" or None.

    The deepest kind present wins; "what is" phrases are taken out first, so
    "what is the difference between" reads as mechanism and "是怎么回事" as
    definition (not as 怎么).
    """
    rest = _LOW.sub(" ", text)
    if _HIGH.search(rest):
        return "edge_cases"
    if _MEDIUM.search(rest):
        return "mechanism"
    if rest != text:
        return "definition"
    return None


_CORRECTION = re.compile(r"(?i)\bnot quite\b|\bthat(?:'s| is) not (?:right|correct|quite right|true|how)\b|"
                         r"\bthat isn't (?:right|correct|true)\b|\bisn't quite\b|\bmisconception\b|\bincorrect\b|"
                         r"\byou(?:'re| are) (?:mixing|confusing)\b|\bcommon mistake\b|\bactually, no\b|\bnot exactly\b|"
                         r"不对|不完全对|不太对|不是这样|并不是这样|其实不是|误解|误区|纠正一下|搞混|混淆了|说反了")
_CONFUSED = re.compile(r"(?i)\bstill (?:don't|do not|didn't) (?:get|understand)\b|\bstill confused\b|\bstill unclear\b|"
                       r"\bdon't (?:get|understand) (?:it|this|that)\b|\blost me\b|"
                       r"还是(?:有点|不太|没)?(?:没懂|不懂|不明白|没明白|不理解)|没听懂|没看懂|不太懂|有点晕")
_ACK = re.compile(r"(?i)^\W*(?:ok(?:ay)?[,!. ]+)?(?:thanks|thank you|thx|ty|got it|makes sense|that makes sense|"
                  r"understood|i see|clear now|that helps|perfect|great,? thanks|cool,? thanks|nice,? thanks)\b|"
                  r"明白了|懂了|清楚了|理解了|谢谢|多谢|感谢|了解了|原来如此|学到(?:了|很多)")
_RESOLVED = re.compile(r"(?i)(?<!not )(?<!not yet )(?<!un)\bresolved\b|(?<!not )(?<!not yet )\bdecided\b|\bsettled\b|\bwe(?:'ll| will) go with\b|\bthe answer is\b|"
                       r"已解决|解决了|定了|确定了|决定了|有结论了|答复了|回复了")


def is_correction(text):
    return bool(_CORRECTION.search(text))


def is_confused(text):
    return bool(_CONFUSED.search(text))


def is_ack(text):
    t = text.strip()
    return bool(_ACK.search(t)) and len(t) <= 160


def mastery(depth, setbacks=0):
    """low / medium / high from the deepest question kind, one level lower per setback."""
    level = LEVELS.index(DEPTH_LEVEL.get(depth or "unknown", "low"))
    return LEVELS[max(0, level - setbacks)]


# -- concepts -------------------------------------------------------------------------

_LEADIN = re.compile(r"^[^:：?？\n]{0,60}?[:：]\s+|^[^:：?？\n]{0,60}?：")
_ZH_MARKERS = ("为什么", "为何", "是什么", "什么是", "是怎么回事", "怎么回事", "是干什么", "干什么", "怎么", "如何", "怎样",
               "有什么", "是什么关系", "是不是", "要不要", "能不能", "会不会", "可以吗", "够吗", "够用吗", "选哪个", "分别",
               "什么时候", "多大", "多少", "哪些", "吗", "呢")
_ZH_FILLER = re.compile(r"^(?:请问|请教一下|那么|那|再问一个|还有个问题|还有一个问题|顺便问一下|另外)[，,、\s]*|"
                        r"^(?:非要用|非要|非得|一定要|要|用)\s*|"
                        r"(?:的|会|要|还|是|都|又|就|需要|非要用|非要|用)$")
_EN_Q = re.compile(r"(?i)^(?:so,?\s+)?(?:what|who|which|why|how|when|where|is|are|do|does|did|can|could|should|would|will)"
                   r"(?:'s|'re)?(?:\s+(?:is|are|was|were|does|do|did|would|should|can|could|will|you|we|i|it|they|"
                   r"there|this|that|these|those|be|have|get|the|a|an|of|to|come|much|many|exactly|really|actually|not))*\s+")
_EN_HOW = re.compile(r"(?i)^how (?:big|many|much|long|often|fast|far|well|large|small)\s+(?:is|are|was|were|does|do|"
                     r"would|should|can|could|will)?\s*")
_EN_DOES = re.compile(r"(?i)^(?:what|how|why|where|when) (?:does|do|did)\b")
_EN_TAIL = re.compile(r"(?i)\s+(?:work|works|mean|means|do|does|matter|happen|happens|designed(?: (?:so|this way|like this))?|"
                      r"like that|that way|so|exactly|really|again|here|now)\s*$")


def _first_question(text):
    core = _LEADIN.sub("", text.strip(), count=1) if len(text) > 6 else text
    parts = [p.strip() for p in re.split(r"(?<=[?？])\s*|(?<=[.!])\s+|[\n。！]+", core) if p.strip()]
    for p in parts:
        if p.endswith(("?", "？")) or question_depth(p):
            return p
    return parts[0] if parts else core.strip()


def concept_of(text):
    """The concept a learner message is about (heuristic; at most 60 characters)."""
    q = _first_question(text).rstrip("?？ ")
    if re.search(r"[\u4e00-\u9fff]", q):
        # the last clause holding a question word ("师姐说..., 为什么非要用 epoll" -> that clause)
        clauses = [c for c in re.split(r"[，,；;]", q) if c.strip()]
        clause = next((c for c in reversed(clauses) if any(m in c for m in _ZH_MARKERS)), clauses[0] if clauses else q)
        pos = [(clause.find(m), m) for m in _ZH_MARKERS if m in clause]
        concept = clause
        if pos:
            i, m = min(pos)
            head, tail = clause[:i], clause[i + len(m):]
            concept = head if len(head.strip()) >= 2 else tail
        for _ in range(3):
            concept = _ZH_FILLER.sub("", concept.strip(" ，,、：:“”\"'"))
        concept = re.sub(r"的?(?:边界情况|极端情况|最佳实践|权衡|取舍|优缺点|利弊|区别|原理|机制)(?:有|是)?$", "", concept.strip())
        concept = concept.strip() or clause.strip()
    else:
        concept = re.sub(r"(?i)^(?:so|and|but|ok(?:ay)?|also|then|wait)\b,?\s+", "", q)
        concept = _EN_HOW.sub("", concept, count=1)
        concept = _EN_Q.sub("", concept, count=1)
        before = concept
        concept = _EN_TAIL.sub("", concept)
        if concept == before and _EN_DOES.match(q) and len(concept.split()) >= 2:
            concept = concept.rsplit(" ", 1)[0]  # "what does the database see" -> "the database"
        concept = re.split(r",\s+(?:and|or|but)\s+|,\s+", concept, maxsplit=1)[0]
        concept = re.sub(r"(?i)^(?:the|a|an|our|my|your|this|that)\s+", "", concept)
        concept = re.sub(r"(?i)^(?:the )?(?:edge|corner)[- ]cases?|^(?:the )?best[- ]practices?|^(?:the )?trade-?offs?|"
                         r"^(?:the )?pitfalls?|^(?:the )?difference", "", concept)
        concept = re.sub(r"(?i)^\s*(?:of|for|in|with|between|when using)\s+", "", concept).strip(" ,.:;\"'")
        concept = concept or q
    if len(concept) > 60:
        cut = concept[:60]
        concept = cut.rsplit(" ", 1)[0] if " " in cut[20:] else cut
    return concept.strip()


def _key(concept):
    return re.sub(r"[\W_]+", "", concept.lower())


def _answer_gist(text, limit=100):
    """The opening of an answer, skipping "Good question." / "先讲原理：" lead-ins and code:
    whole sentences until about 40 characters (20 for CJK), cut at *limit*."""
    from ctxd.memory.facts import sentences

    enough = 20 if re.search(r"[\u4e00-\u9fff]", text[:200]) else 40
    out = ""
    for s in sentences(text):
        s = s.strip("*_` ")
        if s.startswith(("$", "{", "```")) or (len(s) < 12 and not out) or s.endswith((":", "：")):
            continue
        out = f"{out} {s}".strip() if out and not re.search(r"[\u4e00-\u9fff]", s[:1]) else out + s
        if len(out) >= enough:
            break
    out = out or " ".join(text.split())
    return out if len(out) <= limit else out[: limit - 1] + "…"


# -- learning style -------------------------------------------------------------------

_STYLE = (
    ("wants_code_examples", True, re.compile(
        r"(?i)\bshow (?:me )?(?:the |some )?code\b|\bcode (?:examples?|samples?|snippets?)\b|\bexample code\b|"
        r"\bgive me (?:some )?code\b|\bwith code\b|\bin code\b|给(?:我)?(?:个|一段|点)?代码|代码示例|示例代码|上代码|"
        r"贴(?:一段|个)?代码|再给代码|写个例子|举个代码")),
    ("wants_visual_descriptions", True, re.compile(
        r"(?i)\bdiagrams?\b|\bdraw\b|\bvisuali[sz]e\b|\bvisual(?:ly)?\b|\bsequence chart\b|\bflow ?chart\b|\bascii art\b|"
        r"画(?:个|张|一张|一下)?图|图示|示意图|流程图|时序图|图解|画出来")),
    ("depth", "shallow", re.compile(
        r"(?i)\bbrief(?:ly)?\b|\b(?:keep|make) (?:it|answers|them|things) (?:short|brief)\b|\bshort answers?\b|"
        r"\bconcise\b|\btl;?dr\b|\bbullet points\b|简短|简单说|简洁|长话短说|一句话说|说重点")),
    ("depth", "deep", re.compile(
        r"(?i)\bin (?:more )?detail\b|\bdetailed\b|\bin depth\b|\bin-depth\b|\bdeep dive\b|\bthorough(?:ly)?\b|"
        r"详细|深入|展开讲|细讲|讲透|讲细一点")),
    ("pace", "slow", re.compile(
        r"(?i)\bslow(?:er| down)\b|\bstep by step\b|\bone (?:step|thing) at a time\b|\btoo fast\b|"
        r"慢一点|慢点|慢一些|一步一步|循序渐进|太快了")),
    ("pace", "fast", re.compile(
        r"(?i)\bfaster\b|\bspeed (?:it )?up\b|\bquicker\b|\bskip the basics\b|\btoo slow\b|快一点|快点|加快|跳过基础|太慢了")),
)


def infer_style(user_texts, preference_facts=()):
    """learning_style from the learner's messages (oldest first; the latest request wins)."""
    style = {"preference": "", "wants_code_examples": False, "wants_visual_descriptions": False,
             "depth": "normal", "pace": "normal"}
    for text in user_texts:
        for key, value, rx in _STYLE:
            if rx.search(text):
                style[key] = value
    prefs = []
    for p in preference_facts:
        p = " ".join(p.split())
        if p and p not in prefs:
            prefs.append(p)
    style["preference"] = " | ".join(prefs)[:400]
    return style


# -- topic and stage -------------------------------------------------------------------

_GREETING = re.compile(r"(?i)^(?:hi|hello|hey|good (?:morning|afternoon|evening)|你好|您好|嗨|哈喽)\b[!！,，.。 ]*$")
_LEARN_EN = re.compile(r"(?i)\b(?:learn(?:ing)?|understand(?:ing)?|study(?:ing)?|master(?:ing)?|get (?:into|better at))"
                       r"\s+(?:about\s+|how\s+)?(?P<x>[^,.;!?\n]{2,50}?)(?=\s*(?:[,.;!?\n]|$|\s+(?:and|so|because|for|while|but)\b))")
_LEARN_ZH = re.compile(r"(?:系统地|好好|认真)?(?:学习|学一下|学|了解|搞懂|弄懂|掌握|入门)\s*(?P<x>[^，。！？,.!?；;\n]{2,30})")


def topic_title(first_request):
    if not first_request:
        return ""
    m = _LEARN_ZH.search(first_request)
    if m and re.search(r"[\u4e00-\u9fff]", first_request):
        x = re.split(r"[，,]|一边|同时|并且", m.group("x"))[0].strip()
        if len(x) >= 2:
            return f"学习 {x}"
    m = _LEARN_EN.search(first_request)
    if m:
        return f"Learning {m.group('x').strip()}"
    from ctxd.memory.facts import sentences

    for s in sentences(first_request):
        if _GREETING.match(s) or len(s) < 8:
            continue
        s = re.sub(r"(?i)^(?:hi|hello|hey|你好|您好)[!！,， ]+", "", s).strip()
        return s if len(s) <= 80 else s[:79] + "…"
    return first_request.strip()[:80]


_REVIEW = re.compile(r"(?i)\bagain\b|\brecap\b|\breview\b|\brevisit\b|\bcoming back to\b|\bdouble-check|\bsanity check\b|"
                     r"\bearlier point\b|复习|再确认|再讲一遍|回到前面|之前讨论过|前面讲过|再说一遍|回顾")
_PRACTICE = re.compile(r"(?i)```|\blet me try\b|\bi'll try\b|\bexercise\b|\bpractice\b|\bi wrote\b|\bmy (?:code|solution)\b|"
                       r"先去试|试一下|练习|我写了|我的代码|动手")


def stage_of(user_texts):
    if len(user_texts) < 3:
        return "starting"
    last = user_texts[-6:]
    if sum(1 for t in last if _REVIEW.search(t)) >= 2:
        return "reviewing"
    if any(_PRACTICE.search(t) for t in last[-3:]):
        return "practicing"
    return "learning"


def detect_language(user_texts):
    text = " ".join(user_texts[:50])
    cjk = len(re.findall(r"[\u4e00-\u9fff]", text))
    latin = len(re.findall(r"[A-Za-z]", text))
    return "zh" if cjk and cjk * 3 >= latin else "en"


# -- environment -----------------------------------------------------------------------

_SHELLS = {"bash", "zsh", "fish", "sh", "dash", "ksh", "tcsh", "csh", "tmux", "tmux: server", "screen", "login", "sudo"}
_VERSION_WORDS = {"python", "node", "nodejs", "go", "golang", "rust", "ruby", "java", "jdk", "openjdk", "php", "perl",
                  "postgres", "postgresql", "mysql", "redis", "nginx", "gunicorn", "django", "flask", "react", "vue",
                  "ubuntu", "debian", "centos", "alpine", "gcc", "clang", "cmake", "kernel", "linux", "kafka",
                  "airflow", "dbt", "spark", "docker", "kubernetes", "k8s", "helm", "terraform", "npm", "pip",
                  "numpy", "pandas", "wireshark", "openssl", "glibc", "llvm", "cuda", "tensorflow", "pytorch", "torch"}


def versions_mentioned(texts, limit=25):
    """Version strings in *texts* (v1.2.3, jdk-17, Django 4.2.11), first seen first."""
    from ctxd.memory.facts import RX

    out = []
    for t in texts:
        for m in RX["version"].finditer(t):
            v = m.group(0).strip()
            inner = re.search(r"\bv\d+(?:\.\d+)+\b|\b[a-z]+-\d+(?:\.\d+)*\b", v)
            if inner and inner.start() > 0:  # "tag v1.2.3" -> "v1.2.3"
                v = inner.group(0)
            word = re.split(r"[ -]v?\d", v, maxsplit=1)[0]
            nums = re.findall(r"\d+", v[len(word):])
            if len(nums) >= 4:  # 127.0.0.1.8888: an address, not a version
                continue
            ok = (v[0] in "vV" and v[1:2].isdigit()) or word.lower() in _VERSION_WORDS \
                or (word[:1].isupper() and not word.isupper() and len(word) > 2) \
                or (any(c.isdigit() for c in word) and not word.isdigit())
            if ok and v not in out:
                out.append(v)
                if len(out) >= limit:
                    return out
    return out


def _inside(path, root):
    try:
        path, root = os.path.realpath(path), os.path.realpath(root)
    except OSError:
        return False
    return path == root or path.startswith(root.rstrip("/") + "/")


def processes(root, limit=20):
    """[{pid, name, cwd, ports}] of processes working inside *root* (not ctxd itself,
    its parents, or bare shells), with their listening TCP/UDP ports. Processes
    the user may not inspect are skipped."""
    try:
        import psutil
    except ImportError:
        return []
    skip = {os.getpid()}
    try:
        for p in psutil.Process().parents():
            skip.add(p.pid)
    except (psutil.Error, OSError):
        pass
    out = []
    for proc in psutil.process_iter(["pid", "name", "cwd"]):
        try:
            info = proc.info
            cwd = info.get("cwd")
            if not cwd or info["pid"] in skip or not _inside(cwd, root):
                continue
            name = info.get("name") or ""
            conns = getattr(proc, "net_connections", None) or proc.connections
            ports = sorted({c.laddr.port for c in conns(kind="inet")
                            if c.status == psutil.CONN_LISTEN and c.laddr})
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
        if name in _SHELLS and not ports:
            continue
        out.append({"pid": int(info["pid"]), "name": name, "cwd": cwd, "ports": [int(p) for p in ports]})
        if len(out) >= limit:
            break
    return sorted(out, key=lambda p: (not p["ports"], p["pid"]))


def environment(root, fact_texts=()):
    from ctxd.activation import detectors
    from ctxd.activation.contextrc import git_branch

    env = {"project_types": [], "version_pins": [], "git_branch": None, "versions_mentioned": [], "processes": []}
    if root and os.path.isdir(root):
        env["project_types"] = [name for name, _ in detectors.detect(root, {}, apply=False).types]
        env["version_pins"] = [{"tool": t, "version": v, "file": f} for t, v, f in detectors.read_pins(root)]
        env["git_branch"] = git_branch(root)[0]
        env["processes"] = processes(root)
    env["versions_mentioned"] = versions_mentioned(fact_texts)
    return env


# -- configuration ------------------------------------------------------------------------

def settings(config_raw):
    """[handoff], [learning_style] and [mastery] from config.toml, checked."""
    from ctxd.errors import ConfigError

    raw = config_raw if isinstance(config_raw, dict) else {}
    h = raw.get("handoff") or {}
    if not isinstance(h, dict):
        raise ConfigError("config.toml: [handoff] must be a table")
    ratio = h.get("compression_ratio", DEFAULT_RATIO)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 1 <= ratio <= 1000:
        raise ConfigError("config.toml: 'handoff.compression_ratio' must be a number from 1 to 1000")
    lang = h.get("language", "auto")
    if lang not in ("auto", "zh", "en"):
        raise ConfigError("config.toml: 'handoff.language' must be \"auto\", \"zh\" or \"en\"")
    pool = h.get("auto_pool_questions", True)
    if not isinstance(pool, bool):
        raise ConfigError("config.toml: 'handoff.auto_pool_questions' must be true or false")
    style = raw.get("learning_style") or {}
    if not isinstance(style, dict):
        raise ConfigError("config.toml: [learning_style] must be a table")
    checks = {"preference": (str,), "wants_code_examples": (bool,), "wants_visual_descriptions": (bool,),
              "depth": A.DEPTHS, "pace": A.PACES}
    for k, v in style.items():
        if k not in checks:
            raise ConfigError(f"config.toml: unknown key 'learning_style.{k}' (known: {', '.join(checks)})")
        allowed = checks[k]
        if allowed and isinstance(allowed[0], type):
            if not isinstance(v, allowed[0]):
                raise ConfigError(f"config.toml: 'learning_style.{k}' must be a {allowed[0].__name__}")
        elif v not in allowed:
            raise ConfigError(f"config.toml: 'learning_style.{k}' must be one of {', '.join(allowed)}")
    mast = raw.get("mastery") or {}
    if not isinstance(mast, dict) or not all(v in A.MASTERY for v in mast.values()):
        raise ConfigError("config.toml: [mastery] maps concepts to \"low\", \"medium\" or \"high\"")
    return {"ratio": float(ratio), "language": lang, "auto_pool_questions": pool, "learning_style": style,
            "mastery": mast}


# -- the build ----------------------------------------------------------------------------

class _Msg:
    __slots__ = ("id", "role", "content", "ts", "tokens")

    def __init__(self, m):
        self.id, self.role, self.content, self.ts, self.tokens = m.id, m.role, m.content, m.ts, m.tokens
        if m.output_path:  # an offloaded output: the conversation had all of it
            try:
                with open(m.output_path, encoding="utf-8", errors="replace") as f:
                    self.tokens = max(self.tokens, estimate(f.read()))
            except OSError:
                pass


def _substantive(text):
    t = text.strip()
    return len(t) >= 4 and not (is_ack(t) and len(t) < 60) and not re.fullmatch(r"(?i)\W*(?:ok|okay|yes|no|嗯|好的?)\W*", t)


def _iso(ts):
    return A.now_iso(ts)


def _trim(text, limit):
    t = " ".join(text.split())
    return t if len(t) <= limit else t[: limit - 1] + "…"


def _question_pool(msgs, qfacts, previous, auto_pool):
    """[{question, status, created_at, resolved_at?}] with the resolution heuristic above."""
    from ctxd.memory.facts import normalize

    by_id = {m.id: i for i, m in enumerate(msgs)}
    pool, order = {}, []

    def core(q):
        return normalize(_LEADIN.sub("", q, count=1) if len(q) > 6 else q)

    if previous:
        for q in previous.get("questions", []):
            k = core(q["question"])
            if k and k not in pool:
                pool[k] = dict(q)
                order.append(k)
    for f in qfacts:
        k = core(f["text"])
        if not k:
            continue
        if k in pool:
            continue
        if not auto_pool:
            continue
        text = _LEADIN.sub("", f["text"], count=1) if f["text"].rstrip().endswith(("?", "？")) else f["text"]
        pool[k] = {"question": text.strip(), "status": "open", "created_at": _iso(f["ts"]), "_msg": f["msg_id"]}
        order.append(k)
    # resolution: walk the conversation once
    users = [(i, m) for i, m in enumerate(msgs) if m.role == "user"]
    keys_by_msg = {}
    for k in order:
        if "_msg" in pool[k]:
            keys_by_msg.setdefault(pool[k]["_msg"], []).append(k)
    term_sets = {k: _terms(pool[k]["question"]) for k in order}
    for n, (i, m) in enumerate(users):
        # a later message asking it again reopens it; an acknowledgement resolves the last exchange
        text = m.content
        mk = core(_first_question(text)) if _substantive(text) else ""
        for k in order:
            if k == mk and pool[k]["status"] == "resolved" and (is_confused(text) or _REVIEW.search(text)):
                pool[k]["status"] = "open"
                pool[k].pop("resolved_at", None)
        if is_ack(text) and n > 0:
            prev_i, prev = users[n - 1]
            answered = any(msgs[j].role == "assistant" for j in range(prev_i + 1, i))
            if answered:
                targets = list(keys_by_msg.get(prev.id, []))
                pk = core(_first_question(prev.content))
                if pk in pool and pk not in targets:
                    targets.append(pk)
                for k in targets:
                    pool[k]["status"], pool[k]["resolved_at"] = "resolved", _iso(m.ts)
        if _RESOLVED.search(text):
            words = _terms(text)
            for k in order:
                if pool[k]["status"] == "open" and len(words & term_sets[k]) >= 2 and by_id.get(pool[k].get("_msg"), -1) < i:
                    pool[k]["status"], pool[k]["resolved_at"] = "resolved", _iso(m.ts)
    out = []
    for k in order:
        q = {kk: v for kk, v in pool[k].items() if not kk.startswith("_")}
        if q["status"] != "resolved":
            q.pop("resolved_at", None)
        out.append(q)
    return out


def _terms(text):
    from ctxd.memory.fact_merge import terms

    return terms(text)


def _key_points(msgs, overrides):
    """[{concept, understanding_level, mastery_level, mastery_source, summary}], most asked first."""
    concepts = {}
    order = []
    prev_user = None
    for i, m in enumerate(msgs):
        if m.role == "user":
            if not _substantive(m.content):
                prev_user = None
                continue
            depth = question_depth(m.content)
            is_q = depth is not None or m.content.rstrip().endswith(("?", "？")) or "?" in m.content[:300] \
                or "？" in m.content[:300]
            if not is_q:
                prev_user = None
                continue
            c = concept_of(m.content)
            k = _key(c)
            if not k:
                prev_user = None
                continue
            e = concepts.get(k)
            if e is None:
                e = concepts[k] = {"concept": c, "depth": "unknown", "asks": 0, "setbacks": 0, "summary": "",
                                   "last": i, "first": i}
                order.append(k)
            e["asks"] += 1
            e["last"] = i
            if depth and _DEPTH_ORDER[depth] > _DEPTH_ORDER[e["depth"]]:
                e["depth"] = depth
            if is_confused(m.content):
                e["setbacks"] += 1
            prev_user = k
        elif m.role == "assistant" and prev_user:
            e = concepts[prev_user]
            if is_correction(m.content[:600]):
                e["setbacks"] += 1
            e["summary"] = _answer_gist(m.content)
            prev_user = None
    ranked = sorted(order, key=lambda k: (-concepts[k]["asks"], -concepts[k]["last"]))
    out = []
    lower = {_key(c): lvl for c, lvl in overrides.items()}
    for k in ranked:
        e = concepts[k]
        kp = {"concept": e["concept"], "understanding_level": e["depth"],
              "mastery_level": mastery(e["depth"], e["setbacks"]), "mastery_source": "inferred",
              "summary": e["summary"], "_asks": e["asks"], "_first": e["first"]}
        if k in lower:
            kp["mastery_level"], kp["mastery_source"] = lower[k], "config"
        out.append(kp)
    return out


def _is_teach_prompt(m):
    """A `ctxd teach` prompt (recorded, or pasted into an AI CLI): instructions, not what was said."""
    if m.source == "teach":
        return True
    if m.role in ("user", "system") and m.content.lstrip()[:24].startswith("# "):
        from ctxd.memory.items import is_teach_prompt

        return is_teach_prompt(m.role, m.content, m.source)
    return False


def _teach_outcome(raw_msgs):
    """What `ctxd teach` sessions in this conversation achieved: the tutor's [Qn] answers
    and [done: item] markers (ctxd.handoff.teach.session_outcome), when teach is there."""
    try:
        from ctxd.handoff.teach import session_outcome
    except ImportError:
        return {"resolved": [], "completed": []}
    try:
        got = session_outcome(raw_msgs)
        return {"resolved": list(got.get("resolved", [])), "completed": list(got.get("completed", []))}
    except Exception:  # another module's parser must never block a handoff
        return {"resolved": [], "completed": []}


def _same(a, b):
    fa, fb = re.sub(r"[\W_]+", "", a.lower()), re.sub(r"[\W_]+", "", b.lower())
    return bool(fa) and (fa == fb or (len(fb) >= 6 and fb in fa))


def _cost(obj):
    import json

    return estimate(json.dumps(obj, ensure_ascii=False)) + 2


def choose_session(store, session=None):
    if session is not None:
        if not store.has_session(session):
            known = ", ".join(repr(s) for s in store.sessions()[:8]) or "none"
            raise NotFoundError(f"no messages in session {session!r} (sessions: {known})")
        return session
    sessions = store.sessions()
    if not sessions:
        raise NotFoundError("no conversation recorded yet (ctxd chat add / import / install), nothing to hand off")
    return sessions[0]


def build(store, *, root=None, session=None, config_raw=None, previous=None, now=None):
    """A handoff archive (a dict, current schema, not yet saved) for *session* (default:
    the most recent one) of the store. *previous*: the last archive of that session
    (its question pool carries over)."""
    from ctxd.memory import fact_merge, render_formats, summarizer, tasks
    from ctxd.memory.summary_cache import summary_block

    cfg = settings(config_raw)
    session = choose_session(store, session)
    fact_merge.refresh_facts(store)
    raw_msgs = list(store.iter_all(session=session))
    # ctxd's own prompts are not the learner; a sub-agent's lines are not the conversation
    msgs = [_Msg(m) for m in raw_msgs if not _is_teach_prompt(m) and m.provenance not in ("ctxd", "subagent")]
    ids = {m.id for m in msgs}
    user_texts = [m.content for m in msgs if m.role == "user"]
    tokens_from = sum(m.tokens for m in msgs)
    target = max(MIN_TARGET, int(tokens_from / cfg["ratio"]))

    rows = [r for r in fact_merge.live_facts(store, limit=4000) if r["msg_id"] in ids]
    lang = cfg["language"] if cfg["language"] != "auto" else detect_language(user_texts)
    a = A.empty(session, now or A.now_iso(), lang)
    # placeholders of the right size (save() sets the real ones), so the footprint measures the saved file
    n_guess = (previous.get("version", 0) + 1) if previous and isinstance(previous.get("version"), int) else 1
    a["id"], a["version"] = f"{A.slug(session)}_v{n_guess}", n_guess
    if root:
        a["project"] = {"root": root, "name": os.path.basename(root.rstrip("/")) or root}

    # topic, stage
    first = next((m.content for m in msgs if m.role == "user" and _substantive(m.content)), "")
    a["topic"]["title"] = topic_title(first)
    latest_q = next((m.content for m in reversed(msgs) if m.role == "user" and _substantive(m.content)
                     and (question_depth(m.content) or "?" in m.content or "？" in m.content)), "")
    a["topic"]["current_subtopic"] = concept_of(latest_q) if latest_q else ""
    a["topic"]["stage"] = stage_of([t for t in user_texts if _substantive(t)])

    # key points, questions
    kps = _key_points(msgs, cfg["mastery"])
    prev_q = previous if previous and previous.get("session_id") == session else None
    qfacts = sorted((r for r in rows if r["tag"] == "question" and r["role"] == "user"), key=lambda r: r["id"])
    questions = _question_pool(msgs, qfacts, prev_q, cfg["auto_pool_questions"])
    outcome = _teach_outcome(raw_msgs)
    for q in questions:
        if q["status"] == "open" and any(_same(q["question"], r) for r in outcome["resolved"]):
            q["status"], q["resolved_at"] = "resolved", _iso(msgs[-1].ts)

    # progress, from the facts arranged by what they say (what was said, not tool output)
    memory = render_formats.facts_layout([r for r in rows if r["role"] != "tool"])
    resolved_concepts = []
    for q in questions:
        if q["status"] == "resolved":
            c = concept_of(q["question"])
            if c and c not in resolved_concepts:
                resolved_concepts.append(c)
    completed = [_trim(t, 160) for t in memory.get("Progress", [])[:6]] + resolved_concepts[-6:]
    completed += [_trim(t, 160) for t in outcome["completed"] if t not in completed][:6]
    open_task = tasks.current(store)
    last_req = latest_q or next((m.content for m in reversed(msgs) if m.role == "user" and _substantive(m.content)),
                                None)
    if open_task is not None:
        in_progress = open_task["name"]
    elif last_req:
        in_progress = _trim(_LEADIN.sub("", last_req, count=1) if len(last_req) > 6 else last_req, 200)
    else:
        in_progress = None
    next_up = [_trim(t, 160) for t in (memory.get("Next step", []) + memory.get("Pending tasks", []))][:6]
    a["progress"] = {"completed": completed, "in_progress": in_progress, "next_up": next_up}

    # learning style (config wins), environment
    style = infer_style(user_texts, [r["text"] for r in sorted(rows, key=lambda r: r["id"]) if r["tag"] == "preference"
                                     and r["role"] == "user" and r["superseded_by"] is None][:4])
    style.update(cfg["learning_style"])
    a["learning_style"] = style
    a["environment"] = environment(root, [r["text"] for r in sorted(rows, key=lambda r: r["id"])])
    _coding_session(a, store, session, root, raw_msgs)

    # the summary of the session, as a context shows it
    llm = summarizer.load(store.dir) if summarizer.settings({"raw": config_raw or {}}) else None
    try:
        a["summary"] = summary_block(store, max(ids) if ids else 0, max(60, int(target * 0.08)),
                                     os.path.join(store.dir, "cache"), llm=llm) if ids else ""
    except Exception:  # a summary is a nicety; never fail a handoff on it
        a["summary"] = ""

    # fit the budget: fixed parts, then key points and questions within their shares, then facts
    kp_cap = int(target * 0.18)
    q_cap = int(target * 0.18)
    used = 0
    chosen_kp = []
    for kp in (kps if "end_state" not in a else [])[:MAX_KEY_POINTS]:  # a coding session teaches no concepts
        clean = {k: v for k, v in kp.items() if not k.startswith("_")}
        c = _cost(clean)
        if used + c > kp_cap:
            continue
        chosen_kp.append((kp["_first"], clean))
        used += c
    a["key_points"] = [c for _, c in sorted(chosen_kp, key=lambda x: x[0])]
    # open questions first, then the most recent resolved ones; kept in asking order
    ranked = [q for q in questions if q["status"] == "open"][::-1] + [q for q in questions if q["status"] != "open"][::-1]
    picked, used = set(), 0
    for q in ranked[: MAX_QUESTIONS * 3]:
        c = _cost(q)
        if used + c > q_cap or len(picked) >= MAX_QUESTIONS:
            continue
        picked.add(id(q))
        used += c
    a["questions"] = [q for q in questions if id(q) in picked]
    in_pool = {" ".join(q["question"].split()) for q in a["questions"]}

    a["context_footprint"] = {"tokens_compressed_from": tokens_from, "tokens_compressed_to": 0,
                              "compression_ratio": None}
    base = estimate(A.dumps(a))
    room = target - base - 8
    facts, used = [], 0
    # the facts list: passing questions ("...?") live in the question pool, not here; a
    # tool output's lines rank below what the learner and the assistant said
    ranked_rows = sorted(rows, key=lambda r: (r["superseded_by"] is not None,
                                              -r["priority"] * (0.5 if r["role"] == "tool" else 1.0), r["id"]))
    for r in ranked_rows:
        text = r["text"]
        if r["tag"] == "question" and (text.rstrip().endswith(("?", "？")) or " ".join(text.split()) in in_pool
                                       or " ".join(_LEADIN.sub("", text, count=1).split()) in in_pool):
            continue
        f = {"text": text, "tag": r["tag"]}
        if r["superseded_by"] is not None:
            f["superseded"] = True
        c = _cost(f)
        if used + c > room:
            continue
        facts.append((r["id"], f))
        used += c
    a["facts"] = [f for _, f in sorted(facts, key=lambda x: x[0])]
    _footprint(a)
    # the estimate of parts can drift from the whole: drop the least important facts while over
    # (rows came by priority, so the last one chosen is the least important)
    while facts and a["context_footprint"]["tokens_compressed_to"] > target:
        facts.pop()
        a["facts"] = [f for _, f in sorted(facts, key=lambda x: x[0])]
        _footprint(a)
    return A.validate(a)


def _coding_session(a, store, session, root, raw_msgs):
    """A coding session's archive says where it ended (ctxd.handoff.endstate): the last typed
    request, the todos by status, the start of the last report, commits, open errors, and the
    cwd and branch its transcript recorded. No learner's stage or concepts, no narration."""
    from ctxd.handoff import endstate

    end = endstate.end_state(store, session, root, raw_msgs)
    if end is None:
        return
    a["end_state"] = end
    now = (end["in_progress"] or [None])[0] or end["last_request"]
    a["topic"]["current_subtopic"] = endstate.cut(now, 200) if now else ""
    a["topic"]["stage"] = "unknown"
    a["key_points"] = []
    done = end["done_todos"] + [f"Committed: {c}" for c in end["commits"] if f"Committed: {c}" not in end["done_todos"]]
    a["progress"] = {"completed": done[-12:], "in_progress": now, "next_up": end["open_todos"][:8]}
    env = a["environment"]
    if end["git_branch"]:
        env["git_branch"] = end["git_branch"]
    if end["cwd"] and not (root and _inside(end["cwd"], root)):
        # recorded elsewhere: what this directory holds and runs now says nothing of that session
        there = environment(end["cwd"]) if os.path.isdir(end["cwd"]) else None
        env["project_types"] = there["project_types"] if there else []
        env["version_pins"] = there["version_pins"] if there else []
        env["processes"] = []


def _footprint(a):
    fp = a["context_footprint"]
    for _ in range(2):  # the numbers are part of the text they measure
        to = estimate(A.dumps(a))
        fp["tokens_compressed_to"] = to
        fp["compression_ratio"] = round(fp["tokens_compressed_from"] / to, 2) if to else None


def make(project, store, *, session=None, config_raw=None):
    """Build and save the next archive of *session*; return (id, path, archive)."""
    sess = choose_session(store, session)
    previous = None
    try:
        got = A.latest(project.context_dir, sess)
        previous = got[2] if got else None
    except CtxdError:
        previous = None  # a corrupt earlier archive must not block a new one
    archive = build(store, root=project.root, session=sess, config_raw=config_raw, previous=previous)
    path = A.save(project.context_dir, archive)
    return archive["id"], path, archive

