"""Causes within one test: each signature group's example shrunk and diagnosed, every
divergent case given to the cause that explains it, and the hidden causes found.

While a test runs, its Hunt files every divergent input, with its finding, under its
reference-side signature (:mod:`harness.engine.signature`) in a :class:`Group` (the first
:data:`KEEP` of them; the rest are counted). At the end a :class:`CauseFinder` turns the
groups, in order, into the test's causes:

1. a group whose first case a known cause (from an earlier group) explains adds no cause;
   else its first input is shrunk (keeping the signature, unexplained by the known causes)
   and *diagnosed*: the catalogue variants (harness.diagnosis) that reproduce the port's
   exact output on it, and on up to :data:`CONFIRM` more cases its first variant explains;
2. every kept case, shortest first, goes to the first cause that explains it, or to two
   known causes met at once (a text transform of one, then the other: ``"00\xa0"`` with
   digits split and NBSP read as a space); one that nothing explains seeds a new cause
   when it is diagnosable, or when the group has no unexplained cause yet: shrunk with
   its own predicate, then diagnosed. So two bugs behind one first divergent character
   come out as two causes (at most :data:`MAX_CAUSES` new causes per group). A case only
   an explanation an earlier test of the vocab confirmed reproduces goes to a cause named by
   it (the vocab's diagnoser is shared by its tests: :meth:`CauseFinder._adopted`);
3. at the end, an unexplained cause whose example two known causes reproduce together
   is folded into them, and one that a known cause's undo leaves to a catalogue variant is
   named by it (two bugs at once, the second met before the first was known).

A diagnosis must *predict*: a variant that reproduces the shrunk case (and up to
:data:`CONFIRM` kept cases) names the cause only if the port answers as the variant does on
:data:`~harness.engine.predicting.PREDICT` fresh inputs where the variant and llama.cpp disagree
(:meth:`Diagnoser.predictions`: the same input in other contexts, nearby and same-type
tokens, other special tokens; up to :data:`~harness.engine.predicting.OTHER_FLAGS` of them under the check's other
flag combinations, where the hunt offers a ``probe``). A variant that fitted one short case by chance mispredicts and is dropped; the
cause is then named by the next variant that predicts, or stays unexplained. An input on which
the port parts from llama.cpp before the variant does is no evidence either way (the port met
another defect of its own first), and at least one prediction must be judged. A port that
went down is not asked: its diagnoses carry no predictions.

Counts are honest and deterministic. A cause counts only the kept cases its explanation
reproduces (or, for an unexplained cause, the cases no known cause explains); every budget
is a count, never seconds. Cases left over (past :data:`KEEP`, or when a group already has
:data:`MAX_CAUSES` new causes) are *unattributed* (:attr:`CauseFinder.unattributed`), never
added to another cause.

>>> g = Group(("encode", "replaces", "letter"))
>>> for x in ["abcdef", "ab", "abc"]:
...     g.add(x, None)
>>> g.count, g.first, [x for x, _, _ in g.shortest()][:2]
(3, 'abcdef', ['ab', 'abc'])
"""

from __future__ import annotations

import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Protocol

from harness.engine.characterise import UNANSWERED, Characteriser
from harness.engine.predicting import Predictor
from harness.engine.signature import locus
from harness.reports.triggers import NON_ASCII

#: Divergent cases kept (with their findings) per signature group; the rest are counted.
KEEP = 2000
#: Cases a diagnosis must also reproduce (besides the shrunk example).
CONFIRM = 3
#: Causes one signature group may split into.
MAX_CAUSES = 4
#: Full catalogue runs (diagnoses) per group, for cases no cause explains.
DIAGNOSES = 12
#: Loci kept per cause (most frequent first) for its characterisation.
LOCI = 200


