"""A JSON-lines port that is right but slow: quadratic on a run of one repeated letter.

The ids are the harness tokenizer's, so every case agrees with llama.cpp; only the time
is wrong. Before encoding, for every letter that repeats the one before it, the port
rescans all the text before it (:data:`RESCANS` times over: a deliberate n² term, large
enough to dominate its linear work from the smallest size the suite times). On a run of n
equal letters that is about RESCANS·n²/2 character steps; a word of different letters,
whitespace or special texts cost it nothing more. The harness's own tests run it
(tests/test_scaling.py) and assert the exponent the encode check reports for ``'a' * n``:

    python tests/ports/quadratic.py --vocab V
"""

from __future__ import annotations

import argparse
import json
import sys

from harness.tokenizer import Tokenizer

RESCANS = 32


def rescan(text: str) -> int:
    """The deliberate n² work: for each letter repeating the one before it, count it again in
    all the text before it (RESCANS copies); returns the last count.

    >>> rescan("soooo"), rescan("a b")
    (96, 0)
    """
    last = 0
    for i in range(1, len(text)):
        ch = text[i]
        if ch == text[i - 1] and ch.isalpha():
            last = (text[:i] * RESCANS).count(ch)
    return last


class Port:
    def __init__(self, vocab: str):
        self.tok = Tokenizer.from_gguf(vocab)

    def answer(self, req: dict) -> dict:
        op = req.get("op")
        if op == "info":
            return {"n_vocab": self.tok.n_vocab, "unsupported": [], "batch": True}
        if op == "batch":
            return {"responses": [self.answer(r) for r in req["requests"]]}
        if op == "encode":
            rescan(req["text"])
            return {"ids": self.tok.encode(req["text"], add_special=req["add_special"],
                                           parse_special=req["parse_special"])}
        if op == "decode":
            return {"bytes_hex": self.tok.decode(req["ids"], remove_special=req["remove_special"],
                                                 unparse_special=req["unparse_special"]).hex()}
        if op == "piece":
            return {"bytes_hex": self.tok.token_to_piece(req["id"], special=req["special"]).hex()}
        return {"error": f"unknown op {op!r}"}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--vocab", required=True)
    port = Port(p.parse_args().vocab)
    for line in sys.stdin.buffer:
        print(json.dumps(port.answer(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
