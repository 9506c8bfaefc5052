"""llama.cpp's hand-written splitters (unicode_regex_split_custom, src/unicode.cpp).

llama.cpp replaces a few well-known regexes by loops over its own flag table;
they are chosen by *exact string equality* of the regex (CUSTOM below). The
loops are not always equivalent to the regex they stand for, and the harness
must reproduce the loops, not the regex. Quirks reproduced on purpose:

- Contractions are only tried when the quote is not the segment's last cpt;
  gpt2's are case-sensitive, the others lowercase with unicode_tolower.
- ``\\s+(?!\\S)`` is "a run of >1 whitespace not at the segment end gives back
  its last cpt"; a single whitespace before a non-space stays alone.
- llama3/qwen2/qwen35 test ``flags`` (always non-zero inside a segment) rather
  than ``flags2`` when deciding the `` ?[^\\s\\p{L}\\p{N}]+`` branch, so a
  trailing lone space takes that branch (same result as ``\\s+``).
- The AFMoE digit splitter does not flush the text before a digit run: the
  run's first group absorbs everything since the previous group
  (``"ab1234"`` -> ``"ab1"``, ``"234"``).
- Segment ends behave like text ends: flags there read as 0, cpts as OUT.

Every splitter takes (cpts, flags, offsets) -- code points, their llama.cpp
flags, and current segment lengths -- and returns the refined lengths.

>>> from harness.tokenizer.pretokenize.splitters import run_custom, CUSTOM
>>> run_custom(GPT2, "Hello  world's", [14])
[5, 1, 6, 2]
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from harness.tokenizer import unicode as U

L, N, M, WS = U.LETTER, U.NUMBER, U.ACCENT_MARK, U.WHITESPACE
OUT = 0xFFFFFFFF  # llama.cpp's OUT_OF_RANGE cpt
CR, LF, QUOTE, SPACE = 0x0D, 0x0A, 0x27, 0x20

# The exact regex strings llama.cpp recognises (see unicode_regex_split_custom).
GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
LLAMA3_I = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
            "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
_CONTR = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
LLAMA3 = (_CONTR + "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
          "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
QWEN2 = (_CONTR + "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
         "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
QWEN35 = (_CONTR + "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}"
          "| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
KIMI_K2 = "\\p{Han}+"
AFMOE = "\\p{AFMoE_digits}"
NEWLINES = "[^\\n]+|[\\n]+"
TINY_AYA_DIGITS = "\\d{1,3}(?=(?:\\d{3})*\\b)"

_CONTRACTION_1 = frozenset(map(ord, "stmd"))
_CONTRACTION_2 = frozenset({(ord("r"), ord("e")), (ord("v"), ord("e")), (ord("l"), ord("l"))})


class _Seg:
    """One segment [ini, end) with llama.cpp's out-of-range reads (cpt OUT, flags 0)."""

    __slots__ = ("cp", "fl", "end", "prev", "out")

    def __init__(self, cp, fl, ini, end, out):
        self.cp, self.fl, self.end, self.prev, self.out = cp, fl, end, ini, out

    def c(self, pos: int) -> int:
        return self.cp[pos] if pos < self.end else OUT

    def f(self, pos: int) -> int:
        return self.fl[pos] if pos < self.end else 0

    def add(self, end: int) -> int:
        """_add_token: emit [prev, end) if non-empty; returns its length."""
        n = end - self.prev
        if n > 0:
            self.out.append(n)
        self.prev = end
        return n


def _contraction(s: _Seg, pos: int, lower: bool) -> int:
    """Length (2, 3) of a contraction starting at the quote at pos, else 0."""
    if s.cp[pos] != QUOTE or pos + 1 >= s.end:
        return 0
    low = U.to_lower if lower else (lambda c: c)
    n1 = low(s.cp[pos + 1])
    if n1 in _CONTRACTION_1:
        return 2
    if pos + 2 < s.end and (n1, low(s.cp[pos + 2])) in _CONTRACTION_2:
        return 3
    return 0


