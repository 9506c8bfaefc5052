"""Hypothesis strategies: mixed-script text of the kind real prompts contain.

Every family below is a named, documented ``SearchStrategy[str]``. The suite
draws a :class:`Recipe` (:func:`recipes`): a short list of fragments from
these families, plus markers for the vocab's own token texts and special
tokens, optionally repeated to tens of KB. :func:`materialise` turns a recipe
into the text for one vocab, so one strategy serves every vocab and the
``@example`` cases are plain strings.

How things shrink (Hypothesis' own rules, arranged so minimal means readable):
lists shrink to fewer fragments; ``one_of`` shrinks toward its first branch,
so families are ordered simplest first (``ascii_words`` leads); inside a
family alphabets are ordered ASCII first, and ``integers(lo, hi).map(chr)``
shrinks toward ``lo``; the repeat count shrinks to 1; vocab-token indexes
shrink toward token 0. A failure therefore ends as a text of a few
characters whenever one exists.

>>> from hypothesis import find
>>> find(whitespace, lambda s: "\\u3000" in s)
'\\u3000'
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from harness.inputs import drift as _drift
from harness.inputs.vocabgen import FAMILIES as VOCAB_FAMILIES
from harness.errors import HarnessError

__all__ = [
    "ascii_words", "latin", "cyrillic_greek", "arabic_hebrew", "indic", "thai_khmer",
    "cjk", "hangul", "width_forms", "emoji", "whitespace", "numbers", "contractions",
    "punctuation_code", "rare_chars", "unicode_drift", "FAMILIES", "VocabPiece", "SpecialText",
    "VocabText", "VOCAB_FAMILIES", "FRAGMENT_FAMILIES", "Recipe",
    "VocabTexts", "recipes", "materialise", "register_profiles", "PROFILES", "MAX_CHARS",
    "seeded_generation",
]


def _alphabet(*parts, categories: Sequence[str] = ()) -> st.SearchStrategy[str]:
    """One character from strings and inclusive code point ranges ``(lo, hi)``,
    plus whole Unicode ``categories``. One ``characters()`` strategy: Hypothesis
    draws and shrinks it natively (several times faster than a ``one_of`` per
    character); it shrinks toward ``'0'``, then the lowest code point above it.
    """
    chars = "".join(p if isinstance(p, str) else "".join(map(chr, range(p[0], p[1] + 1)))
                    for p in parts)
    return st.characters(categories=list(categories), include_characters=chars,
                         exclude_characters="".join(map(chr, range(0xD800, 0xE000))))


def _run(alphabet: st.SearchStrategy[str], max_size: int = 12) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=1, max_size=max_size)


# --- scripts -----------------------------------------------------------------------------
#: ASCII letters, digits and spaces: the baseline every other family is mixed into.
ascii_words = _run(_alphabet("a b ABZzy09", (0x61, 0x7A), (0x41, 0x5A)), 16)
#: Latin with precomposed letters (Latin-1, Extended-A/B, Vietnamese) and combining marks
#: (U+0300-036F) after a letter: NFC vs NFD, " Việt" (llama3 ignore_merges).
latin = st.lists(st.one_of(
    _alphabet("aeiouVn ", "éüñßøÅæœ", (0xC0, 0x24F), (0x1EA0, 0x1EF9)),
    st.tuples(_alphabet("aeiouAEIOUncsz"), _alphabet((0x300, 0x36F))).map("".join)),
    min_size=1, max_size=8).map("".join)
#: Cyrillic and Greek, including tonos and final sigma.
cyrillic_greek = _run(_alphabet("абвгдПриВет ", (0x400, 0x4FF), (0x370, 0x3FF)))
#: Arabic (with harakat) and Hebrew (with niqqud), plus the RTL/LTR marks.
arabic_hebrew = _run(_alphabet("سلام שלום ", (0x600, 0x6FF), (0x590, 0x5FF), "\u200f\u200e"))
#: Devanagari and other Indic scripts with their vowel signs and viramas ("किसानों").
indic = _run(_alphabet("किसानों ", (0x900, 0x97F), (0x980, 0x9FF), (0xB80, 0xBFF), (0xC00, 0xC7F)))
#: Thai and Khmer: no spaces between words, stacked marks.
thai_khmer = _run(_alphabet("สวัสดี ", (0xE00, 0xE7F), (0x1780, 0x17FF)))
#: CJK ideographs (BMP, Ext-A to Ext-F, the compatibility ideographs and their supplement),
#: kana and CJK punctuation. The outer blocks are where Han tables differ: BERT's
#: is_chinese_char starts its fifth range at U+2B920 (as HF's Rust code does), not U+2B820,
#: and Kimi-K2's splitter has its own list of Han blocks.
cjk = _run(_alphabet("你好世界。", (0x4E00, 0x9FFF), (0x3040, 0x30FF), (0x3400, 0x4DBF),
                     (0x20000, 0x2A6DF), (0x3000, 0x303F), (0x2A700, 0x2EBEF), (0xF900, 0xFAFF),
                     (0x2F800, 0x2FA1F), "\U0002b820\U0002b91f\U0002b920\U0002a700\uf900\U0002f800"))
#: Hangul syllables, conjoining jamo and compatibility jamo.
hangul = _run(_alphabet("한국어 ", (0xAC00, 0xD7A3), (0x1100, 0x11FF), (0x3130, 0x318F)))
#: Fullwidth and halfwidth forms (U+FF00-FFEF): fullwidth digits and Latin, halfwidth kana.
width_forms = _run(_alphabet("ＡＢ１２！", (0xFF01, 0xFFEF)))

# --- emoji -------------------------------------------------------------------------------
_emoji_base = _alphabet("😀👍", (0x1F600, 0x1F64F), (0x1F300, 0x1F5FF), (0x2600, 0x26FF),
                        (0x1F900, 0x1F9FF))
_emoji_seq = st.one_of(
    _emoji_base,
    st.tuples(_emoji_base, _alphabet((0x1F3FB, 0x1F3FF))).map("".join),      # skin tones
    st.lists(_emoji_base, min_size=2, max_size=4).map("\u200d".join),        # ZWJ sequences
    st.tuples(_alphabet((0x1F1E6, 0x1F1FF)), _alphabet((0x1F1E6, 0x1F1FF))).map("".join),  # flags
    st.tuples(_alphabet("❤☺#1", (0x2600, 0x26FF)), st.sampled_from("\ufe0f\ufe0e")).map("".join),
    st.sampled_from(["1\ufe0f\u20e3", "👨\u200d👩\u200d👧", "🏳\ufe0f\u200d🌈", "🇺🇳"]),
)
#: Emoji with skin-tone modifiers, ZWJ sequences, flags, variation selectors, keycaps.
emoji = st.lists(_emoji_seq, min_size=1, max_size=4).map("".join)

# --- whitespace ----------------------------------------------------------------------------
_SPACES = (" \n\t\r\v\f\xa0\u0085\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
           "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
#: Every Unicode White_Space code point (NBSP, U+3000, U+0085, U+2028/9...), CR, CRLF, tab,
#: VT, FF, plus look-alikes that are NOT whitespace for llama.cpp (U+200B, U+180E,
#: U+001C-001F, U+FEFF); runs and mixtures of them.
whitespace = st.one_of(
    st.text(_alphabet(_SPACES, "\u200b\u180e\x1c\x1d\x1e\x1f\ufeff"), min_size=1, max_size=8),
    st.lists(st.sampled_from(["\r\n", "  ", "\n\n", "    ", "\t\t", "\xa0 "]), min_size=1,
             max_size=4).map("".join))

# --- numbers -------------------------------------------------------------------------------
#: ASCII digit runs up to 40 long, digits of every script (category Nd), number forms
#: (½ Ⅻ ① ¼ 〇), and "7777 + 3333" style arithmetic.
numbers = st.one_of(
    st.text(_alphabet("0123456789"), min_size=1, max_size=40),
    _run(_alphabet(categories=["Nd"]), 8),
    _run(_alphabet("½¼¾⅓ⅫⅥ①②⑩〇", categories=["No", "Nl"]), 6),
    st.tuples(st.integers(0, 10**9), st.sampled_from(" + - * / = , .".split(" ")),
              st.integers(0, 10**9)).map(lambda t: f"{t[0]}{t[1]}{t[2]}"),
)

# --- contractions --------------------------------------------------------------------------
def _cased(suffix_mask: tuple[str, int]) -> str:
    # Bit i of the mask upper-cases letter i; the mask shrinks to 0 (lower case).
    suffix, mask = suffix_mask
    return "".join(c.upper() if mask >> i & 1 else c for i, c in enumerate(suffix))


# "r", "v", "l": near misses ("'ra", "'vo", "'lx") that a port matching a contraction's
# first letter alone takes as "'re", "'ve", "'ll".
_suffix = st.tuples(st.sampled_from(["s", "t", "re", "ve", "m", "ll", "d", "r", "v", "l"]),
                    st.integers(0, 3)).map(_cased)
_contraction = st.tuples(st.sampled_from(["", "it", "don", "we", "I", "THEY"]),
                         st.sampled_from(["'", "\u2019"]), _suffix,
                         st.sampled_from(["", "x", " ", "a", "he", "o", "ime", "!", "ex", "ay"])).map("".join)
#: Contractions in every letter case ('s 'T 'Re 'LL), straight and curly apostrophes,
#: with and without letters before and after ("'RE", "it's", "don’t"); one to four in a row
#: (a case-sensitive port differs on only some of them: "'Rex" yes, "'Tx" no on qwen2).
contractions = st.lists(_contraction, min_size=1, max_size=4).map("".join)

# --- punctuation and source code -----------------------------------------------------------
_CODE = ["->", "!=", "==", "x != y and a.b == c", "def f(x):\n    return x**2\n",
         "{\"a\": [1, 2.5e-3]}", "<div class=\"x\">", "#include <stdio.h>", "a.b(c)[d]",
         "...", "$$", "~~", "x ~é ~~", "//", "/* */", "```py\n", "\\n", "@@ -1,2 +1 @@",
         "if (a <= b && c >= d) { return; }", "    ", "\t\t}", "'''", "«»", "¿¡"]
#: ASCII punctuation runs, Unicode punctuation, and source-code snippets.
punctuation_code = st.one_of(
    st.sampled_from(_CODE),
    _run(_alphabet("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"), 8),
    _run(_alphabet(categories=["Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk"]), 4),
)

# --- rare characters ------------------------------------------------------------------------
#: C0/C1 controls, NUL, DEL, BOM, ZWJ/ZWNJ, private use, noncharacters, U+10FFFF, code points
#: unassigned in Unicode 15.1, and ones new in Unicode 15.0-17.0 (Kawi, Nag Mundari, CJK Ext-H/I,
#: Garay, legacy computing supplement) where port tables and llama.cpp's 15.1 table disagree.
rare_chars = _run(_alphabet(
    "\x00\x7f\ufeff\u200c\u200d\ufffd", (0x01, 0x1F), (0x80, 0x9F), (0xE000, 0xE0FF),
    "\ufffe\uffff\U0010ffff\U000e0001\U000e0020", "\u0378\u0380\u05ff\u2065\U0002fffe",
    (0x11F00, 0x11F59), (0x1E4D0, 0x1E4F9), (0x31350, 0x323AF), (0x2EBF0, 0x2EE5D),
    (0x10D40, 0x10D8F), (0x1CC00, 0x1CEB3), (0x16D40, 0x16D79), (0x1E5D0, 0x1E5FF)), 6)

# --- Unicode drift ---------------------------------------------------------------------------
#: Code points whose llama.cpp (Unicode 15.1 tables) properties differ from a port platform's
#: (Unicode 14.0-18.0, Java/ICU/Go/JS/Python \s \d \w), in splitter contexts: see drift.py.
unicode_drift = _drift.drift_in_context

#: Families in shrink order: a failing text shrinks toward fragments of earlier families.
FAMILIES = {
    "ascii_words": ascii_words, "whitespace": whitespace, "numbers": numbers,
    "contractions": contractions, "punctuation_code": punctuation_code, "latin": latin,
    "cyrillic_greek": cyrillic_greek, "arabic_hebrew": arabic_hebrew, "indic": indic,
    "thai_khmer": thai_khmer, "cjk": cjk, "hangul": hangul, "width_forms": width_forms,
    "emoji": emoji, "rare_chars": rare_chars, "unicode_drift": unicode_drift,
}


# --- from the vocab itself -----------------------------------------------------------------
#: Upper bound on a repeated text's length in characters (a single fragment is never cut).
MAX_CHARS = 40_000


@dataclass(frozen=True)
class VocabPiece:
    """The text of vocab token ``index % len(pieces)`` (glued to its neighbours)."""
    index: int


@dataclass(frozen=True)
class SpecialText:
    """A special/user-defined token's text with whitespace on either side."""
    index: int
    left: str = ""
    right: str = ""


