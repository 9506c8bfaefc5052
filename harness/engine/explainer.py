"""The catalogue of rule variants (harness.diagnosis), run on one vocab's findings: which
variants explain them.

:class:`Explainer` answers the engine's first questions (the probing ones, what to ask the
port next, are :class:`harness.engine.diagnoser.Diagnoser`'s):

- :meth:`Explainer.diagnose`: which variants reproduce the port's exact output on all of
  a cause's findings? Each comes back as an *explanation* ``(key, title, rule)``; the key
  names the variant and, for a variant with a free parameter, the value it was bound to
  (``char_read_as_space:'\\xa0'``), so U+00A0 and U+0085 read as spaces stay two causes;
- :meth:`Explainer.explains`: does one of these explanations reproduce another finding?
- :meth:`Explainer.together`: does a finding no single explanation reproduces come from
  two known causes at once? A port with several bugs meets some texts with two of them
  (``"00\\xa0"``: digits split and NBSP read as a space). When one of the two is an input
  transform (a text variant), the other explains the port's output on the transformed
  text; when one adds tokens of its own (a forced BOS: ``undo``), some catalogue variant
  explains what is left, even one no case of this test shows alone; such a case belongs
  to the known causes, not to a new one.

The harness tokenizer for the vocab loads on first use: a clean run never loads it. It is
loaded once per process (:func:`exact_tokenizer`, as the oracle is), so the variant tokenizers
built on it are built once per process too, however many sessions ask.

>>> key_of(type("V", (), {"name": "nfc_input", "param": None})())
'nfc_input'
"""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property
from pathlib import Path

from harness.diagnosis.base import same_claim
from harness.errors import HarnessError
from harness.reports.finding import Finding


def same_answer(a, b) -> bool:
    return bytes(a) == bytes(b) if isinstance(b, (bytes, bytearray)) else tuple(a) == tuple(b)


# (resolved path, size, mtime) -> the harness tokenizer of that file, for the process's lifetime
_TOKENIZERS: dict[tuple[str, int, int], object] = {}


def exact_tokenizer(path: str | Path):
    """The harness tokenizer of one vocab file, loaded once per process.

    Why: variant tokenizers are built on it and memoised per tokenizer object
    (``harness.diagnosis.base.cached``; a piece map over every token, a second session),
    so one object per file lets every session of a process (the in-process suite runs of the
    harness's own tests; one worker's vocabs) share them. Exact because a Tokenizer is never
    changed after load (its caches are memos of pure functions) and variants build new objects.
    Keyed by the file's size and modification time too, so a file written again at the same
    path is loaded again. A worker of ``make conformance`` holds its vocabs for its whole run
    anyway (:class:`harness.engine.session.Session`).

    >>> exact_tokenizer("no/such.gguf")
    Traceback (most recent call last):
    FileNotFoundError: [Errno 2] No such file or directory: 'no/such.gguf'
    """
    from harness.tokenizer import Tokenizer
    st = Path(path).stat()
    key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)
    if key not in _TOKENIZERS:
        _TOKENIZERS[key] = Tokenizer.from_gguf(path)
    return _TOKENIZERS[key]


def exact_output(tok, case):
    """llama.cpp's answer for a case (the exact harness tokenizer)."""
    from harness.diagnosis.base import exact
    return exact(tok, case)


def _catalogue():
    from harness.diagnosis import CATALOGUE
    return CATALOGUE


def key_of(variant) -> str:
    """An explanation's key: the variant's name, and its bound parameter if it has one."""
    return variant.name if variant.param is None else f"{variant.name}:{variant.param!r}"


def name_of(key: str) -> str:
    """The catalogue name in an explanation key.

    >>> name_of("char_read_as_space:'\\\\xa0'")
    'char_read_as_space'
    """
    return key.split(":", 1)[0]


