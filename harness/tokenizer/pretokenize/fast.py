"""Precompiled ``regex`` patterns that split exactly like llama.cpp's hand-written splitters.

The loops in :mod:`splitters` are the reference: they follow llama.cpp's
unicode_regex_split_custom step by step, one Python statement per code
point. Here each of the loops that *is* a regular language gets one pattern,
written over character classes built from llama.cpp's own flag table (not
from the ``regex`` module's Unicode database, which is a different Unicode
version). The text is first collapsed to one stand-in per flag class
(:func:`collapse.collapse_text`), so the classes are a few ASCII ranges and
the standard ``re`` engine (about three times faster here than ``regex``)
runs ``findall`` in C.

Every pattern ends with a one-character catch-all, so the words always cover
the text; the loops never leave a gap either. tests/test_pretokenize_fast.py
proves each pattern equal to its loop on the pinned ``.inp`` texts, on
generated mixed-script text and on every code point in several contexts.

Only pre types whose regex list is a single such splitter get a pattern;
the others (multi-regex lists, KIMI_K2, AFMoE digits) keep the reference path.

>>> split(pattern("QWEN2"), "I'M 2024\\n\\n")
['I', "'M", ' ', '2', '0', '2', '4', '\\n\\n']
>>> pattern("DEFAULT") is None
True
"""

from __future__ import annotations

import functools
import re
from itertools import accumulate

import numpy as np

from harness.tokenizer import unicode as U

from . import splitters as S
from .collapse import collapse_text
from .regexes import REGEX_EXPRS


# The collapsed alphabet: ASCII stays itself; every other cpt becomes one stand-in
# per llama.cpp flag class (collapse.collapse_text), so classes stay tiny.
_STAND_IN = {"WS": "\x0b", "L": "\xd2", "N": "\xd1", "M": "\xd4"}
_BITS = {"WS": U.WHITESPACE, "L": U.LETTER, "N": U.NUMBER, "M": U.ACCENT_MARK}


@functools.lru_cache(maxsize=None)
def _classes() -> dict[str, str]:
    """Class bodies over the collapsed alphabet, from llama.cpp's flags (ASCII members + stand-in)."""
    out = {}
    for name, bit in _BITS.items():
        ascii_members = "".join(chr(cp) for cp in range(0x80) if int(U.FLAGS[cp]) & bit)
        out[name] = re.escape(ascii_members + _STAND_IN[name])
    return out


def _exact() -> bool:
    """The collapse keeps all a splitter looks at: contraction letters and their
    uppercase are ASCII, and no whitespace cpt is also a letter, number or mark."""
    flags = U.FLAGS[:U.MAX_CODEPOINTS]
    if any(cp >= 0x80 for ch in "strevmld" for cp in U.cpts_lowering_to(ord(ch))):
        return False
    ws = (flags & U.WHITESPACE) != 0
    return not np.any(ws & ((flags & (U.LETTER | U.NUMBER | U.ACCENT_MARK)) != 0))


def _contractions(case_folded: bool) -> str:
    if not case_folded:
        return "'s|'t|'re|'ve|'m|'ll|'d"
    c = {ch: "[" + "".join(map(chr, U.cpts_lowering_to(ord(ch)))) + "]" for ch in "strevmld"}
    return "|".join("'" + "".join(c[ch] for ch in tail) for tail in ("s", "t", "re", "ve", "m", "ll", "d"))


def _gpt2() -> str:
    k = _classes()
    ws, l, n = k["WS"], k["L"], k["N"]
    # '\s+(?!\S)' gives back a run's last cpt before a non-space; a lone one stays alone
    return (f"{_contractions(False)}| ?[{l}]+| ?[{n}]+| ?[^{ws}{l}{n}]+"
            f"|[{ws}]+(?![^{ws}])|[{ws}]|(?s:.)")


def _llama_family(digits: int, marks: bool) -> str:
    k = _classes()
    ws, n = k["WS"], k["N"]
    word = k["L"] + (k["M"] if marks else "")
    num = f"[{n}]{{1,{digits}}}" if digits > 1 else f"[{n}]"
    return (f"{_contractions(True)}|[^\\r\\n{word}{n}]?[{word}]+|{num}"
            f"| ?[^{ws}{word}{n}]+[\\r\\n]*|[{ws}]*[\\r\\n]+|[{ws}]+(?![^{ws}])|[{ws}]+|(?s:.)")


_SOURCES = {
    S.GPT2: _gpt2,
    S.LLAMA3: lambda: _llama_family(3, False),
    S.LLAMA3_I: lambda: _llama_family(3, False),
    S.QWEN2: lambda: _llama_family(1, False),
    S.QWEN35: lambda: _llama_family(1, True),
    S.NEWLINES: lambda: "[^\\n]+|\\n+",
}


@functools.lru_cache(maxsize=None)
def pattern_for(regex_expr: str) -> "re.Pattern | None":
    """The compiled pattern standing for one of llama.cpp's custom regex strings, or None.

    >>> pattern_for(S.GPT2) is not None, pattern_for(S.KIMI_K2)
    (True, None)
    """
    if regex_expr not in _SOURCES or not _exact():
        return None
    return re.compile(_SOURCES[regex_expr]())


@functools.lru_cache(maxsize=None)
def pattern(pre_type: str) -> "re.Pattern | None":
    """The compiled pattern for ``pre_type`` over collapsed text, or None when only
    the reference path applies. Use :func:`split` to get the words of a text."""
    exprs = REGEX_EXPRS.get(pre_type, ())
    return pattern_for(exprs[0]) if len(exprs) == 1 else None


def split(pat: "re.Pattern", text: str) -> list[str]:
    """The words of ``text``: match the collapsed text, cut the original at the same places.

    >>> split(pattern("GPT2"), "Привет  мир")
    ['Привет', ' ', ' мир']
    """
    if text.isascii():
        return pat.findall(text)  # collapsing leaves ASCII as it is
    ends = list(accumulate(map(len, pat.findall(collapse_text(text)))))
    return list(map(text.__getitem__, map(slice, [0, *ends], ends)))


def refine(pat: "re.Pattern", collapsed: str, offsets: list[int]) -> list[int]:
    """Segment lengths after ``pat`` splits each segment of ``offsets`` (over the collapsed
    text). Matching stops at each segment's end as if the text ended there, which is how
    llama.cpp's splitters treat segment ends.

    >>> refine(pattern_for(S.GPT2), "ab cd12", [5, 2])
    [2, 3, 2]
    """
    out: list[int] = []
    start = 0
    for length in offsets:
        if length:
            out += map(len, pat.findall(collapsed, start, start + length))
        start += length
    return out
