"""RWKV and PLaMo-2 sessions against llama.cpp on small, realistic GGUFs built here.

No pinned vocab uses either type, so each test writes one to ``tmp_path`` with the
builders the derived vocabs use (harness/inputs/derived/builders.py), shaped like what llama.cpp's converter writes (conversion/base.py
``_set_vocab_rwkv_world`` / ``_set_vocab_plamo``): RWKV token texts are
``repr(bytes)[2:-1]`` escapes, with ``<s>`` CONTROL first and ``[PADn]``
UNUSED last; PLaMo-2 has ``<|plamo:*|>`` CONTROL tokens, all 256 ``<0xXX>``
BYTE tokens, scored pieces and ``[PADn]`` UNUSED tokens scored -1000.0 (which
llama.cpp's table treats as its *unknown* marker: round(-1000 * 1e4) == -1e7).

``general.architecture`` is ``rwkv6`` / ``plamo2``: with ``vocab_only`` llama.cpp
reads no hyper-parameters, so no other key is needed for the reference to load.
"""

from __future__ import annotations

import random

import pytest

from harness.inputs.derived import builders
from harness.tokenizer.algorithms import plamo2, rwkv
from harness.errors import VocabError
from harness.tokenizer.gguf import GGUFValueType as T
from harness.tokenizer.gguf.writer import write_gguf
from harness.tokenizer.vocab import Vocab

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6  # tokenizer.ggml.token_type

WORDS = ["hello", " hello", "hello world", " world", "the", " the", "th", "he", "ther", "theater",
         "\n\n", "\n", "\r\n", "\t\t", "  ", "   ", "'s", "\\", "ab", "abc", "bc", "a", "b", "c",
         "你", "你好", "好", "世界", "こんにちは", "こん", "にち", "は", "日本", "日本語", "語",
         "😀", "é", "caf", "café", "\ufeff", "\ufeffa", "<|x|>", "[PAD", "PAD1]"]

