"""The teach prompt: a handoff archive turned into instructions for an AI tutor.

``build_prompt(archive, topic, focus, user_input, knowledge)`` returns markdown,
deterministic for the same inputs (no clock, no randomness), in English or
Chinese:

- **current state**: topic and stage, completed, in progress, next up, and the
  open pool questions, each tagged ``[Q1]``, ``[Q2]``…;
- **what the learner knows**: high mastery is only mentioned, medium is taught
  normally, low gets a quick review first; prerequisites below 0.6 (or never
  practised) are named;
- **focus** (``--focus``): the session narrowed to the key points, subtopic or
  progress item it names;
- **learning style**: code examples or not, visual descriptions, depth, pace;
- **teaching goals**: why it exists; the principle (an analogy, then a rigorous
  explanation); a real case; three self-test questions;
- **constraints**: at most 4 paragraphs per reply, the pool questions first,
  misunderstandings corrected explicitly; the two markers below;
- the learner's new message, when there is one.

Language: *language* when given (the CLI passes config ``[handoff] language``),
else the archive's ``language`` field, else detected from its text: zh when CJK
characters make up at least 40% of CJK characters plus Latin words.

**Markers**, so the next handoff can see what a teach session did (see
``session_outcome``): the tutor starts its answer to a pool question with the
question's tag (``[Q2] ...``) and writes ``[done: <item>]`` on a line of its own
once the learner has shown they understand an item. ``ctxd teach`` stores the
prompt as a system message with source ``teach``; the tags it lists map back to
the question texts.
"""

import re

from ctxd.handoff import knowledge as knowledge_mod
from ctxd.memory.store.items import is_teach_prompt

WEAK = knowledge_mod.WEAK
ZH_SHARE = 0.4

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")

