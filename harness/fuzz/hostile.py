"""A hostile port: the real server loop, with one fault played at one request line.

The port answers every request line through :func:`harness.protocol.server.handle` over a
backend (llama.cpp in process: its answers are the right ones), except that at request
line ``at`` (0 is usually ``info``; the first line at or after it where the kind applies)
it plays one :data:`KINDS` fault: a malformed, truncated, huge, slow or misplaced answer,
a crash, a hang, a closed stdout, a child that keeps the pipe open, and so on. Encoding a
text that holds :data:`PLANT` appends a token: one real bug, so a fuzzed session can tell
whether a finding was lost.

The port keeps a model of what the client reads (every byte it wrote, split at newlines:
one line per request, in order) and, for each request, logs a *verdict* on the line the
client will take as its answer, judged against the right answer by this module's own
reading of the protocol (never the client's code):

``same``, ``wrong``, ``error``, ``unsupported`` or ``bad`` (:mod:`harness.fuzz.verdict`:
not JSON, too deep, too long, not an object, a field missing or of the wrong type, an id
out of range, odd or non-hex ``bytes_hex``, a batch of the wrong count), ``none`` (no line
comes: the client waits, a hang) or ``eof`` (stdout closes).

One JSON object per line goes to the log file: ``{"n", "v", "op", "planted", "req"}``
per request, ``{"kind", "n"}`` when the fault is played, ``{"child": pid}`` for a forked
child. Run as a port (the end-to-end runs of ``make fuzz-ports``)::

    python -m harness.fuzz.hostile --vocab V.gguf --kind garbage --at 3 --seed 1 --log L

>>> sorted(STARTUP)
['stderr-at-start', 'stdout-before-info']
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import sys
import time
from typing import Callable

from harness.fuzz.verdict import verdict
from harness.protocol.server import handle, read_lines

#: A text holding this gets one token too many from the hostile port's encode: its one real bug.
PLANT = "\u2603"


class Planted:
    """A backend with one real bug: encode appends its last id again to a text holding PLANT.

    >>> class B:
    ...     n_vocab = 5
    ...     def encode(self, text, add_special=False, parse_special=False): return [1, 2]
    >>> Planted(B()).encode("a" + PLANT), Planted(B()).encode("a")
    ([1, 2, 2], [1, 2])
    """

    def __init__(self, backend):
        self._b = backend
        self.n_vocab = backend.n_vocab

    def encode(self, text, *, add_special=False, parse_special=False):
        ids = list(self._b.encode(text, add_special=add_special, parse_special=parse_special))
        planted = isinstance(text, str) and PLANT in text
        return ids + [ids[-1] if ids else 0] if planted else ids

    def decode(self, ids, *, remove_special=False, unparse_special=False):
        return self._b.decode(ids, remove_special=remove_special, unparse_special=unparse_special)

    def token_to_piece(self, id, *, special=False):
        return self._b.token_to_piece(id, special=special)


# --- the faults ---------------------------------------------------------------------------
class Port:
    """The hostile port's state while it serves: its fds, the right answer of the current
    request, and what the client has not read yet (see the module docstring)."""

    def __init__(self, backend, kind: str, at: int, seed: int, log_path: str, *,
                 timeout: float, max_line: int, out_fd: int = 1, err_fd: int = 2):
        self.backend, self.kind, self.at = backend, kind, at
        self.rng = random.Random(seed)
        self.timeout, self.max_line = timeout, max_line
        self.out_fd, self.err_fd = out_fd, err_fd
        self.log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self.pending = bytearray()  # written, not yet taken by the client as an answer
        self.staged = bytearray()   # to be written for the current request
        self.judged = False
        self.history: list[bytes] = []  # answer lines already served
        self.played = False
        self.n = 0
        self.request = None
        self.right: dict = {}

    def log(self, **entry) -> None:
        os.write(self.log_fd, json.dumps(entry, ensure_ascii=True).encode() + b"\n")

    def write(self, data: bytes) -> None:
        """Stage ``data``; :meth:`send` judges, then writes (so the verdict is logged before the
        client can read the answer and kill the port)."""
        self.staged += data

    def send(self, *, ending: str = "none", pieces: int = 1, pause: float = 0.0) -> None:
        """Judge what the client will take as this request's answer, then write what is staged
        (in ``pieces`` with ``pause`` between them). ``ending`` is the verdict if no newline
        comes: ``none`` (the port goes on or hangs) or ``eof`` (it exits or closes stdout)."""
        self.pending += self.staged
        self.judge(ending)
        data, self.staged = bytes(self.staged), bytearray()
        step = max(1, -(-len(data) // pieces))
        for i in range(0, len(data), step):
            view = memoryview(data[i:i + step])
            while view:
                view = view[os.write(self.out_fd, view):]
            if pause:
                time.sleep(pause)

    def line(self, answer=None) -> bytes:
        return json.dumps(self.right if answer is None else answer, ensure_ascii=True).encode() + b"\n"

    def judge(self, ending: str = "none", forced: str | None = None) -> None:
        """Log the verdict on the line the client takes as the current request's answer (once)."""
        if self.judged:
            return
        self.judged = True
        at = self.pending.find(b"\n")
        if forced:
            v = forced
        elif at < 0:
            v = "bad" if len(self.pending) > self.max_line else ending
        else:
            got = bytes(self.pending[:at])
            del self.pending[:at + 1]
            v = verdict(got, self.right, self.request, self.backend.n_vocab, self.max_line)
        self.log(n=self.n, v=v, op=_op(self.request), planted=_planted(self.request),
                 req=json.dumps(self.request, ensure_ascii=True)[:200])
        if b"\n" in self.pending:  # a line too many: the client may take it as its next answer at once
            self.log(extra=self.n)

    def hang(self) -> None:
        self.send()
        time.sleep(3600)

    def exit(self, code: int = 0) -> None:
        self.send(ending="eof")
        os._exit(code)

    def serve(self, stdin) -> None:
        """Answer every request line; play the fault once, where it applies."""
        if self.kind in STARTUP:
            self.played = True
            self.log(kind=self.kind, n=-1)
            STARTUP[self.kind](self)
            self.pending += self.staged
            if b"\n" in self.pending:
                self.log(extra=-1)
            self.send_raw()
        for raw in read_lines(stdin, self.max_line):
            self.request, self.judged = _parse(raw), False
            self.right = handle(self.backend, raw) if raw is not None else {"error": "request line too long"}
            fault = KINDS.get(self.kind)
            if not self.played and self.n >= self.at and fault is not None and _applies(self.kind, self.request):
                self.played = True
                self.log(kind=self.kind, n=self.n)
                fault(self)
            else:
                self.write(self.line())
            self.send()
            self.history.append(self.line())
            self.n += 1


    def send_raw(self) -> None:
        """Write what is staged with no request to judge (what a port prints at start-up)."""
        data, self.staged = bytes(self.staged), bytearray()
        view = memoryview(data)
        while view:
            view = view[os.write(self.out_fd, view):]


