"""The cells of a run: one per vocab, check and flag combination, and their outcomes.

A cell's outcomes are decided here and nowhere else (:func:`cell_outcomes`): the engine's
tallies, the JSON, the table, the HTML, the JUnit properties, the exit code and the
scoreboard all ask this function.

A cell keeps every outcome that happened in it, worst first, in the exit code's order
(3, 2, 1, 4): ``error`` (the check itself raised: the cases checked before it are kept),
``port error`` (the port crashed, hung or answered garbage), ``divergence`` (the port
disagrees with llama.cpp), then how complete it is: where no case ran, ``unsupported`` (the
port declared it cannot express this) or ``not checked``; ``partial`` (some cases ran,
others were unsupported or not checked). A cell where nothing of this happened is
``pass``, the only clean outcome (:func:`incomplete`). The first is the cell's
``outcome`` (:func:`cell_outcome`); a check that diverged and then raised is
``error + divergence``, never just one of them.

>>> cell_outcomes({"cases": 5, "unsupported": 1})
('partial',)
>>> cell_outcomes({"cases": 50, "divergent": 3, "errors": 1, "not_checked": 150})
('error', 'divergence', 'partial')
>>> cell_outcome({"cases": 50, "divergent": 3, "port_errors": 1})
'port error'
"""

from __future__ import annotations

from typing import Iterable, Mapping

from harness.flags import LABELS

CHECK_COLUMNS = ("golden", "known", "encode", "decode", "piece")
#: Checks of the reference itself (the llama-tokenize CLI against libllama in process): they
#: never touch the port, so their cells are reported apart, never among the port's.
REFERENCE_CHECKS = ("crosscheck",)
FLAG_ROWS = LABELS
#: Every outcome, worst first (the exit code's order: 3, 2, 1, then 4, then clean).
OUTCOMES = ("error", "port error", "divergence", "unsupported", "partial", "not checked", "pass")
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
            if isinstance(v, bool) or k in ("vocab", "flags", "check", "outcome", "outcomes"):
                continue
            if isinstance(v, (int, float)):
                cur[k] = cur.get(k, 0) + v
            elif k in _TEXT_FIELDS and v and not cur.get(k):
                cur[k] = v
    for cur in out.values():
        cur["outcomes"] = list(cell_outcomes(cur))
        cur["outcome"] = cur["outcomes"][0]
    return out


#: What a cell can have had, worst first (the exit code's order): the count that says so.
_HAPPENED = (("error", ("errors",)), ("port error", ("port_errors",)), ("divergence", ("divergences", "divergent")))


def _completeness(cells: tuple[Mapping, ...]) -> str:
    """pass, partial, or (no case ran) unsupported | not checked: how much of these cells ran."""
    ran = [c for c in cells if c.get("cases")]
    if not ran:
        declared = cells and all(c.get("unsupported") or c.get("unsupported_reason") for c in cells)
        return "unsupported" if declared else "not checked"
    if len(ran) < len(cells) or any(c.get("unsupported") or c.get("not_checked") for c in cells):
        return "partial"
    return "pass"


def cell_outcomes(*cells: Mapping) -> tuple[str, ...]:
    """Every outcome that happened in these cells' counts, worst first (see the module
    docstring); several cells (a check's flag combinations) read as one.

    >>> cell_outcomes({"cases": 0, "unsupported": 3}), cell_outcomes({"cases": 9, "divergent": 2})
    (('unsupported',), ('divergence',))
    >>> cell_outcomes({"cases": 0, "port_errors": 1}), cell_outcomes({"cases": 2}, {"cases": 0, "unsupported": 1})
    (('port error', 'not checked'), ('partial',))
    """
    worse = [name for name, keys in _HAPPENED if any(c.get(k) for c in cells for k in keys)]
    rest = _completeness(cells)
    return tuple(worse + [rest]) if rest != "pass" or not worse else tuple(worse)


def cell_outcome(*cells: Mapping) -> str:
    """The worst of :func:`cell_outcomes`: the cell's ``outcome`` in the JSON, its colour in the HTML.

    >>> cell_outcome({"cases": 50, "divergent": 1, "errors": 1}), cell_outcome({"cases": 3})
    ('error', 'pass')
    """
    return cell_outcomes(*cells)[0]


def outcome_label(c: Mapping) -> str:
    """Every outcome of a cell in one word, as the totals and the HTML show it.

    >>> outcome_label({"cases": 50, "divergent": 1, "errors": 1})
    'error + divergence'
    """
    return " + ".join(cell_outcomes(c))


def incomplete(c: Mapping, allow_unsupported: bool = False) -> bool:
    """Whether a cell keeps a run from being clean by what it left out: it errored, or some
    of it is unsupported or not checked. With ``allow_unsupported`` cases the port declared
    it cannot express pass; cases not checked and errors never do.

    >>> incomplete({"cases": 5, "unsupported": 2}), incomplete({"cases": 5, "unsupported": 2}, True)
    (True, False)
    >>> incomplete({"cases": 5, "unsupported": 2, "not_checked": 1}, True)
    True
    """
    kinds = set(cell_outcomes(c))
    if "error" in kinds or "not checked" in kinds or c.get("not_checked"):
        return True
    return bool(kinds & {"unsupported", "partial"}) and not allow_unsupported


def cell_text(c: Mapping | None) -> str:
    """One table cell (see LEGEND).

    >>> cell_text({"cases": 9, "divergences": 2, "port_errors": 1}), cell_text({"cases": 0})
    ('9/2 !1', 'not checked')
    >>> cell_text({"cases": 50, "errors": 1, "not_checked": 150}), cell_text({"cases": 9, "divergences": 20, "capped": 4})
    ('50/0 ~150 error', '9/20 +4 capped')
    >>> cell_text({"cases": 0, "errors": 1, "port_errors": 1})
    'error + port error !1'
    """
    if c is None:
        return "-"
    if not c.get("cases"):
        kinds = cell_outcomes(c)
        worse = [f"port error !{c['port_errors']}" if k == "port error" else k for k in kinds
                 if k in ("error", "port error")]
        return " + ".join(worse) or kinds[0]
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
