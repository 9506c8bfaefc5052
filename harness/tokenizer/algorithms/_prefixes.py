"""``piece in PrefixIndex(texts)``: is ``piece`` the start of some token text?

The greedy walks of WPM and UGM stop as soon as the bytes read so far start no
token (llama.cpp walks a trie). A set of every prefix of every text answers in
one hash lookup, but holds ``len(t)**2 / 2`` bytes per text: a 40,000-byte
token costs 800 MB. Here prefixes up to ``short`` bytes go in the set (the
common case keeps its one lookup), and longer pieces are answered by bisecting
the sorted texts that are long enough to hold them: memory is linear in the
texts' total size whatever their lengths.

>>> ix = PrefixIndex([b"ab", b"abcdef"], short=2)
>>> [p in ix for p in (b"a", b"ab", b"abc", b"abcde", b"abcdef", b"abd")]
[True, True, True, True, False, False]
>>> b"abcdef" in PrefixIndex([b"ab", b"abcdef"], short=2, proper=False)
True
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Iterable

SHORT = 32  # prefixes up to this many bytes are hashed; longer ones are bisected


class PrefixIndex:
    """Proper prefixes (``proper=True``: shorter than the text) or all non-empty
    prefixes (``proper=False``) of the given texts."""

    def __init__(self, texts: Iterable[bytes], *, short: int = SHORT, proper: bool = True):
        texts = list(texts)
        cut = 1 if proper else 0  # a text of length n has prefixes of length 1..n-cut
        self._short, self._proper = short, proper
        self._set = {t[:k] for t in texts for k in range(1, min(len(t) - cut, short) + 1)}
        # a prefix longer than `short` needs a text of at least short + 1 + cut bytes
        self._long = sorted({t for t in texts if len(t) > short + cut})

    def __contains__(self, piece: bytes) -> bool:
        if len(piece) <= self._short:
            return piece in self._set
        # Texts starting with `piece` follow it contiguously in sorted order, so the
        # first text after it (or at it, when `piece` itself counts) decides.
        at = bisect_right(self._long, piece) if self._proper else bisect_left(self._long, piece)
        return at < len(self._long) and self._long[at].startswith(piece)

    def __bool__(self) -> bool:
        return bool(self._set)
