"""``python -m harness serve --vocab VOCAB``: the JSON-lines port server.

The protocol every out-of-process port implements: one JSON request per line
on stdin, one JSON response per line on stdout, in order, flushed after each.

    {"op":"encode","text":S,"add_special":B,"parse_special":B}   -> {"ids":[...]}
    {"op":"encode","text_hex":H, ...}                            -> {"ids":[...]}   (raw bytes)
    {"op":"decode","ids":[...],"remove_special":B,"unparse_special":B} -> {"bytes_hex":"..."}
    {"op":"piece","id":N,"special":B}                            -> {"bytes_hex":"..."}
    {"op":"info"}                                                -> {"n_vocab":N,"vocab_type":...,"pre_type":...,"batch":true}
    {"op":"batch","requests":[R, ...]}                           -> {"responses":[A, ...]}  (one answer each, in order)

A bad request (bad JSON, unknown op, wrong types, id out of range) gets
``{"error": "..."}`` and the server keeps serving. Boolean flags default to false.
Every line gets exactly one answer, so answers never shift against requests:
a blank line, a line that is not UTF-8, JSON nested too deep to parse and a
line longer than :data:`MAX_LINE` bytes each get ``{"error": ...}`` too. The
server reads bytes, never locale-decoded text.

>>> handle(None, '{"op": "nope"}')
{'error': "unknown op 'nope'; expected one of: batch, decode, encode, info, piece"}
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, BinaryIO, Callable, Iterator

from harness.errors import HarnessError
from harness.tokenizer import Tokenizer


# A request line longer than this is answered with an error and skipped without being kept:
# generated texts reach about 240 KB of JSON, so 64 MiB leaves room and still bounds memory.
MAX_LINE = 64 * 1024 * 1024


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
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:  # JSON allows "\ud800"; UTF-8 does not
            raise BadRequest(f"'text' holds a lone surrogate at index {e.start}; "
                             "send the raw bytes as 'text_hex' instead") from None
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
    return {"n_vocab": v.n_vocab, "vocab_type": v.vocab_type, "pre_type": v.pre_type, "batch": True}


OPS: dict[str, Callable[[Tokenizer, dict], dict]] = {
    "encode": _encode, "decode": _decode, "piece": _piece, "info": _info}


def handle(tok: Tokenizer | None, line: str | bytes) -> dict:
    """Answer one request line (str, or bytes that must be UTF-8); never raises.

    >>> handle(None, "not json")["error"].startswith("bad JSON")
    True
    >>> handle(None, b"\\xff")["error"]
    'request line is not UTF-8 (invalid start byte at byte 0); send JSON in UTF-8'
    >>> handle(None, "  ")["error"]
    'empty request line; send one JSON object per line'
    """
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as e:
            return {"error": f"request line is not UTF-8 ({e.reason} at byte {e.start}); "
                             "send JSON in UTF-8"}
    if not line.strip():
        return {"error": "empty request line; send one JSON object per line"}
    try:
        req = json.loads(line)
    except ValueError as e:
        return {"error": f"bad JSON: {e}"}
    except RecursionError:
        return {"error": "bad JSON: nested too deeply to parse; a request is a flat JSON object"}
    if isinstance(req, dict) and req.get("op") == "batch":
        return _batch(tok, req)
    return answer(tok, req)


def answer(tok: Tokenizer | None, req: Any) -> dict:
    """Answer one parsed request (not a batch); never raises.

    >>> answer(None, {"op": "nope"})["error"]
    "unknown op 'nope'; expected one of: batch, decode, encode, info, piece"
    """
    if not isinstance(req, dict):
        return {"error": "a request must be a JSON object with an 'op' field"}
    op = req.get("op")
    if not isinstance(op, str) or op not in OPS:
        return {"error": f"unknown op {op!r}; expected one of: {', '.join(sorted([*OPS, 'batch']))}"}
    try:
        return OPS[op](tok, req)
    except HarnessError as e:
        return {"error": _bounded(f"{type(e).__name__}: {e}")}
    except Exception as e:  # a bug in the port must not kill the session; say so plainly
        return {"error": _bounded(f"internal error {type(e).__name__}: {e}")}


def _batch(tok: Tokenizer | None, req: dict) -> dict:
    """``{"op":"batch","requests":[...]}`` -> ``{"responses":[...]}``, one answer per request
    in order (a batch inside a batch is answered with an error, not run).

    >>> _batch(None, {"op": "batch", "requests": [{"op": "x"}, {"op": "batch"}]})["responses"][1]
    {'error': 'a batch cannot hold a batch'}
    """
    requests = req.get("requests")
    if not isinstance(requests, list):
        return {"error": f"'requests' must be a list of request objects, got {type(requests).__name__}"}
    return {"responses": [{"error": "a batch cannot hold a batch"}
                          if isinstance(r, dict) and r.get("op") == "batch" else answer(tok, r)
                          for r in requests]}


def _bounded(message: str, limit: int = 2000) -> str:
    """An error message cut to ``limit`` characters: some quote the request back.

    >>> _bounded("x" * 10, limit=4)
    'xxxx... (10 characters)'
    """
    return message if len(message) <= limit else f"{message[:limit]}... ({len(message)} characters)"


def read_lines(stdin: BinaryIO, limit: int = MAX_LINE) -> Iterator[bytes | None]:
    """Each line of ``stdin`` without its newline, or None for a line longer
    than ``limit`` bytes (read and dropped in bounded pieces, never held whole).

    >>> import io
    >>> list(read_lines(io.BytesIO(b"ab\\n\\nxxxxxx\\nc"), limit=4))
    [b'ab', b'', None, b'c']
    """
    while True:
        line = stdin.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):  # drop the rest of the long line
                line = stdin.readline(1 << 20)
            yield None
            continue
        yield line.removesuffix(b"\n")


def serve(tok: Tokenizer, stdin: BinaryIO, stdout: BinaryIO, limit: int = MAX_LINE) -> None:
    """Answer every line of ``stdin`` (bytes) on ``stdout`` (bytes), one line each, flushed."""
    for line in read_lines(stdin, limit):
        if line is None:
            response = {"error": f"request line longer than {limit} bytes; not read"}
        else:
            response = handle(tok, line)
        stdout.write(json.dumps(response, ensure_ascii=True).encode("ascii") + b"\n")
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
    serve(tok, sys.stdin.buffer, sys.stdout.buffer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
