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
   come out as two causes (at most :data:`MAX_CAUSES` new causes per group);
3. at the end, an unexplained cause whose example two known causes reproduce together
   is folded into them.

A clean run never diagnoses anything; a broken one diagnoses a few short texts per cause
(at most :data:`DIAGNOSES` full catalogue runs per group) and checks each kept case
against the causes found, one variant at a time, within :data:`SECONDS`. Cases the
search did not reach (past :data:`KEEP`, or past the time) count for the group's first
cause.

>>> g = Group(("encode", "replaces", "letter"))
>>> for x in ["abcdef", "ab", "abc"]:
...     g.add(x, None)
>>> g.count, g.first, [x for x, _, _ in g.shortest()][:2]
(3, 'abcdef', ['ab', 'abc'])
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Protocol

#: Divergent cases kept (with their findings) per signature group; the rest are counted.
KEEP = 2000
#: Cases a diagnosis must also reproduce (besides the shrunk example).
CONFIRM = 3
#: Causes one signature group may split into.
MAX_CAUSES = 4
#: Full catalogue runs (diagnoses) per group, for cases no cause explains.
DIAGNOSES = 12
#: Wall time for giving a group's kept cases to their causes.
SECONDS = 20.0


class Diagnoser(Protocol):
    """What the engine asks of the catalogue (harness.engine.diagnoser implements it)."""

    def diagnose(self, findings: list) -> tuple:
        """The explanations (key, title, rule) reproducing every finding, most specific first."""

    def explains(self, keys: tuple[str, ...], finding) -> bool:
        """Whether one of the explanations reproduces the port's output on ``finding``."""

    def together(self, keys: list[tuple[str, ...]], finding) -> int | None:
        """The index of the known cause that, met with another, reproduces ``finding``."""


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

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(e[0] for e in self.explanations)

    def stamped(self):
        """The finding carrying this cause's explanations and its case count."""
        return replace(self.finding, cases=self.cases, explanations=self.explanations, replayed=self.replayed)


class CauseFinder:
    """The causes of one test, from its signature groups (see the module docstring)."""

    def __init__(self, rerun: Callable, shrink: Callable | None, diagnoser: Diagnoser | None):
        self.rerun, self.shrink, self.diagnoser = rerun, shrink, diagnoser
        self.causes: list[Cause] = []

    # --- the predicates -----------------------------------------------------------------
    def _explained(self, f) -> Cause | None:
        return next((c for c in self.causes if c.keys and self.diagnoser.explains(c.keys, f)), None)

    def _met(self, f) -> Cause | None:
        """The known cause that, met with another known cause, reproduces ``f``."""
        explained = [c for c in self.causes if c.keys]
        if not explained:  # one known cause may meet a bug the catalogue names from what it leaves
            return None
        k = self.diagnoser.together([c.keys for c in explained], f)
        return None if k is None else explained[k]

    def _seed(self, x, f, signature, new: list[Cause]) -> Cause:
        """A new cause from ``x``: shrunk while it diverges with ``signature`` and no known
        cause explains it, then diagnosed."""
        def diverges(c):
            g = self.rerun(c)
            if g is None or signature(g) != signature(f):
                return None
            return None if self.diagnoser and self._explained(g) else g
        if self.shrink is not None:
            x = self.shrink(x, lambda c: diverges(c) is not None)
            f = diverges(x) or f
        cause = Cause(x, f, signature(f))
        self.causes.append(cause)
        new.append(cause)
        return cause

    def _diagnose(self, cause: Cause, others: list) -> None:
        """Name the variants that reproduce the cause's shrunk finding and up to CONFIRM of
        ``others`` that its first explanation reproduces (all of them, not one by luck)."""
        found = self.diagnoser.diagnose([cause.finding])
        confirm = [f for f in others if found and self.diagnoser.explains((found[0][0],), f)][:CONFIRM]
        cause.explanations = self.diagnoser.diagnose([cause.finding, *confirm]) if confirm else found

    # --- one group ---------------------------------------------------------------------
    def settle(self, group: Group, signature: Callable) -> None:
        """Give the group's cases to causes, known or new."""
        first_x, first_f = group.kept[0]
        first_f = self.rerun(first_x) or first_f
        if self.diagnoser is None:
            cause = self._seed(first_x, first_f, signature, [])
            cause.cases, cause.replayed = group.count, len(group.replayed)
            return
        new: list[Cause] = []
        ordered = group.shortest()
        home = self._explained(first_f)
        if home is None:
            home = self._seed(first_x, first_f, signature, new)
            self._diagnose(home, [f for _, f, _ in ordered])
        deadline, reached, diagnoses = time.perf_counter() + SECONDS, 0, 1
        for x, f, replayed in ordered:
            if time.perf_counter() > deadline:
                break
            owner = self._explained(f) or self._met(f)
            if owner is None:
                unexplained = next((c for c in new if not c.keys), None)
                if len(new) >= MAX_CAUSES:
                    owner = home
                elif diagnoses < DIAGNOSES and self.diagnoser.diagnose([f]):
                    diagnoses += 1
                    owner = self._seed(x, f, signature, new)
                    self._diagnose(owner, [])
                elif unexplained is not None:
                    owner = unexplained
                else:
                    # Unexplained as it came (two bugs at once, say); shrunk, it may show one
                    # bug alone, which the catalogue names: diagnose the shrunk example too.
                    owner = self._seed(x, f, signature, new)
                    if diagnoses < DIAGNOSES:
                        diagnoses += 1
                        self._diagnose(owner, [])
            owner.cases += 1
            owner.replayed += replayed
            reached += 1
        home.cases += group.count - reached  # past KEEP or past the time: the group's first cause

    def finish(self) -> list[Cause]:
        """The test's causes: an unexplained one that two known causes reproduce together is
        folded into the first of them, and a known one whose finding another cause's
        explanation also reproduces is folded into that wider cause (:meth:`_fold_narrower`)."""
        if self.diagnoser is None:
            return self.causes
        kept = []
        for c in self.causes:
            owner = None if c.keys else self._met(c.finding)
            if owner is not None:
                owner.cases += c.cases
                owner.replayed += c.replayed
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
                wider.cases += c.cases
                wider.replayed += c.replayed
                kept.remove(c)
        return kept
