"""The default semantic model: static word-piece vectors distilled from all-MiniLM-L6-v2.

A sentence's vector is the mean of its WordPiece tokens' rows, unit length: no network, no
numpy, a few milliseconds a question. The table (static-minilm.bin, ~4 MB in the wheel) was
distilled once with model2vec's recipe by benchmarks/distill_static_model.py (its docstring
gives the file's layout): 128 dimensions, int8 with a scale a row, the SIF weighting baked in.
all-MiniLM-L6-v2 is English: a Chinese question gets little from it (the e5 extra is multilingual).

Tokenising follows BERT's uncased tokenizer: control characters dropped, CJK ideographs
split into tokens of their own, lowercase, accents stripped, split at whitespace and at every
punctuation character, then greedy longest-match WordPiece ("##" continues a word; a word
that cannot be split is unknown, and unknown tokens are left out as model2vec does).

A question reads the sorted tokens and their index (~0.4 MB), looks its words' pieces up by
binary search and reads only their rows (``os.pread``); the background embedder reads the whole
table once, checks its CRC and builds a dictionary. Standard library only.
"""

import array
import os
import re
import struct
import sys
import unicodedata
import zlib

from ctxd.errors import CtxdError, ExitCode

NAME = "minilm-static-128-ctx"  # the name its rows are stored under
DIM = 128
PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static-minilm.bin")
MAGIC = b"CTXDSV2\n"
PASSAGE_CHARS = 1500  # of a message's text (as e5: the start says what a turn is about)
LONGEST = 24  # characters of the longest token (18) and more: a piece is looked up at most this long
MAX_WORD = 100  # characters: a longer "word" is unknown (BERT's max_input_chars_per_word)
_ASCII_WORDS = re.compile(r"[a-z0-9]+|[^a-z0-9\s]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class ModelFileError(CtxdError):
    """The model file is missing, truncated or corrupt."""

    exit_code = ExitCode.NOT_FOUND


class StaticModel:
    """query(text) and passages(texts) -> unit-length lists of DIM floats (all zeros for a text
    without a known token). *whole*: read the whole table now and check its CRC (the background
    embedder, which looks up many rows); else rows are read as the tokens need them."""

    name, dim = NAME, DIM

    def __init__(self, path=PATH, whole=False):
        self.fd = None
        try:
            self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except OSError as e:
            raise ModelFileError(f"the static model file {path} cannot be opened: {e.strerror}") from None
        try:
            self._read_header(path, whole)
        except BaseException:
            self.close()
            raise
        self.pieces = {}  # word -> [row index], remembered (words repeat)
        self.rows = {}  # row index -> its floats (scale applied), remembered

    def _read_header(self, path, whole):
        size = os.fstat(self.fd).st_size
        head = os.pread(self.fd, len(MAGIC) + 12, 0)
        if len(head) < len(MAGIC) + 12 or not head.startswith(MAGIC):
            raise ModelFileError(f"the static model file {path} is not one (no ctxd header)")
        n, dim, text_bytes = struct.unpack("<III", head[len(MAGIC):])
        start = len(MAGIC) + 12
        starts_at = start + text_bytes
        scales_at = starts_at + 4 * (n + 1) + 4 * n
        self.rows_at = scales_at + 4 * n
        if dim != DIM or n < 1000 or size != self.rows_at + n * dim + 4:
            raise ModelFileError(f"the static model file {path} is truncated or of another shape "
                                 f"({n} x {dim}, {size} bytes)")
        if whole:
            data = os.pread(self.fd, size, 0)
            if zlib.crc32(data[:-4]) != struct.unpack("<I", data[-4:])[0]:
                raise ModelFileError(f"the static model file {path} is corrupt (its checksum does not match)")
            self.whole, head = data, data[start:self.rows_at]
        else:
            self.whole, head = None, os.pread(self.fd, self.rows_at - start, start)
        self.text = head[:text_bytes]
        self.starts, self.order, self.scales = array.array("I"), array.array("I"), array.array("f")
        self.starts.frombytes(head[text_bytes:text_bytes + 4 * (n + 1)])
        self.order.frombytes(head[text_bytes + 4 * (n + 1):scales_at - start])
        self.scales.frombytes(head[scales_at - start:])
        if sys.byteorder == "big":
            for a in (self.starts, self.order, self.scales):
                a.byteswap()
        if self.starts[-1] != text_bytes or (whole and max(self.order) >= n):  # else: ``_row`` checks
            raise ModelFileError(f"the static model file {path} is corrupt (its index does not fit)")
        self.vocab = None
        if whole:  # many lookups: a dictionary pays (a question's few do not: ``_id``)
            try:
                tokens = self.text.decode("utf-8").split("\n")[:-1]
            except UnicodeDecodeError:
                raise ModelFileError(f"the static model file {path} is corrupt (its tokens are not UTF-8)") from None
            if len(tokens) != n:
                raise ModelFileError(f"the static model file {path} is corrupt ({len(tokens)} tokens for {n} rows)")
            self.vocab = dict(zip(tokens, self.order))
        self.unknown = self._id("[UNK]")

    def _id(self, token):
        """The row of *token*, or None: the dictionary, else a binary search of the sorted tokens."""
        if self.vocab is not None:
            return self.vocab.get(token)
        key, text, starts = token.encode("utf-8"), self.text, self.starts
        lo, hi = 0, len(self.order)
        while lo < hi:
            mid = (lo + hi) // 2
            if text[starts[mid]:starts[mid + 1] - 1] < key:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(self.order) and text[starts[lo]:starts[lo + 1] - 1] == key:
            return self.order[lo]
        return None

    def close(self):
        """Close the file (a model lives as long as its process: the file stays open until then)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    # -- text to rows -------------------------------------------------------------------

    def token_rows(self, text):
        """The row indexes of *text*'s WordPiece tokens (unknown ones left out)."""
        out = []
        pieces = self.pieces
        for word in basic_tokens(text):
            ids = pieces.get(word)
            if ids is None:
                ids = pieces[word] = self._wordpiece(word)
            out += ids
        return out

    def _wordpiece(self, word):
        if len(word) > MAX_WORD:
            return []
        ids, start = [], 0
        while start < len(word):
            end = min(len(word), start + LONGEST)
            while end > start:
                row = self._id(word[start:end] if start == 0 else "##" + word[start:end])
                if row is not None:
                    ids.append(row)
                    break
                end -= 1
            else:
                return []  # no piece fits: the whole word is unknown
            start = end
        return [i for i in ids if i != self.unknown]

    def _row(self, i):
        row = self.rows.get(i)
        if row is None:
            at = self.rows_at + i * DIM
            raw = self.whole[at:at + DIM] if self.whole is not None else os.pread(self.fd, DIM, at)
            if len(raw) != DIM:
                raise ModelFileError(f"the static model file has no row {i}: corrupt")
            scale = self.scales[i]
            row = self.rows[i] = [x * scale for x in array.array("b", raw)]
        return row

    # -- vectors --------------------------------------------------------------------------

    def vector(self, text):
        acc = [0.0] * DIM
        for i in self.token_rows(text):
            acc = list(map(float.__add__, acc, self._row(i)))
        norm = sum(x * x for x in acc) ** 0.5
        return [x / norm for x in acc] if norm else acc

    def query(self, text):
        return self.vector(text)

    def passages(self, texts):
        return [self.vector(t[:PASSAGE_CHARS]) for t in texts]


def basic_tokens(text):
    """BERT's uncased basic tokenisation of *text*: a list of words and punctuation characters."""
    if text.isascii() and not _CONTROL.search(text):
        return _ASCII_WORDS.findall(text.lower())
    out, word = [], []
    for ch in unicodedata.normalize("NFD", _cleaned(text).lower()):
        if ch.isspace():
            if word:
                out.append("".join(word))
                word = []
            continue
        cat = unicodedata.category(ch)
        if cat == "Mn":  # an accent of the letter before it
            continue
        if _is_punctuation(ch, cat) or _is_cjk(ord(ch)):
            if word:
                out.append("".join(word))
                word = []
            out.append(ch)
        else:
            word.append(ch)
    if word:
        out.append("".join(word))
    return out


def _cleaned(text):
    """*text* without NUL, U+FFFD and control characters (tab, newline and CR count as spaces)."""
    return "".join(" " if ch in "\t\n\r" else ch for ch in text
                   if ch not in "\0\ufffd" and (ch in "\t\n\r" or not unicodedata.category(ch).startswith("C")))


def _is_punctuation(ch, cat):
    cp = ord(ch)
    return 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126 or cat.startswith("P")


def _is_cjk(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
            or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF
            or 0x2F800 <= cp <= 0x2FA1F)
