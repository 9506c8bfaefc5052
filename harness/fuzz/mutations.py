"""Mutation classes: each turns a seed :class:`Doc` into a hostile GGUF file (bytes).

A class is a function ``(doc, rng) -> bytes``; it picks one of its operators at
random, sometimes two. The classes aim where llama.cpp's loader has rules: the
header, KV types and lengths, the token arrays (texts, types, scores), the special
ids, the merges, tensor-info records, well-known keys, and plain byte damage.

>>> import random
>>> from harness.fuzz.seeds import spm
>>> data = mutate("header", spm(), random.Random(1))
>>> isinstance(data, bytes) and len(data) > 0
True
>>> sorted(CLASSES) == sorted(["header", "kv_type", "kv_length", "tokens", "token_types", "special_ids",
...                            "merges", "tensors", "keys", "bytes"])
True
"""

from __future__ import annotations

import math
import random
import struct
from typing import Callable

from harness.fuzz.doc import KV, Doc, tensor_info
from harness.tokenizer.gguf.keys import GGUFValueType as T

TOKENS, TYPES, SCORES, MERGES = (b"tokenizer.ggml.tokens", b"tokenizer.ggml.token_type",
                                 b"tokenizer.ggml.scores", b"tokenizer.ggml.merges")
SPECIAL_KEYS = [f"tokenizer.ggml.{k}".encode() for k in (
    "bos_token_id", "eos_token_id", "eot_token_id", "eom_token_id", "unknown_token_id", "seperator_token_id",
    "padding_token_id", "mask_token_id", "fim_pre_token_id", "fim_suf_token_id", "fim_mid_token_id",
    "fim_pad_token_id", "fim_rep_token_id", "fim_sep_token_id", "prefix_token_id", "suffix_token_id",
    "middle_token_id")]
FLAG_KEYS = [f"tokenizer.ggml.{k}".encode() for k in (
    "add_bos_token", "add_eos_token", "add_sep_token", "add_space_prefix", "remove_extra_whitespaces",
    "normalizer.lowercase", "normalizer.strip_accents")]
MODELS = ["llama", "bert", "gpt2", "t5", "rwkv", "plamo2", "none", "no_vocab", "whitespace", "hybriddna",
          "gemma4", "unknown-model", ""]
PRES = ["default", "gpt-2", "llama3", "llama-bpe", "qwen2", "deepseek-llm", "falcon", "starcoder", "refact",
        "command-r", "tekken", "kimi-k2", "no-such-pre", ""]
ARCHES = ["llama", "gpt2", "bert", "t5", "clip", "gptj", "no-such-arch", ""]
INTERESTING_U64 = [0, 1, 2, 3, 7, 8, 255, 256, 2**16, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**62, 2**63 - 1,
                   2**63, 2**64 - 1]


def _interesting(rng: random.Random, near: int = 0) -> int:
    return rng.choice(INTERESTING_U64 + [max(near + d, 0) for d in (-2, -1, 1, 2)] + [rng.randrange(2**64)])


def _random_value(rng: random.Random, t: T) -> tuple:
    """A well-formed value of GGUF type ``t`` (arrays hold a few random scalars)."""
    if t == T.STRING:
        return (t, rng.choice([b"", b"x", b"llama", b"a\0b", bytes(rng.randrange(256) for _ in range(5))]))
    if t == T.ARRAY:
        it = rng.choice([T.UINT8, T.INT32, T.UINT32, T.FLOAT32, T.STRING])
        return (t, [_random_value(rng, it)[1] for _ in range(rng.randrange(4))], it)
    if t == T.BOOL:
        return (t, rng.random() < 0.5)
    if t in (T.FLOAT32, T.FLOAT64):
        return (t, rng.choice([0.0, -1.0, 1e30, math.nan, math.inf]))
    bits = {T.UINT8: 8, T.INT8: 8, T.UINT16: 16, T.INT16: 16, T.UINT32: 32, T.INT32: 32,
            T.UINT64: 64, T.INT64: 64}[t]
    v = rng.randrange(2**bits)
    if t in (T.INT8, T.INT16, T.INT32, T.INT64) and v >= 2**(bits - 1):
        v -= 2**bits
    return (t, v)


