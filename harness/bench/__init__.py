"""``make bench``: the harness tokenizer and the engine, timed against llama.cpp in the same run.

- :mod:`~harness.bench.run`: load, encode (cold, warm) and decode of every vocab, as ratios
  to llama.cpp, peak RSS, and the table (``llama-conformance bench``);
- :mod:`~harness.bench.engine`: the conformance engine's cases per second next to its
  oracle's own rate.
"""
