"""The Tokenizer facade against llama.cpp: special-token partition, BOS/EOS framing, decode.

Decode needs no algorithm, so it is checked for every pinned vocab: every special
token's piece, a sample of the others (all of them under ``-m slow``), every golden
.out id list and random id sequences, under all four remove/unparse combinations.
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings, strategies as st

from harness.conformance.needs import require
from harness.errors import HarnessError
from harness.tokenizer.gguf import GGUFValueType as T, Keys
from harness.tokenizer.gguf.writer import rewrite_metadata, write_gguf
from harness.tokenizer import IncrementalDecoder, TokenIdError, Tokenizer, clean_spaces, decode_bpe_text
from harness.tokenizer.vocab import Vocab

K = Keys.Tokenizer


def pinned_names() -> list[str]:
    try:
        from reference.vocabs import names
        return names()
    except Exception:
        return []


NAMES = pinned_names()
_TOKENIZERS: dict[str, Tokenizer] = {}


def tokenizer(name: str) -> Tokenizer:
    from reference.vocabs import vocab_path
    if name not in _TOKENIZERS:
        _TOKENIZERS[name] = Tokenizer.from_gguf(require(vocab_path, name))
    return _TOKENIZERS[name]


def ref_for_path(path):
    from reference.inproc import InProcessReference
    return require(lambda: InProcessReference(path))


# --- pieces and decode: all 19 vocabs ------------------------------------------------------

def piece_sample(tok: Tokenizer, n: int, seed: int) -> list[int]:
    """Every non-NORMAL token (specials, bytes, unused...) plus ``n`` random others."""
    rng = random.Random(seed)
    odd = [i for i, a in enumerate(tok.vocab.attrs) if a != 4]
    return sorted(set(odd) | {rng.randrange(tok.n_vocab) for _ in range(n)} | {0, tok.n_vocab - 1})


@pytest.mark.reference
@pytest.mark.parametrize("name", NAMES)
def test_token_to_piece(name, inproc):
    ref, tok = inproc(name), tokenizer(name)
    for i in piece_sample(tok, 3000, seed=1):
        for special in (False, True):
            assert tok.token_to_piece(i, special=special) == ref.token_to_piece(i, special), \
                (i, special, tok.vocab.tokens[i], tok.vocab.attrs[i])


@pytest.mark.slow
@pytest.mark.reference
@pytest.mark.parametrize("name", NAMES)
def test_token_to_piece_every_token(name, inproc):
    ref, tok = inproc(name), tokenizer(name)
    bad = [(i, s) for i in range(tok.n_vocab) for s in (False, True)
           if tok.token_to_piece(i, special=s) != ref.token_to_piece(i, s)]
    assert not bad, bad[:10]


def id_sequences(tok: Tokenizer, name: str, seed: int) -> list[list[int]]:
    from reference.vocabs import golden_cases, has_golden
    rng = random.Random(seed)
    v = tok.vocab
    seqs = [ids for _, ids in golden_cases(name)] if has_golden(name) else []
    ends = [x for x in (v.bos, v.eos, v.sep, v.unk) if x is not None]
    specials = list(v.special_cache[:64]) + ends
    for _ in range(150):
        seqs.append([rng.randrange(v.n_vocab) for _ in range(rng.randrange(0, 10))])
        seq = [rng.choice(specials) if rng.random() < 0.4 else rng.randrange(v.n_vocab)
               for _ in range(rng.randrange(0, 6))]
        seqs.append(([rng.choice(ends)] if ends and rng.random() < 0.5 else []) + seq +
                    ([rng.choice(ends)] if ends and rng.random() < 0.5 else []))
    return seqs


@pytest.mark.reference
@pytest.mark.parametrize("name", NAMES)
def test_decode(name, inproc):
    ref, tok = inproc(name), tokenizer(name)
    for ids in id_sequences(tok, name, seed=2):
        for rs in (False, True):
            for us in (False, True):
                assert tok.decode(ids, remove_special=rs, unparse_special=us) == ref.decode(ids, rs, us), \
                    (ids, rs, us)


def test_decode_rejects_bad_ids():
    tok = tokenizer(NAMES[0]) if NAMES else pytest.skip("no pinned vocabs")
    with pytest.raises(TokenIdError):
        tok.decode([0, tok.n_vocab])
    with pytest.raises(TokenIdError):
        tok.token_to_piece(-1)


# --- clean_spaces: the regex form equals a literal port of the C loops -----------------------

def clean_spaces_literal(data: bytes) -> bytes:
    """The three in-place loops of llama_vocab::impl::detokenize, transcribed literally."""
    text = bytearray(data)
    total = len(text)
    t1, total = total, 1 if total else 0
    for i in range(1, t1):
        x = text[i]
        if text[i - 1] == 0x20 and x in b"?!.,":
            total -= 1
        text[total] = x
        total += 1
    t2, total = total, 1 if total else 0
    i = 1
    while i < t2:
        x = text[i]
        if x == 0x27 and i + 1 < t2 and text[i - 1] == 0x20 and text[i + 1] == 0x20:
            total -= 1
            i += 1
            text[i] = 0
        text[total] = x
        total += 1
        i += 1
    t3, total = total, 1 if total else 0
    for i in range(1, t3):
        x = text[i]
        if text[i - 1] == 0x20 and x == 0x27 and i + 1 < t3:
            x1 = text[i + 1]
            if x1 in b"sm":
                total -= 1
            elif x1 not in b"td" and i + 2 < t3 and bytes([x1, text[i + 2]]) in (b"re", b"ve"):
                total -= 1
        text[total] = x
        total += 1
    return bytes(text[:total])


@settings(max_examples=800, deadline=None)
@given(st.binary(max_size=24).map(lambda b: bytes(b" '?!.,smrvetdlx\0"[c % 16] for c in b)))
def test_clean_spaces_equals_the_c_loops(data):
    assert clean_spaces(data) == clean_spaces_literal(data)


@pytest.mark.parametrize("text,expected", [
    (b" ?x", b"?x"), (b"a ' b", b"a'b"), (b"it 's do 't", b"it's do 't"), (b"' ' z", b"''z"),  # checked on gemma-4: llama.cpp gives "''z"
    (b"a ' ' b", b"a'' b"), (b"we 're 've 'll 'm", b"we're've 'll'm"), (b"", b""), (b" ", b" "),
])
def test_clean_spaces_examples(text, expected):
    assert clean_spaces(text) == clean_spaces_literal(text) == expected


def test_decode_bpe_text_unknown_bytes():
    assert decode_bpe_text("Ġa".encode()) == b" a"
    assert decode_bpe_text(b"\xff") == b"[UNK_BYTE_0xefbfbd\xff]"


# --- partition: hand-built vocabs ----------------------------------------------------------

def tiny(tmp_path, tokens, types, **extra) -> Tokenizer:
    meta = {Keys.General.ARCHITECTURE: (T.STRING, "llama"), K.MODEL: (T.STRING, "llama"),
            K.TOKENS: (T.ARRAY, tokens, T.STRING), K.TOKEN_TYPE: (T.ARRAY, types, T.INT32)}
    meta.update(extra)
    p = tmp_path / "t.gguf"
    write_gguf(p, meta)
    return Tokenizer.from_gguf(p)


def test_partition_longest_first_not_leftmost_longest(tmp_path):
    """Specials '<a>' and 'b<' (both USER_DEFINED, length 3 and 2) in 'xb<a>': '<a>' is
    longer so it is cut first -> 'xb', '<a>' (HF-style leftmost-longest would give 'x','b<','a>')."""
    tok = tiny(tmp_path, [b"<unk>", b"<s>", b"</s>", b"<a>", b"b<"], [2, 3, 3, 4, 4])
    assert tok.partition(b"xb<a>", False) == [b"xb", 3]
    assert tok.partition(b"b<b<", False) == [4, 4]


def test_partition_parse_special_gates_control_and_unknown(tmp_path):
    tok = tiny(tmp_path, [b"<unk>", b"<s>", b"</s>", b"<u>"], [2, 3, 3, 4])
    assert tok.partition(b"a<s>b<unk>c<u>", False) == [b"a<s>b<unk>c", 3]
    assert tok.partition(b"a<s>b<unk>c<u>", True) == [b"a", 1, b"b", 0, b"c", 3]


def test_partition_strip_uses_c_isspace_only(tmp_path):
    """phi-3 style RSTRIP on every special; LSTRIP via modern-bert's [MASK]."""
    tok = tiny(tmp_path, [b"<unk>", b"<s>", b"</s>", b"<|endoftext|>", b"[MASK]", b"<|user|>"],
               [2, 3, 3, 3, 4, 3], **{Keys.General.NAME: (T.STRING, "phi-3")})
    assert tok.partition(b"<|user|> \t\n\v\f\r\xc2\xa0x", True) == [5, b"\xc2\xa0x"]
    assert tok.partition(b"<s>  z", True) == [1, b"  z"]   # <s> has RSTRIP cleared
    tok = tiny(tmp_path, [b"<unk>", b"<s>", b"</s>", b"[MASK]"], [2, 3, 3, 4],
               **{Keys.General.NAME: (T.STRING, "modern-bert")})
    assert tok.partition(b"a \n [MASK] b", False) == [b"a", 3, b" b"]
    assert tok.partition(b"  [MASK]", False) == [3]


