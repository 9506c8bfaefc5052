"""GGUF builders per vocab type: the tests' tiny vocabs and the derived vocabs use the same code.

Each builder writes one file shaped like what the pin's converter writes
(conversion ``_set_vocab_rwkv_world`` / ``_set_vocab_plamo``), or relabels a pinned
file (:func:`relabel`: ``tokenizer.ggml.pre``/``model`` and the metadata that needs).

* RWKV: token texts are ``repr(bytes)[2:-1]`` escapes, ``<s>`` CONTROL first and
  ``[PADn]`` UNUSED last; ``general.architecture`` ``rwkv6``.
* PLaMo-2: ``<|plamo:*|>`` CONTROL tokens, all 256 ``<0xXX>`` BYTE tokens, scored
  pieces and ``[PADn]`` UNUSED tokens scored -1000.0 (llama.cpp's *unknown* marker).
* hybriddna: a BPE vocab plus ``<dna>``, ``</dna>``, ``<oov>`` and k-mer tokens
  ending in U+E000 (llama.cpp strips the marker at load).

With ``vocab_only`` llama.cpp reads no hyper-parameters, so no other key is needed.

>>> import tempfile, os
>>> from harness.tokenizer.gguf import GGUFReader
>>> p = rwkv_gguf(os.path.join(tempfile.mkdtemp(), "r.gguf"), [b"a", b"b", b"ab"])
>>> GGUFReader(p).get("tokenizer.ggml.tokens")[:4]
[b'<s>', b'a', b'b', b'ab']
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Iterable

from harness.tokenizer.gguf import GGUFReader, GGUFValueType as T
from harness.tokenizer.gguf.writer import rewrite_metadata, write_gguf

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6  # tokenizer.ggml.token_type
PLAMO_SPECIALS = ["<|plamo:unk|>", "<|plamo:bos|>", "<|plamo:eos|>", "<|plamo:pad|>", "<|plamo:op|>"]
DNA_SPECIALS = ["<dna>", "</dna>", "<oov>"]
DNA_KMERS = ["ACGTAC", "GTAAAA", "CCCCCC", "AAAAAA", "TTTTTT", "GGGGGG", "ACGTNN"]


def relabel(base: Path, dst: Path, changes: dict) -> Path:
    """``base`` with some metadata keys set (``(GGUFValueType, value)``) or removed (None)."""
    rewrite_metadata(base, dst, changes)
    return dst


def add_tokens(base: Path, dst: Path, texts: Iterable[str], token_type: int) -> Path:
    """``base`` with ``texts`` appended as tokens of ``token_type`` (score 0.0 where the vocab
    has scores), as the converter appends a model's added tokens."""
    r = GGUFReader(base)
    texts = [t.encode() for t in texts]
    changes = {"tokenizer.ggml.tokens": (T.ARRAY, [bytes(t) for t in r.get("tokenizer.ggml.tokens")] + texts, T.STRING),
               "tokenizer.ggml.token_type": (T.ARRAY, [int(t) for t in r.get("tokenizer.ggml.token_type")]
                                             + [token_type] * len(texts), T.INT32)}
    if "tokenizer.ggml.scores" in r.fields:
        changes["tokenizer.ggml.scores"] = (T.ARRAY, [float(x) for x in r.get("tokenizer.ggml.scores")]
                                            + [0.0] * len(texts), T.FLOAT32)
    return relabel(base, dst, changes)


def rwkv_gguf(path, raw_tokens: Iterable[bytes], *, unk: int | None = None, escaped_extra=(),
              name: str = "rwkv-test") -> Path:
    """An RWKV vocab of ``raw_tokens`` (raw bytes, escaped here as the converter does)."""
    tokens = [b"<s>"] + [repr(bytes(t))[2:-1].encode() for t in raw_tokens] + list(escaped_extra)
    tokens += [b"[PAD%d]" % i for i in range(len(tokens), len(tokens) + 3)]
    types = [CONTROL] + [NORMAL] * (len(tokens) - 4) + [UNUSED] * 3
    meta = {"general.architecture": (T.STRING, "rwkv6"), "general.name": (T.STRING, name),
            "tokenizer.ggml.model": (T.STRING, "rwkv"),
            "tokenizer.ggml.tokens": (T.ARRAY, tokens, T.STRING),
            "tokenizer.ggml.token_type": (T.ARRAY, types, T.INT32)}
    if unk is not None:
        meta["tokenizer.ggml.unknown_token_id"] = (T.UINT32, unk)
    write_gguf(path, meta)
    return Path(path)


