"""UGM (``llm_tokenizer_ugm_session``) against llama.cpp on nomic-bert-moe.

Layers as in test_spm.py: tiny t5 GGUFs with a hand-built XCDA charsmap
(normalization, whitespace flags, the user-defined prefix quirk, corrupt
charsmaps), the session alone on nomic-bert-moe (raw fragment in,
add_special=False, parse_special=False), then the facade: four flag
combinations on every ``.inp`` text and adversarial texts, every token's piece
(sampled: the vocab has 250k tokens).
"""

from __future__ import annotations

import functools
import itertools
import random
import struct

import pytest

from harness.tokenizer.algorithms import ugm
from harness.tokenizer.algorithms.charsmap import Charsmap
from harness.errors import HarnessError, VocabError
from harness.tokenizer.gguf import GGUFValueType as T
from harness.tokenizer.gguf.writer import write_gguf
from harness.tokenizer.vocab import Vocab
from reference import vocabs

NAME = "nomic-bert-moe"
from tests.support.agreement import FLAGS, mismatches, report  # noqa: E402  (tests/agreement.py)

# make test runs this module on one worker: its tokenizers and sessions load once, not on both
pytestmark = pytest.mark.xdist_group("test_ugm")
USER_DEFINED = 16

# Classes 18 (UNK on emoji), 20 (charsmap / remove_extra_whitespaces / '!!!!!!'), 21 (invalid UTF-8).
ADVERSARIAL = [
    "!!!!!!", "  Hello   world  <mask> x", "one <mask>", "a <mask> b", "<mask>", "<s>x</s>", "<unk>",
    "😀", "😀😀 🤖", "a\u3000b", "ＡＢＣ①ﬁ㍿", "ｶﾞｷﾞ", "\t\n\r", "\x00a", "Hello\x00World", "\u00a0\u00a0x",
    "Kantō", "lǜshi", "a\na", "한국어", "x\u0301", "…", "“quote”", "ⅷ", "\ufeffx", "\u200b", "\U0010ffff",
    "", " ", "   ", "▁", "▁▁x▁", "A" * 2000, "ab " * 300,
    # an ASCII letter starts charsmap keys that go on with a combining mark
    "e\u0301", "ae\u0301b", "A\u030a.", "oe\u0308 u\u0308e", "e\u0301\u0301", "n\u0303a", "e\u0301",
    "Q\u0301", "<\u0338", "=\u0338x", ">\u0338 ", "a\u0301\x00",
]
ADVERSARIAL_BYTES = [b"\xff", b"a\xe4\xbd", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                     b"\xf7\xbf\xbf\xbf\x80", b"\x80 \x80", b"\xe6\xad x"]


def _random_texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = list("aB .,!é中한\u0301\u00a0\u3000\x00ÿ①ﬁＡ😀 ") + ["<mask>", "<s>", "</s>", "▁"]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 25))) for _ in range(n)]


@functools.lru_cache(maxsize=None)
def _vocab(name: str = NAME) -> Vocab:
    return Vocab.from_gguf(vocabs.vocab_path(name))


@functools.lru_cache(maxsize=None)
def _session(name: str = NAME) -> ugm.Session:
    return ugm.Session(_vocab(name))


@functools.lru_cache(maxsize=None)
def _tokenizer(name: str = NAME):
    from harness.tokenizer import Tokenizer
    return Tokenizer(_vocab(name))



# --- 1. tiny vocabs with a hand-built charsmap --------------------------------------------------

def xcda(mapping: dict[bytes, int], size: int = 512) -> list[int]:
    """A one-level XCDA: each 1-byte key c maps to replacement offset ``mapping[c]``.

    Root BASE = 1; key c lives at node 1^c (LCHECK c, LEAF, BASE 1), whose value
    node (1^c)^1 = c holds the offset with bit 31 set (so it never matches as LCHECK).
    """
    nodes = [0] * size
    nodes[0] = 1 << 10
    for key, offset in mapping.items():
        c = key[0]
        nodes[1 ^ c] = (1 << 10) | (1 << 8) | c
        nodes[c] = (1 << 31) | offset
    return nodes


def charsmap(nodes: list[int], replacements: bytes) -> bytes:
    return struct.pack("<I", 4 * len(nodes)) + struct.pack(f"<{len(nodes)}I", *nodes) + replacements


# 'a' -> 'xyz', 'A' -> 'a', '\t' -> ' ' (as SentencePiece's nmt_nfkc maps controls to spaces)
GOOD_MAP = charsmap(xcda({b"a": 0, b"A": 4, b"\t": 6}), b"xyz\x00a\x00 \x00")

