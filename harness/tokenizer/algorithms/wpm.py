"""WPM (BERT WordPiece) session: ``llm_tokenizer_wpm_session`` (V:768-880).

The input is the raw fragment bytes. llama.cpp, and so this module:

1. ``preprocess``: decode to code points (each invalid byte -> U+FFFD); if
   ``strip_accents``, replace every code point by the *first* code point of its
   NFD (``unicode_cpts_normalize_nfd``, so ``한`` -> ``ᄒ`` alone); then per code
   point, with llama.cpp's own Unicode 15.1 flags:
   whitespace ends the word; NUL, U+FFFD and CONTROL are dropped; with
   ``strip_accents`` ACCENT_MARK is dropped; the code point is lowercased
   (``unicode_tolower``) if ``lowercase``; PUNCTUATION, ASCII SYMBOL and
   ``is_chinese_char`` become one-code-point words; anything else extends the
   current word.
2. Each word gets the prefix ``▁`` and is matched greedily, longest **byte**
   substring first (lengths up to ``max_token_len + 1``, so a match may split
   a UTF-8 sequence); if some position matches nothing, the word's ids are
   discarded and one ``unk`` is emitted instead.

>>> from types import SimpleNamespace
>>> toks = [b"[UNK]", "▁hello".encode(), b"!", "▁!".encode(), "▁r".encode(), b"esume"]
>>> v = SimpleNamespace(tokens=tuple(toks), token_to_id={t: i for i, t in enumerate(toks)},
...                     unk=0, max_token_len=7, lowercase=True, strip_accents=True)
>>> Session(v).tokenize("Hello! Résumé ¿".encode())
[1, 3, 4, 5, 0]
"""

from __future__ import annotations

import copy
import functools
import re

import numpy as np

from harness.tokenizer import unicode as U
from harness.tokenizer.algorithms._cache import PieceMemo
from harness.tokenizer.algorithms._prefixes import PrefixIndex

LLAMA_TOKEN_NULL = -1  # what llama.cpp emits for a NULL special id (no unk in the vocab)
SPACE_PREFIX = b"\xe2\x96\x81"  # ▁ U+2581, the "phantom space" of every word
_WORD_CACHE_SIZE = 1 << 16


def is_chinese_char(cpt: int) -> bool:
    """``is_chinese_char`` (V:863), ranges exactly as llama.cpp has them.

    The 0x2B920 start (not 0x2B820) follows HF's Rust code, as the source says.

    >>> is_chinese_char(0x4E2D), is_chinese_char(0x2B820), is_chinese_char(0x3000)
    (True, False, False)
    """
    return (0x04E00 <= cpt <= 0x09FFF or 0x03400 <= cpt <= 0x04DBF
            or 0x20000 <= cpt <= 0x2A6DF or 0x2A700 <= cpt <= 0x2B73F
            or 0x2B740 <= cpt <= 0x2B81F or 0x2B920 <= cpt <= 0x2CEAF
            or 0x0F900 <= cpt <= 0x0FAFF or 0x2F800 <= cpt <= 0x2FA1F)


# What preprocess does with one code point.
BREAK, DROP, SINGLE, APPEND = 0, 1, 2, 3


def classify(cpt: int, lowercase: bool, strip_accents: bool) -> tuple[int, bytes]:
    """One code point's fate in ``preprocess`` and its output bytes.

    With ``strip_accents`` the code point is first replaced by its NFD's first
    code point; every later test looks at that replacement. Raises HarnessError
    (from ``U.cpt_to_utf8``) for a kept code point above U+10FFFF, where llama.cpp
    throws out of llama_tokenize.

    >>> classify(ord("É"), True, True), classify(ord(","), True, True), classify(0x3000, True, True)
    ((3, b'e'), (2, b','), (0, b''))
    """
    if strip_accents:
        cpt = U.nfd_first(cpt)
    flags = U.cpt_flags(cpt)
    if flags & U.WHITESPACE:
        return BREAK, b""
    if cpt == 0 or cpt == 0xFFFD or flags & U.CONTROL:
        return DROP, b""
    if strip_accents and flags & U.ACCENT_MARK:
        return DROP, b""
    s = U.cpt_to_utf8(U.to_lower(cpt) if lowercase else cpt)
    if flags & U.PUNCTUATION or (cpt < 0x7F and flags & U.SYMBOL) or is_chinese_char(cpt):
        return SINGLE, s
    return APPEND, s


def preprocess(text: bytes, lowercase: bool, strip_accents: bool,
               cache: dict[int, tuple[int, bytes]] | None = None) -> list[bytes]:
    """llama.cpp's ``preprocess``: normalized words as UTF-8 bytes (no ``▁`` yet).

    ``cache`` memoizes ``classify`` per code point (a session keeps one).

    >>> preprocess("Ab,c\\x00 中文 x".encode(), lowercase=True, strip_accents=False)
    [b'ab', b',', b'c', b'\\xe4\\xb8\\xad', b'\\xe6\\x96\\x87', b'x']
    """
    if cache is None:
        cache = {}
    words: list[bytes] = []
    word = bytearray()
    for cpt in U.cpts_from_utf8(text):
        fate = cache.get(cpt)
        if fate is None:
            fate = cache[cpt] = classify(cpt, lowercase, strip_accents)
        kind, s = fate
        if kind == APPEND:
            word += s
        elif kind == SINGLE:
            if word:
                words.append(bytes(word))
                word = bytearray()
            words.append(s)
        elif kind == BREAK and word:
            words.append(bytes(word))
            word = bytearray()
    if word:
        words.append(bytes(word))
    return words