T = {
    "en": {
        "title": "# Teaching session: {topic}",
        "intro": "You are the learner's tutor. Continue from the state below; do not start the topic over.",
        "continuing": " (continuing “{title}”)",
        "state": "## Current state",
        "topic": "- Topic: {title}",
        "stage": " (stage: {stage})",
        "stages": {},
        "subtopic": "- Current subtopic: {sub}",
        "completed": "- Completed: {items}",
        "in_progress": "- In progress: {item}",
        "next_up": "- Next up: {items}",
        "none": "(none)",
        "pool": "- Open questions (answer these first):",
        "pool_none": "- Open questions: none",
        "resolved": "- Already resolved: {n} question(s); do not repeat those answers.",
        "know": "## What the learner knows",
        "high": "- Mastered, mention only (one clause at most, do not re-teach): {items}",
        "medium": "- Teach normally: {items}",
        "low": "- Weak, start with a quick review (2–3 sentences and one check question) before new material:",
        "errors": "{n} earlier mistake(s)",
        "weak_pre": "- Weak prerequisites (mastery < 0.6): revisit each briefly before building on it:",
        "pre_line": "  - {name} ({m}; needed for {for_})",
        "never": "not practised yet",
        "focus": "## Focus",
        "focus_line": "This session covers only: **{focus}**.",
        "focus_rest": "Leave the other points aside unless the learner asks about them.",
        "focus_new": "It is not in the archive yet: treat it as new material, linked to what is completed.",
        "style": "## Learning style",
        "pref": "- Preference: {p}",
        "code_on": "- Code: include a short, runnable code example for each new idea, with comments.",
        "code_off": "- Code: no code examples; explain in prose (code only if the learner asks).",
        "vis_on": "- Visuals: describe a diagram in words (boxes, arrows, states, timelines) or draw a small ASCII "
                  "sketch for structure and flow.",
        "vis_off": "- Visuals: no diagrams; use words and concrete examples.",
        "depth": {
            "shallow": "- Depth: overview; the intuition and the main idea, no proofs or corner cases.",
            "normal": "- Depth: working knowledge; how it works, with one or two edge cases.",
            "deep": "- Depth: deep; the mechanism, edge cases, trade-offs and why the rigorous version holds.",
            "other": "- Depth: {v}",
        },
        "pace": {
            "slow": "- Pace: slow; one idea per reply, check understanding before moving on.",
            "normal": "- Pace: steady; one or two ideas per reply, a check question at the end.",
            "fast": "- Pace: fast; several related ideas per reply, fewer checks, skip what is mastered.",
            "other": "- Pace: {v}",
        },
        "goals": "## Teaching goals for {subject}",
        "g1": "1. Why it exists: the problem it solves and what goes wrong without it.",
        "g2": "2. The principle: first an everyday analogy, then a rigorous explanation (precise terms, the exact "
              "rule or mechanism, and where the analogy breaks).",
        "g3": "3. A real case: where it is used in practice (a real system, library or incident), step by step.",
        "g4": "4. Self-test: end with three self-test questions, from recall to application; give the answers "
              "only after the learner replies.",
        "rules": "## Constraints",
        "r1": "- At most 4 paragraphs per reply.",
        "r2": "- Answer the open pool questions first, before any new material; start each answer with its tag "
              "(e.g. `[Q1]`).",
        "r2_none": "- If the learner asks something, answer it first, before any new material.",
        "r3": "- Correct misunderstandings explicitly: name the wrong idea, say why it is wrong, give the right one.",
        "r4": "- When the learner has shown they understand an item, write `[done: <item>]` on a line of its own.",
        "r5": "- Reply in English.",
        "input": "## The learner's new message",
        "start": "Start with the quick review and the open questions, then the first teaching goal.",
    },
    "zh": {
        "title": "# 教学会话：{topic}",
        "intro": "你是这位学习者的导师。请从下面的进度接着教，不要从头开始。",
        "continuing": "（接续「{title}」）",
        "state": "## 当前进度",
        "topic": "- 主题：{title}",
        "stage": "（阶段：{stage}）",
        "stages": {"starting": "刚开始", "learning": "学习中", "practicing": "练习中", "reviewing": "复习中"},
        "subtopic": "- 当前子主题：{sub}",
        "completed": "- 已完成：{items}",
        "in_progress": "- 进行中：{item}",
        "next_up": "- 接下来：{items}",
        "none": "（无）",
        "pool": "- 待解答的问题（先回答这些）：",
        "pool_none": "- 待解答的问题：无",
        "resolved": "- 已解决 {n} 个问题，不必重复解答。",
        "know": "## 学习者的掌握情况",
        "high": "- 已掌握，只需提及（最多一句，不要重讲）：{items}",
        "medium": "- 正常讲解：{items}",
        "low": "- 薄弱，先快速复习（2–3 句话加一个检查问题），再讲新内容：",
        "errors": "之前出错 {n} 次",
        "weak_pre": "- 薄弱的前置知识（掌握度 < 0.6）：在此基础上展开之前，先逐一简要回顾：",
        "pre_line": "  - {name}（{m}；{for_} 的前置）",
        "never": "尚未练习",
        "focus": "## 本次重点",
        "focus_line": "本次只讲：**{focus}**。",
        "focus_rest": "其他要点先放一放，除非学习者主动问起。",
        "focus_new": "存档里还没有这一项：当作新内容来讲，并与已完成的内容联系起来。",
        "style": "## 学习风格",
        "pref": "- 偏好：{p}",
        "code_on": "- 代码：每个新概念配一段简短、可运行、带注释的代码示例。",
        "code_off": "- 代码：不用代码示例，用文字讲清楚（除非学习者要求）。",
        "vis_on": "- 图示：用文字描述示意图（方框、箭头、状态、时间线），或画一个小的 ASCII 草图说明结构和流程。",
        "vis_off": "- 图示：不用图，用文字和具体例子。",
        "depth": {
            "shallow": "- 深度：概览；讲直觉和主要思想，不讲证明和边界情况。",
            "normal": "- 深度：实用；讲清楚它如何工作，举一两个边界情况。",
            "deep": "- 深度：深入；讲机制、边界情况、权衡，以及严格表述为什么成立。",
            "other": "- 深度：{v}",
        },
        "pace": {
            "slow": "- 节奏：慢；每次只讲一个要点，确认理解后再往下讲。",
            "normal": "- 节奏：适中；每次讲一两个要点，结尾提一个检查问题。",
            "fast": "- 节奏：快；每次讲几个相关要点，少做检查，跳过已掌握的内容。",
            "other": "- 节奏：{v}",
        },
        "goals": "## 教学目标：{subject}",
        "g1": "1. 为什么需要它：它解决什么问题，没有它会出什么问题。",
        "g2": "2. 原理：先用一个生活中的类比，再给出严谨的解释（准确的术语、确切的规则或机制，并指出类比在哪里不成立）。",
        "g3": "3. 真实案例：它在实际中的应用（真实的系统、库或事故），一步一步讲。",
        "g4": "4. 自测：最后给出三个自测问题，从记忆到应用；等学习者作答后再给答案。",
        "rules": "## 约束",
        "r1": "- 每次回复不超过 4 段。",
        "r2": "- 先回答待解答的问题，再讲新内容；每个回答以它的标签开头（如 `[Q1]`）。",
        "r2_none": "- 学习者提问时，先回答问题，再讲新内容。",
        "r3": "- 明确纠正误解：指出错误的理解，说明错在哪里，给出正确的理解。",
        "r4": "- 学习者表明已经理解某一项时，单独一行写 `[done: <该项>]`。",
        "r5": "- 用中文回答。",
        "input": "## 学习者的新消息",
        "start": "先做快速复习、回答待解答的问题，再开始第一个教学目标。",
    },
}

