"""One vocab under test: its reference, its port, and the comparisons that make Findings.

Shared by the conformance checks (:mod:`harness.engine.checks`), the pytest plugin and
``python -m harness diff``, so all print the same diff for the same text. The port is
called through :meth:`VocabUnderTest.call_port`, which sorts its failures: unsupported,
a port error for one request, or a port that is down.

>>> pre_type_label.__name__
'pre_type_label'
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from harness.engine import signature as sig
from harness.errors import PortError, PortRequestError, PortUnsupported
from harness.inputs.strategies import VocabTexts
from harness.inputs.vocabtexts import vocab_texts
from harness.ports import Port
from harness.protocol.client import ExternalPort
from harness.protocol.server import WrongAnswerType, checked_answer
from harness.reports.diff import first_byte_divergence, first_divergence, token_spans
from harness.reports.finding import BYTE_CHECKS, Finding

_BPE_MODELS = ("gpt2", "hybriddna", "whitespace")


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


@dataclass
class VocabUnderTest:
    """A vocab with its reference and (lazily) the port under test."""

    name: str
    path: Path
    port_spec: str
    reference: Any  # the oracle: reference.inproc.InProcessReference (keyword flags, bytes out)
    session: Any = field(repr=False)  # what opens the port: harness.engine.session.Session

    @cached_property
    def pre_type(self) -> str:
        return pre_type_label(self.path)

    @cached_property
    def texts(self) -> VocabTexts:
        return vocab_texts(self.path, self.reference)

    def token_kind(self, id: int) -> str:
        """'normal', 'control', 'byte', ... of one id as llama.cpp sees it after loading (a
        ``</s>`` the GGUF calls normal is control there), or 'out-of-range'. Read off the
        harness tokenizer's vocab, which loads as llama.cpp's does; only divergences ask."""
        if not 0 <= id < self.reference.n_vocab:
            return "out-of-range"
        return sig.attr_kind(self.diagnoser.tok.vocab.attrs[id])

    @cached_property
    def diagnoser(self):
        """The catalogue of rule variants, run on this vocab's findings (harness.engine.diagnoser)."""
        from harness.engine.diagnoser import Diagnoser
        return Diagnoser(self.path)

    @property
    def port(self) -> Port:
        """The port, opened once; a PortError is remembered and re-raised."""
        return self.session.port(self)

    def port_death(self) -> PortError | None:
        """The error the open port went down with, if it did (None for a live or in-process
        port): a hunt asks, so a port that died on a detail's request is still counted."""
        death = getattr(self.session, "port_death", None)  # the pytest plugin's session has none
        return death(self.name) if death else None

    # --- the port, called with its errors sorted ------------------------------------------
    def unsupported_reason(self, op: str, **flags: bool) -> str:
        """What the port declares it cannot express for this op and flags ('' if nothing).

        A port declares it with ``unsupported``: ``info``'s list for external ports,
        an attribute for Python adapters; entries are op names (``"decode"``) or
        ``"<flag>=<true|false>"`` (``"parse_special=true"``). An external port that answers
        every op with one ``unsupported`` (it cannot load the vocab) declares it of every
        request (:attr:`ExternalPort.refused <harness.protocol.client.ExternalPort.refused>`).
        """
        refused = getattr(self.port, "refused", "")  # an external port that cannot load the vocab at all
        if refused:
            return refused
        declared = getattr(self.port, "unsupported", ()) or ()
        wanted = [op] + [f"{k}={'true' if v else 'false'}" for k, v in flags.items()]
        hit = [w for w in wanted if w in declared]
        return f"port declares unsupported: {', '.join(hit)}" if hit else ""

    def call_port(self, method: str, arg, **flags):
        """``port.<method>(arg, **flags)``. An in-process port's NotImplementedError is
        :class:`PortUnsupported`; any other exception becomes a PortError naming the
        input (traceback kept as its stderr and cause), and so does an answer of the wrong
        type (a ``str`` for bytes, a non-int id), naming the method and the type."""
        op = {"token_to_piece": "piece"}.get(method, method)
        reason = self.unsupported_reason(op, **flags)
        if reason:
            raise PortUnsupported(reason)
        try:
            answer = getattr(self.port, method)(arg, **flags)
        except PortError:
            raise
        except NotImplementedError as e:
            raise PortUnsupported(f"port {self.port_spec!r} cannot {method} with {flags}: {e}") from e
        except Exception as e:
            raise PortRequestError(f"port {self.port_spec!r} raised {type(e).__name__}: {e} in {method}"
                                   f"({arg!r}, {flags}) on vocab {self.name}",
                                   stderr=traceback.format_exc()) from e
        try:
            return checked_answer(method, answer)
        except WrongAnswerType as e:  # the port's bug, named: not a traceback from inside the engine
            raise PortRequestError(f"port {self.port_spec!r} {e} in {method}({arg!r:.200}, {flags}) "
                                   f"on vocab {self.name}") from None

    def pieces(self, ids) -> dict[int, bytes]:
        """Reference pieces (special=True) of the in-range ids."""
        return {i: self.reference.token_to_piece(i, special=True)
                for i in set(ids) if 0 <= i < self.reference.n_vocab}

    def port_pieces(self, ids) -> dict[int, bytes]:
        """The port's own pieces (special=True) of ``ids``; ids it cannot give are left out
        (the report then labels the reference's piece as such)."""
        out = {}
        for i in set(ids):
            piece = self.detail_piece(i, True)
            if piece is not None:
                out[i] = piece
        return out

    def detail_piece(self, id: int, special: bool) -> bytes | None:
        """The port's own piece of ``id`` for a report's detail, or None where it gives none.
        A port that is down is not asked (asking would restart it in the middle of a test:
        the hunt counts its death, :meth:`port_death`)."""
        if self.port_death() is not None:
            return None
        try:
            return bytes(self.call_port("token_to_piece", id, special=special))
        except (PortError, TypeError, ValueError):
            return None

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
        """What llama.cpp emitted where the outputs part, and the port's edit there:
        ``(family, edit, what)`` (:mod:`harness.engine.signature`), from the reference side
        and the localised edit only, never the class of the character where the bytes part
        (that split one defect once per character class).

        encode, golden, known, crosscheck: a special, unknown or byte token in the divergent
        span (from the first divergent index to the common tail, :func:`signature.divergent_span`)
        whose text the port has wrong (its own piece differs) is attributed to that piece, as
        decode is, and so is a first divergent token of any kind whose piece the port gives as
        llama.cpp's piece of another token (:meth:`piece_edit`: an id map); else the reference
        token there: ``added special`` (what add_special put around the text), ``special``,
        ``byte token``, ``unknown token``, ``whitespace`` or ``newline``, else whether the
        port's tokens spell the same text (``same text, other tokens``) or not (``other
        text``); where the port adds tokens, the position.
        piece: the edit from llama.cpp's piece to the port's (:meth:`piece_edit`) and the
        token's kind.
        decode: attributed to the token whose piece holds the first divergent byte: where the
        port's own piece of that token, or of a special, unknown or byte token among the ids,
        differs from llama.cpp's, the decode divergence is that piece's (the piece signature,
        so it is one cause with the piece findings); else the edit there and the edit from
        llama.cpp's output to the port's where they differ (:func:`signature.output_edit`:
        invalid UTF-8 replaced, a space dropped, bytes added, ...), not the kind of token there.
        """
        d, family = f.divergence, sig.FAMILY[f.check]
        if f.check in ("piece", "decode"):
            ref, port = bytes(d.reference_ids), bytes(d.port_ids)
        if f.check == "piece":
            return sig.piece_signature(self.piece_edit(ref, port, bool(f.unparse_special)),
                                       self.token_kind(f.decoded_ids[0]))
        if f.check == "decode":
            edit = sig.byte_edit(ref, port, d.index)
            special = bool(f.unparse_special)
            if d.index >= len(ref):  # the port adds bytes past llama.cpp's end: a token it renders
                return (self._vocab_defect(f.decoded_ids, (special,))
                        or self._another_token(f.decoded_ids[-4:], special) or (family, edit, sig.output_edit(ref, port)))
            at = self._token_at(f.decoded_ids, d.index, special)
            # a token before the first divergent byte whose piece llama.cpp leaves empty (a
            # control token without special) and the port renders is where the bytes part
            upto = f.decoded_ids[:f.decoded_ids.index(at)] if at in f.decoded_ids else ()
            wrong = self._vocab_defect(upto, (special,), empty_only=True)
            if wrong is not None:
                return wrong
            kind = self.token_kind(at)
            own = self._own_piece(at, special)
            mine = self.reference.token_to_piece(at, special=special) if kind != "out-of-range" else None
            if own is not None and mine is not None and own != mine:
                return sig.piece_signature(self.piece_edit(mine, own, special), kind)
            # llama.cpp's piece of a control token may be empty: the first divergent byte is
            # then the next token's, and the token the port has wrong is elsewhere in the ids
            wrong = self._vocab_defect(f.decoded_ids, (special,))
            if wrong is not None:
                return wrong
            # a token just before: the port's piece of it, another token's, may share its head
            # with llama.cpp's and part only where llama.cpp's next piece begins
            k = f.decoded_ids.index(at) if at in f.decoded_ids else len(f.decoded_ids) - 1
            return self._another_token(f.decoded_ids[max(0, k - 3):k + 1], special) or (
                family, edit, sig.output_edit(ref, port))
        ref, i = d.reference_ids, d.index
        edit = sig.token_edit(ref, d.port_ids, i)
        if edit == "adds":
            return (family, edit, "start" if i == 0 else "end" if i >= len(ref) else "inside")
        span = sig.divergent_span(ref, d.port_ids, i)
        wrong = self._vocab_defect(span, (True, False)) or self._another_token(span[:1], True)
        if wrong is not None:
            return wrong
        what = self._emitted(f, i)
        if what in sig.CONTENT_KINDS and any(
                self.token_kind(t) in ("control", "user_defined") and t not in d.port_ids[i:] for t in span):
            # a special token llama.cpp cut out of the text, a few ids on, that the port did not:
            # the divergence is that token's, whatever llama.cpp emitted first ('>' of '></s>')
            what = "special"
        return (family, edit, what)

    def _vocab_defect(self, ids, specials: tuple[bool, ...], empty_only: bool = False) -> tuple | None:
        """The piece signature of the first of ``ids`` whose kind is a vocabulary's own
        (control, user-defined, unknown, byte, unused) and whose piece the port has wrong: the
        divergence is that token's text or type, one defect with the piece findings.
        special=False shows a type the port has wrong: llama.cpp's control piece is empty
        there, a port that calls the token normal prints its text. ``empty_only``: only tokens
        whose llama.cpp piece is empty (before the first divergent byte, nothing else can part)."""
        for id in ids:
            kind = self.token_kind(id)
            if kind not in ("control", "user_defined", "unknown", "byte", "unused"):
                continue
            for special in specials:
                own, mine = self._own_piece(id, special), self.reference.token_to_piece(id, special=special)
                if empty_only and mine:
                    continue
                edit = self.piece_edit(mine, own, special) if own is not None and own != mine else None
                # a lossy or space-stripping rendering of a piece is no defect of the token's
                # text: it explains a divergence only where the bytes part (above), not here
                if edit is not None and edit not in sig.RENDERING_EDITS:
                    return sig.piece_signature(edit, kind)
        return None

    def piece_edit(self, mine: bytes, own: bytes, special: bool) -> str:
        """:func:`signature.piece_edit` from llama.cpp's piece ``mine`` to the port's ``own``, or
        :data:`signature.ANOTHER_TOKEN` where ``own`` is llama.cpp's piece of another token
        (same ``special``): a port with its ids mapped wrong (narrowed to 16 bits, one off) gives
        each token's piece as some other token's, and whether those bytes look added, dropped
        or other depends on which token it lands on, which split one defect in three."""
        edit = sig.piece_edit(mine, own)
        if edit in sig.BYTES_EDITS and own and own in self._reference_pieces(special):
            return sig.ANOTHER_TOKEN
        return edit

    def _reference_pieces(self, special: bool) -> frozenset:
        """Every non-empty piece llama.cpp gives a token of this vocab (memoised)."""
        memo = self.__dict__.setdefault("_all_pieces", {})
        if special not in memo:
            n = self.reference.n_vocab
            memo[special] = frozenset(p for p in (self.reference.token_to_piece(i, special=special)
                                                  for i in range(n)) if p)
        return memo[special]

    def _another_token(self, ids, special: bool) -> tuple | None:
        """The piece signature :data:`signature.ANOTHER_TOKEN` where the port's piece of one
        of ``ids`` (normal tokens too) is llama.cpp's piece of another token: an encode
        divergence at a token the port numbers otherwise is that id map's, one cause with its
        decode and piece findings."""
        for id in ids:
            if not 0 <= id < self.reference.n_vocab:
                continue
            own, mine = self._own_piece(id, special), self.reference.token_to_piece(id, special=special)
            if own is not None and own != mine and self.piece_edit(mine, own, special) == sig.ANOTHER_TOKEN:
                return sig.piece_signature(sig.ANOTHER_TOKEN, self.token_kind(id))
        return None

    def _own_piece(self, id: int, special: bool) -> bytes | None:
        """The port's own piece of ``id`` (memoised), or None where it gives none."""
        memo = self.__dict__.setdefault("_own_pieces", {})
        key = (id, special)
        if key not in memo:
            memo[key] = self.detail_piece(id, special)
        return memo[key]

    def _emitted(self, f: Finding, i: int) -> str:
        """The kind of llama.cpp's token ``i`` of ``f`` (see :meth:`signature`)."""
        ref = f.divergence.reference_ids
        if f.add_special:
            head = self._added_head(f.text, True, f.parse_special, ref)
            body = self.reference.encode(f.text, add_special=False, parse_special=f.parse_special)
            if i < head or i >= head + len(body):
                return "added special"
        kind = self.token_kind(ref[i])
        if kind in ("control", "user_defined"):
            return "special"
        if kind in ("byte", "unknown"):
            return f"{kind} token"
        what = sig.piece_kind(self.reference.token_to_piece(ref[i], special=True))
        if what in ("whitespace", "newline"):
            return what
        return "same text, other tokens" if self._spelled(ref) == self._spelled(f.divergence.port_ids) else "other text"

    def _spelled(self, ids) -> bytes:
        """llama.cpp's pieces of ``ids`` joined (what the ids spell)."""
        n = self.reference.n_vocab
        return b"".join(self.reference.token_to_piece(i, special=True) if 0 <= i < n else b"\0" for i in ids)

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

    def probe(self, check: str, x, flags: tuple[bool, bool]) -> Finding | None:
        """``check`` on input ``x`` under ``flags`` (``(add_special, parse_special)``,
        ``(remove_special, unparse_special)`` or ``(special, _)``): a diagnosis's prediction
        under a flag combination other than its cell's."""
        a, b = flags
        if check == "decode":
            return self.check_decode(x, a, b)
        if check == "piece":
            return self.check_piece(int(x), a)
        if check == "golden":
            check = "encode"
        return self.check_encode(x, a, b, check=check)

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
        the PortError it got; batched (:data:`harness.protocol.client.BATCH_SIZE` requests per
        line at most) for an external port that has the batch op."""
        try:  # opening (or restarting) the port may fail too: then every input gets that error
            port = self.port
            if isinstance(port, ExternalPort) and not self.unsupported_reason(op, **flags) and port.batches:
                return port.many(op, inputs, **flags)
        except PortError as e:  # down: every input gets the error (the hunt counts it once)
            return [e] * len(inputs)
        out = []
        for k, x in enumerate(inputs):
            try:
                out.append(self.call_port(op, x, **flags))
            except PortRequestError as e:
                out.append(e)
            except PortError as e:  # down: asking on would restart it for each input
                return out + [e] * (len(inputs) - k)
        return out

    def port_pieces_of(self, ids, special: bool) -> dict:
        """id -> the port's piece, or the PortError its request got; batched for an external
        port that has the batch op."""
        try:
            port = self.port
        except PortError as e:  # cannot open (or restart): every id gets the error
            return dict.fromkeys(ids, e)
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


