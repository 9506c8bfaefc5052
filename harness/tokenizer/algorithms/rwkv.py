"""RWKV session: ``llm_tokenizer_rwkv[_session]`` (V:1242-1348).

Token texts are stored escaped in the GGUF; llama.cpp unescapes each one
(``llama_unescape_rwkv_token``) into a byte trie, later ids overwriting
earlier ones on equal bytes. Tokenizing is greedy longest match over the raw
fragment bytes; a byte that starts no token emits ``unk`` (NULL = -1 unless
``tokenizer.ggml.unknown_token_id`` is set) and advances one byte.

>>> from types import SimpleNamespace
>>> v = SimpleNamespace(tokens=(b"a", b"ab", b"\\\\n", b"\\\\x41"), unk=None)
>>> Session(v).tokenize(b"aab\\nAz")
[0, 1, 2, 3, -1]
"""

from __future__ import annotations

from harness.tokenizer.algorithms._trie import VALUE, ByteTrie
from harness.errors import VocabError

LLAMA_TOKEN_NULL = -1


def unescape(escaped: bytes) -> bytes:
    """``llama_unescape_rwkv_token``: ``\\t \\n \\r``, ``\\xHH``, ``\\c`` -> c.

    Hex digits are read as llama.cpp reads them: ``c >= 'a' ? c-'a'+10 : c-'0'``
    in uint8 arithmetic, so uppercase or non-hex digits give garbage bytes, a
    trailing backslash or an unfinished ``\\x`` is dropped.

    >>> unescape(b"a\\\\tb\\\\x4a\\\\\\\\\\\\q"), unescape(b"\\\\xA1"), unescape(b"x\\\\")
    (b'a\\tbJ\\\\q', b'\\x11', b'x')
    """
    out = bytearray()
    escaping = False
    hex_left = 0
    acc = 0
    for c in escaped:
        if hex_left:
            value = (c - 0x61 + 10) if c >= 0x61 else (c - 0x30)
            acc = ((acc << 4) + value) & 0xFF
            hex_left -= 1
            if hex_left == 0:
                out.append(acc)
                acc = 0
        elif escaping:
            if c == 0x74:    # t
                out.append(0x09)
            elif c == 0x6E:  # n
                out.append(0x0A)
            elif c == 0x72:  # r
                out.append(0x0D)
            elif c == 0x78:  # x
                hex_left = 2
            else:
                out.append(c)
            escaping = False
        elif c == 0x5C:      # backslash
            escaping = True
        else:
            out.append(c)
    return bytes(out)


class Session:
    """Tokenizes one RWKV fragment. Build once per vocab (the trie)."""

    def __init__(self, vocab) -> None:
        self._unk = LLAMA_TOKEN_NULL if vocab.unk is None else vocab.unk
        self._trie = ByteTrie()
        for tid, text in enumerate(vocab.tokens):
            self._trie.insert(unescape(text), tid)

    def tokenize(self, text: bytes) -> list[int]:
        """Ids for one raw fragment.

        >>> from types import SimpleNamespace
        >>> Session(SimpleNamespace(tokens=(b"ab", b"b"), unk=7)).tokenize(b"xabb")
        [7, 0, 1]
        """
        out: list[int] = []
        root = self._trie.root
        pos, n = 0, len(text)
        while pos < n:
            node = root.get(text[pos])
            if node is None:
                out.append(self._unk)
                pos += 1
                continue
            tid, end = self._longest(node, text, pos)
            out.append(tid)
            pos = end
        return out

    @staticmethod
    def _longest(node: dict, text: bytes, pos: int) -> tuple[int, int]:
        """Deepest token on the path from ``node`` (which matched ``text[pos]``)."""
        tid, end = None, 0
        start = pos
        while node is not None:
            value = node.get(VALUE)
            if value is not None:
                tid, end = value, pos + 1
            if pos + 1 >= len(text):
                break
            pos += 1
            node = node.get(text[pos])
        if tid is None:
            # llama.cpp pushes id 0 and rewinds to position 0, looping forever.
            raise VocabError(
                f"RWKV: bytes {text[start:pos + 1]!r} at offset {start} start a token path but no "
                "token ends on it; llama.cpp's RWKV session never terminates on this input "
                "(it restarts at offset 0). Real RWKV vocabs hold all 256 single bytes.")
        return tid, end
