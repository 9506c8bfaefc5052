"""One vocab under test, and the checks that turn two outputs into Findings.

Shared by the pytest suite (harness/conformance/suite) and ``python -m harness diff``
so both print the same diff for the same text.

>>> DivergenceFound([]).findings
[]
"""

from __future__ import annotations

import traceback
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from harness.conformance.diff import first_byte_divergence, first_divergence
from harness.conformance.ports import ExternalPort, Port, ReferencePort, load_reference, open_port
from harness.conformance.report import Finding, text_block
from harness.conformance.strategies import VocabTexts
from harness.errors import PortError, ReferenceUnavailable

CHECKS = ("golden", "encode", "decode", "crosscheck")
# GGUF tokenizer.ggml.token_type codes that llama.cpp caches as special texts
# (UNKNOWN=2, CONTROL=3, USER_DEFINED=4); used only to generate inputs.
_SPECIAL_TYPES = (2, 3, 4)
_BPE_MODELS = ("gpt2", "hybriddna", "whitespace")
MAX_OPEN_EXTERNAL = 3  # external port processes kept alive per worker


class DivergenceFound(AssertionError):
    """Raised by a check with the findings of one example; the message is the
    readable diff. Hypothesis re-raises it from the final, shrunk example."""

    def __init__(self, findings: list[Finding]):
        self.findings = findings
        super().__init__("\n\n".join(text_block(f) for f in findings))


class EncodeDivergence(DivergenceFound):
    """Ids differ (separate type so Hypothesis shrinks each bug on its own)."""


class DecodeDivergence(DivergenceFound):
    """Decoded bytes differ."""


def pre_type_label(path: str | Path) -> str:
    """``'QWEN2'`` for a BPE vocab, ``'n/a (llama)'`` for other models.

    >>> pre_type_label("vocabs/ggml-vocab-qwen2.gguf")   # doctest: +SKIP
    'QWEN2'
    """
    from harness.gguf import GGUFReader
    from harness.pretypes import pre_type_of
    r = GGUFReader(path)
    model = r.get("tokenizer.ggml.model")
    if model == "gemma4":
        return "GEMMA4"
    if model in _BPE_MODELS:
        return pre_type_of(r.get("tokenizer.ggml.pre"))
    return f"n/a ({model})"


class LazyPieces(Sequence):
    """Token texts by index, fetched from the reference on first use.

    Index ``i`` is token ``i``'s piece (special=True) if it is non-empty valid
    UTF-8, else the next such token's (so every index gives text). Lazy because
    rendering all 256k pieces of a vocab up front costs seconds per worker.
    """

    def __init__(self, reference: Port):
        self.reference, self.n = reference, reference.n_vocab
        self._cache: dict[int, str] = {}

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> str:
        if i not in self._cache:
            self._cache[i] = self._first_text(i)
        return self._cache[i]

    def _first_text(self, i: int) -> str:
        for k in range(i, i + 256):
            try:
                text = self.reference.token_to_piece(k % self.n, special=True).decode("utf-8")
            except UnicodeDecodeError:
                continue
            if text:
                return text
        return ""


def vocab_texts(path: str | Path, reference: Port) -> VocabTexts:
    """Token texts (lazy reference pieces) and special token texts of one vocab."""
    from harness.gguf import GGUFReader
    from harness.pretypes import EOG_TEXTS
    r = GGUFReader(path)
    tokens = r.get("tokenizer.ggml.tokens") or []
    types = r.get("tokenizer.ggml.token_type")
    specials = sorted({t.decode("utf-8", "replace") for i, t in enumerate(tokens)
                       if (types is not None and int(types[i]) in _SPECIAL_TYPES) or t in EOG_TEXTS})
    from harness.conformance.vocabgen import vocab_adversarial
    return VocabTexts(LazyPieces(reference), tuple(specials), vocab_adversarial(path, reference))


