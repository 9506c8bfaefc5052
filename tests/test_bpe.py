"""harness.tokenizer.algorithms.bpe against llama.cpp: golden files, the reference, and tiny vocabs.

Real vocabs go through harness.tokenizer.Tokenizer (which cuts out
USER_DEFINED tokens before the session, as llama.cpp does). The hybriddna and
whitespace sessions have no pinned vocab: they are checked on vocabs derived
from gpt-2 (written into tmp_path) against the reference.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import pytest

from harness.tokenizer import unicode as U
from harness.tokenizer.algorithms.bpe import LlamaAbort, Session, merge_word, utf8_symbols
from harness.errors import HarnessError, ReferenceFailure

from harness.conformance.needs import require

# make test runs this module on one worker: its tokenizers and sessions load once, not on both
pytestmark = pytest.mark.xdist_group("test_bpe")

GOLDEN_BPE = ["command-r", "deepseek-coder", "deepseek-llm", "falcon", "gemma-4", "gpt-2", "llama-bpe",
              "mpt", "qwen2", "qwen35", "refact", "starcoder"]
ALL_BPE = sorted(GOLDEN_BPE + ["aquila", "gpt-neox"])

# Texts that broke real ports (known-port-bugs.md classes) or hit llama.cpp quirks (notes §7).
ADVERSARIAL: list[bytes] = [s.encode("utf-8", "surrogatepass") if isinstance(s, str) else s for s in [
    " Việt", "->", "What is 7777 + 3333?", "¼-a", "½-a", "Ⅵ-a", "a 〇b", "\x1f-a", "\ufeff//",
    "ied 4 ½ months", "किसानों", "a\xa0\xa0\x00b", "\xa0aC", "a\u2002b", "I'RE you'Ll", "'RE",
    "\n\nHello", "a\r\n\r\nb", "\r\n", "brutalist", "Der süße Bär", "Hello ? world", "\n\n\n",
    "x ~é ~~", "HelloWorld camelCase ПриВет", "1234567 12a3456", "a\x1c b", "a\u200b b",
    "\U00010d50x \U0002ebf0", "🦙🦙 👍🏽", "你好世界。中文", "\u3000x\u3000\u3000y", "\x85a\u2028b",
    " " * 40 + "x", "\t\t\n \n", "A" * 300, "1" * 200, "a" * 500, "é" * 200, "~" * 100,
    "it's   don't  \n\n  x", "<|endoftext|>", "$100,000.50 + ^~|`", "\u0301a\u0301", "Ａｂｃ１２３",
    b"\xff", b"\xe6\xad", b"a\xc0\x80b", b"\xed\xa0\x80z", b"\xf0\x9f\x98", b"\x80\x80 x\xfe",
]]


@functools.lru_cache(maxsize=None)
def tokenizer(name: str):
    from harness.tokenizer import Tokenizer
    from reference.vocabs import vocab_path
    return Tokenizer.from_gguf(require(vocab_path, name))


FLAG_COMBOS = [(a, p) for a in (False, True) for p in (False, True)]


def _mismatches(tok, ref, texts, combos=FLAG_COMBOS) -> list[str]:
    """Texts whose ids differ under any (add_special, parse_special) combination."""
    bad = []
    for text, (add, parse) in ((t, c) for t in texts for c in combos):
        ours = tok.encode(text, add_special=add, parse_special=parse)
        theirs = ref.encode(text, add_special=add, parse_special=parse)
        if ours != theirs:
            i = next((k for k, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
            bad.append(f"{text!r} add_special={add} parse_special={parse}: first divergence at {i}: "
                       f"ours {ours[max(0, i - 2):i + 6]} "
                       f"llama.cpp {theirs[max(0, i - 2):i + 6]}")
    return bad


@pytest.mark.reference
@pytest.mark.parametrize("name", GOLDEN_BPE)
def test_golden_cases(name):
    """Every .inp/.out pair (test-tokenizer-0: add_special=False, parse_special=False)."""
    from reference.vocabs import golden_cases
    tok = tokenizer(name)
    bad = [f"{text!r}: ours {got} expected {ids}" for text, ids in require(golden_cases, name)
           if (got := tok.encode(text, add_special=False, parse_special=False)) != ids]
    assert not bad, f"{name}: {len(bad)} golden mismatches:\n" + "\n".join(bad[:10])


@pytest.mark.reference
@pytest.mark.parametrize("name", ALL_BPE)
def test_inp_texts_agree_with_reference(name, inproc):
    from reference.vocabs import all_inp_texts
    bad = _mismatches(tokenizer(name), inproc(name), require(all_inp_texts))
    assert not bad, f"{name}: {len(bad)} mismatches:\n" + "\n".join(bad[:10])


def _pieces(ref, ids) -> list[bytes]:
    return [ref.token_to_piece(i, special=True) for i in ids]


@pytest.mark.reference
@pytest.mark.parametrize("name", ALL_BPE)
def test_token_pieces_reencode_alike_sample(name, inproc):
    """A fixed sample of 3000 token pieces (special=True) re-encoded; all of them in the slow test."""
    ref = inproc(name)
    ids = range(0, ref.n_vocab, max(1, ref.n_vocab // 3000))
    bad = _mismatches(tokenizer(name), ref, _pieces(ref, ids), combos=[(False, False), (False, True)])
    assert not bad, f"{name}: {len(bad)} mismatches:\n" + "\n".join(bad[:10])


@pytest.mark.slow
@pytest.mark.reference
@pytest.mark.parametrize("name", ALL_BPE)
def test_every_token_piece_reencodes_alike(name, inproc):
    """Every token's own piece (special=True) re-encoded (make test-slow)."""
    ref = inproc(name)
    bad = _mismatches(tokenizer(name), ref, _pieces(ref, range(ref.n_vocab)), combos=[(False, False), (False, True)])
    assert not bad, f"{name}: {len(bad)} mismatches:\n" + "\n".join(bad[:10])


