"""The one server loop of the port protocol: every Python port server answers through it.

A *backend* is any object with llama.cpp's calls (keyword flags, bytes out)::

    encode(text, *, add_special=False, parse_special=False) -> list[int]   # text: str or bytes
    decode(ids, *, remove_special=False, unparse_special=False) -> bytes
    token_to_piece(id, *, special=False) -> bytes
    n_vocab: int

and, optionally, ``info() -> dict`` for more ``info`` fields (``vocab_type``,
``unsupported``, ``library``, ...), and ``chat(template, messages, *, tools,
add_generation_prompt, kwargs, builtin) -> ChatAnswer`` for the ``chat`` op
(:mod:`harness.protocol.chat`; a backend without it answers ``unsupported``). The harness tokenizer
(:mod:`harness.tokenizer.serve`), a pinned llama.cpp (``reference/serve.py``) and the
Python ports of the scoreboard (``ports/python/*/serve.py``) are served by :func:`serve`; a vocab a backend cannot
load is served by :func:`refuse` (every request answered ``unsupported``).

Every line gets exactly one answer, so answers never shift against requests: a blank
line, a line that is not UTF-8, JSON nested too deep to parse and a line longer than
:data:`MAX_LINE` bytes each get ``{"error": ...}`` too. Boolean flags default to false.
A backend exception on one request is that request's ``{"error"}``; the server keeps
serving.

>>> handle(None, '{"op": "nope"}')
{'error': "unknown op 'nope'; expected one of: batch, chat, decode, encode, info, piece"}
"""

from __future__ import annotations

import json
import numbers
import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any, BinaryIO, Callable, Iterator

from harness.errors import HarnessError
from harness.protocol.chat import ChatAnswer, chat_arguments

# A request line longer than this is answered with an error and skipped without being kept:
# generated texts reach about 240 KB of JSON, so 64 MiB leaves room and still bounds memory.
MAX_LINE = 64 * 1024 * 1024
#: The prefix of an answer that says the port cannot express a request (or load the vocab).
UNSUPPORTED = "unsupported: "
# Exit codes of a server that cannot serve at all (a vocab it cannot *load* is served as
# unsupported answers instead): usage error, library not installed.
EXIT_USAGE, EXIT_MISSING_LIBRARY = 2, 3


class BadRequest(HarnessError):
    """The request line is not a valid protocol message (the message says which field and how)."""


def _flag(req: dict, name: str) -> bool:
    v = req.get(name, False)
    if not isinstance(v, bool):
        raise BadRequest(f"{name!r} must be true or false, got {v!r}")
    return v


def _int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise BadRequest(f"{what} must be an integer, got {v!r}")
    return v


