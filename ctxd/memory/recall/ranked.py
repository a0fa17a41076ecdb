"""Ranked recall: the stored turns that answer a question, packed to a token budget.

    recall(store, "when did we move the cutover?", budget=1500)
      -> Recall(items=[Hit(message, score, why), ...], tokens=..., text="...")

The question becomes terms: words (stop words out, English and Chinese), each
quoted so that no query text is ever FTS5 syntax, OR-ed; runs of CJK characters
become overlapping trigrams for the trigram index; a question's Chinese words also
bring their English words (``translated``: a dictionary, ctxd.memory.recall.zh_en), so that a
question asked in Chinese finds English turns. Both indexes are queried
(``Store.match``); a message's score is its best bm25 relevance (normalised per query)
weighted by its kind, plus a bonus for whole phrases of the question it contains, a
little for recency and importance. A hit that is a question brings
its answer (the next turn of the session) and an answer its question. Results
are deduplicated against what the caller already holds (``exclude``), packed to
the budget best first, and shown in time order, each with its date.

Standard library only (the UserPromptSubmit hook imports it).
"""

import re
import time

from ctxd.memory.recall.pack import pack
from ctxd.memory.text.tokens import estimate

POOL = 200  # hits read from each index per query
KIND_WEIGHT = {"prompt": 1.0, "reply": 1.0, "summary": 0.9, "tool_call": 0.55, "tool_result": 0.5, "meta": 0.0}
PAIR_SHARE = 0.6  # a question's answer (or an answer's question) scores this share of its hit
NEIGHBOUR_SHARE = (0.4, 0.2)  # the turns 1 and 2 away from one of the best hits: conversation is local
NEIGHBOURS_OF = 30  # best hits whose neighbours come along
COMMON = 0.25  # a term in more than this share of the messages (a speaker's name) boosts, not matches
COMMON_BOOST = 1.15
COMMON_FROM = 50  # messages a store needs before a term's share of them says anything
FEEDBACK_FROM, FEEDBACK_TERMS, FEEDBACK_WEIGHT = 8, 6, 0.3  # pseudo-relevance feedback
FEEDBACK_BELOW = 150  # ... only when the question's own words find fewer hits than this (a second query
                      # of both indexes; where they find plenty, as in a large store, it adds nothing)
PHRASE_BONUS = 0.1  # a hit holding two adjacent words of the question as they stand
RECENCY = 0.02
IMPORTANCE = 0.02
MAX_TERMS = 64  # a 50 KB pasted prompt is still one query: its rarest-looking terms
ANSWERABLE_TOP = 10  # per-prompt recall: the best hits asked whether the history holds an answer
ANSWERABLE_SHARE = 0.5  # ... and the share of the best score that takes a hit along
SEMANTIC_BEFORE = 0.3  # per-prompt recall embeds the prompt only if the lexical side took less than this
                      # share of its time limit: loading e5 and embedding take ~55 ms of the 100
SEM_POOL = 120  # messages nearest in meaning that join the fusion
SEM_SPAN = 1.0  # ... those within this cosine of the nearest
RRF_K = 10  # reciprocal-rank fusion: 1 / (RRF_K + rank)
MEANING_FLOOR = 0.35  # search: a hit by meaning alone is listed from this fused score (SEM_WEIGHT's
# share at most 0.23 when the words all match; 0.55 at half of them; 1 when none do)
LEX_WEIGHT, SEM_WEIGHT, LEX_TOP = 1.0, 0.3, 5  # the lexical weight is LEX_WEIGHT x its best coverage
FUSE_AFTER, SEM_NEIGHBOURS = True, 4  # the fused best hits whose neighbours come along
LEX_POWER = 2  # the lexical weight is LEX_WEIGHT x coverage ** LEX_POWER: ~0.5 for an English question
               # over English turns (coverage 0.67-1), ~0.03 for one whose words they lack (0.1-0.25)
