"""Causes: the unit of every report. Findings that one explanation reproduces are one cause.

A finding carries its explanations (the catalogue variants that reproduce the port's exact
output on it, harness.diagnosis, each with its bound parameter) and its reference-side
signature. Two findings are one cause when one explanation reproduces both: the explained
findings are covered by as few explanations as a greedy cover finds (the one covering the
most cases first), whatever their vocabs, checks and flag combinations; findings nothing
explains group by ``unexplained`` and their signature. So two bugs behind one first
divergent character stay two causes, and one bug seen through several checks is one.

Each cause has an id (``C1``, ``C2``, ... most cases first), a title (the rule the port
breaks, or an ``unexplained:`` description of where llama.cpp and the port part), the
diagnosis (a catalogue name or None), the rule (what llama.cpp does and where, at the pin),
its minimal example (the finding with the shortest input), its findings and cells, and its
divergent cases.

>>> from harness.reports.diff import Divergence
>>> d = Divergence(0, 0, True, (1,), (2,))
>>> fs = [Finding("encode", "v", None, False, False, "ab", d, cases=3,
...               explanations=(("nfc_input", "NFC", "r"), ("nfkc_input", "NFKC", "r"))),
...       Finding("encode", "w", None, True, False, "a", d, cases=2, explanations=(("nfc_input", "NFC", "r"),))]
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
    >>> unexplained_title(("piece", "drops", "byte token: control"))
    "unexplained (piece): the port's piece of byte tokens drops a control character llama.cpp's has"
    >>> unexplained_title(("piece", "drops", "normal token: space"))
    "unexplained (piece): the port's piece of normal tokens drops a space character llama.cpp's has"
    """
    if len(signature) != 3:
        return f"unexplained: {' / '.join(map(str, signature)) or 'divergence'}"
    family, edit, what = signature
    thing = _WHAT.get(what, f"a {what} character" if family == "decode" else f"a token starting with a {what}")
    if family == "piece":
        kind, _, where = what.partition(" token: ")
        char = {"end": "", "invalid-utf8": " an invalid UTF-8 byte"}.get(where, f" a {where} character")
        if edit == "drops":
            return f"unexplained (piece): the port's piece of {kind} tokens drops{char} llama.cpp's has"
        if edit == "adds" or where == "end":
            return f"unexplained (piece): the port's piece of {kind} tokens adds bytes " + (
                "past the end of llama.cpp's" if where == "end" else f"before{char}")
        return f"unexplained (piece): the port's piece of {kind} tokens differs at{char}"
    if edit == "adds":
        where = _WHERE.get(what, f"where llama.cpp has {thing}")
        return f"unexplained ({family}): the port adds {'bytes' if family == 'decode' else 'tokens'} {where}"
    if edit == "drops":
        return f"unexplained ({family}): the port drops {thing} llama.cpp emits"
    if family == "decode":
        return f"unexplained (decode): where llama.cpp's output has {thing}, the port's bytes differ"
    return f"unexplained ({family}): where llama.cpp emits {thing}, the port's tokens differ"


def _cover(findings: list[Finding]) -> list[tuple[str, list[int]]]:
    """Explained findings grouped so that one explanation reproduces every finding of a
    group, in as few groups as the greedy cover finds: the explanation that covers the
    most findings not yet covered first (ties: the more specific, then the key)."""
    left = {k for k, f in enumerate(findings) if f.explanations}
    groups = []
    while left:
        score: dict[str, list] = {}
        for k in left:
            for rank, (key, _t, _r) in enumerate(findings[k].explanations):
                entry = score.setdefault(key, [0, rank])
                entry[0] += findings[k].cases or 1
                entry[1] = min(entry[1], rank)
        key = min(score, key=lambda x: (-score[x][0], score[x][1], x))
        idx = sorted(k for k in left if any(e[0] == key for e in findings[k].explanations))
        groups.append((key, idx))
        left -= set(idx)
    return groups


def group_causes(findings: list[Finding]) -> list[Cause]:
    """The run's causes, most divergent cases first (ids in that order)."""
    keyed: list[tuple[tuple, list[int]]] = [(("diagnosis", key), idx) for key, idx in _cover(findings)]
    unexplained: dict[tuple, list[int]] = {}
    for k, f in enumerate(findings):
        if not f.explanations:
            unexplained.setdefault(("unexplained", *f.signature), []).append(k)
    keyed += list(unexplained.items())
    causes = []
    for key, idx in keyed:
        example = min(idx, key=lambda k: _size(findings[k]))
        if key[0] == "diagnosis":
            _key, title, rule = next(e for e in findings[example].explanations if e[0] == key[1])
            diagnosis = key[1].split(":", 1)[0]
        else:
            title, rule, diagnosis = unexplained_title(tuple(findings[example].signature)), None, None
        causes.append(Cause("", key, title, diagnosis, rule, example, idx,
                            sorted({(findings[k].vocab, findings[k].check, findings[k].flags) for k in idx}),
                            sum(findings[k].cases for k in idx)))
    causes.sort(key=lambda c: (-c.cases, c.findings[0]))
    for n, c in enumerate(causes, 1):
        c.id = f"C{n}"
    return causes
