"""The scan of every vector's sign bits for the nearest to a question's, and the exact int8 dot
products that rerank them (ctxd.memory.recall.embed keeps the vectors and calls these).

The sign bits are read as the embedder packed them (``embed.pack``: blocks of ids, then the bits a
byte column after another) and the loose rows outside every block; their Hamming distances are
summed a byte column at a time with translate tables, and the dot products a dimension at a time
as one big int of 32-bit lanes: no Python step per row. Standard library only.
"""

import array
import heapq
import itertools
import sys


def gaps(blocks):
    """The (first, last) id ranges outside the *blocks* (by first id), the last one open-ended."""
    out, lo = [], 1
    for b in blocks:
        if b[0] > lo:
            out.append((lo, b[0] - 1))
        lo = max(lo, b[1] + 1)
    return out + [(lo, 2 ** 62)]


class Scan:
    """Every vector's sign bits: the packed blocks as one value each (100,000 vectors: 25
    values, not 100,000 rows), their bits a byte column after another, and the rows outside
    every block in one blob. ``nearest`` sums the distances of all of them a byte column at a time
    (``hamming``); a block's positions are its ids, the loose rows' ids are looked up for
    those within the n-th distance only (rows with the same bits have the same distance: all
    of them come along)."""

    def __init__(self, store, w, name):
        self.store, self.w, self.name = store, w, name
        blocks = [b for b in store.embed_blocks(name) if len(b[3]) == w * (len(b[2]) // 8)]
        self.ranges = gaps(blocks) if blocks else None  # the loose vectors' ids
        self.loose = store.embed_bits(name, w, self.ranges)
        self.ids = array.array("q")
        for b in blocks:
            self.ids.frombytes(b[2])
        if sys.byteorder == "big":
            self.ids.byteswap()
        views = [(memoryview(b[3]), len(b[2]) // 8) for b in blocks]
        self.columns = [b"".join([v[j * k:(j + 1) * k] for v, k in views] + [self.loose[j::w]]) for j in range(w)]

    def nearest(self, qbits, n):
        packed, loose, w = len(self.ids), self.loose, self.w
        if not packed and not loose:
            return []
        dist = hamming(self.columns, qbits)
        cut = heapq.nsmallest(n, dist)[-1]
        close, rest = [], {}  # (distance, id) of packed rows; {bits: distance} of loose ones
        for p in within(dist, cut):
            if p < packed:
                close.append((dist[p], self.ids[p]))
            else:
                rest[loose[(p - packed) * w:(p - packed + 1) * w]] = dist[p]
        if rest:
            close += [(rest[b], i) for i, b in self.store.embed_with_bits(self.name, rest, self.ranges)]
        return [i for _d, i in heapq.nsmallest(n, close)]


def hamming(columns, qbits):
    """array('H') of the Hamming distance of *qbits* to each row of *columns* (the rows' byte j
    in ``columns[j]``). A column at a time: its bytes' popcounts of the XOR with the query's byte
    (a translate table) are added as one big int, 8 bits a row (24 columns sum to at most
    192: no carry), and the two halves' sums widened to 16 bits and added."""
    w, n = len(qbits), len(columns[0]) if columns else 0
    half = w // 2
    assert 8 * (w - half) < 256, "byte lanes would carry"
    total = 0
    for cols in (range(half), range(half, w)):
        acc = 0
        for j in cols:
            acc += int.from_bytes(columns[j].translate(_XOR_POPCOUNT[qbits[j]]), "little")
        wide = bytearray(2 * n)
        wide[0::2] = acc.to_bytes(n, "little")
        total += int.from_bytes(wide, "little")
    out = array.array("H")
    out.frombytes(total.to_bytes(2 * n, "little"))
    if sys.byteorder == "big":
        out.byteswap()
    return out


def within(dist, cut):
    """The positions of *dist* (array('H')) whose value is at most *cut*, in order. Below 255
    without a Python step per row: the distances' low bytes through a table (1 where at most
    *cut*), those whose high byte is set (256 or more) cleared, then the 1s found."""
    if cut >= 255:
        return list(itertools.compress(range(len(dist)), map(cut.__ge__, dist)))
    raw = dist.tobytes()
    low, high = (raw[0::2], raw[1::2]) if sys.byteorder == "little" else (raw[1::2], raw[0::2])
    flags = low.translate(_AT_MOST[cut])
    if high.count(0) != len(high):
        flags = (int.from_bytes(flags, "little") & int.from_bytes(high.translate(_IS_ZERO), "little")).to_bytes(
            len(flags), "little")
    out, p = [], flags.find(1)
    while p >= 0:
        out.append(p)
        p = flags.find(1, p + 1)
    return out


class _AtMost(dict):
    """{cut: 256-byte table, 1 for the bytes at most cut, else 0}, made when first asked for."""

    def __missing__(self, cut):
        table = self[cut] = bytes(int(v <= cut) for v in range(256))
        return table


_AT_MOST = _AtMost()
_IS_ZERO = bytes([1]) + bytes(255)


class _XorPopcount(dict):
    """{byte q: 256-byte table of popcount(v ^ q)}, made when first asked for."""

    def __missing__(self, q):
        table = self[q] = bytes((v ^ q).bit_count() for v in range(256))
        return table


_XOR_POPCOUNT = _XorPopcount()


def int8_dots(blob, q):
    """The dot product of the int8 vector *q* (bytes) with each len(q)-byte int8 row of *blob*,
    exact. A dimension at a time: its column of the rows (as 0..255, the value + 128) times
    q's value, added as one big int of 32-bit lanes (a sum of products stays < 2^24: no
    carry), positive and negative values of q apart; then the 128 x sum(q) taken off."""
    w, n = len(q), len(blob) // len(q)
    signed = array.array("b", q)
    unsigned = blob.translate(_PLUS_128)
    lanes = bytearray(4 * n)
    pos = neg = 0
    for j, x in enumerate(signed):
        if x:
            lanes[0::4] = unsigned[j::w]
            col = int.from_bytes(lanes, "little")
            if x > 0:
                pos += col * x
            else:
                neg -= col * x
    pos, neg, off = pos.to_bytes(4 * n, "little"), neg.to_bytes(4 * n, "little"), 128 * sum(signed)
    return [int.from_bytes(pos[k:k + 4], "little") - int.from_bytes(neg[k:k + 4], "little") - off
            for k in range(0, 4 * n, 4)]


_PLUS_128 = bytes((v + 128) % 256 for v in range(256))  # an int8's byte -> its value + 128
