"""The catalogue of rule variants (harness.diagnosis), run on one vocab's findings.

The engine asks three questions of it (:class:`harness.engine.causes.Diagnoser`):

- :meth:`Diagnoser.diagnose`: which variants reproduce the port's exact output on all of
  a cause's findings? Each comes back as an *explanation* ``(key, title, rule)``; the key
  names the variant and, for a variant with a free parameter, the value it was bound to
  (``char_read_as_space:'\\xa0'``), so U+00A0 and U+0085 read as spaces stay two causes;
- :meth:`Diagnoser.explains`: does one of these explanations reproduce another finding?
- :meth:`Diagnoser.together`: does a finding no single explanation reproduces come from
  two known causes at once? A port with several bugs meets some texts with two of them
  (``"00\\xa0"``: digits split and NBSP read as a space). When one of the two is an input
  transform (a text variant), the other explains the port's output on the transformed
  text; when one adds tokens of its own (a forced BOS: ``undo``), some catalogue variant
  explains what is left, even one no case of this test shows alone; such a case belongs
  to the known causes, not to a new one.

The harness tokenizer for the vocab loads on first use: a clean run never loads it.

>>> key_of(type("V", (), {"name": "nfc_input", "param": None})())
'nfc_input'
"""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property
from pathlib import Path

from harness.errors import HarnessError
from harness.reports.finding import Finding


def key_of(variant) -> str:
    """An explanation's key: the variant's name, and its bound parameter if it has one."""
    return variant.name if variant.param is None else f"{variant.name}:{variant.param!r}"


def name_of(key: str) -> str:
    """The catalogue name in an explanation key.

    >>> name_of("char_read_as_space:'\\\\xa0'")
    'char_read_as_space'
    """
    return key.split(":", 1)[0]


class Diagnoser:
    """The catalogue over one vocab file (see the module docstring)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._bound: dict[str, object] = {}  # key -> the bound variant that produced it

    @cached_property
    def tok(self):
        """The harness tokenizer for this vocab, which the variants change."""
        from harness.tokenizer import Tokenizer
        return Tokenizer.from_gguf(self.path)

    @staticmethod
    def case_of(f: Finding, text=None):
        """A finding as the catalogue's :class:`harness.diagnosis.Case` (``text`` replaces its text)."""
        from harness.diagnosis import Case
        d = f.divergence
        if f.check == "decode":
            return Case("decode", tuple(f.decoded_ids), (bool(f.remove_special), bool(f.unparse_special)),
                        bytes(d.port_ids))
        if f.check == "piece":
            return Case("piece", tuple(f.decoded_ids), (bool(f.unparse_special), False), bytes(d.port_ids))
        return Case(f.check, f.text if text is None else text, (f.add_special, f.parse_special),
                    tuple(d.port_ids))

    def diagnose(self, findings: list[Finding]) -> tuple:
        """``(key, title, rule)`` of every catalogue variant that reproduces the port's exact
        output on all ``findings``, most specific first."""
        from harness.diagnosis import explain
        cases = [self.case_of(f) for f in findings]
        out = []
        for v in explain(self.tok, cases):
            key = key_of(v)
            self._bound.setdefault(key, v)
            out.append((key, v.title(cases), v.rule))
        return tuple(out)

    def _reproduces(self, key: str, case) -> bool:
        v = self._bound.get(key)
        if v is None:
            return False
        try:
            out = v.output(self.tok, case)
        except (HarnessError, ValueError, UnicodeError, RecursionError):
            return False  # the variant cannot answer here (llama.cpp would abort, ...): not this cause
        want = case.port_output
        return (bytes(out) if isinstance(want, bytes) else tuple(out)) == want

    def explains(self, keys: tuple[str, ...], f: Finding) -> bool:
        """Whether one of the explanations ``keys`` reproduces the port's output on ``f``."""
        case = self.case_of(f)
        return any(self._reproduces(k, case) for k in keys)

    def together(self, keys: list[tuple[str, ...]], f: Finding) -> int | None:
        """The index (into ``keys``, one tuple per known cause) of the cause whose input
        transform, followed by another known cause, reproduces the port's output on ``f``;
        None when no two known causes do. For decode and pieces the first cause rewrites the
        output bytes (lossy UTF-8, a dropped leading space) after the other's answer."""
        if f.check in ("decode", "piece"):
            return self._together_bytes(keys, f)
        met = self._with_residual(keys, f)
        if met is not None:
            return met
        for i, first in enumerate(keys):
            for key in first:
                transform = getattr(self._bound.get(key), "transform", None)
                if transform is None:
                    continue
                try:
                    text = transform(f.text, self._bound[key].param)
                except (HarnessError, ValueError, UnicodeError):
                    continue
                if text == f.text:
                    continue
                case = self.case_of(f, text)
                if any(self._reproduces(k, case) for j, other in enumerate(keys) if j != i for k in other):
                    return i
        return None

    def _with_residual(self, keys: list[tuple[str, ...]], f: Finding) -> int | None:
        """A known cause that adds tokens of its own (a forced BOS, CLS/SEP without add_special):
        with them taken off the port's answer (``undo``), some catalogue variant reproduces
        what is left. The other bug need not be known in this test: with add_special every
        case of tiktoken on qwen2 has the forced BOS, and a user-defined token's text too."""
        from harness.diagnosis import explain
        case = self.case_of(f)
        for i, first in enumerate(keys):
            for key in first:
                v = self._bound.get(key)
                undo = getattr(v, "undo", None)
                if undo is None:
                    continue
                try:
                    rest = undo(self.tok, case.port_output, case.input, *case.flags)
                except (HarnessError, ValueError, UnicodeError):
                    continue
                if rest is not None and explain(self.tok, [replace(case, port_output=rest)]):
                    return i
        return None

    def _together_bytes(self, keys: list[tuple[str, ...]], f: Finding) -> int | None:
        """:meth:`together` for decode and piece findings: a known cause whose variant
        changes llama.cpp's output bytes (``change``), applied to another known cause's answer."""
        case = self.case_of(f)
        for i, first in enumerate(keys):
            for key in first:
                v = self._bound.get(key)
                change = getattr(v, "change", None)
                if change is None or case.family not in v.checks:
                    continue
                for j, other in enumerate(keys):
                    if j != i and any(self._changed(change, self._bound.get(k), case) for k in other):
                        return i
        return None

    def _changed(self, change, variant, case) -> bool:
        """Whether ``change`` over ``variant``'s answer is the port's output on ``case``."""
        if variant is None:
            return False
        try:
            out = change(self.tok, bytes(variant.output(self.tok, case)), list(case.input))
        except (HarnessError, ValueError, UnicodeError, RecursionError):
            return False
        return out == case.port_output
