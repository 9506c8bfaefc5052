"""``conformance.html``: one self-contained page a person would rather look at than read.

- a header with the run: pin, port command, profile, Hypothesis seed, start, wall time, host;
- a vocab x (check, flags) grid coloured by outcome (pass, divergence, port error, error,
  unsupported, partial, not checked; a cell with several, such as one that diverged and
  then raised, in each of their colours), each cell linking to its findings, port error and
  error (the cap of distinct divergences shows as ``+N capped``);
- checks that raised (``error`` cells): the exception's last line and where it was raised;
- port errors, each root cause once (messages alike but for numbers, ids and quoted text are one
  root: its count of variants and the first few shown);
- length scaling: every run the encode check timed, slow ones (a warning) first;
- the reference's own checks (llama-tokenize against libllama), in a section of their own;
- one section per cause (harness.reports.causes): its title, diagnosis, rule, where it
  shows and its cases, its smallest example, its other findings folded under it; each
  finding with the text drawn twice as token spans, llama.cpp's segmentation above the
  port's, on the text's own characters, the first divergent token marked; the i-2..i+5
  window; the repro command with a copy button.

No network, no external scripts or fonts.

>>> "<!doctype html>" in html_page({"run": {}, "totals": {}, "cells": [], "port_errors": []}, [])
True
"""

from __future__ import annotations

import html
from typing import Mapping

from harness.reports.causes import group_causes
from harness.reports.cells import CHECK_COLUMNS, FLAG_ROWS, LEGEND, cell_outcomes, cell_text, outcome_label
from harness.reports.escape import py_literal, render_token
from harness.reports.finding import BYTE_CHECKS, Finding
from harness.reports.render import flag_words, variants_text, window_rows
from harness.reports.scaling import html_section as scaling_section

e = html.escape
COLOURS = {"pass": "#cfc", "divergence": "#f99", "port error": "#fc6", "error": "#d9f",
           "unsupported": "#ccd", "partial": "#eeb", "not checked": "#eee"}

_CSS = """body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:2px 6px;font-size:12px}
th{background:#f4f4f4}td.c{font-family:monospace;white-space:nowrap}td.c a{color:inherit;text-decoration:none}
.meta td{font-family:monospace}.win td{font-family:monospace;white-space:pre}
tr.div td{background:#fdd;font-weight:bold}tr.after td{color:#888}
.toks{font-family:monospace;font-size:15px;line-height:2.2em;margin:.3em 0;white-space:pre-wrap}
.tok{border:1px solid #999;border-radius:3px;padding:1px 0;margin:0 1px}
.t0{background:#e6f0ff}.t1{background:#fff2d9}.first{background:#f66!important;color:#fff}
.empty{color:#777;font-size:11px}.tok{white-space:pre}.lab{display:inline-block;width:6em;color:#555;font-size:12px}
.finding{border-left:4px solid #c33;padding:.2em 1em;margin:1em 0}.cause{margin-top:2em;border-top:2px solid #c33}
details{margin:.5em 0}summary{cursor:pointer;color:#555}
code.repro{background:#f4f4f4;padding:2px 4px}pre{background:#f8f8f8;padding:.5em;white-space:pre-wrap}
.legend span{padding:1px 6px;margin-right:4px;border:1px solid #bbb}"""

_JS = """function copyRepro(b){navigator.clipboard.writeText(b.previousElementSibling.textContent)
.then(function(){b.textContent='copied'})}"""


def anchor(vocab: str, check: str, flags: str) -> str:
    return f"f-{vocab}-{check}-{flags}"


def _header(run: Mapping, totals: Mapping) -> str:
    rows = [(k, run.get(k, "?")) for k in ("pin", "port", "profile", "fast_seed", "hypothesis_seed",
                                           "known_examples", "vocabs", "started", "wall_s", "host")]
    rows += [(k, v) for k, v in totals.items() if k != "cells_by_outcome"]
    rows += [(f"{k} (derived)", f"derived from {v.get('derived_from')}: {v.get('description')}")
             for k, v in sorted((run.get("derived") or {}).items())]
    return ("<table class='meta'>" + "".join(f"<tr><th>{e(str(k))}</th><td>{e(str(v))}</td></tr>"
                                             for k, v in rows) + "</table>")


