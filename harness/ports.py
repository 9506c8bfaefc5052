"""Ports: the things the conformance suite checks, behind one Protocol.

A port spec (the ``PORT`` variable of ``make conformance``) is one of
- ``harness``: the harness's own tokenizer (the default);
- ``llama.cpp``: the selected pin's llama.cpp as a port like any other: out of process,
  ``python -m reference serve``, over the same protocol and engine (batches, decode,
  pieces, restarts, reports), so its zero divergences prove all of that end to end;
- ``llama.cpp@<pin>``: another pin's llama.cpp, the same way;
- ``llama-tokenize``: the pinned CLI (encode only; what the cross-check compares);
- ``py:MODULE:FACTORY``: a Python adapter in process: ``FACTORY(vocab_path)`` returns an
  object with ``encode``/``decode``/``token_to_piece``/``n_vocab`` (keyword flags, as
  :class:`Port`), optionally ``unsupported`` (see the README); a method raising
  ``NotImplementedError`` is counted as unsupported for that case;
- anything else: a command speaking the JSON-lines protocol of
  ``python -m harness serve``, started once per worker and vocab, with
  ``{vocab}`` replaced by the ``.gguf`` path, e.g.
  ``java -jar myport.jar --vocab {vocab}``.

External ports are :class:`harness.protocol.client.ExternalPort` processes: one that
crashes, hangs (per-request timeout) or answers garbage raises :class:`PortError`
carrying its stderr, and is then closed.

>>> open_port("py:collections:Counter", "ab").most_common(1)
[('a', 1)]
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

from harness.errors import PortError
from harness.protocol.client import ExternalPort


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

    ``reference`` (the in-process reference for the same vocab) supplies ``n_vocab`` to
    external ports. No spec gives the oracle itself: a port compared with the very object
    that judges it could not diverge.
    """
    spec = spec.strip() or "harness"
    if spec == "harness":
        from harness.tokenizer import Tokenizer  # late: only this spec needs it
        return Tokenizer.from_gguf(vocab_path)
    if spec == "llama.cpp" or spec.startswith("llama.cpp@"):
        # A pin's llama.cpp in its own process (reference/serve.py); the selected pin by default.
        import sys

        from reference.lock import load
        pin = spec.partition("@")[2] or load().name
        return ExternalPort(f"{shlex.quote(sys.executable)} -m reference serve --pin {shlex.quote(pin)} "
                            "--vocab {vocab}", vocab_path, n_vocab=reference.n_vocab if reference else 0)
    if spec == "llama-tokenize":
        from reference.cli import CliReference
        return CliReference(vocab_path)
    if spec.startswith("py:"):
        return load_adapter(spec, vocab_path)
    n_vocab = reference.n_vocab if reference is not None else 0
    return ExternalPort(spec, vocab_path, n_vocab=n_vocab)
