"""Causes within one test: each signature group's example shrunk and diagnosed, every
divergent case given to the cause that explains it, and the hidden causes found.

While a test runs, its Hunt files every divergent input, with its finding, under its
reference-side signature (:mod:`harness.engine.signature`) in a :class:`Group` (the first
:data:`KEEP` of them; the rest are counted). At the end, :func:`settle` turns a group
into causes:

1. the group's first input is shrunk (keeping the signature) and *diagnosed*: the
   catalogue variants (harness.diagnosis) that reproduce the port's exact output on it,
   and on up to :data:`CONFIRM` more of the group that its first variant explains;
2. every kept case, shortest first, goes to the first cause that explains it. One that no
   cause explains seeds a new cause when it is diagnosable, or when the group has no
   unexplained cause yet: shrunk with its own predicate (it diverges with this signature
   and no known cause explains it), then diagnosed in turn. So two bugs behind one first
   divergent character come out as two causes (at most :data:`MAX_CAUSES` per group).

A clean run never diagnoses anything; a broken one diagnoses a few short texts per cause
(at most :data:`DIAGNOSES` full catalogue runs per group) and checks each kept case
against the causes found, one variant at a time, within :data:`SECONDS`. Cases the
search did not reach (past :data:`KEEP`, or past the time) count for the first cause;
the cause's ``cases`` says so only in that it is the group's remainder.

>>> g = Group(("encode", "replaces", "letter"))
>>> for x in ["abcdef", "ab", "abc"]:
...     g.add(x, None)
>>> g.count, g.first, [x for x, _ in g.shortest()][:2]
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
    """What the engine asks of the catalogue (VocabUnderTest implements it)."""

    def diagnose(self, findings: list) -> tuple:
        """The explanations (name, title, rule) reproducing every finding, most specific first."""

    def explains(self, names: tuple[str, ...], finding) -> bool:
        """Whether one of the named variants reproduces the port's output on ``finding``."""


def _size(x) -> int:
    return len(x) if hasattr(x, "__len__") else 0


@dataclass
class Group:
    """The divergent inputs of one signature in one test: a count, and the first KEEP with findings."""

    signature: Any
    count: int = 0
    kept: list = field(default_factory=list)  # (input, finding), in arrival order

    def add(self, x, finding) -> None:
        self.count += 1
        if len(self.kept) < KEEP:
            self.kept.append((x, finding))

    @property
    def first(self):
        return self.kept[0][0]

    def shortest(self) -> list:
        """The kept (input, finding) pairs, shortest input first (ties: arrival order)."""
        order = sorted(range(len(self.kept)), key=lambda k: (_size(self.kept[k][0]), k))
        return [self.kept[k] for k in order]


@dataclass
class Cause:
    """One cause found in a group: its shrunk input and finding, its explanation, its cases."""

    input: Any
    finding: Any
    explanations: tuple = ()  # ((name, title, rule), ...)
    cases: int = 0

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(e[0] for e in self.explanations)

    def stamped(self):
        """The finding carrying this cause's diagnosis, title and rule, and its case count."""
        title, rule = (self.explanations[0][1], self.explanations[0][2]) if self.explanations else ("", "")
        return replace(self.finding, cases=self.cases, diagnosis=self.names, title=title, rule=rule)


class _Settler:
    """The causes of one group (see the module docstring)."""

    def __init__(self, group: Group, rerun: Callable, shrink: Callable | None, signature: Callable,
                 diagnoser: Diagnoser | None):
        self.group, self.rerun, self.shrink, self.signature, self.diagnoser = group, rerun, shrink, signature, diagnoser
        self.causes: list[Cause] = []
        self.diagnoses = 0

    def diverges(self, x, known: tuple[Cause, ...]):
        """The finding of ``x`` if it diverges with the group's signature and no known cause explains it."""
        f = self.rerun(x)
        if f is None or self.signature(f) != self.group.signature:
            return None
        if any(c.names and self.diagnoser.explains(c.names, f) for c in known):
            return None
        return f

    def seed(self, x, f) -> Cause:
        known = tuple(self.causes)
        if self.shrink is not None:
            x = self.shrink(x, lambda c: self.diverges(c, known) is not None)
            f = self.diverges(x, known) or f
        cause = Cause(x, f)
        self.causes.append(cause)
        return cause

    def diagnose(self, cause: Cause, others: list) -> None:
        """Name the variants that reproduce the cause's shrunk finding and up to CONFIRM of
        ``others`` that its first variant explains (all of them, not one by luck)."""
        self.diagnoses += 1
        found = self.diagnoser.diagnose([cause.finding])
        confirm = [f for f in others if found and self.diagnoser.explains((found[0][0],), f)][:CONFIRM]
        cause.explanations = self.diagnoser.diagnose([cause.finding, *confirm]) if confirm else found

    def owner(self, f) -> Cause | None:
        """The cause a case belongs to; None when it seeds a new one."""
        for c in self.causes:
            if c.names and self.diagnoser.explains(c.names, f):
                return c
        if len(self.causes) >= MAX_CAUSES:
            return self.causes[0]
        if self.diagnoses < DIAGNOSES and self.diagnoser.diagnose([f]):
            self.diagnoses += 1
            return None
        return next((c for c in self.causes if not c.names), None)

    def run(self) -> list[Cause]:
        g = self.group
        first = self.seed(g.first, self.rerun(g.first) or g.kept[0][1])
        if self.diagnoser is None:
            first.cases = g.count
            return self.causes
        ordered = g.shortest()
        self.diagnose(first, [f for _, f in ordered])
        deadline = time.perf_counter() + SECONDS
        reached = 0
        for x, f in ordered:
            if time.perf_counter() > deadline:
                break
            owner = self.owner(f)
            if owner is None:
                owner = self.seed(x, f)
                self.diagnose(owner, [])
            owner.cases += 1
            reached += 1
        first.cases += g.count - reached  # cases past KEEP or past the time: the group's first cause
        return self.causes


def settle(group: Group, rerun: Callable, shrink: Callable | None, signature: Callable,
           diagnoser: Diagnoser | None) -> list[Cause]:
    """The causes behind one group (see the module docstring), first cause first."""
    return _Settler(group, rerun, shrink, signature, diagnoser).run()