# --- header ---------------------------------------------------------------------------------
def header(doc: Doc, rng: random.Random) -> bytes:
    op = rng.randrange(5)
    if op == 0:
        doc.version = rng.choice([0, 1, 2, 4, 2**31, 2**32 - 1, 0x03000000])
    elif op == 1:
        doc.n_kv = _interesting(rng, len(doc.kvs))
    elif op == 2:
        doc.n_tensors = _interesting(rng, 0)
    elif op == 3:
        doc.magic = rng.choice([b"GGUF"[::-1], b"GGML", b"GGU\0", b"\0\0\0\0"])
    data = doc.to_bytes()
    if op == 4:  # truncated
        data = data[:rng.randrange(len(data))]
    return data


# --- metadata types and lengths ---------------------------------------------------------------
def kv_type(doc: Doc, rng: random.Random) -> bytes:
    kv = rng.choice(doc.kvs)
    if rng.random() < 0.6:  # well formed, wrong type
        kv.spec, kv.raw = _random_value(rng, rng.choice(list(T))), None
    else:  # the type tag itself, the payload left as it was
        payload = kv.payload()
        tag = rng.choice([rng.randrange(16), 2**32 - 1, 9])
        if payload[:4] == struct.pack("<I", T.ARRAY) and rng.random() < 0.5:  # the array's item type
            kv.raw = payload[:4] + struct.pack("<I", tag) + payload[8:]
        else:
            kv.raw = struct.pack("<I", tag) + payload[4:]
    return doc.to_bytes()


def kv_length(doc: Doc, rng: random.Random) -> bytes:
    kv = rng.choice(doc.kvs)
    payload = kv.payload()
    tag = struct.unpack_from("<I", payload)[0]
    if rng.random() < 0.2:  # the key's own length
        data = doc.to_bytes()
        at = data.find(struct.pack("<Q", len(kv.key)) + kv.key)
        return data[:at] + struct.pack("<Q", _interesting(rng, len(kv.key)) & (2**64 - 1)) + data[at + 8:]
    if tag == T.STRING:
        old = struct.unpack_from("<Q", payload, 4)[0]
        kv.raw = payload[:4] + struct.pack("<Q", _interesting(rng, old)) + payload[12:]
    elif tag == T.ARRAY:
        old = struct.unpack_from("<Q", payload, 8)[0]
        kv.raw = payload[:8] + struct.pack("<Q", _interesting(rng, old)) + payload[16:]
    else:  # a scalar cut short or padded: the rest of the file shifts
        kv.raw = payload[:-1] if rng.random() < 0.5 else payload + b"\0"
    return doc.to_bytes()


# --- token arrays -------------------------------------------------------------------------------
def _texts(doc: Doc) -> list[bytes]:
    return list(doc.find(TOKENS).spec[1])


def _set_texts(doc: Doc, texts: list[bytes]) -> None:
    doc.set(TOKENS, (T.ARRAY, texts, T.STRING))


