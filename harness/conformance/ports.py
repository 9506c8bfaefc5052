"""Ports: the things the conformance suite checks, behind one Protocol.

A port spec (the ``PORT`` variable of ``make conformance``) is one of
- ``harness``: the harness's own tokenizer (the default);
- ``llama.cpp``: llama.cpp itself, in process (must give zero divergences);
- ``llama.cpp@<pin>``: another pin's llama.cpp, out of process (``python -m reference serve``);
- ``llama-tokenize``: the pinned CLI (encode only; what the cross-check compares);
- ``py:MODULE:FACTORY``: a Python adapter in process: ``FACTORY(vocab_path)`` returns an
  object with ``encode``/``decode``/``token_to_piece``/``n_vocab`` (keyword flags, as
  :class:`Port`), optionally ``unsupported`` (see the README); a method raising
  ``NotImplementedError`` is counted as unsupported for that case;
- anything else: a command speaking the JSON-lines protocol of
  ``python -m harness serve``, started once per worker and vocab, with
  ``{vocab}`` replaced by the ``.gguf`` path, e.g.
  ``java -jar myport.jar --vocab {vocab}``.

An external port that crashes, hangs (per-request timeout) or answers
garbage raises :class:`PortError` carrying its stderr, and is then closed.

>>> split_command("myport --vocab {vocab}", "/v/x.gguf")
['myport', '--vocab', '/v/x.gguf']
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

from harness.conformance.channel import MAX_LINE, ChannelError, LineChannel
from harness.errors import PortError, PortRequestError, PortUnsupported

DEFAULT_TIMEOUT = float(os.environ.get("PORT_TIMEOUT", "30"))


@runtime_checkable
class Port(Protocol):
    """What a port offers: harness.tokenizer.Tokenizer's API.

    >>> isinstance(object(), Port)
    False
    """

    def encode(self, text: str, *, add_special: bool = False,
               parse_special: bool = False) -> list[int]: ...

    def decode(self, ids: Sequence[int], *, remove_special: bool = False,
               unparse_special: bool = False) -> bytes: ...

    def token_to_piece(self, id: int, *, special: bool = False) -> bytes: ...

    @property
    def n_vocab(self) -> int: ...


class ReferencePort:
    """reference.inproc.InProcessReference (positional flags) as a Port.

    >>> class R:
    ...     n_vocab = 3
    ...     def encode(self, t, a, p): return [len(t), a, p]
    >>> ReferencePort(R()).encode("ab", add_special=True)
    [2, True, False]
    """

    def __init__(self, reference):
        self.reference = reference

    def encode(self, text, *, add_special=False, parse_special=False):
        return self.reference.encode(text, add_special, parse_special)

    def decode(self, ids, *, remove_special=False, unparse_special=False):
        return self.reference.decode(list(ids), remove_special, unparse_special)

    def token_to_piece(self, id, *, special=False):
        return self.reference.token_to_piece(id, special)

    @property
    def n_vocab(self):
        return self.reference.n_vocab


def load_reference(path: str | Path) -> ReferencePort:
    """The in-process llama.cpp reference for one vocab file, as a Port."""
    from reference.inproc import InProcessReference  # late: needs libllama
    return ReferencePort(InProcessReference.load(path))


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
                 timeout: float = DEFAULT_TIMEOUT, max_line: int = MAX_LINE):
        self.argv = split_command(command, vocab_path)
        self.command, self.timeout, self._n_vocab = command, timeout, n_vocab
        self._stderr = tempfile.TemporaryFile()  # a file, not a pipe: a chatty port cannot block
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self._stderr)
        except OSError as e:
            raise PortError(f"cannot start port {self.argv!r}: {e}. Check the PORT command.") from e
        # Non-blocking pipes under one deadline per request: see harness.conformance.channel.
        self._channel = LineChannel(self.proc.stdin, self.proc.stdout, max_line=max_line)
        self.dead: PortError | None = None
        self._info: dict | None = None

    def stderr(self) -> str:
        """Everything the port wrote to stderr so far."""
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def _fail(self, what: str, request: dict) -> PortError:
        if self.proc.poll() is None:
            self.proc.kill()  # a port that misbehaved once is not trusted again
            self.proc.wait()
        req = json.dumps(request, ensure_ascii=True)
        err = PortError(f"port {self.command!r} {what} on request {req[:500]}", stderr=self.stderr())
        self.dead = err
        return err

    def _answer(self, request: dict, response) -> dict:
        """``response`` checked: an ``{"error"}`` answer raises PortRequestError/PortUnsupported."""
        if not isinstance(response, dict):
            raise self._fail(f"answered {str(response)[:300]}, not a JSON object", request)
        if "error" in response:
            message = str(response["error"])
            req = json.dumps(request, ensure_ascii=True)[:300]
            if message.lower().startswith("unsupported"):
                raise PortUnsupported(f"port {self.command!r} cannot express {req}: {message[:300]}")
            raise PortRequestError(f"port {self.command!r} answered error {message[:300]!r} to {req}",
                                   stderr=self.stderr())
        return response

    @property
    def batches(self) -> bool:
        """Whether ``info`` says the port answers ``{"op":"batch","requests":[...]}``."""
        return self.info().get("batch") is True

    def request_many(self, requests: list[dict], size: int = 512) -> list:
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
            except PortRequestError:
                self._info = {}
        return self._info

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
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    raise self._fail(f"{e} but is still running", request) from None
                raise self._fail(f"crashed (exit code {self.proc.returncode}): {e}", request) from None
            raise self._fail(str(e), request) from None
        try:
            response = json.loads(line)
        except ValueError:
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
            return bytes.fromhex(value)
        except (TypeError, ValueError):
            raise self._fail(f"answered bad bytes_hex {str(value)[:300]!r}", req) from None

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
        return ids

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
        """Stop the process (idempotent)."""
        self._channel.close()
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def load_adapter(spec: str, vocab_path: str | Path) -> Port:
    """``py:MODULE:FACTORY`` -> ``FACTORY(vocab_path)``, imported from the current directory too.

    >>> load_adapter("py:collections:Counter", "ab").most_common(1)
    [('a', 1)]
    """
    import importlib
    import sys
    parts = spec.removeprefix("py:").split(":")
    if len(parts) != 2 or not all(parts):
        raise PortError(f"PORT={spec!r}: a Python adapter is py:MODULE:FACTORY, e.g. py:myport.adapter:load")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` would: the port's own repo is importable
    try:
        factory = getattr(importlib.import_module(parts[0]), parts[1])
    except (ImportError, AttributeError) as e:
        raise PortError(f"PORT={spec!r}: cannot import {parts[1]} from {parts[0]}: {e}") from e
    return factory(str(vocab_path))


def open_port(spec: str, vocab_path: str | Path, *, reference: Port | None = None) -> Port:
    """The port named by ``spec`` for one vocab file (see the module docstring).

    ``reference`` (the in-process reference for the same vocab) is reused for
    ``llama.cpp`` and supplies ``n_vocab`` to external ports.
    """
    spec = spec.strip() or "harness"
    if spec == "harness":
        from harness.tokenizer import Tokenizer  # late: only this spec needs it
        return Tokenizer.from_gguf(vocab_path)
    if spec == "llama.cpp":
        return reference if reference is not None else load_reference(vocab_path)
    if spec.startswith("llama.cpp@"):  # another pin's llama.cpp, in its own process (reference/serve.py)
        import sys
        pin = spec.removeprefix("llama.cpp@")
        return ExternalPort(f"{shlex.quote(sys.executable)} -m reference serve --pin {shlex.quote(pin)} "
                            "--vocab {vocab}", vocab_path, n_vocab=reference.n_vocab if reference else 0)
    if spec == "llama-tokenize":
        from reference.cli import CliReference
        return ReferencePort(CliReference(vocab_path))
    if spec.startswith("py:"):
        return load_adapter(spec, vocab_path)
    n_vocab = reference.n_vocab if reference is not None else 0
    return ExternalPort(spec, vocab_path, n_vocab=n_vocab)
