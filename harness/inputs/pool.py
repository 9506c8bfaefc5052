"""The fast random phase's inputs: a pool of fragments from the named families, and its budget.

Hypothesis spends about 3 ms of engine work per example; llama.cpp in process
answers a short text in 10-40 µs. So before Hypothesis explores (it keeps its
own budget: its mutations find what random sampling does not), each generated
test runs a cheaper phase:

1. a *pool* of fragments is drawn once per worker and seed from the suite's own
   fragment strategy (``strategies._fragment``: every named family, vocab pieces,
   special texts), by Hypothesis itself, so the families stay defined in one place;
2. each text is 1-8 pool fragments joined (1 in 100 repeated 2-50 times: long texts
   cost the oracle milliseconds, and Hypothesis' recipes make them up to 40,000 chars),
   chosen by a seeded ``random.Random``, so a fixed seed and count reproduce exactly;
3. the engine (:mod:`harness.engine.fastphase`) sends them to the port in batches
   and hands divergent ones to the test's Hunt.

The phase's size is a count per profile (:data:`FAST_EXAMPLES`), or a share of a
wall-time budget (``BUDGET=5m``, see :func:`time_share`).

>>> parse_budget("5m"), parse_budget("90s"), parse_budget("1.5m"), parse_budget("")
(300.0, 90.0, 90.0, None)
"""

from __future__ import annotations

import os
import random
import re
from functools import lru_cache
from typing import Iterator

from harness.errors import HarnessError

#: Fast-phase texts per generated test, by Hypothesis profile.
FAST_EXAMPLES = {"ci": 200, "conformance": 4000, "thorough": 40000}
POOL_DRAWS, POOL_WIDTH = 80, 16
#: Share of a wall-time budget given to the fast phases (the rest: Hypothesis, golden,
#: pieces, loading).
FAST_SHARE = 0.6


def parse_budget(text: str) -> float | None:
    """Seconds in ``BUDGET``: ``300``, ``90s``, ``5m``, ``1h``; None if empty."""
    text = (text or "").strip().lower()
    if not text:
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([smh]?)", text)
    if not m:
        raise HarnessError(f"BUDGET={text!r}: give a time such as 300, 90s, 5m or 1h")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def time_share(n_tests: int) -> float | None:
    """Seconds of fast phase for one generated test under ``BUDGET``: the budget times
    the workers, shared among the run's generated tests (None without a budget)."""
    budget = parse_budget(os.environ.get("BUDGET", ""))
    if budget is None:
        return None
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    return budget * workers * FAST_SHARE / max(1, n_tests)


def run_seed() -> int:
    """The fast phase's seed: ``CONFORMANCE_SEED``, else 0 (a fixed seed: runs repeat)."""
    value = os.environ.get("CONFORMANCE_SEED") or "0"
    try:
        return int(value)
    except ValueError:
        raise HarnessError(f"CONFORMANCE_SEED={value!r} must be an integer") from None


@lru_cache(maxsize=4)
def fragment_pool(seed: int) -> tuple:
    """Fragments drawn by Hypothesis from the suite's fragment strategy (seeded)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    from harness.inputs import strategies
    pool: list = []

    @hseed(seed)
    @settings(max_examples=POOL_DRAWS, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(strategies._fragment, min_size=POOL_WIDTH, max_size=POOL_WIDTH))
    def draw(fragments):
        pool.extend(fragments)

    with strategies.seeded_generation():
        draw()
    return tuple(pool)


def random_recipes(pool: tuple, rng: random.Random) -> Iterator:
    """Endless recipes of 1-8 pool fragments (1 in 100 repeated 2..50 times)."""
    from harness.inputs.strategies import Recipe
    while True:
        parts = []
        for _ in range(rng.randint(1, 8)):
            p = rng.choice(pool)
            parts += list(p) if isinstance(p, tuple) else [p]
        yield Recipe(tuple(parts), rng.randint(2, 50) if rng.randrange(100) == 0 else 1)
