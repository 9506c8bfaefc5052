"""llama.cpp's std::regex / std::wregex path of unicode_regex_split, emulated.

Regexes without a hand-written splitter run through libstdc++'s ECMAScript
engine, in one of two ways (unicode_regex_split, src/unicode.cpp):

R path -- the regex names a category (\\p{N} \\p{L} \\p{P} \\p{M} \\p{S} \\p{Lu}
    \\p{Ll} \\p{Lt} \\p{Lm} \\p{Lo}): the *text* is collapsed to one char per
    cpt (ASCII kept, whitespace -> 0x0B, N/L/P/M/S -> 0xD1..0xD5, the rest ->
    0xD0) and each \\p{X} in the regex becomes ``[<stand-in><ASCII members>]``.
    So \\p{Lu} etc. mean "any letter", and ``~`` is in no class before 0c1e570
    (in \\p{S} from then on: ``harness.tokenizer.pins`` change ``tilde_is_symbol``).
W path -- otherwise: std::wregex on the code points, with every non-ASCII
    whitespace cpt replaced by 0x0B; literal ranges compare code points.

Both run in libstdc++'s "C" locale: \\s is exactly ``[\\t\\n\\v\\f\\r ]``, \\d is
``[0-9]``, ``.`` excludes \\n and \\r (and U+2028/9 for wregex), ``$`` is the end
of the segment only. We translate the (collapsed) ECMAScript regex into an
equivalent Python ``regex`` pattern with those classes spelled out, and
iterate matches the way std::regex_iterator does (after an empty match, a
non-empty match at the same place is tried before moving on by one).

Known limits (none reachable with llama.cpp's regex table at the pin):
regex_iterator's match_prev_avail would let ``\\b``/``^`` see the cpt before
a segment after an empty match at its start (we slice segments); libstdc++
allows at most two empty iterations of a loop body at one position; and on
very long inputs libstdc++ recurses per cpt and overflows its stack, where
we return ids.

>>> split_stl("\\\\p{N}+", "ab12٣ c", [7])
[2, 3, 2]
"""

from __future__ import annotations

import functools

import numpy as np
import regex

from harness.tokenizer import pins
from harness.tokenizer import unicode as U
from harness.errors import RegexNotSupported

# unicode_regex_split's k_ucat_enum / k_ucat_cpt / k_ucat_map
_UCAT_ENUM = {
    "\\p{N}": U.NUMBER, "\\p{L}": U.LETTER, "\\p{P}": U.PUNCTUATION, "\\p{M}": U.ACCENT_MARK,
    "\\p{S}": U.SYMBOL, "\\p{Lu}": U.LETTER, "\\p{Ll}": U.LETTER, "\\p{Lt}": U.LETTER,
    "\\p{Lm}": U.LETTER, "\\p{Lo}": U.LETTER,
}
_UCAT_CPT = {U.NUMBER: 0xD1, U.LETTER: 0xD2, U.PUNCTUATION: 0xD3, U.ACCENT_MARK: 0xD4, U.SYMBOL: 0xD5}
_UCAT_ASCII = {
    U.NUMBER: "\x30-\x39",
    U.LETTER: "\x41-\x5A\x61-\x7A",
    U.PUNCTUATION: "\x21-\x23\x25-\x2A\x2C-\x2F\x3A-\x3B\x3F-\x40\\\x5B-\\\x5D\x5F\\\x7B\\\x7D",
    U.ACCENT_MARK: "",
    U.SYMBOL: "\\\x24\\\x2B\x3C-\x3E\x5E\x60\\\x7C" + ("\\\x7E" if pins.has("tilde_is_symbol") else ""),
}


def uses_collapsed(regex_expr: str) -> bool:
    """True when llama.cpp takes the R path (the regex names a known \\p{..}).

    >>> uses_collapsed("\\\\s?\\\\p{L}+"), uses_collapsed("[0-9]+"), uses_collapsed("\\\\p{Han}+")
    (True, False, False)
    """
    return any(cat in regex_expr for cat in _UCAT_ENUM)