def test_partition_is_iterative_on_long_input(tmp_path):
    tok = tiny(tmp_path, [b"<unk>", b"<s>", b"</s>", b"<u>"], [2, 3, 3, 4])
    parts = tok.partition(b"x<u>" * 100_000, False)
    assert len(parts) == 200_000 and parts[:2] == [b"x", 3]


def test_missing_algorithm_module_is_a_clear_error(tmp_path, monkeypatch):
    import harness.tokenizer.facade as mod
    monkeypatch.setitem(mod._ALGORITHM_MODULES, "spm", "no_such_algorithm_module")
    with pytest.raises(HarnessError, match="not available"):  # at load: from_gguf builds the session
        tiny(tmp_path, [b"<unk>", b"<s>", b"</s>"], [2, 3, 3])


# --- encode framing and partition against llama.cpp -----------------------------------------

FRAMING_TEXTS = ["", " ", "Hello world", "Hello<s>world", "<s>Hello</s> <unk>", "<|user|>  hi", "<s>  z",
                 "<|im_start|>user\nhi<|im_end|>\n", "a <mask> b", "  Hello   world  <mask> x",
                 "[MASK] x [CLS][SEP]", "<|endoftext|><|endoftext|>", "<bos>a<eos>", "a</s>", ".<|im_end|>"]