TINY = [("<pad>", 3, 0.0), ("</s>", 3, 0.0), ("<unk>", 2, 0.0), ("▁", 1, -2.0), ("a", 1, -3.0),
        ("b", 1, -3.0), ("x", 1, -3.0), ("y", 1, -3.0), ("z", 1, -3.0), ("▁a", 1, -2.5),
        ("ab", 1, -2.5), ("▁ab", 1, -4.0), ("xyz", 1, -1.0), ("▁xyz", 1, -1.5), ("<abc>", 4, 0.0),
        ("q", 5, -50.0), ("é", 1, -6.0),
        # UNUSED: in the trie but not in min_score (-6), so unk = -16: 'üa' (-18.5) beats unk + 'a' (-19)
        ("üa", 5, -18.5)]


def _tiny(tmp_path, blob: bytes | None = GOOD_MAP, **flags):
    path = tmp_path / "tiny-ugm.gguf"
    meta = {"general.architecture": (T.STRING, "t5"),
            "tokenizer.ggml.model": (T.STRING, "t5"),
            "tokenizer.ggml.tokens": (T.ARRAY, [t for t, _, _ in TINY], T.STRING),
            "tokenizer.ggml.token_type": (T.ARRAY, [k for _, k, _ in TINY], T.INT32),
            "tokenizer.ggml.scores": (T.ARRAY, [s for _, _, s in TINY], T.FLOAT32)}
    if blob is not None:
        meta["tokenizer.ggml.precompiled_charsmap"] = (T.ARRAY, list(blob), T.UINT8)
    for key, value in flags.items():
        meta[f"tokenizer.ggml.{key}"] = (T.BOOL, value)
    write_gguf(path, meta)
    return path


TINY_TEXTS = [b"a", b"A", b"ab", b" ab", b"  a  b  ", b"a\tb", b"\x00a", b"aa", b"xyzb", b"q", b"qq",
              b"<ab", b"<abx", b"<a", b"<<a", b"\xc3\xa9", b"\xc3", b"\xff\xfe", b"\xe2\x96\x81a",
              b"c", b"ccc a", b"", b" ", b"\t", "üa".encode(), "üb".encode()]


