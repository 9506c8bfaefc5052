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


def _make_test_paths() -> tuple[list[str], list[str]]:
    """(test paths, doctest paths) of the pytest command in the Makefile's ``test`` recipe."""
    import re
    makefile = (Path(__file__).parents[1] / "Makefile").read_text(encoding="utf-8")
    m = re.search(r'-m pytest .*?-m "not slow and not pins[^"]*" (.+?)\s*\\?\n\s*--doctest-modules (.+?) --ignore', makefile)
    assert m, "the Makefile's test recipe changed: update this test"
    return m.group(1).split(), m.group(2).split()


def test_every_item_make_test_collects_falls_under_the_rule(pytester, monkeypatch):
    """The same paths as make test: a skipping example test, a doctest that skips, and a doctest
    marked +SKIP (which runs instead) are judged by the root conftest.py."""
    tests, doctests = _make_test_paths()
    assert "examples/toyport/tests" in tests and {"harness", "reference", "tools"} <= set(doctests)
    root = Path(__file__).parents[1]
    pytester.makeconftest((root / "conftest.py").read_text(encoding="utf-8"))
    pytester.makefile(".toml", pyproject='[tool.pytest.ini_options]\naddopts = "-ra"\n')
    for path in tests + doctests:
        (pytester.path / path).mkdir(parents=True, exist_ok=True)
    (pytester.path / "examples/toyport/tests/test_example.py").write_text(
        "import pytest\n\ndef test_needs_a_vocab():\n    pytest.skip('no vocab for the example')\n")
    (pytester.path / "harness/skipping_doc.py").write_text(
        '"""\n>>> import pytest; pytest.skip("a docstring example that skips")\n"""\n')
    (pytester.path / "tools/marked_doc.py").write_text('"""\n>>> 1 + 1  # doctest: +SKIP\n2\n"""\n')
    (pytester.path / "reference/plain_doc.py").write_text('"""\n>>> 2 * 2\n4\n"""\n')
    monkeypatch.setenv("LLAMA_CONFORMANCE_REQUIRE_REFERENCE", "1")
    result = pytester.runpytest_subprocess(*tests, "--doctest-modules", *doctests, "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(failed=2, passed=2)
    result.stdout.fnmatch_lines(["*where nothing may skip: *no vocab for the example*"])
    result.stdout.fnmatch_lines(["*where nothing may skip: *a docstring example that skips*"])
    result.stdout.fnmatch_lines(["PASSED tools/marked_doc.py::marked_doc*"])


def test_an_xdist_group_runs_on_one_worker_under_make_tests_loadgroup(pytester, monkeypatch):
    """make test's ``-n 2 --dist loadgroup``: the tests of one ``xdist_group`` (in two files) run
    on one worker, each other test is scheduled alone (the root conftest hands the groups over,
    since pytest 9.2 ignores xdist's node-id suffix)."""
    import json
    root = Path(__file__).parents[1]
    pytester.makeconftest((root / "conftest.py").read_text(encoding="utf-8"))
    body = ("import os, pytest\n\n"
            "@pytest.mark.xdist_group('shared')\n"
            "@pytest.mark.parametrize('n', range(4))\n"
            "def test_grouped(n):\n"
            "    open(os.environ['OUT'], 'a').write(os.environ['PYTEST_XDIST_WORKER'] + '\\n')\n\n"
            "@pytest.mark.parametrize('n', range(8))\n"
            "def test_alone(n):\n"
            "    pass\n")
    pytester.makepyfile(test_a=body, test_b=body)
    out = pytester.path / "workers.txt"
    monkeypatch.setenv("OUT", str(out))
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=24)
    workers = out.read_text().split()
    assert len(workers) == 8 and len(set(workers)) == 1, json.dumps(workers)
