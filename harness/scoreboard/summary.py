"""The summary across ports: each port's own ``conformance.json``, read into its scoreboard row.

For every pinned vocab a port gets one entry (``scoreboard.json``'s ``ports[].vocabs``)::

    {"outcome": "pass"|"divergence"|"unsupported"|"error"|"not checked",
     "reason": str,                                   # why, unless pass or divergence
     "checks": {"golden"|"known"|"encode"|"decode"|"piece": outcome},   # over the flag combinations
     "causes": ["C1", ...]}                           # the port's causes seen on this vocab

A check's outcome over its flag combinations is the worst outcome of its cells read as one
(:func:`harness.reports.cells.cell_outcome`, the run's own: ``error``, ``port error``,
``divergence``, then ``unsupported`` or ``not checked`` if no case ran, ``partial`` if some
did not, ``pass``). A check with no cell is ``not checked``, except golden on a vocab llama.cpp
ships no ``.inp``/``.out`` for: ``n/a``, which does not count.
The vocab reads ``pass`` only where every check ran and passed; in the exit code's order, a
port error or error anywhere makes it ``error``; else a divergence makes it ``divergence``;
else ``unsupported`` where the port declared every missing case unsupported, ``not checked``
otherwise.

>>> cells = [{"vocab": "v", "check": c, "flags": "plain", "cases": 2} for c in CHECKS]
>>> vocab_entry("v", cells, [])["outcome"]
'pass'
>>> vocab_entry("v", cells[:-1], [])["outcome"], vocab_entry("v", cells[:-1], [])["checks"]["piece"]
('not checked', 'not checked')
>>> vocab_entry("v", cells + [dict(cells[2], flags="add", divergent=1, errors=1)], [])["checks"]["encode"]
'error'
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from harness.errors import HarnessError
from harness.reports.cells import CHECK_COLUMNS, cell_outcome, merge_cells

CHECKS = CHECK_COLUMNS  # golden, known, encode, decode, piece
#: The golden check of a vocab llama.cpp ships no ``.inp``/``.out`` for (no cell at all).
NOT_APPLICABLE = "n/a"


def port_words(reason: str) -> str:
    """The port's own words in an unsupported answer, without the request that got it.

    >>> port_words("port x cannot express {op: decode}: unsupported: model not supported")
    'model not supported'
    """
    return reason.rpartition("unsupported: ")[2].strip() if "unsupported: " in reason else reason.strip()
VOCAB_OUTCOMES = ("pass", "divergence", "unsupported", "error", "not checked")


def failure_words(vocab: str, port_errors: list[dict], errors: list[dict]) -> str:
    """What went wrong on ``vocab`` in the port's own words: each root port error's message
    (with the last line of its stderr), then each check that raised, most cases first.

    >>> failure_words("v", [{"vocab": "v", "message": "port x: panicked", "cases": 3,
    ...                       "stderr": "thread main panicked at src/lib.rs:9\\nnote: backtrace"}], [])
    'port error: port x: panicked (stderr: note: backtrace)'
    >>> failure_words("w", [{"vocab": "v", "message": "m"}], [])
    ''
    """
    said = []
    for err in sorted((e for e in port_errors if e.get("vocab") == vocab), key=lambda e: -e.get("cases", 0)):
        tail = [line for line in (err.get("stderr") or "").splitlines() if line.strip()][-1:]
        said.append(f"port error: {err['message'].strip()}" + (f" (stderr: {tail[0].strip()})" if tail else ""))
    for err in sorted((e for e in errors if e.get("vocab") == vocab), key=lambda e: -e.get("cases", 0)):
        said.append(f"error in {err.get('check', '?')}: {(err.get('error') or '').strip()}")
    return "; ".join(said)


def vocab_entry(vocab: str, cells: list[dict], causes: list[dict], port_errors: list[dict] = (),
                errors: list[dict] = ()) -> dict:
    """The scoreboard entry of one vocab from the port's cells, causes, root port errors and
    checks that raised (the report's ``port_errors`` and ``errors``: their messages are the
    reason a vocab reads ``error``)."""
    merged = [c for c in merge_cells(cells).values() if c["vocab"] == vocab]
    checks = {check: cell_outcome(*[c for c in merged if c["check"] == check]) for check in CHECKS}
    if merged and not any(c["check"] == "golden" for c in merged):
        checks["golden"] = NOT_APPLICABLE  # llama.cpp ships no .inp/.out for this vocab
    mine = [c["id"] for c in causes if any(x["vocab"] == vocab for x in c.get("cells", []))]
    reasons = sorted({port_words(c.get("unsupported_reason") or c.get("error") or "") for c in merged
                      if cell_outcome(c) not in ("pass", "divergence")} - {""})
    states = set(checks.values()) - {NOT_APPLICABLE}
    if states & {"port error", "error"}:
        outcome = "error"
    elif "divergence" in states or mine:
        outcome = "divergence"
    elif states == {"pass"}:
        outcome = "pass"
    elif states <= {"pass", "unsupported", "partial"} and any(c.get("unsupported") or c.get("unsupported_reason")
                                                               for c in merged):  # counted, or declared
        outcome = "unsupported"
    else:
        outcome = "not checked"
    entry = {"outcome": outcome, "checks": checks, "causes": mine}
    if outcome not in ("pass", "divergence"):
        missing = [k for k, v in checks.items() if v != "pass"]
        # The longest: the others are mostly the same answer cut shorter in another message.
        said = failure_words(vocab, list(port_errors), list(errors)) if outcome == "error" else ""
        entry["reason"] = (said or (max(reasons, key=len) if reasons else f"not run: {', '.join(missing)}"))[:500]
    return entry


def failed_entries(vocabs: list[str], outcome: str, reason: str) -> dict[str, dict]:
    """Every vocab with one outcome (a build that failed, a run without a report).

    >>> failed_entries(["v"], "error", "cargo not found")["v"]["checks"]["encode"]
    'error'
    """
    return {v: {"outcome": outcome, "reason": reason, "checks": {c: outcome for c in CHECKS}, "causes": []}
            for v in vocabs}


#: A rule's source: ``(src/llama-vocab.cpp, llama_vocab::impl::token_to_piece)``.
_SOURCE = re.compile(r"((?:src|common|tools)/[\w./-]+\.(?:cpp|h)), ([\w:~]+)")


def source_lines(rule: str | None, tree: Path | None) -> list[str]:
    """The rule's source functions with the line of their definition in the pinned tree, for
    an upstream issue (the function alone where the tree is absent or has no such definition).

    >>> source_lines("raw bytes (src/llama-vocab.cpp, llama_vocab::impl::detokenize)", None)
    ['src/llama-vocab.cpp (llama_vocab::impl::detokenize)']
    """
    out = []
    for path, func in _SOURCE.findall(rule or ""):
        line = definition_line(tree / path, func) if tree else None
        out.append(f"{path}:{line} ({func})" if line else f"{path} ({func})")
    return out


def definition_line(path: Path, func: str) -> int | None:
    """The 1-based line where ``func`` is defined: its name at the start of an unindented
    line's signature (calls are indented; a declaration ends in ``;``)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    name = re.compile(rf"(^|[\s*&]){re.escape(func)}\s*\(")
    for i, line in enumerate(lines, 1):
        if line[:1].strip() and name.search(line) and not line.rstrip().endswith(";"):
            return i
    return None