@pytest.mark.reference
@pytest.mark.parametrize("name", ALL_BPE)
def test_adversarial_texts_agree_with_reference(name, inproc):
    bad = _mismatches(tokenizer(name), inproc(name), ADVERSARIAL)
    assert not bad, f"{name}: {len(bad)} mismatches:\n" + "\n".join(bad[:10])


@pytest.mark.reference
def test_codepoint_beyond_unicode_fails_on_both_sides(inproc):
    """F4 90 80 80 decodes to 0x110000; llama.cpp throws in unicode_cpt_to_utf8."""
    text = b"ab\xf4\x90\x80\x80"
    with pytest.raises(U.CodepointError):
        tokenizer("gpt-2").encode(text)
    with pytest.raises(ReferenceFailure):
        inproc("gpt-2").encode(text, add_special=False, parse_special=False)


# --- tiny hand-built vocabs ------------------------------------------------

def tiny(tokens, merges=(), pre_type="GPT2", **flags):
    """A stand-in Vocab with just what bpe.Session reads."""
    t2i = {t.encode() if isinstance(t, str) else t: i for i, t in enumerate(tokens)}
    ranks = {}
    for rank, m in enumerate(merges):
        a, b = m.split(" ")
        ranks.setdefault((a.encode(), b.encode()), rank)
    base = dict(vocab_type="bpe", model="gpt2", path="<tiny>", ignore_merges=False, lowercase=False,
                escape_whitespaces=False)
    return SimpleNamespace(**{**base, **flags, "pre_type": pre_type, "token_to_id": t2i, "merge_ranks": ranks})


def test_rank_order_and_leftmost_tie():
    """'aaa' with merge 'a a': ranks tie, the leftmost pair merges first -> 'aa' + 'a' (ids 1, 0)."""
    v = tiny(["a", "aa"], ["a a"])
    assert Session(v).tokenize(b"aaa") == [1, 0]
    assert merge_word([b"a", b"a", b"a", b"a"], v.merge_ranks) == [b"aa", b"aa"]


