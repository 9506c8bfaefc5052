"""The vocabulary model: everything llama.cpp derives from a GGUF when it loads a vocab.

:meth:`Vocab.from_gguf` replays ``llama_vocab::impl::load`` (src/llama-vocab.cpp)
at the pinned commit, step by step and in the same order, because the order
matters (e.g. the EOG rules force CONTROL, which then puts a token into the
special-token cache). Anything llama.cpp refuses raises :class:`VocabError`.

>>> v = Vocab.from_gguf("vocabs/ggml-vocab-llama-spm.gguf")   # doctest: +SKIP
>>> v.vocab_type, v.bos, v.add_bos, v.tokens[1]                 # doctest: +SKIP
('spm', 1, True, b'<s>')
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any

import numpy as np

from harness.tokenizer import pins
from harness.tokenizer._libstdcxx import hash_spans, libstdcxx_sort, std_hash, unordered_map_order
from harness.errors import VocabError
from harness.tokenizer.gguf import GGUFReader, GGUFValueType, Keys
from harness.tokenizer.merges import LazyMergeRanks
from harness.tokenizer.pretypes import (ARCHITECTURES, AUTO_SPECIAL_TEXTS, EOG_TEXTS, FORCED_USER_DEFINED_TEXTS,
                              PRE_FLAGS, pre_type_of)

# llama_token_attr bits
UNDEFINED, UNKNOWN, UNUSED, NORMAL, CONTROL = 0, 1, 2, 4, 8
USER_DEFINED, BYTE, NORMALIZED, LSTRIP, RSTRIP, SINGLE_WORD = 16, 32, 64, 128, 256, 512

# LLAMA_TOKEN_TYPE_* (index) -> attr; any other value -> UNDEFINED
_TYPE_TO_ATTR = np.array([UNDEFINED, NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE], np.int64)

K = Keys.Tokenizer
T = GGUFValueType
_DNA_KMER_MARKER = b"\xee\x80\x80"

# tokenizer.ggml.model -> (vocab_type, default special ids)
_MODELS: dict[str, tuple[str, dict[str, int | None]]] = {
    "llama": ("spm", dict(bos=1, eos=2, unk=0, sep=None, pad=None, mask=None)),
    "bert": ("wpm", dict(bos=101, eos=None, unk=100, sep=102, pad=0, mask=103)),
    "gpt2": ("bpe", dict(bos=11, eos=11, unk=None, sep=None, pad=None, mask=None)),
    "hybriddna": ("bpe", dict(bos=11, eos=11, unk=None, sep=None, pad=None, mask=None)),
    "whitespace": ("bpe", dict(bos=11, eos=11, unk=None, sep=None, pad=None, mask=None)),
    "t5": ("ugm", dict(bos=None, eos=1, unk=2, sep=None, pad=0, mask=None)),
    "rwkv": ("rwkv", dict(bos=None, eos=None, unk=None, sep=None, pad=None, mask=None)),
    "plamo2": ("plamo2", dict(bos=1, eos=2, unk=0, sep=None, pad=3, mask=None)),
    "test": ("test", dict(bos=None, eos=None, unk=None, sep=None, pad=None, mask=None)),  # pins: vocab_type_test
    "gemma4": ("bpe", dict(bos=None, eos=None, unk=None, sep=None, pad=None, mask=None)),
    "none": ("none", dict(bos=None, eos=None, unk=None, sep=None, pad=None, mask=None)),
    "no_vocab": ("none", dict(bos=None, eos=None, unk=None, sep=None, pad=None, mask=None)),
}

# per-vocab_type flag defaults (impl defaults, then the type's block in load)
_BASE_FLAGS = dict(add_space_prefix=False, add_bos=False, add_eos=False, add_sep=False,
                   ignore_merges=False, clean_spaces=False, remove_extra_whitespaces=False,
                   escape_whitespaces=True, lowercase=True)
_TYPE_FLAGS: dict[str, dict[str, bool]] = {
    "spm": dict(add_space_prefix=True, clean_spaces=False, add_bos=True, add_eos=False),
    "wpm": dict(add_space_prefix=False, clean_spaces=True, add_bos=True, add_eos=False, add_sep=True),
    "bpe": dict(add_space_prefix=False, escape_whitespaces=False, clean_spaces=True),
    "ugm": dict(add_bos=False, add_eos=True),
    "rwkv": dict(add_space_prefix=False, clean_spaces=False, add_bos=False, add_eos=False),
    "plamo2": {}, "none": {}, "test": {},
}

# special-id keys in llama.cpp's read order; deprecated FIM keys last (so they win)
_ID_KEYS = (("bos", K.BOS_ID), ("eos", K.EOS_ID), ("eot", K.EOT_ID), ("eom", K.EOM_ID),
            ("unk", K.UNK_ID), ("sep", K.SEP_ID), ("pad", K.PAD_ID), ("mask", K.MASK_ID),
            ("fim_pre", K.FIM_PRE_ID), ("fim_suf", K.FIM_SUF_ID), ("fim_mid", K.FIM_MID_ID),
            ("fim_pad", K.FIM_PAD_ID), ("fim_rep", K.FIM_REP_ID), ("fim_sep", K.FIM_SEP_ID),
            ("fim_pre", K.PREFIX_ID), ("fim_suf", K.SUFFIX_ID), ("fim_mid", K.MIDDLE_ID))


@dataclass(frozen=True, eq=False)
class Vocab:
    """A loaded vocab, field for field what llama.cpp holds after ``load``.

    ``tokens[i]`` is token i's text as llama.cpp stores it (bytes); ``attrs[i]``
    its ``llama_token_attr`` bitmask after every load-time override.
    """

    path: str | None
    model: str
    vocab_type: str
    pre: str | None
    pre_type: str
    tokens: tuple[bytes, ...]
    token_to_id: dict[bytes, int]
    scores: np.ndarray
    attrs: tuple[int, ...]
    merge_ranks: Mapping[tuple[bytes, bytes], int]  # a LazyMergeRanks for BPE vocabs
    bos: int | None
    eos: int | None
    eot: int | None
    eom: int | None
    unk: int | None
    sep: int | None
    pad: int | None
    mask: int | None
    fim_pre: int | None
    fim_suf: int | None
    fim_mid: int | None
    fim_pad: int | None
    fim_rep: int | None
    fim_sep: int | None
    add_bos: bool
    add_eos: bool
    add_sep: bool
    add_space_prefix: bool
    remove_extra_whitespaces: bool
    clean_spaces: bool
    escape_whitespaces: bool
    ignore_merges: bool
    lowercase: bool
    strip_accents: bool
    special_cache: tuple[int, ...]
    eog: frozenset[int]
    max_token_len: int
    precompiled_charsmap: bytes
    general_name: str | None
    architecture: str | None
    n_token_types: int = 0
    suppress_tokens: tuple[int, ...] = ()
    # {id: its attr by the GGUF's token_type} for each token whose type load changes by its text
    type_overrides: Mapping[int, int] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def n_vocab(self) -> int:
        """Number of tokens (``llama_vocab_n_tokens``)."""
        return len(self.tokens)

    @classmethod
    def from_gguf(cls, path: str | os.PathLike) -> "Vocab":
        """Load a vocab from a GGUF file with llama.cpp's rules.

        >>> Vocab.from_gguf("vocabs/ggml-vocab-qwen2.gguf").pre_type   # doctest: +SKIP
        'QWEN2'
        """
        with GGUFReader(path) as reader:
            return cls.from_reader(reader)

    @classmethod
    def from_reader(cls, reader: GGUFReader) -> "Vocab":
        """Load a vocab from an open :class:`GGUFReader` (see :meth:`from_gguf`)."""
        return cls(**_Loader(reader).run())

    def __repr__(self) -> str:
        return (f"Vocab({os.path.basename(self.path or '?')!r}, vocab_type={self.vocab_type!r}, "
                f"pre_type={self.pre_type!r}, n_vocab={self.n_vocab})")


class _Loader:
    """Replays ``llama_vocab::impl::load`` step by step on a reader."""

    def __init__(self, reader: GGUFReader):
        self.r = reader

    # -- strictly typed metadata access (llama_model_loader::get_key) ----------
    def get(self, key: str, vtype: GGUFValueType, item_type: GGUFValueType | None = None) -> Any:
        """The value of ``key`` as llama.cpp reads it: found by C-string key, type-checked,
        a string cut at its first NUL (llama.cpp copies it from ``c_str()``)."""
        f = self.r.find(key)
        if f is None:
            return None
        if f.type != vtype or (item_type is not None and f.item_type not in
                               ((item_type,) if isinstance(item_type, GGUFValueType) else item_type)):
            want = vtype.name if item_type is None else f"ARRAY of {_names(item_type)}"
            got = f.type.name if f.item_type is None else f"ARRAY of {f.item_type.name}"
            raise VocabError(f"{self.r.path}: key {key!r} has GGUF type {got} but llama.cpp expects "
                             f"{want}; re-convert the model or fix the key with rewrite_metadata")
        return f.value.split("\0", 1)[0] if vtype == T.STRING else f.value

    def fail(self, msg: str) -> VocabError:
        return VocabError(f"{self.r.path}: {msg}")

    # -- the steps, in llama.cpp's order ---------------------------------------
    def run(self) -> dict[str, Any]:
        self.check_file()
        self.read_model()
        if self.vocab_type == "none":
            return self.no_vocab()
        self.read_tokens()
        self.file_attrs = list(self.attrs)  # before load's text rules: Vocab.type_overrides
        self.read_special_ids()
        self.read_flags()
        self.auto_detect_specials()
        self.build_eog()
        attrs = np.asarray(self.attrs, np.int64)
        special = np.flatnonzero(attrs & (CONTROL | USER_DEFINED | UNKNOWN)).tolist()
        cache = libstdcxx_sort(special, {i: len(self.tokens[i]) for i in special})
        self.check_pieces()
        self.apply_strip_attrs(cache)
        return self.fields(cache)

    def check_file(self) -> None:
        """What llama.cpp refuses before it reads the vocab: GGUF features its reader lacks,
        and an architecture it cannot create a model object for."""
        for key in self.r:
            if self.r.field(key).item_type == T.ARRAY:
                raise self.fail(f"key {key!r} is an array of arrays: llama.cpp's GGUF reader refuses "
                                "the whole file (\"invalid GGUF type 9\"); remove the key")
        arch = self.get(Keys.General.ARCHITECTURE, T.STRING)
        self.get("general.file_type", T.UINT32)  # llama_model_loader reads both, type-checked
        n_split = self.get("split.count", T.UINT16)
        if n_split is not None and n_split > 1:
            raise self.fail(f"split.count is {n_split}: this is one part of a split model, and llama.cpp "
                            "then needs split.no and the other parts; merge the parts with "
                            "llama-gguf-split --merge")
        if arch not in ARCHITECTURES:
            why = {None: "is missing", "clip": "is 'clip' (CLIP cannot be used as main model)",
                   "gptj": "is 'gptj', which llama.cpp names but does not implement (it aborts)"}
            raise self.fail(f"general.architecture {why.get(arch, f'{arch!r} is unknown')}: llama.cpp refuses "
                            "to load the file (\"unknown model architecture\"); set it to the model's "
                            "architecture, e.g. 'llama', with harness.tokenizer.gguf.writer.rewrite_metadata")

    def read_model(self) -> None:
        model = self.get(K.MODEL, T.STRING)
        if model is None:
            raise self.fail(f"key {K.MODEL!r} is missing: this GGUF has no tokenizer")
        if model not in _MODELS or (model == "test" and not pins.has("vocab_type_test")):
            raise self.fail(f"unknown tokenizer model {model!r} (llama.cpp: \"unknown tokenizer\"); "
                            f"known: {', '.join(sorted(_MODELS))}")
        self.model = model
        self.vocab_type, defaults = _MODELS[model]
        self.ids: dict[str, int | None] = {**defaults, "eot": None, "eom": None, "fim_pre": None,
                                           "fim_suf": None, "fim_mid": None, "fim_pad": None,
                                           "fim_rep": None, "fim_sep": None}
        self.pre = self.get(K.PRE, T.STRING)
        self.n_token_types = self.get(K.TOKEN_TYPE_COUNT, T.UINT32) or 0
        self.flags = {**_BASE_FLAGS, **_TYPE_FLAGS[self.vocab_type]}
        self.pre_type = "DEFAULT"
        if self.vocab_type == "none":  # llama.cpp returns from load() right here
            return
        if self.vocab_type == "wpm":
            self.flags["add_sep"] = True
        self.merge_ranks = self.read_merges() if self.vocab_type == "bpe" else {}
        self.charsmap = self.read_charsmap() if model == "t5" else b""
        effective_pre = "gemma4" if model == "gemma4" else self.pre  # llama.cpp overwrites tokenizer_pre
        if self.vocab_type == "bpe":
            self.pre_type = pre_type_of(effective_pre)
            for name, value in PRE_FLAGS.get(effective_pre or "default", {}).items():
                if name == "bos_null":
                    self.ids["bos"] = None
                else:
                    self.flags[name] = value
        for flag, key in (("add_space_prefix", K.ADD_PREFIX), ("remove_extra_whitespaces", K.REMOVE_EXTRA_WS)):
            v = self.get(key, T.BOOL)
            if v is not None:
                self.flags[flag] = v

    def no_vocab(self) -> dict[str, Any]:
        """model 'none'/'no_vocab': ``{arch}.vocab_size`` dummy tokens, nothing else is read."""
        arch = self.get(Keys.General.ARCHITECTURE, T.STRING)
        n = (self.get(f"{arch}.vocab_size", T.UINT32) or 0) if arch else 0
        self.tokens = self.keys = [b""] * n
        self.token_to_id, self.merge_ranks, self.charsmap = {}, {}, b""
        self.scores, self.attrs = np.zeros(n, np.float32), [0] * n
        self.file_attrs = self.attrs
        self.max_token_len, self.eog, self.suppress = 0, frozenset(), ()
        self.flags["strip_accents"] = self.flags["lowercase"]
        self.general_name, self.architecture = None, arch
        return self.fields([])

    def read_merges(self) -> dict[tuple[bytes, bytes], int]:
        if self.r.find(K.MERGES) is None:
            if self.model != "gemma4" and self.pre == "kimi-k2":
                return {}
            raise self.fail(f"key {K.MERGES!r} is missing (llama.cpp: \"cannot find tokenizer merges\")")
        self.get(K.MERGES, T.ARRAY, T.STRING)  # type check only
        return LazyMergeRanks(self.r.find(K.MERGES).spans())

    def read_charsmap(self) -> bytes:
        f = self.r.find(K.PRECOMPILED_CHARSMAP)
        if f is None:
            return b""
        blob = self.get(K.PRECOMPILED_CHARSMAP, T.ARRAY, (T.INT8, T.UINT8))
        data = blob.tobytes()
        if len(data) < 4:
            raise self.fail("precompiled_charsmap too small for xcda_blob_size header")
        if int.from_bytes(data[:4], "little") + 4 >= len(data):
            raise self.fail("Index out of array bounds in precompiled charsmap")
        return data

    def read_tokens(self) -> None:
        toks = self.get(K.TOKENS, T.ARRAY, T.STRING)
        if toks is None:
            raise self.fail(f"key {K.TOKENS!r} is missing (llama.cpp: \"cannot find tokenizer vocab\")")
        n = len(toks)
        if n == 0 and self.vocab_type in ("wpm", "ugm"):  # (SPM and BPE load, and fail later)
            raise self.fail(f"key {K.TOKENS!r} is an empty array: llama.cpp refuses a "
                            f"{self.vocab_type.upper()} vocab without tokens; re-convert the model")
        score_types = (T.FLOAT32, T.INT32) if pins.has("int32_scores") else T.FLOAT32  # harness.tokenizer.pins
        self.scores = self.per_token_array(K.SCORES, score_types, n, np.float32, 0.0)
        types = self.per_token_array(K.TOKEN_TYPE, T.INT32, n, np.int64, 1)
        lut = np.where((types >= 0) & (types < len(_TYPE_TO_ATTR)), types, 0)
        attrs = np.where((types >= 0) & (types < len(_TYPE_TO_ATTR)), _TYPE_TO_ATTR[lut], UNDEFINED)
        self.attrs: list[int] = attrs.tolist()
        tokens = list(toks)
        if any(b"\0" in t for t in tokens):  # llama.cpp copies each text from c_str()
            tokens = [t.split(b"\0", 1)[0] for t in tokens]
        if not all(tokens):
            for i in (i for i, t in enumerate(tokens) if not t):
                tokens[i] = b"[EMPTY_%d]" % i
        self.token_to_id = dict(zip(tokens, range(n)))
        if len(self.token_to_id) != n:
            raise self.fail(f"duplicate token text {_first_duplicate(tokens)!r}: llama.cpp aborts on "
                            "GGML_ASSERT(id_to_token.size() == token_to_id.size())")
        self.max_token_len = max(map(len, tokens), default=0)
        self.keys = list(tokens)
        if self.model == "hybriddna" and b"<oov>" in self.token_to_id:
            m = _DNA_KMER_MARKER
            for i in range(self.token_to_id[b"<oov>"] + 1, n):
                if len(tokens[i]) > len(m) and tokens[i].endswith(m):
                    tokens[i] = tokens[i][:-len(m)]
        self.tokens = tokens

    def check_pieces(self) -> None:
        """What building ``cache_token_to_piece`` (every token's piece, at load) throws or
        aborts on: a BYTE token in a WPM vocab (token_to_byte has no WPM case), a BYTE
        token text shorter than 3 bytes (``substr(3, 2)``), and in byte-level BPE a NORMAL
        text holding a code point above U+10FFFF (``unicode_cpt_to_utf8``)."""
        vt, attrs, tokens = self.vocab_type, self.attrs, self.tokens
        if vt in ("spm", "ugm", "bpe", "wpm"):
            special = UNKNOWN | CONTROL | USER_DEFINED | NORMAL  # these branches come first
            for i in np.flatnonzero(np.asarray(attrs, np.int64) & BYTE).tolist():
                if attrs[i] & special:
                    continue
                if vt == "wpm":
                    raise self.fail(f"token {i} ({tokens[i]!r}) is a BYTE token in a WPM vocab: llama.cpp "
                                    "aborts while loading it (token_to_byte has no WPM case); "
                                    "give it another tokenizer.ggml.token_type")
                if len(tokens[i]) < 3:
                    raise self.fail(f"BYTE token {i} text {tokens[i]!r} is shorter than 3 bytes: llama.cpp "
                                    "throws std::out_of_range building its piece (substr(3, 2)); "
                                    "BYTE texts look like <0x0A>")
        if vt == "bpe" and not self.flags["escape_whitespaces"]:
            normal = np.flatnonzero(np.asarray(attrs, np.int64) & NORMAL).tolist()
            joined = b"\0".join(tokens[i] for i in normal)  # NUL cannot be part of a sequence
            hit = _ABOVE_UNICODE.search(joined)
            if hit is not None:
                i = normal[joined.count(b"\0", 0, hit.start())]
                raise self.fail(f"token {i} ({tokens[i]!r}) holds a code point above U+10FFFF: llama.cpp "
                                "throws \"invalid codepoint\" building its piece (llama_decode_text)")

    def per_token_array(self, key, vtype, n, dtype, default) -> np.ndarray:
        arr = self.get(key, T.ARRAY, vtype)
        if arr is None:
            return np.full(n, default, dtype)
        if len(arr) < n:
            raise self.fail(f"Index out of array bounds for {key} ({len(arr)} < {n})")
        return np.asarray(arr[:n], dtype)

    def read_special_ids(self) -> None:
        n = len(self.tokens)
        for slot, key in _ID_KEYS:
            cur = self.ids[slot]
            if cur is not None and cur >= n:  # default out of range -> disabled
                self.ids[slot] = cur = None
            new = self.get(key, T.UINT32)
            if new is not None and new < n:  # out-of-range value: warning, default kept
                self.ids[slot] = new

    def read_flags(self) -> None:
        for flag, key in (("add_bos", K.ADD_BOS), ("add_eos", K.ADD_EOS), ("add_sep", K.ADD_SEP)):
            v = self.get(key, T.BOOL)
            if v is not None:
                self.flags[flag] = v
        if self.pre_type == "GEMMA4":
            self.flags["add_bos"] = True
        lc = self.get(K.NORMALIZER_LOWERCASE, T.BOOL)
        if lc is not None:
            self.flags["lowercase"] = lc
        sa = self.get(K.NORMALIZER_STRIP_ACCENTS, T.BOOL)
        self.flags["strip_accents"] = self.flags["lowercase"] if sa is None else sa
        sup = self.get(K.SUPPRESS_TOKENS, T.ARRAY, T.INT32)
        n = len(self.tokens)
        self.suppress = tuple(int(i) for i in sup if 0 <= i < n) if sup is not None else ()

    def auto_detect_specials(self) -> None:
        """EOT/EOM/FIM by text, then CONTROL+'unused' -> UNUSED."""
        found = {slot: [self.token_to_id[t] for t in texts if t in self.token_to_id]
                 for slot, texts in AUTO_SPECIAL_TEXTS.items() if self.ids[slot] is None}
        ambiguous = {i for ids in found.values() if len(ids) > 1 for i in ids}
        # Which candidate wins depends on std::unordered_map iteration order; only
        # simulate it (costly) when a slot really has several candidates.
        order = unordered_map_order(self.key_hashes(), ambiguous) if ambiguous else {}
        for slot, ids in found.items():
            if ids:
                tid = min(ids, key=lambda i: order.get(i, 0))
                self.ids[slot] = tid
                self.attrs[tid] |= CONTROL
        control = np.flatnonzero(np.asarray(self.attrs, np.int64) & CONTROL).tolist()
        for i in control:
            # strstr on c_str(): the search stops at an embedded NUL
            if b"unused" in self.tokens_key(i).split(b"\0", 1)[0]:
                self.attrs[i] |= UNUSED

    def key_hashes(self) -> np.ndarray:
        """std::hash of every token_to_id key (from the file's spans when no text was replaced)."""
        spans = self.r.find(K.TOKENS).spans()
        if spans is not None and self.keys == spans.tolist():
            return hash_spans(spans.region, spans.starts, spans.ends - spans.starts)
        return std_hash(self.keys)

    def tokens_key(self, i: int) -> bytes:
        """Text as stored in token_to_id (differs from tokens[i] only for hybriddna k-mers)."""
        return self.keys[i]

    def build_eog(self) -> None:
        ids, attrs, t2i = self.ids, self.attrs, self.token_to_id
        eog = {ids[s] for s in ("fim_pad", "fim_rep", "fim_sep") if ids[s] is not None}
        for text in EOG_TEXTS:
            if text in t2i:
                eog.add(t2i[text])
                attrs[t2i[text]] |= CONTROL
        for text in FORCED_USER_DEFINED_TEXTS:
            if text in t2i:
                attrs[t2i[text]] = USER_DEFINED
        eog |= {ids[s] for s in ("eos", "eot", "eom") if ids[s] is not None}
        texts = {self.tokens[i]: i for i in eog}
        has = texts.__contains__
        if has(b"<|end|>") and ((has(b"<|return|>") and (has(b"<|call|>") or has(b"<|calls|>")))
                                or ((has(b"<|call|>") or has(b"<|calls|>")) and has(b"<|flush|>"))):
            eog.discard(texts[b"<|end|>"])
            attrs[texts[b"<|end|>"]] = USER_DEFINED
        if (has(b"<|tool_response>") or (has(b"<|plamo:eos|>") and pins.has("plamo_eos_keeps_s_normal"))) \
                and has(b"</s>"):
            eog.discard(texts[b"</s>"])
            attrs[texts[b"</s>"]] = NORMAL
        self.eog = frozenset(eog)

    def apply_strip_attrs(self, cache: list[int]) -> None:
        name = self.get(Keys.General.NAME, T.STRING)
        arch = self.get(Keys.General.ARCHITECTURE, T.STRING)
        self.general_name, self.architecture = name, arch
        raw_pre = self.pre or ""
        lname = (name or "").translate(_ASCII_LOWER)  # std::tolower in the C locale
        t2i = self.token_to_id
        if any(s in raw_pre for s in ("jina-v2-de", "jina-v2-es", "jina-v2-code")) or \
                any(s in (arch or "") for s in ("nomic-bert-moe", "jina-bert-v3")):
            if b"<mask>" in t2i:
                self.attrs[t2i[b"<mask>"]] |= LSTRIP
        elif "phi-3" in lname or "phi3" in lname:
            for i in cache:
                self.attrs[i] |= RSTRIP
            for text, on in ((b"</s>", True), (b"<unk>", False), (b"<s>", False), (b"<|endoftext|>", False)):
                if text not in t2i:
                    raise self.fail(f"general.name {name!r} selects the phi-3 rules but token {text!r} "
                                    "is missing (llama.cpp throws std::out_of_range)")
                i = t2i[text]
                self.attrs[i] = self.attrs[i] | RSTRIP if on else self.attrs[i] & ~RSTRIP
        elif "modern-bert" in lname and b"[MASK]" in t2i:
            self.attrs[t2i[b"[MASK]"]] |= LSTRIP

    def fields(self, cache: list[int]) -> dict[str, Any]:
        f = self.flags
        return dict(
            path=self.r.path, model=self.model, vocab_type=self.vocab_type, pre=self.pre,
            pre_type=self.pre_type, tokens=tuple(self.tokens), token_to_id=self.token_to_id,
            scores=self.scores, attrs=tuple(self.attrs), merge_ranks=self.merge_ranks,
            **self.ids,
            add_bos=f["add_bos"], add_eos=f["add_eos"], add_sep=f["add_sep"],
            add_space_prefix=f["add_space_prefix"], remove_extra_whitespaces=f["remove_extra_whitespaces"],
            clean_spaces=f["clean_spaces"], escape_whitespaces=f["escape_whitespaces"],
            ignore_merges=f["ignore_merges"], lowercase=f["lowercase"], strip_accents=f["strip_accents"],
            special_cache=tuple(cache), eog=self.eog, max_token_len=self.max_token_len,
            precompiled_charsmap=self.charsmap, general_name=self.general_name,
            architecture=self.architecture, n_token_types=self.n_token_types,
            suppress_tokens=self.suppress,
            type_overrides={i: self.file_attrs[i] for i in np.flatnonzero((np.asarray(
                self.file_attrs, np.int64) ^ np.asarray(self.attrs, np.int64)) & ~(UNUSED | LSTRIP | RSTRIP)).tolist()},
            metadata={k: self.r.get(k) for k in self.r if not k.startswith("tokenizer.ggml.")},
        )


# A 4-byte UTF-8 form of a code point above U+10FFFF, as unicode_cpt_from_utf8 decodes it
# (lead F4 with 90..BF, or F5..F7). No lead byte is a continuation byte, so wherever this
# matches, llama.cpp's decoder starts a sequence at its first byte.
_ABOVE_UNICODE = re.compile(rb"(?:\xf4[\x90-\xbf]|[\xf5-\xf7][\x80-\xbf])[\x80-\xbf][\x80-\xbf]")

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _names(t) -> str:
    return t.name if isinstance(t, GGUFValueType) else " or ".join(x.name for x in t)


def _first_duplicate(tokens: list[bytes]) -> bytes:
    seen: set[bytes] = set()
    for t in tokens:
        if t in seen:
            return t
        seen.add(t)
    return b""