def collapse_regex(regex_expr: str) -> str:
    """Replace each known \\p{X} like llama.cpp: bracketed outside a class, bare inside.

    Mirrors its `inside` tracking: an unescaped '[' opens, an unescaped ']'
    closes (only the single preceding char is looked at).

    >>> collapse_regex("[^\\\\s\\\\p{N}]|\\\\p{M}")
    '[^\\\\s\\xd10-9]|[\\xd4]'
    """
    if any(ord(ch) >= 128 for ch in regex_expr):
        raise RegexNotSupported(f"regex {regex_expr!r} mixes unicode categories with non-ASCII "
                                "characters: llama.cpp throws (not supported)")
    out, inside, i = [], False, 0
    while i < len(regex_expr):
        ch = regex_expr[i]
        if ch == "[" and (i == 0 or regex_expr[i - 1] != "\\"):
            out.append("[")
            inside = True
        elif inside and ch == "]" and regex_expr[i - 1] != "\\":
            out.append("]")
            inside = False
        elif regex_expr.startswith("\\p{", i) and i + 3 < len(regex_expr):
            close = regex_expr.find("}", i + 3)
            pat = regex_expr[i:close + 1] if 0 <= close <= i + 10 else ""
            if pat in _UCAT_ENUM:
                cat = _UCAT_ENUM[pat]
                body = chr(_UCAT_CPT[cat]) + _UCAT_ASCII[cat]
                out.append(body if inside else "[" + body + "]")
                i = close + 1
                continue
            out.append(ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _cpt_array(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _from_cpt_array(arr: np.ndarray) -> str:
    return arr.astype(np.uint32).tobytes().decode("utf-32-le", "surrogatepass")


def _collapse_cpt(cp: int) -> str:
    flags = int(U.FLAGS[cp])
    if flags & U.WHITESPACE:
        return "\x0b"
    return chr(_UCAT_CPT.get(flags & U.MASK_CATEGORIES, 0xD0))


def collapse_text(text: str) -> str:
    """The R path's text: one stand-in char per cpt (see module docstring).

    >>> collapse_text("a é\\u00a0٣~€\\u0301\\u200b")
    'a \\xd2\\x0b\\xd1~\\xd5\\xd4\\xd0'
    """
    if text.isascii():
        return text  # ASCII is kept as is
    if len(text) < 64:  # numpy's fixed cost dominates on short texts
        return "".join(ch if ord(ch) < 128 else _collapse_cpt(ord(ch)) for ch in text)
    cps = _cpt_array(text)
    flags = U.FLAGS[cps]
    cat = flags & U.MASK_CATEGORIES
    out = np.full(len(cps), 0xD0, dtype=np.uint32)
    for flag, stand_in in _UCAT_CPT.items():
        out[cat == flag] = stand_in
    out[(flags & U.WHITESPACE) != 0] = 0x0B
    ascii_ = cps < 128
    out[ascii_] = cps[ascii_]
    return _from_cpt_array(out)


def wide_text(text: str) -> str:
    """The W path's text: non-ASCII whitespace -> 0x0B, everything else as is.

    >>> wide_text("a\\u3000b\\x85")
    'a\\x0bb\\x0b'
    """
    if text.isascii():
        return text
    if len(text) < 64:  # numpy's fixed cost dominates on short texts
        return "".join("\x0b" if ord(ch) > 0x7F and int(U.FLAGS[ord(ch)]) & U.WHITESPACE else ch
                       for ch in text)
    cps = _cpt_array(text).copy()
    cps[(cps > 0x7F) & ((U.FLAGS[cps] & U.WHITESPACE) != 0)] = 0x0B
    return _from_cpt_array(cps)


@functools.lru_cache(maxsize=None)
def compile_stl(regex_expr: str) -> tuple[bool, "regex.Pattern", "regex.Pattern"]:
    """(use_collapsed, pattern, non-null pattern) for one llama.cpp regex string."""
    from .ecma import ecma_to_python  # local: keeps this module's import light
    collapsed = uses_collapsed(regex_expr)
    source = collapse_regex(regex_expr) if collapsed else regex_expr
    py = ecma_to_python(source, wide=not collapsed)
    try:
        pat = regex.compile(py, regex.V0)
        # match_not_null|match_continuous: the same search, but a match may
        # not end where it started (\G is where .match() was asked to start)
        nonnull = regex.compile("(?:" + py + ")(?!\\G)", regex.V0)
    except regex.error as e:
        raise RegexNotSupported(f"cannot emulate regex {regex_expr!r} (as {py!r}): {e}") from e
    return collapsed, pat, nonnull


def _iterate(pat, nonnull, seg: str) -> list[int]:
    """unicode_regex_split_stl for one segment: matches and the gaps between them."""
    out: list[int] = []
    start_idx = 0
    m = pat.search(seg, 0)
    while m is not None:
        a, b = m.span()
        if a > start_idx:
            out.append(a - start_idx)
        out.append(b - a)  # zero-length matches make zero-length segments
        start_idx = b
        if a != b:
            m = pat.search(seg, b)
        elif b == len(seg):
            break
        else:
            m = nonnull.match(seg, b) or pat.search(seg, b + 1)
    if start_idx < len(seg):
        out.append(len(seg) - start_idx)
    return out


_C_SPACE = frozenset("\t\n\x0b\x0c\r ")
_ASCII_DIGIT = frozenset("0123456789")


def _trailing_space(seg: str) -> list[int]:
    """Fast path for W ``\\s+$``: the segment's trailing whitespace run, if any.

    Backtracking needs O(n^2) on a long space run followed by a non-space
    (DEEPSEEK_LLM); the leftmost match is simply the maximal trailing run.
    """
    p = len(seg)
    while p > 0 and seg[p - 1] in _C_SPACE:
        p -= 1
    if p == len(seg):
        return [len(seg)] if seg else []
    return ([p] if p else []) + [len(seg) - p]


def _digit_triples(seg: str) -> list[int]:
    """Fast path for W ``(?=(\\d{3})+(?!\\d))`` (SUPERBPE), which only ever matches empty.

    It matches at p iff the ASCII digit run starting at p has a length that is
    a positive multiple of 3; each match cuts a gap and adds an empty segment
    (regex_iterator then retries at p+1). Backtracking would be O(n^2).
    """
    out, start_idx, run = [], 0, 0
    hits = []
    for p in range(len(seg) - 1, -1, -1):
        run = run + 1 if seg[p] in _ASCII_DIGIT else 0
        if run and run % 3 == 0:
            hits.append(p)
    for p in reversed(hits):
        if p > start_idx:
            out.append(p - start_idx)
        out.append(0)
        start_idx = p
    if start_idx < len(seg):
        out.append(len(seg) - start_idx)
    return out


# Linear equivalents for regexes whose backtracking is quadratic on long runs;
# tests/test_pretokenize.py checks each against the generic path.
FAST_PATHS = {"\\s+$": _trailing_space, "(?=(\\d{3})+(?!\\d))": _digit_triples}


def split_stl(regex_expr: str, text: str, offsets: list[int], prepared: dict | None = None,
              fast: bool = True) -> list[int]:
    """Refine segment lengths ``offsets`` over ``text`` with one std::regex/wregex pass.

    ``prepared`` caches the collapsed / wide text across regexes of one call;
    ``fast=False`` disables the FAST_PATHS (to test them).
    """
    collapsed, pat, nonnull = compile_stl(regex_expr)
    fast_fn = FAST_PATHS.get(regex_expr) if fast else None
    key = "collapsed" if collapsed else "wide"
    if prepared is not None and key in prepared:
        view = prepared[key]
    else:
        view = collapse_text(text) if collapsed else wide_text(text)
        if prepared is not None:
            prepared[key] = view
    out: list[int] = []
    start = 0
    for length in offsets:
        seg = view[start:start + length]
        out.extend(fast_fn(seg) if fast_fn else _iterate(pat, nonnull, seg))
        start += length
    return out
