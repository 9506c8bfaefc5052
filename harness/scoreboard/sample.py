"""The corpus sample: how often a port agrees with llama.cpp on real-looking text.

The conformance suite counts divergent cases per test; this sample says how
often a port agrees on real-looking text: fixed 4 KB chunks of the pinned benchmark
corpus (``harness.inputs.corpus``: prose, code, CJK, Arabic, Indic, emoji,
whitespace runs, special-token texts), encoded by the port and by llama.cpp
in process under each (add_special, parse_special) combination. The first
disagreeing chunk of each combination is shrunk (:func:`harness.engine.shrink.shrink_text`,
the engine's one shrinker) to a minimal text.

>>> [len(c.encode()) >= 10 for c in chunks("ab" * 20, 10)]
[True, True, True, True]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from harness.errors import HarnessError
from harness.engine.shrink import shrink_text
from harness.flags import COMBINATIONS
from harness.reports.diff import first_index

COMBOS = COMBINATIONS  # harness.flags: the one flag table
CHUNK_BYTES = 4096
N_CHUNKS = 16


class Encoder(Protocol):
    def encode(self, text: str, *, add_special: bool = False, parse_special: bool = False) -> list[int]: ...


def chunks(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of at least ``size`` UTF-8 bytes (the last may be shorter),
    on code point boundaries."""
    out, cur, n = [], [], 0
    for ch in text:
        cur.append(ch)
        n += len(ch.encode("utf-8"))
        if n >= size:
            out.append("".join(cur))
            cur, n = [], 0
    if cur:
        out.append("".join(cur))
    return out


def corpus_chunks(count: int = N_CHUNKS, size: int = CHUNK_BYTES) -> list[str]:
    """The first ``count`` chunks of the pinned corpus (same bytes on every machine)."""
    from harness.inputs.corpus import corpus
    return chunks(corpus(count * size + size), size)[:count]


@dataclass
class Example:
    """A minimal diverging text for one flag combination."""

    add_special: bool
    parse_special: bool
    text: str
    index: int
    reference_ids: list[int]
    port_ids: list[int]

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class SampleResult:
    """Agreement counts over ``texts`` x COMBOS, and one shrunk example per diverging combination."""

    texts: int = 0
    compared: int = 0
    agreed: int = 0
    port_errors: list[str] = field(default_factory=list)
    examples: list[Example] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"texts": self.texts, "compared": self.compared, "agreed": self.agreed,
                "port_errors": self.port_errors, "examples": [e.to_json() for e in self.examples]}


def _diverges(port: Encoder, reference: Encoder, add: bool, parse: bool) -> Callable[[str], bool]:
    def predicate(text: str) -> bool:
        try:
            got = port.encode(text, add_special=add, parse_special=parse)
        except HarnessError:
            return False  # a port error is not this divergence; keep the larger text
        return got != reference.encode(text, add_special=add, parse_special=parse)
    return predicate


def shrink_example(port: Encoder, reference: Encoder, text: str, add: bool, parse: bool,
                   budget: int = 2000) -> Example:
    """Shrink a diverging ``text`` and describe where the two streams part."""
    small = shrink_text(text, _diverges(port, reference, add, parse), calls=budget)
    ref = reference.encode(small, add_special=add, parse_special=parse)
    got = port.encode(small, add_special=add, parse_special=parse)
    return Example(add, parse, small, first_index(ref, got) or 0, ref, got)


def sample(port: Encoder, reference: Encoder, texts: Sequence[str], *,
           combos=COMBOS, shrink_budget: int = 2000) -> SampleResult:
    """Compare ``port`` with ``reference`` on every text under every combination.

    A port error on one text is recorded and that text skipped (it is not
    counted as compared).
    """
    result = SampleResult(texts=len(texts))
    for add, parse in combos:
        first = None
        for text in texts:
            try:
                got = port.encode(text, add_special=add, parse_special=parse)
            except HarnessError as e:
                result.port_errors.append(str(e).splitlines()[0][:300])
                continue
            result.compared += 1
            if got == reference.encode(text, add_special=add, parse_special=parse):
                result.agreed += 1
            elif first is None:
                first = text
        if first is not None:
            result.examples.append(shrink_example(port, reference, first, add, parse, shrink_budget))
    return result
