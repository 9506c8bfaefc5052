"""A JSON-lines port with bugs chosen on the command line: the harness's self-test subject.

It answers the protocol of ``python -m harness serve`` with the harness tokenizer
(exact), then breaks it as asked:

    python tests/ports/faulty_port.py --vocab V [--bugs digits,nbsp,decode-space,fffd,extra-token,...]
        [--declare parse_special=true,piece] [--refuse remove_special=true]
        [--crash-after N --crash-once FILE] [--error-on TEXT]
        [--flaky CRASH,HANG --flaky-log FILE [--flaky-seed N]]
        [--cannot-load NAME] [--requests-log FILE]

Bugs (each independent of the others):
- ``digits``: each digit encoded on its own (only without add_special);
- ``nbsp``: U+00A0 read as a space;
- ``decode-space``: decode drops one leading space;
- ``fffd``: decode replaces invalid UTF-8 with U+FFFD (a str round trip);
- ``extra-token``: every encode answer ends with an extra token 0;
- ``piece-byte``: the piece of a BYTE token is its text (``<0x0A>``), not the byte;
- ``nel``: U+0085 (NEL) read as a space;
- ``crlf``: CRLF folded to LF;
- ``nfkc``: the input NFKC-normalised;
- ``zwj``: U+200D (ZERO WIDTH JOINER) dropped;
- ``curly``: ’ (U+2019) read as ' (U+0027);
- ``native-digits``: non-ASCII decimal digits read as ASCII ones (``unicodedata.decimal``);
- ``no-bos``: add_special adds no BOS (the vocab's add_bos ignored);
- ``strip-after-unprinted``: decode drops the leading space of the first piece it prints, also
  after a BOS or control token it prints as nothing (Hugging Face's Strip decoder after skipped
  specials; llama.cpp strips only the first token's);
- ``eos-printed``: decode prints the EOS token's text where llama.cpp prints nothing (no
  catalogue entry models exactly this; it is here to be met together with the one above).

The text bugs apply to the text before anything else, in the order listed.
Each bug is one cause for ``harness.diagnosis`` (tests/test_diagnosis.py names them).

``--declare`` lists what ``info`` declares unsupported; ``--refuse`` answers
``{"error": "unsupported: ..."}`` to matching requests without declaring it.
``--crash-after N`` exits with status 9 after N requests, once: only if the file
``--crash-once`` names does not exist yet (it is created first).
It answers ``{"op":"batch","requests":[...]}`` too (``info`` says ``"batch": true``).
``--error-on TEXT`` answers ``{"error": ...}`` to encodes whose text holds TEXT.
``--flaky 0.001,0.0001`` crashes (exit status 9) on a random 0.1 % of request lines and hangs
on another 0.01 % (``info`` lines excepted: a port that cannot start is another matter),
seeded by ``--flaky-seed``, the vocab and how many times this vocab's port started before;
each start, crash and hang is a JSON line in ``--flaky-log`` (the soak counts them,
tests/test_soak.py).
``--cannot-load NAME``: on a vocab whose file name holds NAME, the port cannot load it, as an
adapter whose library refuses a vocab: every line gets one ``unsupported: ...`` answer
(``harness.protocol.server.refuse``). ``--requests-log FILE`` appends each request's op, one per line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
import unicodedata
from pathlib import Path

from harness.tokenizer import Tokenizer
from harness.tokenizer.vocab import BYTE


def flags_of(req: dict) -> set[str]:
    """The request's op and 'flag=value' words, as ``info``'s unsupported list names them."""
    words = {req.get("op", "")}
    for k in ("add_special", "parse_special", "remove_special", "unparse_special", "special"):
        if k in req:
            words.add(f"{k}={'true' if req[k] else 'false'}")
    return words


def _ascii_digit(c: str) -> str:
    d = unicodedata.decimal(c, None) if not c.isascii() else None
    return c if d is None else str(d)


# bug -> what it does to the text before tokenizing
TEXT_BUGS = {
    "nbsp": lambda t: t.replace("\xa0", " "),
    "nel": lambda t: t.replace("\x85", " "),
    "crlf": lambda t: t.replace("\r\n", "\n"),
    "nfkc": lambda t: unicodedata.normalize("NFKC", t),
    "zwj": lambda t: t.replace("\u200d", ""),
    "curly": lambda t: t.replace("\u2019", "'"),
    "native-digits": lambda t: "".join(map(_ascii_digit, t)),
}


BUGS = set(TEXT_BUGS) | {"digits", "decode-space", "fffd", "extra-token", "piece-byte", "no-bos",
                         "strip-after-unprinted", "eos-printed"}


def read_text(text: str, bugs: set[str]) -> str:
    """The text as a port with ``bugs`` reads it.

    >>> read_text("a\x85b\u2019s \u0663", {"nel", "curly", "native-digits"})
    "a b's 3"
    """
    for name, bug in TEXT_BUGS.items():
        if name in bugs:
            text = bug(text)
    return text


class Faulty:
    def __init__(self, args):
        self.tok = Tokenizer.from_gguf(args.vocab)
        self.bugs = set(filter(None, args.bugs.split(",")))
        unknown = self.bugs - BUGS
        if unknown:
            raise SystemExit(f"faulty port: unknown --bugs {', '.join(sorted(unknown))}; "
                             f"known: {', '.join(sorted(BUGS))}")
        self.declared = [w for w in args.declare.split(",") if w]
        self.refused = set(filter(None, args.refuse.split(",")))
        self.args, self.served = args, 0

    def encode(self, req):
        text, add, parse = req["text"], req["add_special"], req["parse_special"]
        text = read_text(text, self.bugs)
        if "digits" in self.bugs and not add:
            ids = [i for part in re.split(r"(\d)", text) if part
                   for i in self.tok.encode(part, add_special=False, parse_special=parse)]
        else:
            ids = self.tok.encode(text, add_special=add, parse_special=parse)
        if "no-bos" in self.bugs and add and ids[:1] == [self.tok.vocab.bos]:
            ids = ids[1:]
        return ids + [0] * ("extra-token" in self.bugs)

    def decode(self, req):
        out = self.tok.decode(req["ids"], remove_special=req["remove_special"],
                              unparse_special=req["unparse_special"])
        if self.bugs & {"strip-after-unprinted", "eos-printed"}:
            out = self._printed(req["ids"], out, req["remove_special"], req["unparse_special"])
        if "decode-space" in self.bugs and out[:1] == b" ":
            out = out[1:]
        if "fffd" in self.bugs:
            out = out.decode("utf-8", "replace").encode("utf-8")
        return out

    def _printed(self, ids: list[int], out: bytes, remove: bool, unparse: bool) -> bytes:
        """llama.cpp's output ``out`` of ``ids`` with the EOS text put in (``eos-printed``) and
        the first printed piece's leading space dropped (``strip-after-unprinted``)."""
        def upto(j):  # llama.cpp's output of ids[:j], a prefix of out here (no space cleaning)
            return len(self.tok.decode(ids[:j], remove_special=remove, unparse_special=unparse))
        eos, text = self.tok.vocab.eos, b""
        shown = [j for j, i in enumerate(ids) if i == eos and "eos-printed" in self.bugs]
        first = next((j for j in range(len(ids)) if j in shown or upto(j + 1) > 0), None)
        if "eos-printed" in self.bugs:
            text = self.tok.vocab.tokens[eos]
            for j in reversed(shown):
                at = upto(j)
                out = out[:at] + text + out[at:]
        if "strip-after-unprinted" in self.bugs and first and first not in shown:
            at = upto(first) + sum(len(text) for j in shown if j < first)
            if out[at:at + 1] == b" ":
                out = out[:at] + out[at + 1:]
        return out

    def piece(self, req):
        vocab = self.tok.vocab
        if "piece-byte" in self.bugs and vocab.attrs[req["id"]] & BYTE:
            return vocab.tokens[req["id"]]
        return self.tok.token_to_piece(req["id"], special=req["special"])

    def answer(self, req: dict) -> dict:
        op = req.get("op")
        if op == "info":
            return {"n_vocab": self.tok.n_vocab, "unsupported": self.declared, "batch": True}
        if op == "batch":
            return {"responses": [self.answer(r) for r in req["requests"]]}
        hit = (set(self.declared) | self.refused) & flags_of(req)
        if hit:
            return {"error": f"unsupported: {', '.join(sorted(hit))}"}
        if op == "encode" and self.args.error_on and self.args.error_on in req["text"]:
            return {"error": f"cannot encode a text holding {self.args.error_on!r}"}
        if op == "encode":
            return {"ids": self.encode(req)}
        if op == "decode":
            return {"bytes_hex": self.decode(req).hex()}
        if op == "piece":
            return {"bytes_hex": self.piece(req).hex()}
        return {"error": f"unknown op {op!r}"}

    def maybe_crash(self) -> None:
        self.served += 1
        a = self.args
        if a.crash_after and self.served > a.crash_after and a.crash_once and not Path(a.crash_once).exists():
            Path(a.crash_once).write_text("crashed once\n")
            print(f"faulty port: crashing on purpose after {a.crash_after} requests", file=sys.stderr, flush=True)
            sys.exit(9)