def _parse(raw):
    try:
        return json.loads(raw) if raw is not None else None
    except (ValueError, RecursionError):
        return None


def _op(request) -> str | None:
    return request.get("op") if isinstance(request, dict) else None


def _planted(request) -> bool:
    if not isinstance(request, dict):
        return False
    reqs = request.get("requests") if request.get("op") == "batch" else [request]
    return any(isinstance(r, dict) and r.get("op") == "encode" and PLANT in str(r.get("text", ""))
               for r in reqs or [])


def _field(p: Port) -> str | None:
    """The answer's field this kind may damage ('ids' or 'bytes_hex'), if any."""
    return next((k for k in ("ids", "bytes_hex") if k in p.right), None)


def _batch_items(p: Port) -> list:
    return p.right.get("responses") if isinstance(p.right.get("responses"), list) else []


def _applies(kind: str, request) -> bool:
    op = _op(request)
    if kind.startswith("batch-") or kind == "swap":
        return op == "batch"
    if kind.startswith("info-"):
        return op == "info"
    if kind in FIELD_KINDS:
        return op in ("encode", "decode", "piece")
    return True


def _damage_ids(p: Port, ids: list) -> list:
    k = p.rng.randrange(len(ids)) if ids else 0
    n = p.backend.n_vocab
    bad = p.rng.choice([n, n + p.rng.randrange(1, 1000), -1, -p.rng.randrange(2, 1 << 40), 1 << 63, 10 ** 30])
    return ids[:k] + [bad] + ids[k + 1:]