@pytest.mark.parametrize("prefix, merge", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("with_map", [False, True])
def test_tiny_vocab_matches_reference(tmp_path, inproc, prefix, merge, with_map):
    path = _tiny(tmp_path, GOOD_MAP if with_map else None,
                 add_space_prefix=prefix, remove_extra_whitespaces=merge)
    session, ref = ugm.Session(Vocab.from_gguf(path)), inproc(str(path))
    bad = [(t, got, want) for t in TINY_TEXTS
           if (got := session.tokenize(t)) != (want := ref.encode(t, add_special=False, parse_special=False))]
    assert not bad, f"{len(bad)} mismatches; first (text, ours, llama.cpp): {bad[0]!r}"


def test_normalize_examples(tmp_path):
    """The charsmap, the user-defined prefix quirk and the space rules, spelled out."""
    session = ugm.Session(Vocab.from_gguf(_tiny(tmp_path, add_space_prefix=True,
                                                remove_extra_whitespaces=True)))
    norm = lambda b: session.normalize(b).decode()  # noqa: E731
    assert norm(b"  A\ta  ") == "▁a▁xyz"       # A -> a, \t -> ' ' merged, a -> xyz
    assert norm(b"<a") == "▁<a"                # '<a' is a path in the '<abc>' trie: passes verbatim
    assert norm(b"\x00a") == "▁\x00xyz"         # NUL ends the XCDA walk; then 'a' maps
    assert norm(b"\xff") == "▁\ufffd"


CORRUPT = {
    # node 0's BASE points past a 1-node array: llama.cpp throws at the first lookup
    "xcda index": (charsmap([100 << 10], b"\x00"), "XCDA node index"),
    # a leaf whose replacement offset is past the replacement bytes
    "replacement offset": (charsmap(xcda({b"a": 50}), b"xyz\x00"), "replacement offset"),
    # a replacement string with no NUL before the end
    "unterminated": (charsmap(xcda({b"a": 0}), b"xyz"), "NUL"),
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupt_charsmap_raises_vocab_error_where_llama_cpp_throws(tmp_path, inproc, case):
    blob, message = CORRUPT[case]
    session = ugm.Session(Vocab.from_gguf(_tiny(tmp_path, blob)))
    with pytest.raises(VocabError, match=message):
        session.tokenize(b"a")
    with pytest.raises(HarnessError):
        inproc(str(tmp_path / "tiny-ugm.gguf")).encode(b"a", add_special=False, parse_special=False)


@pytest.mark.parametrize("blob", [b"\x01\x00", struct.pack("<I", 8) + b"\x00" * 8, struct.pack("<I", 99)])
def test_truncated_charsmap_is_refused_at_construction(blob):
    """A header larger than the blob: llama.cpp refuses the vocab at load; never an IndexError."""
    with pytest.raises(VocabError):
        Charsmap(blob)


# --- 2. the session alone ---------------------------------------------------------------------

def test_session_matches_reference(inproc):
    ref, vocab, session = inproc(NAME), _vocab(), _session()
    specials = [t for t, a in zip(vocab.tokens, vocab.attrs) if a & USER_DEFINED]
    texts = [t.encode() for t in vocabs.all_inp_texts() + ADVERSARIAL + _random_texts(1, 300)]
    texts = [t for t in texts + ADVERSARIAL_BYTES if not any(s in t for s in specials)]
    bad = [(t, got, want) for t in texts
           if (got := session.tokenize(t)) != (want := ref.encode(t, add_special=False, parse_special=False))]
    assert not bad, f"{len(bad)}/{len(texts)} mismatches; first (text, ours, llama.cpp): {bad[0]!r}"


# --- 3. through the facade --------------------------------------------------------------------

def test_all_flag_combinations(inproc):
    texts = vocabs.all_inp_texts() + ADVERSARIAL + ADVERSARIAL_BYTES + _random_texts(2, 200)
    bad = mismatches(_tokenizer(), inproc(NAME), texts)
    assert not bad, report(bad, len(texts) * len(FLAGS))


def test_token_pieces_reencode_alike(inproc):
    """Token pieces (special=True) re-encoded: a fixed sample of 20000 of the 250k ids, plus every special."""
    ref, tok, vocab = inproc(NAME), _tokenizer(), _vocab()
    ids = sorted(set(random.Random(0).sample(range(ref.n_vocab), 20000))
                 | {i for i, a in enumerate(vocab.attrs) if a & ~4})
    pieces = [ref.token_to_piece(i, special=True) for i in ids]
    pieces += [vocab.tokens[i] for i in ids[:3000]]  # raw texts too (with their '▁')
    bad = mismatches(tok, ref, pieces, flags=[(False, False), (False, True)])
    assert not bad, report(bad, 2 * len(pieces))


# --- random tiny vocabs: Viterbi ties, unk runs, user-defined prefixes --------------------------

@pytest.mark.parametrize("seed", range(4))
def test_random_tiny_vocabs_match_reference(tmp_path, inproc, seed):
    """Scores from a 3-value set make equal-score paths common: strict > keeps the first found."""
    rng = random.Random(seed)
    pieces = set()
    while len(pieces) < 50:
        pieces.add("".join(rng.choice("ab▁é") for _ in range(rng.randint(1, 4))))
    kinds = [rng.choice([1, 1, 1, 1, 5]) for _ in pieces]  # some UNUSED: in the trie, not in min_score
    TINY_R = [("<pad>", 3, 0.0), ("</s>", 3, 0.0), ("<unk>", 2, 0.0), ("<ab>", 4, 0.0)] + [
        (p, k, float(rng.choice([-1, -2, -3]))) for p, k in zip(sorted(pieces), kinds)]
    path = tmp_path / "rand-ugm.gguf"
    write_gguf(path, {"general.architecture": (T.STRING, "t5"), "tokenizer.ggml.model": (T.STRING, "t5"),
                      "tokenizer.ggml.tokens": (T.ARRAY, [t for t, _, _ in TINY_R], T.STRING),
                      "tokenizer.ggml.token_type": (T.ARRAY, [k for _, k, _ in TINY_R], T.INT32),
                      "tokenizer.ggml.scores": (T.ARRAY, [s for _, _, s in TINY_R], T.FLOAT32),
                      "tokenizer.ggml.add_space_prefix": (T.BOOL, seed % 2 == 0),
                      "tokenizer.ggml.remove_extra_whitespaces": (T.BOOL, seed // 2 == 0)})
    session, ref = ugm.Session(Vocab.from_gguf(path)), inproc(str(path))
    texts = ["".join(rng.choice(["a", "b", " ", "é", "c", "<", "<a", "😀"]) for _ in range(rng.randint(1, 20)))
             for _ in range(150)]
    texts = [t.encode() for t in texts if "<ab>" not in t]
    bad = [(t, got, want) for t in texts
           if (got := session.tokenize(t)) != (want := ref.encode(t, add_special=False, parse_special=False))]
    assert not bad, f"{len(bad)}/{len(texts)} mismatches; first (text, ours, llama.cpp): {bad[0]!r}"


# --- the cached fast paths equal the whole-fragment reference ----------------------------------

def _write_tiny(path, entries, **flags):
    meta = {"general.architecture": (T.STRING, "t5"), "tokenizer.ggml.model": (T.STRING, "t5"),
            "tokenizer.ggml.tokens": (T.ARRAY, [t for t, _, _ in entries], T.STRING),
            "tokenizer.ggml.token_type": (T.ARRAY, [k for _, k, _ in entries], T.INT32),
            "tokenizer.ggml.scores": (T.ARRAY, [s for _, _, s in entries], T.FLOAT32)}
    meta.update({f"tokenizer.ggml.{k}": (T.BOOL, v) for k, v in flags.items()})
    write_gguf(path, meta)
    return path


@pytest.mark.parametrize("seed", range(4))
def test_random_cuttable_tiny_vocabs_match_reference(tmp_path, inproc, seed):
    """'▁' only as a leading run: normalization by chunks and Viterbi by segments (with
    unk runs meeting at segment edges) give llama.cpp's ids."""
    rng = random.Random(seed)
    pieces = set()
    while len(pieces) < 50:
        pieces.add("▁" * rng.choice([0, 0, 1, 2]) + "".join(rng.choice("abé") for _ in range(rng.randint(1, 3))))
    entries = [("<pad>", 3, 0.0), ("</s>", 3, 0.0), ("<unk>", 2, 0.0), ("<ab>", 4, 0.0), ("▁", 1, -2.0)] + [
        (p, rng.choice([1, 1, 1, 5]), float(rng.choice([-1, -2, -3]))) for p in sorted(pieces)]
    path = _write_tiny(tmp_path / "cut-ugm.gguf", entries, add_space_prefix=seed % 2 == 0,
                       remove_extra_whitespaces=seed // 2 == 0)
    session, ref = ugm.Session(Vocab.from_gguf(path)), inproc(str(path))
    assert session._cuttable and session.cuts_at_spaces()
    texts = ["".join(rng.choice(["a", "b", " ", "  ", "é", "c", "cc ", "<a", "😀"]) for _ in range(rng.randint(1, 20)))
             for _ in range(150)]
    texts = [t.encode() for t in texts if "<ab>" not in t] * 2  # the second pass hits the caches
    bad = [(t, got, want) for t in texts
           if (got := session.tokenize(t)) != (want := ref.encode(t, add_special=False, parse_special=False))]
    assert not bad, f"{len(bad)}/{len(texts)} mismatches; first (text, ours, llama.cpp): {bad[0]!r}"


def test_a_user_text_with_an_inner_space_stops_the_chunking(tmp_path, inproc):
    from harness.tokenizer import Tokenizer
    path = _write_tiny(tmp_path / "sp.gguf", TINY + [("<a b>", 4, 0.0)])
    tok, ref = Tokenizer.from_gguf(path), inproc(str(path))
    assert not tok.session().cuts_at_spaces()
    # the facade cuts the whole user text out first; partial walks reach the session
    for text in [b"x <a b> y", b"<a bb", b"<a  b>", b"a <a  b c"]:
        assert tok.encode(text) == ref.encode(text, add_special=False, parse_special=False), text


def test_charsmap_space_analysis_on_the_pinned_vocab():
    cm = _session()._charsmap
    assert not cm.byte_inside_keys(0x20)     # so nomic-bert-moe normalizes chunk by chunk
    assert cm.byte_inside_keys(0xCC)         # combining marks continue many keys
    assert _session()._exact_len > 100_000   # sums stay exact far beyond a 4 KB chunk


def test_chunks_and_segments_equal_the_whole_fragment():
    from harness.inputs.corpus import corpus
    session = _session()
    texts = [t.encode() for t in vocabs.all_inp_texts()] + [c.encode() for c in corpus(100_000).split("\n")]
    texts += ADVERSARIAL_BYTES + [t.encode() for t in ADVERSARIAL]
    for t in texts:
        whole = session.place_spaces(session._normalize_prefixes(t))
        assert session.normalize(t) == whole, t
        assert session.tokenize(t) == (session._viterbi(whole) if whole else []), t
