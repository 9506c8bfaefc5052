"""The fast random phase: many cheap inputs, sent to the port in batches.

Before Hypothesis explores, each generated test (encode, decode) runs inputs built
from the pool (:mod:`harness.inputs.pool`): they go to the port in batches (one
``batch`` request per :data:`BATCH` for an external port whose ``info`` says
``"batch": true``) and are compared with llama.cpp's answers; a divergent input goes
through the test's Hunt like any other case: grouped by signature, shrunk and
reported the same way.

>>> class H:
...     stopped, cases = False, 0
...     def passed_case(self): self.cases += 1
>>> h = H(); run_phase(h, iter(range(10)), lambda b: b, lambda x, got: True, count=5, seconds=None), h.cases
(5, 5)
"""

from __future__ import annotations

import time
from typing import Callable, Iterator

BATCH = 256


def run_phase(hunt, inputs: Iterator, answers: Callable, agrees: Callable, *,
              count: int, seconds: float | None) -> int:
    """Feed ``count`` inputs (or as many as ``seconds`` allow) to ``hunt`` in batches.

    ``answers(batch)`` gives the port's answer (or the error it got) per input;
    ``agrees(x, answer)`` says whether it equals llama.cpp's. Agreeing inputs count
    as passed cases; the others go through ``hunt.case`` (recomputed, grouped,
    shrunk; one that agrees when recomputed is a port error, not a pass). An exception (in making an input, ``answers`` or ``agrees``) stops the hunt
    (``hunt.absorb``): the inputs of its batch not yet counted and the rest of the budget
    are not checked. Returns the number of inputs used.
    """
    deadline = time.perf_counter() + seconds if seconds is not None else None
    used = 0
    while not hunt.stopped and (used < count if deadline is None else time.perf_counter() < deadline):
        batch: list = []
        done = 0
        try:
            for _ in range(BATCH if deadline else min(BATCH, count - used)):
                batch.append(next(inputs))
            for x, got in zip(batch, answers(batch)):
                if isinstance(got, Exception):
                    hunt.failed_case(x, got)
                elif agrees(x, got):
                    hunt.passed_case()
                else:
                    hunt.case(x, disagreed=True)
                done += 1
        except Exception as e:
            hunt.absorb(e)
            hunt.tally.not_checked += len(batch) - done
        used += len(batch)
    if hunt.stopped and deadline is None:
        hunt.tally.not_checked += count - used  # the rest of the budget never ran
    return used
