"""The scoreboard's data: one :class:`Cell` per (port, vocab), built from
the port's probe, its conformance report and its corpus sample.

The conformance report is read through this schema only (the keys the
engine documents for ``reports/conformance.json``, schema 1); anything
else in the file is ignored, and a missing required key is an error that
names the file and key::

    {"divergences": [                       # required
        {"vocab": str, "add_special": bool, "parse_special": bool,     # required
         "text": str, "index": int, "byte_offset": int,               # required
         "reference_ids": [int], "port_ids": [int],                   # required
         "check": "golden"|"encode"|"decode"|"crosscheck",            # required: golden vs generated
         "pieces": {"<id>": "<hex>"},                                 # optional: labels in the diff
         "reference_bytes_hex": str, "port_bytes_hex": str,           # optional, decode only
         "repro": str}],                                              # optional
     "vocabs": {"<vocab>": {"<check>": {"cases": int, "divergences": int}}},   # required
     "cells": [{"vocab": str, "check": str, "flags": "plain"|"parse"|"add"|"add_parse",
                "cases": int, "outcome": str}],          # optional (schema 2): per flag combination
     "port_errors": [{"vocab": str, "message": str}]}                  # optional

A flag combination is counted for a check only where its cell says what ran:
``pass``, ``divergence`` or ``partial``; a check with no such cell is ``not
checked``, never a pass (a schema-1 report has no cells: everything generated
reads as not checked).

"crosscheck" divergences compare llama.cpp in process with its own CLI: they
say nothing about the port, so they are kept apart (``oracle``).

>>> c = Cell("p", "v", status="unsupported", error="ValueError: x")
>>> c.golden_text(), c.generated_text()
('-', '-')
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessError

REQUIRED = ("vocab", "add_special", "parse_special", "text", "index", "byte_offset",
            "reference_ids", "port_ids", "check")
GENERATED = ("encode", "decode")
N_COMBOS = 4  # the suite runs all four (add_special, parse_special) combinations


@dataclass
class Cell:
    """One port on one vocab.

    ``status``: ``pass`` (ran, no divergence), ``diverges``, ``unsupported``
    (the port cannot load the vocab; ``error`` says why), ``port-error``
    (crashed/hung/garbage; ``error``), ``not-run``.
    """

    port: str
    vocab: str
    status: str = "not-run"
    error: str = ""
    golden_cases: int = 0
    generated_examples: int = 0
    divergences: list[dict] = field(default_factory=list)
    oracle: list[dict] = field(default_factory=list)
    port_errors: list[str] = field(default_factory=list)
    sample: dict | None = None
    combos: dict = field(default_factory=dict)  # check -> flags -> outcome (the report's cells)

    @property
    def golden_failed(self) -> int:
        return sum(1 for d in self.divergences if d["check"] == "golden")

    def failing_combos(self, checks=GENERATED) -> list[tuple[bool, bool]]:
        """(add_special, parse_special) combinations with a divergence in ``checks``."""
        return sorted({(d["add_special"], d["parse_special"]) for d in self.divergences
                       if d["check"] in checks})

    def golden_text(self) -> str:
        """``'passed/cases'`` of the golden .inp/.out cases; where the vocab has a golden
        cell but no case ran, that cell's outcome (``not checked``, ``port error``,
        ``unsupported``); '-' where it has none.

        >>> Cell("p", "v", status="pass", golden_cases=4).golden_text()
        '4/4'
        >>> Cell("p", "v", status="port-error", combos={"golden": {"plain": "port error"}}).golden_text()
        'port error'
        """
        if self.status in ("unsupported", "not-run"):
            return "-"
        if not self.golden_cases:
            return self.combos.get("golden", {}).get("plain", "-")
        return f"{self.golden_cases - self.golden_failed}/{self.golden_cases}"

    def generated_text(self) -> str:
        """Per generated check (encode, decode): the flag combinations that passed
        out of those that ran, or ``not checked``; unsupported ones are named.

        >>> Cell("p", "v", status="pass", combos={"encode": {"plain": "pass", "add": "divergence",
        ...      "parse": "unsupported"}}).generated_text()
        'enc 1/2 (1 unsupported) dec not checked'
        """
        if self.status in ("unsupported", "not-run"):
            return "-"
        return " ".join(self._rate(check) for check in GENERATED)

    def _rate(self, check: str) -> str:
        outcomes = list(self.combos.get(check, {}).values())
        ran = [o for o in outcomes if o in ("pass", "divergence", "partial")]
        text = f"{check[:3]} {sum(o == 'pass' for o in ran)}/{len(ran)}" if ran else f"{check[:3]} not checked"
        unsupported = outcomes.count("unsupported")
        return text + (f" ({unsupported} unsupported)" if unsupported else "")

    def sample_text(self) -> str:
        """``'agreed/compared'`` over the corpus sample, or '-'.

        >>> Cell("p", "v", sample={"agreed": 60, "compared": 64}).sample_text()
        '60/64'
        """
        if not self.sample or not self.sample.get("compared"):
            return "-"
        return f"{self.sample['agreed']}/{self.sample['compared']}"

    def to_json(self) -> dict:
        return {"port": self.port, "vocab": self.vocab, "status": self.status, "error": self.error,
                "golden": {"cases": self.golden_cases, "failed": self.golden_failed},
                "generated": {"examples": self.generated_examples, "combos": N_COMBOS,
                              "failing_combos": {c: [list(f) for f in self.failing_combos((c,))]
                                                 for c in GENERATED},
                              "outcomes": self.combos},
                "divergences": self.divergences, "oracle_divergences": self.oracle,
                "port_errors": self.port_errors, "sample": self.sample}


def cell_from_json(obj: dict) -> Cell:
    """Inverse of :meth:`Cell.to_json` (to re-render or merge ``scoreboard.json`` files).

    >>> c = Cell("p", "v", status="pass", golden_cases=3, generated_examples=7,
    ...          combos={"encode": {"plain": "pass"}})
    >>> cell_from_json(c.to_json()) == c
    True
    """
    return Cell(obj["port"], obj["vocab"], status=obj["status"], error=obj["error"],
                golden_cases=obj["golden"]["cases"], generated_examples=obj["generated"]["examples"],
                divergences=obj["divergences"], oracle=obj["oracle_divergences"],
                port_errors=obj["port_errors"], sample=obj["sample"],
                combos=obj["generated"].get("outcomes", {}))


def _need(obj: dict, key: str, where: str):
    if not isinstance(obj, dict) or key not in obj:
        raise HarnessError(f"{where}: missing key {key!r}; the conformance report schema "
                           "changed? (see harness/scoreboard/results.py)")
    return obj[key]


def load_report(path: str | Path) -> dict:
    """Read and check one ``conformance.json`` against the schema above."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise HarnessError(f"{path}: cannot read the conformance report ({e}); "
                           "did the suite run to the end?") from e
    divergences = _need(data, "divergences", str(path))
    vocabs = _need(data, "vocabs", str(path))
    if not isinstance(divergences, list) or not isinstance(vocabs, dict):
        raise HarnessError(f"{path}: 'divergences' must be a list and 'vocabs' an object")
    for i, d in enumerate(divergences):
        for key in REQUIRED:
            _need(d, key, f"{path}: divergences[{i}]")
    return data