class Diagnoser(Protocol):
    """What the engine asks of the catalogue (harness.engine.diagnoser implements it)."""

    def diagnose(self, findings: list) -> tuple:
        """The explanations (key, title, rule) reproducing every finding, most specific first."""

    def explains(self, keys: tuple[str, ...], finding) -> bool:
        """Whether one of the explanations reproduces the port's output on ``finding``."""

    def predictions(self, key: str, finding, n: int, other_flags: int = 0) -> list:
        """Up to ``n`` ``(input, flags)`` pairs where the explanation ``key`` and llama.cpp
        disagree; ``flags`` None for the finding's own, else another combination (at most
        ``other_flags`` of them)."""

    def discriminating(self, keys: list[str], finding, n: int) -> list:
        """Up to ``n`` inputs on which the explanations ``keys`` answer differently from each other."""

    def answers(self, key: str, finding, x, got) -> bool:
        """Whether the port's answer on ``x`` (``got``, None for llama.cpp's) is the explanation's."""

    def agreements(self, key: str, finding, n: int, targeted: bool = False) -> list:
        """Up to ``n`` inputs (the finding's own flags) where the explanation ``key`` and llama.cpp
        agree (``targeted``: only those where a wider defect of its kind would show)."""

    def agrees(self, key: str, finding, x) -> bool:
        """Whether the explanation ``key`` answers what llama.cpp answers on input ``x``."""

    def predicted(self, key: str, x, got, known: tuple[str, ...] = ()) -> bool | None:
        """Whether the port's answer on ``x`` (``got``: the rerun's finding, or None) is the
        explanation's (for decode and pieces, possibly with a ``known`` cause's output change too);
        None when the port parts from llama.cpp before the explanation does (it met another defect first)."""

    def diagnose_after(self, known: list[str], findings: list) -> tuple:
        """The explanations of what is left of the findings' port answers once a known
        explanation that adds or drops tokens of its own (``known``) is undone."""

    def wrapped(self, keys: tuple[str, ...], finding) -> bool:
        """Whether one of the explanations that only add or drop tokens of their own at the ends
        (a forced BOS) reproduces the port's output on ``finding``."""

    def together(self, keys: list[tuple[str, ...]], finding) -> int | None:
        """The index of the known cause that, met with another, reproduces ``finding``."""

    def confirm(self, explanations: tuple) -> None:
        """Note explanations this test named after its predictions, for the vocab's later tests."""

    def confirmed(self) -> dict[str, tuple]:
        """``{key: explanation}`` that earlier tests of this vocab confirmed."""


def _size(x) -> int:
    return len(x) if hasattr(x, "__len__") else 0


@dataclass
class Group:
    """The divergent inputs of one signature in one test: a count, and the first KEEP with findings."""

    signature: Any
    count: int = 0
    kept: list = field(default_factory=list)  # (input, finding), in arrival order
    replayed: set = field(default_factory=set)  # indices into kept of the replay store's inputs

    def add(self, x, finding, replayed: bool = False) -> None:
        self.count += 1
        if len(self.kept) < KEEP:
            if replayed:
                self.replayed.add(len(self.kept))
            self.kept.append((x, finding))

    @property
    def first(self):
        return self.kept[0][0]

    def shortest(self) -> list:
        """The kept (input, finding, replayed) triples, shortest input first (ties: arrival order)."""
        order = sorted(range(len(self.kept)), key=lambda k: (_size(self.kept[k][0]), k))
        return [(*self.kept[k], k in self.replayed) for k in order]


@dataclass(eq=False)
class Cause:
    """One cause found in a test: its shrunk input and finding, its explanations, its cases."""

    input: Any
    finding: Any
    signature: Any = None
    explanations: tuple = ()  # ((key, title, rule), ...)
    cases: int = 0
    replayed: int = 0  # its cases that came from the replay store
    predictions: tuple = ()  # (made, passed) of its explanations; () when none were asked
    loci: Counter = field(default_factory=Counter)  # locus(finding) of each of its cases
    triggers: tuple = ()  # an unexplained encode cause's code points that diverge alone (CauseFinder._triggers)
    probed: tuple = ()  # a code-point cause's set probed: (code points that show it, those that do not)
    widened: tuple = ()  # keys of its variant bound to other values that explain some of its cases
    unjudged: tuple = ()  # explanations no fresh input of its check could test (another cell may confirm them)
    # explanations whose predictions failed in this test (its port's other bugs met them), each with
    # its (made, passed), kept only when it reproduces every case of the cause: another cell may confirm it
    refuted: tuple = ()
    taken: list = field(default_factory=list)  # the findings of its cases
    seconds: Counter = field(default_factory=Counter)  # wall seconds spent on it: shrink, diagnose, ...

    def absorb(self, other: "Cause") -> None:
        """Take over the cases of ``other`` (folded into this cause), and the time spent on it."""
        self.cases += other.cases
        self.replayed += other.replayed
        self.loci.update(other.loci)
        self.taken += other.taken
        self.seconds.update(other.seconds)

    def take(self, f, replayed: bool) -> None:
        """Count one more case of this cause."""
        self.cases += 1
        self.replayed += replayed
        self.taken.append(f)
        spot = locus(f)
        if spot is not None:
            self.loci[spot] += 1

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(e[0] for e in self.explanations)

    def stamped(self):
        """The finding carrying this cause's explanations and its case count."""
        return replace(self.finding, cases=self.cases, explanations=self.explanations, replayed=self.replayed,
                       predictions=self.predictions, loci=tuple(self.loci.most_common(LOCI)),
                       triggers=self.triggers, probed=self.probed, widened=self.widened, unjudged=self.unjudged,
                       refuted=self.refuted,
                       seconds=tuple((k, round(v, 3)) for k, v in sorted(self.seconds.items())))


