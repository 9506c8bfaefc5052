"""The fuzzers' one report: counts per class in a table, failing cases saved, a closing line.

``make fuzz`` (hostile GGUF files, :mod:`harness.fuzz.run`) and ``make fuzz-ports`` (hostile
ports, :mod:`harness.fuzz.ports`) count outcomes per class (a mutation class, a kind of
hostile port) and save each failing case under ``--out`` as ``<stem>.json`` (plus the
case's own file, where it has one), so both read the same way.

>>> from collections import Counter
>>> print(table({"crash": Counter(cases=2, ok=2)}, ("cases", "ok"), width=8))
class          cases      ok
----------------------------
crash              2       2
total              2       2
>>> closing(Counter(cases=3, ok=3), ("defect",), 1.2, 7, "reports/x", "cases")
'3 cases in 1 s (seed 7); no failures'
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path


def table(counts: dict[str, Counter], outcomes: tuple[str, ...], width: int = 12) -> str:
    """Counts per class, one row each, and a total row; a column per outcome."""
    first = max([12, *(len(c) + 1 for c in counts)])  # columns wide enough for every name
    widths = [max(width, len(k) + 1) for k in outcomes]
    row = (lambda name, c: f"{name:{first}}" + "".join(f"{c[k]:>{w}}" for k, w in zip(outcomes, widths)))
    head = f"{'class':{first}}" + "".join(f"{k:>{w}}" for k, w in zip(outcomes, widths))
    total: Counter = Counter()
    lines = [head, "-" * len(head)]
    for cls, c in counts.items():
        total.update(c)
        lines.append(row(cls, c))
    lines.append(row("total", total))
    return "\n".join(lines)


def failures(total: Counter, failing: tuple[str, ...]) -> dict[str, int]:
    """The failing outcomes that happened, with their counts.

    >>> failures(Counter(cases=4, crash=1, hang=0), ("crash", "hang"))
    {'crash': 1}
    """
    return {k: total[k] for k in failing if total[k]}


def closing(total: Counter, failing: tuple[str, ...], seconds: float, seed: int, out: str, unit: str) -> str:
    """The last line of a run: how many ``unit`` in how long, and what failed (or that nothing did)."""
    bad = failures(total, failing)
    return (f"{total['cases']} {unit} in {seconds:.0f} s (seed {seed}); "
            + (f"FAILED: {bad}; cases saved under {out}/" if bad else "no failures"))


def save(out: Path, stem: str, detail: dict, data: bytes | None = None, suffix: str = ".gguf") -> None:
    """One failing case: ``<stem>.json`` (what happened) and, if given, its file ``<stem><suffix>``."""
    out.mkdir(parents=True, exist_ok=True)
    if data is not None:
        (out / f"{stem}{suffix}").write_bytes(data)
    (out / f"{stem}.json").write_text(json.dumps(detail, indent=1, default=str))