class Explainer:
    """The catalogue over one vocab file: what explains a finding (see the module docstring)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._bound: dict[str, object] = {}  # key -> the bound variant that produced it
        # key -> the undo of a known cause it was met with (diagnose_after): the port's answer is
        # judged with that cause's own tokens put back or taken off, where it shows
        self._after: dict[str, object] = {}
        # key -> the text transform of a known cause it was met with (diagnose_after): the
        # variant is judged on the text that cause makes ("a" with a space put before it)
        self._before: dict[str, tuple] = {}
        self._titles: dict[str, tuple] = {}  # a rebound key -> its (key, title, rule)
        # key -> (key, title, rule): explanations a finished test of this vocab named after the
        # port passed their predictions (:meth:`confirm`), of any check (a variant answers
        # llama.cpp's output on a check it does not model, so it explains nothing there)
        self._confirmed: dict[str, tuple] = {}

    @cached_property
    def tok(self):
        """The harness tokenizer for this vocab, which the variants change (one per process)."""
        return exact_tokenizer(self.path)

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

    def diagnose_after(self, known: list[str], findings: list[Finding]) -> tuple:
        """:meth:`diagnose` of what is left of the port's answers once a known cause that adds
        or drops tokens of its own (a BOS left out, a forced EOS: its ``undo``) is undone: a
        port with two bugs meets most texts with both ("a" with add_special: no BOS *and* a
        space put before the text), and the second is named from what the first leaves. The
        explanations found are judged that way from then on (:meth:`_port_view`)."""
        from harness.diagnosis import explain
        cases = [self.case_of(f) for f in findings]
        for k in known:
            undo = getattr(self._bound.get(k), "undo", None)
            if undo is None:
                continue
            try:
                rests = [undo(self.tok, c.port_output, c.input, *c.flags) for c in cases]
            except (HarnessError, ValueError, UnicodeError):
                continue
            if any(r is None for r in rests):
                continue
            out = []
            for v in explain(self.tok, [replace(c, port_output=tuple(r)) for c, r in zip(cases, rests)]):
                key = key_of(v)
                if key in known:
                    continue
                self._bound.setdefault(key, v)
                self._after.setdefault(key, undo)
                out.append((key, v.title(cases), v.rule))
            if out:
                return tuple(out)
        return self._diagnose_transformed(known, cases)

    def _diagnose_transformed(self, known: list[str], cases: list) -> tuple:
        """:meth:`diagnose_after` for a known cause that changes the text (a space put before
        it, NFC): the explanations of the port's answers as answers to the changed texts.
        candle on llama-bpe meets most texts with a space put before them *and* GPT-2's
        regexes; the second is named on what the first makes of the text."""
        from harness.diagnosis import explain
        for k in known:
            v = self._bound.get(k)
            transform = getattr(v, "transform", None)
            if transform is None or cases[0].family != "encode":
                continue
            try:
                moved = [replace(c, input=transform(c.input, v.param)) for c in cases]
            except (HarnessError, ValueError, UnicodeError, TypeError):
                continue
            if all(m.input == c.input for m, c in zip(moved, cases)):
                continue
            out = []
            for w in explain(self.tok, moved):
                key = key_of(w)
                if key in known:
                    continue
                self._bound.setdefault(key, w)
                self._before.setdefault(key, (transform, v.param))
                out.append((key, w.title(moved), w.rule))
            if out:
                return tuple(out)
        return ()

    def _moved(self, key: str, case):
        """``case`` on the text the known cause ``key`` was met with makes of it (:meth:`_diagnose_transformed`)."""
        before = self._before.get(key)
        if before is None or case.family != "encode":
            return case
        try:
            return replace(case, input=before[0](case.input, before[1]))
        except (HarnessError, ValueError, UnicodeError, TypeError):
            return case

    def _port_view(self, key: str, case, port):
        """The port's answer ``port`` on ``case`` as the explanation ``key`` is judged on it:
        with the known cause it was met with undone where that cause shows (:meth:`diagnose_after`)."""
        undo = self._after.get(key)
        if undo is None or isinstance(port, (bytes, bytearray)):
            return port
        try:
            rest = undo(self.tok, port, case.input, *case.flags)
        except (HarnessError, ValueError, UnicodeError):
            return port
        return port if rest is None else tuple(rest)

    def _reproduces(self, key: str, case, claim: bool = False) -> bool:
        """Whether the variant ``key`` gives the port's output on ``case``: all of it, or with
        ``claim`` (a prediction) what the variant claims of it (:func:`same_claim`: a variant
        about what add_special puts around the text is asked only about the ends)."""
        v = self._bound.get(key)
        if v is None:
            return False
        moved = self._moved(key, case)
        try:
            out = v.output(self.tok, moved)
        except (HarnessError, ValueError, UnicodeError, RecursionError):
            return False  # the variant cannot answer here (llama.cpp would abort, ...): not this cause
        want = self._port_view(key, case, case.port_output)
        if want is not case.port_output and same_answer(out, exact_output(self.tok, case)):
            return False  # only the known cause it was met with shows here: that cause's case, not this one's
        if moved is not case and same_answer(out, exact_output(self.tok, moved)):
            return False  # only the text's change shows here: the known cause's case
        if claim:
            return same_claim(v, self.tok, out, want)
        return (bytes(out) if isinstance(want, bytes) else tuple(out)) == want

    def case_of_input(self, f: Finding, x, flags=None):
        """A case with ``f``'s check (and its flags, or ``flags``) for another input ``x`` (no port output yet)."""
        from harness.diagnosis import Case
        if f.check == "decode":
            return Case("decode", tuple(x), flags or (bool(f.remove_special), bool(f.unparse_special)), b"")
        if f.check == "piece":
            return Case("piece", (int(x),), flags or (bool(f.unparse_special), False), b"")
        return Case(f.check, x, flags or (f.add_special, f.parse_special), ())

    def explains(self, keys: tuple[str, ...], f: Finding) -> bool:
        """Whether one of the explanations ``keys`` reproduces the port's output on ``f``: as
        bound, or, for a variant with a free parameter, bound to another value inferred from
        ``f`` (another code point of the same defect: :meth:`rebind` lists them), so one
        cause holds the set of its parameters, not one cause per value."""
        case = self.case_of(f)
        return any(self._reproduces(k, case) for k in keys)

    def confirm(self, explanations: tuple) -> None:
        """Note explanations a test named after its predictions: the vocab's later tests (the
        same port, this process) may give them the cases they reproduce, and count them among
        the port's known bugs when judging predictions."""
        for e in explanations:
            self._confirmed.setdefault(e[0], e)

    def confirmed(self) -> dict[str, tuple]:
        """``{key: explanation}`` the earlier tests of this vocab confirmed."""
        return self._confirmed

    def wrapped(self, keys: tuple[str, ...], f: Finding) -> bool:
        """Whether one of the explanations ``keys`` that only adds or drops tokens of its own at
        the ends (a variant with an ``undo``: a forced BOS, a missing EOS) reproduces ``f``: the
        port's answer there says nothing about the text between them."""
        return self.explains(tuple(k for k in keys if getattr(self._bound.get(k), "undo", None)), f)

    def rebind(self, keys: tuple[str, ...], f: Finding) -> str | None:
        """For a variant of ``keys`` with a free parameter: the key of the same variant bound to
        another value inferred from ``f`` that reproduces the port's output on it (another
        code point of the same defect), or None. The engine accepts it only if it predicts
        the port too (:mod:`harness.engine.causes`), so one cause holds the set of its
        parameters, not one cause per value."""
        case = self.case_of(f)
        return next((k for k in (self._rebinds(key, case) for key in keys) if k), None)

    def char_param(self, key: str) -> str | None:
        """The one code point an explanation is bound to (``char_read_as_space:'\\xa0'``), else None."""
        v = self._bound.get(key)
        p = getattr(v, "param", None)
        return p if isinstance(p, str) and len(p) == 1 else None

    def explanation(self, key: str) -> tuple:
        """``(key, title, rule)`` of a key :meth:`rebind` gave."""
        return self._titles[key]

    def _rebinds(self, key: str, case) -> str | None:
        v = self._bound.get(key)
        if v is None or v.param is None:
            return None
        base = next((c for c in _catalogue() if c.name == v.name), None)
        if base is None or case.family not in base.checks:
            return None
        for bound in base.candidates(self.tok, [case]):
            if bound.param == v.param:
                continue
            other = key_of(bound)
            self._bound.setdefault(other, bound)
            if self._reproduces(other, case):
                self._titles.setdefault(other, (other, bound.title([case]), bound.rule))
                return other
        return None

    def together(self, keys: list[tuple[str, ...]], f: Finding) -> int | None:
        """The index (into ``keys``, one tuple per known cause) of the cause whose input
        transform, followed by another known cause, reproduces the port's output on ``f``;
        None when no two known causes do. For decode and pieces the first cause rewrites the
        output bytes (lossy UTF-8, a dropped leading space) after the other's answer."""
        met = self._vocabs_together(keys, f)
        if met is not None:
            return met
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
        return self._text_over_tokenizer(keys, f)

    def _text_over_tokenizer(self, keys: list[tuple[str, ...]], f: Finding) -> int | None:
        """A known cause that changes the text or its fragments (a space before each fragment,
        a code point replaced) run over another known cause's tokenizer (GPT-2's regexes, a
        vocab with other token types): candle puts a space before each fragment between
        specials *and* splits with GPT-2's regexes on deepseek-coder."""
        from harness.diagnosis.text import TextVariant
        case = self.case_of(f)
        a, b = case.flags
        text = case.input
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8", "surrogateescape")
        for i, first in enumerate(keys):
            for key in first:
                v = self._bound.get(key)
                if not isinstance(v, TextVariant) or "encode" not in v.checks:
                    continue
                for j, other in enumerate(keys):
                    for k in other if j != i else ():
                        w = self._bound.get(k)
                        if w is None or isinstance(w, TextVariant) or "encode" not in w.checks:
                            continue
                        try:
                            out = tuple(v.encode(w.tokenizer(self.tok), text, a, b))
                        except (HarnessError, ValueError, UnicodeError, RecursionError):
                            continue
                        if out == tuple(case.port_output):
                            return i
        return None

    def _with_residual(self, keys: list[tuple[str, ...]], f: Finding) -> int | None:
        """A known cause that adds tokens of its own (a forced BOS, CLS/SEP without add_special):
        with them taken off the port's answer (``undo``), another *known* cause reproduces what
        is left. A residual no known cause explains is a second bug, and gets a cause of its
        own: it is never filed under the wrapper's."""
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
                if rest is None:
                    continue
                left = replace(case, port_output=rest)
                if any(self._reproduces(k, left) for j, other in enumerate(keys) if j != i for k in other):
                    return i
        return None

    def _vocabs_together(self, keys: list[tuple[str, ...]], f: Finding) -> int | None:
        """Two known causes that each change the vocab (token types, flags), both at once:
        command-r's USER_DEFINED tokens typed CONTROL and qwen2's '</s>' left NORMAL meet in one
        decode of both tokens."""
        case = self.case_of(f)
        for i, first in enumerate(keys):
            for j, other in enumerate(keys):
                if j != i and any(self._composite(a, b, case) == case.port_output for a in first for b in other):
                    return i
        return None

    def _composite(self, a: str, b: str, case):
        """The answer on ``case`` of a tokenizer over the vocab both variants change (None if
        either is not a plain vocab change, or the two cannot be built together)."""
        from harness.diagnosis.base import cached, exact
        from harness.diagnosis.specials import PartitionVariant, VocabVariant
        va, vb = self._bound.get(a), self._bound.get(b)
        if not all(isinstance(v, VocabVariant) and not isinstance(v, PartitionVariant) for v in (va, vb)) \
                or case.family not in va.checks + vb.checks:
            return None

        def build():
            from harness.tokenizer import Tokenizer
            vocab = replace(self.tok.vocab, **va.changes(self.tok.vocab))
            t = Tokenizer(replace(vocab, **vb.changes(vocab)))
            if va.same_session and vb.same_session:
                t._session = self.tok.session()  # neither changes the algorithm
            return t
        try:
            return exact(cached(self.tok, ("together", a, b), build), case)
        except (HarnessError, ValueError, UnicodeError, RecursionError):
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