@dataclass
class VocabUnderTest:
    """A vocab with its reference and (lazily) the port under test."""

    name: str
    path: Path
    port_spec: str
    reference: ReferencePort
    session: "Session" = field(repr=False)

    @cached_property
    def pre_type(self) -> str:
        return pre_type_label(self.path)

    @cached_property
    def texts(self) -> VocabTexts:
        return vocab_texts(self.path, self.reference)

    @property
    def port(self) -> Port:
        """The port, opened once; a PortError is remembered and re-raised."""
        return self.session.port(self)

    def pieces(self, ids) -> dict[int, bytes]:
        """Reference pieces (special=True) of the in-range ids."""
        return {i: self.reference.token_to_piece(i, special=True)
                for i in set(ids) if 0 <= i < self.reference.n_vocab}

    def finding(self, check: str, text: str, add_special: bool, parse_special: bool,
                ref_ids, port_ids, port_label: str | None = None) -> Finding | None:
        """Compare two id lists for ``text``; a Finding with the window's pieces or None."""
        data = text.encode("utf-8")
        quick = first_divergence(ref_ids, port_ids)
        if quick is None:
            return None
        head = self._added_head(text, add_special, parse_special, ref_ids)
        # Tokens add_special put in front (BOS, CLS) consume no text: give them no piece.
        prefix = [b"" if k < head else self.reference.token_to_piece(i, special=True)
                  for k, i in enumerate(ref_ids[:quick.index])]
        div = first_divergence(ref_ids, port_ids, text=data, reference_pieces=prefix)
        ref_w, port_w = div.window()
        return Finding(check, self.name, self.pre_type, add_special, parse_special, text, div,
                       port_label or self.port_spec, self.pieces(ref_w + port_w))

    def _added_head(self, text: str, add_special: bool, parse_special: bool, ref_ids) -> int:
        """How many leading ids add_special added (0 if ``ref_ids`` are not the reference's)."""
        if not add_special:
            return 0
        body = self.reference.encode(text, add_special=False, parse_special=parse_special)
        for head in range(len(ref_ids) - len(body) + 1):
            if list(ref_ids[head:head + len(body)]) == body:
                return head
        return 0

    def check_encode(self, text: str, add_special: bool, parse_special: bool) -> Finding | None:
        """Port vs reference ids for one text and flag combination."""
        ref_ids = self.reference.encode(text, add_special=add_special, parse_special=parse_special)
        port_ids = self.call_port("encode", text, add_special=add_special, parse_special=parse_special)
        return self.finding("encode", text, add_special, parse_special, ref_ids, list(port_ids))

    def call_port(self, method: str, arg, **flags):
        """``port.<method>(arg, **flags)``; an in-process port's exception becomes a
        PortError naming the input (traceback kept as its stderr and cause)."""
        try:
            return getattr(self.port, method)(arg, **flags)
        except PortError:
            raise
        except Exception as e:
            raise PortError(f"port {self.port_spec!r} raised {type(e).__name__}: {e} in {method}"
                            f"({arg!r}, {flags}) on vocab {self.name}",
                            stderr=traceback.format_exc()) from e

    def check_decode(self, text: str, add_special: bool, parse_special: bool) -> Finding | None:
        """Port's decode of the reference's ids vs the reference's decode, byte for byte.

        Decode flags follow the encode flags: remove_special=add_special,
        unparse_special=parse_special.
        """
        ids = self.reference.encode(text, add_special=add_special, parse_special=parse_special)
        ref = self.reference.decode(ids, remove_special=add_special, unparse_special=parse_special)
        got = self.call_port("decode", ids, remove_special=add_special, unparse_special=parse_special)
        div = first_byte_divergence(ref, bytes(got))
        if div is None:
            return None
        return Finding("decode", self.name, self.pre_type, add_special, parse_special, text, div,
                       self.port_spec, {}, tuple(ids))


class Session:
    """Per-process cache: references, vocabs and ports (one of each per vocab)."""

    def __init__(self, port_spec: str = "harness"):
        self.port_spec = port_spec.strip() or "harness"
        self._vocabs: dict[str, VocabUnderTest] = {}
        self._ports: OrderedDict[str, Port] = OrderedDict()
        self._errors: dict[str, PortError] = {}

    def vocab(self, name: str) -> VocabUnderTest:
        """The vocab by pinned name (ReferenceUnavailable if not fetched/built)."""
        if name not in self._vocabs:
            from reference.vocabs import vocab_path
            path = vocab_path(name)
            self._vocabs[name] = VocabUnderTest(name, path, self.port_spec, load_reference(path), self)
        return self._vocabs[name]

    def port(self, vut: VocabUnderTest) -> Port:
        """Open (or reuse) the port for one vocab; remember a PortError."""
        if vut.name in self._errors:
            err = self._errors[vut.name]
            raise PortError(f"port for {vut.name} is down after an earlier error:\n{err}",
                            stderr=err.stderr)
        if vut.name not in self._ports:
            try:
                self._ports[vut.name] = open_port(self.port_spec, vut.path, reference=vut.reference)
            except ReferenceUnavailable:
                raise
            except Exception as e:
                # A port that cannot load a vocab is that vocab's port error, reported with the run.
                err = e if isinstance(e, PortError) else PortError(
                    f"port {self.port_spec!r} could not open {vut.path}: {type(e).__name__}: {e}",
                    stderr=traceback.format_exc())
                self._errors[vut.name] = err
                raise err from (None if err is e else e)
            self._evict()
        self._ports.move_to_end(vut.name)
        port = self._ports[vut.name]
        if isinstance(port, ExternalPort) and port.dead is not None:
            self._errors[vut.name] = port.dead
        return port

    def _evict(self) -> None:
        # External ports are processes: keep only a few alive per worker.
        external = [k for k, p in self._ports.items() if isinstance(p, ExternalPort)]
        for name in external[:-MAX_OPEN_EXTERNAL]:
            self._ports.pop(name).close()

    def close(self) -> None:
        """Stop every external port process."""
        for p in self._ports.values():
            if isinstance(p, ExternalPort):
                p.close()
        self._ports.clear()
