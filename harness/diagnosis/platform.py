"""Variants of the Unicode view: ``\\s``, ``\\d`` and general categories as a port's platform sees them.

llama.cpp classifies every code point with its own Unicode 15.1 tables
(src/unicode.cpp, ``unicode_cpt_flags_from_cpt``; data in src/unicode-data.cpp): 25
whitespace code points, ``\\p{N}`` = every number, no Unicode 16+ assignment. A port
asks its platform (JavaScript, Java, ICU, Go, Python ``re``, a newer Unicode), which
classes some code points differently. The drift tables
(``harness.tokenizer.unicode._drift_tables``, from tools/gen_drift_tables.py) list them.

Each variant is the platform's view of those code points, as flags (``platform_flags``):
- BPE: the text is *mapped* code point for code point, each drifting code point to a
  representative that llama.cpp classes as the platform does (same features for this
  pre type: whitespace, the categories its regexes name, and membership in their
  literal classes), the exact pre-tokenizer splits the mapped text, and the original
  text is cut at the same code point offsets and merged exactly;
- WPM: ``preprocess`` runs with the platform's fate for those code points.

>>> sorted(KINDS)
['d', 's', 'version']
>>> hex(platform_flags(WHITESPACE_VARIANTS[0])[0x85])   # JavaScript's \\s lacks NEL: a control
'0x80'
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from harness.tokenizer import unicode as U
from harness.tokenizer.algorithms import wpm
from harness.tokenizer.pretokenize import REGEX_EXPRS, split_words
from harness.tokenizer.unicode._drift_tables import CLASSES, VERSIONS

from dataclasses import replace

from .base import Variant, cp_name, texts
from .split import SplitSession, words_by_lengths, _plain_bpe

__all__ = ["PlatformVariant", "KINDS", "WHITESPACE_VARIANTS", "DIGIT_VARIANTS", "VERSION_VARIANTS",
           "platform_flags", "class_cps"]

FLAGS_AT = "src/unicode.cpp, unicode_cpt_flags_from_cpt (tables: src/unicode-data.cpp, Unicode 15.1)"
FLAGS_SHORT = "src/unicode.cpp"
KINDS = {"s": "whitespace (\\s)", "d": "digits (\\d for \\p{N})", "version": "general categories"}
_CAT = {"L": U.LETTER, "N": U.NUMBER, "P": U.PUNCTUATION, "S": U.SYMBOL, "M": U.ACCENT_MARK, "C": U.CONTROL}
_CAT_NAME = {U.LETTER: "a letter", U.NUMBER: "a number", U.PUNCTUATION: "punctuation", U.SYMBOL: "a symbol",
             U.ACCENT_MARK: "a mark", U.CONTROL: "a control", U.SEPARATOR: "a separator", U.UNDEFINED: "unassigned"}


def _aliases(name: str) -> list[tuple[int, int]]:
    """The ranges of the drift class called ``name`` (stored once under 'a=b=c' when equal)."""
    for key, ranges in CLASSES.items():
        if name in key.split("="):
            return list(ranges)
    raise KeyError(f"no drift class {name!r} in harness/tokenizer/unicode/_drift_tables.py; "
                   "regenerate it with tools/gen_drift_tables.py")


@dataclass(frozen=True, kw_only=True)
class PlatformVariant(Variant):
    """The platform's view of drift classes ``classes`` (``kind``: s, d or version)."""

    kind: str
    classes: tuple[str, ...]
    platform: str

    def applies(self, tok) -> bool:
        v = tok.vocab
        if v.vocab_type == "wpm":
            return self.kind != "d"
        if not _plain_bpe(tok):
            return False
        used = _used_bits(REGEX_EXPRS[v.pre_type])
        need = {"s": U.WHITESPACE, "d": U.NUMBER}.get(self.kind, U.MASK_CATEGORIES)
        return bool(used & need)

    def encode(self, tok, text, add, parse):
        cps = class_cps(self)
        if not any(ord(c) in cps for c in text):
            return tok.encode(text, add_special=add, parse_special=parse)
        return self.tokenizer(tok).encode(text, add_special=add, parse_special=parse)

    def table(self) -> frozenset[int]:
        """Every code point this platform classes differently from llama.cpp (its whole claim:
        a port with this table is right on every other code point)."""
        return class_cps(self)

    def prediction_points(self, tok) -> tuple[int, ...]:
        """Up to 6 code points this platform classes differently, spread over the table."""
        cps = sorted(class_cps(self))
        step = max(1, len(cps) // 6)
        return tuple(cps[::step][:6])

    def build(self, tok):
        from harness.tokenizer import Tokenizer
        v = tok.vocab
        t = Tokenizer(v)
        if v.vocab_type == "wpm":
            t._session = PlatformWpmSession(v, _wpm_fates(self, v.lowercase, v.strip_accents))
        else:
            table = _mapping(self, v.pre_type)
            t._session = SplitSession(v, lambda text: words_by_lengths(
                text, map(len, split_words(v.pre_type, text.translate(table)))))
        return t

    def title(self, cases) -> str:
        flags = platform_flags(self)
        seen = [ord(c) for c in dict.fromkeys("".join(texts(cases))) if ord(c) in flags][:3]
        if not seen:
            return f"{self.models}: llama.cpp classes code points with its own tables ({FLAGS_SHORT})"
        return "; ".join(self._one(cp, flags[cp]) for cp in seen) + self._who(seen)

    def _who(self, seen) -> str:
        """The platform, or every platform of the same kind whose class holds all code points seen
        (the cases cannot tell those apart)."""
        if self.kind == "version":
            return f" ({self.platform}{' or later' if self.name.endswith('newer') else ' or earlier'})"
        same = [v.platform for v in _BY_KIND[self.kind] if all(cp in class_cps(v) for cp in seen)]
        return f" ({' or '.join(same or [self.platform])})"

    def _one(self, cp: int, theirs: int) -> str:
        mine = U.cpt_flags(cp)
        if self.kind == "s":
            has = "has" if theirs & U.WHITESPACE else "lacks"
            is_ = "is" if mine & U.WHITESPACE else "is not"
            return f"{cp_name(cp)} {is_} whitespace in llama.cpp ({FLAGS_SHORT}); this port's \\s {has} it"
        if self.kind == "d":
            is_, has = ("is", "lacks") if mine & U.NUMBER else ("is not", "has")
            return f"{cp_name(cp)} {is_} a number (\\p{{N}}) in llama.cpp ({FLAGS_SHORT}); this port's \\d {has} it"
        return (f"{cp_name(cp)} is {_CAT_NAME.get(mine & U.MASK_CATEGORIES, 'other')} in llama.cpp's Unicode 15.1 "
                f"tables ({FLAGS_SHORT}); this port's Unicode makes it "
                f"{_CAT_NAME.get(theirs & U.MASK_CATEGORIES, 'other')}")


@lru_cache(maxsize=None)
def platform_flags(variant: PlatformVariant) -> dict[int, int]:
    """Code point -> the flags the platform gives it, for every code point of the variant's classes."""
    out: dict[int, int] = {}
    for name in variant.classes:
        for a, b in _aliases(name):
            for cp in range(a, b + 1):
                mine = U.cpt_flags(cp)
                if variant.kind == "s":
                    out[cp] = mine ^ U.WHITESPACE
                elif variant.kind == "d":
                    cat = 0 if mine & U.NUMBER else U.NUMBER  # not a digit to the platform: no class at all
                    out[cp] = (mine & ~U.MASK_CATEGORIES) | cat
                else:
                    letter = name.split(":")[-1]
                    cat = U.UNDEFINED if name.startswith("unassigned_in_") else _CAT[letter]
                    out[cp] = (mine & ~U.MASK_CATEGORIES) | cat
    return out


@lru_cache(maxsize=None)
def class_cps(variant: PlatformVariant) -> frozenset[int]:
    """The code points the variant classes differently (a fast 'does it touch this text' test)."""
    return frozenset(platform_flags(variant))


# --- BPE: the mapped text ------------------------------------------------------------------------

def _used_bits(exprs) -> int:
    """The flags this regex list can tell apart."""
    joined = "".join(exprs)
    bits = 0
    for token, bit in (("\\s", U.WHITESPACE), ("\\S", U.WHITESPACE), ("\\p{L", U.LETTER), ("\\p{N", U.NUMBER),
                       ("\\p{P", U.PUNCTUATION), ("\\p{S", U.SYMBOL), ("\\p{M", U.ACCENT_MARK)):
        if token in joined:
            bits |= bit
    return bits


def _bracket_bodies(expr: str) -> list[str]:
    out, i, start, inside = [], 0, 0, False
    while i < len(expr):
        c = expr[i]
        if c == "\\":
            i += 2
            continue
        if not inside and c == "[":
            inside, start = True, i + 1
        elif inside and c == "]" and i > start:
            out.append(expr[start:i])
            inside = False
        i += 1
    return out


_ESC = {"r": 0x0D, "n": 0x0A, "t": 0x09, "f": 0x0C, "v": 0x0B}


def _class_ranges(body: str) -> list[tuple[int, int]]:
    """The literal code points of a bracket class (its \\s \\d \\p{..} parts left out)."""
    items: list[int | None] = []
    i = 1 if body.startswith("^") else 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            e = body[i + 1]
            if e == "p":
                i = body.find("}", i) + 1 or len(body)
                items.append(None)
                continue
            if e in "sSdDwW":
                items.append(None)
            elif e in "xu":
                n = 2 if e == "x" else 4
                items.append(int(body[i + 2:i + 2 + n], 16))
                i += n
            else:
                items.append(_ESC.get(e, ord(e)))
            i += 2
            continue
        items.append(-1 if c == "-" else ord(c))
        i += 1
    out, k = [], 0
    while k < len(items):
        if k + 2 < len(items) and items[k + 1] == -1 and items[k] not in (None, -1) and items[k + 2] not in (None, -1):
            out.append((items[k], items[k + 2]))
            k += 3
            continue
        if items[k] is not None:
            out.append((ord("-"), ord("-")) if items[k] == -1 else (items[k], items[k]))
        k += 1
    return out


@lru_cache(maxsize=None)
def _features(pre_type: str) -> tuple[int, np.ndarray]:
    """(used flag bits, per code point: its used flags | literal-class memberships << 16)."""
    exprs = REGEX_EXPRS[pre_type]
    used = _used_bits(exprs)
    feat = (U.FLAGS & used).astype(np.int64)
    k = 16
    for expr in exprs:
        for body in _bracket_bodies(expr):
            for a, b in _class_ranges(body):
                feat[a:b + 1] |= 1 << k
            k += 1
    return used, feat


@lru_cache(maxsize=None)
def _candidates(pre_type: str, want: int) -> np.ndarray:
    """Code points whose features are ``want``, usable as representatives (non-ASCII, not a
    surrogate, lower case not ASCII: contractions compare unicode_tolower with ASCII)."""
    _, feat = _features(pre_type)
    cps = np.flatnonzero(feat == want)
    ok = (cps >= 0x80) & ((cps < 0xD800) | (cps > 0xDFFF)) & (cps != 0xFFFD) & (U.LOWER[cps] >= 0x80)
    return cps[ok]


@lru_cache(maxsize=None)
def _mapping(variant: PlatformVariant, pre_type: str) -> dict[int, int]:
    """str.translate table: drifting code point -> its nearest representative (empty: nothing drifts here)."""
    used, feat = _features(pre_type)
    table: dict[int, int] = {}
    for cp, theirs in platform_flags(variant).items():
        mine = int(feat[cp])
        want = (mine & ~0xFFFF) | (theirs & used)
        if want == mine:
            continue
        cands = _candidates(pre_type, want)
        if len(cands):
            k = int(np.searchsorted(cands, cp))
            near = [int(cands[j]) for j in (k - 1, k) if 0 <= j < len(cands)]
            table[cp] = min(near, key=lambda c: abs(c - cp))
    return table


# --- WPM: the platform's fate in preprocess --------------------------------------------------------

class PlatformWpmSession(wpm.Session):
    """WPM with some code points' preprocess fates replaced (whitespace no longer chunks the text)."""

    def __init__(self, vocab, fates: dict):
        super().__init__(vocab)
        self._fates.update(fates)

    def tokenize(self, text: bytes) -> list[int]:
        return self.tokenize_whole(text)


def _wpm_fates(variant: PlatformVariant, lowercase: bool, strip_accents: bool) -> dict[int, tuple[int, bytes]]:
    """``wpm.classify`` with the platform's flags, for every code point the variant classes differently."""
    flags = platform_flags(variant)
    return {cp: _wpm_fate(cp, flags, lowercase, strip_accents) for cp in flags}


def _wpm_fate(cp, flags, lowercase, strip_accents):
    c = U.nfd_first(cp) if strip_accents else cp
    f = flags.get(c, U.cpt_flags(c))
    if f & U.WHITESPACE:
        return wpm.BREAK, b""
    if c in (0, 0xFFFD) or f & U.CONTROL or (strip_accents and f & U.ACCENT_MARK):
        return wpm.DROP, b""
    s = U.cpt_to_utf8(U.to_lower(c) if lowercase else c)
    if f & U.PUNCTUATION or (c < 0x7F and f & U.SYMBOL) or wpm.is_chinese_char(c):
        return wpm.SINGLE, s
    return wpm.APPEND, s


# --- the variants ----------------------------------------------------------------------------------

def _ws(name, cls, platform, detail, shipped=""):
    return PlatformVariant(
        name=name, models=f"the pre-tokenizer's \\s is {platform}'s ({detail})", kind="s", classes=(cls,),
        platform=platform,
        rule=f"whitespace is exactly llama.cpp's 25 code points ({FLAGS_AT}: the WHITESPACE flag)",
        checks=("encode",), shipped_by=shipped)


def _d(name, cls, platform, detail):
    return PlatformVariant(
        name=name, models=f"\\d ({platform}: {detail}) where the pre type says \\p{{N}}", kind="d", classes=(cls,),
        platform=platform, rule=f"\\p{{N}} is every code point llama.cpp's tables call a number ({FLAGS_AT})",
        checks=("encode",), shipped_by="known-port-bugs 4 (Unicode categories: '¼-a', '½-a', 'Ⅵ-a')")


@dataclass(frozen=True, kw_only=True)
class VersionVariant(PlatformVariant):
    """A platform variant whose parameter is the Unicode version: ``versions`` = ((label, class prefix), ...),
    tried in order (the version closest to llama.cpp's 15.1 first)."""

    versions: tuple[tuple[str, str], ...]

    def candidates(self, tok, cases):
        for label, prefix in self.versions:
            yield self.bind(label)

    def bind(self, param):
        return replace(self, param=param, classes=_named(dict(self.versions)[param]), platform=param)


def _named(prefix: str) -> tuple[str, ...]:
    """Every drift class name starting with ``prefix`` (aliases included)."""
    return tuple(n for key in CLASSES for n in key.split("=") if n.startswith(prefix))


def _version(name, direction, versions):
    return VersionVariant(
        name=name, models=f"general categories from {direction} Unicode than llama.cpp's 15.1 tables",
        kind="version", classes=_named(versions[0][1]), platform=versions[0][0], versions=versions,
        rule=f"categories come from llama.cpp's own Unicode 15.1 tables ({FLAGS_AT})",
        checks=("encode",), shipped_by="known-port-bugs 4 (Unicode category tables)")


WHITESPACE_VARIANTS = (
    _ws("whitespace_js", "js_s", "JavaScript", "ECMA-262: no U+0085, has U+FEFF",
        "known-port-bugs 6 (whitespace set: U+0085)"),
    _ws("whitespace_icu", "icu_s", "ICU", "[\\t\\n\\f\\r\\p{Z}]: no U+000B, U+0085"),
    _ws("whitespace_python_re", "python_re_s", "Python re", "str.isspace: U+001C-U+001F too"),
    _ws("whitespace_java_iswhitespace", "java_isWhitespace_s", "Java Character.isWhitespace",
        "no U+00A0 U+2007 U+202F, has U+001C-U+001F", "known-port-bugs 6 (whitespace set: NBSP)"),
    _ws("whitespace_java", "java_s", "Java regex", "java.util.regex: ASCII only", "known-port-bugs 6 (whitespace set)"),
    _ws("whitespace_go", "go_s", "Go regexp", "RE2: ASCII only, no \\v",
        "known-port-bugs 6 (whitespace set); ollama (Go)"),
)
DIGIT_VARIANTS = (
    _d("digits_python_re", "python_re_d", "Python re", "str.isdecimal, Unicode 14.0"),
    _d("digits_nd", "icu_d", "ICU or the regex module", "\\p{Nd} only"),
    _d("digits_ascii", "go_d", "Go, Java or JavaScript", "[0-9] only"),
)
VERSION_VARIANTS = (
    _version("unicode_older", "an older", (
        (f"Unicode {VERSIONS['ud15.0']}", "unassigned_in_ud15.0:"),
        (f"Unicode {VERSIONS['py311']} (Python 3.11 unicodedata)", "unassigned_in_py311:"))),
    _version("unicode_newer", "a newer", (
        (f"Unicode {VERSIONS['ud16.0']}", "assigned_only_in_ud16.0:"),
        (f"Unicode {VERSIONS['ud17.0']}", "assigned_only_in_ud17.0:"),
        (f"Unicode {VERSIONS['ud18.0']} (the regex module)", "assigned_only_in_ud18.0:"))),
)

_BY_KIND = {"s": WHITESPACE_VARIANTS, "d": DIGIT_VARIANTS}
