"""The scoreboard in the reports room: its cells, and ``scoreboard.md``, ``.html``, ``.json``.

Rows are vocabs, columns are ports. A cell shows its status and three rates:
golden ``.inp``/``.out`` cases passed, generated flag combinations clean
(no divergence in the whole budget of the encode and decode tests), and corpus chunks agreeing
(the sample of :mod:`.sample`). A port reads ``pass`` on a vocab only where every encode,
decode and piece cell ran and passed; where nothing diverged but some did not, it reads
``incomplete``. Each cell links to its section, which holds the diff of every divergence:
flags (a decode's remove_special/unparse_special, a piece's special), text or ids, first
divergent index, the ids i-2..i+5 of both streams with the reference's pieces (a decode's
ids and both byte strings).

>>> anchor("transformers", "llama-spm")
'transformers--llama-spm'
>>> render_piece(b"\\xe2\\x96\\x81a\\n")
"'▁a\\\\n'"
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from typing import Sequence

from harness.reports.escape import render_token

GENERATED = ("encode", "decode")
#: The checks whose every cell must pass for a port to read pass on a vocab.
REQUIRED_CHECKS = ("encode", "decode", "piece")
N_COMBOS = 4  # the suite runs all four (add_special, parse_special) combinations


def flag_pair(d: dict) -> tuple[bool, bool]:
    """A divergence's two flags as its check names them: (add_special, parse_special) for
    encode and golden, (remove_special, unparse_special) for decode, (special, special) for piece.

    >>> flag_pair({"check": "decode", "add_special": False, "parse_special": False,
    ...            "remove_special": True, "unparse_special": False})
    (True, False)
    """
    if d.get("check") == "decode":
        return bool(d.get("remove_special")), bool(d.get("unparse_special"))
    if d.get("check") == "piece":
        return bool(d.get("unparse_special")), bool(d.get("unparse_special"))
    return d["add_special"], d["parse_special"]


@dataclass
class Cell:
    """One port on one vocab.

    ``status``: ``pass`` (every encode, decode and piece cell ran and passed),
    ``incomplete`` (no divergence, but not all of them ran and passed), ``diverges``,
    ``unsupported`` (the port cannot load the vocab; ``error`` says why), ``port-error``
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
        """Flag combinations with a divergence in ``checks`` (for decode: remove_special,
        unparse_special; see :func:`flag_pair`)."""
        return sorted({flag_pair(d) for d in self.divergences if d["check"] in checks})

    def shortfall(self) -> list[str]:
        """The encode, decode and piece cells that did not run and pass ('check flags: outcome').

        >>> Cell("p", "v", combos={"encode": {"plain": "pass"}, "decode": {"parse": "unsupported"}}).shortfall()
        ['decode parse: unsupported', 'piece: no cell']
        """
        out = []
        for check in REQUIRED_CHECKS:
            outcomes = self.combos.get(check) or {}
            if not outcomes:
                out.append(f"{check}: no cell")
            out += [f"{check} {flags}: {o}" for flags, o in outcomes.items() if o != "pass"]
        return out

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


def _size(d: dict) -> tuple:
    """What 'smallest' means: the text for encode and golden, the ids for decode and piece."""
    if d.get("check") in ("decode", "piece"):
        ids = d.get("reference_ids") or []
        return (len(ids), ids)
    return (len(d["text"]), d["text"])


def minimal_examples(cell: Cell) -> list[dict]:
    """The smallest divergence of each check (golden, encode, decode, piece: the shortest
    text, or for decode and piece the shortest id list) and of the corpus sample (whose
    examples carry no "check"), in that order.

    >>> [d["text"] for d in minimal_examples(Cell("p", "v", divergences=[
    ...     {"text": "abc", "check": "encode"}, {"text": "a", "check": "golden"},
    ...     {"text": "b", "check": "encode"}]))]
    ['a', 'b']
    >>> [d["reference_ids"] for d in minimal_examples(Cell("p", "v", divergences=[
    ...     {"text": "", "check": "decode", "reference_ids": [5, 6]},
    ...     {"text": "", "check": "decode", "reference_ids": [7]}]))]
    [[7]]
    """
    pools = [[d for d in cell.divergences if d["check"] == check] for check in ("golden",) + REQUIRED_CHECKS]
    pools.append((cell.sample or {}).get("examples") or [])
    return [min(pool, key=_size) for pool in pools if pool]


