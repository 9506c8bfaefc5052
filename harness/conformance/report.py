"""Render divergences: a readable text block, JSON, and an HTML page.

A :class:`Finding` is one divergence with its context (vocab, flags, text,
port, the pieces of the ids in the window). It round-trips through JSON so
xdist workers can ship it to the controller, which renders every report.

JSON schema of ``reports/conformance.json`` (version 2)::

    {"schema": 2,
     "run": {"pin", "port", "profile", "known_examples", "hypothesis_seed", "vocabs",
             "started", "wall_s", "host"},
     "totals": {"cases", "divergences", "divergent_cases", "port_errors", "unsupported_cases",
                "not_checked_cases", "restarts", "cells_by_outcome": {outcome: int}},
     "cells": [                  # one per vocab, check and flag combination
        {"vocab": str, "check": str, "flags": "plain"|"parse"|"add"|"add_parse",
         "cases": int,           # comparisons made with both answers in hand
         "divergences": int,     # distinct divergences (signatures) reported
         "divergent": int,       # cases that diverged
         "port_errors": int, "port_error_cases": int, "unsupported": int,
         "not_checked": int, "capped": int, "restarts": int, "seconds": float,
         "unsupported_reason": str,
         "outcome": "pass"|"divergence"|"port error"|"unsupported"|"partial"|"not checked"}],
     "divergences": [            # one object per distinct divergence, shrunk
        {"check": "golden"|"known"|"encode"|"decode"|"piece"|"crosscheck",
         "vocab": str, "pre_type": str|null, "port": str, "flags": str,
         "add_special": bool, "parse_special": bool,         # encode flags
         "remove_special": bool|null, "unparse_special": bool|null,   # decode (piece: special)
         "text": str, "text_utf8_hex": str,                  # "" for decode and piece
         "index": int,           # first divergent index (a byte index for decode and piece)
         "byte_offset": int,     # offset in the UTF-8 text where the streams part
         "byte_offset_exact": bool,
         "reference_ids": [int], "port_ids": [int],          # decode/piece: the ids given
         "reference_bytes_hex": str, "port_bytes_hex": str,   # decode and piece only
         "pieces": {"<id>": "<hex of llama.cpp's piece>"},
         "port_pieces": {"<id>": "<hex of the port's own piece>"},
         "spans": [[[start, end], ...], [[start, end], ...]], # text bytes per id, both sides
         "signature": [str], "cases": int,                   # its cause, and cases sharing it
         "repro": str}],         # one-line command printing the same diff
     "port_errors": [{"vocab": str, "check": str, "flags": str,   # the first cell it hit
                      "message": str, "stderr": str, "cases": int,
                      "fatal": bool, "tests": [str]}],       # one per root cause
     "restarts": [{"vocab": str, "test": str, "note": str}],
     "vocabs": {"<vocab>": {"<check>": {"cases", "divergences", "divergent",
                                         "port_errors", "unsupported", "not_checked"}}},
     "throughput": {...}}

>>> render_token(b" a\\n\\xe3")
"' a\\\\n\\\\xe3'"
"""

from __future__ import annotations

import shlex
import sys
import unicodedata
from pathlib import Path
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


def python_command() -> str:
    """How to run this Python from the current directory: the venv's path relative to it
    when it lies below (``.venv/bin/python``), else its absolute path."""
    exe = Path(sys.executable)
    try:
        return str(exe.relative_to(Path.cwd()))
    except ValueError:
        return shlex.quote(str(exe))


def _text_arg(text: str) -> str:
    if text and all(_reads_as_itself(c) for c in text) and text == text.strip(" ") and "'" not in text:
        # "--text=-x": a text starting with "-" would otherwise be read as an option.
        return f"--text{'=' if text.startswith('-') else ' '}{shlex.quote(text)}"
    return f"--text-repr '{py_literal(text)}'"


