"""Tiny well-formed vocabs, one per vocab type, that llama.cpp and the harness both load.

Each is small (a few hundred tokens) so a fuzz case loads in milliseconds on both
sides, and holds what the mutations aim at: BYTE tokens, control tokens, merges,
special ids, a user-defined token.

>>> sorted(SEEDS)
['bpe', 'spm', 'ugm', 'wpm']
>>> SEEDS["spm"]().find(b"tokenizer.ggml.model").spec
(<GGUFValueType.STRING: 8>, 'llama')
"""

from __future__ import annotations

from harness.fuzz.doc import KV, Doc
from harness.tokenizer.gguf.keys import GGUFValueType as T
from harness.tokenizer.unicode import BYTE_TO_UNICODE

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
_WORDS = ["Hello", "world", "hello", "a", "b", "ab", "the", "he", "llo", "wor", "ld", "中", "文", "é"]


def _doc(arch: str, model: str, tokens: list, types: list[int], scores: list[float] | None,
         extra: list[tuple[str, tuple]]) -> Doc:
    kvs = [KV(b"general.architecture", (T.STRING, arch)), KV(b"general.name", (T.STRING, f"fuzz-{model}")),
           KV(b"tokenizer.ggml.model", (T.STRING, model)),
           KV(b"tokenizer.ggml.tokens", (T.ARRAY, [t.encode() if isinstance(t, str) else t for t in tokens],
                                         T.STRING)),
           KV(b"tokenizer.ggml.token_type", (T.ARRAY, types, T.INT32))]
    if scores is not None:
        kvs.append(KV(b"tokenizer.ggml.scores", (T.ARRAY, scores, T.FLOAT32)))
    kvs += [KV(k.encode(), v) for k, v in extra]
    return Doc(kvs)


def spm() -> Doc:
    pieces = ["▁", "▁" + "Hello", "▁world", "▁w", "orld", "▁a", "▁b", "ell", "el", "lo", "▁the", "<user>"]
    pieces += sorted({c for w in _WORDS for c in w})
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + pieces
    types = [UNKNOWN, CONTROL, CONTROL] + [BYTE] * 256 + [USER_DEFINED if p == "<user>" else NORMAL
                                                            for p in pieces]
    scores = [0.0] * 259 + [-float(i % 17) - 1.0 for i in range(len(pieces))]
    return _doc("llama", "llama", tokens, types, scores,
                [("tokenizer.ggml.bos_token_id", (T.UINT32, 1)), ("tokenizer.ggml.eos_token_id", (T.UINT32, 2)),
                 ("tokenizer.ggml.unknown_token_id", (T.UINT32, 0)),
                 ("tokenizer.ggml.add_bos_token", (T.BOOL, True))])


def bpe() -> Doc:
    g = BYTE_TO_UNICODE[ord(" ")]  # 'Ġ'
    merges = [f"{g} w", "o r", "l d", f"{g}w or", f"{g}wor ld", "H e", "l l", "ll o", "He llo",
              f"{g} a", "a b", f"{g} b", "t h", "th e", f"{g} the"]
    merged = [m.replace(" ", "") for m in merges]
    tokens = list(BYTE_TO_UNICODE) + list(dict.fromkeys(merged)) + ["<|endoftext|>", "<|user|>"]
    types = [NORMAL] * (len(tokens) - 2) + [CONTROL, USER_DEFINED]
    return _doc("gpt2", "gpt2", tokens, types, None,
                [("tokenizer.ggml.pre", (T.STRING, "gpt-2")),
                 ("tokenizer.ggml.merges", (T.ARRAY, [m.encode() for m in merges], T.STRING)),
                 ("tokenizer.ggml.bos_token_id", (T.UINT32, len(tokens) - 2)),
                 ("tokenizer.ggml.eos_token_id", (T.UINT32, len(tokens) - 2))])


def wpm() -> Doc:
    words = ["▁hello", "▁world", "▁a", "▁b", "▁ab", "▁the", "▁he", "llo", "wor", "ld", "▁中", "▁文", "▁é", "▁!"]
    chars = sorted({c for w in _WORDS for c in w.lower()})
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words + ["▁" + c for c in chars] + chars
    tokens = list(dict.fromkeys(tokens))
    types = [CONTROL, UNKNOWN, CONTROL, CONTROL, CONTROL] + [NORMAL] * (len(tokens) - 5)
    return _doc("bert", "bert", tokens, types, None,
                [("tokenizer.ggml.unknown_token_id", (T.UINT32, 1)), ("tokenizer.ggml.bos_token_id", (T.UINT32, 2)),
                 ("tokenizer.ggml.seperator_token_id", (T.UINT32, 3)),
                 ("tokenizer.ggml.padding_token_id", (T.UINT32, 0)), ("tokenizer.ggml.mask_token_id", (T.UINT32, 4))])


def ugm() -> Doc:
    pieces = ["▁", "▁Hello", "▁world", "▁a", "▁b", "ab", "ell", "lo", "▁the", "<abc>"] + \
        sorted({c for w in _WORDS for c in w})
    tokens = ["<pad>", "</s>", "<unk>"] + pieces
    types = [CONTROL, CONTROL, UNKNOWN] + [USER_DEFINED if p == "<abc>" else NORMAL for p in pieces]
    scores = [0.0, 0.0, 0.0] + [-1.0 - (i % 7) * 0.5 for i in range(len(pieces))]
    return _doc("t5", "t5", tokens, types, scores,
                [("tokenizer.ggml.eos_token_id", (T.UINT32, 1)), ("tokenizer.ggml.unknown_token_id", (T.UINT32, 2)),
                 ("tokenizer.ggml.padding_token_id", (T.UINT32, 0)),
                 ("tokenizer.ggml.add_space_prefix", (T.BOOL, True))])


SEEDS = {"spm": spm, "bpe": bpe, "wpm": wpm, "ugm": ugm}

# What each accepted case is asked: encode texts (str, and raw bytes that are not UTF-8)
# under two flag combinations, and the piece of every id the vocab's first tokens hold.
PROBE_TEXTS: list[str | bytes] = ["Hello world", " a  ab b\n", "<s>Hello</s><user><abc>", "héllo 中文 🙂 the!",
                                  "<|endoftext|>he llo", b"\xffab\xe4\xb8", ""]
PROBE_FLAGS = [(False, False), (True, True)]