_SEMANTIC = {}  # the embed module (or None), loaded once a process
CJK_RAW = 6.0  # the raw relevance a message matching every CJK bigram of the question gets

STOP_EN = frozenset("""
a about above after again against all also am an and any are aren't as at be because been before being
below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
during each even ever few for from further get got had hadn't has hasn't have haven't having he he'd
he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't
it it's its itself just let's like me more most much must mustn't my myself no nor not now of off on once
only or other ought our ours ourselves out over own really same shan't she she'd she'll she's should
shouldn't so some such than that that's the their theirs them themselves then there there's these they
they'd they'll they're they've this those through thus to too under until up upon us very was wasn't we
we'd we'll we're we've were weren't what what's when when's where where's which while who who's whom
whose why why's will with won't would wouldn't yes yet you you'd you'll you're you've your yours yourself
yourselves tell know think please thanks thank ok okay hi hello hey
""".split())
_STOP_ZH = ("什么", "怎么", "为什么", "哪里", "哪个", "多少", "是不是", "有没有", "一下", "一个", "我们", "你们",
            "他们", "她们", "这个", "那个", "这些", "那些", "的", "了", "是", "在", "吗", "呢", "吧", "啊", "和",
            "与", "就", "都", "也", "还", "请", "我", "你", "他", "她", "它", "谁", "几", "哪", "把", "被", "给")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
_CJK_RUN = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
_CJK = []  # its compiled form, made on first use: ~1.5 ms, and an ASCII question never needs it


def _cjk():
    if not _CJK:
        _CJK.append(re.compile(_CJK_RUN))
    return _CJK[0]


class Hit:
    __slots__ = ("message", "score", "why", "raw")

    def __init__(self, message, score, why, raw=0.0):
        self.message, self.score, self.why, self.raw = message, score, why, raw

    def to_json(self):
        d = self.message.to_json()
        d.pop("tokens", None)
        return {"id": self.message.id, "score": round(self.score, 4), "relevance": round(self.raw, 3),
                "why": self.why, "time": d["time"],
                "kind": self.message.kind, "role": self.message.role, "session": self.message.session,
                "source": self.message.source, "content": self.message.content}


class Recall:
    def __init__(self, query, items, tokens, text, considered):
        self.query, self.items, self.tokens, self.text, self.considered = query, items, tokens, text, considered

    def to_json(self):
        return {"query": self.query, "tokens": self.tokens, "considered": self.considered,
                "items": [h.to_json() for h in self.items]}


# -- the question as terms ----------------------------------------------------------

def terms(query):
    """(words, cjk trigrams, phrases) of a question: content words in order, lowercased."""
    query = query[:50_000]
    cjk_runs, latin = [], query
    if not query.isascii():
        for run in _cjk().findall(query):
            for stop in _STOP_ZH:  # split a run at its function words
                run = run.replace(stop, " ")
            cjk_runs += [r for r in run.split() if r]
        latin = _cjk().sub(" ", query)
    words = []
    for w in _WORD.findall(latin.lower()):
        w = w.replace("’", "'")
        if w in STOP_EN or (len(w) < 2 and not w.isdigit()):
            continue
        if w.endswith("'s"):
            w = w[:-2]
        words.append(w)
    grams = []
    for run in cjk_runs:  # trigrams for the trigram index, and the bigrams it cannot see
        if len(run) <= 3:
            grams.append(run)
        else:
            grams += [run[i:i + 3] for i in range(len(run) - 2)]
        grams += [run[i:i + 2] for i in range(len(run) - 1)] if len(run) > 2 else []
    phrases = [f"{a} {b}" for a, b in zip(words, words[1:])]
    return _unique(words)[:MAX_TERMS], _unique(grams)[:MAX_TERMS], _unique(phrases)[:MAX_TERMS]


def translated(query):
    """A question's Chinese words in English (ctxd.memory.recall.zh_en): a tuple of each word's
    English words; () for a question without Chinese (the dictionary is not opened then)."""
    if query.isascii() or not _cjk().search(query):
        return ()
    from ctxd.memory.recall import zh_en

    return tuple(english for _word, english in zh_en.translate(query[:50_000]))


