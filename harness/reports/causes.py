"""Causes: the unit of every report. Findings that one explanation reproduces are one cause.

A finding carries its diagnosis (the catalogue variants that reproduce the port's exact
output on it, harness.diagnosis) and its reference-side signature. Its *cause key* is its
first variant, else ``unexplained`` plus the signature (:attr:`Finding.cause_key`), so
findings merge across vocabs, checks and flag combinations when their causes are equal,
and two bugs behind one first divergent character stay two causes.

Each cause has an id (``C1``, ``C2``, ... most cases first), a title (the rule the port
breaks, or an ``unexplained:`` description of where llama.cpp and the port part), the
diagnosis (a catalogue name or None), the rule (what llama.cpp does and where, at the pin),
its minimal example (the finding with the shortest input), its findings and cells, and its
divergent cases.

>>> from harness.reports.diff import Divergence
>>> d = Divergence(0, 0, True, (1,), (2,))
>>> fs = [Finding("encode", "v", None, False, False, "ab", d, cases=3, diagnosis=("nfc_input",),
...               title="NFC", rule="r"),
...       Finding("encode", "w", None, True, False, "a", d, cases=2, diagnosis=("nfc_input",),
...               title="NFC", rule="r")]
>>> [(c.id, c.title, c.findings, c.cases, c.example) for c in group_causes(fs)]
[('C1', 'NFC', [0, 1], 5, 1)]
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.reports.finding import BYTE_CHECKS, Finding


@dataclass
class Cause:
    """One cause of a run: the findings its explanation covers."""

    id: str
    key: tuple
    title: str
    diagnosis: str | None
    rule: str | None
    example: int  # index (into the run's findings) of the minimal example
    findings: list[int] = field(default_factory=list)
    cells: list[tuple[str, str, str]] = field(default_factory=list)  # (vocab, check, flags), sorted
    cases: int = 0

    def to_json(self, findings: list[Finding]) -> dict:
        """The ``causes`` entry of conformance.json (schema 3, in harness/reports/run.py)."""
        return {"id": self.id, "title": self.title, "diagnosis": self.diagnosis, "rule": self.rule,
                "example": findings[self.example].to_json() | {"cause": self.id},
                "findings": [self.example] + [k for k in self.findings if k != self.example],  # example first
                "cases": self.cases,
                "cells": [{"vocab": v, "check": c, "flags": f} for v, c, f in self.cells]}

    def where(self) -> str:
        """Where it shows: vocabs × checks × flag combinations, in one line."""
        vocabs = sorted({v for v, _, _ in self.cells})
        checks = sorted({c for _, c, _ in self.cells})
        flags = sorted({f for _, _, f in self.cells})
        return (f"{len(vocabs)} vocab(s) ({', '.join(vocabs)}) × {len(checks)} check(s) "
                f"({', '.join(checks)}) × {len(flags)} flag combination(s) ({', '.join(flags)}): "
                f"{len(self.cells)} cell(s)")


def _size(f: Finding) -> tuple:
    """How small a finding's input is (the minimal example is the smallest)."""
    n = len(f.decoded_ids) if f.check in BYTE_CHECKS else len(f.text.encode("utf-8", "surrogatepass"))
    return (n, f.check in BYTE_CHECKS, f.vocab, f.flags, f.check)


_WHAT = {"added special": "a token add_special adds", "special": "a special token",
         "byte token": "a byte token", "unknown token": "an unknown token",
         "leading space": "a token with a leading space", "whitespace": "a whitespace token",
         "newline": "a newline token", "invalid-utf8": "an invalid UTF-8 sequence", "end": "the end"}
_WHERE = {"start": "at the start", "inside": "inside the text", "end": "at the end"}


def unexplained_title(signature: tuple) -> str:
    """A title for a cause no catalogue variant explains, from its reference-side signature.

    >>> unexplained_title(("decode", "replaces", "invalid-utf8"))
    "unexplained (decode): where llama.cpp's output has an invalid UTF-8 sequence, the port's bytes differ"
    >>> unexplained_title(("encode", "adds", "start"))
    'unexplained (encode): the port adds tokens at the start'
    """
    if len(signature) != 3:
        return f"unexplained: {' / '.join(map(str, signature)) or 'divergence'}"
    family, edit, what = signature
    thing = _WHAT.get(what, f"a {what} character" if family == "decode" else f"a token starting with a {what}")
    if family == "piece":
        return f"unexplained (piece): the port's piece of {what.removesuffix(' token')} tokens differs"
    if edit == "adds":
        where = _WHERE.get(what, f"where llama.cpp has {thing}")
        return f"unexplained ({family}): the port adds {'bytes' if family == 'decode' else 'tokens'} {where}"
    if edit == "drops":
        return f"unexplained ({family}): the port drops {thing} llama.cpp emits"
    if family == "decode":
        return f"unexplained (decode): where llama.cpp's output has {thing}, the port's bytes differ"
    return f"unexplained ({family}): where llama.cpp emits {thing}, the port's tokens differ"


def group_causes(findings: list[Finding]) -> list[Cause]:
    """The run's causes, most divergent cases first (ids in that order)."""
    by_key: dict[tuple, list[int]] = {}
    for k, f in enumerate(findings):
        by_key.setdefault(f.cause_key, []).append(k)
    causes = []
    for key, idx in by_key.items():
        example = min(idx, key=lambda k: _size(findings[k]))
        named = next((findings[k] for k in idx if findings[k].title), None)
        title = named.title if named else unexplained_title(tuple(findings[example].signature))
        causes.append(Cause("", key, title, key[1] if key[0] == "diagnosis" else None,
                            named.rule if named else None, example, idx,
                            sorted({(findings[k].vocab, findings[k].check, findings[k].flags) for k in idx}),
                            sum(findings[k].cases for k in idx)))
    causes.sort(key=lambda c: (-c.cases, c.findings[0]))
    for n, c in enumerate(causes, 1):
        c.id = f"C{n}"
    return causes