class Flaky:
    """Crashes and hangs on a seeded random share of request lines (see the module docstring)."""

    def __init__(self, rates: str, log: str, seed: int, vocab: str):
        self.crash, self.hang = (float(x) for x in rates.split(","))
        self.log, self.vocab = log, Path(vocab).name
        starts = sum(1 for e in self._entries() if e["vocab"] == self.vocab and e["event"] == "start")
        self.rng = random.Random(f"{seed}:{self.vocab}:{starts}")
        self.served = 0
        self._write("start")

    def _entries(self) -> list[dict]:
        try:
            with open(self.log) as f:
                return [json.loads(line) for line in f if line.strip()]
        except OSError:
            return []

    def _write(self, event: str) -> None:
        fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.write(fd, json.dumps({"vocab": self.vocab, "event": event, "pid": os.getpid(),
                                 "served": self.served}).encode() + b"\n")
        os.close(fd)

    def before(self, req: dict) -> None:
        """Crash or hang here, or answer."""
        if req.get("op") == "info":
            return
        self.served += 1
        u = self.rng.random()
        if u < self.crash:
            self._write("crash")
            print(f"faulty port: crashing on purpose on request {self.served}", file=sys.stderr, flush=True)
            os._exit(9)
        if u < self.crash + self.hang:
            self._write("hang")
            time.sleep(3600)