def asked(query):
    """The words a question's lexical search looks for: its own (``terms``), then the English
    words of its Chinese words (``translated``) it does not hold already."""
    words = terms(query)[0]
    return words + _unique(w for english in translated(query) for w in english if w not in words)


def _unique(xs):
    seen, out = set(), []
    for x in xs:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def _quote(term):
    return '"' + term.replace('"', '""') + '"'


def fts_or(items):
    """An FTS5 expression matching any of *items*, each a quoted string (never syntax)."""
    return " OR ".join(_quote(t) for t in items)


# -- ranking ----------------------------------------------------------------------------

def candidates(store, query, pool=POOL, words=None, msgs=None, memo=None):
    """{message id: (relevance in [0, 1], raw bm25 relevance)} from both indexes, each
    normalised to its best hit; the raw value (-bm25) says how relevant in absolute terms.

    A word in more than COMMON of the messages (a speaker's name, the project's name)
    does not pull in candidates when rarer words exist: it only boosts the hits that
    contain it. A Chinese question also looks for its translation's English words.
    *words*: the words to look for instead of the question's own and its translation's.
    *msgs*: {id: Message} already loaded, and filled with those read here; *memo*: what this
    ranking knows already (the store's size, which words are common), so that a second call
    (pseudo-relevance feedback) asks the store nothing twice."""
    own, grams, _phrases = terms(query)
    words = asked(query) if words is None else words
    scores = {}

    def note(mid, rel, raw):
        old = scores.get(mid, (0.0, 0.0))
        scores[mid] = (max(old[0], rel), max(old[1], raw))

    common = []
    memo = {} if memo is None else memo
    english = {w for e in translated(query) for w in e} - set(own)  # a translation's words are not a paste's
    n = 0
    if 1 < len(words) and sum(x not in english for x in words) <= 16:  # a long pasted prompt: its words
        n = memo["n"] if "n" in memo else memo.setdefault("n", store.count())  # are many enough
    if n >= COMMON_FROM:
        common = [x for x in words if _common(store, x, n, memo)]
        if len(common) == len(words):
            common = []
    rare = [x for x in words if x not in common]
    for index, items in (("words", rare), ("trigrams", [g for g in grams if len(g) >= 3])):
        if not items:
            continue
        hits = store.match(fts_or(items), pool, index=index)
        if not hits and index == "words" and common:
            hits, common = store.match(fts_or(words), pool, index=index), []  # the rarer words found nothing
        if not hits:
            continue
        best = -min(b for _i, b in hits) or 1.0
        for mid, b in hits:
            note(mid, (-b) / best, -b)
    short = [g for g in grams if len(g) == 2][:6]  # two-character CJK words: the trigram index cannot see them
    holding = store.containing(short, pool) if short else {}  # one substring scan for all of them
    for g in short:
        for mid in holding.get(g, ()):  # each bigram found adds to the score
            rel = min(1.0, scores.get(mid, (0.0, 0.0))[0] + 0.6 / len(short))
            note(mid, rel, CJK_RAW * rel)
    if common and scores:  # the candidates that also contain a common word (crude stems suffice here)
        stems = [_stem(c) for c in common]
        msgs = {} if msgs is None else msgs
        msgs.update((m.id, m) for m in store.messages(set(scores) - set(msgs)))
        for mid in scores:
            low = msgs[mid].content.lower() if mid in msgs else ""
            if any(st in low for st in stems):
                rel, raw = scores[mid]
                scores[mid] = (min(1.0, rel * COMMON_BOOST), raw)
    return scores


def _common(store, word, n, memo):
    """Whether *word* is in more than COMMON of the *n* messages (remembered in *memo*)."""
    key = ("common", word)
    if key not in memo:
        memo[key] = store.match_count(_quote(word), int(COMMON * n) + 1) > COMMON * n
    return memo[key]


