"""``python -m harness serve --vocab PATH``: the harness tokenizer as a JSON-lines port.

The protocol and its one server loop are :mod:`harness.protocol.server`; this module
only loads the vocab file. Pinned vocab names (``--vocab qwen2``) are resolved to
paths by the command line (``python -m harness serve``, ``llama-conformance serve``).

>>> TokenizerBackend.__name__
'TokenizerBackend'
"""

from __future__ import annotations

import argparse
import sys

from harness.errors import HarnessError
from harness.protocol.server import serve
from harness.tokenizer.facade import Tokenizer


class TokenizerBackend:
    """A :class:`Tokenizer` as a protocol backend: its calls, plus ``info``."""

    def __init__(self, tok: Tokenizer):
        self.tok = tok
        self.encode, self.decode, self.token_to_piece = tok.encode, tok.decode, tok.token_to_piece
        self.n_vocab = tok.n_vocab

    def info(self) -> dict:
        return {"vocab_type": self.tok.vocab.vocab_type, "pre_type": self.tok.vocab.pre_type}

    def chat(self, template, messages, **_options):
        """The ``chat`` op: not yet. The harness's own chat renderer (issue 32) is not
        built, so every request is answered ``unsupported``, never a guess.

        >>> TokenizerBackend.chat(None, None, [])
        Traceback (most recent call last):
        ...
        NotImplementedError: chat (the harness's own renderer is not built yet)
        """
        raise NotImplementedError("chat (the harness's own renderer is not built yet)")


def main(argv: list[str] | None = None) -> int:
    """Serve one ``.gguf`` file on stdin/stdout; returns the exit status (2: it cannot load)."""
    ap = argparse.ArgumentParser(prog="python -m harness serve",
                                 description="serve the harness tokenizer over the JSON-lines port protocol")
    ap.add_argument("--vocab", required=True, help="a .gguf file (a pinned name, e.g. qwen2, on the command line)")
    args = ap.parse_args(argv)
    try:
        tok = Tokenizer.from_gguf(args.vocab)
    except (HarnessError, OSError) as e:
        print(f"serve: cannot load vocab {args.vocab!r}: {e}", file=sys.stderr)
        return 2
    serve(TokenizerBackend(tok), sys.stdin.buffer, sys.stdout.buffer)
    return 0