def plamo2_gguf(path, words: Iterable, *, scores=None, drop_byte=None, name: str = "plamo2-test") -> Path:
    """A PLaMo-2 vocab: specials, byte tokens, ``words`` with seeded log-prob scores
    (ties among the first six, as real tables have), then ``[PADn]``."""
    rng = random.Random(7)
    tokens = [s.encode() for s in PLAMO_SPECIALS]
    types = [UNKNOWN] + [CONTROL] * 4
    sc = [0.0] * 5
    for b in range(256):
        if b != drop_byte:
            tokens.append(b"<0x%02X>" % b)
            types.append(BYTE)
            sc.append(0.0)
    for i, w in enumerate(words):
        tokens.append(w if isinstance(w, bytes) else w.encode())
        types.append(NORMAL)
        sc.append(scores[i] if scores else (-5.0 if i < 6 else round(-rng.uniform(2, 12), 4)))
    for i in range(1, 4):
        tokens.append(b"[PAD%d]" % i)
        types.append(UNUSED)
        sc.append(-1000.0)
    write_gguf(path, {"general.architecture": (T.STRING, "plamo2"),
                      "general.name": (T.STRING, name),
                      "tokenizer.ggml.model": (T.STRING, "plamo2"),
                      "tokenizer.ggml.pre": (T.STRING, "default"),
                      "tokenizer.ggml.tokens": (T.ARRAY, tokens, T.STRING),
                      "tokenizer.ggml.scores": (T.ARRAY, sc, T.FLOAT32),
                      "tokenizer.ggml.token_type": (T.ARRAY, types, T.INT32),
                      "tokenizer.ggml.add_space_prefix": (T.BOOL, False)})
    return Path(path)


def hybriddna_gguf(base: Path, dst: Path, kmers: Iterable[str] = DNA_KMERS[:4]) -> Path:
    """``base`` (a BPE vocab) as model ``hybriddna``, plus the DNA specials and k-mer tokens."""
    r = GGUFReader(base)
    extra = DNA_SPECIALS + [k + "\ue000" for k in kmers]
    tokens = [bytes(t) for t in r.get("tokenizer.ggml.tokens")] + [e.encode() for e in extra]
    types = [int(t) for t in r.get("tokenizer.ggml.token_type")] + [NORMAL] * len(extra)
    return relabel(base, dst, {"tokenizer.ggml.model": (T.STRING, "hybriddna"),
                               "tokenizer.ggml.tokens": (T.ARRAY, tokens, T.STRING),
                               "tokenizer.ggml.token_type": (T.ARRAY, types, T.INT32)})


def whitespace_gguf(base: Path, dst: Path, lowercase: bool | None = None) -> Path:
    """``base`` as model and pre ``whitespace`` (optionally with the normalizer's lowercase)."""
    changes = {"tokenizer.ggml.model": (T.STRING, "whitespace"), "tokenizer.ggml.pre": (T.STRING, "whitespace")}
    if lowercase is not None:
        changes["tokenizer.ggml.normalizer.lowercase"] = (T.BOOL, lowercase)
    return relabel(base, dst, changes)


def byte_level_pieces(base: Path, limit: int | None = None) -> list[bytes]:
    """The raw bytes of a byte-level BPE vocab's NORMAL tokens (GPT-2's bytes_to_unicode undone),
    longer than one byte, in id order: realistic word pieces for RWKV and PLaMo-2 vocabs."""
    from harness.tokenizer.unicode import UNICODE_TO_BYTE
    r = GGUFReader(base)
    types = r.get("tokenizer.ggml.token_type")
    out, seen = [], set()
    for t, ty in zip(r.get("tokenizer.ggml.tokens"), types):
        if int(ty) != NORMAL:
            continue
        text = bytes(t).decode("utf-8", "replace")
        if not all(c in UNICODE_TO_BYTE for c in text):
            continue
        raw = bytes(UNICODE_TO_BYTE[c] for c in text)
        if len(raw) > 1 and raw not in seen:
            seen.add(raw)
            out.append(raw)
            if limit and len(out) >= limit:
                break
    return out
