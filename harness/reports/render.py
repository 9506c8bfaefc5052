"""A finding as text: the factual block the terminal and logs show, with its i-2..i+5 window.

>>> from harness.reports.diff import Divergence
>>> f = Finding("encode", "qwen2", "QWEN2", False, False, "ab",
...             Divergence(1, 1, True, (64, 65), (64, 66)), pieces={64: b"a", 65: b"b", 66: b"c"})
>>> window_rows(f)[1]
(1, "65 'b'", "66 'c' (ref)")
"""

from __future__ import annotations

from typing import Mapping

from harness.reports.escape import py_literal, render_token
from harness.reports.finding import BYTE_CHECKS, Finding

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

    >>> from harness.reports.diff import Divergence
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
        lines.append(f"  {f.cases} divergent cases of this test have this cause; this one is shrunk")
    lines.append(f"  {'idx':>5}  {'llama.cpp':<36} port")
    for idx, ref, port in window_rows(f):
        mark = ">" if idx == d.index else " "
        lines.append(f"{mark} {idx:>5}  {ref:<36} {port}")
    lines.append(f"  repro: {f.repro}")
    return "\n".join(lines)




def finding_line(f: Finding) -> str:
    """One finding in one line: where it is, its input, and the first divergent index.

    >>> from harness.reports.diff import Divergence
    >>> finding_line(Finding("encode", "qwen2", "QWEN2", True, False, "a\\xa0b",
    ...                      Divergence(1, 1, True, (64, 65), (64, 66)), cases=3))
    '[encode] qwen2 add: "a\\\\xa0b" (3 cases) at token 1: llama.cpp 65, port 66'
    """
    d = f.divergence
    if f.check in BYTE_CHECKS:
        at = f"byte {d.index}: llama.cpp {bytes(d.reference_ids[d.index:d.index + 4])!r}, " \
             f"port {bytes(d.port_ids[d.index:d.index + 4])!r}"
        subject = f"ids {list(f.decoded_ids)[:12]}{'...' if len(f.decoded_ids) > 12 else ''}"
    else:
        ref = d.reference_ids[d.index] if d.index < len(d.reference_ids) else "(end)"
        port = d.port_ids[d.index] if d.index < len(d.port_ids) else "(end)"
        at, subject = f"token {d.index}: llama.cpp {ref}, port {port}", py_literal(f.text)
    return f"[{f.check}] {f.vocab} {f.flags}: {subject} ({f.cases} case{'s' * (f.cases != 1)}) at {at}"


#: Variants of a root port error shown in the terminal and the HTML (all are in the JSON).
VARIANTS_SHOWN = 3


def variants_text(err: Mapping) -> str:
    """A root port error's variants (its distinct messages, harness.errors.root_shape), in one
    line: their count, the shape and the first few; empty for a root of one message.

    >>> print(variants_text({"shape": "token <n> refused", "variant_count": 36,
    ...                      "variants": ["token 151643 refused", "token 151644 refused"]}))
    36 variants of 'token <n> refused': token 151643 refused | token 151644 refused | ...
    """
    count, shown = err.get("variant_count", 1), err.get("variants", [])[:VARIANTS_SHOWN]
    if count < 2:
        return ""
    return (f"{count} variants of {err.get('shape', '')!r}: " + " | ".join(shown)
            + (" | ..." if count > len(shown) else ""))
