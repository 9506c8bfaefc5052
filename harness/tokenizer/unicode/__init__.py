"""llama.cpp's own Unicode view (src/unicode.cpp + unicode-data.cpp at the pin).

llama.cpp classifies code points with tables generated from Unicode 15.1, not
with Python's ``unicodedata`` (14.0 on 3.11) nor the ``regex`` module (17.0),
and decodes UTF-8 with its own lenient rules. Everything here mirrors those
functions exactly, including their oddities (which are documented inline).

>>> from harness.tokenizer import unicode as U
>>> bool(U.cpt_flags(ord("a")) & U.LETTER), U.to_lower(ord("A")) == ord("a")
(True, True)
>>> U.cpt_flags(0x10D50) == U.UNDEFINED   # assigned in Unicode 16, not in 15.1
True
>>> U.cpts_from_utf8(b"a\\xffb")
[97, 65533, 98]
"""

from __future__ import annotations

import bisect
import codecs

import numpy as np

from harness.errors import HarnessError

from . import _tables


def _ints(name: str) -> list[int]:
    """One generated table: whitespace-separated hex numbers, flattened rows."""
    return [int(t, 16) for t in getattr(_tables, name).split()]


class T:  # the generated tables as flat int lists
    UNICODE_RANGES_FLAGS = _ints("UNICODE_RANGES_FLAGS")
    UNICODE_SET_WHITESPACE = _ints("UNICODE_SET_WHITESPACE")
    UNICODE_MAP_LOWERCASE = _ints("UNICODE_MAP_LOWERCASE")
    UNICODE_MAP_UPPERCASE = _ints("UNICODE_MAP_UPPERCASE")
    UNICODE_RANGES_NFD = _ints("UNICODE_RANGES_NFD")

__all__ = [
    "UNDEFINED", "NUMBER", "LETTER", "SEPARATOR", "ACCENT_MARK", "PUNCTUATION", "SYMBOL",
    "CONTROL", "MASK_CATEGORIES", "WHITESPACE", "LOWERCASE", "UPPERCASE", "NFD", "MAX_CODEPOINTS",
    "FLAGS", "LOWER", "NFD_FIRST", "BYTE_TO_UNICODE", "UNICODE_TO_BYTE",
    "CodepointError", "cpt_flags", "is_whitespace", "to_lower", "nfd_first", "cpts_from_utf8",
    "text_from_utf8", "cpt_to_utf8", "cpts_to_utf8", "is_han", "byte_encode",
]

# unicode_cpt_flags bit values (src/unicode.h)
UNDEFINED, NUMBER, LETTER, SEPARATOR = 0x0001, 0x0002, 0x0004, 0x0008
ACCENT_MARK, PUNCTUATION, SYMBOL, CONTROL = 0x0010, 0x0020, 0x0040, 0x0080
MASK_CATEGORIES = 0x00FF
WHITESPACE, LOWERCASE, UPPERCASE, NFD = 0x0100, 0x0200, 0x0400, 0x0800
MAX_CODEPOINTS = 0x110000


class CodepointError(HarnessError):
    """A code point llama.cpp cannot encode (> U+10FFFF): its unicode_cpt_to_utf8 throws.

    In llama_tokenize that exception is uncaught, so llama.cpp terminates; the
    harness raises this instead so callers can report the input as one the
    reference cannot tokenize.
    """


def _build_flags() -> np.ndarray:
    """unicode_cpt_flags_array(): category ranges, then the helper bits."""
    rf = np.asarray(T.UNICODE_RANGES_FLAGS, dtype=np.int64).reshape(-1, 2)
    starts, values = rf[:, 0], rf[:, 1]
    flags = np.repeat(values[:-1].astype(np.uint16), np.diff(starts))
    flags[np.asarray(T.UNICODE_SET_WHITESPACE)] |= WHITESPACE
    lower = np.asarray(T.UNICODE_MAP_LOWERCASE, dtype=np.int64).reshape(-1, 2)
    upper = np.asarray(T.UNICODE_MAP_UPPERCASE, dtype=np.int64).reshape(-1, 2)
    # llama.cpp marks the *target* of each map: the lowercase of an upper/title
    # letter gets LOWERCASE, the uppercase of a lower letter gets UPPERCASE.
    flags[lower[:, 1]] |= LOWERCASE
    flags[upper[:, 1]] |= UPPERCASE
    nfd = np.asarray(T.UNICODE_RANGES_NFD, dtype=np.int64).reshape(-1, 3)
    # ... and likewise it marks the NFD *result* (first cpt), not the source.
    flags[nfd[:, 2]] |= NFD
    return flags


