"""How an unexplained encode cause's triggers are classed and titled: their major Unicode
categories in llama.cpp's own tables, a UGM vocab's compatibility forms, or every non-ASCII
code point (the port's input, whatever the class).

>>> trigger_classes(["\\u066a", "\\u2019"])
'P'
"""

from __future__ import annotations

import unicodedata

from harness.tokenizer import unicode as U

__all__ = ["NON_ASCII", "every_non_ascii", "trigger_classes", "major_class", "triggered_title", "algorithm"]


#: Unicode major general categories, as a title names them.
_MAJOR = {"L": "letter", "M": "mark", "N": "number", "P": "punctuation", "S": "symbol", "Z": "separator",
          "C": "other (control, format, unassigned)", "compat": "compatibility (NFKC-changed)"}


#: Non-ASCII code points of every major category and many scripts, each plain (no accent to
#: strip, no compatibility form): an unexplained encode cause whose port parts from llama.cpp
#: on every one of them by itself, and on plain ASCII words on none, is about non-ASCII input
#: (text read as Latin-1, UTF-16 units, bytes), not about a class of characters or an algorithm.
NON_ASCII = ("\u00e9", "\u0436", "\u03bb", "\u0628", "\u0915", "\u4e2d", "\ud55c", "\u0301", "\u00bd",
             "\u0663", "\u00a1", "\u3001", "\u20ac", "\u00a9", "\u00a0", "\u200b")


def every_non_ascii(probed) -> bool:
    """Whether a cause's ``probed`` shows every code point of :data:`NON_ASCII` and none apart.

    >>> every_non_ascii((NON_ASCII, ())), every_non_ascii((NON_ASCII[1:], NON_ASCII[:1])), every_non_ascii(())
    (True, False, False)
    """
    return bool(probed) and set(NON_ASCII) <= set(probed[0]) and not probed[1]


def trigger_classes(triggers, pre_type: str | None = None) -> str:
    """The class of a cause's triggers: their major general categories in llama.cpp's tables
    (:func:`major_class`), e.g. ``'P'`` or ``'L+N'``; on a UGM vocab (``n/a (t5)``, whose
    charsmap normalises by compatibility) ``compat`` when every one has a compatibility
    decomposition (NFKC changes it and NFC does not: Ⅶ, ①, ｋ, ˘, a defect of normalisation
    whatever the category). No other algorithm of llama.cpp normalises so: there U+FF08 is
    punctuation, U+00A0 a separator and U+00BC a number, as the pre-tokenizer sees them.
    U+037E, a canonical singleton (NFC changes it too), is punctuation.

    >>> trigger_classes(["\\u066a", "\\u2019"]), trigger_classes(["\\u0416", "7"]), trigger_classes(["\\u037e"], "n/a (t5)")
    ('P', 'L+N', 'P')
    >>> trigger_classes(["\\u2166", "\\uff4b"], "n/a (t5)"), trigger_classes(["\\uff08", "\\u2019"], "n/a (bert)")
    ('compat', 'P')
    """
    chars = [c for c in triggers if len(c) == 1]
    if chars and algorithm(pre_type) == "t5" and all(
            unicodedata.normalize("NFKC", c) != unicodedata.normalize("NFC", c) for c in chars):
        return "compat"
    return "+".join(sorted({major_class(c) for c in chars}))


#: llama.cpp's category flags (src/unicode.h) -> the major general category a title names.
_FLAG_MAJOR = ((U.LETTER, "L"), (U.NUMBER, "N"), (U.ACCENT_MARK, "M"), (U.PUNCTUATION, "P"),
               (U.SYMBOL, "S"), (U.SEPARATOR, "Z"), (U.CONTROL, "C"), (U.UNDEFINED, "C"))


def major_class(c: str) -> str:
    """A code point's major category in llama.cpp's own Unicode 15.1 tables (not Python's
    unicodedata, which is older: U+11B00 is punctuation there, unassigned here).

    >>> major_class("\\U00011b00"), major_class("a"), major_class("\\u037e")
    ('P', 'L', 'P')
    """
    flags = U.cpt_flags(ord(c))
    return next((name for bit, name in _FLAG_MAJOR if flags & bit), "C")


def triggered_title(family: str, classes: str, triggers: list[str]) -> str:
    """The title of an unexplained cause characterised by its triggers.

    >>> triggered_title("encode", "P", ["\\u066a", "\\u2019"])
    'unexplained (encode): the port parts from llama.cpp on punctuation characters by themselves: U+066A, U+2019 (2 code points)'
    """
    if classes == "non-ASCII":
        return (f"unexplained ({family}): the port parts from llama.cpp on every non-ASCII code point probed "
                f"({len(NON_ASCII)}: letters of 7 scripts, a mark, numbers, punctuation, symbols, NBSP, a format "
                f"character) and on plain ASCII words on none: its input, not a class of characters: "
                + ", ".join(f"U+{ord(c):04X}" for c in triggers[:12]) + (", ..." if len(triggers) > 12 else ""))
    names = " and ".join(_MAJOR.get(c, c) for c in classes.split("+"))
    shown = ", ".join(f"U+{ord(c):04X}" for c in triggers[:12]) + (", ..." if len(triggers) > 12 else "")
    return (f"unexplained ({family}): the port parts from llama.cpp on {names} characters by themselves: "
            f"{shown} ({len(triggers)} code points)")


def algorithm(pre_type: str | None) -> str:
    """The tokenizer algorithm a finding's ``pre_type`` label implies: the vocab type llama.cpp
    names in ``n/a (llama)`` (SPM), ``n/a (bert)`` (WPM), ``n/a (t5)`` (UGM), or ``bpe`` for
    a BPE pre type.

    >>> algorithm("n/a (t5)"), algorithm("QWEN2"), algorithm(None)
    ('t5', 'bpe', '')
    """
    if not pre_type:
        return ""
    return pre_type[5:-1] if pre_type.startswith("n/a (") and pre_type.endswith(")") else "bpe"
