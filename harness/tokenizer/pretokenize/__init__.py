"""BPE pre-tokenization exactly as llama.cpp's unicode_regex_split does it.

``split_words(pre_type, text)`` applies the pre type's regex list
(``regexes.REGEX_EXPRS``) in order; each regex refines every current segment
independently, and both its matches and the gaps between them become
segments. Each regex runs by one of three mechanisms, chosen like llama.cpp:

1. a hand-written splitter when the regex string is one of ``splitters.CUSTOM``;
2. std::regex on the category-collapsed text when it names a \\p{..} class;
3. std::wregex on the code points otherwise (see ``collapse``).

The text is a str of code points as llama.cpp sees them: invalid UTF-8 must
already be U+FFFD (``harness.tokenizer.unicode.text_from_utf8``). Words are returned
without the GPT-2 byte encoding (``harness.tokenizer.unicode.byte_encode`` does that).

>>> split_words("GPT2", "Hello world's  end")
['Hello', ' world', "'s", ' ', ' end']
>>> split_words("DEFAULT", "Hello, world!! 1234567 a~b")
['Hello', ',', ' world', '!!', ' ', '123', '456', '7', ' a', '~', 'b']
"""

from __future__ import annotations

from harness.errors import UnsupportedPreTokenizer
from harness.tokenizer.pretypes import ALL_PRE_TYPES

from . import collapse, splitters
from . import fast as _fast
from .regexes import NO_BYTE_ENCODE, REGEX_EXPRS

__all__ = ["split_words", "split_offsets", "PRE_TYPES", "REGEX_EXPRS", "NO_BYTE_ENCODE", "byte_encodes"]

PRE_TYPES: tuple[str, ...] = ALL_PRE_TYPES


def _regexes(pre_type: str) -> tuple[str, ...]:
    try:
        return REGEX_EXPRS[pre_type]
    except KeyError:
        raise UnsupportedPreTokenizer(pre_type, PRE_TYPES) from None


def byte_encodes(pre_type: str) -> bool:
    """llm_tokenizer_bpe::byte_encode: False only for GEMMA4, SARVAM_MOE, WHITESPACE.

    >>> byte_encodes("LLAMA3"), byte_encodes("GEMMA4")
    (True, False)
    """
    _regexes(pre_type)
    return pre_type not in NO_BYTE_ENCODE


def split_offsets(regex_exprs: tuple[str, ...] | list[str], text: str, *, fast: bool = True) -> list[int]:
    """unicode_regex_split's segment lengths (in code points) for a regex list.

    >>> split_offsets(["\\\\p{N}+", "[0-9][0-9][0-9]"], "a12345")
    [1, 3, 2]
    """
    offsets = [len(text)]
    cf = None
    prepared: dict = {}
    for expr in regex_exprs:
        if expr in splitters.CUSTOM:
            pat = _fast.pattern_for(expr) if fast else None
            if pat is not None:  # the loop's precompiled equivalent (see .fast)
                if "collapsed" not in prepared:
                    prepared["collapsed"] = collapse.collapse_text(text)
                refined = _fast.refine(pat, prepared["collapsed"], offsets)
            else:
                if cf is None:
                    cf = splitters.cpts_and_flags(text)
                refined = splitters.run_custom(expr, text, offsets, cf)
            if refined:
                offsets = refined
                continue
            # llama.cpp: an empty custom result (all segments empty) falls back
            # to std::regex with the same string
        offsets = collapse.split_stl(expr, text, offsets, prepared)
    return offsets


def split_words(pre_type: str, text: str, *, fast: bool = True) -> list[str]:
    """The words llama.cpp's BPE session gets for ``text`` (before byte encoding).

    Empty segments (from zero-length matches) are kept as empty words, as in
    llama.cpp; they produce no tokens. An empty text gives no words (llama.cpp
    never hands an empty fragment to the BPE session). ``fast=False`` forces
    the reference path (the step-by-step loops) even where a precompiled
    pattern (:mod:`.fast`) exists; tests prove the two equal.

    >>> split_words("QWEN2", "I'M 2024\\n\\n")
    ['I', "'M", ' ', '2', '0', '2', '4', '\\n\\n']
    """
    exprs = _regexes(pre_type)
    if not text:
        return []
    pat = _fast.pattern(pre_type) if fast else None
    if pat is not None:
        return _fast.split(pat, text)
    words, start = [], 0
    for length in split_offsets(exprs, text, fast=fast):
        words.append(text[start:start + length])
        start += length
    return words