def tokens(doc: Doc, rng: random.Random) -> bytes:
    texts = _texts(doc)
    i, j = rng.randrange(len(texts)), rng.randrange(len(texts))
    op = rng.randrange(10)
    if op == 0:  # a NUL inside a text: llama.cpp keeps what comes before it
        t = texts[i]
        k = rng.randrange(len(t) + 1)
        texts[i] = t[:k] + b"\0" + rng.choice([b"", b"X", t[k:]])
    elif op == 1:
        texts[i] = b""
    elif op == 2:
        texts[i] = texts[j]
    elif op == 3:  # a code point above U+10FFFF, or other invalid UTF-8
        texts[i] = texts[i] + rng.choice([b"\xf4\x90\x80\x80", b"\xf7\xbf\xbf\xbf", b"\xff", b"\xc0\x80",
                                          b"\xed\xa0\x80", b"\xe4\xb8"])
    elif op == 4:
        del texts[rng.randrange(len(texts)):]
    elif op == 5:
        texts = []
    elif op == 6:  # grown past scores/types
        texts += [b"extra%d" % k for k in range(rng.randrange(1, 4))]
    elif op == 7:
        texts[i] = rng.choice([b"<0x0A>", b"<0x", b"<0xZZ>", b"<0x4", b"<0x-1>", b"<0x 7>", b"\x00<0x41>"])
    elif op == 8:
        texts[i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
    else:
        texts[i] = texts[i] * rng.randrange(2, 200)
    _set_texts(doc, texts)
    return doc.to_bytes()


def token_types(doc: Doc, rng: random.Random) -> bytes:
    n = len(_texts(doc))
    op = rng.randrange(5)
    if op < 3:
        kv = doc.find(TYPES)
        types = list(kv.spec[1]) if kv is not None else [1] * n
        for _ in range(rng.randrange(1, 4)):
            types[rng.randrange(n)] = rng.choice([0, 1, 2, 3, 4, 5, 6, 6, 7, -1, 2**31 - 1])
        doc.set(TYPES, (T.ARRAY, types, T.INT32))
    elif op == 3:  # scores: short, odd values, or missing
        kv = doc.find(SCORES)
        scores = list(kv.spec[1]) if kv is not None else [0.0] * n
        choice = rng.randrange(3)
        if choice == 0:
            scores = scores[:rng.randrange(n + 1)]
        elif choice == 1:
            scores[rng.randrange(n)] = rng.choice([math.nan, math.inf, -math.inf, 1e38, -1e38])
        doc.set(SCORES, (T.ARRAY, scores, T.FLOAT32)) if choice < 2 else doc.remove(SCORES)
    else:  # types short or missing
        kv = doc.find(TYPES)
        if kv is None or rng.random() < 0.3:
            doc.remove(TYPES)
        else:
            doc.set(TYPES, (T.ARRAY, list(kv.spec[1])[:rng.randrange(n)], T.INT32))
    return doc.to_bytes()


# --- special ids and flags ------------------------------------------------------------------
def special_ids(doc: Doc, rng: random.Random) -> bytes:
    n = len(_texts(doc))
    for _ in range(rng.randrange(1, 4)):
        if rng.random() < 0.75:
            key = rng.choice(SPECIAL_KEYS)
            r = rng.random()
            if r < 0.6:
                doc.set(key, (T.UINT32, rng.choice([0, 1, 2, 3, n - 1, n, n + 1, 2**31, 2**32 - 1,
                                                    rng.randrange(n)])))
            elif r < 0.8:
                doc.set(key, _random_value(rng, rng.choice([T.INT32, T.UINT64, T.UINT16, T.STRING])))
            else:
                doc.remove(key)
        else:
            key = rng.choice(FLAG_KEYS)
            doc.set(key, (T.BOOL, rng.random() < 0.5) if rng.random() < 0.8 else
                    _random_value(rng, rng.choice([T.UINT8, T.INT32, T.STRING])))
    return doc.to_bytes()


# --- merges ----------------------------------------------------------------------------------
def merges(doc: Doc, rng: random.Random) -> bytes:
    kv = doc.find(MERGES)
    texts = _texts(doc)
    ms = list(kv.spec[1]) if kv is not None and kv.spec is not None else []
    op = rng.randrange(8)
    if op == 0 or not ms:  # merges from random token pairs (a vocab without merges gets some)
        ms += [rng.choice(texts) + b" " + rng.choice(texts) for _ in range(rng.randrange(1, 6))]
    elif op == 1:
        i = rng.randrange(len(ms))
        ms[i] = ms[i].replace(b" ", b"", 1)
    elif op == 2:
        i = rng.randrange(len(ms))
        k = rng.randrange(len(ms[i]) + 1)
        ms[i] = ms[i][:k] + b"\0" + ms[i][k:]
    elif op == 3:
        ms.insert(rng.randrange(len(ms) + 1), rng.choice(ms))
    elif op == 4:
        ms[rng.randrange(len(ms))] = rng.choice([b"", b" ", b"  ", b" a", b"a ", b"a  b"])
    elif op == 5:
        rng.shuffle(ms)
    elif op == 6:
        doc.remove(MERGES)
        return doc.to_bytes()
    else:
        doc.set(MERGES, _random_value(rng, rng.choice([T.UINT8, T.STRING, T.ARRAY])))
        return doc.to_bytes()
    doc.set(MERGES, (T.ARRAY, ms, T.STRING))
    return doc.to_bytes()


# --- tensor infos ----------------------------------------------------------------------------
def tensors(doc: Doc, rng: random.Random) -> bytes:
    """One to three tensor-info records, mostly valid, each with at most one bad field."""
    expected = 0
    names = [b"token_embd.weight", b"output.weight", b"blk.0.attn_q.weight"]
    for k in range(rng.randrange(1, 4)):
        ne = [rng.choice([1, 2, 32, 64, 256])]
        ne += [rng.choice([1, 2, 3]) for _ in range(rng.randrange(4))]
        ggml_type = rng.choice([0, 0, 1, 2, 8, 12, 30])
        name = names[k]
        bad = rng.randrange(8)
        if bad == 0:
            name = rng.choice([b"x" * rng.choice([63, 64, 100]), names[0], b"", b"w\0dup", names[k] + b"\0x"])
        elif bad == 1:
            ne = ne + [1] * rng.randrange(1, 3)
        elif bad == 2:
            ne[rng.randrange(len(ne))] = rng.choice([0, 2**63, 2**64 - 1, 2**40, 2**62, 3])
        elif bad == 3:
            ggml_type = rng.choice([4, 31, 36, 42, 43, 100, -1])
        from harness.tokenizer.gguf.reader import GGML_TYPES, tensor_nbytes
        blck, size = GGML_TYPES.get(ggml_type, (1, 1))
        try:
            nbytes = tensor_nbytes(tuple(ne[:4]), ggml_type) if blck and ne[0] % blck == 0 else 64
        except (KeyError, IndexError):
            nbytes = 64
        nbytes = min(nbytes, 1 << 20)
        offset = expected if bad != 4 else rng.choice([expected + 32, expected + 1, 2**64 - 32])
        doc.tensors.append(tensor_info(name, ne, ggml_type, offset))
        expected += -(-nbytes // 32) * 32
    data_len = expected if rng.randrange(4) else rng.choice([0, expected - 1, expected // 2])
    doc.data = bytes(rng.randrange(256) for _ in range(min(max(data_len, 0), 4096))) + b"\0" * max(
        0, max(data_len, 0) - 4096)
    return doc.to_bytes()


# --- well-known keys -------------------------------------------------------------------------
def keys(doc: Doc, rng: random.Random) -> bytes:
    op = rng.randrange(9)
    if op == 0:
        doc.set(b"tokenizer.ggml.model", (T.STRING, rng.choice(MODELS) + rng.choice(["", "", "\0junk"])))
    elif op == 1:
        doc.set(b"tokenizer.ggml.pre", (T.STRING, rng.choice(PRES) + rng.choice(["", "", "\0junk"])))
    elif op == 2:
        doc.set(b"general.architecture", (T.STRING, rng.choice(ARCHES) + rng.choice(["", "", "\0x"])))
    elif op == 3:
        doc.set(b"general.file_type", _random_value(rng, rng.choice([T.UINT32, T.UINT32, T.INT32, T.STRING,
                                                                       T.UINT8, T.UINT64])))
    elif op == 4:
        doc.set(b"general.name", rng.choice([(T.STRING, "phi-3 x"), (T.STRING, "modern-bert"),
                                             (T.STRING, "n\0phi3"), _random_value(rng, T.UINT32)]))
    elif op == 5:
        doc.set(rng.choice([b"split.count", b"split.no", b"general.alignment"]),
                _random_value(rng, rng.choice([T.UINT16, T.UINT32, T.UINT8])))
    elif op == 6:  # a key whose C string equals a real key: gguf_find_key finds the first
        kv = rng.choice(doc.kvs)
        twin = KV(kv.key + b"\0" + rng.choice([b"", b"x"]), _random_value(rng, rng.choice(list(T))))
        doc.kvs.insert(rng.randrange(len(doc.kvs) + 1), twin)
    elif op == 7:
        doc.kvs.remove(rng.choice(doc.kvs))
    else:
        doc.kvs.insert(rng.randrange(len(doc.kvs) + 1),
                       KV(rng.choice([b"", b"tokenizer.ggml.model", b"x.y", b"tokenizer.ggml.tokens"]),
                          _random_value(rng, rng.choice(list(T)))))
    return doc.to_bytes()


# --- plain byte damage -----------------------------------------------------------------------
def bytes_(doc: Doc, rng: random.Random) -> bytes:
    data = bytearray(doc.to_bytes())
    for _ in range(rng.randrange(1, 5)):
        at = rng.randrange(len(data))
        op = rng.randrange(3)
        if op == 0:
            data[at] = rng.randrange(256)
        elif op == 1:
            del data[at:at + rng.randrange(1, 9)]
        else:
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
    return bytes(data)


CLASSES: dict[str, Callable[[Doc, random.Random], bytes]] = {
    "header": header, "kv_type": kv_type, "kv_length": kv_length, "tokens": tokens,
    "token_types": token_types, "special_ids": special_ids, "merges": merges, "tensors": tensors,
    "keys": keys, "bytes": bytes_}


def mutate(cls: str, doc: Doc, rng: random.Random) -> bytes:
    """The bytes of ``doc`` (a fresh copy is mutated) after one mutation of class ``cls``."""
    return CLASSES[cls](doc.copy(), rng)
