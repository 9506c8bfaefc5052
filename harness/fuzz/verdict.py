"""The verdict on a port's answer: the protocol read again, independently of the client.

The hostile port (:mod:`harness.fuzz.hostile`) judges every line the client takes as an
answer with this module, never with :mod:`harness.protocol.client`'s code, so a leniency of
the client shows as a difference: ``same`` (equal in meaning: extra fields, upper-case hex,
other spacing), ``wrong`` (well-formed but another answer), ``error`` / ``unsupported``
(an ``{"error"}`` answer where none was due) or ``bad`` (not a protocol answer).

>>> verdict(b'{"ids": [1, 2], "x": 0}', {"ids": [1, 2]}, {"op": "encode"}, 10, 1 << 20)
'same'
>>> verdict(b'{"bytes_hex": "6"}', {"bytes_hex": "61"}, {"op": "piece"}, 10, 1 << 20)
'bad'
>>> verdict(b'{"ids": [1, 11]}', {"ids": [1, 2]}, {"op": "encode"}, 10, 1 << 20)
'bad'
"""

from __future__ import annotations

import json
import math
import re

_HEX = re.compile(r"[0-9a-fA-F]*")


def _meaning(answer, op: str | None, n_vocab: int):
    """What an answer object says for ``op``: a comparable value, or 'bad'."""
    if not isinstance(answer, dict):
        return "bad"
    if "error" in answer:
        text = answer["error"]
        return ("unsupported",) if isinstance(text, str) and text.lower().startswith("unsupported") else ("error",)
    if op == "info":
        n = answer.get("n_vocab", n_vocab)
        return "bad" if type(n) is not int or n != n_vocab else ("info",)
    if op == "encode":
        ids = answer.get("ids")
        if not isinstance(ids, list) or not all(type(i) is int and 0 <= i < n_vocab for i in ids):
            return "bad"
        return ("ids", tuple(ids))
    hexed = answer.get("bytes_hex")
    if not isinstance(hexed, str) or len(hexed) % 2 or not _HEX.fullmatch(hexed):
        return "bad"
    return ("bytes", bytes.fromhex(hexed))


def _item_verdict(got, right, op, n_vocab) -> str:
    mine, due = _meaning(got, op, n_vocab), _meaning(right, op, n_vocab)
    if mine == "bad":
        return "bad"
    if op == "info" and mine[0] in ("error", "unsupported"):
        return "same"  # info is optional: an error answer to it means "nothing to declare"
    if mine == due:
        return "same"
    return mine[0] if mine[0] in ("error", "unsupported") else "wrong"


def verdict(line: bytes, right: dict, request, n_vocab: int, max_line: int) -> str:
    """The verdict (module docstring) on ``line`` as the answer to ``request``, whose right
    answer is ``right``."""
    if len(line) > max_line:
        return "bad"
    try:
        got = json.loads(line.decode("utf-8"), parse_constant=lambda c: math.nan)
    except (ValueError, RecursionError):
        return "bad"
    op = request.get("op") if isinstance(request, dict) else None
    if op != "batch" or "error" in right:
        return _item_verdict(got, right, op, n_vocab)
    if not isinstance(got, dict):
        return "bad"
    if "error" in got:
        return _item_verdict(got, right, op, n_vocab)
    items, due = got.get("responses"), right["responses"]
    if not isinstance(items, list) or len(items) != len(due):
        return "bad"
    verdicts = [_item_verdict(g, d, r.get("op") if isinstance(r, dict) else None, n_vocab)
                for g, d, r in zip(items, due, request["requests"])]
    for worst in ("bad", "wrong", "error", "unsupported"):
        if worst in verdicts:
            return worst
    return "same"