_DEPTH = {
    "shallow": ("shallow", "overview", "basic", "basics", "brief", "intro", "introductory", "beginner", "light",
                "浅", "浅显", "入门", "概览", "简单", "简短"),
    "normal": ("normal", "medium", "moderate", "intermediate", "balanced", "standard", "中等", "适中", "一般"),
    "deep": ("deep", "detailed", "advanced", "rigorous", "thorough", "expert", "in-depth", "深入", "深", "详细",
             "进阶"),
}
_PACE = {
    "slow": ("slow", "gentle", "careful", "relaxed", "step by step", "慢", "慢一点", "慢速"),
    "normal": ("normal", "medium", "moderate", "steady", "适中", "正常", "中等"),
    "fast": ("fast", "quick", "brisk", "rapid", "快", "快速"),
}


def _kind(value, table):
    v = str(value or "").strip().lower()
    for kind, names in table.items():
        if v in names:
            return kind
    return None


# -- language --------------------------------------------------------------------------

def _texts(archive):
    t = archive.get("topic") or {}
    p = archive.get("progress") or {}
    out = [t.get("title"), t.get("current_subtopic"), p.get("in_progress")]
    out += list(p.get("completed") or []) + list(p.get("next_up") or [])
    for k in archive.get("key_points") or []:
        if isinstance(k, dict):
            out += [k.get("concept"), k.get("summary")]
    for q in archive.get("questions") or []:
        if isinstance(q, dict):
            out.append(q.get("question"))
    out.append((archive.get("learning_style") or {}).get("preference"))
    out.append(archive.get("summary"))
    return [x for x in out if isinstance(x, str)]


def cjk_share(text):
    """CJK characters / (CJK characters + Latin words): a character of Chinese
    carries about what a word of English does."""
    c = len(_CJK.findall(text))
    w = len(_LATIN_WORD.findall(text))
    return c / (c + w) if c + w else 0.0


def detect_language(archive, user_input=None):
    text = "\n".join(_texts(archive) + ([user_input] if user_input else []))
    return "zh" if cjk_share(text) >= ZH_SHARE else "en"


def language_of(archive, user_input=None, language=None):
    """The prompt's language: *language* (zh/en) if given, else the archive's, else detected."""
    for lang in (language, archive.get("language")):
        if isinstance(lang, str) and lang.strip().lower() in T:
            return lang.strip().lower()
    return detect_language(archive, user_input)


# -- helpers ---------------------------------------------------------------------------

def _fold(s):
    return " ".join(str(s).split()).casefold()


def matches(needle, hay):
    """*needle* names *hay*: it is a part of it (case and spacing aside)."""
    n, h = _fold(needle), _fold(hay)
    return bool(n) and n in h