def test_lower_rank_wins_even_to_the_right():
    """'abc' with 'b c' (rank 0) before 'a b' (rank 1): bc first, then no 'a bc' merge -> a, bc."""
    v = tiny(["a", "b", "c", "ab", "bc"], ["b c", "a b"])
    assert Session(v).tokenize(b"abc") == [0, 4]


def test_stale_bigram_is_skipped():
    """'abcd', ranks: 'b c' 0, 'a b' 1, 'c d' 2, 'a bc' 3. After 'bc', the queued 'a b' and 'c d'
    are stale (their sides changed), so 'a bc' (rank 3) still applies: -> 'abc', 'd'."""
    v = tiny(["a", "b", "c", "d", "bc", "ab", "cd", "abc"], ["b c", "a b", "c d", "a bc"])
    assert Session(v).tokenize(b"abcd") == [7, 3]


def test_unknown_symbol_falls_back_per_byte_and_drops():
    """GPT-2 byte-encodes 'é' to 'Ã©'; with no such token each *raw byte of that text* is looked up:
    'Ã' = C3 83 -> only the 1-byte string b'\\x83' exists here (id 1), others are dropped. No UNK."""
    v = tiny(["x", b"\x83", "<unk>"])
    assert Session(v).tokenize("xé".encode()) == [0, 1]


def test_raw_utf8_pre_types_use_hex_byte_tokens():
    """byte_encode=false (GEMMA4): a missing symbol falls back to <0xXX> tokens, missing ones dropped."""
    v = tiny(["a", "<0xC3>", "<0xA9>", "\n", "\n\n"], pre_type="GEMMA4", model="gemma4")
    assert Session(v).tokenize("aé".encode()) == [0, 1, 2]
    # GEMMA4 takes a whole newline run when it is a token, even without merges
    assert Session(v).tokenize(b"a\n\n") == [0, 4]
    assert Session(v).tokenize(b"\n\n\n") == [3, 3, 3]


def test_ignore_merges_takes_whole_words():
    v = tiny(["h", "e", "y", "hey"], [], pre_type="LLAMA3", ignore_merges=True)
    assert Session(v).tokenize(b"hey") == [3]
    v2 = tiny(["h", "e", "y", "hey"], [], pre_type="LLAMA3", ignore_merges=False)
    assert Session(v2).tokenize(b"hey") == [0, 1, 2]


def test_space_inside_a_raw_word_is_a_llama_abort():
    """WHITESPACE pre on a gpt2 model keeps whitespace gaps as words; a 2-char gap containing
    ' ' reaches find_bpe_rank's GGML_ASSERT in llama.cpp."""
    v = tiny(["a", "b", " "], pre_type="WHITESPACE")
    assert Session(v).tokenize(b"a b") == [0, 2, 1]
    with pytest.raises(LlamaAbort, match="GGML_ASSERT"):
        Session(v).tokenize(b"a  b")


def test_whitespace_session_lowercases_and_drops_whitespace():
    v = tiny(["ab", "c", "a", "b"], ["a b"], pre_type="WHITESPACE", model="whitespace", lowercase=True)
    assert Session(v).tokenize("AB\u3000c\n".encode()) == [0, 1]


def test_dna_kmers():
    """k=6 upper-cased k-mers with the U+E000 marker; the tail padded with 'A'; unknown -> <oov>."""
    m = "\ue000"
    v = tiny(["<dna>", "</dna>", "<oov>", "ACGTAC" + m, "GTAAAA" + m, "x"], model="hybriddna")
    assert Session(v).tokenize(b"x<dna>acgtacgt</dna>x") == [5, 0, 3, 4, 1, 5]
    assert Session(v).tokenize(b"<dna>NNNNNNAC") == [0, 2, 2]  # unterminated: k-mers to the end