class _Logged:
    """A binary stdin whose lines' request ops (a batch's ops) are appended to ``path`` first."""

    def __init__(self, stream, path: str):
        self.stream, self.path = stream, path

    def readline(self, *limit) -> bytes:
        line = self.stream.readline(*limit)
        if self.path and line.strip():
            req = json.loads(line)
            ops = [r.get("op") for r in req["requests"]] if req.get("op") == "batch" else [req.get("op")]
            with open(self.path, "a") as log:
                log.write("".join(f"{op}\n" for op in ops))
        return line

    def __iter__(self):
        return iter(self.readline, b"")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--vocab", required=True)
    p.add_argument("--bugs", default="")
    p.add_argument("--declare", default="")
    p.add_argument("--refuse", default="")
    p.add_argument("--crash-after", type=int, default=0)
    p.add_argument("--crash-once", default="")
    p.add_argument("--error-on", default="")
    p.add_argument("--flaky", default="")
    p.add_argument("--flaky-log", default="")
    p.add_argument("--flaky-seed", type=int, default=0)
    p.add_argument("--cannot-load", default="")
    p.add_argument("--requests-log", default="")
    args = p.parse_args()
    if args.cannot_load and args.cannot_load in Path(args.vocab).name:
        from harness.protocol.server import refuse
        stdin = _Logged(sys.stdin.buffer, args.requests_log)
        refuse(f"unsupported: ValueError: cannot load {Path(args.vocab).name}", stdin, sys.stdout.buffer)
        return
    port = Faulty(args)
    flaky = Flaky(args.flaky, args.flaky_log, args.flaky_seed, args.vocab) if args.flaky else None
    for line in _Logged(sys.stdin.buffer, args.requests_log):
        port.maybe_crash()
        req = json.loads(line)
        if flaky:
            flaky.before(req)
        print(json.dumps(port.answer(req)), flush=True)


if __name__ == "__main__":
    main()