def _build_lower() -> np.ndarray:
    low = np.arange(MAX_CODEPOINTS, dtype=np.uint32)
    pairs = np.asarray(T.UNICODE_MAP_LOWERCASE, dtype=np.int64).reshape(-1, 2)
    low[pairs[:, 0]] = pairs[:, 1]
    return low


def _build_nfd() -> tuple[np.ndarray, list[int]]:
    out = np.arange(MAX_CODEPOINTS, dtype=np.uint32)
    nfd = np.asarray(T.UNICODE_RANGES_NFD, dtype=np.int64).reshape(-1, 3)
    for first, last, target in nfd.tolist():
        out[first:last + 1] = target
    return out, nfd[:, 0].tolist()


FLAGS: np.ndarray = _build_flags()
LOWER: np.ndarray = _build_lower()
NFD_FIRST, _NFD_STARTS = _build_nfd()
_NFD_ROWS = np.asarray(T.UNICODE_RANGES_NFD, dtype=np.int64).reshape(-1, 3).tolist()
_LOWER_MAP = dict(zip(T.UNICODE_MAP_LOWERCASE[0::2], T.UNICODE_MAP_LOWERCASE[1::2]))


def cpt_flags(cp: int) -> int:
    """unicode_cpt_flags_from_cpt(cp).as_uint(): UNDEFINED beyond the table.

    >>> hex(cpt_flags(0x20))           # SEPARATOR | WHITESPACE
    '0x108'
    >>> cpt_flags(ord("~")) == SYMBOL
    True
    """
    return int(FLAGS[cp]) if 0 <= cp < MAX_CODEPOINTS else UNDEFINED


def is_whitespace(cp: int) -> bool:
    """The WHITESPACE bit: exactly llama.cpp's hard-coded 25 code points.

    >>> is_whitespace(0x85), is_whitespace(0x1C), is_whitespace(0x200B)
    (True, False, False)
    """
    return bool(cpt_flags(cp) & WHITESPACE)


def to_lower(cp: int) -> int:
    """unicode_tolower: one table lookup (no special casing); unmapped -> itself.

    >>> chr(to_lower(ord("Ä"))), to_lower(0x130) == ord("i")
    ('ä', True)
    """
    return _LOWER_MAP.get(cp, cp)


def cpts_lowering_to(cp: int) -> list[int]:
    """Every cpt whose unicode_tolower is ``cp`` (``cp`` itself included).

    >>> [chr(c) for c in cpts_lowering_to(ord("s"))]
    ['S', 's']
    """
    return sorted({cp, *(k for k, v in _LOWER_MAP.items() if v == cp)})


def nfd_first(cp: int) -> int:
    """unicode_cpts_normalize_nfd for one cpt: the first cpt of its NFD, else cp.

    >>> chr(nfd_first(ord("é"))), hex(nfd_first(0xD55C))   # 한 -> ᄒ
    ('e', '0x1112')
    """
    i = bisect.bisect_right(_NFD_STARTS, cp) - 1
    first, last, target = _NFD_ROWS[i]
    return target if first <= cp <= last else cp


def is_han(cp: int) -> bool:
    """unicode_cpt_is_han: llama.cpp's fixed list of CJK ranges (no Ext G-I, no radicals).

    >>> is_han(0x4E00), is_han(0x3007), is_han(0x30000)
    (True, False, False)
    """
    return any(lo <= cp <= hi for lo, hi in _HAN_RANGES)


_HAN_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0x2CEB0, 0x2EBEF), (0xF900, 0xFAFF),
               (0x2F800, 0x2FA1F))


# --- UTF-8 -----------------------------------------------------------------

def _decode_one(b: bytes, i: int) -> tuple[int, int]:
    """unicode_cpt_from_utf8 at offset i -> (cpt, length), or (0xFFFD, 1) where it throws.

    Lenient like llama.cpp: overlong forms, surrogates and values up to
    0x1FFFFF (lead bytes F0-F7) decode; a lead byte needs all its continuation
    bytes present, and a bare continuation byte or F8-FF is invalid.
    """
    n = len(b)
    c = b[i]
    if c < 0x80:
        return c, 1
    if c < 0xC0 or c >= 0xF8:
        return 0xFFFD, 1
    need = 1 if c < 0xE0 else 2 if c < 0xF0 else 3
    if i + need >= n:  # llama.cpp: `offset + k >= utf8.size()` throws
        return 0xFFFD, 1
    cp = c & (0x1F, 0x0F, 0x07)[need - 1]
    for k in range(1, need + 1):
        cc = b[i + k]
        if cc & 0xC0 != 0x80:
            return 0xFFFD, 1
        cp = (cp << 6) | (cc & 0x3F)
    return cp, need + 1


