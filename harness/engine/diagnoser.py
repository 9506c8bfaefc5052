"""What the engine asks the port next, to test an explanation (:mod:`harness.engine.explainer`
finds them): :class:`Diagnoser` adds to the :class:`~harness.engine.explainer.Explainer`

- :meth:`Diagnoser.predictions`: fresh inputs on which a variant and llama.cpp disagree, so a
  port with exactly that bug must answer them the variant's way;
- :meth:`Diagnoser.discriminating`: inputs on which explanations that all fit a case answer
  differently from each other (their tables' difference: :func:`table_contrasts`);
- :meth:`Diagnoser.agreements`: inputs on which a narrow variant answers as llama.cpp does,
  where a wider defect of the same kind would show;
- :meth:`Diagnoser.probe_set`: the other code points of a code-point explanation's class.

Every list is in a fixed order (no clock, no random state): the same finding gives the same
probes on any machine.

>>> [Diagnoser.predictions, Diagnoser.explains] and issubclass(Diagnoser, Explainer)
True
"""

from __future__ import annotations


from harness.diagnosis.base import same_claim
from harness.engine.explainer import Explainer, exact_output, exact_tokenizer, key_of, name_of, same_answer
from harness.engine.predictions import (_other_flags, _split_character, f_input, outside_table,
                                        prediction_inputs, same_class)
from harness.errors import HarnessError
from harness.reports.finding import BYTE_CHECKS, Finding

__all__ = ["Diagnoser", "Explainer", "exact_tokenizer", "key_of", "name_of", "table_contrasts"]


#: Where a code point's class shows in a BPE split: after a space (`` ?[^\s\p{L}\p{N}]+`` takes
#: " x" where ``\s+`` would stop), before a letter, at the end of a run.
CONTRAST_CONTEXTS = (" {}a", "a {}b", "  {}", "{}{}a", "a{}{}b", "{}\n")
#: Code points of the tables' difference put in those contexts.
CONTRAST_POINTS = 12


