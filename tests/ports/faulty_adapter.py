"""A Python adapter port (``PORT=py:tests.ports.faulty_adapter:load``) with two faults:

- it reads U+00A0 as a space when encoding (a whitespace-set bug);
- it cannot render special tokens on decode: ``unparse_special=True`` raises
  NotImplementedError, which the harness counts as unsupported.

The harness tokenizer (exact) does the rest.
"""

from __future__ import annotations

from harness.tokenizer import Tokenizer


class NbspAdapter:
    def __init__(self, tok: Tokenizer):
        self.tok = tok

    def encode(self, text, *, add_special=False, parse_special=False):
        return self.tok.encode(text.replace("\xa0", " "), add_special=add_special, parse_special=parse_special)

    def decode(self, ids, *, remove_special=False, unparse_special=False):
        if unparse_special:
            raise NotImplementedError("this adapter cannot render special tokens")
        return self.tok.decode(ids, remove_special=remove_special, unparse_special=False)

    def token_to_piece(self, id, *, special=False):
        return self.tok.token_to_piece(id, special=special)

    @property
    def n_vocab(self):
        return self.tok.n_vocab


def load(vocab_path: str) -> NbspAdapter:
    return NbspAdapter(Tokenizer.from_gguf(vocab_path))
