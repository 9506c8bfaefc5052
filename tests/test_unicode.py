"""harness.tokenizer.unicode mirrors llama.cpp's unicode.cpp + unicode-data.cpp at the pin.

The tables were checked code point by code point against a driver compiled
from the pinned src/unicode.cpp (flags, tolower and NFD equal for all
0x110000 cpts); these tests pin the facts that matter for tokenization and
that the committed generated file still equals a fresh generation.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import example, given, strategies as st

from harness.tokenizer import unicode as U

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import gen_unicode_tables  # noqa: E402


def test_generated_tables_are_fresh():
    src = gen_unicode_tables.default_source()
    if src is None or not src.is_file():
        pytest.skip("set LLAMA_CPP_DIR to the pinned llama.cpp tree (or `make reference`) to compare; regenerate with "
                    "`python tools/gen_unicode_tables.py --llama-cpp $LLAMA_CPP_DIR`")
    fresh = gen_unicode_tables.render(src.read_bytes())
    committed = (REPO / "harness" / "tokenizer" / "unicode" / "_tables.py").read_text(encoding="utf-8")
    assert committed == fresh, ("harness/tokenizer/unicode/_tables.py is stale: run "
                                "`python tools/gen_unicode_tables.py --llama-cpp $LLAMA_CPP_DIR`")


def test_table_sizes_match_the_pin():
    # unicode-data.cpp at the pin: 1433 lowercase pairs, 1828 NFD ranges.
    assert len(U.T.UNICODE_MAP_LOWERCASE) == 2 * 1433
    assert len(U.T.UNICODE_RANGES_NFD) == 3 * 1828
    assert U.FLAGS.shape == (0x110000,) and str(U.FLAGS.dtype) == "uint16"


def test_whitespace_set_is_exactly_llama_cpps_25():
    expected = {*range(0x9, 0xE), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
                0x2028, 0x2029, 0x202F, 0x205F, 0x3000}
    assert len(expected) == 25
    assert {cp for cp in range(0x110000) if U.is_whitespace(cp)} == expected
    # Python's str.isspace() says yes to these, llama.cpp says no (notes §7.7)
    for cp in (0x1C, 0x1D, 0x1E, 0x1F, 0x180E, 0x200B, 0xFEFF):
        assert not U.is_whitespace(cp), hex(cp)


@pytest.mark.parametrize("cp, category", [
    (0x10D50, U.UNDEFINED),     # Unicode 16 letter: Cn in 15.1
    (0x2EBF0, U.LETTER),        # CJK Ext-I, new in 15.1
    (ord("~"), U.SYMBOL),       # Sm (and in no collapsed R-path class)
    (ord("$"), U.SYMBOL), (ord("_"), U.PUNCTUATION), (ord("`"), U.SYMBOL),
    (0xBD, U.NUMBER), (0x2165, U.NUMBER), (0x3007, U.NUMBER),  # ½ Ⅵ 〇
    (0x0301, U.ACCENT_MARK), (0x094B, U.ACCENT_MARK),
    (0x00, U.CONTROL), (0xAD, U.CONTROL), (0xFEFF, U.CONTROL), (0xE000, U.CONTROL),
    (0x20, U.SEPARATOR), (0xA0, U.SEPARATOR), (0x85, U.CONTROL),
    (0xFFFE, U.UNDEFINED), (0x10FFFF, U.UNDEFINED), (0x110000, U.UNDEFINED), (0x1FFFFF, U.UNDEFINED),
])
def test_categories(cp, category):
    assert U.cpt_flags(cp) & U.MASK_CATEGORIES == category


def test_helper_bits_mark_map_targets():
    # llama.cpp sets LOWERCASE on the *targets* of the lowercase map, etc.
    assert U.cpt_flags(ord("a")) & U.LOWERCASE and not U.cpt_flags(ord("A")) & U.LOWERCASE
    assert U.cpt_flags(ord("A")) & U.UPPERCASE
    assert U.cpt_flags(ord("e")) & U.NFD and not U.cpt_flags(ord("é")) & U.NFD
    assert U.cpt_flags(0x20) == U.SEPARATOR | U.WHITESPACE
    assert U.cpt_flags(0x110000) == U.UNDEFINED  # beyond the table: bare UNDEFINED


def test_to_lower_and_nfd_first():
    assert U.to_lower(ord("Ä")) == ord("ä")
    assert U.to_lower(0x130) == ord("i")           # İ -> i (single cpt, no combining dot)
    assert U.to_lower(ord("ß")) == ord("ß") and U.to_lower(0x1E9E) == ord("ß")
    assert U.to_lower(0x110005) == 0x110005
    assert U.nfd_first(ord("é")) == ord("e")
    assert U.nfd_first(0xD55C) == 0x1112           # 한 -> ᄒ only (notes §7.19)
    assert U.nfd_first(0x1FFFFF) == 0x1FFFFF
    assert int(U.LOWER[ord("Z")]) == ord("z") and int(U.NFD_FIRST[0xC5]) == ord("A")


@pytest.mark.parametrize("data, cpts", [
    (b"", []),
    (b"a\xffb", [0x61, 0xFFFD, 0x62]),
    (b"\xe6\xad", [0xFFFD, 0xFFFD]),                 # truncated: every byte replaced
    (b"\xf0\x9f\x98", [0xFFFD] * 3),
    (b"\xf0\x9f\x98\x80", [0x1F600]),
    (b"\xc0\x80", [0]), (b"\xe0\x80\xaf", [0x2F]),   # overlongs accepted
    (b"\xed\xa0\x80", [0xD800]),                     # surrogate accepted
    (b"\xf4\x90\x80\x80", [0x110000]), (b"\xf7\xbf\xbf\xbf", [0x1FFFFF]),
    (b"\xf8\x88\x80\x80\x80", [0xFFFD] * 5),         # 5-byte lead: invalid, then 4 stray bytes
    (b"\x80\xbf", [0xFFFD, 0xFFFD]),
    (b"\xc3\x28", [0xFFFD, 0x28]),                   # bad continuation: lead replaced, 2nd byte kept
    (b"\xe2\x82\x28\xac", [0xFFFD, 0xFFFD, 0x28, 0xFFFD]),
])
def test_cpts_from_utf8(data, cpts):
    assert U.cpts_from_utf8(data) == cpts
    assert U.cpts_from_utf8_slow(data) == cpts


@given(st.binary(max_size=40))
@example(b"\xed\xbf\xbf\xf4\x8f\xbf\xbf")
def test_fast_utf8_equals_reference_loop(data):
    assert U.cpts_from_utf8(data) == U.cpts_from_utf8_slow(data)


def test_text_from_utf8_refuses_beyond_unicode():
    assert U.text_from_utf8(b"\xed\xa0\x80x") == "\ud800x"
    with pytest.raises(U.CodepointError, match="0x110000"):
        U.text_from_utf8(b"a\xf4\x90\x80\x80")


def test_cpt_to_utf8():
    assert U.cpt_to_utf8(0) == b"\x00"
    assert U.cpt_to_utf8(0xDFFF) == b"\xed\xbf\xbf"
    assert U.cpt_to_utf8(0x10FFFF) == b"\xf4\x8f\xbf\xbf"
    with pytest.raises(U.CodepointError):
        U.cpt_to_utf8(0x110000)


def test_gpt2_byte_map():
    assert len(set(U.BYTE_TO_UNICODE)) == 256
    assert U.BYTE_TO_UNICODE[ord(" ")] == "\u0120" and U.BYTE_TO_UNICODE[ord("\n")] == "\u010a"
    assert U.BYTE_TO_UNICODE[0xAD] == "\u0143" and U.BYTE_TO_UNICODE[0xFF] == "\xff"
    assert all(U.BYTE_TO_UNICODE[b] == chr(b) for b in range(0x21, 0x7F))
    assert all(U.UNICODE_TO_BYTE[c] == b for b, c in enumerate(U.BYTE_TO_UNICODE))
    assert U.byte_encode("a \ufffd") == "aĠï¿½"


def test_is_han():
    assert U.is_han(0x4E00) and U.is_han(0x2EBEF) and U.is_han(0xF900)
    assert not U.is_han(0x2EBF0) and not U.is_han(0x3007) and not U.is_han(0x30000)