def _whitespace(s: _Seg, pos: int, newline_rule: bool) -> int:
    """The shared tail: (\\s*[\\r\\n]+ if newline_rule) | \\s+(?!\\S) | \\s+ | one cpt."""
    n, last_rn = 0, 0
    while s.f(pos + n) & WS:
        if newline_rule and s.cp[pos + n] in (CR, LF):
            last_rn = pos + n + 1
        n += 1
    if last_rn > 0:
        pos = last_rn
    elif n > 1 and pos + n < s.end:
        pos += n - 1
    elif n > 0:
        pos += n
    else:
        pos += 1
    s.add(pos)
    return pos


def _gpt2_segment(s: _Seg, pos: int) -> None:
    while pos < s.end:
        k = _contraction(s, pos, lower=False)
        if k:
            pos += s.add(pos + k)
            continue
        c, f = s.cp[pos], s.fl[pos]
        f2 = s.f(pos + 1) if c == SPACE else f
        for want in (L, N):  # ' ?\p{L}+' then ' ?\p{N}+'
            if f2 & want:
                pos += c == SPACE
                while f2 & want:
                    pos += 1
                    f2 = s.f(pos)
                s.add(pos)
                break
        else:
            if not f2 & (WS | L | N) and f2:  # ' ?[^\s\p{L}\p{N}]+'
                pos += c == SPACE
                while not f2 & (WS | L | N) and f2:
                    pos += 1
                    f2 = s.f(pos)
                s.add(pos)
            else:
                pos = _whitespace(s, pos, newline_rule=False)


def _llama_family_segment(s: _Seg, pos: int, digits: int, marks: bool) -> None:
    """llama3 (digits=3), qwen2 (digits=1) and qwen35 (digits=1, marks=True)."""
    word = L | M if marks else L
    while pos < s.end:
        k = _contraction(s, pos, lower=True)
        if k:
            pos += s.add(pos + k)
            continue
        c, f = s.cp[pos], s.fl[pos]
        if c != CR and c != LF and not f & N and (f & word or s.f(pos + 1) & word):
            pos += 1  # '[^\r\n\p{L}\p{N}]?\p{L}+' (qwen35: [\p{L}\p{M}]+)
            while s.f(pos) & word:
                pos += 1
            s.add(pos)
            continue
        if f & N:
            pos = _digits(s, pos, digits)
            continue
        f2 = s.f(pos + 1) if c == SPACE else f
        if not f2 & (WS | word | N) and f:  # NB: llama.cpp tests `flags`, not `flags2`, here
            pos += c == SPACE
            while not f2 & (WS | word | N) and f2:
                pos += 1
                f2 = s.f(pos)
            while s.c(pos) in (CR, LF):
                pos += 1
            s.add(pos)
            continue
        pos = _whitespace(s, pos, newline_rule=True)


def _digits(s: _Seg, pos: int, group: int) -> int:
    """\\p{N}{1,group} repeatedly over a run of numbers."""
    ini = pos
    while s.f(pos) & N:
        pos += 1
        if pos - ini >= group:
            s.add(pos)
            ini = pos
    s.add(pos)
    return pos


def _kimi_letter_word(s: _Seg, pos: int, c: int, f: int) -> int | None:
    """Patterns 2 & 3 of kimi_k2: letters except Han, optional lead char and contraction."""
    def letter(p: int) -> bool:
        return bool(s.f(p) & L) and not U.is_han(s.c(p))
    leadable = not (c == CR or c == LF or f & L or f & N)
    if not ((f & L and not U.is_han(c)) or (leadable and letter(pos + 1))):
        return None
    pos += leadable
    has_letters = False
    while letter(pos):
        has_letters, pos = True, pos + 1
    if not (has_letters or (not leadable and letter(pos))):
        return None  # llama.cpp steps back over the lead char and tries the next patterns
    if not has_letters:
        pos += 1
    while letter(pos):
        pos += 1
    if s.c(pos) == QUOTE and pos + 1 < s.end:
        n1 = U.to_lower(s.c(pos + 1))
        if n1 in _CONTRACTION_1:
            pos += 2
        elif pos + 2 < s.end and (n1, U.to_lower(s.c(pos + 2))) in _CONTRACTION_2:
            pos += 3
    s.add(pos)
    return pos