def _score(store, query, scores, msgs, newest, why="match"):
    words, grams, phrases = terms(query)
    translation = translated(query)
    hits = {}
    for mid, (rel, _raw) in scores.items():
        m = msgs.get(mid)
        if m is None:
            continue
        weight = KIND_WEIGHT.get(m.kind, 0.5)
        if weight <= 0:
            continue
        low = m.content.lower()
        bonus = PHRASE_BONUS * min(1.0, sum(1 for p in phrases if p in low) / 2) if phrases else 0.0
        age_days = max(0.0, (newest - (m.ts or newest)) / 86400)
        score = rel * weight + bonus + RECENCY / (1 + age_days / 30) + IMPORTANCE * (m.importance or 0.5)
        hits[mid] = Hit(m, score, why, coverage(low, words, grams, translation) * weight)
    return hits


def feedback_terms(query, hits):
    """Pseudo-relevance feedback: words the best hits share that the question lacks."""
    known = set(asked(query))
    counts = {}
    for h in hits[:FEEDBACK_FROM]:
        for w in set(_WORD.findall(h.message.content.lower())):
            if len(w) >= 4 and w not in STOP_EN and w not in known and not w.isdigit():
                counts[w] = counts.get(w, 0) + 1
    ranked = sorted((c, w) for w, c in counts.items() if c >= 2)
    return [w for _c, w in sorted(ranked, key=lambda x: (-x[0], x[1]))[:FEEDBACK_TERMS]]


def _keep(hits, h):
    old = hits.get(h.message.id)
    if old is None or old.score < h.score:
        hits[h.message.id] = h


def rank(store, query, *, exclude=(), now=None, pool=POOL, expand=True, semantic=True):
    """[Hit] best first: relevance weighted by kind, phrases, recency, importance; then
    (with *expand*, for recall; search lists matches only) words the best hits share
    (pseudo-relevance feedback, when the question's words found few hits), fused with the
    messages nearest in meaning (*semantic*, when vectors exist: see ``fuse``), each
    question's answer and each answer's question, and the turns around the best hits.

    *semantic* may be a predicate of the lexical ranking: the question is embedded only when
    it says yes (per-prompt recall asks first whether the history can answer at all, and a
    prompt it cannot answer costs no embedding)."""
    msgs, memo = {}, {}  # the messages read, what the store said: one ranking asks each once
    scores = candidates(store, query, pool, msgs=msgs, memo=memo)
    near = meaning(store, query) if semantic is True else []
    if not scores and not near and semantic is True:
        return []
    newest = now or store.newest_ts() or time.time()
    msgs.update((m.id, m) for m in store.messages(set(scores) - set(msgs)))
    hits = _score(store, query, scores, msgs, newest)
    excluded = set(exclude)
    best = sorted(hits.values(), key=lambda h: (-h.score, h.message.id))
    more = feedback_terms(query, best) if expand and len(best) < FEEDBACK_BELOW else []
    if more:
        extra = candidates(store, query, pool, words=asked(query) + more, msgs=msgs, memo=memo)
        msgs.update((m.id, m) for m in store.messages(set(extra) - set(msgs)))
        for mid, h in _score(store, query, extra, msgs, newest, "related").items():
            if mid in hits:
                hits[mid].score += h.score * FEEDBACK_WEIGHT * 0.5
            else:
                h.score *= FEEDBACK_WEIGHT
                hits[mid] = h
    if callable(semantic):
        lexical = _expanded(store, hits, excluded)
        if not semantic(lexical):
            return lexical
        near = meaning(store, query)
        if not near:  # no vectors yet (or no extra): the ranking is the lexical one, already expanded
            return lexical
    if near:
        msgs.update((m.id, m) for m in store.messages({i for i, _c in near} - set(msgs)))
    if near and (not expand or not FUSE_AFTER):
        hits = fuse(query, hits, near, msgs)
    best = sorted(hits.values(), key=lambda h: (-h.score, h.message.id))
    if not expand:
        return [h for h in best if h.message.id not in excluded]
    if near and FUSE_AFTER:
        lex_found = max((h.raw for h in best[:LEX_TOP]), default=0.0)
        hits = _expand(store, hits, best)
        hits = fuse(query, hits, near, msgs, lex_found)
        best = sorted(hits.values(), key=lambda h: (-h.score, h.message.id))
        hits = _expand(store, hits, best, SEM_NEIGHBOURS) if SEM_NEIGHBOURS else hits
    else:
        hits = _expand(store, hits, best)
    return sorted((h for h in hits.values() if h.message.id not in excluded), key=lambda h: (-h.score, h.message.id))


