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

from harness.conformance.diff import first_byte_divergence, first_divergence, token_spans
from harness.conformance.ports import ExternalPort, Port, ReferencePort, load_reference, open_port
from harness.conformance.report import BYTE_CHECKS, Finding, text_block
from harness.conformance.strategies import VocabTexts
from harness.errors import PortError, PortRequestError, PortUnsupported, ReferenceUnavailable

CHECKS = ("golden", "known", "encode", "decode", "piece", "crosscheck")
# GGUF tokenizer.ggml.token_type codes that llama.cpp caches as special texts
# (UNKNOWN=2, CONTROL=3, USER_DEFINED=4); used only to generate inputs.
_SPECIAL_TYPES = (2, 3, 4)
_BPE_MODELS = ("gpt2", "hybriddna", "whitespace")
MAX_OPEN_EXTERNAL = 3  # external port processes kept alive per worker
MAX_RESTARTS = 3  # times a crashed or hung port is started again, per vocab and worker


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
    from harness.tokenizer.gguf import GGUFReader
    from harness.tokenizer.pretypes import pre_type_of
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
    from harness.tokenizer.gguf import GGUFReader
    from harness.tokenizer.pretypes import EOG_TEXTS
    r = GGUFReader(path)
    tokens = r.get("tokenizer.ggml.tokens") or []
    types = r.get("tokenizer.ggml.token_type")
    specials = sorted({t.decode("utf-8", "replace") for i, t in enumerate(tokens)
                       if (types is not None and int(types[i]) in _SPECIAL_TYPES) or t in EOG_TEXTS})
    from harness.conformance.vocabgen import vocab_adversarial
    return VocabTexts(LazyPieces(reference), tuple(specials), vocab_adversarial(path, reference))


_TOKEN_KINDS = {1: "normal", 2: "unknown", 3: "control", 4: "user_defined", 5: "unused", 6: "byte"}


def char_class(ch: str) -> str:
    """llama.cpp's own class of one character (its Unicode 15.1 flag table), for
    divergence signatures.

    >>> [char_class(c) for c in "a7 \\n\\u0301\\u00a0-"]
    ['letter', 'digit', 'space', 'newline', 'mark', 'space', 'punct']
    """
    from harness.tokenizer import unicode as U
    if ch in "\r\n":
        return "newline"
    flags = U.cpt_flags(ord(ch))
    if flags & U.WHITESPACE:
        return "space"
    for bit, name in ((U.LETTER, "letter"), (U.NUMBER, "digit"), (U.PUNCTUATION, "punct"),
                      (U.SYMBOL, "symbol"), (U.ACCENT_MARK, "mark"), (U.CONTROL, "control"),
                      (U.SEPARATOR, "separator")):
        if flags & bit:
            return name
    return "unassigned"


def _class_at(data: bytes, offset: int) -> str:
    """Class of the character at (or containing) byte ``offset``; 'end' past the end,
    'invalid-utf8' where the bytes are not UTF-8."""
    if offset >= len(data):
        return "end"
    while offset > 0 and (data[offset] & 0xC0) == 0x80:
        offset -= 1
    for n in (1, 2, 3, 4):
        try:
            return char_class(data[offset:offset + n].decode("utf-8"))
        except UnicodeDecodeError:
            continue
    return "invalid-utf8"


def _char_len(data: bytes, i: int) -> int:
    """Bytes of the UTF-8 character at ``i`` (1 for an invalid byte)."""
    for n in (1, 2, 3, 4):
        try:
            data[i:i + n].decode("utf-8")
            return n
        except UnicodeDecodeError:
            continue
    return 1


