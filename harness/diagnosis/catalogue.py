"""The catalogue of rule variants, most specific first, and ``explain``: which of them reproduce a port.

>>> len({v.name for v in CATALOGUE}) == len(CATALOGUE)
True
>>> markdown_table().splitlines()[0]
'| variant | what it models | the rule it breaks (llama.cpp at the pin) | shipped by |'
"""

from __future__ import annotations

from typing import Sequence

from harness.errors import HarnessError

from . import decode as D
from . import specials as S
from . import split as P
from . import text as T
from . import wordpiece as W
from .base import Case, Variant, cached, exact
from .platform import DIGIT_VARIANTS, VERSION_VARIANTS, WHITESPACE_VARIANTS

__all__ = ["CATALOGUE", "explain", "markdown_table"]

#: Every variant, most specific first: the engine names a cause by the first that explains it.
CATALOGUE: tuple[Variant, ...] = (
    # BOS/EOS and extra tokens: a fixed id, before the variants that read an id off the port
    S.ADD_SPECIAL_ALWAYS, S.NO_SPECIALS_ON_EMPTY, S.ADD_BOS_FORCED, S.ADD_BOS_IGNORED, S.ADD_EOS_FORCED, S.ADD_EOS_IGNORED,
    S.ADD_SPECIAL_IGNORED,
    S.CHAT_TOKEN_AS_BOS, T.CHUNKED,
    # the special-token partition
    S.LSTRIP_IGNORED, S.RSTRIP_IGNORED, S.USER_DEFINED_AS_CONTROL, S.USER_DEFINED_TYPED_CONTROL, S.USER_DEFINED_NOT_MATCHED,
    S.SPECIALS_NEVER_PARSED, S.SPECIALS_ALWAYS_PARSED, S.TYPES_NOT_OVERRIDDEN,
    S.UNKNOWN_AS_NORMAL, S.UNKNOWN_NOT_MATCHED,
    # the platform's Unicode view, smallest class first
    *WHITESPACE_VARIANTS, *DIGIT_VARIANTS, *VERSION_VARIANTS,
    # one code point read as another (narrow transforms before the normal forms that include them)
    W.WPM_NOT_SPLIT, W.WPM_KEPT, W.WPM_SPLIT_OFF,
    T.CRLF_FOLDED, T.CURLY_APOSTROPHE, T.NATIVE_DIGITS, T.LEADING_WHITESPACE_STRIPPED, T.CHAR_AS_SPACE, T.CHAR_DROPPED,
    T.NFC_INPUT, T.NFKC_INPUT, T.PREFIX_SPACE_ADDED, T.SPACE_PREFIX_SKIPPED, T.METASPACE_FIRST,
    # an extra token read off the port's answer: late, a single short case can look like it by chance
    S.EXTRA_TOKEN,
    # the pre-tokenizer's regex
    P.CONTRACTIONS_CASE_SENSITIVE, P.CONTRACTIONS_CASE_INSENSITIVE,
    P.DIGITS_SINGLE, P.DIGITS_GROUPS_OF_3, P.DIGITS_UNBOUNDED, T.DIGITS_APART,
    P.PRE_GPT2_FALLBACK,  # broader than the digit variants: after them
    # merging
    P.IGNORE_MERGES_MISSING, P.IGNORE_MERGES_FORCED, P.MERGES_BY_SCORE, P.MERGES_BY_RANK,
    P.WPM_ACCENTS_KEPT, S.UGM_CHARSMAP_IGNORED, S.UGM_EXTRA_WHITESPACES_KEPT,
    P.BYTE_FALLBACK_MISSING, P.BYTE_MAPPED_REGEX,
    # decode and pieces
    D.LEADING_SPACE_STRIPPED_AFTER_BOS, D.LEADING_SPACE_KEPT, D.STRIPS_LEADING_SPACE,
    D.NO_CLEAN_SPACES, D.CLEAN_SPACES_FORCED, D.REMOVE_SPECIAL_IGNORED, D.REMOVE_SPECIAL_FORCED,
    D.SPECIALS_ALWAYS_RENDERED, D.SPECIALS_NEVER_RENDERED, D.SPECIALS_AS_TEXT, D.PIECE_IS_DECODE, D.BYTE_AS_TEXT, D.BYTE_AS_CODEPOINT,
    D.DECODE_LOSSY, D.DECODE_LOSSY_PER_TOKEN, D.DECODE_DROPS_INVALID, D.PIECE_FIXED_BUFFER, D.DECODE_DROPS_LONG_PIECES,
    D.WHITESPACE_MARKER_KEPT, D.UNUSED_RENDERED, D.REMOVE_SPECIAL_DROPS_ALL,
    D.UNMAPPED_CODEPOINT, D.SPECIAL_TEXT_BYTE_DECODED,
    # a vocab flag read the other way round changes encode and decode alike
    S.SPACE_PREFIX_FLIPPED,
)


def _same(out, port_output) -> bool:
    if isinstance(port_output, (bytes, bytearray)):
        return bytes(out) == bytes(port_output)
    return tuple(out) == tuple(port_output)


def _applies(variant: Variant, tok) -> bool:
    def check() -> bool:
        try:
            return bool(variant.applies(tok))
        except HarnessError:
            return False
    return cached(tok, ("applies", variant.name), check)


def _reproduces(variant: Variant, tok, cases: Sequence[Case], divergent: Sequence[bool]) -> bool:
    for case, differs in zip(cases, divergent):
        if differs and case.family not in variant.checks:
            return False  # it answers llama.cpp's output there, which is not the port's
    try:
        return all(_same(variant.output(tok, c), c.port_output) for c in cases)
    except (HarnessError, ValueError, UnicodeError, RecursionError):
        return False  # the variant cannot even produce an answer here (llama.cpp would abort, ...)


def explain(tok, cases: Sequence[Case]) -> list[Variant]:
    """Every applicable variant whose output equals port_output on ALL cases, in catalogue order.

    A variant with a free parameter comes back bound to the first value (inferred from
    the cases) that reproduces them all, or to each such value if it says ``every_param``.
    No cases: nothing to explain.

    >>> explain(None, [])
    []
    """
    cases = list(cases)
    if not cases:
        return []
    divergent = [not _same(exact(tok, c), c.port_output) for c in cases]
    found = []
    for variant in CATALOGUE:
        if not _applies(variant, tok):
            continue
        for bound in variant.candidates(tok, cases):
            if _reproduces(bound, tok, cases, divergent):
                found.append(bound)
                if not variant.every_param:
                    break
    return found


def markdown_table() -> str:
    """The README table: variant | what it models | the rule it breaks | shipped by."""
    rows = ["| variant | what it models | the rule it breaks (llama.cpp at the pin) | shipped by |",
            "|---|---|---|---|"]
    for v in CATALOGUE:
        cells = (f"`{v.name}`", v.models, v.rule, v.shipped_by or "")
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)
