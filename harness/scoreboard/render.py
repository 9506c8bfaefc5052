"""Render the scoreboard: ``scoreboard.md``, ``scoreboard.html``, ``scoreboard.json``.

Rows are vocabs, columns are ports. A cell shows its status and three rates:
golden ``.inp``/``.out`` cases passed, generated flag combinations clean
(Hypothesis stops each at its first divergence), and corpus chunks agreeing
(the sample of :mod:`.sample`). Each cell links to its section, which holds
the diff of every divergence: flags, text, first divergent index, the ids
i-2..i+5 of both streams with the reference's pieces.

>>> anchor("transformers", "llama-spm")
'transformers--llama-spm'
>>> render_piece(b"\\xe2\\x96\\x81a\\n")
"'▁a\\\\n'"
"""

from __future__ import annotations

import html
import json
from typing import Sequence

from harness.scoreboard.results import Cell, minimal_examples

MARK = {"pass": "✅ pass", "diverges": "❌ diverges", "unsupported": "⚪ unsupported",
        "port-error": "💥 port error", "not-run": "· not run"}


def anchor(port: str, vocab: str) -> str:
    """An id usable in both Markdown (GitHub slugs keep '-') and HTML."""
    return f"{port}--{vocab}".lower().replace(" ", "-").replace(".", "-")


def render_piece(piece: bytes) -> str:
    """A piece as a quoted, escaped string; invalid UTF-8 bytes as ``\\xNN``."""
    return repr(piece.decode("utf-8", "backslashreplace"))


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
    """``add_special=B parse_special=B``."""
    return f"add_special={d['add_special']} parse_special={d['parse_special']}"


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
    lines = [f"- [{d.get('check', 'sample')}] {flags(d)}: text {md_code(repr(d['text']))}, "
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
    sections = [c for c in cells if c.status in ("diverges", "unsupported", "port-error")]
    if sections:
        lines += ["## Divergences and unsupported vocabs", ""]
        for c in sections:
            lines += _md_section(c)
    return "\n".join(lines).rstrip() + "\n"


# --- HTML --------------------------------------------------------------------------------------

_CSS = """body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}
td.pass{background:#e8f6e8}td.diverges{background:#fde8e8}td.unsupported{background:#eee;color:#555}
td.port-error{background:#fff0d0}code,pre,.mono{font-family:monospace}
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
    return (f"<h4>[{e(d.get('check', 'sample'))}] {e(flags(d))}</h4>"
            f"<p>text <code>{e(repr(d['text']))}</code> · utf-8 <code>{e(data.hex(' '))}</code>"
            f"<br>first divergent index <b>{d['index']}</b>"
            + (f", byte offset <b>{d['byte_offset']}</b>" if "byte_offset" in d else "") + "</p>"
            f"<table><tr><th>idx</th><th>llama.cpp</th><th>port</th></tr>{rows}</table>{repro}")


def _html_section(c: Cell) -> str:
    e = html.escape
    parts = [f"<h3 id='{anchor(c.port, c.vocab)}'>{e(c.port)} × {e(c.vocab)}: {e(MARK[c.status])}</h3>",
             f"<p><a href='scoreboard/{e(c.port)}/{e(c.vocab)}/conformance.html'>engine report</a></p>"]
    if c.error:
        parts.append(f"<pre>{e(c.error.strip()[:4000])}</pre>")
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