def _kimi_segment(s: _Seg, pos: int) -> None:
    while pos < s.end:
        c, f = s.cp[pos], s.fl[pos]
        if U.is_han(c):  # [\p{Han}]+
            while U.is_han(s.c(pos)):
                pos += 1
            s.add(pos)
            continue
        nxt = _kimi_letter_word(s, pos, c, f)
        if nxt is not None:
            pos = nxt
            continue
        if f & N:
            pos = _digits(s, pos, 3)
            continue
        f2 = s.f(pos + 1) if c == SPACE else f
        if not f2 & (WS | L | N) and f2:  # kimi tests flags2 (unlike llama3)
            pos += c == SPACE
            while not f2 & (WS | L | N) and f2:
                pos += 1
                f2 = s.f(pos)
            while s.c(pos) in (CR, LF):
                pos += 1
            s.add(pos)
            continue
        pos = _whitespace(s, pos, newline_rule=True)


def _afmoe_segment(s: _Seg, pos: int) -> None:
    while pos < s.end:
        if not s.fl[pos] & N:
            pos += 1
            continue
        start = pos
        while pos < s.end and s.fl[pos] & N:
            pos += 1
        count = pos - start
        cur = start + count % 3
        if count % 3:
            s.add(cur)  # absorbs any non-digits since the last group (llama.cpp quirk)
        while cur < start + count:
            cur += 3
            s.add(cur)
    if s.prev < s.end:
        s.add(s.end)


def _newlines_segment(s: _Seg, pos: int) -> None:
    while pos < s.end:
        is_nl = s.cp[pos] == LF
        run = pos
        while pos < s.end and (s.cp[pos] == LF) == is_nl:
            pos += 1
        s.out.append(pos - run)


_SEGMENT_FNS: dict[str, Callable[[_Seg, int], None]] = {
    GPT2: _gpt2_segment,
    LLAMA3_I: lambda s, p: _llama_family_segment(s, p, 3, False),
    LLAMA3: lambda s, p: _llama_family_segment(s, p, 3, False),
    QWEN2: lambda s, p: _llama_family_segment(s, p, 1, False),
    QWEN35: lambda s, p: _llama_family_segment(s, p, 1, True),
    KIMI_K2: _kimi_segment,
    AFMOE: _afmoe_segment,
    TINY_AYA_DIGITS: _afmoe_segment,  # llama.cpp reuses the AFMoE splitter for it
    NEWLINES: _newlines_segment,
}
CUSTOM: frozenset[str] = frozenset(_SEGMENT_FNS)


def cpts_and_flags(text: str) -> tuple[list[int], list[int]]:
    """Code points of a str and their llama.cpp flags, as plain lists (fast to index)."""
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return cps.tolist(), U.FLAGS[cps].tolist()


def run_custom(regex_expr: str, text: str, offsets: list[int],
               cf: tuple[list[int], list[int]] | None = None) -> list[int]:
    """Refine ``offsets`` (segment lengths over ``text``) with the splitter for ``regex_expr``.

    Returns [] when every segment is empty, as llama.cpp does (its caller then
    falls back to std::regex). KeyError if regex_expr is not a custom one.

    >>> run_custom(AFMOE, "ab1234 x", [8])
    [3, 3, 2]
    """
    fn = _SEGMENT_FNS[regex_expr]
    cps, fl = cf if cf is not None else cpts_and_flags(text)
    out: list[int] = []
    start = 0
    for length in offsets:
        fn(_Seg(cps, fl, start, start + length, out), start)
        start += length
    return out
