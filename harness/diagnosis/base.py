"""The diagnosis model: a :class:`Case` the port got wrong, and a :class:`Variant` that may explain it.

A variant is a small named change of the exact harness tokenizer: what a port with
exactly one known bug answers. The engine asks which variants reproduce the port's
answer on *all* of a cause's shrunk cases (``harness.diagnosis.explain``) and names
the cause by the first.

How a variant is built (one of these, cached per tokenizer and variant):
- a changed vocab: ``Tokenizer(dataclasses.replace(tok.vocab, ...))``;
- a subclassed algorithm session injected as ``tok2._session``;
- a transform of the input text before the exact tokenizer, or of its output after.

A variant changes only the check families it names (``checks``); on any other check
it answers what llama.cpp answers, as a port with only that bug would.

>>> Case("piece", (5,), (True, False), b"x").family
'piece'
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Sequence

from harness.errors import HarnessError

__all__ = ["Case", "Variant", "family", "exact", "encode_exact", "with_specials", "cached", "cp_name",
           "titled", "texts", "FAMILIES", "specials_around", "same_claim", "edge_runs"]

FAMILIES = ("encode", "decode", "piece")
_FAMILY_OF = {"encode": "encode", "golden": "encode", "known": "encode", "crosscheck": "encode",
              "decode": "decode", "piece": "piece"}


def family(check: str) -> str:
    """The check family of a check name: golden, known and crosscheck are encodes.

    >>> family("golden"), family("decode")
    ('encode', 'decode')
    """
    try:
        return _FAMILY_OF[check]
    except KeyError:
        raise HarnessError(f"unknown check {check!r} in a diagnosis case; "
                           f"use one of {', '.join(_FAMILY_OF)}") from None


@dataclass(frozen=True)
class Case:
    """One divergent case: the check, its input and flags, and what the port answered.

    ``input`` is the text (encode), the ids (decode) or ``(id,)`` (piece); ``flags`` are
    (add_special, parse_special), (remove_special, unparse_special) or (special, False).
    """

    check: str
    input: str | tuple[int, ...]
    flags: tuple[bool, bool]
    port_output: tuple[int, ...] | bytes

    @property
    def family(self) -> str:
        return family(self.check)


# --- what llama.cpp (the exact harness tokenizer) answers, memoised per tokenizer ------------

_EXACT: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()
_BUILT: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()
_EXACT_LIMIT = 4096


def encode_exact(tok, text, add: bool, parse: bool) -> tuple[int, ...]:
    """``tok.encode`` as a tuple, memoised (variants ask for the same few texts many times)."""
    memo = _EXACT.setdefault(tok, {})
    key = ("encode", text, add, parse)
    out = memo.get(key)
    if out is None:
        if len(memo) >= _EXACT_LIMIT:
            memo.clear()
        out = memo[key] = tuple(tok.encode(text, add_special=add, parse_special=parse))
    return out


def exact(tok, case: Case) -> tuple[int, ...] | bytes:
    """What llama.cpp answers for ``case`` (the exact harness tokenizer is llama.cpp's port)."""
    fam = case.family
    a, b = case.flags
    if fam == "encode":
        return encode_exact(tok, case.input, a, b)
    if fam == "decode":
        return tok.decode(list(case.input), remove_special=a, unparse_special=b)
    return tok.token_to_piece(case.input[0], special=a)


def cached(tok, key, build: Callable[[], Any]):
    """``build()`` once per (tokenizer, key): variant tokenizers, maps, sessions."""
    memo = _BUILT.setdefault(tok, {})
    if key not in memo:
        memo[key] = build()
    return memo[key]


def with_specials(tok, text, add: bool, parse: bool, body: Sequence[int]) -> tuple[int, ...]:
    """``body`` (the ids of the text alone) wrapped in what llama.cpp adds with add_special.

    The wrapper (BOS/EOS, CLS/SEP) is read off llama.cpp's own answer: the ids without
    add_special sit inside the ids with it; whatever is around them is the wrapper.
    """
    body = tuple(body)
    if not add:
        return body
    head, tail = specials_around(tok, text, parse)
    return head + body + tail


def specials_around(tok, text, parse: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(head, tail)``: the ids add_special puts before and after the text's own ids, read off
    llama.cpp's answers with and without it."""
    full, plain = encode_exact(tok, text, True, parse), encode_exact(tok, text, False, parse)
    for k in range(len(full) - len(plain) + 1):
        if full[k:k + len(plain)] == plain:
            return full[:k], full[k + len(plain):]
    return (), ()  # unreachable for llama.cpp's wrappers (they only add around the text)


def titled(what: str, rule: str) -> str:
    """'<what the port does>; llama.cpp: <the rule, where>' on one line.

    >>> titled("decode drops a leading space", "keeps it (src/x.cpp)")
    'decode drops a leading space; llama.cpp: keeps it (src/x.cpp)'
    """
    return f"{what}; llama.cpp: {rule}"


def cp_name(c: str | int) -> str:
    """``U+00A0`` style name of a code point.

    >>> cp_name("\\xa0"), cp_name(0x1F600)
    ('U+00A0', 'U+1F600')
    """
    return f"U+{(ord(c) if isinstance(c, str) else c):04X}"


@dataclass(frozen=True)
class Variant:
    """One way a port goes wrong, as a change of the exact tokenizer.

    ``name`` is a stable snake_case id; ``models`` the port behaviour; ``rule`` what
    llama.cpp does instead and where at the pin; ``checks`` the families it can
    explain; ``shipped_by`` the real ports that shipped it (docs/known-port-bugs);
    ``param`` the free parameter a bound variant inferred from the cases (a code
    point, a token id, a chunk size), else None; ``every_param``: explain keeps every
    value that reproduces the cases, not only the first (a buffer size that a vocab's
    cases cannot pin down, so a report can pick the one that explains every vocab).
    """

    name: str
    models: str
    rule: str
    checks: tuple[str, ...]
    shipped_by: str = ""
    param: Any = None
    every_param: bool = False

    # --- what the engine calls ---------------------------------------------------------
    def applies(self, tok) -> bool:
        """Is the variant meaningful for this vocab (its type, pre type, flags, tokens)?"""
        return True

    def candidates(self, tok, cases: Sequence[Case]) -> Iterable["Variant"]:
        """The variant bound to each value of its free parameter worth trying on ``cases``."""
        yield self

    def output(self, tok, case: Case) -> tuple[int, ...] | bytes:
        """What a port with exactly this bug answers for ``case``."""
        fam = case.family
        if fam not in self.checks:
            return exact(tok, case)
        a, b = case.flags
        if fam == "encode":
            text = case.input
            if isinstance(text, (bytes, bytearray)):  # raw bytes (text_hex): the same bytes as a str
                text = bytes(text).decode("utf-8", "surrogateescape")
            return tuple(self.encode(tok, text, a, b))
        if fam == "decode":
            return bytes(self.decode(tok, list(case.input), a, b))
        return bytes(self.piece(tok, case.input[0], a))

    def title(self, cases: Sequence[Case]) -> str:
        """A one-line cause title naming the rule (variants make it specific where they can)."""
        return titled(self.models, self.rule)

    def prediction_points(self, tok) -> tuple[int, ...]:
        """Code points, besides the case's own, on which this variant and llama.cpp disagree,
        for the engine's predictions (a platform's whitespace or category table: other code
        points of the same table). Default: none."""
        return ()

    def edges(self, tok) -> frozenset[int] | None:
        """For a variant that changes only what add_special puts around the text (BOS, EOS,
        CLS, SEP, a token in their place): the ids it puts or leaves there. Its claim about a
        port is then the run of those ids at each end of the port's answer, whatever the port
        does between them (a port with another bug of the text as well). Default: None, the
        whole answer is the claim (:func:`same_claim`)."""
        return None

    # --- the default port: the variant tokenizer, called like llama.cpp ------------------
    def build(self, tok):
        """The variant tokenizer for ``tok``'s vocab (default: ``tok`` itself)."""
        return tok

    def tokenizer(self, tok):
        return cached(tok, ("tokenizer", self.name, self.param), lambda: self.build(tok))

    def encode(self, tok, text, add: bool, parse: bool) -> Sequence[int]:
        return self.tokenizer(tok).encode(text, add_special=add, parse_special=parse)

    def decode(self, tok, ids: list[int], remove: bool, unparse: bool) -> bytes:
        return self.tokenizer(tok).decode(ids, remove_special=remove, unparse_special=unparse)

    def piece(self, tok, id: int, special: bool) -> bytes:
        return self.tokenizer(tok).token_to_piece(id, special=special)

    def bind(self, param) -> "Variant":
        """This variant with its free parameter set (equal names, distinct params)."""
        return replace(self, param=param)


def texts(cases: Sequence[Case]) -> list[str]:
    """The encode texts among ``cases`` (str; bytes decoded as llama.cpp would see them)."""
    out = []
    for c in cases:
        if c.family == "encode":
            t = c.input
            out.append(t.decode("utf-8", "replace") if isinstance(t, (bytes, bytearray)) else t)
    return out


def edge_runs(ids, edges: frozenset[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The leading and the trailing run of ``ids`` that are in ``edges`` (what add_special put
    around the text).

    >>> edge_runs((1, 5, 6, 2), frozenset({1, 2})), edge_runs((5, 6), frozenset({1, 2}))
    (((1,), (2,)), ((), ()))
    """
    ids = tuple(ids)
    head = 0
    while head < len(ids) and ids[head] in edges:
        head += 1
    tail = len(ids)
    while tail > head and ids[tail - 1] in edges:
        tail -= 1
    return ids[:head], ids[tail:]


def same_claim(variant, tok, want, port) -> bool:
    """Whether a port's answer ``port`` is what ``variant`` claims where it answers ``want``:
    the whole answer, or for a variant about the edges (:meth:`Variant.edges`) the runs of
    edge ids at both ends (the port may also have a bug of the text in between).

    >>> same_claim(type("V", (), {"edges": lambda self, tok: frozenset({1})})(), None, (1, 5), (1, 7, 8))
    True
    """
    if isinstance(port, (bytes, bytearray)):
        return bytes(want) == bytes(port)
    edges = variant.edges(tok)
    if edges is None:
        return tuple(want) == tuple(port)
    return edge_runs(want, edges) == edge_runs(port, edges)
