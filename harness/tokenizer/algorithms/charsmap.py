"""UGM's ``precompiled_charsmap``: the double-array trie of normalization replacements.

The blob is what llama.cpp's ``naive_trie``/``xcda_array_view`` read (llama-vocab.cpp,
``llm_tokenizer_ugm``): a little-endian uint32 size, the double array of that many bytes,
then the NUL-separated replacement strings. :class:`Charsmap` answers the longest match at
an offset, as ``normalize_prefix`` asks it; malformed blobs raise :class:`VocabError`
where llama.cpp would throw.

>>> Charsmap(b"").match(b"a", 0) is None
True
"""

from __future__ import annotations

import struct

import numpy as np

from harness.errors import VocabError

REPLACEMENT = b"\xef\xbf\xbd"


class Charsmap:
    """The XCDA (XOR-compressed compact double array) of ``precompiled_charsmap``.

    Layout (V:888-906): u32 LE ``blob_size``, then ``blob_size`` bytes of u32 LE
    nodes, then NUL-terminated replacement strings. Node bits: BASE 10-30
    (shifted left by 8 when bit 9 is set), LEAF bit 8, LCHECK 0-7 with bit 31
    (value nodes) keeping LCHECK from matching any byte.

    Every read is bounds-checked: where llama.cpp throws (index past the
    array, a replacement offset past the end, an unterminated string) this
    raises VocabError at the same moment, i.e. during tokenize.

    >>> Charsmap(b"").match(b"x", 0) is None
    True
    """

    def __init__(self, blob: bytes) -> None:
        self.nodes: list[int] = []
        self.replacements = b""
        if not blob:
            return
        if len(blob) < 4:
            raise VocabError(f"precompiled_charsmap is {len(blob)} bytes, too small for its "
                             "u32 XCDA size header; llama.cpp refuses to load it. Re-export "
                             "the vocab with the tokenizer's real charsmap.")
        (size,) = struct.unpack_from("<I", blob, 0)
        if size + 4 >= len(blob):
            raise VocabError(f"precompiled_charsmap: XCDA blob size {size} + 4 is not below the "
                             f"charsmap length {len(blob)}; llama.cpp refuses to load it "
                             "('Index out of array bounds in precompiled charsmap!').")
        self.nodes = np.frombuffer(blob, dtype="<u4", count=size // 4, offset=4).tolist()
        self.replacements = blob[4 + size:]

    def may_start(self, c: int) -> bool:
        """False only when the root surely has no child for byte ``c`` (no key starts with it).

        >>> Charsmap(b"").may_start(0x61)
        False
        """
        if not self.nodes:
            return False
        root = self.nodes[0]
        index = ((root >> 10) << ((root & 0x200) >> 6)) ^ c
        # past the end: llama.cpp would throw there, so leave it to match() to raise
        return index >= len(self.nodes) or self.nodes[index] & 0x800000FF == c

    def byte_inside_keys(self, c: int, max_depth: int = 512) -> bool:
        """True if some walk from the root crosses byte ``c`` after its first step (or
        might: an out-of-bounds child, or a trie deeper than ``max_depth``).

        One numpy step per trie level over every node of that level.

        >>> Charsmap(b"").byte_inside_keys(0x20)
        False
        """
        if not self.nodes:
            return False
        nodes = np.asarray(self.nodes, dtype=np.int64)
        base = (nodes >> 10) << ((nodes & 0x200) >> 6)
        cs = np.arange(1, 256, dtype=np.int64)  # a NUL ends every walk
        frontier = np.zeros(1, dtype=np.int64)
        for depth in range(max_depth):
            child = (frontier ^ base[frontier])[:, None] ^ cs[None, :]
            inside = child < len(nodes)
            ok = inside & ((nodes[np.where(inside, child, 0)] & 0x800000FF) == cs[None, :])
            if depth > 0 and (ok[:, c - 1] | ~inside[:, c - 1]).any():
                return True
            frontier = np.unique(child[ok])
            if frontier.size == 0:
                return False
        return True

    def children(self, prefix: bytes) -> set[int]:
        """The bytes that continue ``prefix`` in the trie (walks that do not end there).

        >>> Charsmap(b"").children(b"a")
        set()
        """
        nodes = self.nodes
        if not nodes:
            return set()
        root = nodes[0]
        index = (root >> 10) << ((root & 0x200) >> 6)
        for c in prefix:
            index ^= c
            if index >= len(nodes) or nodes[index] & 0x800000FF != c:
                return set()
            node = nodes[index]
            index ^= (node >> 10) << ((node & 0x200) >> 6)
        return {c for c in range(1, 256)
                if (index ^ c) >= len(nodes) or nodes[index ^ c] & 0x800000FF == c}

    def _past_end(self, index: int) -> VocabError:
        return VocabError(f"precompiled_charsmap: XCDA node index {index} is past the "
                          f"{len(self.nodes)}-entry array; llama.cpp throws 'Index out of "
                          "array bounds in XCDA array!' here. The charsmap is corrupt.")

    def match(self, text: bytes, offset: int) -> tuple[int, bytes] | None:
        """(bytes consumed, replacement) for the longest key at ``text[offset:]``, or None.

        A NUL byte in the input ends the walk (llama.cpp's keys are C strings).
        Indices are never negative (XOR of non-negatives), so an IndexError can
        only mean "past the end", which becomes the VocabError llama.cpp throws.
        """
        nodes = self.nodes
        if not nodes:
            return None
        longest, value = 0, 0
        root = nodes[0]
        index = (root >> 10) << ((root & 0x200) >> 6)  # BASE of the root
        for pos in range(offset, len(text)):
            c = text[pos]
            if c == 0:
                break
            index ^= c
            try:
                node = nodes[index]
            except IndexError:
                raise self._past_end(index) from None
            if node & 0x800000FF != c:  # LCHECK (bit 31 kept so value nodes never match)
                break
            index ^= (node >> 10) << ((node & 0x200) >> 6)  # BASE
            if node & 0x100:  # LEAF: BASE points at the node holding the replacement offset
                longest = pos - offset + 1
                try:
                    value = nodes[index] & 0x7FFFFFFF
                except IndexError:
                    raise self._past_end(index) from None
        if longest == 0:
            return None
        return longest, self._replacement(value)

    def _replacement(self, start: int) -> bytes:
        reps = self.replacements
        if start >= len(reps):
            raise VocabError(f"precompiled_charsmap: replacement offset {start} is past the "
                             f"{len(reps)} replacement bytes; llama.cpp throws here.")
        end = reps.find(b"\x00", start)
        if end < 0:
            raise VocabError(f"precompiled_charsmap: replacement at offset {start} has no NUL "
                             "terminator; llama.cpp throws 'Unterminated string'.")
        return reps[start:end]


def utf8_sequence_len(text: bytes, offset: int) -> int:
    """Length of the UTF-8 sequence ``unicode_cpt_from_utf8`` accepts at ``offset``, or 0.

    Only lead/continuation bit patterns are checked (overlong, surrogates and
    F0-F7 leads above U+10FFFF pass), exactly as llama.cpp does.

    >>> utf8_sequence_len(b"\\xc3\\xa9", 0), utf8_sequence_len(b"\\xc3x", 0), utf8_sequence_len(b"\\xf8", 0)
    (2, 0, 0)
    """
    lead = text[offset]
    if lead < 0x80:
        return 1
    if lead < 0xC0:
        return 0
    n = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4 if lead < 0xF8 else 0
    if n == 0 or offset + n > len(text):
        return 0
    for k in range(1, n):
        if text[offset + k] & 0xC0 != 0x80:
            return 0
    return n
