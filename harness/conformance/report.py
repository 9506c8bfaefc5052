"""Render divergences: a readable text block, JSON, and an HTML page.

A :class:`Finding` is one divergence with its context (vocab, flags, text,
port, the pieces of the ids in the window). It round-trips through JSON so
xdist workers can ship it to the controller, which renders every report.

JSON schema of ``reports/conformance.json`` (version 1)::

    {"schema": 1,
     "divergences": [            # one object per divergence, minimal text
        {"check": "encode"|"decode"|"golden"|"crosscheck",
         "vocab": str, "pre_type": str|null, "port": str,
         "add_special": bool, "parse_special": bool,
         "text": str, "text_utf8_hex": str,
         "index": int,           # first divergent index (a byte index for "decode")
         "byte_offset": int,     # offset in the UTF-8 text where the streams part
         "byte_offset_exact": bool,
         "reference_ids": [int], "port_ids": [int],
         "reference_bytes_hex": str, "port_bytes_hex": str,   # "decode" only
         "pieces": {"<id>": "<hex of the reference's piece>"},
         "repro": str}],         # one-line command printing the same diff
     "port_errors": [{"vocab": str, "test": str, "message": str}],
     "vocabs": {"<vocab>": {"<check>": {"cases": int, "divergences": int,
                                         "port_errors": int}}}}

>>> render_token(b" a\\n\\xe3")
"' a\\\\n\\\\xe3'"
"""

from __future__ import annotations

import html
import shlex
import unicodedata
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from harness.conformance.diff import Divergence

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", "'": "\\'"}


def _reads_as_itself(ch: str) -> bool:
    """Printable, not whitespace (except ' '), and not a combining mark: marks
    would silently attach to the quote or the previous character."""
    if ch == " ":
        return True
    return ch.isprintable() and not ch.isspace() and unicodedata.category(ch)[0] != "M"


def render_char(ch: str) -> str:
    """One code point, escaped if it would not read as itself on a terminal.

    >>> render_char("a"), render_char("\\xa0"), render_char("\\n")
    ('a', '\\\\u00a0', '\\\\n')
    """
    if ch in _NAMED:
        return _NAMED[ch]
    if _reads_as_itself(ch):
        return ch
    cp = ord(ch)
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def render_token(piece: bytes) -> str:
    """A piece (bytes) as a quoted, readable string, like minbpe's render_token.

    Control and non-ASCII whitespace characters become ``\\uXXXX``; bytes
    that are not valid UTF-8 become ``\\xNN`` (lowercase), so a partial
    UTF-8 piece is told apart from a whole code point.

    >>> render_token(b"\\xc2\\xa0x"), render_token(b"\\xff")
    ("'\\\\u00a0x'", "'\\\\xff'")
    """
    out, i = [], 0
    while i < len(piece):
        for n in (1, 2, 3, 4):
            try:
                ch = piece[i:i + n].decode("utf-8")
            except UnicodeDecodeError:
                continue
            out.append(render_char(ch))
            i += n
            break
        else:
            out.append(f"\\x{piece[i]:02x}")
            i += 1
    return "'" + "".join(out) + "'"


def py_literal(text: str) -> str:
    r"""A double-quoted Python literal of ``text`` with no single quote in it
    (so it can sit inside shell single quotes) and non-printables escaped.

    >>> print(py_literal("it's\xa0a\n"))
    "it\x27s\xa0a\n"
    """
    out = []
    for ch in text:
        cp = ord(ch)
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch == "'":
            out.append("\\x27")
        elif ch in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[ch])
        elif _reads_as_itself(ch):
            out.append(ch)
        elif cp < 0x100:
            out.append(f"\\x{cp:02x}")
        else:
            out.append(f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}")
    return '"' + "".join(out) + '"'


def repro_command(vocab: str, text: str, add_special: bool, parse_special: bool,
                  port: str = "harness") -> str:
    r"""The one-line ``python -m harness diff`` command for this case.

    Plain printable texts go verbatim in ``--text``; others as a Python literal
    in ``--text-repr`` so control characters survive copy and paste.

    >>> repro_command("qwen2", "a b", True, False)
    "python -m harness diff --vocab qwen2 --text 'a b' --add-special"
    >>> repro_command("qwen2", "->", False, False)
    "python -m harness diff --vocab qwen2 --text='->'"
    >>> print(repro_command("qwen2", "a\xa0", False, False))
    python -m harness diff --vocab qwen2 --text-repr '"a\xa0"'
    """
    if text and all(_reads_as_itself(c) for c in text) and text == text.strip(" ") and "'" not in text:
        # "--text=-x": a text starting with "-" would otherwise be read as an option.
        arg = f"--text{'=' if text.startswith('-') else ' '}{shlex.quote(text)}"
    else:
        arg = f"--text-repr '{py_literal(text)}'"
    parts = ["python -m harness diff", f"--vocab {shlex.quote(vocab)}", arg]
    parts += ["--add-special"] * add_special + ["--parse-special"] * parse_special
    if port != "harness":
        parts.append(f"--port {shlex.quote(port)}")
    return " ".join(parts)


