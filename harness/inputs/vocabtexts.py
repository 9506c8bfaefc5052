"""The texts a vocab offers the generators: its token pieces and its special-token texts.

>>> class Ref:
...     n_vocab = 3
...     def token_to_piece(self, i, special=False): return [b"", b"\\xff", b"ab"][i]
>>> LazyPieces(Ref())[0]
'ab'
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.inputs.strategies import VocabTexts

# GGUF tokenizer.ggml.token_type codes that llama.cpp caches as special texts
# (UNKNOWN=2, CONTROL=3, USER_DEFINED=4); used only to generate inputs.
_SPECIAL_TYPES = (2, 3, 4)


class LazyPieces(Sequence):
    """Token texts by index, fetched from the reference on first use.

    Index ``i`` is token ``i``'s piece (special=True) if it is non-empty valid
    UTF-8, else the next such token's (so every index gives text). Lazy because
    rendering all 256k pieces of a vocab up front costs seconds per worker.
    """

    def __init__(self, reference):
        self.reference, self.n = reference, reference.n_vocab
        self._cache: dict[int, str] = {}

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> str:
        if i not in self._cache:
            self._cache[i] = self._first_text(i)
        return self._cache[i]

    def _first_text(self, i: int) -> str:
        for k in range(i, i + 256):
            try:
                text = self.reference.token_to_piece(k % self.n, special=True).decode("utf-8")
            except UnicodeDecodeError:
                continue
            if text:
                return text
        return ""


def vocab_texts(path: str | Path, reference) -> VocabTexts:
    """Token texts (lazy reference pieces) and special token texts of one vocab."""
    from harness.tokenizer.gguf import GGUFReader
    from harness.tokenizer.pretypes import EOG_TEXTS
    r = GGUFReader(path)
    tokens = r.get("tokenizer.ggml.tokens") or []
    types = r.get("tokenizer.ggml.token_type")
    specials = sorted({t.decode("utf-8", "replace") for i, t in enumerate(tokens)
                       if (types is not None and int(types[i]) in _SPECIAL_TYPES) or t in EOG_TEXTS})
    from harness.inputs.vocabgen import vocab_adversarial
    return VocabTexts(LazyPieces(reference), tuple(specials), vocab_adversarial(path, reference))