def _grid(cells: list[Mapping], columns=CHECK_COLUMNS) -> str:
    by = {(c["vocab"], c["check"], c["flags"]): c for c in cells}
    checks = [c for c in columns if any(k[1] == c for k in by)]
    head1 = "<tr><th rowspan=2>vocab</th>" + "".join(f"<th colspan={len(FLAG_ROWS)}>{e(c)}</th>" for c in checks)
    head2 = "<tr>" + "".join(f"<th>{f}</th>" for _ in checks for f in FLAG_ROWS) + "</tr>"
    rows = []
    for vocab in sorted({k[0] for k in by}):
        tds = []
        for check in checks:
            for flags in FLAG_ROWS:
                c = by.get((vocab, check, flags))
                if c is None:
                    tds.append("<td class='c'>-</td>")
                    continue
                tds.append(_grid_cell(c))
        rows.append(f"<tr><th>{e(vocab)}</th>{''.join(tds)}</tr>")
    legend = "".join(f"<span style='background:{c}'>{e(k)}</span>" for k, c in COLOURS.items())
    return (f"<p class='legend'>{legend}</p><p><small>{e(LEGEND)}</small></p>"
            f"<table>{head1}</tr>{head2}{''.join(rows)}</table>")


def _grid_cell(c: Mapping) -> str:
    """One cell of the grid: coloured by each of its outcomes (a cell that diverged and
    raised is both colours), its text linking to where its worst outcome is told, and a
    link for each other one.

    >>> _grid_cell({"vocab": "v", "check": "encode", "flags": "plain", "cases": 5, "divergences": 1, "errors": 1})
    "<td class='c' style='background:linear-gradient(90deg,#d9f 0% 50%,#f99 50% 100%)' title='error + divergence'><a href='#x-f-v-encode-plain'>5/1 error</a> <a href='#f-v-encode-plain'>+divergence</a></td>"
    """
    vocab, check, flags = c["vocab"], c["check"], c["flags"]
    targets = {"divergence": f"#{anchor(vocab, check, flags)}", "port error": f"#e-{vocab}",
               "error": f"#x-{anchor(vocab, check, flags)}"}
    kinds = cell_outcomes(c)
    shown = [k for k in kinds if k in targets] or kinds[:1]
    n = len(shown)
    background = COLOURS.get(shown[0], "#fff") if n == 1 else "linear-gradient(90deg," + ",".join(
        f"{COLOURS[k]} {100 * i // n}% {100 * (i + 1) // n}%" for i, k in enumerate(shown)) + ")"
    text = e(cell_text(c))
    if shown[0] in targets:
        text = f"<a href='{e(targets[shown[0]])}'>{text}</a>"
    text += "".join(f" <a href='{e(targets[k])}'>+{e(k)}</a>" for k in shown[1:])
    return f"<td class='c' style='background:{background}' title='{e(outcome_label(c))}'>{text}</td>"


_VISIBLE = {" ": "\u00b7", "\n": "\u21b5", "\t": "\u2192", "\r": "\u240d"}


def _visible(text: str) -> str:
    """Text drawn so that every character shows: a space as a middle dot, a newline as
    an arrow, other spaces and controls escaped (``\\u00a0``).

    >>> _visible(" a\\xa0\\n")
    '·a\\\\u00a0↵'
    """
    from harness.reports.escape import render_char
    return "".join(_VISIBLE.get(c) or render_char(c) for c in text)