def repro_command(vocab: str, text: str, add_special: bool, parse_special: bool,
                  port: str = "harness", *, python: str = "python", ids=None,
                  remove_special: bool = False, unparse_special: bool = False,
                  piece: bool = False) -> str:
    r"""The one-line ``harness diff`` command for this case.

    Plain printable texts go verbatim in ``--text``; others as a Python literal
    in ``--text-repr`` so control characters survive copy and paste. Decode and
    piece cases pass ``--ids`` instead.

    >>> repro_command("qwen2", "a b", True, False)
    "python -m harness diff --vocab qwen2 --text 'a b' --add-special"
    >>> repro_command("qwen2", "->", False, False)
    "python -m harness diff --vocab qwen2 --text='->'"
    >>> print(repro_command("qwen2", "a ", False, False))
    python -m harness diff --vocab qwen2 --text-repr '"a "'
    >>> repro_command("qwen2", "", False, False, ids=(1, 2), remove_special=True)
    'python -m harness diff --vocab qwen2 --ids 1,2 --remove-special'
    """
    parts = [f"{python} -m harness diff", f"--vocab {shlex.quote(vocab)}"]
    if ids is not None:
        parts.append(f"--ids {','.join(map(str, ids)) or ','}")
        parts += ["--piece"] * piece + ["--remove-special"] * remove_special
        parts += ["--unparse-special"] * unparse_special
    else:
        parts.append(_text_arg(text))
        parts += ["--add-special"] * add_special + ["--parse-special"] * parse_special
    if port != "harness":
        parts.append(f"--port {shlex.quote(port)}")
    return " ".join(parts)


BYTE_CHECKS = ("decode", "piece")  # checks whose divergence indexes bytes, not tokens


@dataclass(frozen=True)
class Finding:
    """One divergence in context. ``pieces`` maps ids in the window to the
    reference's piece (special=True), ``port_pieces`` to the port's own (from its
    ``piece`` op). For "decode" and "piece" the divergence indexes the two
    outputs' bytes and ``decoded_ids`` holds the ids given to both;
    ``remove_special``/``unparse_special`` are their flags (``unparse_special`` is
    ``special`` for a piece). ``cases`` counts the divergent cases of the run
    with this finding's signature (this one included)."""

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
    remove_special: bool | None = None
    unparse_special: bool | None = None
    port_pieces: Mapping[int, bytes] = field(default_factory=dict)
    cases: int = 1
    signature: tuple = ()
    spans: tuple = ()  # ((start, end) per reference id, (start, end) per port id): text bytes

    @property
    def flags(self) -> str:
        """The flag combination's label: plain, parse, add or add_parse (for decode
        read add as remove_special and parse as unparse_special; for piece, parse as special)."""
        if self.check in BYTE_CHECKS:
            a, p = bool(self.remove_special), bool(self.unparse_special)
        else:
            a, p = self.add_special, self.parse_special
        return {(False, False): "plain", (False, True): "parse", (True, False): "add",
                (True, True): "add_parse"}[(a, p)]

    @property
    def repro(self) -> str:
        """See :func:`repro_command`."""
        if self.check in BYTE_CHECKS:
            return repro_command(self.vocab, "", False, False, self.port, python=python_command(),
                                 ids=self.decoded_ids, remove_special=bool(self.remove_special),
                                 unparse_special=bool(self.unparse_special),
                                 piece=self.check == "piece")
        return repro_command(self.vocab, self.text, self.add_special,
                             self.parse_special, self.port, python=python_command())

    def to_json(self) -> dict:
        """The JSON object documented in the module docstring."""
        d = self.divergence
        obj = {"check": self.check, "vocab": self.vocab, "pre_type": self.pre_type,
               "port": self.port, "flags": self.flags, "add_special": self.add_special,
               "parse_special": self.parse_special, "remove_special": self.remove_special,
               "unparse_special": self.unparse_special, "text": self.text,
               "text_utf8_hex": self.text.encode("utf-8", "surrogatepass").hex(),
               "index": d.index, "byte_offset": d.byte_offset,
               "byte_offset_exact": d.offset_exact, "cases": self.cases,
               "signature": list(self.signature), "spans": [list(map(list, side)) for side in self.spans],
               "pieces": {str(k): v.hex() for k, v in self.pieces.items()},
               "port_pieces": {str(k): v.hex() for k, v in self.port_pieces.items()},
               "repro": self.repro}
        if self.check in BYTE_CHECKS:
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
        if obj["check"] in BYTE_CHECKS:
            ref, port = bytes.fromhex(obj["reference_bytes_hex"]), bytes.fromhex(obj["port_bytes_hex"])
            decoded = tuple(obj["reference_ids"])
        else:
            ref, port, decoded = obj["reference_ids"], obj["port_ids"], ()
        div = Divergence(obj["index"], obj["byte_offset"], obj["byte_offset_exact"],
                         tuple(ref), tuple(port))
        pieces = {int(k): bytes.fromhex(v) for k, v in obj["pieces"].items()}
        own = {int(k): bytes.fromhex(v) for k, v in obj.get("port_pieces", {}).items()}
        return cls(obj["check"], obj["vocab"], obj["pre_type"], obj["add_special"],
                   obj["parse_special"], obj["text"], div, obj["port"], pieces, decoded,
                   obj.get("remove_special"), obj.get("unparse_special"), own, obj.get("cases", 1),
                   tuple(obj.get("signature", ())),
                   tuple(tuple(tuple(span) for span in side) for side in obj.get("spans", ())))


