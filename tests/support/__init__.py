"""Helpers shared by the harness's own tests, imported one way: ``from tests.support.X import ...``.

- :mod:`tests.support.suite`: run the conformance suite's nodes in process (pytester)
  and read the report it wrote;
- :mod:`tests.support.agreement`: the harness tokenizer against llama.cpp on many texts.

``require`` (a missing reference as a failure under ``make test``) is the package's own:
``from harness.conformance.needs import require``. The deliberately broken ports the
tests check live in ``tests/ports/``.
"""
