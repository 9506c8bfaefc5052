"""Tiny hand-built vocabs for the load tests, and libllama's view of a loaded vocab.

``spm(**extra)`` / ``bpe(tokens, merges, **extra)`` give GGUF metadata (``None`` drops a
key); ``load(tmp_path, meta)`` writes it, loads our :class:`Vocab` and checks it field by
field against libllama (:func:`assert_matches_llama`); ``refused_by_both`` expects both
loaders to refuse it. ``with_text``/``with_type`` change one token of a fuzz seed.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from harness.conformance.needs import require
from harness.errors import VocabError
from harness.fuzz.seeds import SEEDS
from harness.tokenizer.gguf import GGUFValueType as T, Keys
from harness.tokenizer.gguf.writer import write_gguf
from harness.tokenizer.vocab import Vocab

K = Keys.Tokenizer
SPECIAL_SLOTS = ("bos", "eos", "eot", "sep", "pad", "mask", "fim_pre", "fim_suf", "fim_mid", "fim_pad",
                 "fim_rep", "fim_sep")


# --- libllama introspection (llama.h getters on the reference's vocab) ---------------------

class Introspect:
    """Read llama.cpp's loaded vocab through the public llama_vocab_* getters."""

    def __init__(self, ref):
        from reference.build import artifacts
        lib = ctypes.CDLL(str(artifacts().libllama))
        vp = ctypes.c_void_p
        sig = {"llama_vocab_get_attr": (ctypes.c_int, [vp, ctypes.c_int32]),
               "llama_vocab_get_text": (ctypes.c_char_p, [vp, ctypes.c_int32]),
               "llama_vocab_get_score": (ctypes.c_float, [vp, ctypes.c_int32]),
               "llama_vocab_is_eog": (ctypes.c_bool, [vp, ctypes.c_int32]),
               "llama_vocab_get_add_bos": (ctypes.c_bool, [vp]),
               "llama_vocab_get_add_eos": (ctypes.c_bool, [vp]),
               "llama_vocab_get_add_sep": (ctypes.c_bool, [vp])}
        sig.update({f"llama_vocab_{s}": (ctypes.c_int32, [vp]) for s in SPECIAL_SLOTS})
        for name, (res, args) in sig.items():
            getattr(lib, name).restype, getattr(lib, name).argtypes = res, args
        self.lib, self.vocab, self.n = lib, ref.handle, ref.n_vocab

    def special(self, slot: str) -> int | None:
        v = getattr(self.lib, f"llama_vocab_{slot}")(self.vocab)
        return None if v == -1 else v

    def flag(self, name: str) -> bool:
        return bool(getattr(self.lib, f"llama_vocab_get_{name}")(self.vocab))

    def column(self, what: str) -> list:
        f = getattr(self.lib, f"llama_vocab_{what}")
        return [f(self.vocab, i) for i in range(self.n)]


def assert_matches_llama(v: Vocab, ref) -> None:
    """Every field libllama exposes equals ours."""
    ll = Introspect(ref)
    assert v.n_vocab == ll.n
    assert {s: getattr(v, s) for s in SPECIAL_SLOTS} == {s: ll.special(s) for s in SPECIAL_SLOTS}
    assert (v.add_bos, v.add_eos, v.add_sep) == (ll.flag("add_bos"), ll.flag("add_eos"), ll.flag("add_sep"))
    attrs = ll.column("get_attr")
    bad = [(i, v.tokens[i], v.attrs[i], attrs[i]) for i in range(v.n_vocab) if v.attrs[i] != attrs[i]]
    assert not bad, f"{len(bad)} attrs differ, first: {bad[:5]}"
    texts = ll.column("get_text")  # a C string: stops at the first NUL
    bad = [i for i in range(v.n_vocab) if v.tokens[i].split(b"\0", 1)[0] != texts[i]]
    assert not bad, f"{len(bad)} texts differ, first ids: {bad[:5]}"
    assert np.array_equal(np.asarray(ll.column("get_score"), np.float32), v.scores)
    assert {i for i, e in enumerate(ll.column("is_eog")) if e} == set(v.eog)


# --- hand-built vocabs ----------------------------------------------------------------------

SPM_TOKENS = [b"<unk>", b"<s>", b"</s>", "▁a".encode(), b"a", "▁".encode(), b"<0x41>"]


def spm(**extra) -> dict:
    meta = {Keys.General.ARCHITECTURE: (T.STRING, "llama"),
            K.MODEL: (T.STRING, "llama"),
            K.TOKENS: (T.ARRAY, list(SPM_TOKENS), T.STRING),
            K.SCORES: (T.ARRAY, [0.0, 0.0, 0.0, -1.0, -2.0, -3.0, 0.0], T.FLOAT32),
            K.TOKEN_TYPE: (T.ARRAY, [2, 3, 3, 1, 1, 1, 6], T.INT32)}
    meta.update(extra)
    return {k: v for k, v in meta.items() if v is not None}


def bpe(tokens, merges=None, **extra) -> dict:
    meta = {Keys.General.ARCHITECTURE: (T.STRING, "llama"), K.MODEL: (T.STRING, "gpt2"),
            K.TOKENS: (T.ARRAY, tokens, T.STRING),
            K.MERGES: (T.ARRAY, merges if merges is not None else [b"a b"], T.STRING)}
    meta.update(extra)
    return {k: v for k, v in meta.items() if v is not None}


def load(tmp_path, meta, *, compare=True) -> Vocab:
    """Our Vocab of ``meta``; also checked against libllama when compare and it is built."""
    p = tmp_path / "v.gguf"
    write_gguf(p, meta)
    v = Vocab.from_gguf(p)
    if compare:
        from reference.inproc import InProcessReference
        assert_matches_llama(v, require(lambda: InProcessReference(p)))
    return v


def refused_by_both(tmp_path, meta, exc=VocabError, match=None):
    """Our loader raises ``exc``; llama.cpp refuses too (it throws, it does not abort)."""
    p = tmp_path / "bad.gguf"
    write_gguf(p, meta)
    with pytest.raises(exc, match=match):
        Vocab.from_gguf(p)
    from reference.inproc import InProcessReference
    from harness.errors import ReferenceFailure
    with pytest.raises(ReferenceFailure):
        require(lambda: InProcessReference(p))


# --- one token of a fuzz seed changed ------------------------------------------------------

TOKENS = b"tokenizer.ggml.tokens"


def texts_of(doc):
    return list(doc.find(TOKENS).spec[1])


def with_text(seed: str, i: int, text: bytes):
    doc = SEEDS[seed]()
    texts = texts_of(doc)
    texts[i] = text
    doc.set(TOKENS, (T.ARRAY, texts, T.STRING))
    return doc


def with_type(seed: str, i: int, token_type: int, text: bytes | None = None):
    doc = SEEDS[seed]() if text is None else with_text(seed, i, text)
    types = list(doc.find(b"tokenizer.ggml.token_type").spec[1])
    types[i] = token_type
    doc.set(b"tokenizer.ggml.token_type", (T.ARRAY, types, T.INT32))
    return doc
