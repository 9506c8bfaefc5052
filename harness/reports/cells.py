"""The cells of a run: one per vocab, check and flag combination, and their one outcome.

A cell's outcome is decided here and nowhere else (:func:`cell_outcome`): the engine's
tallies, the JSON, the table, the HTML, the JUnit properties and the exit code all ask
this function.

Outcomes, worst first: ``divergence`` (the port disagrees with llama.cpp), ``port error``
(it crashed, hung or answered garbage), ``error`` (the check itself raised: the cases
checked before it are kept), then, where no case ran, ``unsupported`` (the port declared
it cannot express this) or ``not checked``; ``partial`` (some cases ran, others were
unsupported or not checked); ``pass``. Only ``pass`` is clean (:func:`incomplete`).

>>> cell_outcome({"cases": 5, "unsupported": 1})
'partial'
>>> cell_outcome({"cases": 50, "errors": 1})
'error'
"""

from __future__ import annotations

from typing import Iterable, Mapping

from harness.flags import LABELS

CHECK_COLUMNS = ("golden", "known", "encode", "decode", "piece")
#: Checks of the reference itself (the llama-tokenize CLI against libllama in process): they
#: never touch the port, so their cells are reported apart, never among the port's.
REFERENCE_CHECKS = ("crosscheck",)
FLAG_ROWS = LABELS
OUTCOMES = ("pass", "divergence", "port error", "error", "unsupported", "partial", "not checked")
LEGEND = ("cells: cases/distinct divergences; !N root port errors; uN unsupported cases; "
          "~N not checked (port down or check stopped); +N capped: divergent cases beyond the cap of "
          "distinct divergences; 'error': the check raised (cases before it kept); "
          "'-' the check does not apply.\n"
          "flags: plain, parse (parse_special), add (add_special), add_parse; for decode read "
          "add as remove_special and parse as unparse_special; for piece, parse as special=true.")
_TEXT_FIELDS = ("unsupported_reason", "error", "error_at")


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
            elif k in _TEXT_FIELDS and v and not cur.get(k):
                cur[k] = v
    for cur in out.values():
        cur["outcome"] = cell_outcome(cur)
    return out


def cell_outcome(c: Mapping) -> str:
    """divergence > port error > error > (no case ran: unsupported | not checked) > partial > pass.

    >>> cell_outcome({"cases": 0, "unsupported": 3})
    'unsupported'
    """
    if c.get("divergences") or c.get("divergent"):
        return "divergence"
    if c.get("port_errors"):
        return "port error"
    if c.get("errors"):
        return "error"
    if not c.get("cases"):
        return "unsupported" if c.get("unsupported") or c.get("unsupported_reason") else "not checked"
    if c.get("unsupported") or c.get("not_checked"):
        return "partial"
    return "pass"


def incomplete(c: Mapping, allow_unsupported: bool = False) -> bool:
    """Whether a cell keeps a run from being clean although nothing diverged: it is
    unsupported, partial, not checked or error. With ``allow_unsupported`` cases the port
    declared it cannot express pass; cases not checked and errors never do.

    >>> incomplete({"cases": 5, "unsupported": 2}), incomplete({"cases": 5, "unsupported": 2}, True)
    (True, False)
    >>> incomplete({"cases": 5, "unsupported": 2, "not_checked": 1}, True)
    True
    """
    outcome = cell_outcome(c)
    if outcome in ("pass", "divergence", "port error"):
        return False
    if allow_unsupported and outcome in ("unsupported", "partial"):
        return bool(c.get("not_checked"))
    return True


def cell_text(c: Mapping | None) -> str:
    """One table cell (see LEGEND).

    >>> cell_text({"cases": 9, "divergences": 2, "port_errors": 1}), cell_text({"cases": 0})
    ('9/2 !1', 'not checked')
    >>> cell_text({"cases": 50, "errors": 1, "not_checked": 150}), cell_text({"cases": 9, "divergences": 20, "capped": 4})
    ('50/0 ~150 error', '9/20 +4 capped')
    """
    if c is None:
        return "-"
    outcome = cell_outcome(c)
    if not c.get("cases"):
        text = {"port error": f"port error !{c.get('port_errors', 0)}"}.get(outcome, outcome)
        return text + (" +error" if c.get("errors") and outcome != "error" else "")
    text = f"{c['cases']}/{c.get('divergences', 0)}"
    for key, mark in (("port_errors", "!"), ("unsupported", "u"), ("not_checked", "~")):
        if c.get(key):
            text += f" {mark}{c[key]}"
    if c.get("capped"):
        text += f" +{c['capped']} capped"
    if c.get("errors"):
        text += " error"
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
    col = {c: max([len(cell_text(v)) + 2 for k, v in merged.items() if k[2] == c] + [16]) for c in checks}
    lines = ["vocab".ljust(width) + "flags".ljust(11) + "".join(c.ljust(col[c]) for c in checks).rstrip()]
    for vocab in sorted({k[0] for k in merged}):
        for flags in FLAG_ROWS:
            row = [merged.get((vocab, flags, c)) for c in checks]
            if all(r is None for r in row):
                continue
            lines.append((vocab.ljust(width) + flags.ljust(11)
                          + "".join(cell_text(r).ljust(col[c]) for r, c in zip(row, checks))).rstrip())
    return "\n".join(lines)