def _edit(ref: bytes, port: bytes, i: int) -> str:
    """How ``port`` departs from ``ref`` at byte ``i``: drops, adds or replaces a character.

    >>> _edit(b" ab", b"ab", 0), _edit(b"ab", b"a b", 1), _edit(b"a\\xe3", "a\\ufffd".encode(), 1)
    ('drops space', 'adds space', 'replaces invalid-utf8 with symbol')
    """
    r = _char_len(ref, i) if i < len(ref) else 0
    p = _char_len(port, i) if i < len(port) else 0
    tail = 8
    if r and ref[i + r:i + r + tail] == port[i:i + tail]:
        return f"drops {_class_at(ref, i)}"
    if p and port[i + p:i + p + tail] == ref[i:i + tail]:
        return f"adds {_class_at(port, i)}"
    return f"replaces {_class_at(ref, i)} with {_class_at(port, i)}"


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

    @cached_property
    def token_types(self):
        """``tokenizer.ggml.token_type`` (None if the vocab has none)."""
        from harness.tokenizer.gguf import GGUFReader
        return GGUFReader(self.path).get("tokenizer.ggml.token_type")

    def token_kind(self, id: int) -> str:
        """'normal', 'control', 'byte', ... of one id ('out-of-range' if it is not in the vocab)."""
        if not 0 <= id < self.reference.n_vocab:
            return "out-of-range"
        types = self.token_types
        return _TOKEN_KINDS.get(int(types[id]), "undefined") if types is not None else "normal"

    @property
    def port(self) -> Port:
        """The port, opened once; a PortError is remembered and re-raised."""
        return self.session.port(self)

    # --- the port, called with its errors sorted ------------------------------------------
    def unsupported_reason(self, op: str, **flags: bool) -> str:
        """What the port declares it cannot express for this op and flags ('' if nothing).

        A port declares it with ``unsupported``: ``info``'s list for external ports,
        an attribute for Python adapters; entries are op names (``"decode"``) or
        ``"<flag>=<true|false>"`` (``"parse_special=true"``).
        """
        declared = getattr(self.port, "unsupported", ()) or ()
        wanted = [op] + [f"{k}={'true' if v else 'false'}" for k, v in flags.items()]
        hit = [w for w in wanted if w in declared]
        return f"port declares unsupported: {', '.join(hit)}" if hit else ""

    def call_port(self, method: str, arg, **flags):
        """``port.<method>(arg, **flags)``. An in-process port's NotImplementedError is
        :class:`PortUnsupported`; any other exception becomes a PortError naming the
        input (traceback kept as its stderr and cause)."""
        op = {"token_to_piece": "piece"}.get(method, method)
        reason = self.unsupported_reason(op, **flags)
        if reason:
            raise PortUnsupported(reason)
        try:
            return getattr(self.port, method)(arg, **flags)
        except PortError:
            raise
        except NotImplementedError as e:
            raise PortUnsupported(f"port {self.port_spec!r} cannot {method} with {flags}: {e}") from e
        except Exception as e:
            raise PortRequestError(f"port {self.port_spec!r} raised {type(e).__name__}: {e} in {method}"
                                   f"({arg!r}, {flags}) on vocab {self.name}",
                                   stderr=traceback.format_exc()) from e

    def pieces(self, ids) -> dict[int, bytes]:
        """Reference pieces (special=True) of the in-range ids."""
        return {i: self.reference.token_to_piece(i, special=True)
                for i in set(ids) if 0 <= i < self.reference.n_vocab}

    def port_pieces(self, ids) -> dict[int, bytes]:
        """The port's own pieces (special=True) of ``ids``; ids it cannot give are left out
        (the report then labels the reference's piece as such)."""
        out = {}
        for i in set(ids):
            try:
                out[i] = bytes(self.call_port("token_to_piece", i, special=True))
            except (PortError, TypeError, ValueError):
                continue
        return out

    # --- findings -----------------------------------------------------------------------
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
        own = self.port_pieces(port_w) if port_label is None else {}
        return Finding(check, self.name, self.pre_type, add_special, parse_special, text, div,
                       port_label or self.port_spec, self.pieces(ref_w + port_w), port_pieces=own)

    def _added_head(self, text: str, add_special: bool, parse_special: bool, ref_ids) -> int:
        """How many leading ids add_special added (0 if ``ref_ids`` are not the reference's)."""
        if not add_special:
            return 0
        body = self.reference.encode(text, add_special=False, parse_special=parse_special)
        for head in range(len(ref_ids) - len(body) + 1):
            if list(ref_ids[head:head + len(body)]) == body:
                return head
        return 0

    def signature(self, f: Finding) -> tuple:
        """A stand-in for a divergence's cause, to tell distinct bugs apart.

        encode, golden, known, crosscheck: the class (llama.cpp's flags: letter, digit,
        space, newline, punct, symbol, mark, control, unassigned; ``/non-ascii`` marked)
        of the character where the streams part, or ``special`` where a special token's
        text starts there under parse_special. decode: the kind of token (normal,
        control, byte, ...) whose output holds the first divergent byte, and the edit
        there (``drops space``, ``adds letter``, ``replaces invalid-utf8 with symbol``).
        piece: the kind of token. Cases with one signature count as one cause: the
        first is shrunk and reported, the rest are counted.
        """
        d = f.divergence
        if f.check in ("decode", "piece"):
            kind = self.token_kind(self._token_at(f.decoded_ids, d.index, bool(f.unparse_special)))
            if f.check == "piece":
                return (f.check, kind)
            return (f.check, kind, _edit(bytes(d.reference_ids), bytes(d.port_ids), d.index))
        data = f.text.encode("utf-8", "surrogatepass")
        at = data[d.byte_offset:]
        if f.parse_special and any(at.startswith(s.encode("utf-8", "surrogatepass"))
                                   for s in self.texts.specials if s):
            return (f.check, "special")
        ascii_ = d.byte_offset >= len(data) or data[d.byte_offset] < 0x80
        return (f.check, _class_at(data, d.byte_offset) + ("" if ascii_ else "/non-ascii"))

    def _token_at(self, ids, byte_index: int, special: bool) -> int:
        """The id whose piece covers ``byte_index`` of the concatenated pieces (last id past the end)."""
        pos = 0
        for i in ids:
            pos += len(self.reference.token_to_piece(i, special=special)) if 0 <= i < self.reference.n_vocab else 0
            if pos > byte_index:
                return i
        return ids[-1] if ids else -1

    def with_spans(self, f: Finding, limit: int = 300) -> Finding:
        """``f`` with both sides' token spans over its text (first ``limit`` ids), the
        port's side from the port's own pieces (llama.cpp's where it gives none)."""
        from dataclasses import replace
        if f.check in BYTE_CHECKS or not f.text:
            return f
        d, data = f.divergence, f.text.encode("utf-8", "surrogatepass")
        ref = self.pieces(d.reference_ids[:limit])
        own = dict(f.port_pieces)
        if f.port == self.port_spec:
            own.update(self.port_pieces([i for i in d.port_ids[:limit] if i not in own]))
        both = {**ref, **self.pieces([i for i in d.port_ids[:limit] if i not in own])}
        spans = (tuple(token_spans(data, [ref.get(i, b"") for i in d.reference_ids[:limit]])),
                 tuple(token_spans(data, [own.get(i, both.get(i, b"")) for i in d.port_ids[:limit]])))
        return replace(f, pieces={**f.pieces, **ref}, port_pieces=own, spans=spans)

    # --- the checks -----------------------------------------------------------------------
    def check_encode(self, text: str, add_special: bool, parse_special: bool,
                     check: str = "encode") -> Finding | None:
        """Port vs reference ids for one text and flag combination."""
        ref_ids = self.reference.encode(text, add_special=add_special, parse_special=parse_special)
        port_ids = self.call_port("encode", text, add_special=add_special, parse_special=parse_special)
        return self.finding(check, text, add_special, parse_special, ref_ids, list(port_ids))

    def check_golden(self, text: str, expected=None) -> Finding | None:
        """Port vs a recorded .out case (add_special=False, parse_special=False); a text
        with no recorded ids (a shrunk one) is checked against llama.cpp in process."""
        if expected is None:
            expected = self.reference.encode(text, add_special=False, parse_special=False)
        got = self.call_port("encode", text, add_special=False, parse_special=False)
        return self.finding("golden", text, False, False, list(expected), list(got))

    def decode_input(self, text: str, source: str, cut: int = 0, rand=()) -> tuple[int, ...]:
        """Ids for a decode case: llama.cpp's encoding of ``text`` with specials added and
        parsed (``whole``), a prefix of it as a streaming engine decodes (``prefix``), or
        ``rand`` ids folded into the vocab (``random``: bytes are often not valid UTF-8)."""
        if source == "random":
            return tuple(r % self.reference.n_vocab for r in rand)
        ids = tuple(self.reference.encode(text, add_special=True, parse_special=True))
        return ids[:cut % (len(ids) + 1)] if source == "prefix" else ids

    def check_decode(self, ids, remove_special: bool, unparse_special: bool) -> Finding | None:
        """Port's decode of ``ids`` vs llama.cpp's, byte for byte."""
        ids = tuple(ids)
        ref = self.reference.decode(ids, remove_special=remove_special, unparse_special=unparse_special)
        got = self.call_port("decode", ids, remove_special=remove_special, unparse_special=unparse_special)
        div = first_byte_divergence(ref, bytes(got))
        if div is None:
            return None
        return Finding("decode", self.name, self.pre_type, False, False, "", div, self.port_spec,
                       self.pieces(ids[:64]), ids, remove_special=remove_special,
                       unparse_special=unparse_special)

    def port_many(self, op: str, inputs: list, **flags) -> list:
        """The port's answer to ``op`` for each input (ids for encode, bytes for decode), or
        the PortError it got; one batch request per 512 inputs for an external port that
        has the batch op."""
        port = self.port
        if isinstance(port, ExternalPort) and not self.unsupported_reason(op, **flags) and port.batches:
            try:
                return port.many(op, inputs, **flags)
            except PortError as e:  # down: every input gets the error (the hunt counts it once)
                return [e] * len(inputs)
        out = []
        for x in inputs:
            try:
                out.append(self.call_port(op, x, **flags))
            except PortError as e:
                out.append(e)
        return out

    def port_pieces_of(self, ids, special: bool) -> dict:
        """id -> the port's piece, or the PortError its request got; one batch request per
        512 ids for an external port that has the batch op."""
        port = self.port
        if not isinstance(port, ExternalPort) or self.unsupported_reason("piece", special=special):
            out = {}
            for i in ids:
                try:
                    out[i] = bytes(self.call_port("token_to_piece", i, special=special))
                except PortError as e:
                    out[i] = e
            return out
        try:
            return dict(zip(ids, port.pieces(ids, special=special)))
        except PortError as e:  # down: every id of the chunk gets the error (the hunt counts it once)
            return dict.fromkeys(ids, e)

    def check_piece(self, id: int, special: bool, got: bytes | Exception | None = None) -> Finding | None:
        """Port's piece of one token (``got`` if already fetched) vs llama_token_to_piece,
        byte for byte."""
        ref = self.reference.token_to_piece(id, special=special)
        if isinstance(got, Exception):
            raise got
        if got is None:
            got = self.call_port("token_to_piece", id, special=special)
        div = first_byte_divergence(ref, bytes(got))
        if div is None:
            return None
        return Finding("piece", self.name, self.pre_type, False, False, "", div, self.port_spec,
                       {}, (id,), unparse_special=special)