def _expanded(store, hits, excluded):
    """The lexical ranking as ``rank`` returns it without vectors (a gate's input)."""
    best = sorted(hits.values(), key=lambda h: (-h.score, h.message.id))
    return sorted((h for h in _expand(store, hits, best).values() if h.message.id not in excluded),
                  key=lambda h: (-h.score, h.message.id))


def _expand(store, hits, best, top=None):
    """*hits* with each best hit's answer (or question) and the turns around it."""
    hits = dict(hits)
    near_of = _Neighbours(store)
    for h in best[:top or NEIGHBOURS_OF]:
        before, after = near_of(h.message, 0), near_of(h.message, 1)
        pair = after if _is_question(h.message.content) else (before if before and _is_question(before.content)
                                                              else None)
        if pair is not None and KIND_WEIGHT.get(pair.kind, 0.5) > 0:
            _keep(hits, Hit(pair, h.score * PAIR_SHARE, "answer" if pair is after else "question",
                            h.raw))  # as relevant as what it answers
        for side, first in ((0, before), (1, after)):
            near = first
            for share in NEIGHBOUR_SHARE:
                if near is None or KIND_WEIGHT.get(near.kind, 0.5) <= 0:
                    break
                _keep(hits, Hit(near, h.score * share, "context", 0.0))
                near = near_of(near, side) if share is not NEIGHBOUR_SHARE[-1] else None
    return hits


def meaning(store, query):
    """[(message id, cosine)] nearest in meaning (ctxd.memory.recall.embed), best first; [] without
    vectors or with semantic recall off (CTXD_SEMANTIC=off). A missing or broken model, or a busy or corrupt store,
    is logged once and leaves recall lexical."""
    if "embed" not in _SEMANTIC:
        try:
            from ctxd.memory.recall import embed
        except ImportError:
            embed = None
        _SEMANTIC["embed"] = embed
    embed = _SEMANTIC["embed"]
    if embed is None or not query.strip() or embed.choice() is None:  # CTXD_SEMANTIC=off
        return []
    try:
        return embed.search(store, query[:4000], SEM_POOL)
    except embed.Unavailable as e:
        why = str(e)
    except Exception as e:  # sqlite3.Error (busy, corrupt), a bad vector: lexical recall still answers
        why = f"{type(e).__name__}: {e}"
    if not _SEMANTIC.get("logged") and "not installed" not in why:
        from ctxd import boundary

        boundary.log_exception(f"semantic recall off, lexical only ({why})", None)
        _SEMANTIC["logged"] = True
    return []


