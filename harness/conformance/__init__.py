"""The conformance engine: ports, strategies, the first-divergence diff, reports.

- :mod:`~harness.conformance.diff`: pure ``first_divergence`` and the ``Divergence`` value;
- :mod:`~harness.conformance.ports`: the ``Port`` protocol, built-in and external ports;
- :mod:`~harness.conformance.strategies`: named Hypothesis text families and profiles;
- :mod:`~harness.conformance.checks`: one vocab under test and its checks;
- :mod:`~harness.conformance.hunt`: one check over many inputs, every distinct divergence;
- :mod:`~harness.conformance.fastphase`: the fast random phase before Hypothesis;
- :mod:`~harness.conformance.report` / ``html_report``: text, JSON and HTML rendering;
- :mod:`~harness.conformance.plugin`: the pytest plugin (``-p harness.conformance.plugin``);
- :mod:`~harness.conformance.diffcmd`: ``python -m harness diff``;
- :mod:`~harness.conformance.suite`: the conformance tests themselves.

The deliberately broken self-test ports live in the repository's tests/ports/, not here.

>>> from harness.conformance.diff import first_divergence
>>> first_divergence([1, 2], [1, 3]).index
1
"""
