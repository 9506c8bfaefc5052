"""Shared fixtures: the pinned reference, resolved once per session.

A missing reference skips with the command that fetches/builds it, except
under ``make test`` / ``make conformance`` (LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1),
where a missing reference is an error: CI must never pass by skipping. There any
other skip is a failure too (``pytest_runtest_makereport`` below), so a test cannot
quietly stop checking; xfail stays xfail.
"""

from __future__ import annotations

import os

import pytest

from needs import require


@pytest.fixture(scope="session")
def inproc():
    """``inproc("qwen2")`` -> the in-process llama.cpp reference for that vocab."""
    from reference.inproc import InProcessReference
    from reference.vocabs import vocab_path

    return lambda name: require(lambda: InProcessReference.load(vocab_path(name)))


@pytest.fixture(scope="session")
def cli():
    """``cli("qwen2")`` -> the llama-tokenize CLI reference for that vocab."""
    from reference.cli import CliReference
    from reference.vocabs import vocab_path

    return lambda name: require(lambda: CliReference(vocab_path(name)))


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
