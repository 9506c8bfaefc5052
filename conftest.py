"""The rules of ``make test`` for every item it collects: tests/, examples/toyport/tests and the
docstring examples of harness/, reference/ and tools/.

Under ``make test`` (LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1) nothing may skip: a skip is a
failure naming its reason, so a test cannot quietly stop checking (xfail stays xfail).
Docstring examples marked ``+SKIP`` because they read ``vocabs/`` run too, on the selected
pin's vocabs.
"""

from __future__ import annotations

import os

import pytest

# make test's xdist_group marks, which pytest 9.2 keeps from xdist's own loadgroup
pytest_plugins = ["tests.support.xdist_groups"]


def _skip_is_failure(report) -> None:
    """Under LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1 (make test), a skip is a failure naming its reason."""
    if not report.skipped or hasattr(report, "wasxfail") or os.environ.get("LLAMA_CONFORMANCE_REQUIRE_REFERENCE") != "1":
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"skipped under LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1, where nothing may skip: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _skip_is_failure(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield  # a whole module skipped at import (pytest.importorskip, skip(allow_module_level))
    _skip_is_failure(outcome.get_result())


def pytest_collection_modifyitems(config, items):
    """Under LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1 (make test, run from the checkout with the vocabs
    fetched) docstring examples marked ``+SKIP`` because they read ``vocabs/`` run too, so none skips.
    Docstrings name a vocab as ``vocabs/ggml-vocab-X.gguf``; the selected pin's directory
    (``vocabs/<pin>/``) is put in its place."""
    if os.environ.get("LLAMA_CONFORMANCE_REQUIRE_REFERENCE") != "1":
        return
    import doctest

    from reference.paths import vocabs_dir
    here = f'"{vocabs_dir()}/ggml-vocab-'
    for item in items:
        for example in getattr(getattr(item, "dtest", None), "examples", ()):
            example.options.pop(doctest.SKIP, None)
            example.source = example.source.replace('"vocabs/ggml-vocab-', here)
