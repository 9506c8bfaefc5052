"""SPM (``llm_tokenizer_spm_session``) against llama.cpp.

Three layers, each a different question:

1. Tiny GGUFs written here, with the expected ids derived in the docstring
   and also asked of llama.cpp: queue ties, staleness, byte fallback.
2. The session alone on the pinned SPM vocabs (llama-spm, phi-3, baichuan),
   fed what llama.cpp feeds it: ``" " + text`` with spaces escaped to ``▁``,
   compared with llama.cpp at add_special=False, parse_special=False on texts
   without USER_DEFINED token text (those are the only specials split then).
3. Through the facade (``harness.tokenizer.Tokenizer``): every golden case,
   the four (add_special, parse_special) combinations on every ``.inp`` text
   and on adversarial texts, and every token's own piece re-encoded.
"""

from __future__ import annotations

import functools
import random

import pytest

from harness.tokenizer.algorithms import spm
from harness.errors import HarnessError, VocabError
from harness.tokenizer.gguf import GGUFValueType as T
from harness.tokenizer.gguf.writer import write_gguf
from harness.tokenizer.vocab import Vocab
from reference import vocabs

SPM_VOCABS = ["llama-spm", "phi-3", "baichuan"]
from tests.support.agreement import FLAGS, mismatches, report  # noqa: E402  (tests/agreement.py)

# make test runs this module on one worker: its tokenizers and sessions load once, not on both
pytestmark = pytest.mark.xdist_group("test_spm")
USER_DEFINED = 16

# Adversarial texts; the number is the class in docs/known-port-bugs.md.
ADVERSARIAL = [
    "thunderstorm", " thunderstorm", "thunderstorms are here",   # 10: queue ties / staleness
    "Der süße Bär", "\u3000", "😀 🤖", "\x00", "ÿ", "\U0010ffff",  # 18: byte fallback
    "", " ", "  ", "a  b", "\n", " \n ", "▁", "▁▁a", "\t x",      # 11: space prefix / ▁ in input
    "<s>G", "Hello<s>world", "<s>  z", "<|im_start|><|im_end|>\n",  # 12: spaces next to specials
    "a</s>", "a </s> b", "<unk>", "<|user|>  hi", "<|endoftext|> x", "<|assistant|>\n<|end|>",
    "A" * 2000, "ab " * 300,
]
# 21: invalid / partial UTF-8 (SPM has no validation: each byte is its own symbol)
ADVERSARIAL_BYTES = [b"\xe6\xad", b"\xff", b"a\xff b", b"\xc0\xaf", b"\xed\xa0\x80", b"\x80\x80\x80",
                     b"\xf4\x90\x80\x80", b"\xf0\x9f\x98", b"\xe2\x96", b" \xe2\x96\x81"]


def _random_texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = list("ab ▁\n\t.,!é中😀한\u0301\u00a0\u3000\x00ÿ") + ["<s>", "</s>", "<unk>", "<|end|>"]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 25))) for _ in range(n)]


@functools.lru_cache(maxsize=None)
def _vocab(name: str) -> Vocab:
    return Vocab.from_gguf(vocabs.vocab_path(name))


@functools.lru_cache(maxsize=None)
def _tokenizer(name: str):
    from harness.tokenizer import Tokenizer
    return Tokenizer(_vocab(name))


def _session_input(text: bytes) -> bytes:
    """What llama.cpp's SPM branch passes the session for a lone fragment at the start."""
    return (b" " + text).replace(b" ", "\u2581".encode())



# --- 1. tiny vocabs ---------------------------------------------------------------------------

TINY = ["<unk>", "<s>", "</s>", "▁", "a", "b", "c", "▁a", "ab", "bc", "abc", "<0x63>", "<0x64>"]
TINY_TYPES = [2, 3, 3] + [1] * 8 + [6, 6]


def _tiny(tmp_path, scores, tokens=TINY, types=TINY_TYPES):
    path = tmp_path / "tiny-spm.gguf"
    write_gguf(path, {"general.architecture": (T.STRING, "llama"),
                      "tokenizer.ggml.model": (T.STRING, "llama"),
                      "tokenizer.ggml.tokens": (T.ARRAY, tokens, T.STRING),
                      "tokenizer.ggml.scores": (T.ARRAY, scores, T.FLOAT32),
                      "tokenizer.ggml.token_type": (T.ARRAY, types, T.INT32)})
    return path


