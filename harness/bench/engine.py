"""The conformance engine's own speed, next to its oracle's (part of ``make bench``).

For one vocab, a fixed list of fast-phase texts (harness/inputs/pool.py,
seed 0) is checked by the engine for three ports, one worker:

- ``oracle itself``: llama.cpp in process compared with the very same object (the engine's
  ceiling). It is not a port spec (``PORT=llama.cpp`` runs llama.cpp out of process) and
  reports nothing as conformance: it cannot diverge, it only times the engine;
- ``harness``: the harness tokenizer in process;
- ``harness serve``: the same tokenizer as an external JSON-lines port, batched.

Next to them: the oracle's own encode rate on the same texts (llama.cpp in
process, nothing else), so the distance to the limit is one ratio, and the
Hypothesis phase's cases/s on the same vocab (it explores, it is not the bulk).

>>> sorted(PORTS)
['harness', 'harness serve', 'oracle itself']
"""

from __future__ import annotations

import random
import shlex
import sys
import time

#: The in-process self-comparison's name: not a PORT spec (see the module docstring).
SELF = "oracle itself"
PORTS = {SELF: SELF, "harness": "harness",
         "harness serve": f"{shlex.quote(sys.executable)} -m harness serve --vocab {{vocab}}"}


class _SelfSession:
    """What VocabUnderTest asks of a session, with the oracle as its own port."""

    def port(self, vut):
        return vut.reference


def _oracle_vut(vocab: str):
    """The vocab under test whose port is its own reference (the engine's ceiling)."""
    from harness.engine.session import Session
    from harness.engine.vut import VocabUnderTest
    ref = Session("harness").vocab(vocab)
    return VocabUnderTest(ref.name, ref.path, SELF, ref.reference, _SelfSession())


def fixed_texts(vut, n: int, seed: int = 0) -> list[str]:
    """``n`` fast-phase texts for ``vut``, the same on every run."""
    from harness.inputs.pool import fragment_pool, random_recipes
    from harness.inputs.strategies import materialise
    recipes = random_recipes(fragment_pool(seed), random.Random(seed))
    return [materialise(next(recipes), vut.texts) for _ in range(n)]


def oracle_rate(vut, texts: list[str]) -> float:
    """llama.cpp in process alone: texts encoded per second (plain flags)."""
    t = time.perf_counter()
    for text in texts:
        vut.reference.encode(text, add_special=False, parse_special=False)
    return len(texts) / (time.perf_counter() - t)


def engine_rate(port: str, vocab: str, texts: list[str]) -> dict:
    """The fast phase over ``texts`` with ``port``: cases per second, and what it found."""
    from harness.engine.session import Session
    from harness.engine.fastphase import run_phase
    from harness.engine.hunt import Hunt
    session = Session("harness" if port == SELF else port)
    try:
        vut = _oracle_vut(vocab) if port == SELF else session.vocab(vocab)
        vut.port  # started before the clock: a process start is not per-case work
        h = Hunt("encode", "plain", lambda text: vut.check_encode(text, False, False), vocab=vocab)
        t = time.perf_counter()
        run_phase(h, iter(texts), lambda b: vut.port_many("encode", b, add_special=False, parse_special=False),
                  lambda text, ids: list(ids) == vut.reference.encode(text, add_special=False, parse_special=False),
                  count=len(texts), seconds=None)
        dt = time.perf_counter() - t
    finally:
        session.close()
    return {"cases": h.tally.cases, "seconds": dt, "cases_per_s": h.tally.cases / dt,
            "divergent": h.tally.divergent, "port_errors": len(h._errors)}


def hypothesis_rate(vocab: str, n: int = 200) -> float:
    """Cases per second of the Hypothesis phase (recipes, llama.cpp against itself)."""
    from hypothesis import HealthCheck, given, settings

    from harness.inputs.strategies import materialise, recipes
    vut = _oracle_vut(vocab)
    vut.texts.pieces[0]
    count = [0]

    @settings(max_examples=n, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(recipe=recipes())
    def explore(recipe):
        vut.check_encode(materialise(recipe, vut.texts), False, False)
        count[0] += 1

    t = time.perf_counter()
    explore()
    return count[0] / (time.perf_counter() - t)


def measure(vocab: str = "qwen2", n: int = 3000) -> dict:
    """Every rate above for one vocab (see the module docstring)."""
    from harness.engine.session import Session
    vut = Session("harness").vocab(vocab)  # its reference only: the port is not opened
    texts = fixed_texts(vut, n)
    oracle = oracle_rate(vut, texts)
    ports = {name: engine_rate(spec, vocab, texts) for name, spec in PORTS.items()}
    return {"vocab": vocab, "texts": n, "oracle_encode_per_s": oracle,
            "hypothesis_cases_per_s": hypothesis_rate(vocab), "ports": ports}


def table(m: dict) -> str:
    """The engine table ``make bench`` prints."""
    lines = [f"engine (one worker, vocab {m['vocab']}, {m['texts']} fast-phase texts, plain flags): "
             f"oracle alone {m['oracle_encode_per_s']:.0f} encodes/s; Hypothesis phase "
             f"{m['hypothesis_cases_per_s']:.0f} cases/s",
             f"  {'port':<14} {'cases/s':>9} {'of oracle':>10} {'divergent':>10}"]
    for name, r in m["ports"].items():
        lines.append(f"  {name:<14} {r['cases_per_s']:>9.0f} {r['cases_per_s'] / m['oracle_encode_per_s']:>9.0%} "
                     f"{r['divergent']:>10}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(measure(*(sys.argv[1:2] or ["qwen2"]))))
