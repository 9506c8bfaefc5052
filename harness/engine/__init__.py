"""The engine: one vocab under test, its port, and the checks that compare it with llama.cpp.

- :mod:`~harness.engine.vut`: the vocab under test: reference, port calls with their
  errors sorted, and the comparisons that make findings;
- :mod:`~harness.engine.session`: per-worker ports, opened once and restarted when down;
- :mod:`~harness.engine.checks`: the bodies of the golden, known, encode, decode, piece
  and cross-check checks (the suite and the pytest plugin both call them);
- :mod:`~harness.engine.hunt`: one check over its whole budget, every distinct divergence;
- :mod:`~harness.engine.fastphase`: the fast random phase, in batches;
- :mod:`~harness.engine.signature`: a divergence's signature, from llama.cpp's classes;
- :mod:`~harness.engine.shrink`: the one shrinker (the Hunt, pin-diff and the scoreboard use it);
- :mod:`~harness.engine.replay`: earlier shrunk failures, run first.
"""