@pytest.mark.parametrize("scores, text, ids", [
    # ▁a and ab tie at -1.5: the leftmost pair (▁,a) wins, then b stays alone -> [▁a, b].
    ([0, 0, 0, -1, -2, -2, -2, -1.5, -1.5, -9, -9, 0, 0], "ab", [7, 5]),
    # ab (-1) beats ▁a (-1.5): [▁, ab]; abc is then reachable from (ab, c) -> [▁, abc].
    ([0, 0, 0, -1, -2, -2, -2, -1.5, -1.0, -9, -0.5, 0, 0], "abc", [3, 10]),
    # bc (-1) beats ab (-1.2), making ab stale; then ▁a (-1.5) beats (a, bc) = abc (-9).
    ([0, 0, 0, -1, -2, -2, -2, -1.5, -1.2, -1.0, -9, 0, 0], "abc", [7, 9]),
    # 'd' has no token: <0x64> (uppercase hex spelling); a 'c' alone stays 'c'.
    ([0, 0, 0, -1, -2, -2, -2, -1.5, -1.5, -9, -9, 0, 0], "dcd", [3, 12, 6, 12]),
])
def test_tiny_vocab_queue_order(tmp_path, inproc, scores, text, ids):
    path = _tiny(tmp_path, scores)
    session = spm.Session(Vocab.from_gguf(path))
    assert session.tokenize(_session_input(text.encode())) == ids
    assert inproc(str(path)).encode(text, add_special=False, parse_special=False) == ids


def test_missing_byte_token_raises_where_llama_cpp_throws(tmp_path, inproc):
    """No <0x65> and no 'e' token: llama.cpp's byte_to_token throws std::out_of_range."""
    path = _tiny(tmp_path, [0, 0, 0, -1, -2, -2, -2, -1.5, -1.5, -9, -9, 0, 0])
    session = spm.Session(Vocab.from_gguf(path))
    with pytest.raises(VocabError, match="<0x65>"):
        session.tokenize(_session_input(b"ae"))
    with pytest.raises(HarnessError, match="unordered_map::at"):
        inproc(str(path)).encode("ae", add_special=False, parse_special=False)


def test_single_byte_token_is_the_second_fallback(tmp_path, inproc):
    """Without <0xXX>, byte_to_token falls back to the 1-byte token text.

    'é' is the symbol c3 a9; it is no token, so each byte goes through
    byte_to_token: no <0xC3>/<0xA9>, but tokens b"\\xc3" (11) and b"\\xa9" (12).
    """
    tokens = TINY[:11] + [b"\xc3", b"\xa9"]
    path = _tiny(tmp_path, [0, 0, 0, -1, -2, -2, -2, -1.5, -1.5, -9, -9, -5, -5], tokens,
                 TINY_TYPES[:11] + [1, 1])
    session = spm.Session(Vocab.from_gguf(path))
    assert session.tokenize(_session_input("é".encode())) == [3, 11, 12]
    assert inproc(str(path)).encode("é", add_special=False, parse_special=False) == [3, 11, 12]


# --- 2. the session alone on pinned vocabs ----------------------------------------------------

@pytest.mark.parametrize("name", SPM_VOCABS)
def test_session_matches_reference(name, inproc):
    ref = inproc(name)
    vocab = _vocab(name)
    session = spm.Session(vocab)
    specials = [t for t, a in zip(vocab.tokens, vocab.attrs) if a & USER_DEFINED]
    texts = [t.encode() for t in vocabs.all_inp_texts() + ADVERSARIAL + _random_texts(1, 300)]
    texts = [t for t in texts + ADVERSARIAL_BYTES if t and not any(s in t for s in specials)]
    bad = [(t, got, want) for t in texts
           if (got := session.tokenize(_session_input(t)))
           != (want := ref.encode(t, add_special=False, parse_special=False))]
    assert not bad, f"{len(bad)}/{len(texts)} mismatches; first (text, ours, llama.cpp): {bad[0]!r}"


# --- 3. through the facade --------------------------------------------------------------------

@pytest.mark.parametrize("name", ["llama-spm", "phi-3"])
def test_golden_cases(name):
    tok = _tokenizer(name)
    bad = [(t, got, ids) for t, ids in vocabs.golden_cases(name)
           if (got := tok.encode(t, add_special=False, parse_special=False)) != ids]
    assert not bad, f"{len(bad)} golden mismatches; first (text, ours, golden): {bad[0]!r}"


@pytest.mark.parametrize("name", SPM_VOCABS)
def test_all_flag_combinations(name, inproc):
    texts = vocabs.all_inp_texts() + ADVERSARIAL + ADVERSARIAL_BYTES + _random_texts(2, 200)
    bad = mismatches(_tokenizer(name), inproc(name), texts)
    assert not bad, report(bad, len(texts) * len(FLAGS))