@dataclass(frozen=True)
class Finding:
    """One divergence in context. ``pieces`` maps ids in the window to the
    reference's piece (special=True); ``decoded`` holds the two decode
    outputs for a "decode" check (then the divergence indexes bytes)."""

    check: str
    vocab: str
    pre_type: str | None
    add_special: bool
    parse_special: bool
    text: str
    divergence: Divergence
    port: str = "harness"
    pieces: Mapping[int, bytes] = field(default_factory=dict)
    decoded_ids: tuple[int, ...] = ()

    @property
    def repro(self) -> str:
        """See :func:`repro_command`."""
        return repro_command(self.vocab, self.text, self.add_special,
                             self.parse_special, self.port)

    def to_json(self) -> dict:
        """The JSON object documented in the module docstring."""
        d = self.divergence
        obj = {"check": self.check, "vocab": self.vocab, "pre_type": self.pre_type,
               "port": self.port, "add_special": self.add_special,
               "parse_special": self.parse_special, "text": self.text,
               "text_utf8_hex": self.text.encode("utf-8", "surrogatepass").hex(),
               "index": d.index, "byte_offset": d.byte_offset,
               "byte_offset_exact": d.offset_exact,
               "pieces": {str(k): v.hex() for k, v in self.pieces.items()},
               "repro": self.repro}
        if self.check == "decode":
            obj["reference_ids"] = obj["port_ids"] = list(self.decoded_ids)
            obj["reference_bytes_hex"] = bytes(d.reference_ids).hex()
            obj["port_bytes_hex"] = bytes(d.port_ids).hex()
        else:
            obj["reference_ids"], obj["port_ids"] = list(d.reference_ids), list(d.port_ids)
        return obj

    @classmethod
    def from_json(cls, obj: dict) -> "Finding":
        """Inverse of :meth:`to_json`.

        >>> f = Finding("encode", "v", None, False, False, "x", Divergence(0, 0, True, (1,), (2,)))
        >>> Finding.from_json(f.to_json()) == f
        True
        """
        if obj["check"] == "decode":
            ref, port = bytes.fromhex(obj["reference_bytes_hex"]), bytes.fromhex(obj["port_bytes_hex"])
            decoded = tuple(obj["reference_ids"])
        else:
            ref, port, decoded = obj["reference_ids"], obj["port_ids"], ()
        div = Divergence(obj["index"], obj["byte_offset"], obj["byte_offset_exact"],
                         tuple(ref), tuple(port))
        pieces = {int(k): bytes.fromhex(v) for k, v in obj["pieces"].items()}
        return cls(obj["check"], obj["vocab"], obj["pre_type"], obj["add_special"],
                   obj["parse_special"], obj["text"], div, obj["port"], pieces, decoded)


def _label(item: int, pieces: Mapping[int, bytes]) -> str:
    piece = pieces.get(item)
    return f"{item} {render_token(piece) if piece is not None else '<no piece>'}"


def window_rows(f: Finding) -> list[tuple[int, str, str]]:
    """(index, reference cell, port cell) for window i-2..i+5 of a finding.

    For a decode finding: one row, both outputs from 8 bytes before the
    divergent byte to 24 after, rendered as text (``...`` marks a cut).
    """
    d = f.divergence
    if f.check == "decode":
        lo, hi = max(0, d.index - 8), d.index + 24
        cells = [("..." if lo else "") + render_token(bytes(side[lo:hi])) + ("..." if len(side) > hi else "")
                 for side in (d.reference_ids, d.port_ids)]
        return [(d.index, cells[0], cells[1])]
    ref, port = d.window()
    rows = []
    for k in range(max(len(ref), len(port))):
        cells = [(_label(side[k], f.pieces) if k < len(side) else "(end)")
                 for side in (ref, port)]
        rows.append((f.divergence.window_start + k, cells[0], cells[1]))
    return rows