@pytest.mark.reference
@pytest.mark.parametrize("name", NAMES)
def test_encode_framing(name, inproc):
    """BOS/EOS/CLS/SEP per vocab type and the special-token partition, vs llama.cpp."""
    ref, tok = inproc(name), tokenizer(name)
    for text in FRAMING_TEXTS + [b"\xff\xfe<s>\xe6\xad", b"\x00"]:
        for add in (False, True):
            for ps in (False, True):
                assert tok.encode(text, add_special=add, parse_special=ps) == ref.encode(text, add, ps), \
                    (text, add, ps)


@pytest.mark.reference
def test_equal_length_overlapping_specials_follow_llama_sort_order(tmp_path, inproc):
    """Mark 60 three-byte llama-spm tokens USER_DEFINED so equal-length specials overlap
    ('abc' vs 'bcd' in 'abcd'); which is cut first depends on libstdc++'s std::sort order of
    cache_special_tokens, which we replay. Compared with llama.cpp on every overlapping pair."""
    from reference.vocabs import vocab_path
    src = require(vocab_path, "llama-spm")
    v = Vocab.from_gguf(src)
    three = [i for i, t in enumerate(v.tokens) if len(t) == 3 and t.isalpha() and t.islower()]
    rng = random.Random(3)
    chosen = set(rng.sample(three, 60))
    by_prefix: dict[bytes, list[int]] = {}
    for i in chosen:
        by_prefix.setdefault(v.tokens[i][:1], []).append(i)
    # make overlaps likely: add tokens that start with the last letter of chosen ones
    for i in list(chosen):
        extra = [j for j in three if v.tokens[j][:1] == v.tokens[i][2:]][:2]
        chosen.update(extra)
    types = [1 if a == 4 else {1: 2, 8: 3, 32: 6, 2: 5, 16: 4}.get(a & ~0x180, 0) for a in v.attrs]
    for i in chosen:
        types[i] = 4
    dst = tmp_path / "overlap.gguf"
    rewrite_metadata(src, dst, {K.TOKEN_TYPE: (T.ARRAY, types, T.INT32)})
    tok, ref = Tokenizer.from_gguf(dst), ref_for_path(dst)
    assert len(tok.vocab.special_cache) > 16  # past insertion-sort size: introsort matters
    texts = []
    for a in chosen:
        ta = v.tokens[a]
        for b in chosen:
            tb = v.tokens[b]
            for k in (1, 2):
                if a != b and ta[-k:] == tb[:k]:
                    texts.append(ta + tb[k:])
    assert len(texts) > 20
    for text in texts:
        assert tok.encode(text) == ref.encode(text, False, False), text