def _spans(f: Finding, side: int) -> str:
    """One side's tokens as spans over the text's own characters."""
    data = f.text.encode("utf-8", "surrogatepass")
    d = f.divergence
    ids = d.reference_ids if side == 0 else d.port_ids
    spans = f.spans[side] if len(f.spans) > side else ()
    own = f.pieces if side == 0 else f.port_pieces
    out = []
    for k, (start, end) in enumerate(spans):
        id = ids[k] if k < len(ids) else "?"
        cls = "first" if k == d.index else f"t{k % 2}"
        piece = own.get(id) if isinstance(id, int) else None
        title = f"#{k} id {id}" + (f" {render_token(piece)}" if piece is not None else "")
        body = _visible(data[start:end].decode("utf-8", "backslashreplace"))
        if body:
            out.append(f"<span class='tok {cls}' title='{e(title)}'>{e(body)}</span>")
        else:
            out.append(f"<span class='tok empty {cls}' title='{e(title)}'>[{e(str(id))}]</span>")
    if len(ids) > len(spans):
        out.append(f"<span class='empty'> … {len(ids) - len(spans)} more token(s)</span>")
    return "".join(out)


def _finding(f: Finding) -> str:
    d = f.divergence
    rows = []
    for idx, ref, port in window_rows(f):
        cls = "div" if idx == d.index else ("after" if idx > d.index else "")
        rows.append(f"<tr class='{cls}'><td>{idx}</td><td>{e(ref)}</td><td>{e(port)}</td></tr>")
    if f.check in BYTE_CHECKS:
        subject = f"ids <code>{e(str(list(f.decoded_ids)))}</code>"
        drawn = ""
    else:
        subject = (f"text <code>{e(py_literal(f.text))}</code> &middot; utf-8 "
                   f"<code>{e(f.text.encode('utf-8', 'surrogatepass').hex(' '))}</code>")
        drawn = (f"<div class='toks'><span class='lab'>llama.cpp</span>{_spans(f, 0)}</div>"
                 f"<div class='toks'><span class='lab'>port</span>{_spans(f, 1)}</div>") if f.spans else ""
    more = f" &middot; {f.cases} divergent cases of its cause in this test" if f.cases > 1 else ""
    if f.replayed:
        more += (" &middot; <b>found only by the replay store</b> (earlier runs' inputs)" if f.replayed >= f.cases
                 else f" &middot; {f.replayed} of them from the replay store")
    return (f"<div class='finding' id='{anchor(f.vocab, f.check, f.flags)}'>"
            f"<b>[{e(f.check)}] {e(f.vocab)}</b> ({e(str(f.pre_type))}) {e(flag_words(f))}{more}"
            f"<p>{subject}<br>first divergent index <b>{d.index}</b>"
            + ("" if f.check in BYTE_CHECKS else f", byte offset <b>{d.byte_offset}</b>"
               + ("" if d.offset_exact else " (lower bound)"))
            + f"</p>{drawn}<table class='win'><tr><th>idx</th><th>llama.cpp</th><th>port</th></tr>"
            f"{''.join(rows)}</table><p>repro: <code class='repro'>{e(f.repro)}</code> "
            f"<button onclick='copyRepro(this)'>copy</button></p></div>")


def _causes(findings: list[Finding]) -> str:
    """One section per cause (:func:`harness.reports.causes.group_causes`): its title,
    diagnosis, rule, where it shows and its cases, its minimal example drawn, and its other
    findings folded under it."""
    out = []
    for c in group_causes(findings):
        others = [k for k in c.findings if k != c.example]
        folded = (f"<details><summary>{len(others)} more finding(s) of this cause</summary>"
                  f"{''.join(_finding(findings[k]) for k in others)}</details>") if others else ""
        out.append(f"<div class='cause' id='cause-{e(c.id)}'><h3>{e(c.id)} &middot; {e(c.title)}</h3>"
                   f"<p>diagnosis: <b>{e(c.diagnosis or 'none (no catalogue variant reproduces it and predicts the port)')}</b>"
                   + (f" (it predicted the port on {c.predictions[1]} of {c.predictions[0]} fresh input(s))"
                      if c.diagnosis and c.predictions else "")
                   + (f"<br>rule: {e(c.rule)}" if c.rule else "")
                   + (f"<br>shows at: {e(c.characterisation)}" if c.characterisation else "")
                   + f"<br>shows in {e(c.where())} &middot; <b>{c.cases}</b> divergent case(s)</p>"
                   f"<p>the smallest example:</p>{_finding(findings[c.example])}{folded}</div>")
    return "".join(out)


