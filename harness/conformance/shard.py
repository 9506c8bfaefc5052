"""``--shard I/N``: a deterministic part of the collected suite, for CI matrices.

The unit is the vocab group (the same group xdist's ``--dist loadgroup`` keeps on one
worker, :func:`harness.conformance.plugin.vocab_scope`): the distinct groups of the
collected tests, sorted by name, are dealt round-robin to N shards, so shard I holds
groups I, I+N, I+2N, ... of that sorted list. Every shard job of a matrix collects the
same tests (the same package, pin and ``VOCABS``), so the N parts are disjoint and
together hold every test once; ``llama-conformance merge`` joins their reports.

Round-robin over sorted names, not a hash: adding a vocab moves only the vocabs after it,
and a shard's vocabs can be read off the sorted list by hand.

>>> parse_shard("2/3")
(2, 3)
>>> shard_groups(["qwen2", "gpt-2", "bert-bge", "llama-spm", "qwen2"], 1, 2)
['bert-bge', 'llama-spm']
>>> shard_groups(["qwen2", "gpt-2", "bert-bge", "llama-spm"], 2, 2)
['gpt-2', 'qwen2']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from harness.errors import HarnessError


class ShardError(HarnessError, ValueError):
    """A malformed ``--shard`` value."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` -> ``(I, N)`` with 1 <= I <= N; ShardError naming the fix otherwise.

    >>> parse_shard("3/2")
    Traceback (most recent call last):
    ...
    harness.conformance.shard.ShardError: --shard 3/2: I must be between 1 and N (e.g. --shard 1/2 and --shard 2/2)
    """
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m:
        raise ShardError(f"--shard {text!r}: give I/N, e.g. --shard 1/4 (the first of four parts)")
    i, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= i <= n:
        raise ShardError(f"--shard {text}: I must be between 1 and N (e.g. --shard 1/2 and --shard 2/2)")
    return i, n


def shard_groups(groups: Iterable[str], index: int, count: int) -> list[str]:
    """The sorted distinct ``groups`` that belong to shard ``index`` of ``count``."""
    ordered = sorted(set(groups))
    return ordered[index - 1::count]


def select(items: list, shard: str, group_of: Callable[[str], str]) -> tuple[list, list]:
    """``(kept, deselected)`` items of shard ``shard`` ("I/N"), by the group of each node id."""
    index, count = parse_shard(shard)
    mine = set(shard_groups((group_of(i.nodeid) for i in items), index, count))
    kept = [i for i in items if group_of(i.nodeid) in mine]
    return kept, [i for i in items if group_of(i.nodeid) not in mine]
