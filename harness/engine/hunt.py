"""One check run over many inputs, keeping every cause of divergence.

A :class:`Hunt` is what one conformance test does: it feeds inputs (texts, id
lists, token ids) to a ``run`` function that compares the port with llama.cpp
and returns a :class:`~harness.reports.finding.Finding` or ``None``. It never
stops at the first divergence: every input of the budget runs. Divergent inputs are
filed under a reference-side *signature* (what llama.cpp emitted where the outputs
part, ``VocabUnderTest.signature``); at the end each group becomes its causes
(:mod:`harness.engine.causes`): its example shrunk and diagnosed by the catalogue of
rule variants, every divergent case given to the cause that explains it, and hidden
causes behind one signature found. Up to :data:`CAP` signatures are kept per test;
more are counted as capped.

Outcomes are counted apart, never as passes:

- ``cases``: comparisons actually made, with both answers in hand;
- ``divergent``: cases among them whose answers differ;
- ``unsupported``: cases the port said it cannot express;
- ``port_error_cases``: cases the port answered with an error, crashed or hung on;
  each distinct root error is reported once (``port_errors``);
- ``not_checked``: inputs never compared because the port was down.

Shrink attempts are not cases.

>>> h = Hunt("encode", "plain", lambda s: None, vocab="v")
>>> for s in ["a", "b"]:
...     h.case(s)
>>> h.tally.cases, h.tally.divergent, h.tally.outcome
(2, 0, 'pass')
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable

from harness.engine.causes import CauseFinder, Group
from harness.engine.replay import jsonable, save_replay
from harness.errors import PortError, PortRequestError, PortUnsupported, root_cause

from harness.reports.cells import cell_outcome

class CheckFailed(AssertionError):
    """Raised by :meth:`Hunt.finish` when a test found divergences or port errors;
    the message is the readable report of all of them (the plugin reads the tally)."""

    def __init__(self, tally: "Tally"):
        from harness.reports.render import text_block
        self.tally = tally
        parts = [text_block(f) for f in tally.findings]
        parts += [f"PORT ERROR ({e['cases']} case(s)): {e['message']}" for e in tally.port_errors]
        if tally.capped:
            parts.append(f"(and {tally.capped} more divergent case(s) beyond the cap of {CAP} signatures)")
        super().__init__("\n\n".join(parts))


#: Distinct divergences kept (and shrunk) per test; more are counted in ``capped``.
CAP = 20


@dataclass
class Tally:
    """What one test checked: the counts the reports show for its cell."""

    vocab: str
    check: str
    flags: str
    cases: int = 0
    divergent: int = 0
    unsupported: int = 0
    port_error_cases: int = 0
    not_checked: int = 0
    capped: int = 0
    unsupported_reason: str = ""
    restarts: list = field(default_factory=list)     # notes of port restarts before this test
    findings: list = field(default_factory=list)      # Finding objects
    port_errors: list = field(default_factory=list)   # {"message", "stderr", "cases", "fatal"}
    seconds: float = 0.0

    @property
    def outcome(self) -> str:
        """The cell outcome of these counts (:func:`harness.reports.cells.cell_outcome`)."""
        return cell_outcome({"divergences": len(self.findings), "divergent": self.divergent,
                             "port_errors": len(self.port_errors), "cases": self.cases,
                             "unsupported": self.unsupported, "not_checked": self.not_checked,
                             "unsupported_reason": self.unsupported_reason})

    def counts(self) -> dict:
        """The JSON counts (findings and errors as numbers)."""
        d = {k: v for k, v in asdict(self).items() if k not in ("findings", "port_errors", "restarts")}
        d.update(divergences=len(self.findings), port_errors=len(self.port_errors),
                 restarts=len(self.restarts), outcome=self.outcome)
        return d


class Hunt:
    """Run ``run(input)`` on every input; keep counts, distinct findings and
    root port errors (see the module docstring).

    ``signature(finding)`` groups findings (default: one group per input, every
    divergent input reported); ``shrink(input, keeps)`` minimises an input;
    ``diagnosis`` (a :class:`~harness.engine.causes.Diagnoser`) names each group's causes
    and finds the hidden ones (:mod:`harness.engine.causes`); ``detail(finding)`` adds
    what only the final findings need (token spans).
    """

    def __init__(self, check: str, flags: str, run: Callable[[Any], Any], *, vocab: str,
                 signature: Callable | None = None, shrink: Callable | None = None,
                 detail: Callable | None = None, replay_key: str | None = None, diagnosis=None):
        self.run, self.signature, self.shrink, self.detail = run, signature, shrink, detail
        self.diagnosis = diagnosis
        self.tally = Tally(vocab, check, flags)
        self.groups: dict[Any, Group] = {}  # signature -> its divergent inputs (first, count, sample)
        self.down = False
        self.replay_key = replay_key
        self._errors: dict[str, dict] = {}
        self._started = time.perf_counter()

    # --- running ------------------------------------------------------------------------
    def declare_unsupported(self, reason: str) -> None:
        """The port declared it cannot express this test's op or flags: nothing runs."""
        self.tally.unsupported_reason = reason

    def begin(self, unsupported_reason: str = "", replay=()) -> bool:
        """Start the test: if the port declared it cannot express it, note why and
        return False (nothing runs); else check the ``replay`` inputs (earlier shrunk
        failures) first and return True."""
        if unsupported_reason:
            self.declare_unsupported(unsupported_reason)
            return False
        for x in replay:
            self.case(x)
        return True

    def case(self, x) -> None:
        """Check one input (ignored once the port is down: counted as not checked)."""
        if self.down:
            self.tally.not_checked += 1
            return
        try:
            found = self.run(x)
        except PortError as e:
            self.failed_case(x, e)
            return
        self.tally.cases += 1
        if found is not None:
            self._divergent(x, found)

    def passed_case(self) -> None:
        """Count an input whose answers were compared, and agreed, elsewhere (the fast phase)."""
        self.tally.cases += 1

    def failed_case(self, x, error: Exception) -> None:
        """Count an input the port could not answer: unsupported, or a port error."""
        if self.down:
            self.tally.not_checked += 1
        elif isinstance(error, PortUnsupported):
            self.tally.unsupported += 1
        elif isinstance(error, PortError):
            self._port_error(error, fatal=not isinstance(error, PortRequestError))
        else:
            raise error

    def _divergent(self, x, found) -> None:
        self.tally.divergent += 1
        sig = self.signature(found) if self.signature else len(self.groups)
        if sig not in self.groups:
            if len(self.groups) >= CAP:
                self.tally.capped += 1
                return
            self.groups[sig] = Group(sig)
        self.groups[sig].add(x, found)

    def _port_error(self, e: PortError, fatal: bool) -> None:
        self.tally.port_error_cases += 1
        root = root_cause(str(e))
        if root not in self._errors:
            self._errors[root] = {"message": str(e), "stderr": getattr(e, "stderr", ""),
                                  "cases": 0, "fatal": fatal}
        self._errors[root]["cases"] += 1
        if fatal:
            self.down = True

    # --- the end --------------------------------------------------------------------------
    def finish(self) -> Tally:
        """Shrink each distinct divergence and fill the tally. Raises :class:`CheckFailed`
        if anything diverged or failed, and skips the test (pytest) if the port could
        express none of it; returns the tally otherwise."""
        tally = self._settle()
        if tally.findings or tally.port_errors:
            raise CheckFailed(tally)
        if tally.outcome == "unsupported":
            import pytest
            pytest.skip(f"unsupported: {tally.unsupported_reason or 'every case answered unsupported'}")
        return tally

    def _settle(self) -> Tally:
        up = not self.down
        finder = CauseFinder(self._rerun, self.shrink if up else None,
                             self.diagnosis if up and self.signature else None)
        for sig, group in self.groups.items():
            finder.settle(group, self.signature or (lambda f, sig=sig: sig))
        shrunk = []
        for cause in finder.finish():
            shrunk.append(jsonable(cause.input))
            sig = cause.signature
            found = replace(cause.stamped(), signature=sig if isinstance(sig, tuple) else ())
            self.tally.findings.append(self._detail(found))
        self.tally.port_errors = list(self._errors.values())
        self.tally.seconds = time.perf_counter() - self._started
        if self.replay_key:
            save_replay(self.replay_key, shrunk)
        return self.tally

    def _detail(self, found):
        if self.detail is None or self.down:
            return found
        try:
            return self.detail(found)
        except PortError:
            return found

    def _rerun(self, x):
        try:
            return self.run(x)
        except PortError:
            return None
