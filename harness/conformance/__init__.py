"""The conformance run: the suite of pytest tests shipped in the package, and its plugin.

- :mod:`~harness.conformance.suite`: the checks as pytest tests, one per vocab, check and
  flag combination (``pytest --pyargs harness.conformance.suite``);
- :mod:`~harness.conformance.plugin`: the pytest plugin that collects each test's tally
  and writes the reports (``-p harness.conformance.plugin``);
- :mod:`~harness.conformance.needs`: ``require``, a missing reference as a skip or a failure.

The stages it runs on sit below it: :mod:`harness.inputs` (what the checks feed),
:mod:`harness.engine` (vocab under test, session, checks, hunt, shrink),
:mod:`harness.ports` (port specs), :mod:`harness.reports` (the reports room). The
deliberately broken self-test ports live in the repository's tests/ports/, not here.

>>> from harness.conformance.plugin import vocab_scope
>>> vocab_scope("suite/test_golden.py::test_golden[gpt-2]")
'gpt-2'
"""