class Session:
    """Per-process cache: references, vocabs and ports (one of each per vocab).

    A port that could not open (or reports another ``n_vocab``) stays failed for
    its vocab. A port that crashed, hung or answered garbage is started again
    when it is next needed, up to :data:`MAX_RESTARTS` times per vocab; each
    restart is noted (:meth:`take_restarts`) so the report shows it.
    """

    def __init__(self, port_spec: str = "harness"):
        self.port_spec = port_spec.strip() or "harness"
        self._vocabs: dict[str, VocabUnderTest] = {}
        self._ports: OrderedDict[str, Port] = OrderedDict()
        self._errors: dict[str, PortError] = {}
        self._restarts: dict[str, list[str]] = {}
        self._untaken: dict[str, list[str]] = {}

    def vocab(self, name: str) -> VocabUnderTest:
        """The vocab by pinned name or .gguf path (ReferenceUnavailable if not fetched/built)."""
        if name not in self._vocabs:
            from reference.vocabs import vocab_path
            path = vocab_path(name)
            self._vocabs[name] = VocabUnderTest(name, path, self.port_spec, load_reference(path), self)
        return self._vocabs[name]

    def port(self, vut: VocabUnderTest) -> Port:
        """Open (or reuse, or restart) the port for one vocab."""
        if vut.name in self._errors:
            err = self._errors[vut.name]
            # The same message, so the report counts this root cause once.
            raise PortError(str(err).split("\n--- port stderr ---")[0], stderr=err.stderr)
        port = self._ports.get(vut.name)
        if isinstance(port, ExternalPort) and port.dead is not None:
            self._restart(vut.name, port.dead)
            port = None
        if port is None:
            port = self._ports[vut.name] = self._open(vut)
            self._evict()
        self._ports.move_to_end(vut.name)
        return port

    def _restart(self, name: str, dead: PortError) -> None:
        done = self._restarts.setdefault(name, [])
        self._ports.pop(name).close()
        if len(done) >= MAX_RESTARTS:
            self._errors[name] = PortError(f"port for {name} went down {len(done) + 1} times; "
                                           f"not restarted again. Last error: {dead}", stderr=dead.stderr)
            raise self._errors[name]
        note = f"restart {len(done) + 1}/{MAX_RESTARTS} after: {str(dead).splitlines()[0]}"
        done.append(note)
        self._untaken.setdefault(name, []).append(note)

    def take_restarts(self, name: str) -> list[str]:
        """Restart notes for ``name`` not yet reported."""
        return self._untaken.pop(name, [])

    def _open(self, vut: VocabUnderTest) -> Port:
        try:
            port = open_port(self.port_spec, vut.path, reference=vut.reference)
            if isinstance(port, ExternalPort):
                self._check_n_vocab(port, vut)
            return port
        except ReferenceUnavailable:
            raise
        except Exception as e:
            # A port that cannot load a vocab is that vocab's port error, reported with the run.
            err = e if isinstance(e, PortError) else PortError(
                f"port {self.port_spec!r} could not open {vut.path}: {type(e).__name__}: {e}",
                stderr=traceback.format_exc())
            self._errors[vut.name] = err
            raise err from (None if err is e else e)

    @staticmethod
    def _check_n_vocab(port: "ExternalPort", vut: VocabUnderTest) -> None:
        n = port.info().get("n_vocab")
        if n is not None and n != vut.reference.n_vocab:
            port.close()
            raise PortError(f"port {port.command!r} answers info with n_vocab={n!r}, but llama.cpp "
                            f"has {vut.reference.n_vocab} tokens in {vut.path}: the port loaded another "
                            "vocab, or counts tokens differently", stderr=port.stderr())

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