def fuse(query, hits, near, msgs, found=None):
    """Reciprocal-rank fusion of the lexical ranking (*hits*) with *near*, weighted by how much
    the lexical side found: its best hits' share of the question's terms (``coverage``),
    squared. A question whose words are nowhere in the history (a name found, its other
    terms not) leaves the order to meaning; one whose words all match (a Chinese question's
    words in English included) keeps most of the lexical order."""
    words, grams, _p = terms(query)
    translation = translated(query)
    lexical = sorted(hits.values(), key=lambda h: (-h.score, h.message.id))
    if found is None:
        found = max((h.raw for h in lexical[:LEX_TOP]), default=0.0)
    w_lex, w_sem = LEX_WEIGHT * min(1.0, found) ** LEX_POWER, SEM_WEIGHT
    top = (w_lex + w_sem) / (RRF_K + 1)
    fused = {}
    for r, h in enumerate(lexical):
        fused[h.message.id] = w_lex / (RRF_K + 1 + r)
    floor = near[0][1] - SEM_SPAN if near else 0.0
    for r, (mid, cos) in enumerate(near):
        if cos < floor:
            break
        fused[mid] = fused.get(mid, 0.0) + w_sem / (RRF_K + 1 + r)
    out = {}
    for mid, f in fused.items():
        h = hits.get(mid)
        if h is None:
            m = msgs.get(mid)
            weight = KIND_WEIGHT.get(m.kind, 0.5) if m is not None else 0.0
            if weight <= 0:
                continue
            h = Hit(m, 0.0, "meaning", coverage(m.content.lower(), words, grams, translation) * weight)
        h.score = f / top
        out[mid] = h
    return out


class _Neighbours:
    """store.step, remembered for one ranking: the best hits' neighbourhoods overlap (and the
    message before B is A exactly when the one after A is B)."""

    def __init__(self, store):
        self.store, self.known = store, {}

    def __call__(self, m, side):
        key = (m.id, side)
        if key not in self.known:
            n = self.store.step(m, side)
            self.known[key] = n
            if n is not None:
                self.known.setdefault((n.id, 1 - side), m)
        return self.known[key]


