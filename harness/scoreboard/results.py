"""The scoreboard's data: one :class:`Cell` per (port, vocab), built from
the port's probe, its conformance report and its corpus sample.

The conformance report is read through this schema only (the keys the
engine documents for ``reports/conformance.json``, schema 2, in
:mod:`harness.reports.run`); anything
else in the file is ignored, and a missing required key is an error that
names the file and key::

    {"divergences": [                       # required
        {"vocab": str, "add_special": bool, "parse_special": bool,     # required
         "text": str, "index": int, "byte_offset": int,               # required
         "reference_ids": [int], "port_ids": [int],                   # required
         "check": "golden"|"encode"|"decode"|"crosscheck",            # required: golden vs generated
         "pieces": {"<id>": "<hex>"},                                 # optional: labels in the diff
         "reference_bytes_hex": str, "port_bytes_hex": str,           # optional, decode only
         "remove_special": bool, "unparse_special": bool,             # optional: decode's flags
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
say nothing about the port, so they are kept apart (``oracle``): schema 3 reports carry
them in ``reference_checks.divergences``, older ones among ``divergences``.

>>> settle(Cell("p", "v", status="unsupported", error="ValueError: x")).status
'unsupported'
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.errors import HarnessError
from harness.reports.scoreboard import Cell

REQUIRED = ("vocab", "add_special", "parse_special", "text", "index", "byte_offset",
            "reference_ids", "port_ids", "check")

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
    reference = (report.get("reference_checks") or {}).get("divergences") or []
    cell.divergences = [d for d in mine if d["check"] != "crosscheck"]
    cell.oracle = [d for d in mine + reference if d["check"] == "crosscheck" and d.get("vocab") == cell.vocab]
    cell.port_errors = [str(e.get("message", e)) for e in report.get("port_errors", [])
                        if isinstance(e, dict) and e.get("vocab") == cell.vocab]
    return settle(cell)


def settle(cell: Cell) -> Cell:
    """The status from what is known: unsupported stays; any divergence (suite or
    sample) is ``diverges``; else port errors; else, if anything ran, ``pass`` where every
    encode, decode and piece cell ran and passed, and ``incomplete`` where some did not.

    >>> settle(Cell("p", "v", sample={"compared": 3, "agreed": 3, "examples": []})).status
    'incomplete'
    >>> every = {c: {"plain": "pass"} for c in ("encode", "decode", "piece")}
    >>> settle(Cell("p", "v", generated_examples=3, combos=every)).status
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
        cell.status = "incomplete" if cell.shortfall() else "pass"
    return cell