@pytest.mark.parametrize("name", SPM_VOCABS)
def test_every_token_piece_reencodes_alike(name, inproc):
    """Every token's own piece (special=True) re-encoded, add_special=False, both parse_special."""
    ref, tok = inproc(name), _tokenizer(name)
    pieces = [ref.token_to_piece(i, special=True) for i in range(ref.n_vocab)]
    # plus a fixed sample of raw token texts (with their '▁' / '##' unescaped spelling)
    pieces += random.Random(0).sample(_vocab(name).tokens, 3000)
    bad = mismatches(tok, ref, pieces, flags=[(False, False), (False, True)])
    assert not bad, report(bad, 2 * len(pieces))


# --- random tiny vocabs: queue order under many score ties ------------------------------------

def _random_vocab(rng: random.Random, cuttable: bool = False) -> tuple[list[str], list[float]]:
    """Specials, 256 byte tokens, then ~60 random pieces over 'ab▁é' scored from {-1,-2,-3}.

    ``cuttable``: '▁' only as a leading run (plus '▁' and '▁▁'), so the session works per segment.
    """
    def piece() -> str:
        if cuttable:
            return "▁" * rng.choice([0, 0, 1, 2]) + "".join(rng.choice("abé") for _ in range(rng.randint(1, 3)))
        return "".join(rng.choice("ab▁é") for _ in range(rng.randint(1, 4)))
    pieces = set()
    while len(pieces) < 60:
        pieces.add(piece())
    extra = ["▁", "▁▁"] if cuttable else []
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + sorted(pieces) + extra
    scores = [0.0] * 259 + [float(rng.choice([-1, -2, -3])) for _ in range(len(pieces) + len(extra))]
    return tokens, scores


@pytest.mark.parametrize("seed", range(4))
def test_random_tiny_vocabs_match_reference(tmp_path, inproc, seed):
    """Ties everywhere: leftmost-first and stale skipping decide most merges."""
    rng = random.Random(seed)
    tokens, scores = _random_vocab(rng)
    path = _tiny(tmp_path, scores, tokens, [2, 3, 3] + [6] * 256 + [1] * (len(tokens) - 259))
    session, ref = spm.Session(Vocab.from_gguf(path)), inproc(str(path))
    texts = ["".join(rng.choice("ab é c") for _ in range(rng.randint(1, 20))).encode() for _ in range(150)]
    bad = [(t, got, want) for t in texts
           if (got := session.tokenize(_session_input(t))) != (want := ref.encode(t, add_special=False, parse_special=False))]
    assert not bad, f"{len(bad)}/{len(texts)} mismatches; first (text, ours, llama.cpp): {bad[0]!r}"


@pytest.mark.parametrize("seed", range(4))
def test_random_cuttable_vocabs_match_reference(tmp_path, inproc, seed):
    """Segments cut before each '▁' (and cached) give llama.cpp's ids, ties and all."""
    rng = random.Random(seed)
    tokens, scores = _random_vocab(rng, cuttable=True)
    path = _tiny(tmp_path, scores, tokens, [2, 3, 3] + [6] * 256 + [1] * (len(tokens) - 259))
    session, ref = spm.Session(Vocab.from_gguf(path)), inproc(str(path))
    assert session._cuttable
    texts = ["".join(rng.choice("ab é  c") for _ in range(rng.randint(1, 20))).encode() for _ in range(150)]
    bad = [(t, got, want) for t in texts * 2  # twice: the second pass is served from the cache
           if (got := session.tokenize(_session_input(t))) != (want := ref.encode(t, add_special=False, parse_special=False))]
    assert not bad, f"{len(bad)}/{2 * len(texts)} mismatches; first (text, ours, llama.cpp): {bad[0]!r}"


def test_a_vocab_joining_char_and_space_is_tokenized_whole():
    assert not spm.splits_at_spaces({"a▁".encode(): 0, b"a": 1})
    assert spm.splits_at_spaces({"▁▁a".encode(): 0, "▁".encode(): 1})


@pytest.mark.parametrize("name", SPM_VOCABS)
def test_segments_give_the_whole_fragment_ids(name):
    from harness.inputs.corpus import corpus
    session = spm.Session(_vocab(name))
    assert session._cuttable  # all pinned SPM vocabs are
    texts = [t.encode() for t in vocabs.all_inp_texts()] + [c.encode() for c in corpus(100_000).split("\n")]
    bad = [t for t in texts if session.tokenize(_session_input(t)) != session.tokenize_whole(_session_input(t))]
    assert not bad, bad[:3]


def test_symbol_split_matches_llama_cpp_loop():
    """The regex split equals llama.cpp's unicode_len_utf8 loop on arbitrary bytes (clipping included)."""
    rng = random.Random(0)
    alphabet = [0x41, 0x80, 0xBF, 0xC3, 0xDF, 0xE2, 0xEF, 0xF0, 0xF7, 0xFF, 0x96, 0x00]
    for _ in range(5000):
        text = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert spm._split_symbols(text) == spm._split_symbols_slow(text), text