class CauseFinder(Characteriser, Predictor):
    """The causes of one test, from its signature groups (see the module docstring)."""

    def __init__(self, rerun: Callable, shrink: Callable | None, diagnoser: Diagnoser | None,
                 ask: bool = True, probe: Callable | None = None, other_flags: bool = False):
        self.rerun, self.shrink, self.diagnoser = rerun, shrink, diagnoser
        self.ask = ask  # the port can be asked (predictions); False once it went down
        # probe(check, input, flags or None) -> finding, None (agrees) or UNANSWERED: a prediction
        # asked of the port (default: rerun, which cannot tell a port error from agreement)
        self.probe = probe or (lambda check, x, flags: self.rerun(x))
        self.other_flags = other_flags  # the probe can run the check under other flag combinations
        self.adopt = ask  # causes other tests of the vocab confirmed may take this test's cases
        self.causes: list[Cause] = []
        self.unattributed = 0  # divergent cases no cause took (past KEEP or MAX_CAUSES)
        self._rejected: set[str] = set()  # rebound keys whose predictions failed
        self.seconds: Counter = Counter()  # wall seconds spent shrinking, diagnosing, predicting, characterising
        self._nested: list[float] = []  # seconds of the timed blocks inside each open one

    # --- the predicates -----------------------------------------------------------------
    def _explained(self, f) -> Cause | None:
        """The known cause whose explanation reproduces ``f``: as bound, or bound to another
        value of its parameter that predicts the port as well (:meth:`_widen`)."""
        found = next((c for c in self.causes if c.keys and self.diagnoser.explains(c.keys + c.widened, f)), None)
        return found or next((c for c in self.causes if c.keys and self._widen(c, f)), None)

    def _widen(self, cause: Cause, f) -> bool:
        """Bind the cause's variant to another parameter value that reproduces ``f`` (another
        code point of the same table) and, if it predicts the port, add it to the cause."""
        rebind = getattr(self.diagnoser, "rebind", None)
        key = rebind(cause.keys, f) if rebind else None
        if key is None or key in self._rejected:
            return False
        with self._timed("predict", cause.seconds):
            made, passed, predicts = self._predicts(key, f)
        if not predicts or (not made and self.ask):
            self._rejected.add(key)
            return False
        cause.widened += (key,)
        if cause.predictions:
            cause.predictions = (cause.predictions[0] + made, cause.predictions[1] + passed)
        return True

    def _met(self, f) -> Cause | None:
        """The known cause that, met with another known cause, reproduces ``f`` (the other may be
        one an earlier test of the vocab confirmed, :meth:`_elsewhere`)."""
        explained = [c for c in self.causes if c.keys]
        if not explained:  # one known cause may meet a bug the catalogue names from what it leaves
            return None
        k = self.diagnoser.together([c.keys for c in explained] + [(e,) for e in self._elsewhere()], f)
        return None if k is None or k >= len(explained) else explained[k]

    def _elsewhere(self) -> list[str]:
        """Keys an earlier test of this vocab named after its predictions that no cause of this
        test has yet (:meth:`Diagnoser.confirmed`)."""
        if not self.adopt:
            return []
        mine = {k for c in self.causes for k in c.keys}
        return [k for k in self.diagnoser.confirmed() if k not in mine]

    def _adopted(self, x, f, signature, new: list[Cause]) -> Cause | None:
        """A new cause for ``f`` named by an explanation an earlier test of this vocab confirmed,
        when that explanation alone reproduces it: candle's llama-bpe ``->`` read as `` ->`` in the
        known texts, whose predictions there meet the port's GPT-2 regex too, is the prefix space
        its encode test named on 48 fresh inputs. Its predictions are that test's; the example is
        shrunk while the explanation reproduces it."""
        key = next((k for k in self._elsewhere() if self.diagnoser.explains((k,), f)), None)
        if key is None:
            return None
        return self._seed(x, f, signature, new, self.diagnoser.confirmed()[key])

    def _seed(self, x, f, signature, new: list[Cause], explanation: tuple | None = None) -> Cause:
        """A new cause from ``x``: shrunk while it diverges with ``signature`` and no known
        cause explains it (with an ``explanation`` already named: while that one reproduces it).
        The caller diagnoses it."""
        def kept(c):
            g = self.rerun(c)
            if g is None or signature(g) != signature(f):
                return None
            if explanation is not None:
                return g if self.diagnoser.explains((explanation[0],), g) else None
            return None if self.diagnoser and self._explained(g) else g
        spent: Counter = Counter()
        if self.shrink is not None:
            with self._timed("shrink", spent):
                x = self.shrink(x, lambda c: kept(c) is not None)
            f = kept(x) or f
        cause = Cause(x, f, signature(f), explanations=(explanation,) if explanation else (), seconds=spent)
        self.causes.append(cause)
        new.append(cause)
        return cause

    def _diagnose(self, cause: Cause, others: list, found: tuple | None = None) -> None:
        """Name the variants that reproduce the cause's shrunk finding (``found``: already
        asked) and up to CONFIRM of ``others`` that each reproduces, and that predict the port
        (:meth:`_predicts`)."""
        if found is None:
            with self._timed("diagnose", cause.seconds):
                found = self.diagnoser.diagnose([cause.finding]) or self._after(cause)
        with self._timed("predict", cause.seconds):
            found = self._sided_with(found, cause.finding)
        kept, unjudged, failed, made, passed = [], [], [], 0, 0
        for explanation in found:
            key = explanation[0]
            with self._timed("diagnose", cause.seconds):
                confirm = [f for f in others if self.diagnoser.explains((key,), f)][:CONFIRM]
                refuted = bool(confirm) and not self.diagnoser.diagnose([cause.finding, *confirm])
            if refuted:
                continue
            with self._timed("predict", cause.seconds):
                n, ok, predicts = self._predicts(key, cause.finding)
            if predicts and (n or not self.ask):
                kept.append(explanation)
                made, passed = made + n, passed + ok  # the accepted explanations' predictions
            elif predicts:
                unjudged.append(explanation)
            else:
                failed.append((*explanation, (n, ok)))
        cause.explanations, cause.unjudged = tuple(kept), (() if kept else tuple(unjudged))
        cause.refuted = () if kept else tuple(failed)
        cause.predictions = (made, passed) if self.ask else ()

    def _after(self, cause: Cause) -> tuple:
        """Two bugs at once, one of them a known cause: the explanations of what is left of the
        port's answer with the known cause undone (:meth:`Diagnoser.diagnose_after`)."""
        known = [k for c in self.causes if c is not cause for k in c.keys]
        return self.diagnoser.diagnose_after(known, [cause.finding]) if known else ()

    @contextmanager
    def _timed(self, what: str, spent: Counter | None = None):
        """Add the wall time of the block to :attr:`seconds` under ``what``, and to ``spent``
        (a cause's seconds, or those of a cause to be) when it is spent on one (reported, never
        a budget)."""
        start = time.perf_counter()
        self._nested.append(0.0)
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            inner = self._nested.pop()  # a timed block inside counts under its own name only
            if self._nested:
                self._nested[-1] += elapsed
            elapsed -= inner
            self.seconds[what] += elapsed
            if spent is not None:
                spent[what] += elapsed

    # --- one group ---------------------------------------------------------------------
    def settle(self, group: Group, signature: Callable) -> None:
        """Give the group's cases to causes, known or new."""
        self._signature = signature
        first_x, first_f = group.kept[0]
        first_f = self.rerun(first_x) or first_f
        if self.diagnoser is None:
            cause = self._seed(first_x, first_f, signature, [])
            cause.cases, cause.replayed = group.count, len(group.replayed)
            cause.loci.update(k for k in map(locus, (f for _, f in group.kept)) if k is not None)
            return
        new: list[Cause] = []
        ordered = group.shortest()
        home = self._explained(first_f)
        if home is None:
            home = self._seed(first_x, first_f, signature, new)
            self._diagnose(home, [f for _, f, _ in ordered])
        reached, diagnoses = 0, 1
        for x, f, replayed in ordered:
            spent: Counter = Counter()  # replaying known causes on this case: its owner's time
            with self._timed("attribute", spent):
                owner = self._explained(f) or self._met(f) or self._adopted(x, f, signature, new)
            if owner is None:
                unexplained = next((c for c in new if not c.keys), None)
                if len(new) >= MAX_CAUSES and unexplained is None:
                    self.unattributed += 1  # no budget left for another cause: counted apart
                    reached += 1
                    continue
                named = False
                if len(new) < MAX_CAUSES and diagnoses < DIAGNOSES:
                    diagnoses += 1  # every catalogue run counts, named or not (a large unexplained group)
                    with self._timed("diagnose", spent):
                        named = bool(self.diagnoser.diagnose([f]))
                if named:
                    owner = self._seed(x, f, signature, new)
                    self._diagnose(owner, [])
                elif unexplained is not None:
                    owner = unexplained  # the cases no known cause explains
                else:
                    # Unexplained as it came (two bugs at once, say); shrunk, it may show one
                    # bug alone, which the catalogue names: diagnose the shrunk example too.
                    owner = self._seed(x, f, signature, new)
                    if diagnoses < DIAGNOSES:
                        diagnoses += 1
                        self._diagnose(owner, [])
            owner.take(f, replayed)
            owner.seconds.update(spent)
            reached += 1
        self.unattributed += group.count - reached  # past KEEP: never compared with a cause

    def finish(self) -> list[Cause]:
        """The test's causes: an unexplained one that two known causes reproduce together is
        folded into the first of them, and a known one whose finding another cause's
        explanation also reproduces is folded into that wider cause (:meth:`_fold_narrower`).
        Each unexplained encode cause is characterised by its triggers (:meth:`_triggers`)."""
        if self.diagnoser is None:
            return self.causes
        # An unexplained cause met before the cause it comes with was known ("a" with no BOS and
        # a space put before it, seen before "" showed the BOS alone; a lossy decode whose
        # predictions meet a stripped leading space too): diagnosed again now, with them known.
        for c in self.causes:
            known_since = any(o.keys for o in self.causes if o is not c)
            if not c.keys and self.ask and known_since:
                self._diagnose(c, [])
        out = self._folded()
        for c in out:
            if c.keys and c.predictions and c.predictions[0]:
                self.diagnoser.confirm(c.explanations)
            if c.refuted:
                with self._timed("attribute", c.seconds):
                    c.refuted = tuple(r for r in c.refuted
                                      if all(self.diagnoser.explains((r[0],), f) for f in c.taken))
            if not c.keys and self.ask and isinstance(c.input, str):
                with self._timed("characterise", c.seconds):
                    # where plain words fail too, every character would "fail by itself"
                    c.triggers = () if self._bland() else self._triggers(c.input)
                    if c.triggers and all(ord(x) > 0x7F for x in c.triggers) and self._non_ascii():
                        c.probed = (NON_ASCII, ())
            elif c.keys and self.ask:
                with self._timed("characterise", c.seconds):
                    c.probed = self._probed(c)
        return out

    def _folded(self) -> list[Cause]:
        kept = []
        for c in self.causes:
            owner = None if c.keys else self._met(c.finding)
            if owner is not None:
                owner.absorb(c)
            else:
                kept.append(c)
        return [c for c in self._fold_narrower(kept) if c.cases]

    def _fold_narrower(self, causes: list[Cause]) -> list[Cause]:
        """One bug met first through a narrow case: a port on Unicode 18 seen through a code
        point new in 17 is diagnosed "Unicode 17 or later", then through one new in 18 as
        "18 or later". The wider explanation reproduces the narrower cause's finding (and
        not the other way round), so the two are one cause, under the wider explanation."""
        kept = list(causes)
        for c in list(kept):
            if not c.keys:
                continue
            wider = next((o for o in kept if o is not c and o.keys and self.diagnoser.explains(o.keys, c.finding)
                          and not self.diagnoser.explains(c.keys, o.finding)), None)
            if wider is not None:
                wider.absorb(c)
                kept.remove(c)
        return kept
