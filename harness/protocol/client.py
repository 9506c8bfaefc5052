"""The client side of the port protocol: a port process, one request line in, one answer out.

:class:`ExternalPort` starts a port command (``{vocab}`` replaced by the ``.gguf``
path), speaks the JSON-lines protocol (README, "The port protocol"; the server side is
:mod:`harness.protocol.server`) over a :class:`~harness.protocol.channel.LineChannel`
(non-blocking pipes under one deadline per request), and sorts what comes back:

- an ``{"error": "unsupported: ..."}`` answer raises :class:`PortUnsupported`;
- any other ``{"error"}`` answer raises :class:`PortRequestError`, and the port keeps serving;
- a crash, a hang (``PORT_TIMEOUT``, default 30 s per request) or garbage raises
  :class:`PortError` carrying the port's stderr, and the port is down (closed).

>>> split_command("myport --vocab {vocab}", "/v/x.gguf")
['myport', '--vocab', '/v/x.gguf']
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import tempfile
from pathlib import Path

from harness.errors import PortError, PortRequestError, PortUnsupported
from harness.protocol.channel import MAX_LINE, ChannelError, LineChannel
from harness.protocol.chat import BadChatAnswer, ChatAnswer, ChatIdOutOfRange

DEFAULT_TIMEOUT = 30.0  # seconds per request, unless $PORT_TIMEOUT says otherwise


def port_timeout() -> float:
    """``$PORT_TIMEOUT`` (read when a port starts, so a run in process honours it), else 30 s.

    >>> port_timeout() > 0
    True
    """
    return float(os.environ.get("PORT_TIMEOUT") or DEFAULT_TIMEOUT)
#: Requests sent in one ``batch`` line at most.
BATCH_SIZE = 512
#: The port's stderr kept in an error: its last bytes (a port may log without end).
STDERR_TAIL = 64 * 1024


def split_command(command: str, vocab_path: str | Path) -> list[str]:
    """argv of an external port: shell words, ``{vocab}`` -> the .gguf path.

    Replacement happens after splitting so a path with spaces stays one word.

    >>> split_command("python -m harness serve --vocab={vocab}", "a b.gguf")[-1]
    '--vocab=a b.gguf'
    """
    argv = shlex.split(command)
    if not argv:
        raise PortError("PORT is empty: give 'harness', 'llama.cpp' or a command "
                        "such as 'java -jar myport.jar --vocab {vocab}'")
    return [a.replace("{vocab}", str(vocab_path)) for a in argv]


class ExternalPort:
    """A subprocess speaking the ``python -m harness serve`` JSON-lines protocol.

    One request line in, one response line out, in order. ``n_vocab`` is not
    part of the protocol; the caller supplies it (from the reference).
    """

    def __init__(self, command: str, vocab_path: str | Path, *, n_vocab: int = 0,
                 timeout: float | None = None, max_line: int = MAX_LINE):
        self.argv = split_command(command, vocab_path)
        self.command, self._n_vocab = command, n_vocab
        self.timeout = port_timeout() if timeout is None else timeout
        self._stderr = tempfile.TemporaryFile()  # a file, not a pipe: a chatty port cannot block
        try:
            self.proc = self._spawn(self.argv, self._stderr)
        except OSError as e:
            raise PortError(f"cannot start port {self.argv!r}: {e}. Check the PORT command.") from e
        # Non-blocking pipes under one deadline per request: see harness.protocol.channel.
        self._channel = LineChannel(self.proc.stdin, self.proc.stdout, max_line=max_line)
        self.dead: PortError | None = None
        self._closed, self._last_stderr = False, ""
        self.answered = 0  # answer lines read back: how much work the port did before it went down
        self.death_noted = False  # the engine's Session has noted how it went down
        self._info: dict | None = None
        self._info_refusal = ""  # the ``unsupported: ...`` answer to info, if it got one
        self._refused: str | None = None

    def _spawn(self, argv: list[str], stderr) -> subprocess.Popen:
        """Start the port process: pipes for stdin and stdout, ``stderr`` a file, in a session
        of its own, so :meth:`_kill` stops the children it forked too (the port fuzzer,
        :mod:`harness.fuzz.ports`, forks its scripted ports here instead)."""
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                start_new_session=True)

    def stderr(self) -> str:
        """What the port wrote to stderr so far: its last :data:`STDERR_TAIL` bytes (read at
        an offset: the port's own writes share the file's position)."""
        if self._stderr.closed:
            return self._last_stderr
        fd = self._stderr.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - STDERR_TAIL)
        text = os.pread(fd, size - start, start).decode("utf-8", "replace")
        return f"[first {start} bytes of stderr left out]\n{text}" if start else text

    def _kill(self) -> None:
        """Kill the port and whatever it forked (its process group), and reap it."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:  # gone already, or not a group leader
            pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def _fail(self, what: str, request: dict) -> PortError:
        self._kill()  # a port that misbehaved once is not trusted again
        req = json.dumps(request, ensure_ascii=True)
        err = PortError(f"port {self.command!r} {what} on request {req[:500]}", stderr=self.stderr())
        self.dead = err
        return err

    def _answer(self, request: dict, response) -> dict:
        """``response`` checked: an ``{"error"}`` answer raises PortRequestError/PortUnsupported."""
        if not isinstance(response, dict):
            raise self._fail(f"answered {str(response)[:300]}, not a JSON object", request)
        if "error" in response:
            # backslashreplace: a lone surrogate ("\\ud800" in JSON) cannot be written as UTF-8
            message = str(response["error"]).encode("utf-8", "backslashreplace").decode("utf-8")
            req = json.dumps(request, ensure_ascii=True)[:300]
            if message.lower().startswith("unsupported"):
                err = PortUnsupported(f"port {self.command!r} cannot express {req}: {message[:300]}")
                err.answer = message  # the port's own words, whatever the request (ExternalPort.refused)
                raise err
            raise PortRequestError(f"port {self.command!r} answered error {message[:300]!r} to {req}",
                                   stderr=self.stderr())
        return response

    @property
    def batches(self) -> bool:
        """Whether ``info`` says the port answers ``{"op":"batch","requests":[...]}``."""
        return self.info().get("batch") is True

    def request_many(self, requests: list[dict], size: int = BATCH_SIZE) -> list:
        """Answers to ``requests`` in order, through the batch op when the port has it.

        Each item is the response object, or the PortRequestError (PortUnsupported)
        its ``{"error"}`` answer raises; a crash, hang or garbage raises PortError.
        """
        if not self.batches:
            return [self._or_error(lambda r=r: self.request(r)) for r in requests]
        out = []
        for k in range(0, len(requests), size):
            chunk = requests[k:k + size]
            batch = {"op": "batch", "requests": chunk}
            answers = self.request(batch).get("responses")
            if not isinstance(answers, list) or len(answers) != len(chunk):
                raise self._fail(f"answered a batch of {len(chunk)} with "
                                 f"{len(answers) if isinstance(answers, list) else repr(answers)[:100]} "
                                 "responses", {"op": "batch", "requests": chunk[:2]})
            out += [self._or_error(lambda r=r, a=a: self._answer(r, a)) for r, a in zip(chunk, answers)]
        return out

    @staticmethod
    def _or_error(call):
        try:
            return call()
        except PortRequestError as e:
            return e

    def request(self, request: dict) -> dict:
        """Send one request, return the parsed response object.

        An ``{"error": ...}`` answer raises :class:`PortRequestError` (or
        :class:`PortUnsupported` when it starts with ``unsupported``) and the port
        keeps running; a crash, hang or garbage raises :class:`PortError` and the
        port is down.
        """
        return self._answer(request, self.exchange(request))

    def info(self) -> dict:
        """The port's ``info`` answer (``{}`` if it answers info with an error), asked once."""
        if self._info is None:
            try:
                self._info = self.request({"op": "info"})
            except PortUnsupported as e:
                self._info, self._info_refusal = {}, e.answer
            except PortRequestError:
                self._info = {}
        return self._info

    @property
    def refused(self) -> str:
        """Why the port serves nothing of this vocab, or ``""``.

        A port that cannot load a vocab answers every request with one ``unsupported: <why>``
        (:func:`harness.protocol.server.refuse`). When ``info``, an encode, a decode and a piece
        request all get that same answer, the port has said it of every op: each case of the
        vocab is unsupported with it, and none is sent (a Python package took 50 to 70 s per
        piece cell to answer a 250,000-token vocab's ids one by one with its load error). A
        port that answers any of the four, or answers them differently, is asked as usual.
        """
        if self._refused is None:
            self._refused = self._same_refusal()
        return self._refused

    def _same_refusal(self) -> str:
        self.info()
        if not self._info_refusal:
            return ""
        for request in ({"op": "encode", "text": "", "add_special": False, "parse_special": False},
                        {"op": "decode", "ids": [], "remove_special": False, "unparse_special": False},
                        {"op": "piece", "id": 0, "special": False}):
            try:
                self.request(request)
            except PortUnsupported as e:
                if e.answer == self._info_refusal:
                    continue
            except PortRequestError:
                pass
            return ""
        return (f"port {self.command!r} cannot load this vocab (it answers info, encode, decode and "
                f"piece alike): {self._info_refusal[:300]}")

    def exchange(self, request: dict) -> dict:
        """Send one request, return the response object as it is (it may hold
        ``"error"``); PortError when none comes, or it is not a JSON object."""
        if self.dead is not None:
            raise PortError(f"port {self.command!r} is down after an earlier error:\n{self.dead}",
                            stderr=self.dead.stderr)
        try:
            line = self._channel.exchange(json.dumps(request, ensure_ascii=True).encode() + b"\n",
                                          self.timeout)
        except ChannelError as e:
            if e.kind in ("eof", "closed-stdin"):
                try:  # within the request's own deadline: a port may close stdout and run on
                    self.proc.wait(timeout=min(5.0, self.timeout))
                except subprocess.TimeoutExpired:
                    raise self._fail(f"{e} but is still running", request) from None
                raise self._fail(f"crashed (exit code {self.proc.returncode}): {e}", request) from None
            raise self._fail(str(e), request) from None
        self.answered += 1
        try:  # UTF-8 only: json.loads would take UTF-16 and UTF-32 bytes, and encoded surrogates
            response = json.loads(line.decode("utf-8"))
        except (ValueError, RecursionError):  # RecursionError: JSON nested too deep
            raise self._fail(f"answered garbage {line[:200]!r}", request) from None
        if not isinstance(response, dict):
            raise self._fail(f"answered {str(response)[:300]}, not a JSON object", request)
        return response

    def _field(self, response: dict, key: str, request: dict):
        if key not in response:
            raise self._fail(f"answered without {key!r}: {str(response)[:300]}", request)
        return response[key]

    def encode(self, text, *, add_special=False, parse_special=False):
        return self._ids({"op": "encode", "text": text, "add_special": add_special,
                          "parse_special": parse_special})

    def _bytes(self, req: dict, response: dict | None = None) -> bytes:
        value = self._field(self.request(req) if response is None else response, "bytes_hex", req)
        try:
            out = bytes.fromhex(value)
        except (TypeError, ValueError):
            out = None
        # fromhex skips whitespace: two digits per byte read means none was skipped
        if out is None or 2 * len(out) != len(value):
            raise self._fail(f"answered bad bytes_hex {str(value)[:300]!r} (pairs of hex digits expected)", req)
        return out

    def decode(self, ids, *, remove_special=False, unparse_special=False):
        return self._bytes({"op": "decode", "ids": list(ids), "remove_special": remove_special,
                            "unparse_special": unparse_special})

    def token_to_piece(self, id, *, special=False):
        return self._bytes({"op": "piece", "id": id, "special": special})

    def many(self, op: str, inputs: list, **flags) -> list:
        """``encode`` (texts -> ids) or ``decode`` (id lists -> bytes) for every input, or
        the PortRequestError each got; batched when the port can."""
        key = {"encode": "text", "decode": "ids"}[op]
        reqs = [{"op": op, key: (x if op == "encode" else list(x)), **flags} for x in inputs]
        parse = self._ids if op == "encode" else self._bytes
        return [a if isinstance(a, Exception) else parse(r, a) for r, a in zip(reqs, self.request_many(reqs))]

    def _ids(self, req: dict, response: dict | None = None) -> list[int]:
        ids = self._field(self.request(req) if response is None else response, "ids", req)
        if not isinstance(ids, list) or not all(type(i) is int for i in ids):
            raise self._fail(f"answered non-integer ids {str(ids)[:300]}", req)
        n = self._n_vocab
        bad = next((i for i in ids if not 0 <= i < n), None) if n else None
        if bad is not None:
            # no token has that id: not an answer, whatever the text; but the port answered in
            # step (a well-formed line for this request), so it is this request's port error and
            # the port keeps serving (a port that emits -1 for an unknown piece is not down)
            req_text = json.dumps(req, ensure_ascii=True)[:300]
            raise PortRequestError(f"port {self.command!r} answered id {bad} out of range [0, {n}) in ids "
                                   f"{str(ids)[:200]} to {req_text}", stderr=self.stderr())
        return ids

    def chat(self, template, messages, *, tools=None, add_generation_prompt=False, kwargs=None,
             builtin=False) -> ChatAnswer:
        """The ``chat`` op (:mod:`harness.protocol.chat`): the port's rendering of a conversation
        and, if it gives them, its ids. ``unsupported`` raises PortUnsupported; an answer of
        no protocol shape is garbage (the port is down); an id out of range is this
        request's port error."""
        req = {"op": "chat", "template": template, "messages": messages, "tools": tools,
               "add_generation_prompt": add_generation_prompt, "kwargs": kwargs or {}, "builtin": builtin}
        response = self.request(req)
        try:
            return ChatAnswer.from_json(response, self._n_vocab)
        except ChatIdOutOfRange as e:  # answered in step: the request's error, the port serves on
            raise PortRequestError(f"port {self.command!r} {e} to {json.dumps(req, ensure_ascii=True)[:300]}",
                                   stderr=self.stderr()) from None
        except BadChatAnswer as e:
            raise self._fail(f"answered a bad chat answer: {e}", req) from None

    def pieces(self, ids, *, special=False) -> list:
        """Each id's piece (bytes), or the PortRequestError its request got; batched
        when the port can."""
        reqs = [{"op": "piece", "id": i, "special": special} for i in ids]
        return [a if isinstance(a, Exception) else self._bytes(r, a)
                for r, a in zip(reqs, self.request_many(reqs))]

    @property
    def n_vocab(self):
        return self._n_vocab

    @property
    def unsupported(self) -> frozenset[str]:
        """What ``info`` declares the port cannot express (``VocabUnderTest.unsupported_reason``)."""
        declared = self.info().get("unsupported", [])
        return frozenset(str(x).lower() for x in declared) if isinstance(declared, list) else frozenset()

    def close(self) -> None:
        """Stop the process and release its pipes and stderr file (idempotent; :meth:`stderr`
        still answers what it had)."""
        if self._closed:
            return
        self._closed = True
        self._channel.close()
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()  # a child it forked may still hold the pipes
        self._last_stderr = self.stderr()
        for f in (self.proc.stdin, self.proc.stdout, self._stderr):  # not left to the collector
            try:
                f.close()
            except OSError:
                pass