def text_block(f: Finding) -> str:
    """The factual text block for one finding (terminal and logs).

    >>> f = Finding("encode", "qwen2", "QWEN2", False, False, "ab",
    ...             Divergence(1, 1, True, (64, 65), (64, 66)), pieces={64: b"a", 65: b"b", 66: b"c"})
    >>> print(text_block(f).splitlines()[0])
    DIVERGENCE [encode] vocab=qwen2 pre_type=QWEN2 add_special=False parse_special=False port=harness
    """
    d = f.divergence
    data = f.text.encode("utf-8", "surrogatepass")
    exact = "" if d.offset_exact else " (lower bound: some pieces do not map to text bytes)"
    where = (f"first divergent byte of the decoded output: index {d.index}" if f.check == "decode"
             else f"first divergent token: index {d.index}; streams part at byte {d.byte_offset} "
                  f"of the text{exact}")
    lines = [f"DIVERGENCE [{f.check}] vocab={f.vocab} pre_type={f.pre_type} "
             f"add_special={f.add_special} parse_special={f.parse_special} port={f.port}",
             f"  text:  {py_literal(f.text)}",
             f"  utf-8: {data.hex(' ') or '(empty)'}  ({len(data)} bytes)",
             f"  {where}"]
    if f.check == "decode":
        lines.append(f"  decoded ids: {list(f.decoded_ids)}")
    lines.append(f"  {'idx':>5}  {'reference':<36} port")
    for idx, ref, port in window_rows(f):
        mark = ">" if idx == d.index else " "
        lines.append(f"{mark} {idx:>5}  {ref:<36} {port}")
    lines.append(f"  repro: {f.repro}")
    return "\n".join(lines)


def summary_table(counts: Mapping[str, Mapping[str, Mapping[str, int]]],
                  checks: Iterable[str] = ("golden", "encode", "decode", "crosscheck")) -> str:
    """Vocab x check table of 'cases/divergences' (+ '!N' port errors).

    >>> print(summary_table({"qwen2": {"encode": {"cases": 10, "divergences": 1, "port_errors": 0}}}, ["encode"]))
    vocab       encode
    qwen2       10/1
    """
    checks = list(checks)
    width = max([len(v) for v in counts] + [10]) + 2
    lines = ["vocab".ljust(width) + "".join(c.ljust(14) for c in checks).rstrip()]
    for vocab in sorted(counts):
        row = vocab.ljust(width)
        for c in checks:
            n = counts[vocab].get(c)
            cell = "-" if n is None else f"{n.get('cases', 0)}/{n.get('divergences', 0)}"
            if n and n.get("port_errors"):
                cell += f" !{n['port_errors']}"
            row += cell.ljust(14)
        lines.append(row.rstrip())
    return "\n".join(lines)


_CSS = """body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:2px 8px;font-family:monospace;white-space:pre}
tr.div td{background:#fdd;font-weight:bold}tr.after td{color:#888}.ok{color:#070}.bad{color:#a00}
h2{margin-top:2em;font-size:1.1em}"""


def _html_finding(f: Finding) -> str:
    d, e = f.divergence, html.escape
    rows = []
    for idx, ref, port in window_rows(f):
        cls = "div" if idx == d.index else ("after" if idx > d.index else "")
        rows.append(f"<tr class='{cls}'><td>{idx}</td><td>{e(ref)}</td><td>{e(port)}</td></tr>")
    data = f.text.encode("utf-8", "surrogatepass")
    return (f"<h2 class='bad'>[{e(f.check)}] {e(f.vocab)} ({e(str(f.pre_type))}) "
            f"add_special={f.add_special} parse_special={f.parse_special} port={e(f.port)}</h2>"
            f"<p>text <code>{e(py_literal(f.text))}</code> &middot; utf-8 <code>{e(data.hex(' '))}</code>"
            f"<br>first divergent index <b>{d.index}</b>, byte offset <b>{d.byte_offset}</b>"
            f"{'' if d.offset_exact else ' (lower bound)'}</p>"
            f"<table><tr><th>idx</th><th>reference</th><th>port</th></tr>{''.join(rows)}</table>"
            f"<p>repro: <code>{e(f.repro)}</code></p>")


def html_page(findings: list[Finding], counts: Mapping, port_errors: list[dict]) -> str:
    """A self-contained HTML report: summary table, port errors, then each
    divergence with the two token streams side by side."""
    e = html.escape
    status = (f"<p class='bad'>{len(findings)} divergence(s), {len(port_errors)} port error(s)</p>"
              if findings or port_errors else "<p class='ok'>no divergences</p>")
    errors = "".join(f"<h2 class='bad'>port error: {e(p['vocab'])} ({e(p['test'])})</h2>"
                     f"<pre>{e(p['message'])}</pre>" for p in port_errors)
    return (f"<!doctype html><meta charset='utf-8'><title>conformance</title><style>{_CSS}</style>"
            f"<h1>llama.cpp tokenizer conformance</h1>{status}"
            f"<pre>{e(summary_table(counts))}</pre>{errors}"
            + "".join(_html_finding(f) for f in findings))