def cause_entry(cause: dict, tree: Path | None = None) -> dict:
    """A cause of conformance.json as the scoreboard keeps it: title, diagnosis, rule (with its
    source lines in the pinned ``tree``), the minimal example (both sides) and its repro."""
    ex = cause.get("example") or {}
    keep = ("check", "vocab", "flags", "add_special", "parse_special", "remove_special",
            "unparse_special", "text", "reference_ids", "port_ids", "reference_bytes_hex",
            "port_bytes_hex", "index")
    return {"id": cause["id"], "title": cause["title"], "diagnosis": cause.get("diagnosis"),
            "rule": cause.get("rule"), "sources": source_lines(cause.get("rule"), tree),
            "cases": cause.get("cases", 0),
            "vocabs": sorted({c["vocab"] for c in cause.get("cells", [])}),
            "checks": sorted({c["check"] for c in cause.get("cells", [])}),
            "example": {k: ex[k] for k in keep if k in ex}, "repro": ex.get("repro", "")}


#: ``tokenizer.ggml.model`` -> llama.cpp's ``vocab_type`` name.
#: (src/llama-vocab.cpp, llama_vocab::impl::load: gemma4, hybriddna and whitespace are BPE).
VOCAB_TYPES = {"llama": "SPM", "gpt2": "BPE", "hybriddna": "BPE", "whitespace": "BPE", "gemma4": "BPE",
               "bert": "WPM", "t5": "UGM", "rwkv": "RWKV", "plamo2": "PLaMo2"}


def vocab_types(vocabs: list[str]) -> dict[str, str]:
    """Each pinned vocab's ``vocab_type`` (SPM, BPE, WPM, UGM, ...), read from its GGUF: the board
    groups its grid by them. A GGUF that cannot be read gives ``?`` (its cells still show)."""
    from harness.tokenizer.gguf import GGUFReader
    from reference.vocabs import vocab_path
    out = {}
    for v in vocabs:
        try:
            model = GGUFReader(vocab_path(v)).get("tokenizer.ggml.model")
        except (OSError, HarnessError, ValueError):
            model = None
        out[v] = VOCAB_TYPES.get(model, model or "?")
    return out


def read_report(path: Path) -> dict:
    """One port's ``conformance.json``; an unreadable one names the file."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise HarnessError(f"{path}: cannot read the port's conformance report ({e}); "
                           "did its run finish? (see run.log beside it)") from e
    for key in ("cells", "causes", "run"):
        if key not in data:
            raise HarnessError(f"{path}: missing key {key!r}: not a conformance.json of schema 3 "
                               "(harness/reports/run.py)")
    return data


def port_row(manifest: dict, vocabs: list[str], report: dict | None, *, build: dict | None = None,
             run: dict | None = None, failure: str = "", outcome: str = "error",
             tree: Path | None = None) -> dict:
    """One port's row: its manifest, build and run, every vocab's entry, and its causes.
    Without a report every vocab reads ``outcome`` (``error``: the build or run failed; ``not
    checked``: the port was not run) with ``failure`` as the reason."""
    row = dict(manifest, build=build, run=run)
    if report is None:
        row["vocabs"] = failed_entries(vocabs, outcome, failure or "the port did not run")
        row["causes"] = []
        return row
    causes = [cause_entry(c, tree) for c in report["causes"]]
    row["causes"] = causes
    row["vocabs"] = {v: vocab_entry(v, report["cells"], report["causes"], report.get("port_errors", []),
                                     report.get("errors", [])) for v in vocabs}
    row["totals"] = {k: report.get("totals", {}).get(k) for k in ("cases", "causes", "divergent_cases",
                                                                    "port_errors", "errors")}
    return row