MARK = {"pass": "✅ pass", "incomplete": "🟡 incomplete", "diverges": "❌ diverges",
        "unsupported": "⚪ unsupported", "port-error": "💥 port error", "not-run": "· not run"}


def anchor(port: str, vocab: str) -> str:
    """An id usable in both Markdown (GitHub slugs keep '-') and HTML."""
    return f"{port}--{vocab}".lower().replace(" ", "-").replace(".", "-")


def render_piece(piece: bytes) -> str:
    """A piece as a quoted, escaped string (:func:`harness.reports.escape.render_token`)."""
    return render_token(piece)


def _piece_of(d: dict, id_: int) -> str:
    hexed = (d.get("pieces") or {}).get(str(id_))
    return "" if hexed is None else render_piece(bytes.fromhex(hexed))


def window_rows(d: dict) -> list[tuple[int, str, str]]:
    """(index, reference, port) rows around the first divergence of one divergence object.

    For ``decode`` it compares bytes (``*_bytes_hex``) around the byte index.

    >>> window_rows({"check": "encode", "index": 1, "reference_ids": [5, 6], "port_ids": [5, 7]})
    [(0, '5', '5'), (1, '6', '7')]
    """
    i = int(d["index"])
    if d["check"] == "decode" and "reference_bytes_hex" in d:
        ref, port = bytes.fromhex(d["reference_bytes_hex"]), bytes.fromhex(d["port_bytes_hex"])
        lo = max(0, i - 16)
        return [(lo, render_piece(ref[lo:i + 24]), render_piece(port[lo:i + 24]))]
    lo, hi = max(0, i - 2), i + 6
    ref, port = d["reference_ids"], d["port_ids"]
    rows = []
    for k in range(lo, min(hi, max(len(ref), len(port)))):
        cells = [f"{side[k]} {_piece_of(d, side[k])}".rstrip() if k < len(side) else "(end)"
                 for side in (ref, port)]
        rows.append((k, cells[0], cells[1]))
    return rows


def flags(d: dict) -> str:
    """The flags as llama.cpp names them for the divergence's check.

    >>> flags({"check": "decode", "add_special": False, "parse_special": False,
    ...        "remove_special": True, "unparse_special": True})
    'remove_special=True unparse_special=True'
    """
    if d.get("check") == "decode":
        return f"remove_special={bool(d.get('remove_special'))} unparse_special={bool(d.get('unparse_special'))}"
    if d.get("check") == "piece":
        return f"special={bool(d.get('unparse_special'))}"
    return f"add_special={d['add_special']} parse_special={d['parse_special']}"


def subject(d: dict) -> str:
    """What diverged, plainly: the text, or a decode's ids and both byte strings in full."""
    if d.get("check") in ("decode", "piece") and "reference_bytes_hex" in d:
        ref, port = bytes.fromhex(d["reference_bytes_hex"]), bytes.fromhex(d["port_bytes_hex"])
        return (f"ids {d.get('reference_ids')}; llama.cpp bytes {render_piece(ref)}; "
                f"port bytes {render_piece(port)}")
    return f"text {d['text']!r}"


# --- Markdown ----------------------------------------------------------------------------------

def _md_cell(c: Cell) -> str:
    if c.status == "unsupported":
        return f"[{MARK[c.status]}](#{anchor(c.port, c.vocab)})"
    rates = f"golden {c.golden_text()} · gen {c.generated_text()} · corpus {c.sample_text()}"
    label = MARK[c.status]
    if c.status in ("diverges", "port-error"):
        label = f"[{label}](#{anchor(c.port, c.vocab)})"
    return f"{label}<br>{rates}"