def _one_line(s, limit=300):
    s = " ".join(str(s).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _join(items, lang):
    items = [_one_line(x, 120) for x in items if isinstance(x, str) and x.strip()]
    return ("；" if lang == "zh" else "; ").join(items)


def _fmt_m(m, lang):
    return T[lang]["never"] if m is None else f"{m:.2f}"


def open_questions(archive):
    """The open pool questions, in archive order (strings)."""
    out = []
    for q in archive.get("questions") or []:
        if isinstance(q, dict) and q.get("status", "open") == "open" and str(q.get("question") or "").strip():
            out.append(" ".join(str(q["question"]).split()))
    return out


def _points(archive, knowledge):
    """[(concept, level, summary, mastery, errors)] with the knowledge store's view
    (when it has practised the concept) preferred over the archive's level."""
    by_key = {_fold(n): r for n, r in (knowledge or {}).items() if isinstance(r, dict)}
    out = []
    for kp in archive.get("key_points") or []:
        if not isinstance(kp, dict) or not str(kp.get("concept") or "").strip():
            continue
        name = _one_line(kp["concept"], 120)
        rec = by_key.get(_fold(name))
        m = rec.get("mastery") if rec else None
        level = knowledge_mod.level_of(m) if m is not None else str(kp.get("mastery_level") or "medium").lower()
        if level not in ("low", "medium", "high"):
            level = "medium"
        summary = _one_line(kp.get("summary") or "", 240)
        for sep in ("：", ":", " - ", " — "):  # "TIME_WAIT：..." under the concept TIME_WAIT
            if summary.startswith(name + sep):
                summary = summary[len(name + sep):].strip()
                break
        out.append((name, level, summary, m, (rec or {}).get("errors") or 0))
    return out


def _weak_prereqs(names, archive, knowledge):
    """[(prerequisite, mastery or None, [concepts needing it])] below WEAK, first-seen order."""
    by_key = {_fold(n): r for n, r in (knowledge or {}).items() if isinstance(r, dict)}
    kp_pre = {}
    for kp in archive.get("key_points") or []:
        if isinstance(kp, dict) and isinstance(kp.get("prerequisites"), list):
            kp_pre[_fold(kp.get("concept") or "")] = [p for p in kp["prerequisites"] if isinstance(p, str)]
    found = {}
    for n in names:
        rec = by_key.get(_fold(n))
        pres = list((rec or {}).get("prerequisites") or []) + kp_pre.get(_fold(n), [])
        for p in pres:
            pk = _fold(p)
            if not pk or pk == _fold(n):
                continue
            pr = by_key.get(pk)
            m = pr.get("mastery") if pr else None
            if m is not None and m >= WEAK:
                continue
            if pk not in found:
                found[pk] = [_one_line(p, 120), m, []]
            if n not in found[pk][2]:
                found[pk][2].append(n)
    return [tuple(v) for v in found.values()]


# -- the prompt ------------------------------------------------------------------------

def build_prompt(archive, topic=None, focus=None, user_input=None, knowledge=None, language=None):
    """The teach prompt (markdown) for *archive*.

    *topic*: the session's topic when it differs from the archive's title;
    *focus*: narrow to one concept / subtopic; *user_input*: the learner's new
    message, appended; *knowledge*: ``{concept: record}`` as
    ``ctxd.handoff.knowledge.snapshot`` returns (mastery, errors, prerequisites),
    preferred over the archive's mastery levels; *language*: "zh" / "en".
    """
    lang = language_of(archive, user_input, language)
    L = T[lang]
    t = archive.get("topic") or {}
    p = archive.get("progress") or {}
    title = _one_line(t.get("title") or "", 160)
    topic = _one_line(topic, 160) if isinstance(topic, str) and topic.strip() else None
    focus = _one_line(focus, 160) if isinstance(focus, str) and focus.strip() else None
    if topic and title and matches(topic, title):
        topic = None  # it only named the archive ("Rust" for "Rust ownership")
    heading = topic or title or (focus or "?")
    out = [L["title"].format(topic=heading)]
    if topic and title and _fold(topic) != _fold(title):
        out[0] += L["continuing"].format(title=title)
    out += ["", L["intro"], "", L["state"]]

    # current state
    if title:
        stage = t.get("stage")
        stage = L["stages"].get(stage, stage) if isinstance(stage, str) and stage != "unknown" else ""
        out.append(L["topic"].format(title=title) + (L["stage"].format(stage=stage) if stage else ""))
    sub = _one_line(t.get("current_subtopic") or "", 160)
    if sub:
        out.append(L["subtopic"].format(sub=sub))
    out.append(L["completed"].format(items=_join(p.get("completed") or [], lang) or L["none"]))
    in_progress = _one_line(p.get("in_progress") or "", 160)
    out.append(L["in_progress"].format(item=in_progress or L["none"]))
    if p.get("next_up"):
        out.append(L["next_up"].format(items=_join(p["next_up"], lang)))
    pool = open_questions(archive)
    if pool:
        out.append(L["pool"])
        out += [f"  - [Q{i}] {q}" for i, q in enumerate(pool, 1)]
    else:
        out.append(L["pool_none"])
    resolved = sum(1 for q in archive.get("questions") or [] if isinstance(q, dict) and q.get("status") == "resolved")
    if resolved:
        out.append(L["resolved"].format(n=resolved))

    # what the learner knows (narrowed by the focus)
    points = _points(archive, knowledge)
    focused = [x for x in points if focus and matches(focus, x[0])] if focus else points
    in_archive = bool(focused) or (focus is not None and any(
        matches(focus, x) for x in [sub, in_progress, title] + list(p.get("next_up") or [])
        + list(p.get("completed") or []) if isinstance(x, str)))
    scope = focused if focus else points
    if scope:
        out += ["", L["know"]]
        high = [x[0] for x in scope if x[1] == "high"]
        med = [x for x in scope if x[1] == "medium"]
        low = [x for x in scope if x[1] == "low"]
        if high:
            out.append(L["high"].format(items=_join(high, lang)))
        if med:
            out.append(L["medium"].format(items=_join([x[0] for x in med], lang)))
        if low:
            out.append(L["low"])
            for name, _lvl, summary, m, errs in low:
                bits = [f"{m:.2f}"] if m is not None else []
                if errs:
                    bits.append(L["errors"].format(n=errs))
                extra = (f" ({', '.join(bits)})" if lang == "en" else f"（{'，'.join(bits)}）") if bits else ""
                out.append(f"  - {name}{extra}" + (f": {summary}" if summary and lang == "en"
                                                    else f"：{summary}" if summary else ""))
    names = [x[0] for x in scope] + ([focus] if focus and not focused else [])
    weak = _weak_prereqs(names, archive, knowledge)
    if weak:
        if not scope:
            out += ["", L["know"]]
        out.append(L["weak_pre"])
        sep = ", " if lang == "en" else "、"
        for name, m, for_ in weak:
            out.append(L["pre_line"].format(name=name, m=_fmt_m(m, lang), for_=sep.join(for_)))

    if focus:
        out += ["", L["focus"], L["focus_line"].format(focus=focus), L["focus_rest"]]
        if not in_archive:
            out.append(L["focus_new"])

    # learning style
    s = archive.get("learning_style") or {}
    style = []
    if str(s.get("preference") or "").strip():
        style.append(L["pref"].format(p=_one_line(s["preference"], 240)))
    if s.get("wants_code_examples") is True:
        style.append(L["code_on"])
    elif s.get("wants_code_examples") is False:
        style.append(L["code_off"])
    if s.get("wants_visual_descriptions") is True:
        style.append(L["vis_on"])
    elif s.get("wants_visual_descriptions") is False:
        style.append(L["vis_off"])
    for field, table in (("depth", _DEPTH), ("pace", _PACE)):
        v = s.get(field)
        if isinstance(v, str) and v.strip():
            kind = _kind(v, table)
            style.append(L[field][kind] if kind else L[field]["other"].format(v=_one_line(v, 80)))
    if style:
        out += ["", L["style"]] + style

    # goals and constraints
    subject = focus or (topic if topic and _fold(topic) != _fold(title) else None) or in_progress or sub or title \
        or heading
    out += ["", L["goals"].format(subject=subject), L["g1"], L["g2"], L["g3"], L["g4"]]
    out += ["", L["rules"], L["r1"], L["r2"] if pool else L["r2_none"], L["r3"], L["r4"], L["r5"]]

    out.append("")
    if isinstance(user_input, str) and user_input.strip():
        out += [L["input"], "", user_input.strip()]
    else:
        out.append(L["start"])
    return "\n".join(out) + "\n"


# -- what a teach session did (for the next handoff) --------------------------------------

_QLINE = re.compile(r"^\s*-\s*\[Q(\d+)\]\s+(.+?)\s*$", re.M)
_QTAG = re.compile(r"\[Q(\d+)\]")
_DONE = re.compile(r"^\s*\[done:\s*(.+?)\s*\]\s*$", re.M | re.I)


def session_outcome(messages):
    """What the teach sessions in *messages* achieved, by the markers the prompt asks for.

    *messages*: objects (or dicts) with ``role``, ``content`` and ``source``, oldest
    first (``Store.iter_all()`` / ``Store.recent()``). Each teach prompt (see
    ``is_teach_prompt``) lists its pool questions as ``- [Qn] text``; an assistant
    message after it (and before the next teach prompt) carrying ``[Qn]`` resolves
    question n; a line ``[done: item]`` completes the item. Returns
    ``{"resolved": [question texts], "completed": [items]}``, first-seen order.
    """
    resolved, completed = [], []
    tags = {}
    for m in messages:
        get = m.get if isinstance(m, dict) else (lambda k, m=m: getattr(m, k, None))
        role, content, source = get("role"), get("content") or "", get("source")
        if is_teach_prompt(role, content, source):
            tags = {int(n): q for n, q in _QLINE.findall(content)}
            continue
        if role != "assistant" or not tags:
            continue
        for n in _QTAG.findall(content):
            q = tags.get(int(n))
            if q and q not in resolved:
                resolved.append(q)
        for item in _DONE.findall(content):
            if item not in completed:
                completed.append(item)
    return {"resolved": resolved, "completed": completed}
