"""The cells of a run: one per vocab, check and flag combination, and their one outcome.

A cell's outcome is decided here and nowhere else (:func:`cell_outcome`): the engine's
tallies, the JSON, the table and the HTML all ask this function.

>>> cell_outcome({"cases": 5, "unsupported": 1})
'partial'
"""

from __future__ import annotations

from typing import Iterable, Mapping

from harness.flags import LABELS

CHECK_COLUMNS = ("golden", "known", "encode", "decode", "piece", "crosscheck")
FLAG_ROWS = LABELS
LEGEND = ("cells: cases/distinct divergences; !N root port errors; uN unsupported cases; "
          "~N not checked (port down); '-' the check does not apply.\n"
          "flags: plain, parse (parse_special), add (add_special), add_parse; for decode read "
          "add as remove_special and parse as unparse_special; for piece, parse as special=true.")


def merge_cells(cells: Iterable[Mapping]) -> dict[tuple[str, str, str], dict]:
    """(vocab, flags, check) -> summed counts of every test that fed that cell.

    >>> merge_cells([{"vocab": "v", "flags": "plain", "check": "encode", "cases": 2},
    ...              {"vocab": "v", "flags": "plain", "check": "encode", "cases": 3}])[("v", "plain", "encode")]["cases"]
    5
    """
    out: dict[tuple[str, str, str], dict] = {}
    for c in cells:
        key = (c["vocab"], c["flags"], c["check"])
        cur = out.setdefault(key, {"vocab": c["vocab"], "flags": c["flags"], "check": c["check"]})
        for k, v in c.items():
            if isinstance(v, bool) or k in ("vocab", "flags", "check", "outcome"):
                continue
            if isinstance(v, (int, float)):
                cur[k] = cur.get(k, 0) + v
            elif k == "unsupported_reason" and v:
                cur[k] = v
    for cur in out.values():
        cur["outcome"] = cell_outcome(cur)
    return out


def cell_outcome(c: Mapping) -> str:
    """divergence > port error > (no case ran: unsupported | not checked) > partial > pass.

    >>> cell_outcome({"cases": 0, "unsupported": 3})
    'unsupported'
    """
    if c.get("divergences") or c.get("divergent"):
        return "divergence"
    if c.get("port_errors"):
        return "port error"
    if not c.get("cases"):
        return "unsupported" if c.get("unsupported") or c.get("unsupported_reason") else "not checked"
    if c.get("unsupported") or c.get("not_checked"):
        return "partial"
    return "pass"


def cell_text(c: Mapping | None) -> str:
    """One table cell (see LEGEND).

    >>> cell_text({"cases": 9, "divergences": 2, "port_errors": 1}), cell_text({"cases": 0})
    ('9/2 !1', 'not checked')
    """
    if c is None:
        return "-"
    if not c.get("cases"):
        words = {"port error": f"port error !{c.get('port_errors', 0)}"}.get(cell_outcome(c), cell_outcome(c))
        return words
    text = f"{c['cases']}/{c.get('divergences', 0)}"
    for key, mark in (("port_errors", "!"), ("unsupported", "u"), ("not_checked", "~")):
        if c.get(key):
            text += f" {mark}{c[key]}"
    return text


def summary_table(cells: Iterable[Mapping], checks: Iterable[str] = CHECK_COLUMNS) -> str:
    """(vocab, flags) x check table of cells (see LEGEND); checks no cell has are left out.

    >>> print(summary_table([{"vocab": "qwen2", "flags": "plain", "check": "encode", "cases": 10,
    ...                       "divergences": 1, "port_errors": 0}]))
    vocab       flags      encode
    qwen2       plain      10/1
    """
    merged = merge_cells(cells)
    checks = [c for c in checks if any(k[2] == c for k in merged)]
    width = max([len(k[0]) for k in merged] + [10]) + 2
    lines = ["vocab".ljust(width) + "flags".ljust(11) + "".join(c.ljust(16) for c in checks).rstrip()]
    for vocab in sorted({k[0] for k in merged}):
        for flags in FLAG_ROWS:
            row = [merged.get((vocab, flags, c)) for c in checks]
            if all(r is None for r in row):
                continue
            lines.append((vocab.ljust(width) + flags.ljust(11)
                          + "".join(cell_text(r).ljust(16) for r in row)).rstrip())
    return "\n".join(lines)
