"""WPM (``llm_tokenizer_wpm_session``) against llama.cpp on bert-bge.

Layers as in test_spm.py: tiny GGUFs (normalization flags, unk, byte-level
matching), the session alone on bert-bge (raw fragment in, add_special=False,
parse_special=False, texts without USER_DEFINED text), then the facade:
goldens, four flag combinations, adversarial texts, every token's piece.
"""

from __future__ import annotations

import functools
import random

import pytest

from harness.tokenizer.algorithms import wpm
from harness.errors import HarnessError
from harness.tokenizer.gguf import GGUFValueType as T
from harness.tokenizer.gguf.writer import write_gguf
from harness.tokenizer.vocab import Vocab
from reference import vocabs

NAME = "bert-bge"
from tests.support.agreement import FLAGS, mismatches, report  # noqa: E402  (tests/agreement.py)
USER_DEFINED = 16

# Class 19 (WordPiece normalisation) of docs/known-port-bugs.md, plus the edges of preprocess.
ADVERSARIAL = [
    "Kantō", "lǜshi", "a\na", "한", "한국어", "Résumé", "Hello World! Résumé 你好",   # strip_accents = first NFD cpt
    "\U0002B81F\U0002B820\U0002B91F\U0002B920", "\u3400\u4dbf\uf900\U0002f800",      # is_chinese_char edges
    "\u3000a\u3000", "a\u00a0b\u2028c\u0085d", "x\u200by", "soft\u00adhyphen", "zw\u200dj",  # whitespace / Cf
    "\u0301", "e\u0301", "¿$~™^`|", "a+b=c<d>e", "½ ¼ Ⅵ", "ﬁ①", "ǅungla", "İstanbul", "ΣΊΣΥΦΟΣ",
    "[CLS] [SEP] [MASK] [UNK] [PAD]", "a[SEP]b", "\x00", "\x7f", "\ufffd", "\ue000", "😀 🤖",
    "", " ", "   \t\n  ", "antidisestablishmentarianism" * 4, "a" * 3000,
]
# Class 21: invalid UTF-8 becomes U+FFFD and is dropped; a code point > U+10FFFF throws.
ADVERSARIAL_BYTES = [b"\xff", b"a\xffb", b"\xe6\xad", b"\xc0\xaf", b"\xed\xa0\x80", b"\x80x"]


def _random_texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = list("aB .,!é中한\u0301\u00a0\u3000\x00ÿß$~\U0002B920") + ["[CLS]", "[MASK]", "##"]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 25))) for _ in range(n)]


@functools.lru_cache(maxsize=None)
def _vocab(name: str = NAME) -> Vocab:
    return Vocab.from_gguf(vocabs.vocab_path(name))


@functools.lru_cache(maxsize=None)
def _tokenizer(name: str = NAME):
    from harness.tokenizer import Tokenizer
    return Tokenizer(_vocab(name))



# --- 1. tiny vocabs ---------------------------------------------------------------------------

TINY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "▁hello", "▁hel", "lo", "▁world", "▁!", "▁re", "sume",
        "▁résumé", "▁ᄒ", "▁".encode() + b"\xe6", b"\x96\x87", "▁中"]  # 13, 14: halves of '文' (e6 96 87)


def _tiny(tmp_path, **flags):
    path = tmp_path / "tiny-wpm.gguf"
    meta = {"general.architecture": (T.STRING, "bert"),
            "tokenizer.ggml.model": (T.STRING, "bert"),
            "tokenizer.ggml.tokens": (T.ARRAY, TINY, T.STRING),
            "tokenizer.ggml.token_type": (T.ARRAY, [3, 2, 3, 3] + [1] * (len(TINY) - 4), T.INT32),
            "tokenizer.ggml.unknown_token_id": (T.UINT32, 1),
            "tokenizer.ggml.seperator_token_id": (T.UINT32, 3)}
    for key, value in flags.items():
        meta[f"tokenizer.ggml.normalizer.{key}"] = (T.BOOL, value)
    write_gguf(path, meta)
    return path


@pytest.mark.parametrize("flags, text, ids", [
    # lowercase + strip_accents (default): 'Résumé' -> 'resume' -> ▁re + sume; '!' its own word.
    ({}, "Hello World! Résumé", [4, 7, 8, 9, 10]),
    # no strip_accents: 'résumé' kept whole; '한' kept (its NFD first cpt is only used when stripping).
    ({"strip_accents": False}, "Résumé 한", [11, 1]),
    # strip_accents: '한' -> 'ᄒ' alone (HF would keep ᄒ ##ᅡ ##ᆫ).
    ({}, "한", [12]),
    # no lowercase (so no strip_accents either): 'Hello' matches nothing at '▁H' -> one unk.
    ({"lowercase": False}, "Hello hello", [1, 4]),
    # greedy longest first: ▁hello then lo (not ▁hel + lo + lo).
    ({}, "hellolo", [4, 6]),
    # matching is by bytes: '▁\xe6' + '\x96\x87' spell '▁文' across a UTF-8 sequence.
    ({}, "文", [13, 14]),
    # CJK chars are single-char words.
    ({}, "中中", [15, 15]),
])
def test_tiny_vocab(tmp_path, inproc, flags, text, ids):
    path = _tiny(tmp_path, **flags)
    assert wpm.Session(Vocab.from_gguf(path)).tokenize(text.encode()) == ids
    assert inproc(str(path)).encode(text, add_special=False, parse_special=False) == ids