def _retype_ids(p: Port, ids: list):
    k = p.rng.randrange(len(ids)) if ids else 0
    v = ids[k] if ids else 1
    bad = p.rng.choice([float(v), math.nan, math.inf, True, str(v), None, [v], {"id": v}, v + 0.5])
    if p.rng.random() < 0.2:
        return p.rng.choice([None, "1 2 3", {"0": v}, v, True])
    return ids[:k] + [bad] + ids[k + 1:]


def _bad_hex(p: Port, hexed: str):
    return p.rng.choice([hexed + "0", hexed[:-1] if hexed else "0", "zz" + hexed, "0x" + hexed,
                         " ".join(hexed[i:i + 2] for i in range(0, len(hexed), 2)) + " 00",
                         hexed + "\u0663\u0663", None, 97, [hexed], hexed + "g0"])


def _fault_field(p: Port) -> None:
    """``ids-range``, ``ids-type``, ``hex-bad``: the answer's one field damaged."""
    f = _field(p)
    answer = dict(p.right)
    if f == "ids":
        answer["ids"] = _damage_ids(p, answer["ids"]) if p.kind == "ids-range" else _retype_ids(p, answer["ids"])
    elif f == "bytes_hex":
        answer["bytes_hex"] = _bad_hex(p, answer["bytes_hex"])
    p.write(json.dumps(answer, allow_nan=True).encode() + b"\n")


def _truncated(p: Port) -> None:
    line = p.line()
    cut = p.rng.randrange(1, max(2, len(line) - 1))
    p.write(line[:cut])
    how = p.kind.rsplit("-", 1)[1]
    if how == "eof":
        p.exit(0)
    elif how == "hang":
        p.hang()
    p.write(b"\n")


def _huge(p: Port) -> None:
    filler = p.rng.choice([b" ", b"x", b"[", b"9"])
    p.write(filler * (p.max_line + p.rng.randrange(1, 1 << 16)))
    if p.rng.random() < 0.5:
        p.write(p.line())
    else:
        p.hang()


