"""Variants of WPM's pre-tokenizer: one code point given another fate than llama.cpp gives it.

llama.cpp's WPM ``preprocess`` (src/llama-vocab.cpp, llm_tokenizer_wpm_session::preprocess)
sorts each code point into one of four fates: whitespace ends a word; a control character,
U+0000 and U+FFFD are dropped; punctuation, an ASCII symbol or a CJK ideograph is a word of
its own; anything else joins the word. Ports write that sorting again with their own
tables (Go's ``unicode.IsPunct``, Rust's ``is_ascii_punctuation``, a CJK range off by one
block), and a code point lands in another fate. Each variant here is bound to one code
point of the case (:class:`harness.diagnosis.text.CharVariant`); the engine probes the
rest of its class to find the set.

>>> from harness.tokenizer.algorithms.wpm import APPEND, SINGLE
>>> WPM_NOT_SPLIT.fate == APPEND and WPM_NOT_SPLIT.from_fates == (SINGLE,)
True
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from harness.tokenizer import Tokenizer
from harness.tokenizer import unicode as U
from harness.tokenizer.algorithms.wpm import APPEND, DROP, SINGLE, classify, is_chinese_char

from .base import cp_name, texts, titled
from .text import CharVariant

__all__ = ["WpmFateVariant", "WPM_NOT_SPLIT", "WPM_KEPT", "WPM_SPLIT_OFF"]

PREPROCESS = "src/llama-vocab.cpp, llm_tokenizer_wpm_session::preprocess"
#: Classes of a case's candidate code points whose unions are tried (2**n - 1 bindings at most).
MAX_CLASSES = 5


@dataclass(frozen=True, kw_only=True)
class WpmFateVariant(CharVariant):
    """The exact WPM tokenizer with the bound code point given ``fate`` (one of wpm's
    ``DROP``, ``SINGLE``, ``APPEND``), tried on each code point of the first case whose
    fate in llama.cpp is one of ``from_fates``, then on all of them at once (``param`` is
    then a string of several code points).

    >>> WPM_NOT_SPLIT.bind("\u0f07\u066b").title([]).split(";")[0]
    'WPM keeps U+0F07, U+066B inside its word (not split off as a word of its own)'
    """

    fate: int = APPEND
    from_fates: tuple[int, ...] = ()
    transform: object = None  # the text is not changed: the session's sorting is

    def applies(self, tok) -> bool:
        return tok.vocab.vocab_type == "wpm"

    def candidates(self, tok, cases):
        seen = texts(cases)
        if not seen:
            return
        v = tok.vocab
        found = [c for c in dict.fromkeys(seen[0])
                 if classify(ord(c), bool(v.lowercase), bool(v.strip_accents))[0] in self.from_fates
                 and not _accent(c, v)]
        for c in found:
            yield self.bind(c)
        # several of the set side by side ('༇٫' one word): bound to a class of them at once, or to a
        # union of classes (a port's table is a class: non-ASCII punctuation, ASCII symbols, a CJK block)
        groups: dict[tuple, list[str]] = {}
        for c in found:
            groups.setdefault(_class(c), []).append(c)
        keys = list(groups)[:MAX_CLASSES]
        for n in range(1, len(keys) + 1):
            for some in combinations(keys, n):
                chars = [c for k in some for c in groups[k]]
                if len(chars) > 1:
                    yield self.bind("".join(chars))

    def build(self, tok):
        if self.param is None:
            return tok
        v = tok.vocab
        lower, strip = bool(v.lowercase), bool(v.strip_accents)
        fates = {}
        for cpt in map(ord, self.param):
            seen = U.nfd_first(cpt) if strip else cpt
            fates[cpt] = (self.fate, b"" if self.fate == DROP else U.cpt_to_utf8(U.to_lower(seen) if lower else seen))
        t = Tokenizer(v)
        t._session = tok.session().with_fates(fates)
        return t

    def encode(self, tok, text, add, parse):
        return self.tokenizer(tok).encode(text, add_special=add, parse_special=parse)

    def title(self, cases) -> str:
        what = self.headline.format(cp=", ".join(map(cp_name, self.param)) if self.param else "a code point")
        return titled(what, self.rule)


def _class(c: str) -> tuple:
    """A code point's class as a port's table would draw it: ASCII or not, CJK ideograph or
    llama.cpp's flags (punctuation, symbol, control, ...).

    >>> _class("]") == _class("~"), _class("\u300c") == _class("\U00011c42"), _class("]") == _class("\u300c")
    (False, True, False)
    """
    cpt = ord(c)
    return cpt < 0x80, is_chinese_char(cpt), U.cpt_flags(cpt) & U.MASK_CATEGORIES


def _accent(c: str, v) -> bool:
    """An accent mark strip_accents drops: wpm_accents_kept's, for the whole vocab, not one code point's."""
    cpt = U.nfd_first(ord(c)) if v.strip_accents else ord(c)
    return bool(v.strip_accents and U.cpt_flags(cpt) & U.ACCENT_MARK and not U.cpt_flags(cpt) & U.CONTROL)


WPM_NOT_SPLIT = WpmFateVariant(
    name="wpm_char_not_split", fate=APPEND, from_fates=(SINGLE,),
    models="WPM keeps a code point llama.cpp splits off (punctuation, an ASCII symbol, a CJK ideograph) "
           "inside its word",
    rule=f"WPM makes each punctuation code point (\\p{{P}}), ASCII symbol and CJK ideograph a word of its own "
         f"({PREPROCESS})",
    checks=("encode",),
    shipped_by="ollama (Go unicode.IsPunct: ASCII symbols kept), shimmytok 0.8.4 (is_ascii_punctuation; "
               "CJK ranges missing) on bert-bge",
    headline="WPM keeps {cp} inside its word (not split off as a word of its own)")
WPM_KEPT = WpmFateVariant(
    name="wpm_char_kept", fate=APPEND, from_fates=(DROP,),
    models="WPM keeps a code point llama.cpp drops (a control, format or unassigned character, U+0000, "
           "U+FFFD) inside its word",
    rule=f"WPM drops control characters (\\p{{C}} but whitespace), U+0000 and U+FFFD ({PREPROCESS})",
    checks=("encode",), shipped_by="ollama and shimmytok 0.8.4 on bert-bge",
    headline="WPM keeps {cp} inside its word (llama.cpp drops it)")
WPM_SPLIT_OFF = WpmFateVariant(
    name="wpm_char_split_off", fate=SINGLE, from_fates=(APPEND,),
    models="WPM splits off as a word of its own a code point llama.cpp keeps inside its word",
    rule=f"WPM splits off only punctuation (\\p{{P}}), ASCII symbols and CJK ideographs; other code points "
         f"join their word ({PREPROCESS})",
    checks=("encode",), shipped_by="ollama on bert-bge (a CJK range starting at U+2B820)",
    headline="WPM splits {cp} off as a word of its own (llama.cpp keeps it in its word)")
