"""Chinese questions in English words: dictionary-based query translation for recall.

    translate("Caroline 打算什么时候去露营？") -> (("打算", ("plan", "intend", ...)), ("露营", ("camp", "camping")))

A Chinese question shares no word with English turns. Each run of Chinese characters is
segmented by forward maximum matching over the headwords of ``zh_en.txt`` (a keyword list
derived from CC-CEDICT, CC BY-SA 4.0: benchmarks/refresh_zh_en.py); function and question
words are dropped, and each remaining word brings the English words of its first senses.

The file is a few MB: it is never parsed. It is mapped (mmap) the first time a question
holds Chinese and each word is a binary search over its sorted lines. A missing or corrupt
file leaves recall as it was without it (one line in ctxd's log). Standard library only.
"""

import mmap
import os
import re
from functools import lru_cache

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zh_en.txt")
MAGIC = b"# ctxd zh-en 1:"
LONGEST = 8  # characters of the longest headword the refresh script keeps
MAX_WORDS = 12  # Chinese words of one question translated (a pasted page: its first ones) ...
MAX_CHARS = 100  # ... within its first Chinese characters (a pathological run: ~20 ms)
RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")  # Chinese characters (kana and hangul are not)
# Chinese stop words (the list has no single characters): pronouns, question words, conjunctions,
# prepositions and adverbs, what English's stop words are (their senses say nothing about what is asked)
STOP = frozenset("""
我们 你们 他们 她们 它们 咱们 自己 大家 别人 这个 那个 这些 那些 这样 那样 这么 那么 这种 那种 哪种 什么 怎么
怎样 怎么样 如何 为什么 哪里 哪儿 哪个 哪些 多少 多久 什么样 什么时候 时候 是否 是不是 有没有 一下 一个 一些 有些
每个 所有 其他 另外 没有 只有 可以 因为 所以 因此 但是 可是 不过 而且 并且 或者 还是 还有 如果 虽然 关于 对于 为了
以前 之前 以后 之后 然后 已经 曾经 一直 正在 现在 当时 大概 也许 可能 应该 一定 非常 特别 真的 其实 只是 就是 算是
好像 一样
""".split())

_opened = {}  # "dict": the mapped file, or None once it failed (logged once)


class Dictionary:
    """The sorted ``headword TAB words`` lines of a mapped file, looked up by binary search."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if self.map[:len(MAGIC)] != MAGIC:
            self.map.close()
            raise ValueError(f"{path} is not a ctxd zh-en keyword list")

    def floor(self, key):
        """(headword, English words) of the last line whose headword is <= *key* (bytes), or None."""
        m, found = self.map, None
        lo, hi = 0, len(m)
        while lo < hi:  # lo and hi are line starts; the line holding mid is looked at
            mid = (lo + hi) // 2
            start = m.rfind(b"\n", lo, mid) + 1 or lo
            end = m.find(b"\n", start, hi)
            end = hi if end < 0 else end
            tab = m.find(b"\t", start, end)
            head = m[start:tab if tab >= 0 else end]
            if head <= key:
                found = (head, m[tab + 1:end] if tab >= 0 else b"")
                if head == key:
                    break
                lo = end + 1
            else:
                hi = start
        return found

    def get(self, word):
        """The English words of *word* (a tuple), or None when it is not a headword."""
        found = self.floor(word.encode("utf-8"))
        return tuple(found[1].decode("utf-8").split()) if found and found[0] == word.encode("utf-8") else None

    def longest(self, text):
        """(the longest headword *text* starts with, its English words), or None. The last
        headword <= *text* shares at least that headword with it: each look shortens *text*
        to the start they share, until it is that headword."""
        key = text[:LONGEST].encode("utf-8")
        while len(key) > 3:  # two characters at least (a character is 3 bytes or more)
            found = self.floor(key)
            if found is None:
                return None
            head = found[0]
            if key.startswith(head):
                word = head.decode("utf-8")
                return (word, tuple(found[1].decode("utf-8").split())) if len(word) >= 2 else None
            n = 0
            while n < min(len(head), len(key)) and head[n] == key[n]:
                n += 1
            key = key[:n].decode("utf-8", "ignore").encode("utf-8")  # whole characters only
        return None


def dictionary():
    """The process's Dictionary, or None (a missing or corrupt file: logged once)."""
    if "dict" not in _opened:
        try:
            _opened["dict"] = Dictionary(PATH)
        except (OSError, ValueError) as e:
            from ctxd import boundary

            boundary.log_line(f"Chinese questions are not translated ({e})")
            _opened["dict"] = None
    return _opened["dict"]


def segment(run, longest):
    """*run* (Chinese characters) as words, the longest headword at each point first (forward
    maximum matching): (word, its English words), or (a character, None) where no headword starts."""
    i = 0
    while i < len(run):
        found = longest(run[i:i + LONGEST])
        word, english = found or (run[i], None)
        yield word, english
        i += len(word)


@lru_cache(maxsize=32)
def translate(text, max_words=MAX_WORDS, max_chars=MAX_CHARS):
    """((Chinese word, (English words, ...)), ...) for the content words of *text*, in order,
    at most *max_words* of them within its first *max_chars* Chinese characters; () without
    Chinese or without the dictionary. A character alone is not a headword (the list has
    none): it is left out."""
    runs = RUN.findall(text[:50_000])
    if not runs:
        return ()
    d = dictionary()
    if d is None:
        return ()
    out, seen, left = [], set(), max_chars
    try:
        for run in runs:
            run, left = run[:left], left - len(run)
            for word, english in segment(run, d.longest):
                if english and word not in STOP and word not in seen:
                    seen.add(word)
                    out.append((word, english))
                    if len(out) == max_words:
                        return tuple(out)
            if left <= 0:
                break
    except (ValueError, UnicodeDecodeError) as e:  # a file changed under the map, bytes not UTF-8
        from ctxd import boundary

        boundary.log_line(f"Chinese questions are not translated ({e})")
        _opened["dict"] = None
        return ()
    return tuple(out)