def test_utf8_symbols_clip_and_do_not_validate():
    assert utf8_symbols(b"\xf0\x9f\xa6\x99a") == [b"\xf0\x9f\xa6\x99", b"a"]
    assert utf8_symbols(b"\x80\xc3") == [b"\x80", b"\xc3"]


def test_session_refuses_other_vocab_types():
    with pytest.raises(HarnessError, match="vocab_type"):
        Session(SimpleNamespace(vocab_type="spm", path="x", pre_type="DEFAULT"))


# --- derived vocabs (harness/inputs/derived/builders.py): the whitespace and hybriddna sessions ---

@pytest.mark.reference
def test_whitespace_model_agrees_with_reference(tmp_path):
    from harness.inputs.derived.builders import whitespace_gguf
    from harness.tokenizer import Tokenizer
    from reference.inproc import InProcessReference
    from reference.vocabs import vocab_path
    texts = ["Hello World  foo\tbar\n\nBaz", "ÀÉÎ ÕÜ", "a\u3000b\xa0c", "x" * 50, "  lead trail  ", "İ ΣΑΣ"]
    for lower in (False, True):
        path = whitespace_gguf(require(vocab_path, "gpt-2"), tmp_path / f"ws{lower}.gguf", lowercase=lower)
        tok, ref = Tokenizer.from_gguf(path), require(InProcessReference.load, path)
        assert _mismatches(tok, ref, texts) == [], f"lowercase={lower}"


@pytest.mark.reference
def test_hybriddna_model_agrees_with_reference(tmp_path):
    from harness.inputs.derived.builders import hybriddna_gguf
    from harness.tokenizer import Tokenizer
    from reference.inproc import InProcessReference
    from reference.vocabs import vocab_path
    path = hybriddna_gguf(require(vocab_path, "gpt-2"), tmp_path / "dna.gguf")
    tok, ref = Tokenizer.from_gguf(path), require(InProcessReference.load, path)
    texts = ["seq <dna>acgtacgtaaaa</dna> end", "<dna>cccccccc", "<dna></dna><dna>NNNNNNA</dna>x",
             "no dna here", "<dna>aaaaaa</dna><dna>é</dna>"]
    assert _mismatches(tok, ref, texts) == []


@pytest.mark.reference
@pytest.mark.parametrize("name", ["gpt-2", "llama-bpe", "qwen2", "gemma-4"])
def test_long_inputs_agree_with_reference(name, inproc):
    """Long words and runs (hand-written splitters only: llama.cpp's std::regex path would
    overflow its stack on these, so R/W-path vocabs are not sent such texts)."""
    texts = [b"a" * 30_000, b" " * 20_000 + b"x", "你好".encode() * 5_000,
             ("Hello world, this is 1234 a test! \n" * 500).encode()]
    assert _mismatches(tokenizer(name), inproc(name), texts) == []


# --- long words merged one cached segment at a time (GEMMA4: a line is one word) -------------

def test_segment_cuts_respect_merges_that_join_a_char_to_a_space():
    session = tokenizer("gemma-4").session()
    cut = session.cut_pattern()
    assert cut is not None
    # gemma-4 merges '>' with '▁</': no cut may fall between them
    assert cut.split("a>▁</b▁c") == ["a>▁</b", "▁c"]


@pytest.mark.reference
def test_segments_merge_like_the_whole_word(inproc):
    from harness.inputs.corpus import corpus
    from reference.vocabs import all_inp_texts, vocab_path
    tok = tokenizer("gemma-4")
    session = tok.session()
    lines = corpus(200_000).splitlines() + all_inp_texts() + ["<b> </b> <i> </i>" * 20, " x" * 100]
    for line in lines:
        for word in session.words(line.replace(" ", "\u2581").encode()):
            syms = utf8_symbols(word)
            if b" " not in word or len(syms) < 2:
                assert session._merge(word, syms) == merge_word(syms, session.ranks()), word
    ref = inproc(str(vocab_path("gemma-4")))
    assert _mismatches(tok, ref, ["<b> </b> <i> </i>" * 20 + "\n" + "a> </b " * 30]) == []
