"""The one shrinker: greedy minimisation of a text or an id list while a predicate holds.

Every tool that minimises an input calls it: the conformance checks (through the
Hunt), pin-diff and the scoreboard. Deleting chunks (halving sizes down to one
element), then simplifying elements, bounded by predicate calls and wall time.

>>> shrink_text("xxabcxx", lambda s: "b" in s)
'b'
"""

from __future__ import annotations

import time
from typing import Any, Callable

#: Predicate calls one shrink may spend, and its wall-time bound in seconds.
SHRINK_CALLS, SHRINK_SECONDS = 600, 20.0


def shrink_sequence(x, keeps: Callable[[Any], bool], *, simplify: tuple = (),
                    calls: int = SHRINK_CALLS, seconds: float = SHRINK_SECONDS):
    """Greedy minimisation of a str or tuple: delete chunks (halving sizes down to
    one element) while ``keeps`` holds, then try replacing each element by each of
    ``simplify`` in order. Bounded by ``calls`` predicate calls and ``seconds``.

    >>> shrink_sequence("xxabcxx", lambda s: "b" in s)
    'b'
    >>> shrink_sequence("q7", lambda s: len(s) == 2 and s[1] == "7", simplify=("a",))
    'a7'
    """
    deadline = time.perf_counter() + seconds
    budget = [calls]

    def ok(c) -> bool:
        if budget[0] <= 0 or time.perf_counter() > deadline:
            return False
        budget[0] -= 1
        return keeps(c)

    size = max(1, len(x) // 2)
    while size >= 1 and budget[0] > 0:
        i, removed = 0, False
        while i < len(x) and budget[0] > 0:
            cand = x[:i] + x[i + size:]
            if cand != x and ok(cand):
                x, removed = cand, True
            else:
                i += size
        if not removed or size > 1:
            size //= 2
    for i in range(len(x)):
        for s in simplify:
            if x[i] == s:
                break
            cand = x[:i] + (s if isinstance(x, str) else (s,)) + x[i + 1:]
            if ok(cand):
                x = cand
                break
    return x


def shrink_text(text: str, keeps: Callable[[str], bool], **bounds) -> str:
    """:func:`shrink_sequence` for texts: characters simplify toward 'a', ' ', '0'
    (``bounds``: ``calls``, ``seconds``)."""
    return shrink_sequence(text, keeps, simplify=("a", " ", "0"), **bounds)


def shrink_ids(ids: tuple, keeps: Callable[[tuple], bool]) -> tuple:
    """:func:`shrink_sequence` for id lists (deletions only: an id is not 'simpler')."""
    return tuple(shrink_sequence(tuple(ids), keeps))
