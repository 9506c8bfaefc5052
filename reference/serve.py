"""``python -m reference serve --pin P --vocab V``: a pinned llama.cpp build as a JSON-lines port.

It speaks the protocol of ``python -m harness serve`` (README, "The port protocol"),
answering with libllama of pin ``P`` loaded in this process. Two libllama builds
in one process may clash, so another pin always runs in its own process: this is
what ``PORT=llama.cpp@<pin>`` starts, and what ``make pin-diff`` checks pins with.

A request that makes llama.cpp throw gets ``{"error": ...}``; one that makes it
abort ends the process, as it would end any program linking that libllama.

>>> import io, json
>>> out = io.StringIO()
>>> class Fake:
...     n_vocab = 5
...     def encode(self, text, add_special=False, parse_special=False): return [len(text)]
>>> serve(Fake(), io.BytesIO(b'{"op":"encode","text":"abc"}\\n\\n'), out)
>>> [json.loads(x) for x in out.getvalue().splitlines()][0]
{'ids': [3]}
"""

from __future__ import annotations

import json
import os
import sys
from types import SimpleNamespace
from typing import BinaryIO, TextIO


class PinnedLlama:
    """InProcessReference in the shape ``harness.tokenizer.serve.handle`` answers from (keyword flags, ``vocab``)."""

    def __init__(self, ref, pin: str):
        self.ref = ref
        self.vocab = SimpleNamespace(n_vocab=ref.n_vocab, vocab_type=f"llama.cpp@{pin}", pre_type=None)
        self.n_vocab = ref.n_vocab

    def encode(self, text, add_special=False, parse_special=False):
        return self.ref.encode(text, add_special, parse_special)

    def decode(self, ids, remove_special=False, unparse_special=False):
        return self.ref.decode(list(ids), remove_special, unparse_special)

    def token_to_piece(self, id, special=False):
        return self.ref.token_to_piece(id, special)


def serve(port, stdin: BinaryIO, stdout: TextIO) -> None:
    """One answer per line, a blank or undecodable line included; bytes in, ASCII JSON out."""
    from harness.tokenizer.serve import handle

    for raw in stdin:
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            answer = {"error": f"request line is not UTF-8: {e}"}
        else:
            answer = handle(port, line) if line.strip() else {"error": "empty request line"}
        stdout.write(json.dumps(answer, ensure_ascii=True) + "\n")
        stdout.flush()


def main(pin: str, vocab: str) -> int:
    """Select ``pin`` for this process, load its libllama and the vocab, then serve stdin."""
    from harness.errors import HarnessError

    from . import lock

    os.environ["PIN"] = lock.load(pin=pin).name  # before anything reads the selected pin
    try:
        from .inproc import InProcessReference
        from .vocabs import vocab_path

        port = PinnedLlama(InProcessReference.load(vocab_path(vocab)), os.environ["PIN"])
    except HarnessError as e:
        print(f"reference serve: cannot load vocab {vocab!r} at pin {pin}: {e}", file=sys.stderr)
        for line in sys.stdin.buffer:  # answer every request, so the client sees why
            print(json.dumps({"error": f"unsupported: {e}"}), flush=True)
        return 2
    serve(port, sys.stdin.buffer, sys.stdout)
    return 0