@functools.lru_cache(maxsize=None)
def _break_pattern(strip_accents: bool) -> re.Pattern:
    """Runs of the code points ``classify`` calls BREAK: WHITESPACE, after the NFD
    replacement when accents are stripped (computed from the tables, not assumed).

    >>> _break_pattern(True).split("a \u2000b\u00a0")
    ['a', 'b', '']
    """
    cps = np.arange(U.MAX_CODEPOINTS)
    if strip_accents:
        cps = U.NFD_FIRST[cps]
    hits = np.flatnonzero(U.FLAGS[cps] & U.WHITESPACE).tolist()
    return re.compile("[" + "".join(re.escape(chr(c)) for c in hits) + "]+")


class Session:
    """Tokenizes one WPM fragment. Build once per vocab."""

    def __init__(self, vocab) -> None:
        self._token_to_id: dict[bytes, int] = vocab.token_to_id
        self._max_len: int = vocab.max_token_len
        self._unk: int = LLAMA_TOKEN_NULL if vocab.unk is None else vocab.unk
        self._lowercase = bool(vocab.lowercase)
        self._strip_accents = bool(vocab.strip_accents)
        self._fates: dict[int, tuple[int, bytes]] = {}  # classify() per code point
        self._words = PieceMemo(lambda word: self._word_ids(SPACE_PREFIX + word), _WORD_CACHE_SIZE)
        self._breaks = _break_pattern(self._strip_accents)
        # ids per whitespace-free chunk: whitespace only ends words, so chunks are independent
        self._chunks = PieceMemo(lambda chunk: tuple(self.tokenize_whole(chunk.encode())), _WORD_CACHE_SIZE)
        self._inner: PrefixIndex | None = None

    def tokenize(self, text: bytes) -> list[int]:
        """Ids for one raw fragment.

        >>> from types import SimpleNamespace
        >>> v = SimpleNamespace(token_to_id={"▁a".encode(): 1, b"b": 2}, unk=0, max_token_len=4,
        ...                     lowercase=False, strip_accents=False)
        >>> Session(v).tokenize(b"ab ac")  # 'ac' has no match for 'c': the word becomes unk
        [1, 2, 0]
        """
        try:
            chunks = self._breaks.split(text.decode("utf-8"))
        except UnicodeDecodeError:
            return self.tokenize_whole(text)  # invalid UTF-8: llama.cpp's decoding rules apply
        return self._chunks.flat(chunks)

    def tokenize_whole(self, text: bytes) -> list[int]:
        """The reference: ``preprocess`` over the whole fragment, then each word."""
        return self._words.flat(preprocess(text, self._lowercase, self._strip_accents, self._fates))

    def _word_ids(self, word: bytes) -> list[int]:
        """Greedy longest-first match over byte substrings; one unk if stuck.

        llama.cpp tries lengths from ``max_token_len + 1`` down; walking up
        instead, while the bytes are still the start of some token, finds the
        same longest match in fewer lookups.
        """
        t2i, inner = self._token_to_id, self._prefixes()
        n = len(word)
        ids: list[int] = []
        i = 0
        while i < n:
            best, tid = 0, None
            for j in range(i + 1, min(n, i + self._max_len + 1) + 1):
                piece = word[i:j]
                found = t2i.get(piece)
                if found is not None:
                    best, tid = j, found
                if piece not in inner:
                    break
            if tid is None:
                return [self._unk]
            ids.append(tid)
            i = best
        return ids

    def with_fates(self, fates: dict[int, tuple[int, bytes]]) -> "Session":
        """A copy that sorts the code points of ``fates`` as given (``classify``'s ``(fate, bytes)``),
        as a port with another table does. It shares the vocab lookups, the prefix index and
        the word memo (no fate changes a word's ids); its chunks are its own.

        >>> from types import SimpleNamespace
        >>> v = SimpleNamespace(token_to_id={"▁a".encode(): 1, "▁b".encode(): 2, "▁a$b".encode(): 3}, unk=0,
        ...                     max_token_len=6, lowercase=False, strip_accents=False)
        >>> s = Session(v)
        >>> s.tokenize(b"a$b"), s.with_fates({ord("$"): (APPEND, b"$")}).tokenize(b"a$b"), s.tokenize(b"a$b")
        ([1, 0, 2], [3], [1, 0, 2])
        """
        self._prefixes()  # built once, shared
        other = copy.copy(self)
        other._fates = {**self._fates, **fates}
        other._chunks = PieceMemo(lambda chunk: tuple(other.tokenize_whole(chunk.encode())), _WORD_CACHE_SIZE)
        return other

    def _prefixes(self) -> PrefixIndex:
        """Every proper prefix of a token text (built on first use: loading stays cheap),
        in memory linear in the vocab's size however long its texts."""
        if self._inner is None:
            self._inner = PrefixIndex(self._token_to_id)
        return self._inner
