"""One check run over many inputs, keeping every distinct divergence.

A :class:`Hunt` is what one conformance test does: it feeds inputs (texts, id
lists, token ids) to a ``run`` function that compares the port with llama.cpp
and returns a :class:`~harness.conformance.report.Finding` or ``None``. It never
stops at the first divergence: every input of the budget runs, divergences are
grouped by a *signature* (a stand-in for their cause, see
``VocabUnderTest.signature``), and at the end the first input of each signature
is shrunk to a minimal one that still shows the same signature. Up to
:data:`CAP` distinct divergences are kept per test; more are counted as capped.

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

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from harness.errors import PortError, PortRequestError, PortUnsupported

FLAGS = {"plain": (False, False), "parse": (False, True), "add": (True, False), "add_parse": (True, True)}


def flags_label(a: bool, b: bool) -> str:
    """'plain', 'parse', 'add' or 'add_parse' for (add_special, parse_special), or for
    (remove_special, unparse_special) in decode.

    >>> flags_label(True, False)
    'add'
    """
    return {v: k for k, v in FLAGS.items()}[(bool(a), bool(b))]


class CheckFailed(AssertionError):
    """Raised by :meth:`Hunt.finish` when a test found divergences or port errors;
    the message is the readable report of all of them (the plugin reads the tally)."""

    def __init__(self, tally: "Tally"):
        from harness.conformance.report import text_block
        self.tally = tally
        parts = [text_block(f) for f in tally.findings]
        parts += [f"PORT ERROR ({e['cases']} case(s)): {e['message']}" for e in tally.port_errors]
        if tally.capped:
            parts.append(f"(and {tally.capped} more divergent case(s) beyond the cap of {CAP} signatures)")
        super().__init__("\n\n".join(parts))


#: Distinct divergences kept (and shrunk) per test; more are counted in ``capped``.
CAP = 20
#: Predicate calls one shrink may spend, and its wall-time bound in seconds.
SHRINK_CALLS, SHRINK_SECONDS = 600, 20.0


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
        """``divergence``, ``port error``, ``unsupported``, ``not checked``,
        ``partial`` (some cases ran, others were unsupported or not checked) or ``pass``."""
        if self.findings or self.divergent:
            return "divergence"
        if self.port_errors:
            return "port error"
        if not self.cases:
            return "unsupported" if self.unsupported or self.unsupported_reason else "not checked"
        if self.unsupported or self.not_checked:
            return "partial"
        return "pass"

    def counts(self) -> dict:
        """The JSON counts (findings and errors as numbers)."""
        d = {k: v for k, v in asdict(self).items() if k not in ("findings", "port_errors", "restarts")}
        d.update(divergences=len(self.findings), port_errors=len(self.port_errors),
                 restarts=len(self.restarts), outcome=self.outcome)
        return d


def root_cause(message: str) -> str:
    """The part of a port error message that names its cause, not the request:
    the first line, up to ' on request' / ' to {' (so one cause counts once).

    >>> root_cause("port 'x' crashed (exit code 3) on request {\\"op\\": 1}\\nmore")
    "port 'x' crashed (exit code 3)"
    """
    first = message.splitlines()[0] if message else ""
    for cut in (" on request ", " to {", " in encode(", " in decode(", " in token_to_piece("):
        first = first.split(cut)[0]
    return first


class Hunt:
    """Run ``run(input)`` on every input; keep counts, distinct findings and
    root port errors (see the module docstring).

    ``signature(finding)`` groups findings (default: one group per input, every
    divergent input reported); ``shrink(input, keeps)`` minimises an input;
    ``detail(finding)`` adds what only the final findings need (token spans).
    """

    def __init__(self, check: str, flags: str, run: Callable[[Any], Any], *, vocab: str,
                 signature: Callable | None = None, shrink: Callable | None = None,
                 detail: Callable | None = None, replay_key: str | None = None):
        self.run, self.signature, self.shrink, self.detail = run, signature, shrink, detail
        self.tally = Tally(vocab, check, flags)
        self.first: dict[Any, Any] = {}     # signature -> (first input showing it, its finding)
        self.counts: dict[Any, int] = {}    # signature -> divergent cases
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
        sig = self.signature(found) if self.signature else len(self.first)
        self.counts[sig] = self.counts.get(sig, 0) + 1
        if sig in self.first:
            return
        if len(self.first) >= CAP:
            self.tally.capped += 1
            return
        self.first[sig] = (x, found)

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
        shrunk = []
        for sig, (x, found) in self.first.items():
            if self.shrink is not None and not self.down:
                x = self.shrink(x, self._keeps(sig))
                found = self._rerun(x) or found
            shrunk.append(_jsonable(x))
            found = replace(found, cases=self.counts[sig],
                            signature=sig[1:] if isinstance(sig, tuple) else ())
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

    def _keeps(self, sig) -> Callable[[Any], bool]:
        """Predicate for the shrinker: ``x`` still diverges with signature ``sig``."""
        def keeps(x) -> bool:
            found = self._rerun(x)
            return found is not None and (self.signature is None or self.signature(found) == sig)
        return keeps


# --- shrinking ------------------------------------------------------------------------------
def shrink_sequence(x, keeps: Callable[[Any], bool], *, simplify: tuple = (),
                    calls: int = SHRINK_CALLS, seconds: float = SHRINK_SECONDS):
    """Greedy minimisation of a str or tuple: delete chunks (halving sizes down to
    one element) while ``keeps`` holds, then try replacing each element by each of
    ``simplify`` in order. Bounded by ``calls`` predicate calls and ``seconds``.

    >>> shrink_sequence("xxabcxx", lambda s: "b" in s)
    'b'
    >>> shrink_sequence("q7", lambda s: len(s) == 2 and s[1] == "7", simplify=("a",))
    'a7'
    """
    deadline = time.perf_counter() + seconds
    budget = [calls]

    def ok(c) -> bool:
        if budget[0] <= 0 or time.perf_counter() > deadline:
            return False
        budget[0] -= 1
        return keeps(c)

    size = max(1, len(x) // 2)
    while size >= 1 and budget[0] > 0:
        i, removed = 0, False
        while i < len(x) and budget[0] > 0:
            cand = x[:i] + x[i + size:]
            if cand != x and ok(cand):
                x, removed = cand, True
            else:
                i += size
        if not removed or size > 1:
            size //= 2
    for i in range(len(x)):
        for s in simplify:
            if x[i] == s:
                break
            cand = x[:i] + (s if isinstance(x, str) else (s,)) + x[i + 1:]
            if ok(cand):
                x = cand
                break
    return x


def shrink_text(text: str, keeps: Callable[[str], bool]) -> str:
    """:func:`shrink_sequence` for texts: characters simplify toward 'a', ' ', '0'."""
    return shrink_sequence(text, keeps, simplify=("a", " ", "0"))


def shrink_ids(ids: tuple, keeps: Callable[[tuple], bool]) -> tuple:
    """:func:`shrink_sequence` for id lists (deletions only: an id is not 'simpler')."""
    return tuple(shrink_sequence(tuple(ids), keeps))


# --- replay: earlier shrunk failures run first ------------------------------------------------
def _replay_path(key: str) -> Path:
    root = Path(os.environ.get("LLAMA_CONFORMANCE_REPLAY", ".hypothesis/conformance"))
    return root / (hashlib.sha1(key.encode()).hexdigest()[:20] + ".json")


def _jsonable(x):
    return list(x) if isinstance(x, tuple) else x


def load_replay(key: str) -> list:
    """Inputs saved by earlier runs of the test ``key`` (its node id), oldest first."""
    try:
        data = json.loads(_replay_path(key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [tuple(x) if isinstance(x, list) else x for x in data.get("inputs", [])]


def save_replay(key: str, inputs: list) -> None:
    """Remember this run's shrunk failing inputs (merged with earlier ones, at most CAP*2)."""
    if not inputs:
        return
    old = [_jsonable(x) for x in load_replay(key)]
    merged = old + [x for x in inputs if x not in old]
    path = _replay_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"test": key, "inputs": merged[-CAP * 2:]}, ensure_ascii=False),
                       encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # the replay store is a convenience; a read-only tree still runs the suite
