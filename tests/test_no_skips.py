"""Under make test (LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1) nothing skips: the root conftest.py turns a skip into a failure."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

_TESTS = """
import pytest

def test_skips():
    pytest.skip("the reason")

@pytest.mark.xfail(reason="waits on llama.cpp", strict=True)
def test_xfails():
    assert 0

def test_passes():
    pass
"""


@pytest.mark.parametrize("required, outcomes", [
    ("1", {"failed": 1, "xfailed": 1, "passed": 1}),
    ("", {"skipped": 1, "xfailed": 1, "passed": 1}),
])
def test_a_skip_is_a_failure_only_when_the_reference_is_required(pytester, monkeypatch, required, outcomes):
    monkeypatch.setenv("LLAMA_CONFORMANCE_REQUIRE_REFERENCE", required)
    pytester.makeconftest((Path(__file__).parents[1] / "conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(test_x=_TESTS)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(**outcomes)
    if required:
        result.stdout.fnmatch_lines(["*where nothing may skip: *the reason*"])


def test_a_module_skipped_at_import_is_an_error_when_required(pytester, monkeypatch):
    monkeypatch.setenv("LLAMA_CONFORMANCE_REQUIRE_REFERENCE", "1")
    pytester.makeconftest((Path(__file__).parents[1] / "conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(test_x="import pytest\npytest.importorskip('no_such_module_here')\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
