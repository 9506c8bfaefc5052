"""The JSON-lines port protocol, served over any tokenizer backend.

This is the protocol of ``python -m harness serve``: one JSON request per
stdin line, one response line per request, in order, flushed::

    {"op":"encode","text":S,"add_special":B,"parse_special":B} -> {"ids":[...]}
    {"op":"decode","ids":[...],"remove_special":B,"unparse_special":B} -> {"bytes_hex":"..."}
    {"op":"piece","id":N,"special":B}                           -> {"bytes_hex":"..."}
    {"op":"info"}                                                -> {"n_vocab":N}
    anything malformed                                           -> {"error":"..."}  (and keep serving)

A backend is any object with ``encode(text, add_special, parse_special)``,
``decode(ids, remove_special, unparse_special) -> bytes``,
``piece(id, special) -> bytes`` and ``n_vocab``. Only the adapters in this
package know their library; this module knows only the protocol.

A vocab the library cannot load is not a divergence: the server then answers
every request with ``{"error": "unsupported: <what the library raised>"}``
(:data:`UNSUPPORTED`), so the scoreboard can tell "this port cannot load this
vocab" from "this port tokenizes it differently".

>>> class Echo:
...     n_vocab = 7
...     def encode(self, text, add_special, parse_special): return [len(text)]
>>> handle(Echo(), '{"op":"encode","text":"abc","add_special":false,"parse_special":true}')
{'ids': [3]}
>>> handle(Echo(), '{"op":"info"}')
{'n_vocab': 7}
>>> handle(Echo(), '{"op":"nope"}')["error"][:22]
"unknown op 'nope': use"
"""

from __future__ import annotations

import json
import sys
from typing import IO, Any, Callable, Protocol

UNSUPPORTED = "unsupported: "
OPS = ("encode", "decode", "piece", "info")
# Exit codes of a port server that cannot serve at all (distinct from a vocab it cannot load,
# which is served as UNSUPPORTED answers): usage error, library not installed.
EXIT_USAGE, EXIT_MISSING_LIBRARY = 2, 3


class Backend(Protocol):
    """What an adapter wraps (positional flags, bytes out)."""

    n_vocab: int

    def encode(self, text: str, add_special: bool, parse_special: bool) -> list[int]: ...

    def decode(self, ids: list[int], remove_special: bool, unparse_special: bool) -> bytes: ...

    def piece(self, id: int, special: bool) -> bytes: ...


class BadRequest(ValueError):
    """The request, not the backend, is wrong (message says which field and how)."""


def _field(req: dict, key: str, kind: type, what: str) -> Any:
    """``req[key]`` checked to be exactly ``kind`` (``bool`` is not an ``int`` here)."""
    if key not in req:
        raise BadRequest(f"missing {key!r}: {req.get('op')} needs {what}")
    value = req[key]
    if type(value) is not kind:
        raise BadRequest(f"{key!r} must be {kind.__name__}, got {type(value).__name__} {value!r:.60}")
    return value


def _ids(req: dict) -> list[int]:
    ids = _field(req, "ids", list, "a list of token ids")
    bad = [i for i in ids if type(i) is not int]
    if bad:
        raise BadRequest(f"'ids' must hold only ints, got {bad[0]!r:.60}")
    return ids


def _text(req: dict) -> str:
    text = _field(req, "text", str, "a string 'text'")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        # JSON "\ud800" decodes to a lone surrogate, which no UTF-8 text contains.
        raise BadRequest(f"'text' is not valid Unicode ({e.reason} at {e.start}): "
                         "send UTF-8 text, no lone surrogates") from None
    return text


def dispatch(backend: Backend, req: dict) -> dict:
    """One parsed request -> its response object. Raises BadRequest on a malformed one.

    >>> try:
    ...     dispatch(None, {"op": "piece", "id": True, "special": False})
    ... except BadRequest as e:
    ...     print(e)
    'id' must be int, got bool True
    """
    op = req.get("op")
    if op == "encode":
        text = _text(req)
        add = _field(req, "add_special", bool, "add_special: bool")
        parse = _field(req, "parse_special", bool, "parse_special: bool")
        return {"ids": [int(i) for i in backend.encode(text, add, parse)]}
    if op == "decode":
        ids = _ids(req)
        remove = _field(req, "remove_special", bool, "remove_special: bool")
        unparse = _field(req, "unparse_special", bool, "unparse_special: bool")
        return {"bytes_hex": bytes(backend.decode(ids, remove, unparse)).hex()}
    if op == "piece":
        id_ = _field(req, "id", int, "an int 'id'")
        special = _field(req, "special", bool, "special: bool")
        return {"bytes_hex": bytes(backend.piece(id_, special)).hex()}
    if op == "info":
        return {"n_vocab": int(backend.n_vocab)}
    raise BadRequest(f"unknown op {op!r}: use one of {', '.join(OPS)}")


def handle(backend: Backend, line: str) -> dict:
    """One request line -> one response object; never raises.

    A backend exception becomes ``{"error": "port raised <Type>: ..."}`` so
    the caller sees what the library did, and the server keeps serving.
    """
    try:
        req = json.loads(line)
    except ValueError as e:
        return {"error": f"request is not JSON ({e}): send one JSON object per line"}
    if not isinstance(req, dict):
        return {"error": f"request must be a JSON object, got {type(req).__name__}"}
    try:
        return dispatch(backend, req)
    except BadRequest as e:
        return {"error": str(e)}
    except Exception as e:  # the library under test failed on a valid request: report, keep serving
        return {"error": f"port raised {type(e).__name__}: {e}"}


def unsupported_message(exc: BaseException) -> str:
    """The one error every request gets when the vocab cannot be loaded.

    >>> unsupported_message(ValueError("GGUF model with architecture mpt is not supported yet."))
    'unsupported: ValueError: GGUF model with architecture mpt is not supported yet.'
    """
    detail = " ".join(str(exc).split())[:1000]  # one line, bounded: it is repeated per request
    return f"{UNSUPPORTED}{type(exc).__name__}: {detail}"


def serve(load: Callable[[], Backend], stdin: IO[bytes], stdout: IO[bytes]) -> int:
    """Load the backend, then answer each stdin line until EOF. Returns 0.

    If ``load`` raises, the vocab is unsupported: every request is answered
    with that one :func:`unsupported_message`, and the reason also goes to
    stderr once.
    """
    backend, refusal = None, None
    try:
        backend = load()
    except Exception as e:  # any load failure of the library is "cannot load this vocab"
        refusal = {"error": unsupported_message(e)}
        print(refusal["error"], file=sys.stderr, flush=True)
    for raw in stdin:
        # Every line gets exactly one answer, even a blank or garbled one, so answers never shift.
        if refusal is not None:
            response = refusal
        else:
            try:
                response = handle(backend, raw.decode("utf-8").strip())
            except UnicodeDecodeError as e:
                response = {"error": f"request line is not UTF-8 ({e.reason} at byte {e.start})"}
        stdout.write(json.dumps(response, ensure_ascii=True).encode("ascii") + b"\n")
        stdout.flush()
    return 0
