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
  each root error is reported once (``port_errors``): messages that differ only in numbers,
  ids or quoted text are one root (:func:`harness.errors.root_shape`), their distinct
  messages its ``variants``;
- ``not_checked``: inputs never compared because the port was down, or because the check
  stopped on an error;
- ``errors``: the check raised something other than a divergence or a port error (a bug in
  the harness, the reference, or an adapter's code outside its calls): the first such
  exception is kept (``error``: its last line; ``error_at``: where it was raised), the
  cases checked before it are kept, and nothing after it runs or counts.

Shrink attempts are not cases, and no exception ever reaches Hypothesis from a check, so
Hypothesis never reruns (shrinks) a crashed example: :meth:`Hunt.explore_body` catches it.
Inputs from the replay store (earlier runs' shrunk failures) are counted apart
(``replayed``), and so are the divergent cases among them, per finding.

>>> h = Hunt("encode", "plain", lambda s: None, vocab="v")
>>> for s in ["a", "b"]:
...     h.case(s)
>>> h.tally.cases, h.tally.divergent, h.tally.outcome
(2, 0, 'pass')
"""

from __future__ import annotations

import time
import traceback
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator

from harness.engine.causes import UNANSWERED, CauseFinder, Group
from harness.engine.replay import jsonable
from harness.errors import (VARIANT_CHARS, VARIANTS_KEPT, PortError, PortRequestError, PortUnsupported, root_cause,
                            root_shape)

from harness.reports.cells import cell_outcomes


def error_summary(e: BaseException) -> tuple[str, str]:
    """``(last line, where)`` of an exception: its type and message, and the file, line and
    function where it was raised (paths relative to the directory holding ``harness``).

    >>> try:
    ...     b"x" + "y"
    ... except TypeError as e:
    ...     error_summary(e)[0]
    "TypeError: can't concat str to bytes"
    """
    last = traceback.format_exception_only(type(e), e)[-1].strip()
    frames = traceback.extract_tb(e.__traceback__)
    if not frames:
        return last, ""
    f = frames[-1]
    root = Path(__file__).resolve().parents[2]
    try:
        where = str(Path(f.filename).resolve().relative_to(root))
    except ValueError:
        where = f.filename
    return last, f"{where}:{f.lineno} in {f.name}"


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
    unattributed: int = 0      # divergent cases no cause took within the count budgets (engine.causes)
    diagnosis_seconds: dict = field(default_factory=dict)  # shrink, diagnose, predict, characterise: wall s
    errors: int = 0            # 1 if the check stopped on an exception (see the module docstring)
    replayed: int = 0          # inputs from the replay store, run first
    unsupported_reason: str = ""
    error: str = ""            # the exception's last line
    error_at: str = ""         # file:line in function, where it was raised
    restarts: list = field(default_factory=list)     # notes of port restarts before and during this test
    deaths: list = field(default_factory=list)       # notes of how the port went down in this test
    findings: list = field(default_factory=list)      # Finding objects
    # one per root: {"message" (its first), "stderr", "cases", "fatal", "shape", "variants", "variant_count"}
    port_errors: list = field(default_factory=list)
    scaling: list = field(default_factory=list)       # Scaling objects: runs timed (engine.scaling)
    shrunk: list = field(default_factory=list)        # each finding's shrunk input (JSON): for the replay store
    seconds: float = 0.0

    @property
    def outcomes(self) -> tuple[str, ...]:
        """Every outcome of these counts, worst first (:func:`harness.reports.cells.cell_outcomes`)."""
        return cell_outcomes({"divergences": len(self.findings), "divergent": self.divergent,
                              "port_errors": len(self.port_errors), "cases": self.cases,
                              "errors": self.errors,
                              "unsupported": self.unsupported, "not_checked": self.not_checked,
                              "unsupported_reason": self.unsupported_reason})

    @property
    def outcome(self) -> str:
        """The worst of :attr:`outcomes`."""
        return self.outcomes[0]

    def counts(self) -> dict:
        """The JSON counts (findings and errors as numbers)."""
        d = {k: v for k, v in asdict(self).items() if k not in ("findings", "port_errors", "restarts", "deaths", "scaling",
                                                            "shrunk")}
        d.update(divergences=len(self.findings), port_errors=len(self.port_errors),
                 restarts=len(self.restarts), deaths=len(self.deaths), outcome=self.outcome, outcomes=list(self.outcomes))
        if self.scaling:  # slow runs are a warning of their own: they never change the outcome
            d.update(scaling_runs=len(self.scaling), slow=sum(s.slow for s in self.scaling))
        return d


class Hunt:
    """Run ``run(input)`` on every input; keep counts, distinct findings and
    root port errors (see the module docstring).

    ``signature(finding)`` groups findings (default: one group per input, every
    divergent input reported); ``shrink(input, keeps)`` minimises an input;
    ``diagnosis`` (a :class:`~harness.engine.causes.Diagnoser`) names each group's causes
    and finds the hidden ones (:mod:`harness.engine.causes`); ``detail(finding)`` adds
    what only the final findings need (token spans); ``probe(check, input, flags)`` runs the
    check under another flag combination, for the diagnoses' predictions.
    """

    def __init__(self, check: str, flags: str, run: Callable[[Any], Any], *, vocab: str,
                 signature: Callable | None = None, shrink: Callable | None = None,
                 detail: Callable | None = None, diagnosis=None,
                 probe: Callable | None = None, port_death: Callable | None = None,
                 notes: Callable | None = None, revive: Callable | None = None):
        self.run, self.signature, self.shrink, self.detail = run, signature, shrink, detail
        # port_death() -> the error the port went down with, or None: a port that died on a
        # request no case made (a divergence's own pieces, its token spans) is a port error too
        self.port_death = port_death
        self._death_before = port_death() if port_death else None
        # notes() -> (restarts, deaths, said) of the port not yet reported (Session.take_notes), taken
        # when the test starts and when it ends; revive() -> whether a port that went down will be
        # started again when next asked (Session.can_restart): then the test goes on
        self.notes, self.revive = notes, revive
        self._fatal: list[PortError] = []  # the fatal port errors counted (one crash, one count)
        self.probe = probe  # probe(check, input, flags) -> Finding | None: the check under other flags
        self.diagnosis = diagnosis
        self.tally = Tally(vocab, check, flags)
        self.groups: dict[Any, Group] = {}  # signature -> its divergent inputs (first, count, sample)
        self.down = False
        self.error: Exception | None = None  # the first exception the check raised
        self._errors: dict[str, dict] = {}  # root shape -> its port error (see _port_error)
        self._variants: dict[str, set[str]] = {}  # root shape -> its distinct messages
        self._replaying = False
        self._started = time.perf_counter()
        self._take_notes()

    def _take_notes(self) -> None:
        """The port's restarts and deaths since the last look; a death no case saw (the port went
        down on a shrink attempt or a prediction) is a root port error of this test too."""
        if self.notes is None:
            return
        restarts, deaths, *said = self.notes()
        self.tally.restarts += restarts
        self.tally.deaths += deaths
        for message, stderr in (said[0] if said else ()):
            self._root(message, stderr, False)
        for note in deaths:
            if root_shape(note.split(": ", 1)[-1]) not in self._errors:
                self._root(note.split(": ", 1)[-1], "", True)

    # --- running ------------------------------------------------------------------------
    def declare_unsupported(self, reason: str) -> None:
        """The port declared it cannot express this test's op or flags: nothing runs."""
        self.tally.unsupported_reason = reason

    def _unsupported(self, e: Exception) -> None:
        """One case the port answered unsupported; the first answer's words are the cell's reason."""
        self.tally.unsupported += 1
        if not self.tally.unsupported_reason:
            self.tally.unsupported_reason = str(e)[:500]

    @property
    def stopped(self) -> bool:
        """Nothing more runs: the port is down, or the check raised (:attr:`error`)."""
        return self.down or self.error is not None

    def begin(self, unsupported_reason: str = "", first=(), *, replay=()) -> bool:
        """Start the test: if the port declared it cannot express it, note why and
        return False (nothing runs); else check the ``replay`` inputs (earlier runs'
        shrunk failures, from the replay store: counted in ``replayed``) and the
        ``first`` inputs (golden cases, known texts) first, and return True."""
        if unsupported_reason:
            self.declare_unsupported(unsupported_reason)
            return False
        self._replaying = True
        try:
            for x in replay:
                self.tally.replayed += 1
                self.case(x)
        finally:
            self._replaying = False
        for x in first:
            self.case(x)
        return True

    def case(self, x, *, disagreed: bool = False) -> None:
        """Check one input (ignored once stopped: counted as not checked). An exception
        other than a port error stops the hunt (:meth:`crash`); it is not raised.
        ``disagreed``: the port's answer in a batch differed from llama.cpp's (the fast
        phase); if it agrees when asked alone, the port answered one request two ways: a
        port error for that case, never a pass."""
        if self.stopped:
            self.tally.not_checked += 1
            return
        try:
            found = self.run(x)
        except PortError as e:
            self.failed_case(x, e)
            return
        except Exception as e:
            self.crash(e)
            self.tally.not_checked += 1  # this input was not compared either
            return
        if found is None and disagreed:
            self.failed_case(x, PortRequestError(
                f"answered a request one way in a batch and another way alone (a port must give one "
                f"answer per request) on request {repr(x)[:300]}"))
            return
        self.tally.cases += 1
        if found is not None:
            self._divergent(x, found)
        self._unseen_death()

    def crash(self, e: Exception) -> None:
        """The check raised ``e`` (not a divergence, not a port error): keep the first such
        exception; nothing more runs or counts. :meth:`finish` raises it again."""
        if self.error is None:
            self.error = e
            self.tally.errors = 1
            self.tally.error, self.tally.error_at = error_summary(e)

    def absorb(self, e: Exception) -> None:
        """File an exception raised outside :meth:`case` where it belongs: unsupported, a
        port error (the port is then down unless it was one request's error), or a crash."""
        if isinstance(e, PortUnsupported):
            self._unsupported(e)
        elif isinstance(e, PortError):
            self._port_error(e, fatal=not isinstance(e, PortRequestError))
            self.tally.port_errors = list(self._errors.values())
        else:
            self.crash(e)

    @contextmanager
    def guard(self) -> Iterator[None]:
        """Run a check's body: whatever it raises is filed by :meth:`absorb`, so the test
        ends through :meth:`finish` with the cases checked so far."""
        try:
            yield
        except Exception as e:
            self.absorb(e)

    def explore_body(self, body: Callable) -> Callable:
        """``body`` as a Hypothesis test body that never raises: once the hunt is stopped an
        example is counted as not checked and nothing runs; an exception is filed
        (:meth:`absorb`) instead of reaching Hypothesis, which would rerun the example to
        shrink it (those reruns would be counted as cases)."""
        from hypothesis.errors import HypothesisException

        def guarded(*args, **kwargs):
            if self.stopped:
                self.tally.not_checked += 1
                return
            try:
                body(*args, **kwargs)
            except HypothesisException:
                raise  # Hypothesis' own control flow (assume, stop)
            except Exception as e:
                self.absorb(e)
                self.tally.not_checked += 1  # this example was not compared
        return guarded

    def passed_case(self) -> None:
        """Count an input whose answers were compared, and agreed, elsewhere (the fast phase)."""
        self.tally.cases += 1

    def failed_case(self, x, error: Exception) -> None:
        """Count an input the port could not answer: unsupported, or a port error."""
        if self.stopped:
            self.tally.not_checked += 1
        elif isinstance(error, PortUnsupported):
            self._unsupported(error)
        elif isinstance(error, PortError):
            fatal = not isinstance(error, PortRequestError)
            if fatal and self._counted(error):
                self.case(x)  # one crash answered a whole batch: counted once, this input asked again alone
                return
            self._port_error(error, fatal=fatal)
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
        self.groups[sig].add(x, found, replayed=self._replaying)

    def _port_error(self, e: PortError, fatal: bool) -> None:
        """One case the port failed: filed under its root (:meth:`_root`)."""
        self.tally.port_error_cases += 1
        self._root(str(e), getattr(e, "stderr", ""), fatal)["cases"] += 1
        if fatal:
            self._went_down(e)

    def _root(self, message: str, stderr: str, fatal: bool) -> dict:
        """The root port error ``message`` belongs to, by its shape (:func:`harness.errors.root_shape`),
        so that a refusal naming each token id is one root, its distinct messages its variants."""
        shape = root_shape(message)
        if shape not in self._errors:
            self._errors[shape] = {"message": message, "stderr": stderr, "cases": 0, "fatal": fatal,
                                   "shape": shape, "variants": [], "variant_count": 0}
            self._variants[shape] = set()
        root, variant = self._errors[shape], root_cause(message)[:VARIANT_CHARS]
        if variant not in self._variants[shape]:
            self._variants[shape].add(variant)
            root["variant_count"] += 1
            if len(root["variants"]) < VARIANTS_KEPT:
                root["variants"].append(variant)
        return root

    def _counted(self, e: PortError) -> bool:
        return any(e is seen for seen in self._fatal)

    def _went_down(self, e: PortError) -> None:
        """The port went down with ``e``: the test stops, unless the port will be restarted."""
        self._fatal.append(e)
        self.down = not (self.revive is not None and self.revive())

    # --- the end --------------------------------------------------------------------------
    def finish(self) -> Tally:
        """Shrink each distinct divergence and fill the tally. Raises the check's own
        exception again if it stopped on one (with a note of what ran before it),
        :class:`CheckFailed` if anything diverged or failed, and skips the test (pytest)
        if the port could express none of it; returns the tally otherwise."""
        tally = self._settle()
        if self.error is not None:
            t = tally
            self.error.add_note(f"conformance: the {t.check} check of {t.vocab} ({t.flags}) stopped on this "
                                f"error after {t.cases} case(s) (at {t.error_at}); its cell reads 'error'")
            if tally.findings or tally.port_errors:
                self.error.add_note(str(CheckFailed(tally)))
            raise self.error
        if tally.findings or tally.port_errors:
            raise CheckFailed(tally)
        if tally.outcome == "unsupported":
            import pytest
            pytest.skip(f"unsupported: {tally.unsupported_reason or 'every case answered unsupported'}")
        return tally

    def _settle(self) -> Tally:
        # A port that went down is not asked again (no rerun, no shrinking), but its findings are
        # still diagnosed: the catalogue replays its variants on the recorded output, not the port.
        up = not self.down
        finder = CauseFinder(self._rerun if up else (lambda x: None), self.shrink if up else None,
                             self.diagnosis if self.signature else None, ask=up,
                             probe=self._probe if up else None, other_flags=self.probe is not None)
        for sig, group in self.groups.items():
            finder.settle(group, self.signature or (lambda f, sig=sig: sig))
        shrunk = []
        for cause in finder.finish():
            shrunk.append(jsonable(cause.input))
            sig = cause.signature
            found = replace(cause.stamped(), signature=sig if isinstance(sig, tuple) else ())
            self.tally.findings.append(self._detail(found))
        self.tally.unattributed = finder.unattributed
        self.tally.diagnosis_seconds = {k: round(v, 3) for k, v in sorted(finder.seconds.items())}
        if not self.down:
            self._unseen_death()
        self._take_notes()
        self.tally.port_errors = list(self._errors.values())
        self.tally.seconds = time.perf_counter() - self._started
        self.tally.shrunk = shrunk  # the run's owner adds them to the replay store (conformance.replaying)
        return self.tally

    def _unseen_death(self) -> None:
        """A port that went down during this test on no case's request (a divergence's own
        pieces, say) is a root port error of the test, hitting no case; the port is down."""
        death = self.port_death() if self.port_death else None
        if death is None or death is self._death_before or self.down or self._counted(death):
            return
        if root_shape(str(death)) not in self._errors:
            self._root(str(death), getattr(death, "stderr", ""), True)
        self._went_down(death)

    def _detail(self, found):
        if self.detail is None or self.down:
            return found
        try:
            return self.detail(found)
        except Exception:  # the token spans are a convenience: the finding stands without them
            return found

    def _probe(self, check: str, x, flags):
        """A prediction (never a case), under the test's own flags (``flags`` None) or others:
        the finding, None if the port agrees, or :data:`UNANSWERED` if it could not answer
        (unsupported, a port error): that is no evidence either way."""
        try:
            return self._again(lambda: self.run(x) if flags is None else self.probe(check, x, flags))
        except PortError:
            return UNANSWERED
        except Exception as e:  # the check raised on a probe: an error, still not a case
            self.crash(e)
            return None

    def _again(self, call):
        """``call()``, once more if the port went down on it and will be started again: a
        crash on one request says nothing about the input, and a shrink attempt or a
        prediction it spoiled would shrink less or split a cause (the death is noted all the
        same, :meth:`_take_notes`)."""
        try:
            return call()
        except PortRequestError:
            raise
        except PortError:
            if self.revive is None or not self.revive():
                raise
            return call()

    def _rerun(self, x):
        """A shrink attempt (never a case): the finding, or None if it agrees or fails."""
        try:
            return self._again(lambda: self.run(x))
        except PortError:
            return None
        except Exception as e:  # the check raised on a shrunk input: an error, still not a case
            self.crash(e)
            return None