@pytest.mark.reference
def test_long_input_with_specials(inproc):
    name = "qwen2" if "qwen2" in NAMES else pytest.skip("qwen2 not pinned")
    ref, tok = inproc(name), tokenizer(name)
    text = ("<|im_start|>user\nHello, wörld! 123 <|im_end|>\n" * 300)
    assert tok.encode(text, parse_special=True) == ref.encode(text, False, True)


# --- streaming decode -------------------------------------------------------------------------

@pytest.mark.parametrize("name", [n for n in ("llama-spm", "gemma-4", "qwen2", "bert-bge") if n in NAMES])
def test_incremental_decoder_concatenates_to_decode(name):
    tok = tokenizer(name)
    rng = random.Random(4)
    text = "Héllo wörld ' s 're ?! 你好 \U0001F600 a  b\n"
    ids = tok.encode(text * 3) if True else []
    ids += [rng.randrange(tok.n_vocab) for _ in range(40)]
    for rs, us in ((False, False), (True, True)):
        d = IncrementalDecoder(tok, remove_special=rs, unparse_special=us)
        out, pos = "", 0
        while pos < len(ids):
            step = rng.randrange(1, 4)
            out += d.decode(ids[pos:pos + step])
            pos += step
        out += d.flush()
        assert out == tok.decode_str(ids, remove_special=rs, unparse_special=us)


def test_decode_str_is_lossy_but_decode_is_not():
    name = "llama-spm" if "llama-spm" in NAMES else pytest.skip("llama-spm not pinned")
    tok = tokenizer(name)
    ids = [tok.vocab.token_to_id[b"<0xE3>"], tok.vocab.token_to_id[b"<0x80>"]]
    assert tok.decode(ids) == b"\xe3\x80"
    assert tok.decode_str(ids) == "\ufffd"
    assert re.fullmatch(r"\ufffd+", tok.decode_str(ids))


# --- RWKV and PLaMo2 pieces (no pinned vocab of these types: tiny ones, vs llama.cpp) ----------

def _write(tmp_path, name, model, tokens, types=None, scores=None):
    meta = {Keys.General.ARCHITECTURE: (T.STRING, "llama"), K.MODEL: (T.STRING, model),
            K.TOKENS: (T.ARRAY, tokens, T.STRING)}
    if types is not None:
        meta[K.TOKEN_TYPE] = (T.ARRAY, types, T.INT32)
    if scores is not None:
        meta[K.SCORES] = (T.ARRAY, scores, T.FLOAT32)
    p = tmp_path / name
    write_gguf(p, meta)
    return p


def _check_pieces_and_decode(path, seed):
    tok, ref = Tokenizer.from_gguf(path), ref_for_path(path)
    for i in range(tok.n_vocab):
        for special in (False, True):
            assert tok.token_to_piece(i, special=special) == ref.token_to_piece(i, special), (i, special)
    rng = random.Random(seed)
    for _ in range(200):
        ids = [rng.randrange(tok.n_vocab) for _ in range(rng.randrange(0, 6))]
        for rs in (False, True):
            for us in (False, True):
                assert tok.decode(ids, remove_special=rs, unparse_special=us) == ref.decode(ids, rs, us)