def table_contrasts(bound) -> list[str]:
    """Texts on which variants with code-point tables (platform classes) may answer
    differently from each other: the points one table holds and another does not, spread
    over that difference, in :data:`CONTRAST_CONTEXTS`. Java's ``Character.isWhitespace`` and
    Go's ``\\s`` both lack U+00A0; U+2002 tells them apart, but only where a space comes
    before it (" \u2002a"), never alone.

    >>> V = type("V", (), {"__init__": lambda s, t: setattr(s, "t", t), "table": lambda s: s.t})
    >>> table_contrasts([V(frozenset({0xa0, 0x2002})), V(frozenset({0xa0}))])[:2]
    [' \u2002a', 'a \u2002b']
    """
    tables = [v.table() for v in bound if callable(getattr(v, "table", None))]
    if len(tables) < 2:
        return []
    diff = sorted(set().union(*tables) - set.intersection(*map(set, tables)))
    step = max(1, len(diff) // CONTRAST_POINTS)
    return [n.replace("{}", chr(c)) for c in diff[::step][:CONTRAST_POINTS] for n in CONTRAST_CONTEXTS]


def _parted_at(a, b) -> int:
    """The index where two outputs (ids or bytes) first differ, or the shorter one's length.

    >>> _parted_at((1, 2, 3), (1, 5)), _parted_at(b"ab", b"abc"), _parted_at((), ())
    (1, 2, 0)
    """
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


class Diagnoser(Explainer):
    """The catalogue over one vocab file: what explains a finding, and what to ask the port to test it."""

    def predictions(self, key: str, f: Finding, n: int, other_flags: int = 0) -> list:
        """Up to ``n`` fresh ``(input, flags)`` pairs on which the variant ``key`` and llama.cpp
        disagree: what a port with exactly that bug must answer differently from llama.cpp.
        The input is in the hunt's form (a text, an id tuple, an id); ``flags`` is None for the
        finding's own flag combination, else another one (``(add_special, parse_special)``,
        ``(remove_special, unparse_special)`` or ``(special, False)``), for up to
        ``other_flags`` of them: a variant about a flag must hold under the others too. They
        come from the finding's own input put in other contexts (:func:`prediction_inputs`),
        so a variant that fitted one short case by chance meets inputs it was not fitted to.

        The order is fixed (no clock, no global random state): the same finding gives the
        same predictions on any machine."""
        v = self._bound.get(key)
        if v is None:
            return []
        try:
            points = tuple(chr(c) for c in v.prediction_points(self.tok))
        except (HarnessError, ValueError):
            points = ()
        inputs = list(prediction_inputs(self.tok, f, v.param, points))
        # the own-flag ones (computed once), then the other flags', then more own-flag ones
        own = self._disagreeing(v, f, ((x, None) for x in inputs), n)
        others = self._disagreeing(v, f, ((x, fl) for fl in _other_flags(f) for x in [f_input(f)] + inputs),
                                   other_flags)
        first = n - min(other_flags, n // 2)
        return (own[:first] + others + own[first:])[:n]

    def discriminating(self, keys: list[str], f: Finding, n: int) -> list:
        """Up to ``n`` inputs (the finding's own flags) on which the explanations ``keys``, which
        all fit ``f``, answer differently from each other: the port's answer there picks the
        one that is its defect (Java's \\s and Go's both lack U+00A0; only Go's lacks U+2002).
        Drawn from every key's :func:`prediction_inputs` and table points."""
        bound = [self._bound.get(k) for k in keys]
        if len(keys) < 2 or any(v is None for v in bound):
            return []
        pool: list = []
        for v in bound:
            try:
                points = tuple(chr(c) for c in v.prediction_points(self.tok))
            except (HarnessError, ValueError):
                points = ()
            pool += [x for x in prediction_inputs(self.tok, f, v.param, points) if x not in pool]
        if f.check not in BYTE_CHECKS:
            pool += [x for x in table_contrasts(bound) if x not in pool]
        out = []
        for x in pool:
            if len(out) >= n:
                break
            case = self.case_of_input(f, x)
            try:
                answers = {bytes(a) if isinstance(a, (bytes, bytearray)) else tuple(a)
                           for a in (v.output(self.tok, case) for v in bound)}
            except (HarnessError, ValueError, UnicodeError, RecursionError):
                continue
            if len(answers) > 1:
                out.append(x)
        return out

    def answers(self, key: str, f: Finding, x, got: Finding | None) -> bool:
        """Whether the port's answer on ``x`` (``got``: the rerun's finding; None: llama.cpp's
        answer) is the explanation's."""
        v = self._bound.get(key)
        case = self.case_of_input(f, x)
        try:
            want = v.output(self.tok, case)
        except (HarnessError, ValueError, UnicodeError, RecursionError):
            return False
        port = exact_output(self.tok, case) if got is None else self.case_of(got).port_output
        return same_claim(v, self.tok, want, self._port_view(key, case, port))

    def agreements(self, key: str, f: Finding, n: int, targeted: bool = False) -> list:
        """Up to ``n`` inputs (the finding's own flags) where the variant ``key`` answers what
        llama.cpp answers: a narrow variant claims the port does too. The targeted ones first,
        where a wider defect of the same kind shows: a table variant's text with a code point
        of its table swapped for others of llama.cpp's same class outside it
        (:func:`outside_table`: every format control kept, not just Unicode 15's), and for
        decode a character over two tokens (:func:`_split_character`: lossy per token, not
        over the output). ``targeted``: just those (asked of every explanation, narrow or not:
        the generic ones would meet a port's other bugs of the same check)."""
        v = self._bound.get(key)
        if v is None:
            return []
        out = []
        split = _split_character(self.tok) if f.check == "decode" else None
        inputs = list(outside_table(v, f)) + ([split, tuple(f.decoded_ids) + split] if split else [])
        if not targeted:
            inputs += [x for x in prediction_inputs(self.tok, f, v.param) if x not in inputs]
        for x in inputs:
            if len(out) >= n:
                break
            case = self.case_of_input(f, x)
            try:
                if same_answer(v.output(self.tok, case), exact_output(self.tok, case)):
                    out.append(x)
            except (HarnessError, ValueError, UnicodeError, RecursionError):
                continue
        return out

    def agrees(self, key: str, f: Finding, x) -> bool:
        """Whether the variant ``key`` answers what llama.cpp answers on input ``x`` (``f``'s flags)."""
        v = self._bound.get(key)
        if v is None:
            return False
        case = self.case_of_input(f, x)
        try:
            return same_answer(v.output(self.tok, case), exact_output(self.tok, case))
        except (HarnessError, ValueError, UnicodeError, RecursionError):
            return False

    def _disagreeing(self, v, f: Finding, pairs, n: int) -> list:
        key = key_of(v)
        out = []
        for x, flags in pairs:
            if len(out) >= n:
                break
            case = self._moved(key, self.case_of_input(f, x, flags))  # on the text a known cause makes, if met so
            try:
                differs = not same_answer(v.output(self.tok, case), exact_output(self.tok, case))
            except (HarnessError, ValueError, UnicodeError, RecursionError):
                continue
            if differs and (x, flags) not in out:
                out.append((x, flags))
        return out

    def predicted(self, key: str, x, got: Finding | None, known: tuple[str, ...] = ()) -> bool | None:
        """Whether the port's answer on prediction input ``x`` is the variant's: ``got`` is the
        rerun's finding (None: the port agreed with llama.cpp, which the variant does not).
        For decode and pieces, also the variant's answer with the output change of one of the
        test's ``known`` causes (a port that also strips a leading space, say, meets most
        decode predictions with both bugs), in either order. None when the port parts from
        llama.cpp before the variant does (:meth:`_parts_first`): no evidence either way."""
        if got is None:
            return False
        case = self.case_of(got)
        if self._reproduces(key, case, claim=True):
            return True
        if case.family in ("decode", "piece") and self._with_known_bytes(key, case, known):
            return True
        return None if self._parts_first(key, case) else False

    def _parts_first(self, key: str, case) -> bool:
        """Whether the port's answer on ``case`` parts from llama.cpp's before the variant
        ``key``'s does: the port met another defect of its own on the way, and the input says
        nothing of the variant's claim. (transformers on phi-3 keeps the space after an RSTRIP
        special, and never matches its UNKNOWN-typed ``[PAD32037]`` at all: asked "[PAD32037] 0",
        it parts at the special itself, before the space the variant is about.) Never for a
        variant about the edges (BOS, EOS, a token appended): its claim is judged at the ends
        whatever the port does in between, so a port that parts in the middle has answered it."""
        v = self._bound.get(key)
        if v is None or v.edges(self.tok) is not None:
            return False
        try:
            out = v.output(self.tok, self._moved(key, case))
            ref = exact_output(self.tok, case)
        except (HarnessError, ValueError, UnicodeError, RecursionError):
            return False
        return _parted_at(self._port_view(key, case, case.port_output), ref) < _parted_at(out, ref)

    def _with_known_bytes(self, key: str, case, known: tuple[str, ...]) -> bool:
        """Whether a known cause's output change over the variant's answer, or the variant's
        over the known cause's, is the port's output on ``case``."""
        v = self._bound.get(key)
        for k in known:
            w = self._bound.get(k)
            if w is None or k == key:
                continue
            for first, second in ((v, w), (w, v)):
                change = getattr(second, "change", None)
                if change is not None and case.family in second.checks and self._changed(change, first, case):
                    return True
        return False

    def probe_set(self, key: str, f: Finding, n: int) -> list[tuple[str, str, object]]:
        """Up to ``n`` ``(code point, key, input)`` probes of the set a code-point explanation
        holds: ``f``'s text with its code point replaced by each of ``n`` others llama.cpp gives
        the same flags (its Unicode class: whitespace, punctuation, ...), spread over them, and
        the explanation bound to that code point, where it and llama.cpp disagree on the input."""
        c = self.char_param(key)
        v = self._bound.get(key)
        if c is None or f.check in BYTE_CHECKS or c not in f.text:
            return []
        out = []
        for cp in same_class(ord(c), n):
            other = v.bind(chr(cp))
            k = key_of(other)
            self._bound.setdefault(k, other)
            x = f.text.replace(c, chr(cp))
            case = self.case_of_input(f, x)
            try:
                if same_answer(other.output(self.tok, case), exact_output(self.tok, case)):
                    continue
            except (HarnessError, ValueError, UnicodeError, RecursionError):
                continue
            out.append((chr(cp), k, x))
        return out