def md_code(s: str) -> str:
    """``s`` as an inline code span that is safe inside a Markdown table cell.

    >>> print(md_code("a|b`c"))
    `` a\\|b`c ``
    """
    s = s.replace("|", "\\|")
    return f"`` {s} ``" if "`" in s else f"`{s}`"


def _md_diff(d: dict) -> list[str]:
    what = (md_code(subject(d)) if d.get("check") in ("decode", "piece") else
            f"text {md_code(repr(d['text']))}")
    lines = [f"- [{d.get('check', 'sample')}] {flags(d)}: {what}, "
             f"first divergent index {d['index']}", "",
             "  | idx | llama.cpp | port |", "  |---:|---|---|"]
    for idx, ref, port in window_rows({"check": "encode", **d}):
        lines.append(f"  | {idx} | {md_code(ref)} | {md_code(port)} |")
    if d.get("repro"):
        lines += ["", f"  repro: {md_code(d['repro'])}"]
    return lines + [""]


def _md_section(c: Cell) -> list[str]:
    lines = [f'<a id="{anchor(c.port, c.vocab)}"></a>', f"### {c.port} × {c.vocab}: {MARK[c.status]}", ""]
    if c.error:
        lines += ["```", c.error.strip()[:2000], "```", ""]
    if c.status == "incomplete":
        lines += ["Not every encode, decode and piece cell ran and passed: " + "; ".join(c.shortfall()), ""]
    shown = minimal_examples(c)
    if shown:
        lines += ["Minimal examples (shortest text per check):", ""]
        for d in shown:
            lines += _md_diff(d)
    hidden = len(c.divergences) + len((c.sample or {}).get("examples") or []) - len(shown)
    if hidden > 0:
        lines += [f"{hidden} more in the HTML page and "
                  f"`reports/scoreboard/{c.port}/{c.vocab}/conformance.json`.", ""]
    return lines


def markdown(cells: Sequence[Cell], ports: Sequence[str], vocabs: Sequence[str], meta: dict) -> str:
    """The whole ``scoreboard.md``."""
    by = {(c.port, c.vocab): c for c in cells}
    lines = ["# Tokenizer port scoreboard", "",
             f"llama.cpp `{meta.get('llama_cpp', '?')}` · Hypothesis profile `{meta.get('profile', '?')}`"
             f" · {meta.get('generated_at', '')}", "",
             "golden = .inp/.out cases passed · gen = flag combinations (of 4) with no divergence in the "
             "generated tests, for encode and decode · corpus = 4 KB corpus chunks × 4 flag combinations agreeing", "",
             "| vocab | " + " | ".join(ports) + " |", "|---|" + "---|" * len(ports)]
    for v in vocabs:
        lines.append(f"| {v} | " + " | ".join(_md_cell(by.get((p, v), Cell(p, v))) for p in ports) + " |")
    lines.append("")
    sections = [c for c in cells if c.status in ("diverges", "unsupported", "port-error", "incomplete")]
    if sections:
        lines += ["## Divergences, incomplete and unsupported vocabs", ""]
        for c in sections:
            lines += _md_section(c)
    return "\n".join(lines).rstrip() + "\n"


# --- HTML --------------------------------------------------------------------------------------

_CSS = """body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}
td.pass{background:#e8f6e8}td.diverges{background:#fde8e8}td.unsupported{background:#eee;color:#555}
td.port-error{background:#fff0d0}td.incomplete{background:#fff8d0}code,pre,.mono{font-family:monospace}
tr.at td{background:#fdd;font-weight:bold}small{color:#555}"""


def _html_cell(c: Cell) -> str:
    e = html.escape
    body = f"<a href='#{anchor(c.port, c.vocab)}'>{e(MARK[c.status])}</a>"
    if c.status == "unsupported":
        body += f"<br><small>{e(c.error[:160])}</small>"
    else:
        body += (f"<br><small>golden {c.golden_text()} · gen {c.generated_text()} · "
                 f"corpus {c.sample_text()}</small>")
    return f"<td class='{c.status}'>{body}</td>"