def _label(item: int, own: Mapping[int, bytes], ref: Mapping[int, bytes] | None = None) -> str:
    """``id 'piece'`` from ``own``; else ``ref``'s piece marked ``(ref)``; else ``<no piece>``."""
    if item in own:
        return f"{item} {render_token(own[item])}"
    if ref is not None and item in ref:
        return f"{item} {render_token(ref[item])} (ref)"
    return f"{item} <no piece>"


def window_rows(f: Finding) -> list[tuple[int, str, str]]:
    """(index, reference cell, port cell) for window i-2..i+5 of a finding.

    The port's ids carry the port's own pieces (its ``piece`` op); where it gave
    none, llama.cpp's piece for that id, marked ``(ref)``. For decode and piece
    findings: one row, both outputs from 8 bytes before the divergent byte to 24
    after, rendered as text (``...`` marks a cut).
    """
    d = f.divergence
    if f.check in BYTE_CHECKS:
        lo, hi = max(0, d.index - 8), d.index + 24
        cells = [("..." if lo else "") + render_token(bytes(side[lo:hi])) + ("..." if len(side) > hi else "")
                 for side in (d.reference_ids, d.port_ids)]
        return [(d.index, cells[0], cells[1])]
    ref, port = d.window()
    rows = []
    for k in range(max(len(ref), len(port))):
        r = _label(ref[k], f.pieces) if k < len(ref) else "(end)"
        p = _label(port[k], f.port_pieces, f.pieces) if k < len(port) else "(end)"
        rows.append((f.divergence.window_start + k, r, p))
    return rows


def _where(f: Finding) -> str:
    d = f.divergence
    if f.check in BYTE_CHECKS:
        return f"first divergent byte of the {'piece' if f.check == 'piece' else 'decoded output'}: index {d.index}"
    exact = "" if d.offset_exact else " (lower bound: some pieces do not map to text bytes)"
    return f"first divergent token: index {d.index}; streams part at byte {d.byte_offset} of the text{exact}"


def flag_words(f: Finding) -> str:
    """The flags as llama.cpp names them for this check."""
    if f.check == "piece":
        return f"special={bool(f.unparse_special)}"
    if f.check == "decode":
        return f"remove_special={bool(f.remove_special)} unparse_special={bool(f.unparse_special)}"
    return f"add_special={f.add_special} parse_special={f.parse_special}"


def text_block(f: Finding) -> str:
    """The factual text block for one finding (terminal and logs).

    >>> f = Finding("encode", "qwen2", "QWEN2", False, False, "ab",
    ...             Divergence(1, 1, True, (64, 65), (64, 66)), pieces={64: b"a", 65: b"b", 66: b"c"})
    >>> print(text_block(f).splitlines()[0])
    DIVERGENCE [encode] vocab=qwen2 pre_type=QWEN2 add_special=False parse_special=False port=harness
    """
    d = f.divergence
    lines = [f"DIVERGENCE [{f.check}] vocab={f.vocab} pre_type={f.pre_type} {flag_words(f)} port={f.port}"]
    if f.check in BYTE_CHECKS:
        lines.append(f"  ids:   {list(f.decoded_ids)}")
    else:
        data = f.text.encode("utf-8", "surrogatepass")
        lines += [f"  text:  {py_literal(f.text)}",
                  f"  utf-8: {data.hex(' ') or '(empty)'}  ({len(data)} bytes)"]
    lines.append(f"  {_where(f)}")
    if f.cases > 1:
        lines.append(f"  {f.cases} divergent cases of this run share this signature; this is the first, shrunk")
    lines.append(f"  {'idx':>5}  {'llama.cpp':<36} port")
    for idx, ref, port in window_rows(f):
        mark = ">" if idx == d.index else " "
        lines.append(f"{mark} {idx:>5}  {ref:<36} {port}")
    lines.append(f"  repro: {f.repro}")
    return "\n".join(lines)


CHECK_COLUMNS = ("golden", "known", "encode", "decode", "piece", "crosscheck")
FLAG_ROWS = ("plain", "parse", "add", "add_parse")
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
