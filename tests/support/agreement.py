"""Shared helper for the per-algorithm tests: where a port and llama.cpp disagree.

>>> class Echo:
...     def encode(self, text, add_special, parse_special): return [len(text)]
>>> mismatches(Echo(), Echo(), ["ab"])
[]
"""

from __future__ import annotations

import itertools

FLAGS = list(itertools.product([False, True], repeat=2))


def mismatches(port, ref, texts, flags=FLAGS) -> list[tuple]:
    """(text, add_special, parse_special, ours, llama.cpp) for every disagreement."""
    bad = []
    for text in texts:
        for add, parse in flags:
            want = ref.encode(text, add_special=add, parse_special=parse)
            got = port.encode(text, add_special=add, parse_special=parse)
            if got != want:
                bad.append((text, add, parse, got, want))
    return bad


def report(bad, total) -> str:
    return f"{len(bad)}/{total} mismatches; first (text, add_special, parse_special, ours, llama.cpp): {bad[0]!r}"