TEXTS = ["hello world", " hello hello world", "the theater", "theatheather", "你好世界", "こんにちは日本語",
         "\n\n\n", "\r\n\r\n", "\t\t\t", "café 😀 é", "\ufeffhello", "a\ufeffb", "\ufeff\ufeff", "\ufeff",
         "abcabc", "[PAD1]", "[PAD2][PAD1]", "<s>", "<|plamo:bos|>x", "<|x|>", "\\x41", "   a   ",
         "\x00", "ÿ", "\U0010ffff", "Zebra", "ab\u0301c", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"]
BYTE_TEXTS = [b"\xff", b"\xe4\xbd", b"a\xe4\xbd\xa0\xe4", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
              b"\xf7\xbf\xbf\xbf", b"\x80\x80", b"\xef\xbb\xbf\xef\xbb\xbf"]


def _texts(seed: int, pieces: list[str], n: int = 120) -> list[bytes]:
    """Fixed texts plus seeded random concatenations of vocab pieces and stray characters."""
    rng = random.Random(seed)
    extra = list("xyzQ !?é\u3000\n") + ["\ufeff", "😀", "語"]
    out = [t.encode() for t in TEXTS] + BYTE_TEXTS
    for _ in range(n):
        out.append("".join(rng.choice(pieces + extra) for _ in range(rng.randint(1, 8))).encode())
    return out


# --- RWKV -------------------------------------------------------------------------------------

def _rwkv_gguf(path, raw_tokens: list[bytes], *, unk: int | None = None, escaped_extra=()):
    return builders.rwkv_gguf(path, raw_tokens, unk=unk, escaped_extra=escaped_extra)


def _rwkv_world(path, **kw):
    raw = [bytes([b]) for b in range(256)] + [w.encode() for w in WORDS if len(w.encode()) > 1]
    return _rwkv_gguf(path, raw, **kw)


def _compare(ref, session, texts):
    bad = []
    for text in texts:
        # Ours first: on an RWKV dead end it raises, where llama.cpp would loop until bad_alloc.
        got = session.tokenize(text)
        want = ref.encode(text, add_special=False, parse_special=False)
        if got != want:
            bad.append((text, got, want))
    assert not bad, f"{len(bad)}/{len(texts)} mismatches; first (text, ours, llama.cpp): {bad[0]!r}"


def test_rwkv_world_vocab_matches_reference(tmp_path, inproc):
    path = _rwkv_world(tmp_path / "rwkv.gguf")
    ref = inproc(str(path))
    _compare(ref, rwkv.Session(Vocab.from_gguf(path)), _texts(1, WORDS))


def test_rwkv_missing_bytes_emit_unk(tmp_path, inproc):
    """No token starts with a byte >= 0x80: each such byte emits unk (NULL = -1 by default).

    (Multi-byte tokens like 'é' must go too: a trie path with no token on its
    first byte makes llama.cpp loop forever; see the dead-end test.)
    """
    raw = [bytes([b]) for b in range(128)] + [w.encode() for w in WORDS if len(w) > 1 and w.isascii()]
    for unk, name in ((None, "null.gguf"), (5, "unk5.gguf")):
        path = _rwkv_gguf(tmp_path / name, raw, unk=unk)
        session = rwkv.Session(Vocab.from_gguf(path))
        assert session.tokenize(b"\xff")[0] == (-1 if unk is None else 5)
        _compare(inproc(str(path)), session, _texts(2, WORDS, n=40))


def test_rwkv_unescape_quirks_match_reference(tmp_path, inproc):
    r"""Escapes llama.cpp reads oddly: ``\xA1`` (uppercase -> 0x11), ``\q`` -> q, trailing ``\``."""
    raw = [bytes([b]) for b in range(256) if b not in (0x11, ord("z"))]
    extra = [b"\\xA1", b"\\zz", b"yy\\", b"\\x4"]
    path = _rwkv_gguf(tmp_path / "q.gguf", raw, escaped_extra=extra)
    session = rwkv.Session(Vocab.from_gguf(path))
    assert rwkv.unescape(b"\\xA1") == b"\x11"
    _compare(inproc(str(path)), session, [b"\x11", b"zz", b"yyy", b"yy\\", b"\x04", b"zzzz\x11"])


def test_rwkv_dead_end_path_raises_instead_of_looping():
    """'ab' is a token but 'a' is not: llama.cpp loops forever on "ax"; we refuse, naming it."""
    from types import SimpleNamespace
    session = rwkv.Session(SimpleNamespace(tokens=(b"ab", b"x"), unk=None))
    assert session.tokenize(b"abx") == [0, 1]
    with pytest.raises(VocabError, match="never terminates"):
        session.tokenize(b"ax")


# --- PLaMo-2 ----------------------------------------------------------------------------------

PLAMO_SPECIALS = builders.PLAMO_SPECIALS


def _plamo_gguf(path, words=WORDS, *, scores=None, drop_byte=None):
    return builders.plamo2_gguf(path, words, scores=scores, drop_byte=drop_byte)


def test_plamo2_vocab_matches_reference(tmp_path, inproc):
    path = _plamo_gguf(tmp_path / "plamo2.gguf")
    ref = inproc(str(path))
    _compare(ref, plamo2.Session(Vocab.from_gguf(path)), _texts(3, WORDS, n=200))


def test_plamo2_half_scores_round_away_from_zero(tmp_path, inproc):
    """std::round sends halves away from zero; Python's round would send them to even.

    'ab' scores -19.90625 (exact in float32), so score * 1e4 is exactly -199062.5:
    llama.cpp's cost is 199063 and a + b (190000 + 9062 = 199062) is cheaper.
    With round-half-even 'ab' would cost 199062, tie, and win as the longer row.
    """
    words = ["ab", "a", "b", "c"]
    path = _plamo_gguf(tmp_path / "half.gguf", words, scores=[-19.90625, -19.0, -0.9062, -3.0])
    session = plamo2.Session(Vocab.from_gguf(path))
    a, b = Vocab.from_gguf(path).token_to_id[b"a"], Vocab.from_gguf(path).token_to_id[b"b"]
    assert session.tokenize(b"ab") == [a, b]
    _compare(inproc(str(path)), session, [b"ab", b"abc", b"abcab", b"cab"])


def test_plamo2_missing_byte_token_is_refused(tmp_path, inproc):
    """llama.cpp refuses a PLaMo-2 vocab without all 256 byte tokens; so do we."""
    path = _plamo_gguf(tmp_path / "nobyte.gguf", drop_byte=0x41)
    with pytest.raises(VocabError, match="0x41"):
        plamo2.Session(Vocab.from_gguf(path))
    with pytest.raises(Exception):
        inproc(str(path)).encode("A", add_special=False, parse_special=False)


@pytest.mark.parametrize("seed", range(3))
def test_plamo2_random_tiny_vocabs_match_reference(tmp_path, inproc, seed):
    """Scores from a 3-value set: equal-cost paths are common, the first row (longest) must win."""
    rng = random.Random(seed)
    pieces = set()
    while len(pieces) < 50:
        pieces.add("".join(rng.choice("ab語é") for _ in range(rng.randint(1, 4))))
    words = sorted(pieces)
    path = _plamo_gguf(tmp_path / "rand.gguf", words, scores=[float(rng.choice([-1, -2, -3])) for _ in words])
    texts = ["".join(rng.choice("ab語éc\ufeff") for _ in range(rng.randint(1, 20))).encode() for _ in range(150)]
    _compare(inproc(str(path)), plamo2.Session(Vocab.from_gguf(path)), texts)


def test_plamo2_invalid_utf8_token_texts_match_reference(tmp_path, inproc):
    """Token texts that are not UTF-8: llama.cpp's table keys their suffixes by re-encoded
    code points (U+FFFD for bad bytes, overlong forms shortened); ids must still agree."""
    words = [b"x\xff", b"\xffy", b"\xc0\xafz", b"/z", b"\xef\xbf\xbd", b"x", b"y", b"\xed\xa0\x80q"]
    path = _plamo_gguf(tmp_path / "bad.gguf", words,
                       scores=[-1.0, -1.5, -2.0, -3.0, -2.5, -4.0, -4.0, -1.0])
    texts = [b"x\xffy", b"\xff\xff", b"\xc0\xafz", b"/z", b"\xef\xbf\xbdy", b"\xed\xa0\x80q", b"x\xef\xbf\xbd"]
    _compare(inproc(str(path)), plamo2.Session(Vocab.from_gguf(path)), texts)


@pytest.mark.parametrize("build", [_rwkv_world, _plamo_gguf], ids=["rwkv", "plamo2"])
def test_facade_all_flag_combinations(tmp_path, inproc, build):
    """Through harness.tokenizer.Tokenizer: specials split or not, and no BOS/EOS ever added."""
    from harness.tokenizer import Tokenizer
    path = build(tmp_path / "v.gguf")
    tok, ref = Tokenizer.from_gguf(path), inproc(str(path))
    texts = _texts(4, WORDS + ["<s>", "<|plamo:bos|>", "<|plamo:eos|>", "[PAD3]"], n=80)
    bad = [(t, a, p, got, want) for t in texts for a in (False, True) for p in (False, True)
           if (got := tok.encode(t, add_special=a, parse_special=p)) != (want := ref.encode(t, a, p))]
    assert not bad, f"{len(bad)} mismatches; first (text, add_special, parse_special, ours, llama.cpp): {bad[0]!r}"
