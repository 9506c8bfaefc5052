"""llama-cpp-python 0.3.36 as a port: ``./serve --vocab V (runs this file)``.

It bundles llama.cpp 0c1e570, the very commit of the default pin, so every
divergence is a bug of the binding (or of this harness). The calls are the
binding's own public API, as a user calls it:

==========================  ==================================================
protocol request            llama-cpp-python call
==========================  ==================================================
encode(add_special,         ``Llama.tokenize(text.encode(), add_bos=add_special,
parse_special)              special=parse_special)`` -> llama_tokenize; exact.
decode(remove_special,      ``Llama.detokenize(ids, special=unparse_special)``.
unparse_special)            It concatenates llama_token_to_piece (32-byte
                            buffer) and drops a leading space after BOS itself,
                            instead of calling llama_detokenize. It has no
                            remove_special: remove_special=true is unsupported.
piece(special)              ``Llama.detokenize([id], special=special)``: the
                            high-level Llama has no token_to_piece; one token
                            detokenized is its documented way to one token's bytes.
info                        ``Llama.n_vocab()``
==========================  ==================================================

>>> LLAMA_CPP_PYTHON_VERSION
'0.3.36'
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness.protocol.server import run_adapter

LLAMA_CPP_PYTHON_VERSION = "0.3.36"


class LlamaCppPythonBackend:
    """One vocab loaded with ``Llama(model_path, vocab_only=True)``."""

    def __init__(self, llama):
        self.llama = llama
        self.n_vocab = llama.n_vocab()

    @classmethod
    def load(cls, path: Path) -> "LlamaCppPythonBackend":
        from llama_cpp import Llama
        return cls(Llama(model_path=str(path), vocab_only=True, verbose=False))

    def encode(self, text: str, *, add_special: bool = False, parse_special: bool = False) -> list[int]:
        return self.llama.tokenize(text.encode("utf-8"), add_bos=add_special, special=parse_special)

    def decode(self, ids: list[int], *, remove_special: bool = False, unparse_special: bool = False) -> bytes:
        if remove_special:
            raise NotImplementedError("Llama.detokenize has no remove_special")
        return self.llama.detokenize(ids, special=unparse_special)

    def token_to_piece(self, id: int, *, special: bool = False) -> bytes:
        return self.llama.detokenize([id], special=special)


def _check_library() -> None:
    import llama_cpp
    if llama_cpp.__version__ != LLAMA_CPP_PYTHON_VERSION:
        # A different version wraps a different llama.cpp commit: its results would mean nothing here.
        raise ImportError(f"llama-cpp-python {llama_cpp.__version__} is installed, the pin needs "
                          f"{LLAMA_CPP_PYTHON_VERSION} (the llama.cpp it bundles is the default pin 0c1e570)")


def main(argv: list[str] | None = None) -> int:
    return run_adapter(argv, name="llama-cpp-python", check_library=_check_library,
               load=LlamaCppPythonBackend.load)


if __name__ == "__main__":
    sys.exit(main())