def cpts_from_utf8_slow(b: bytes) -> list[int]:
    """The plain reference loop of unicode_cpts_from_utf8 (kept beside the fast path).

    >>> cpts_from_utf8_slow(b"\\xe6\\xad")            # truncated: each byte -> U+FFFD
    [65533, 65533]
    >>> cpts_from_utf8_slow(b"\\xc0\\x80\\xed\\xa0\\x80")  # overlong NUL, lone surrogate
    [0, 55296]
    """
    out, i = [], 0
    while i < len(b):
        cp, n = _decode_one(b, i)
        out.append(cp)
        i += n
    return out


class _Beyond(Exception):
    """A cpt > 0x10FFFF: cannot live in a str, so the fast path gives up."""


def _llama_errors(exc: UnicodeDecodeError) -> tuple[str, int]:
    # Python's strict decoder and llama.cpp agree on every valid sequence, so
    # the first place they can differ is where Python reports an error; from
    # there llama.cpp's rule decides what one step consumes.
    cp, n = _decode_one(exc.object, exc.start)
    if cp > 0x10FFFF:
        raise _Beyond()
    return chr(cp), exc.start + n


codecs.register_error("llama_cpp_utf8", _llama_errors)


def text_from_utf8(b: bytes) -> str:
    """unicode_cpts_from_utf8 as a str (surrogates kept as lone surrogates).

    Raises CodepointError for a decoded value above U+10FFFF (llama.cpp would
    later throw in unicode_cpt_to_utf8 and terminate).

    >>> text_from_utf8(b"\\xf0\\x9f\\x98")          # truncated 4-byte sequence
    '���'
    """
    try:
        return b.decode("utf-8", errors="llama_cpp_utf8")
    except _Beyond:
        bad = next(c for c in cpts_from_utf8_slow(b) if c > 0x10FFFF)
        raise CodepointError(
            f"the text decodes (by llama.cpp's lenient UTF-8 rules) to code point 0x{bad:X} > U+10FFFF; "
            "llama.cpp throws 'invalid codepoint' there and llama_tokenize terminates. "
            "Drop 4-byte sequences above F4 8F BF BF from the input.") from None


def cpts_from_utf8(b: bytes) -> list[int]:
    """unicode_cpts_from_utf8: each invalid byte -> U+FFFD, advancing one byte.

    >>> cpts_from_utf8(b"\\xf7\\xbf\\xbf\\xbf")       # accepted by llama.cpp, beyond Unicode
    [2097151]
    """
    try:
        return [ord(c) for c in b.decode("utf-8", errors="llama_cpp_utf8")]
    except _Beyond:
        return cpts_from_utf8_slow(b)


def cpt_to_utf8(cp: int) -> bytes:
    """unicode_cpt_to_utf8: surrogates encode as 3 bytes; > U+10FFFF raises CodepointError.

    >>> cpt_to_utf8(0xD800), cpt_to_utf8(0x20AC)
    (b'\\xed\\xa0\\x80', b'\\xe2\\x82\\xac')
    """
    if not 0 <= cp <= 0x10FFFF:
        raise CodepointError(f"code point 0x{cp:X} is beyond U+10FFFF: llama.cpp's unicode_cpt_to_utf8 "
                             "throws 'invalid codepoint' (and llama_tokenize terminates)")
    return chr(cp).encode("utf-8", "surrogatepass")


def cpts_to_utf8(text: str) -> bytes:
    """A str of code points (as from text_from_utf8) back to llama.cpp's bytes.

    >>> cpts_to_utf8("a\\ud800")
    b'a\\xed\\xa0\\x80'
    """
    return text.encode("utf-8", "surrogatepass")


# --- GPT-2 byte map (unicode_byte_to_utf8_map) -------------------------------

def _gpt2_byte_map() -> list[str]:
    keep = set(range(0x21, 0x7F)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    out, n = [], 0
    for b in range(256):
        if b in keep:
            out.append(chr(b))
        else:
            out.append(chr(256 + n))
            n += 1
    return out


BYTE_TO_UNICODE: list[str] = _gpt2_byte_map()
UNICODE_TO_BYTE: dict[str, int] = {c: b for b, c in enumerate(BYTE_TO_UNICODE)}
_BYTE_ENCODE_TABLE = {b: c for b, c in enumerate(BYTE_TO_UNICODE)}


def byte_encode(word: str) -> str:
    """unicode_byte_encoding_process for one word: UTF-8 bytes through the GPT-2 map.

    >>> byte_encode(" é")
    'ĠÃ©'
    """
    return cpts_to_utf8(word).decode("latin-1").translate(_BYTE_ENCODE_TABLE)