def fill_from_report(cell: Cell, report: dict) -> Cell:
    """Set counts, divergences and status of ``cell`` from a checked report."""
    counts = report["vocabs"].get(cell.vocab, {})
    cell.golden_cases = int(counts.get("golden", {}).get("cases", 0))
    cell.generated_examples = int(counts.get("encode", {}).get("cases", 0))
    cell.combos = {}
    for c in report.get("cells", []):
        if isinstance(c, dict) and c.get("vocab") == cell.vocab:
            cell.combos.setdefault(c.get("check"), {})[c.get("flags")] = c.get("outcome", "not checked")
    mine = [d for d in report["divergences"] if d["vocab"] == cell.vocab]
    cell.divergences = [d for d in mine if d["check"] != "crosscheck"]
    cell.oracle = [d for d in mine if d["check"] == "crosscheck"]
    cell.port_errors = [str(e.get("message", e)) for e in report.get("port_errors", [])
                        if isinstance(e, dict) and e.get("vocab") == cell.vocab]
    return settle(cell)


def settle(cell: Cell) -> Cell:
    """The status from what is known: unsupported stays; any divergence (suite or
    sample) is ``diverges``; else port errors; else ``pass`` if anything ran.

    >>> settle(Cell("p", "v", sample={"compared": 3, "agreed": 3, "examples": []})).status
    'pass'
    """
    if cell.status == "unsupported":
        return cell
    sample_examples = (cell.sample or {}).get("examples") or []
    if cell.divergences or sample_examples:
        cell.status = "diverges"
    elif cell.port_errors or (cell.sample or {}).get("port_errors"):
        errors = cell.port_errors or cell.sample["port_errors"]
        cell.status, cell.error = "port-error", errors[0]
    elif cell.golden_cases or cell.generated_examples or (cell.sample or {}).get("compared"):
        cell.status = "pass"
    return cell


def minimal_examples(cell: Cell) -> list[dict]:
    """The shortest diverging text of each check (golden, encode, decode) and of the
    corpus sample (whose examples carry no "check"), in that order.

    >>> [d["text"] for d in minimal_examples(Cell("p", "v", divergences=[
    ...     {"text": "abc", "check": "encode"}, {"text": "a", "check": "golden"},
    ...     {"text": "b", "check": "encode"}]))]
    ['a', 'b']
    """
    pools = [[d for d in cell.divergences if d["check"] == check] for check in ("golden",) + GENERATED]
    pools.append((cell.sample or {}).get("examples") or [])
    return [min(pool, key=lambda d: (len(d["text"]), d["text"])) for pool in pools if pool]
