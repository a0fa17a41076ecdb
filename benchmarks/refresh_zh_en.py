"""Refresh ctxd/memory/recall/zh_en.txt, the Chinese-English keyword list recall translates with.

    python3 benchmarks/refresh_zh_en.py path/to/cedict_1_0_ts_utf-8_mdbg.txt

The source is CC-CEDICT (https://www.mdbg.net/chinese/dictionary?page=cc-cedict, the
"CC-CEDICT" download, unzipped), lines ``trad simp [pin1 yin1] /gloss/gloss/``, by MDBG
under CC BY-SA 4.0. This script keeps what recall can use (ctxd.memory.recall.zh_en): each
headword of 2 to 8 Chinese characters (simplified and traditional; alone, a character is
most often a function word or has too many senses to say what is asked), with the English content
words of its first SENSES senses (at most WORDS, lowercased, English stop words out). It
leaves out cross-references (``see``, ``variant of``, ``CL:``, ``abbr. for`` ...), literal
glosses of idioms (``lit.``), parentheticals, surnames and the names of people (a proper
noun gloss with a year, or a name's entry: ``(name)``). A headword whose senses leave no
word (我们: "we; us") stays, with none: segmentation needs it.
The output is sorted by headword (UTF-8 byte order: recall binary-searches it), one
``headword TAB word word ...`` a line, under a header naming the source and its licence;
the derived list is CC BY-SA 4.0 as well. Then run tests/test_zh_en.py.
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "..", "ctxd", "memory", "recall", "zh_en.txt")
SENSES, WORDS = 5, 12
ENTRY = re.compile(r"^(\S+) (\S+) \[([^\]]*)\] /(.*)/\s*$")
SKIP = ("see ", "see also", "variant of", "old variant", "erhua variant", "japanese variant", "cl:", "used in",
        "surname ", "taiwan pr", "also pr", "abbr.", "also written", "same as", "lit.", "name of", "classifier")
NOT_CONTENT = frozenset("""
sb sth sb's sth's etc one person used also old kind particle classifier something someone somebody measure
word words variant abbr lit fig esp pr pron coll slang dialect literary archaic interj onom written
""".split())
HEADER = """\
# ctxd zh-en 1: Chinese-English keywords for recall (ctxd/memory/recall/zh_en.py), one
# "headword<TAB>english words" a line, sorted by headword (UTF-8 bytes).
# Derived from CC-CEDICT ({date}, {entries} entries), published by MDBG,
# https://www.mdbg.net/chinese/dictionary?page=cc-cedict
# CC-CEDICT is licensed under the Creative Commons Attribution-ShareAlike 4.0
# International License, https://creativecommons.org/licenses/by-sa/4.0/
# Referenced works: CEDICT - Copyright (C) 1997, 1998 Paul Andrew Denisowski.
# Changes: glosses reduced to their first English content words; cross-references,
# surnames and people's names left out (benchmarks/refresh_zh_en.py). This derived
# list is licensed under CC BY-SA 4.0 as well.
"""


def keywords(glosses, stop):
    """The English content words of *glosses* (their first SENSES), at most WORDS, in order."""
    out = []
    for gloss in glosses[:SENSES]:
        low = gloss.strip().lower()
        if not low or low.startswith(SKIP):
            continue
        low = re.sub(r"\([^)]*\)|\[[^\]]*\]|[^\x00-\x7f]+", " ", low.replace("fig.", " "))
        for w in re.findall(r"[a-z]+(?:'[a-z]+)?", low):
            if len(w) > 2 and w not in stop and w not in NOT_CONTENT and w not in out:
                out.append(w)
    return out[:WORDS]


def a_name(pinyin, glosses):
    """A proper noun's entry that is a surname or a person (a place, a language, a weekday stays)."""
    if not pinyin[:1].isupper():
        return False
    first = glosses[0].lower() if glosses else ""
    return first.startswith("surname") or "(name)" in first or bool(re.search(r"\d", first))


def read(path):
    """{headword: [gloss, ...]} of the entries worth keeping, plus the source's date and size."""
    from ctxd.memory.recall.zh_en import RUN

    senses, date, entries = {}, "?", 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                if line.startswith("#! date="):
                    date = line.split("=", 1)[1].strip()[:10]
                continue
            m = ENTRY.match(line)
            if not m:
                continue
            entries += 1
            trad, simp, pinyin, glosses = m.groups()
            glosses = glosses.split("/")
            if a_name(pinyin, glosses):
                continue
            for head in dict.fromkeys((simp, trad)):
                if RUN.fullmatch(head) and 2 <= len(head) <= 8:
                    senses.setdefault(head, []).extend(glosses)
    return senses, date, entries


def main(path):
    sys.path.insert(0, os.path.join(HERE, ".."))
    from ctxd.memory.recall.ranked import STOP_EN

    senses, date, entries = read(path)
    lines = [f"{head}\t{' '.join(keywords(glosses, STOP_EN))}\n" for head, glosses in senses.items()]
    lines.sort(key=lambda s: s.split("\t", 1)[0].encode("utf-8"))
    with open(TARGET, "w", encoding="utf-8", newline="\n") as f:
        f.write(HEADER.format(date=date, entries=entries))
        f.writelines(lines)
    print(f"wrote {os.path.normpath(TARGET)}: {len(lines)} headwords from CC-CEDICT {date}, "
          f"{os.path.getsize(TARGET) / 1e6:.1f} MB")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    main(sys.argv[1])