def _stem(word):
    """A crude stem for coverage (the index itself uses porter): the word without common endings."""
    for suffix in ("ingly", "edly", "ings", "ing", "ied", "ies", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[:-len(suffix)]
    return word


def coverage(low_text, words, grams, translation=()):
    """The share of the question's terms that *low_text* (lowercased) contains: how relevant a
    hit is in absolute terms (bm25 is relative to the corpus and ~0 in a small one). With a
    Chinese question's *translation* (``translated``), the better of that share and the share
    of its words and Chinese words *low_text* holds in English (one of a word's English words)."""
    wanted = [_stem(w) for w in words] + [g for g in grams if len(g) == 2] + \
        ([g for g in grams if len(g) >= 3] if not any(len(g) == 2 for g in grams) else [])
    ascii_text = low_text.isascii()  # CJK words cannot be in it: not looked for
    share = sum(1 for w in wanted if (not ascii_text or w.isascii()) and w in low_text) / len(wanted) \
        if wanted else 0.0
    if not translation:
        return share
    found = sum(1 for w in words if _stem(w) in low_text) + \
        sum(1 for english in translation if any(_stem(e) in low_text for e in english))
    return max(share, found / (len(words) + len(translation)))


def _is_question(text):
    t = text.rstrip()
    return t.endswith(("?", "？")) or "?" in t[-200:]


def search(store, query, limit):
    """The best *limit* hits for *query* as a search lists them (``ctxd chat search``, the MCP
    search tool): every word match, and a turn found by meaning alone only where it ranks with
    the matches (fused score at least MEANING_FLOOR). Where the question's words all match,
    meaning alone never gets there (else every embedded turn is listed, as near as any other);
    where they match nothing, the turns nearest in meaning are the answer."""
    return [h for h in rank(store, query, expand=False) if h.why != "meaning" or h.score >= MEANING_FLOOR][:limit]


def recall(store, query, budget, *, exclude=(), threshold=0.0, counter=estimate, now=None, ranked=None):
    """Recall for *query* within *budget* tokens (see the module docstring).

    *threshold*: hits whose relevance (the share of the question's terms they contain,
    weighted by kind) is below it are left out (per-prompt recall injects only what is
    relevant). *exclude*: message ids the caller already holds. *ranked*: ``rank``'s answer, if known.
    """
    ranked = rank(store, query, exclude=exclude, now=now) if ranked is None else ranked
    hits = [h for h in ranked if h.raw >= threshold]
    items, text, used = pack(hits, budget, counter)
    # an estimate can be off: the packed text itself never exceeds the budget
    while items and used > budget:
        items, text, used = pack(sorted(items, key=lambda h: -h.score)[:-1], budget, counter)
    return Recall(query, items, used, text, len(hits))


def for_prompt(store, session, prompt, *, budget, threshold, time_limit, limit_chars):
    """What a just-submitted *prompt* of *session* comes with: the earlier turns that answer it
    (``answerable`` at *threshold*), packed to *budget* tokens under a head line and cut to
    *limit_chars* characters, "" when none does; what it carries is marked injected into
    *session*. Never what the session holds already (its turns, earlier injections), never the
    prompt itself. The ranking gives up after *time_limit* seconds (StoreError, as any other
    store failure: the caller's). The prompt is embedded only when the history can answer it and
    the lexical ranking took less than SEMANTIC_BEFORE of *time_limit* (a large store, a busy
    machine): else the lexical ranking answers, in time."""
    start = time.monotonic()
    with store.deadline(time_limit):
        held = store.injected_ids(session) | store.session_ids(session)

        def own(hits):  # without the prompt itself, stored before it reached this hook
            return [h for h in hits if h.message.content.strip() != prompt.strip()]

        def can_answer(lexical):
            return (bool(answerable(own(lexical), threshold))
                    and time.monotonic() - start < SEMANTIC_BEFORE * time_limit)

        hits = answerable(own(rank(store, prompt, exclude=held, semantic=can_answer)), threshold)
    items, text, _used = pack(hits, budget)
    if items:
        store.mark_injected(session, [h.message.id for h in items])
    if not text:
        return ""
    out = f"Relevant earlier turns of this project (ctxd recall for this prompt):\n{text}\n"
    if len(out) > limit_chars:  # Claude Code shows the model only a preview of more than ~10K
        cut = out[:limit_chars]
        out = cut[:cut.rfind("\n") + 1] or cut
    return out


def answerable(hits, threshold, top=ANSWERABLE_TOP):
    """The *hits* (ranked) per-prompt recall injects: none unless one of the best *top* holds
    *threshold* of the question's terms (``coverage``); then those holding half that share,
    and any scoring at least ANSWERABLE_SHARE of the best (its answer, the nearest in meaning).
    LoCoMo dev: 66 % of the evidence, nothing for 31 % of the unanswerable questions; a bar
    on each hit instead of the question dropped answers and meaning's finds (51 %, 28 %)."""
    if max((h.raw for h in hits[:top]), default=0.0) < threshold:
        return []
    return [h for h in hits if h.raw >= threshold / 2 or h.score >= ANSWERABLE_SHARE * hits[0].score]


def snippet(text, query, width=160):
    """A one-line window of *text* around the first word of *query* it contains."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    _w, grams, _p = terms(query)
    words = asked(query)
    low = flat.lower()
    at = min((i for i in (low.find(w[:max(3, len(w) - 2)]) for w in words + grams) if i >= 0), default=0)
    start = max(0, min(at - width // 3, len(flat) - width))
    out = flat[start:start + width]
    return ("…" if start else "") + out + ("…" if start + width < len(flat) else "")


def about(store, query):
    """text -> whether it shares a term with *query* that says something (``ctxd context --query``
    keeps only such memory and fact lines): a word of ``asked`` by its stem at a word's start (a stem
    under 4 letters: the word itself), or a Chinese word; not a word in more than COMMON of the messages."""
    words = asked(query)[:MAX_TERMS]
    n = store.count() if words else 0
    if n >= COMMON_FROM:  # a speaker's or the project's name says nothing on its own
        words = [w for w in words if store.match_count(_quote(w), int(COMMON * n) + 1) <= COMMON * n]
    stems = tuple(_unique(_stem(w) for w in words if len(_stem(w)) >= 4))
    short = {w for w in words if len(_stem(w)) < 4}
    grams = [g for g in terms(query)[1] if len(g) >= 2]
    return lambda text: any(g in text.lower() for g in grams) or any(
        w in short or (stems and w.startswith(stems)) for w in _WORD.findall(text.lower()))
