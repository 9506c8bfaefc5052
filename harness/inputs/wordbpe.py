"""A plain byte-level BPE over a vocab's merges, word by word: GPT-2's byte map and the
lowest-rank-first merge loop (ties to the leftmost pair, as llama.cpp does).

Used to tell which tokens a plain merge loop would not produce (vocabgen.py's
``unmerged_tokens``) and by the self-test ports in tests/ports/.

>>> bpe_word(["a", "b", "c"], {("a", "b"): 0, ("ab", "c"): 1})
['abc']
"""

from __future__ import annotations


def byte_encoder() -> dict[int, str]:
    """GPT-2's byte -> printable character map (bytes_to_unicode).

    >>> byte_encoder()[ord(" ")], byte_encoder()[ord("a")]
    ('Ġ', 'a')
    """
    keep = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + extra)
            extra += 1
    return table


def bpe_word(symbols: list[str], ranks: dict[tuple[str, str], int]) -> list[str]:
    """Merge adjacent symbols by lowest rank, ties to the leftmost pair.

    >>> bpe_word(list("aaa"), {("a", "a"): 0})
    ['aa', 'a']
    """
    symbols = list(symbols)
    while len(symbols) > 1:
        best, at = None, -1
        for i in range(len(symbols) - 1):
            r = ranks.get((symbols[i], symbols[i + 1]))
            if r is not None and (best is None or r < best):
                best, at = r, i
        if best is None:
            break
        symbols[at:at + 2] = [symbols[at] + symbols[at + 1]]
    return symbols
