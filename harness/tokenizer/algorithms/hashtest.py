"""LLAMA_VOCAB_TYPE_TEST (``tokenizer.ggml.model = "test"``, from pin 0c1e570): llama.cpp's
test-only tokenizer. Each raw-text fragment is cut into 5-byte chunks (the last may be
shorter); a chunk's id is its polynomial hash ``h = h*31 + byte`` (uint64, wrapping) modulo
n_vocab. add_special adds nothing; a token's piece is its id in lowercase hex
(``format("%x", token)``), see :mod:`harness.tokenizer.facade`.

>>> from types import SimpleNamespace
>>> Session(SimpleNamespace(n_vocab=1000)).tokenize(b"abcdefg")
[395, 265]
"""

from __future__ import annotations

CHUNK = 5
_MASK = (1 << 64) - 1


class Session:
    """Tokenizes one fragment of a TEST vocab (src/llama-vocab.cpp, tokenize: LLAMA_VOCAB_TYPE_TEST)."""

    def __init__(self, vocab) -> None:
        self.n_vocab = vocab.n_vocab

    def tokenize(self, text: bytes) -> list[int]:
        out = []
        for pos in range(0, len(text), CHUNK):
            h = 0
            for b in text[pos:pos + CHUNK]:
                h = (h * 31 + b) & _MASK
            out.append(h % self.n_vocab)
        return out