@dataclass(frozen=True)
class VocabText:
    """Text ``index`` (mod the family's size) of one vocab-derived family (vocabgen.py:
    ``unmerged_tokens``, ``merge_ties``, ...); "" if the vocab has none of that family."""
    family: str
    index: int


@dataclass(frozen=True)
class Recipe:
    """Fragments (str | VocabPiece | SpecialText) joined, repeated ``repeat`` times."""
    parts: tuple = ()
    repeat: int = 1




@dataclass(frozen=True)
class VocabTexts:
    """What :func:`materialise` needs from one vocab: its token texts that are
    valid non-empty UTF-8 (``pieces``), its special token texts, and its
    adversarial texts per vocabgen family (``vocabgen.vocab_adversarial``)."""
    pieces: Sequence[str]
    specials: Sequence[str]
    adversarial: Mapping[str, Sequence[str]] = field(default_factory=dict)


def materialise(recipe: Recipe, vocab: VocabTexts) -> str:
    """The text a recipe stands for in one vocab.

    >>> vt = VocabTexts(("he", "llo"), ("<s>",))
    >>> materialise(Recipe(("a", VocabPiece(1), SpecialText(0, " ", "")), 2), vt)
    'allo <s>allo <s>'
    """
    out = []
    for part in recipe.parts:
        if isinstance(part, VocabPiece):
            out.append(vocab.pieces[part.index % len(vocab.pieces)] if vocab.pieces else "")
        elif isinstance(part, SpecialText):
            s = vocab.specials[part.index % len(vocab.specials)] if vocab.specials else ""
            out.append(part.left + s + part.right)
        elif isinstance(part, VocabText):
            texts = vocab.adversarial.get(part.family, ())
            out.append(texts[part.index % len(texts)] if texts else "")
        else:
            out.append(part)
    base = "".join(out)
    # Long texts stay "tens of KB": the repeat is capped at MAX_CHARS in total.
    return base * max(1, min(recipe.repeat, MAX_CHARS // max(1, len(base))))


#: Neighbours of a special text: spaces and newlines (lstrip/rstrip eat them), and text glued
#: on without a space (letters, digits, punctuation, a non-ASCII letter).
_around = st.sampled_from(["", " ", "  ", "\n", "\t", "a", " a", "1", ".", "é", "\n ", " \n", "<"])
# Any special index: taken mod the vocab's count, so all of deepseek-llm's 2,400 are drawn.
_special = st.builds(SpecialText, st.integers(0, 2**24), _around, _around)
#: Every kind of fragment a recipe is made of, by name (``STRATEGY_FAMILIES`` selects).
FRAGMENT_FAMILIES = {
    **FAMILIES,
    "vocab_pieces": st.integers(0, 2**20).map(VocabPiece),
    "special_texts": _special,
    # A vocab-derived adversarial text (vocabgen.py), shortest texts first.
    **{f"vocab:{name}": st.integers(0, 2**20).map(lambda i, n=name: VocabText(n, i))
       for name in VOCAB_FAMILIES},
    # A drift character next to a special token (either side).
    "drift_next_to_special": st.tuples(unicode_drift, _special, st.booleans()).map(
        lambda t: t[:2] if t[2] else t[1::-1]),
}


def _selected_fragments() -> st.SearchStrategy:
    """All fragment families, or those named in $STRATEGY_FAMILIES (comma separated:
    ``make coverage`` runs them one at a time to see what each one reaches)."""
    wanted = [w for w in os.environ.get("STRATEGY_FAMILIES", "").replace(",", " ").split() if w]
    unknown = [w for w in wanted if w not in FRAGMENT_FAMILIES]
    if unknown:
        raise HarnessError(f"STRATEGY_FAMILIES names unknown families {unknown}; known: "
                           f"{', '.join(FRAGMENT_FAMILIES)}")
    return st.one_of(*(FRAGMENT_FAMILIES[w] for w in wanted or FRAGMENT_FAMILIES))


_fragment = _selected_fragments()


def recipes(max_fragments: int = 8, max_repeat: int = 1000) -> st.SearchStrategy[Recipe]:
    """Recipes of up to ``max_fragments`` fragments; about 1 in 25 is repeated
    2..max_repeat times (long mixed texts of tens of KB).

    The repeat selector shrinks to "no repeat", the count toward 2.
    """
    repeat = st.tuples(st.integers(0, 24), st.integers(2, max(2, max_repeat)))
    return st.builds(_recipe, st.lists(_fragment, max_size=max_fragments), repeat)


def _recipe(parts: list, repeat: tuple[int, int]) -> Recipe:
    # Selector 24 (1 in 25) repeats; shrinking drives the selector to 0: no repeat.
    # A fragment may be a tuple of parts glued together (a drift character and a special).
    flat = [q for p in parts for q in (p if isinstance(p, tuple) else (p,))]
    return Recipe(tuple(flat), repeat[1] if repeat[0] == 24 else 1)


# --- profiles -------------------------------------------------------------------------------
#: max_examples per (vocab, flag combination) test for each profile name.
PROFILES = {"ci": 30, "conformance": 500, "thorough": 5000}


def register_profiles() -> str:
    """Register the ci/conformance/thorough profiles; load $HYPOTHESIS_PROFILE
    (default ``ci``; empty counts as unset, as make exports unset variables
    empty) and return its name. deadline=None: timing is not conformance, and
    the first call of a vocab pays its load."""
    for name, n in PROFILES.items():
        settings.register_profile(
            name, max_examples=n, deadline=None, print_blob=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                   HealthCheck.differing_executors,
                                   HealthCheck.function_scoped_fixture])
    name = os.environ.get("HYPOTHESIS_PROFILE") or "ci"
    if name not in PROFILES:
        raise HarnessError(f"HYPOTHESIS_PROFILE={name!r} is not a profile: use one of "
                           f"{', '.join(PROFILES)}")
    settings.load_profile(name)
    return name


@contextmanager
def seeded_generation() -> Iterator[None]:
    """Hypothesis draws that depend on the seed alone, so a run reproduces from the seed it prints.

    Hypothesis mixes into generated values the literals it finds in the source of every
    loaded "local" module (not in site-packages: an editable install of this harness, a
    port's adapter). Which modules are loaded when differs between processes (xdist
    workers, ``python -m`` or the console script, what ran before), so the same seed would
    draw other texts. Inside this block it finds none (Hypothesis' own global constants
    stay). A Hypothesis without that mechanism is left alone.
    """
    try:
        from hypothesis.internal.conjecture import providers
        empty = providers.Constants()
        original = providers._get_local_constants
    except (ImportError, AttributeError, TypeError):
        yield
        return
    providers._get_local_constants = lambda: empty
    try:
        yield
    finally:
        providers._get_local_constants = original


def _check_all(names: Sequence[str]) -> None:
    # __all__ is checked at import so a renamed family cannot silently drop out.
    missing = [n for n in names if n not in globals()]
    if missing:
        raise ImportError(f"strategies.__all__ names undefined {missing}")


_check_all(__all__)
