"""The conformance suite itself: pytest tests shipped inside the package.

Run it with ``pytest --pyargs harness.conformance.suite -p harness.conformance.plugin``
(``make conformance`` does); see conftest.py for the options it reads.
"""
