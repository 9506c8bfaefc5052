"""Python adapter ports with deliberate faults; the harness tokenizer (exact) does the rest.

``PORT=py:tests.ports.faulty_adapter:load``, two faults:

- it reads U+00A0 as a space when encoding (a whitespace-set bug);
- it cannot render special tokens on decode: ``unparse_special=True`` raises
  NotImplementedError, which the harness counts as unsupported.

``PORT=py:tests.ports.faulty_adapter:str_decode``: ``decode`` returns ``str`` after 50 calls.
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


class StrDecodeAdapter(NbspAdapter):
    """Exact, except that from its 51st call on, ``decode`` returns ``str`` (the bytes decoded
    as UTF-8 with replacement), as a port written against a str API might: a port error naming
    ``decode`` and ``str``, not a traceback from inside the engine."""

    GOOD_CALLS = 50

    def __init__(self, tok: Tokenizer):
        super().__init__(tok)
        self.calls = 0

    def encode(self, text, *, add_special=False, parse_special=False):
        return self.tok.encode(text, add_special=add_special, parse_special=parse_special)

    def decode(self, ids, *, remove_special=False, unparse_special=False):
        self.calls += 1
        out = self.tok.decode(ids, remove_special=remove_special, unparse_special=unparse_special)
        return out if self.calls <= self.GOOD_CALLS else out.decode("utf-8", "replace")


def str_decode(vocab_path: str) -> StrDecodeAdapter:
    """``PORT=py:tests.ports.faulty_adapter:str_decode``."""
    return StrDecodeAdapter(Tokenizer.from_gguf(vocab_path))