def _huge_valid(p: Port) -> None:
    p.write(p.line({**p.right, "padding": "x" * p.rng.randrange(p.max_line // 4, p.max_line // 2)}))


def _sleep_then(fraction: float) -> Callable[[Port], None]:
    def fault(p: Port) -> None:
        if fraction > 1:
            p.judge(forced="none")  # the client gives up before the answer comes
        time.sleep(p.timeout * fraction)
        p.write(p.line())
    return fault


def _dribble(p: Port) -> None:
    p.write(p.line())
    p.send(pieces=8, pause=p.timeout * 0.02)


def _crash(p: Port) -> None:
    p.exit(p.rng.choice([0, 1, 3, 70, 134]))


def _signal(p: Port) -> None:
    p.send(ending="eof")
    os.kill(os.getpid(), p.rng.choice([signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT, signal.SIGTERM]))
    time.sleep(3600)


def _close_stdout(p: Port) -> None:
    p.send(ending="eof")
    os.close(p.out_fd)
    time.sleep(3600)


def _fork_child(p: Port) -> None:
    """A child that keeps stdin and stdout open and sleeps; the port itself exits."""
    pid = os.fork()
    if pid == 0:
        try:
            time.sleep(3600)
        finally:
            os._exit(0)
    p.log(child=pid)
    p.send()  # no newline, no end of file: the child holds the pipe
    os._exit(0)


def _stderr_flood(p: Port) -> None:
    chunk = (b"warning: the port is chatty " * 2400)[:65536]
    for _ in range(p.rng.randrange(16, 160)):
        os.write(p.err_fd, chunk)
    p.write(p.line())


def _deep(p: Port) -> None:
    depth = p.rng.choice([5000, 100_000, 400_000])
    nest = b"[" * depth + b"]" * depth
    p.write((b'{"ids": ' + nest + b"}" if p.rng.random() < 0.5 else nest) + b"\n")


def _non_utf8(p: Port) -> None:
    line = p.line()
    k = p.rng.randrange(1, max(2, len(line) - 1))
    p.write(line[:k] + p.rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"]) + line[k:])


def _literal(*choices: bytes) -> Callable[[Port], None]:
    def fault(p: Port) -> None:
        p.write(p.rng.choice(choices) + b"\n")
    return fault


def _rewritten(make: Callable[[Port], object]) -> Callable[[Port], None]:
    def fault(p: Port) -> None:
        answer = make(p)
        try:  # raw UTF-8 where it can be (a lone surrogate cannot: then \u escapes)
            line = json.dumps(answer, ensure_ascii=p.rng.random() < 0.5).encode()
        except UnicodeEncodeError:
            line = json.dumps(answer).encode()
        p.write(line + b"\n")
    return fault


def _another(p: Port) -> None:
    """The answer of an earlier request (or of another op), not this one's."""
    others = [h for h in p.history if h != p.line()]
    p.write(p.rng.choice(others) if others else b'{"bytes_hex": "61"}\n' if "ids" in p.right else b'{"ids": [1]}\n')


def _wrong_op(p: Port) -> None:
    p.write(b'{"bytes_hex": "61"}\n' if "ids" in p.right else b'{"ids": [1]}\n')


def _utf16(p: Port) -> None:
    text = json.dumps(p.right, ensure_ascii=True)
    p.write(text.encode(p.rng.choice(["utf-16-le", "utf-16-be", "utf-32-le"])) + b"\n")


def _two_lines(p: Port) -> None:
    p.write(p.line() + p.line())


def _spaced(p: Port) -> None:
    text = json.dumps(p.right, indent=p.rng.choice([None, 0]), separators=(" ,  ", " : ")).replace("\n", " ")
    hexed = _field(p) == "bytes_hex"
    if hexed and (p.kind == "hex-upper" or p.rng.random() < 0.5):
        text = json.dumps({**p.right, "bytes_hex": p.right["bytes_hex"].upper()})
    p.write(text.encode() + p.rng.choice([b"\r\n", b"\n", b" \t\n"]))


def _batch_fault(p: Port) -> None:
    items = list(_batch_items(p))
    k = p.rng.randrange(len(items)) if items else 0
    if p.kind == "batch-count":
        items = items[:-1] if items and p.rng.random() < 0.6 else items + [items[0] if items else {"ids": []}]
    elif p.kind == "batch-item-bad":
        items[k:k + 1] = [p.rng.choice([5, "x", None, [], {"idz": [1]}, {"bytes_hex": 1}])]
    elif p.kind == "batch-item-error":
        items[k] = {"error": p.rng.choice(["boom", "unsupported: not this one", "\ud800 bad"])}
    elif p.kind == "batch-item-range":
        items[k] = {"ids": _damage_ids(p, items[k].get("ids") or [0])} if "ids" in items[k] else {"bytes_hex": "6"}
    elif p.kind == "swap" and len(items) > 1:
        j = (k + 1) % len(items)
        items[k], items[j] = items[j], items[k]
    p.write(p.line({"responses": items}))


def _batch_shape(p: Port) -> None:
    p.write(p.line(p.rng.choice([{"responses": None}, {"responses": {}}, {"responses": "[]"}, {}, {"answers": []}])))


def _info_lie(p: Port) -> None:
    n = p.backend.n_vocab
    if p.kind == "info-n_vocab":
        answer = {**p.right, "n_vocab": p.rng.choice([n + 1, n - 1, 0, str(n), -n, float(n) + 0.5])}
    else:
        answer = {**p.right, "unsupported": p.rng.sample(["decode", "piece", "parse_special=true",
                                                          "add_special=true", "special=true"], 2)}
    p.write(p.line(answer))


def _startup_banner(p: Port) -> None:
    p.write(p.rng.choice([b"port ready\n", b'{"ready": true}\n', b"\n", b'{"ids": []}\n']))


def _startup_flood(p: Port) -> None:
    os.write(p.err_fd, b"starting up " * 200_000)


#: Faults played before the first request is read.
STARTUP: dict[str, Callable[[Port], None]] = {"stdout-before-info": _startup_banner,
                                              "stderr-at-start": _startup_flood}
#: Kinds that damage the answer's own field (encode, decode, piece answers only).
FIELD_KINDS = ("ids-range", "ids-type", "hex-bad", "hex-upper", "wrong-op")

#: Every fault played at one request line, by name (the README's list of what make fuzz-ports plays).
KINDS: dict[str, Callable[[Port], None]] = {
    "garbage": _literal(b"%!not json", b"Traceback (most recent call last):", b"ids: 1 2 3", b"\x00\x01\x02"),
    "empty-line": _literal(b"", b"   "),
    "truncated-eof": _truncated, "truncated-hang": _truncated, "truncated-newline": _truncated,
    "huge": _huge, "huge-valid": _huge_valid,
    "slow": _sleep_then(1.3), "slow-ok": _sleep_then(0.15), "dribble": _dribble,
    "crash": _crash, "signal": _signal, "hang": lambda p: p.hang(),
    "close-stdout": _close_stdout, "fork-child": _fork_child,
    "stderr-flood": _stderr_flood,
    "deep-json": _deep, "non-utf8": _non_utf8,
    "bom": lambda p: p.write(b"\xef\xbb\xbf" + p.line()),
    "not-object": _literal(b"[1, 2, 3]", b"42", b"null", b'"ids"', b"true", b"NaN"),
    "missing-field": _rewritten(lambda p: p.rng.choice([{}, {"id": 1}, {"result": p.right}])),
    "extra-fields": _rewritten(lambda p: {"x": [1, {"y": None}], **p.right, "note": "\u00e9\U0001f600"}),
    "spacing": _spaced, "hex-upper": _spaced,
    "ids-range": _fault_field, "ids-type": _fault_field, "hex-bad": _fault_field,
    "error": _rewritten(lambda p: {"error": p.rng.choice(["boom", "bad request", "x" * 5000, "\ud800 lone"])}),
    "error-typed": _rewritten(lambda p: {"error": p.rng.choice([None, 5, {"why": "x"}, ["x"], True])}),
    "error-and-field": _rewritten(lambda p: {**p.right, "error": "both"}),
    "unsupported": _rewritten(lambda p: {"error": p.rng.choice(["unsupported: no", "Unsupported", "unsupported: \udc80"])}),
    "another-request": _another, "wrong-op": _wrong_op, "two-lines": _two_lines, "utf16": _utf16,
    "batch-count": _batch_fault, "batch-item-bad": _batch_fault, "batch-item-error": _batch_fault,
    "batch-item-range": _batch_fault, "swap": _batch_fault, "batch-shape": _batch_shape,
    "info-n_vocab": _info_lie, "info-declares": _info_lie,
    "info-garbage": _literal(b"not an info answer", b"[]", b'{"n_vocab": '),
}
#: Every kind, the start-up ones included.
ALL_KINDS = tuple(sorted([*KINDS, *STARTUP]))


def main(argv: list[str] | None = None) -> int:
    """The hostile port as a command (see the module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m harness.fuzz.hostile")
    ap.add_argument("--vocab", required=True)
    ap.add_argument("--kind", required=True, choices=ALL_KINDS)
    ap.add_argument("--at", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--log", required=True)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--max-line", type=int, default=64 * 1024 * 1024)
    args = ap.parse_args(argv)
    from reference.inproc import load_reference
    port = Port(Planted(load_reference(args.vocab)), args.kind, args.at, args.seed, args.log,
                timeout=args.timeout, max_line=args.max_line)
    port.serve(sys.stdin.buffer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