@pytest.mark.reference
def test_rwkv_pieces(tmp_path):
    tokens = [rb"\n", b"a", rb"\x41", rb"\x4a\x4A", rb"b\tc", b"\\\\", rb"\q", b"hello world", rb"\r"]
    _check_pieces_and_decode(_write(tmp_path, "rwkv.gguf", "rwkv", tokens, [1, 1, 1, 1, 3, 1, 2, 1, 5]), 5)


@pytest.mark.reference
def test_plamo2_pieces(tmp_path):
    tokens = [b"<|plamo:unk|>", b"<|plamo:bos|>", b"<|plamo:eos|>", b"<|plamo:pad|>"]
    tokens += [b"<0x%02X>" % b for b in range(256)] + [b"\n", b"a", b"\xe2\x96\x81b", b"<0xzz>", b"<0x4a>"]
    types = [2, 3, 3, 3] + [6] * 256 + [1, 1, 1, 6, 6]
    scores = [0.0] * 4 + [-10.0] * 256 + [-1.0, -2.0, -3.0, -4.0, -5.0]
    _check_pieces_and_decode(_write(tmp_path, "plamo2.gguf", "plamo2", tokens, types, scores), 6)


@pytest.mark.reference
def test_rwkv_without_newline_loads_like_llama(tmp_path):
    """No newline token: llama.cpp still loads (its session emits unk = -1 for "\n")."""
    p = _write(tmp_path, "nonl.gguf", "rwkv", [b"a", b"b"])
    tok, ref = Tokenizer.from_gguf(p), ref_for_path(p)
    for text in ("ab", "a\nb", "\n"):
        assert tok.encode(text) == ref.encode(text, False, False), text


def test_ugm_load_probe_reports_a_broken_charsmap(tmp_path):
    """Same XCDA blob llama.cpp refuses in test_vocab.test_t5_charsmap_bounds (it throws
    "Index out of array bounds in XCDA array!" while tokenizing "\\n" during load)."""
    meta = {Keys.General.ARCHITECTURE: (T.STRING, "llama"), K.MODEL: (T.STRING, "t5"),
            K.TOKENS: (T.ARRAY, [b"<pad>", b"</s>", b"<unk>", "▁a".encode()], T.STRING),
            K.PRECOMPILED_CHARSMAP: (T.ARRAY, [4, 0, 0, 0, 1, 2, 3, 4, 0], T.UINT8)}
    p = tmp_path / "t5.gguf"
    write_gguf(p, meta)
    from harness.errors import VocabError
    with pytest.raises(VocabError, match="llama.cpp would refuse"):
        Tokenizer.from_gguf(p).encode("a")


@pytest.mark.reference
def test_no_vocab_model_decodes_to_nothing_and_cannot_encode(tmp_path):
    p = tmp_path / "none.gguf"
    write_gguf(p, {Keys.General.ARCHITECTURE: (T.STRING, "llama"), K.MODEL: (T.STRING, "none"),
                   "llama.vocab_size": (T.UINT32, 3)})
    tok, ref = Tokenizer.from_gguf(p), ref_for_path(p)
    assert tok.n_vocab == ref.n_vocab == 3
    assert tok.decode([0, 1]) == ref.decode([0, 1], False, False) == b""
    with pytest.raises(HarnessError, match="aborts"):  # llama.cpp GGML_ABORTs: not run there
        tok.encode("")


def test_decode_fast_path_keeps_the_checks():
    """Plain ints take the one-pass piece lookup; anything else the checked per-id path,
    with the same bytes and the same errors."""
    import numpy as np
    from harness.tokenizer import TokenIdError, Tokenizer
    from reference.vocabs import vocab_path
    from harness.conformance.needs import require
    tok = Tokenizer.from_gguf(require(vocab_path, "llama-spm"))
    ids = [1, 15043, 2, 0, 29871, 13]
    for flags in ({}, {"remove_special": True}, {"unparse_special": True}):
        assert tok.decode(ids, **flags) == tok.decode(np.array(ids), **flags)
    assert tok.decode([1, 15043], remove_special=True) == b" Hello"  # BOS removed: the space stays
    assert tok.decode([15043]) == b"Hello"                             # first piece: one space dropped
    for bad in ([15043, -1], [15043, tok.n_vocab], [15043, 1.0]):
        with pytest.raises((TokenIdError, TypeError)):
            tok.decode(bad)