def test_codepoint_above_unicode_raises_like_llama_cpp(inproc):
    """F4 90 80 80 decodes to 0x110000; llama.cpp's unicode_cpt_to_utf8 throws."""
    with pytest.raises(HarnessError, match="invalid codepoint|U\\+10FFFF"):
        wpm.Session(_vocab()).tokenize(b"\xf4\x90\x80\x80")
    with pytest.raises(HarnessError, match="invalid codepoint"):
        inproc(NAME).encode(b"\xf4\x90\x80\x80", add_special=False, parse_special=False)


# --- 2. the session alone ---------------------------------------------------------------------

def test_session_matches_reference(inproc):
    ref, vocab = inproc(NAME), _vocab()
    session = wpm.Session(vocab)
    specials = [t for t, a in zip(vocab.tokens, vocab.attrs) if a & USER_DEFINED]
    texts = [t.encode() for t in vocabs.all_inp_texts() + ADVERSARIAL + _random_texts(1, 300)]
    texts = [t for t in texts + ADVERSARIAL_BYTES if not any(s in t for s in specials)]
    bad = [(t, got, want) for t in texts
           if (got := session.tokenize(t)) != (want := ref.encode(t, add_special=False, parse_special=False))]
    assert not bad, f"{len(bad)}/{len(texts)} mismatches; first (text, ours, llama.cpp): {bad[0]!r}"


# --- 3. through the facade --------------------------------------------------------------------

def test_golden_cases():
    tok = _tokenizer()
    bad = [(t, got, ids) for t, ids in vocabs.golden_cases(NAME)
           if (got := tok.encode(t, add_special=False, parse_special=False)) != ids]
    assert not bad, f"{len(bad)} golden mismatches; first (text, ours, golden): {bad[0]!r}"


def test_all_flag_combinations(inproc):
    texts = vocabs.all_inp_texts() + ADVERSARIAL + ADVERSARIAL_BYTES + _random_texts(2, 200)
    bad = mismatches(_tokenizer(), inproc(NAME), texts)
    assert not bad, report(bad, len(texts) * len(FLAGS))


def test_every_token_piece_reencodes_alike(inproc):
    """Every token's own piece (special=True) re-encoded, add_special=False, both parse_special."""
    ref, tok = inproc(NAME), _tokenizer()
    pieces = [ref.token_to_piece(i, special=True) for i in range(ref.n_vocab)]
    # plus a fixed sample of raw token texts (with their '▁' / '##' unescaped spelling)
    pieces += random.Random(0).sample(_vocab(NAME).tokens, 3000)
    bad = mismatches(tok, ref, pieces, flags=[(False, False), (False, True)])
    assert not bad, report(bad, 2 * len(pieces))


# --- the fast paths equal the reference loops ----------------------------------------------------

def _descending_word_ids(session, word: bytes) -> list[int]:
    """llama.cpp's loop as written: lengths from max_token_len + 1 down."""
    ids, i, n = [], 0, len(word)
    while i < n:
        for j in range(min(n, i + session._max_len + 1), i, -1):
            tid = session._token_to_id.get(word[i:j])
            if tid is not None:
                ids.append(tid)
                i = j
                break
        else:
            return [session._unk]
    return ids


def test_chunks_and_forward_walk_equal_the_reference():
    from harness.inputs.corpus import corpus
    from harness.tokenizer.vocab import Vocab
    session = wpm.Session(Vocab.from_gguf(vocabs.vocab_path("bert-bge")))
    texts = [t.encode() for t in vocabs.all_inp_texts()] + [c.encode() for c in corpus(100_000).split("\n")]
    texts += ["a\u2000b \u00a0c\u3000\u0301d\x00\ufffd e".encode(), b"x\xffy z", b"\xe2\x80 a"]
    assert [t for t in texts if session.tokenize(t) != session.tokenize_whole(t)] == []
    words = {w for t in texts for w in wpm.preprocess(t, True, True)}
    assert [w for w in words
            if session._word_ids(wpm.SPACE_PREFIX + w) != _descending_word_ids(session, wpm.SPACE_PREFIX + w)] == []