def _html_diff(d: dict) -> str:
    e = html.escape
    rows = "".join(f"<tr class='{'at' if idx == int(d['index']) else ''}'><td>{idx}</td>"
                   f"<td class='mono'>{e(ref)}</td><td class='mono'>{e(port)}</td></tr>"
                   for idx, ref, port in window_rows({"check": "encode", **d}))
    data = d["text"].encode("utf-8", "surrogatepass")
    repro = f"<p>repro: <code>{e(d['repro'])}</code></p>" if d.get("repro") else ""
    what = (f"<code>{e(subject(d))}</code>" if d.get("check") in ("decode", "piece") else
            f"text <code>{e(repr(d['text']))}</code> · utf-8 <code>{e(data.hex(' '))}</code>")
    return (f"<h4>[{e(d.get('check', 'sample'))}] {e(flags(d))}</h4>"
            f"<p>{what}"
            f"<br>first divergent index <b>{d['index']}</b>"
            + (f", byte offset <b>{d['byte_offset']}</b>" if "byte_offset" in d else "") + "</p>"
            f"<table><tr><th>idx</th><th>llama.cpp</th><th>port</th></tr>{rows}</table>{repro}")


def _html_section(c: Cell) -> str:
    e = html.escape
    parts = [f"<h3 id='{anchor(c.port, c.vocab)}'>{e(c.port)} × {e(c.vocab)}: {e(MARK[c.status])}</h3>",
             f"<p><a href='scoreboard/{e(c.port)}/{e(c.vocab)}/conformance.html'>engine report</a></p>"]
    if c.error:
        parts.append(f"<pre>{e(c.error.strip()[:4000])}</pre>")
    if c.status == "incomplete":
        parts.append(f"<p>Not every encode, decode and piece cell ran and passed: {e('; '.join(c.shortfall()))}</p>")
    parts += [_html_diff(d) for d in c.divergences]
    parts += [_html_diff(d) for d in (c.sample or {}).get("examples") or []]
    parts += [f"<p>llama.cpp CLI vs in-process (oracle, not the port):</p>{_html_diff(d)}"
              for d in c.oracle]
    return "".join(parts)


def html_page(cells: Sequence[Cell], ports: Sequence[str], vocabs: Sequence[str], meta: dict) -> str:
    """The whole ``scoreboard.html``: the table, then one section per cell."""
    e = html.escape
    by = {(c.port, c.vocab): c for c in cells}
    head = "<tr><th>vocab</th>" + "".join(f"<th>{e(p)}</th>" for p in ports) + "</tr>"
    rows = "".join(f"<tr><th>{e(v)}</th>" + "".join(_html_cell(by.get((p, v), Cell(p, v)))
                                                   for p in ports) + "</tr>" for v in vocabs)
    sections = "".join(_html_section(by[(p, v)]) for p in ports for v in vocabs if (p, v) in by)
    return (f"<!doctype html><meta charset='utf-8'><title>tokenizer port scoreboard</title>"
            f"<style>{_CSS}</style><h1>Tokenizer port scoreboard</h1>"
            f"<p>llama.cpp <code>{e(str(meta.get('llama_cpp', '?')))}</code> · profile "
            f"<code>{e(str(meta.get('profile', '?')))}</code> · {e(str(meta.get('generated_at', '')))}</p>"
            f"<p><small>golden = .inp/.out cases passed · gen = flag combinations (of 4) with no "
            f"divergence in the generated tests, for encode and decode · corpus = 4 KB corpus chunks × 4 flag combinations agreeing"
            f"</small></p><table>{head}{rows}</table><h2>Details</h2>{sections}")


def json_text(cells: Sequence[Cell], ports: Sequence[str], vocabs: Sequence[str], meta: dict) -> str:
    """``scoreboard.json``: ``{"schema": 1, "meta", "ports", "vocabs", "cells": [Cell.to_json()]}``."""
    return json.dumps({"schema": 1, "meta": meta, "ports": list(ports), "vocabs": list(vocabs),
                       "cells": [c.to_json() for c in cells]}, indent=1, ensure_ascii=False) + "\n"
