"""A bounded memo of piece -> result, shared by the algorithms' fast paths.

Each algorithm cuts its input into pieces whose results do not depend on
their neighbours (BPE words, SPM/UGM segments, WPM chunks), so a repeated
piece costs one dict lookup. When full, the memo starts over: cheap, and the
pieces that matter come back at once.

>>> memo = PieceMemo(str.upper, limit=2)
>>> memo.all(["a", "b", "a"]), memo.flat(["ab", "c"])
(['A', 'B', 'A'], ['A', 'B', 'C'])
"""

from __future__ import annotations

from itertools import chain
from typing import Callable, Generic, Hashable, Iterable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class PieceMemo(Generic[K, V]):
    """``compute(piece)`` memoized, at most ``limit`` pieces at a time."""

    def __init__(self, compute: Callable[[K], V], limit: int = 200_000):
        self._compute, self._limit = compute, limit
        self._memo: dict[K, V] = {}

    def all(self, pieces: list[K]) -> list[V]:
        """The result of every piece, in order (hits are found in C, misses computed once)."""
        found = list(map(self._memo.get, pieces))
        if None in found:
            found = [v if v is not None else self.get(p) for p, v in zip(pieces, found)]
        return found

    def flat(self, pieces: list[K]) -> list:
        """The results (sequences) of every piece, concatenated."""
        return list(chain.from_iterable(self.all(pieces)))

    def get(self, piece: K) -> V:
        value = self._memo.get(piece)
        if value is None:
            if len(self._memo) >= self._limit:
                self._memo.clear()
            value = self._memo[piece] = self._compute(piece)
        return value

    def clear(self) -> None:
        """Forget every piece (the next text is computed as if seen first: ``make bench``'s fresh)."""
        self._memo.clear()

    def __len__(self) -> int:
        return len(self._memo)

    def __iter__(self) -> Iterable[K]:
        return iter(self._memo)
