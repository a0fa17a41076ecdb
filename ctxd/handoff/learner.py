"""What a handoff infers about the learner from the conversation: the kind of each question
(definition, mechanism, edge cases) and the concept it is about, corrections and confusion, the
question pool and what resolved each question, the key points with their mastery, the learning
style, the topic and the stage. docs/handoff-teach.md ("How it is inferred") says it in prose.
"""

import re

from ctxd.handoff import archive_schema

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

LEADIN = re.compile(r"^[^:：?？\n]{0,60}?[:：]\s+|^[^:：?？\n]{0,60}?：")
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
    core = LEADIN.sub("", text.strip(), count=1) if len(text) > 6 else text
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
    from ctxd.memory.context.facts import sentences

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
    from ctxd.memory.context.facts import sentences

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


# -- the question pool and key points --------------------------------------------------

def substantive(text):
    """Whether a learner message says something (not a bare "ok", "thanks", "yes")."""
    t = text.strip()
    return len(t) >= 4 and not (is_ack(t) and len(t) < 60) and not re.fullmatch(r"(?i)\W*(?:ok|okay|yes|no|嗯|好的?)\W*", t)


def question_pool(msgs, qfacts, previous, auto_pool):
    """[{question, status, created_at, resolved_at?}]: the questions of *qfacts* (and of the
    *previous* archive), resolved by acknowledgements and "resolved"/"decided" messages."""
    from ctxd.memory.context.facts import normalize

    by_id = {m.id: i for i, m in enumerate(msgs)}
    pool, order = {}, []

    def core(q):
        return normalize(LEADIN.sub("", q, count=1) if len(q) > 6 else q)

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
        text = LEADIN.sub("", f["text"], count=1) if f["text"].rstrip().endswith(("?", "？")) else f["text"]
        pool[k] = {"question": text.strip(), "status": "open", "created_at": archive_schema.now_iso(f["ts"]), "_msg": f["msg_id"]}
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
        mk = core(_first_question(text)) if substantive(text) else ""
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
                    pool[k]["status"], pool[k]["resolved_at"] = "resolved", archive_schema.now_iso(m.ts)
        if _RESOLVED.search(text):
            words = _terms(text)
            for k in order:
                if pool[k]["status"] == "open" and len(words & term_sets[k]) >= 2 and by_id.get(pool[k].get("_msg"), -1) < i:
                    pool[k]["status"], pool[k]["resolved_at"] = "resolved", archive_schema.now_iso(m.ts)
    out = []
    for k in order:
        q = {kk: v for kk, v in pool[k].items() if not kk.startswith("_")}
        if q["status"] != "resolved":
            q.pop("resolved_at", None)
        out.append(q)
    return out


def _terms(text):
    from ctxd.memory.context.fact_merge import terms

    return terms(text)


def key_points(msgs, overrides):
    """[{concept, understanding_level, mastery_level, mastery_source, summary}], most asked first."""
    concepts = {}
    order = []
    prev_user = None
    for i, m in enumerate(msgs):
        if m.role == "user":
            if not substantive(m.content):
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
