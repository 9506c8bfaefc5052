"""toyport: the smallest port worth checking, to show the wiring of the pytest plugin.

Its tokenizer is a stand-in: it loads the vocab's GGUF with the harness's own
pure-Python port (``harness.tokenizer.Tokenizer``). A real port puts its own code
behind the same two calls: ``tokenize(vocab, text, add_special, parse_special)``
with ``vocab`` the ``.gguf`` path, e.g. ``tokenize("vocabs/ggml-vocab-qwen2.gguf", "Hello world",
False, False) == [9707, 1879]``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=8)
def load(vocab: str | Path):
    """The tokenizer for one ``.gguf`` file, loaded once."""
    from harness.tokenizer import Tokenizer

    return Tokenizer.from_gguf(vocab)


def tokenize(vocab: str | Path, text: str, add_special: bool = True, parse_special: bool = False) -> list[int]:
    """Token ids of ``text`` under the vocab at ``vocab`` (llama.cpp's flags)."""
    return load(vocab).encode(text, add_special=add_special, parse_special=parse_special)
