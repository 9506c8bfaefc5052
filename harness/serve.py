"""``python -m harness serve --vocab VOCAB``: the JSON-lines port server.

The protocol every out-of-process port implements: one JSON request per line
on stdin, one JSON response per line on stdout, in order, flushed after each.

    {"op":"encode","text":S,"add_special":B,"parse_special":B}   -> {"ids":[...]}
    {"op":"encode","text_hex":H, ...}                            -> {"ids":[...]}   (raw bytes)
    {"op":"decode","ids":[...],"remove_special":B,"unparse_special":B} -> {"bytes_hex":"..."}
    {"op":"piece","id":N,"special":B}                            -> {"bytes_hex":"..."}
    {"op":"info"}                                                -> {"n_vocab":N,"vocab_type":...,"pre_type":...}

A bad request (bad JSON, unknown op, wrong types, id out of range) gets
``{"error": "..."}`` and the server keeps serving. Boolean flags default to false.

>>> handle(None, '{"op": "nope"}')
{'error': "unknown op 'nope'; expected one of: decode, encode, info, piece"}
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable, TextIO

from harness.errors import HarnessError
from harness.tokenizer import Tokenizer


class BadRequest(HarnessError):
    """The request line is not a valid protocol message."""


def _flag(req: dict, name: str) -> bool:
    v = req.get(name, False)
    if not isinstance(v, bool):
        raise BadRequest(f"{name!r} must be true or false, got {v!r}")
    return v


def _int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise BadRequest(f"{what} must be an integer, got {v!r}")
    return v


def _encode(tok: Tokenizer, req: dict) -> dict:
    if ("text" in req) == ("text_hex" in req):
        raise BadRequest("encode needs exactly one of 'text' (a string) or 'text_hex' (hex bytes)")
    if "text" in req:
        if not isinstance(req["text"], str):
            raise BadRequest(f"'text' must be a string, got {type(req['text']).__name__}")
        text: str | bytes = req["text"]
    else:
        try:
            text = bytes.fromhex(req["text_hex"])
        except (TypeError, ValueError):
            raise BadRequest(f"'text_hex' must be a hex string, got {req['text_hex']!r}") from None
    ids = tok.encode(text, add_special=_flag(req, "add_special"), parse_special=_flag(req, "parse_special"))
    return {"ids": ids}


def _decode(tok: Tokenizer, req: dict) -> dict:
    ids = req.get("ids")
    if not isinstance(ids, list):
        raise BadRequest(f"'ids' must be a list of integers, got {ids!r}")
    ids = [_int(i, "each id") for i in ids]
    out = tok.decode(ids, remove_special=_flag(req, "remove_special"),
                     unparse_special=_flag(req, "unparse_special"))
    return {"bytes_hex": out.hex()}


def _piece(tok: Tokenizer, req: dict) -> dict:
    tid = _int(req.get("id"), "'id'")
    return {"bytes_hex": tok.token_to_piece(tid, special=_flag(req, "special")).hex()}


def _info(tok: Tokenizer, req: dict) -> dict:
    v = tok.vocab
    return {"n_vocab": v.n_vocab, "vocab_type": v.vocab_type, "pre_type": v.pre_type}


OPS: dict[str, Callable[[Tokenizer, dict], dict]] = {
    "encode": _encode, "decode": _decode, "piece": _piece, "info": _info}


def handle(tok: Tokenizer | None, line: str) -> dict:
    """Answer one request line; never raises for a bad request.

    >>> handle(None, "not json")["error"].startswith("bad JSON")
    True
    """
    try:
        req = json.loads(line)
    except ValueError as e:
        return {"error": f"bad JSON: {e}"}
    if not isinstance(req, dict):
        return {"error": "a request must be a JSON object with an 'op' field"}
    op = req.get("op")
    if not isinstance(op, str) or op not in OPS:
        return {"error": f"unknown op {op!r}; expected one of: {', '.join(sorted(OPS))}"}
    try:
        return OPS[op](tok, req)
    except HarnessError as e:
        return {"error": f"{type(e).__name__}: {e}"}
    except Exception as e:  # a bug in the port must not kill the session; say so plainly
        return {"error": f"internal error {type(e).__name__}: {e}"}


def serve(tok: Tokenizer, stdin: TextIO, stdout: TextIO) -> None:
    """Answer every line of ``stdin`` on ``stdout``, one line each, flushed."""
    for line in stdin:
        if not line.strip():
            continue
        stdout.write(json.dumps(handle(tok, line), ensure_ascii=True) + "\n")
        stdout.flush()


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m harness serve``; returns the exit status."""
    ap = argparse.ArgumentParser(prog="python -m harness serve", description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", required=True,
                    help="a pinned vocab name (e.g. qwen2) or a path to a .gguf file")
    args = ap.parse_args(argv)
    try:
        from reference.vocabs import vocab_path
        tok = Tokenizer.from_gguf(vocab_path(args.vocab))
    except HarnessError as e:
        print(f"serve: cannot load vocab {args.vocab!r}: {e}", file=sys.stderr)
        return 2
    # Our own stdout must carry only protocol lines: bytes travel as hex, so ASCII suffices.
    serve(tok, sys.stdin, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