def html_page(report: Mapping, findings: list[Finding], reference_findings: list[Finding] = ()) -> str:
    """The page for one ``conformance.json`` object and its findings (the port's, and the
    reference checks' own)."""
    errs = report.get("port_errors", [])
    first = {p["vocab"]: k for k, p in reversed(list(enumerate(errs)))}  # each vocab's first gets the anchor
    errors = "".join(_port_error(p, anchored=first[p["vocab"]] == k) for k, p in enumerate(errs))
    crashed = "".join(_error(x) for x in report.get("errors", []))
    totals = report.get("totals", {})
    status = (f"{totals.get('causes', 0)} cause(s) in {totals.get('divergent_cases', 0)} divergent case(s), "
              f"{totals.get('port_errors', 0)} port error(s), {totals.get('errors', 0)} error(s), "
              f"{totals.get('unsupported_cases', 0)} unsupported case(s), "
              f"{totals.get('not_checked_cases', 0)} not checked, {totals.get('capped_cases', 0)} capped"
              + (f", {totals['slow_runs']} slow run(s) (length scaling)" if totals.get("slow_runs") else ""))
    return (f"<!doctype html><html lang='en'><meta charset='utf-8'><title>llama.cpp tokenizer conformance"
            f"</title><style>{_CSS}</style><script>{_JS}</script>"
            f"<h1>llama.cpp tokenizer conformance</h1><p><b>{e(status)}</b></p>"
            f"{_header(report.get('run', {}), totals)}<h2>Cells</h2>{_grid(report.get('cells', []))}"
            + (f"<h2>Errors: checks that raised</h2>{crashed}" if crashed else "")
            + (f"<h2>Port errors</h2>{errors}" if errors else "")
            + (f"<h2>Causes</h2>{_causes(findings)}" if findings else "")
            + scaling_section(report.get("scaling", []))
            + _reference_section(report.get("reference_checks") or {}, list(reference_findings))
            + "</html>")


def _error(x: Mapping) -> str:
    """One check that raised: its cell, the exception's last line and where it was raised."""
    ident = e(anchor(x["vocab"], x["check"], x["flags"]))
    return (f"<div class='finding' id='x-{ident}'><b>error: [{e(x['check'])}] {e(x['vocab'])} {e(x['flags'])}</b> "
            f"(after {x.get('cases', 0)} case(s); test {e(x.get('test', ''))})"
            f"<pre>{e(x.get('error', ''))}\n  at {e(x.get('error_at', ''))}</pre></div>")


def _reference_section(ref: Mapping, findings: list[Finding]) -> str:
    """The reference's own checks: llama-tokenize (the CLI users run) against libllama in
    process (the oracle), with their own totals; they never touch the port."""
    if not ref.get("cells"):
        return ""
    t = ref.get("totals", {})
    line = (f"{t.get('cases', 0)} case(s), {t.get('divergences', 0)} divergence(s), {t.get('errors', 0)} "
            f"error(s), {t.get('unsupported_cases', 0)} unsupported case(s)")
    return (f"<h2>Reference checks (not the port)</h2><p>llama-tokenize, the CLI users run, against "
            f"libllama in process, the oracle of every cell above: {e(line)}</p>"
            f"{_grid(ref['cells'], columns=('crosscheck',))}"
            + "".join(_error(x) for x in ref.get("errors", []))
            + "".join(map(_finding, findings)))


def _port_error(p: Mapping, anchored: bool) -> str:
    """One root port error; the first of its vocab carries the anchor the grid links to."""
    ident = f" id='e-{e(p['vocab'])}'" if anchored else ""
    tests = e(", ".join(p.get("tests", [])))
    variants = variants_text(p)
    return (f"<div class='finding'{ident}><b>port error: {e(p['vocab'])}</b> "
            f"({p.get('cases', 0)} case(s); tests: {tests})"
            + (f"<p class='variants'>{e(variants)}</p>" if variants else "")
            + f"<pre>{e(p['message'])}</pre></div>")