def _text(req: dict) -> str | bytes:
    if ("text" in req) == ("text_hex" in req):
        raise BadRequest("encode needs exactly one of 'text' (a string) or 'text_hex' (hex bytes)")
    if "text_hex" in req:
        try:
            return bytes.fromhex(req["text_hex"])
        except (TypeError, ValueError):
            raise BadRequest(f"'text_hex' must be a hex string, got {req['text_hex']!r}") from None
    text = req["text"]
    if not isinstance(text, str):
        raise BadRequest(f"'text' must be a string, got {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:  # JSON allows "\ud800"; UTF-8 does not
        raise BadRequest(f"'text' holds a lone surrogate at index {e.start}; "
                         "send the raw bytes as 'text_hex' instead") from None
    return text


class WrongAnswerType(HarnessError):
    """A backend's call returned another type than the port API gives."""


def checked_answer(method: str, answer):
    """A backend's ``encode`` answer as a list of int ids, a ``decode``/``token_to_piece``
    answer as bytes; :class:`WrongAnswerType`, naming the method and the type, if it is
    something else (a ``str`` for bytes, a non-int id).

    >>> checked_answer("encode", (1, 2)), checked_answer("decode", bytearray(b"a"))
    ([1, 2], b'a')
    >>> checked_answer("decode", "ab")
    Traceback (most recent call last):
    ...
    harness.protocol.server.WrongAnswerType: returned str from decode (expected bytes)
    >>> checked_answer("encode", [1, 2.0])
    Traceback (most recent call last):
    ...
    harness.protocol.server.WrongAnswerType: returned a list holding float 2.0 at index 1 from encode (expected int ids)
    """
    if method != "encode":
        if isinstance(answer, (bytes, bytearray, memoryview)):
            return bytes(answer)
        raise WrongAnswerType(f"returned {type(answer).__name__} from {method} (expected bytes)")
    if isinstance(answer, (str, bytes, bytearray, memoryview, Mapping)) or not isinstance(answer, Iterable):
        raise WrongAnswerType(f"returned {type(answer).__name__} from encode (expected a list of int ids)")
    ids = list(answer)
    for k, i in enumerate(ids):
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise WrongAnswerType(f"returned a list holding {type(i).__name__} {i!r:.40} at index {k} "
                                  "from encode (expected int ids)")
    return [int(i) for i in ids]


def _encode(backend, req: dict) -> dict:
    ids = backend.encode(_text(req), add_special=_flag(req, "add_special"),
                         parse_special=_flag(req, "parse_special"))
    return {"ids": checked_answer("encode", ids)}


def _decode(backend, req: dict) -> dict:
    ids = req.get("ids")
    if not isinstance(ids, list):
        raise BadRequest(f"'ids' must be a list of integers, got {ids!r}")
    ids = [_int(i, "each id") for i in ids]
    out = backend.decode(ids, remove_special=_flag(req, "remove_special"),
                         unparse_special=_flag(req, "unparse_special"))
    return {"bytes_hex": checked_answer("decode", out).hex()}


def _piece(backend, req: dict) -> dict:
    tid = _int(req.get("id"), "'id'")
    return {"bytes_hex": checked_answer("token_to_piece", backend.token_to_piece(tid, special=_flag(req, "special"))).hex()}


def _info(backend, req: dict) -> dict:
    extra = backend.info() if hasattr(backend, "info") else {}
    return {"n_vocab": int(backend.n_vocab), **extra, "batch": True}


def _chat(backend, req: dict) -> dict:
    """A ``chat`` request through ``backend.chat``; ``unsupported`` if the backend has none.

    >>> _chat(object(), {"op": "chat", "messages": []})
    Traceback (most recent call last):
    ...
    NotImplementedError: chat (this port does not render chat templates)
    """
    args = chat_arguments(req)
    chat = getattr(backend, "chat", None)
    if chat is None:
        raise NotImplementedError("chat (this port does not render chat templates)")
    answer = chat(**args)
    if not isinstance(answer, ChatAnswer):
        raise WrongAnswerType(f"returned {type(answer).__name__} from chat (expected a ChatAnswer)")
    return answer.to_json()


OPS: dict[str, Callable[[Any, dict], dict]] = {
    "encode": _encode, "decode": _decode, "piece": _piece, "info": _info, "chat": _chat}


def handle(backend, line: str | bytes) -> dict:
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
        return _batch(backend, req)
    return answer(backend, req)


def answer(backend, req: Any) -> dict:
    """Answer one parsed request (not a batch); never raises.

    >>> answer(None, {"op": "nope"})["error"]
    "unknown op 'nope'; expected one of: batch, chat, decode, encode, info, piece"
    """
    if not isinstance(req, dict):
        return {"error": "a request must be a JSON object with an 'op' field"}
    op = req.get("op")
    if not isinstance(op, str) or op not in OPS:
        return {"error": f"unknown op {op!r}; expected one of: {', '.join(sorted([*OPS, 'batch']))}"}
    try:
        return OPS[op](backend, req)
    except HarnessError as e:
        return {"error": _bounded(f"{type(e).__name__}: {e}")}
    except NotImplementedError as e:  # an adapter saying it cannot express this request
        return {"error": _bounded(f"{UNSUPPORTED}{e or op}")}
    except Exception as e:  # a bug in the port must not kill the session; say so plainly
        return {"error": _bounded(f"port raised {type(e).__name__}: {e}")}


def _batch(backend, req: dict) -> dict:
    """``{"op":"batch","requests":[...]}`` -> ``{"responses":[...]}``, one answer per request
    in order (a batch inside a batch is answered with an error, not run).

    >>> _batch(None, {"op": "batch", "requests": [{"op": "x"}, {"op": "batch"}]})["responses"][1]
    {'error': 'a batch cannot hold a batch'}
    """
    requests = req.get("requests")
    if not isinstance(requests, list):
        return {"error": f"'requests' must be a list of request objects, got {type(requests).__name__}"}
    return {"responses": [{"error": "a batch cannot hold a batch"}
                          if isinstance(r, dict) and r.get("op") == "batch" else answer(backend, r)
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


def _loop(respond: Callable[[bytes], dict], stdin: BinaryIO, stdout: BinaryIO, limit: int) -> None:
    for line in read_lines(stdin, limit):
        response = ({"error": f"request line longer than {limit} bytes; not read"}
                    if line is None else respond(line))
        # Bytes travel as hex, so ASCII suffices: our stdout carries only protocol lines.
        stdout.write(json.dumps(response, ensure_ascii=True).encode("ascii") + b"\n")
        stdout.flush()


def serve(backend, stdin: BinaryIO, stdout: BinaryIO, limit: int = MAX_LINE) -> None:
    """Answer every line of ``stdin`` (bytes) on ``stdout`` (bytes), one line each, flushed.

    >>> import io
    >>> class Echo:
    ...     n_vocab = 7
    ...     def encode(self, text, add_special=False, parse_special=False): return [len(text)]
    >>> out = io.BytesIO()
    >>> serve(Echo(), io.BytesIO(b'{"op":"encode","text":"abc"}\\n{"op":"info"}\\n'), out)
    >>> out.getvalue().decode().splitlines()
    ['{"ids": [3]}', '{"n_vocab": 7, "batch": true}']
    """
    _loop(lambda line: handle(backend, line), stdin, stdout, limit)


def unsupported_message(exc: BaseException) -> str:
    """The one error every request gets when the vocab cannot be loaded.

    >>> unsupported_message(ValueError("GGUF model with architecture mpt is not supported yet."))
    'unsupported: ValueError: GGUF model with architecture mpt is not supported yet.'
    """
    detail = " ".join(str(exc).split())[:1000]  # one line, bounded: it is repeated per request
    return f"{UNSUPPORTED}{type(exc).__name__}: {detail}"


def refuse(reason: str, stdin: BinaryIO, stdout: BinaryIO, limit: int = MAX_LINE) -> None:
    """Answer every line with ``{"error": reason}`` (a vocab the backend cannot load:
    ``reason`` starts with ``unsupported: ``), so the client sees why on every request."""
    _loop(lambda line: {"error": reason}, stdin, stdout, limit)


def protocol_stdout() -> BinaryIO:
    """A binary stream on the original stdout; fd 1 now goes to stderr.

    Libraries under test print (transformers logs warnings, C code may ``printf``);
    one stray line on stdout would shift every answer, so anything they print,
    Python or C, lands on stderr instead.
    """
    sys.stdout.flush()
    private = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr  # Python-level prints follow the fd
    return os.fdopen(private, "wb", buffering=0)


def serve_or_refuse(load: Callable[[], Any], stdin: BinaryIO, stdout: BinaryIO) -> int:
    """``serve(load())``; if ``load`` raises, the vocab is unsupported: every request gets
    that one :func:`unsupported_message`, which also goes to stderr once. Returns 0."""
    try:
        backend = load()
    except Exception as e:  # any load failure of the library is "cannot load this vocab"
        reason = unsupported_message(e)
        print(reason, file=sys.stderr, flush=True)
        refuse(reason, stdin, stdout)
        return 0
    serve(backend, stdin, stdout)
    return 0


def run_adapter(argv: list[str] | None, *, name: str, check_library: Callable[[], None],
                load: Callable[[str], Any]) -> int:
    """``main`` of a Python adapter server: ``--vocab PATH``, a guarded stdout, then serve.

    ``check_library`` imports the library (ImportError if absent: exit 3); ``load(path)``
    builds the backend and may raise anything for a vocab the library cannot load (then
    served as unsupported). A missing ``--vocab`` file is a usage error (exit 2).
    """
    import argparse

    parser = argparse.ArgumentParser(description=f"{name} as a JSON-lines port")
    parser.add_argument("--vocab", required=True, help="path of the .gguf vocab to serve")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if not os.path.isfile(args.vocab):
        print(f"{name} port: --vocab {args.vocab}: no such file; give the path of a .gguf vocab",
              file=sys.stderr)
        return EXIT_USAGE
    out = protocol_stdout()
    try:
        check_library()
    except ImportError as e:
        print(f"{name} port: cannot import its library ({e}); install the port's dependencies "
              "(its build.sh, e.g. ports/python/<name>/build.sh, makes the port's venv)", file=sys.stderr)
        return EXIT_MISSING_LIBRARY
    return serve_or_refuse(lambda: load(args.vocab), sys.stdin.buffer, out)
