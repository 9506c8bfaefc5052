"""A byte trie with llama.cpp's ``naive_trie`` semantics (V:28-69).

Nodes are plain dicts: children under their byte value (0-255) and the
stored id, if any, under ``VALUE`` (-1). Plain dicts keep the inner loop of
the RWKV greedy match to one ``dict.get`` per byte. (UGM uses hash sets of
prefixes instead: cheaper to build for 250k-token vocabs.)

>>> t = ByteTrie()
>>> t.insert(b"ab", 7)
>>> t.root[ord("a")][ord("b")][VALUE]
7
"""

from __future__ import annotations

VALUE = -1  # key of the stored id inside a node; never a byte value


class ByteTrie:
    """``naive_trie``: insert overwrites, so of two equal keys the last wins."""

    def __init__(self) -> None:
        self.root: dict = {}

    def insert(self, key: bytes, value: int) -> None:
        """Store ``value`` at ``key`` (an empty key marks the root itself).

        >>> t = ByteTrie(); t.insert(b"a", 1); t.insert(b"a", 2); t.root[97][VALUE]
        2
        """
        node = self.root
        for byte in key:
            child = node.get(byte)
            if child is None:
                child = node[byte] = {}
            node = child
        node[VALUE] = value
