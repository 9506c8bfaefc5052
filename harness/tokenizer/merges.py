"""BPE merge ranks: ``tokenizer.ggml.merges`` as llama.cpp's ``bpe_ranks``, built on first use.

>>> from harness.tokenizer.gguf.reader import StringArraySpans
>>> merge_ranks_from_spans(StringArraySpans(b"a b", np.array([0]), np.array([3])))
{(b'a', b'b'): 0}
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


class LazyMergeRanks(Mapping):
    """``bpe_ranks``, built from the merges' spans on first use.

    Loading then costs nothing for decoding, pieces and special tokens; the
    first merge pays once (about 0.1 s for 150k merges), as part of encoding.

    >>> from harness.tokenizer.gguf.reader import StringArraySpans
    >>> r = LazyMergeRanks(StringArraySpans(b"a bc d", np.array([0, 3]), np.array([3, 6])))
    >>> r.built, r[(b"c", b"d")], r.built
    (False, 1, True)
    """

    def __init__(self, spans):
        self._spans, self._dict = spans, None

    @property
    def built(self) -> bool:
        return self._dict is not None

    def dict(self) -> dict[tuple[bytes, bytes], int]:
        """The plain dict (built now if need be): what the merge loop indexes."""
        if self._dict is None:
            self._dict, self._spans = merge_ranks_from_spans(self._spans), None
        return self._dict

    def __getitem__(self, key):
        return self.dict()[key]

    def __iter__(self):
        return iter(self.dict())

    def __len__(self) -> int:
        return len(self.dict())  # duplicates only show once built

    def __repr__(self) -> str:
        return f"LazyMergeRanks({'built' if self.built else 'not built yet'})"


def merge_ranks_from_spans(spans) -> dict[tuple[bytes, bytes], int]:
    """Split every merge at ``find(' ', 1)`` and rank it by index; the first rank wins.

    llama.cpp: ``pos = word.find(' ', 1)``; no space -> the pair ("", "");
    ``bpe_ranks.emplace`` keeps the first rank of a duplicate pair. Vectorised:
    the first space at or after start+1 of each merge is found with one
    searchsorted over all space positions of the region.

    >>> from harness.tokenizer.gguf.reader import StringArraySpans
    >>> import numpy as np
    >>> r = merge_ranks_from_spans(StringArraySpans(b"a b  xyzc d", np.array([0, 3, 6, 10]),
    ...                                             np.array([3, 5, 9, 11])))
    >>> sorted(r.items(), key=lambda kv: kv[1])
    [((b'a', b'b'), 0), ((b' ', b''), 1), ((b'', b''), 2)]
    >>> merge_ranks_from_spans(StringArraySpans(b"a b\\0c", np.array([0]), np.array([5])))
    {(b'a', b'b'): 0}
    """
    region, starts, ends = spans.region, spans.starts, spans.ends
    n = len(starts)
    raw = np.frombuffer(region, np.uint8)
    nuls = np.flatnonzero(raw == 0)
    if len(nuls):  # llama.cpp copies each merge from c_str(): it ends at its first NUL
        at = np.searchsorted(nuls, starts)
        first = nuls[np.minimum(at, len(nuls) - 1)]
        ends = np.where((at < len(nuls)) & (first < ends), first, ends)
    spaces = np.flatnonzero(raw == 0x20)
    idx = np.searchsorted(spaces, starts + 1)
    sp = spaces[np.minimum(idx, max(len(spaces) - 1, 0))] if len(spaces) else np.zeros(n, np.int64)
    ok = (idx < len(spaces)) & (sp < ends)
    # no space: both halves empty (slice [s:s] and [e:e])
    cut = np.where(ok, sp, starts)
    rest = np.where(ok, sp + 1, ends)
    firsts = [region[i:j] for i, j in zip(starts.tolist(), cut.tolist())]
    seconds = [region[i:j] for i, j in zip(rest.tolist(), ends.tolist())]
    ranks = dict(zip(zip(firsts, seconds), range(n)))
    if len(ranks) != n:  # duplicates: insert in reverse so the first rank is written last
        ranks = dict(zip(zip(reversed(firsts), reversed(seconds)), range(n - 1, -1, -1)))
    return ranks
