"""Delta debugging over code points: the smallest text that still diverges.

The conformance engine shrinks Hypothesis examples; the scoreboard's corpus
sample (:mod:`.sample`) finds divergences in 4 KB chunks of fixed text and
shrinks them here, so every reported corpus divergence comes with a short
text a person can read. Zeller's ddmin, then a one-character-removal pass,
bounded by ``budget`` predicate calls (each call is one port request).

>>> ddmin("xxaxxbxx", lambda t: "a" in t and "b" in t)
'ab'
>>> ddmin("abc", lambda t: False)
Traceback (most recent call last):
...
ValueError: the predicate is false on the full text: nothing to shrink
"""

from __future__ import annotations

from typing import Callable


class _Budget:
    def __init__(self, predicate: Callable[[str], bool], budget: int):
        self.predicate, self.left, self.seen = predicate, budget, {}

    def __call__(self, text: str) -> bool:
        if text not in self.seen:
            if self.left <= 0:
                return False  # out of budget: keep what we have (it still diverges)
            self.left -= 1
            self.seen[text] = bool(self.predicate(text))
        return self.seen[text]


def _ddmin_pass(chars: list[str], test: _Budget) -> list[str]:
    n = 2
    while len(chars) >= 2:
        size = max(1, len(chars) // n)
        chunks = [chars[i:i + size] for i in range(0, len(chars), size)]
        reduced = False
        for i in range(len(chunks)):
            complement = [c for j, ch in enumerate(chunks) if j != i for c in ch]
            if complement and test("".join(complement)):
                chars, n, reduced = complement, max(n - 1, 2), True
                break
        if not reduced:
            if size == 1:
                break
            n = min(len(chars), n * 2)
    return chars


def ddmin(text: str, predicate: Callable[[str], bool], *, budget: int = 3000) -> str:
    """A 1-minimal (within budget) sub-sequence of ``text`` for which ``predicate`` holds.

    >>> ddmin("hello world", lambda t: t.count("l") >= 3)
    'lll'
    """
    test = _Budget(predicate, budget)
    if not test(text):
        raise ValueError("the predicate is false on the full text: nothing to shrink")
    chars = _ddmin_pass(list(text), test)
    i = 0
    while i < len(chars):  # final sweep: drop any single character that is not needed
        candidate = chars[:i] + chars[i + 1:]
        if candidate and test("".join(candidate)):
            chars = candidate
        else:
            i += 1
    return "".join(chars)
