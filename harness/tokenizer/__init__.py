"""The harness tokenizer: a Python port of llama.cpp's tokenizer, read from GGUF metadata.

The pipeline, ground floor up (each module imports only those below it):

- ``gguf``: a bounds-checked, memory-mapped GGUF reader (``Keys`` names the keys), and a writer;
- ``unicode``: llama.cpp's Unicode 15.1 tables (``unicode-data.cpp``);
- ``pins``, ``pretypes``: what changed between pins, and the ``tokenizer.ggml.pre`` names;
- ``vocab``: everything ``llama_vocab::impl::load`` derives from a GGUF;
- ``pretokenize``: llama.cpp's pre-tokenizers, one entry per pre type;
- ``algorithms``: SPM, BPE, WPM, UGM, RWKV and PLaMo-2, each ``(vocab, piece) -> ids``;
- ``facade``: :class:`Tokenizer`, llama.cpp's ``llama_tokenize``/``llama_detokenize``/
  ``llama_token_to_piece``; ``serve``: it over the port protocol.

``from harness.tokenizer import Tokenizer`` is the public import. The names of the
facade load on first use, so ``harness.tokenizer.gguf`` alone stays light.

>>> from harness.tokenizer import Tokenizer, clean_spaces
>>> clean_spaces(b"a ,b")
b'a,b'
"""

from __future__ import annotations

_FACADE = ("Tokenizer", "TokenIdError", "IncrementalDecoder", "clean_spaces", "decode_bpe_text",
           "LLAMA_TOKEN_NULL")
__all__ = list(_FACADE)


def __getattr__(name: str):
    if name in _FACADE:
        from harness.tokenizer import facade
        return getattr(facade, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
