"""The conformance plugin: what workers find reaches the controller's reports."""

from __future__ import annotations

import json

import pytest

import tests.support.suite  # noqa: F401  (preloads what pytester's runs import)

pytest_plugins = ["pytester"]


# --- the plugin ------------------------------------------------------------------------------------
_PLUGIN_TESTS = """
from harness.reports.diff import Divergence
from harness.engine.hunt import Hunt
from harness.reports.finding import Finding

def _found(text):
    if "x" not in text:
        return None
    return Finding("encode", "v", "QWEN2", False, True, text, Divergence(1, 1, True, (1, 2), (1, 3)),
                   pieces={1: b"a", 2: b"b", 3: b"c"})

def test_a(request):
    h = Hunt("encode", "parse", _found, vocab="v", signature=lambda f: len(f.text))
    request.node.conformance_hunts = [h]
    for text in ["ab", "ax", "bx", "axx"]:
        h.case(text)
    h.finish()

def test_b(request):
    h = Hunt("encode", "plain", _found, vocab="v")
    request.node.conformance_hunts = [h]
    h.case("ab")
    h.finish()
"""


@pytest.mark.parametrize("workers", [[], ["-n", "1"]], ids=["inline", "xdist"])
def test_plugin_reports_what_workers_found(pytester, workers):
    pytester.makepyfile(test_x=_PLUGIN_TESTS)
    out = pytester.path / "r"
    args = ["-p", "harness.conformance.plugin", f"--conformance-reports={out}", *workers]
    result = (pytester.runpytest_subprocess if workers else pytester.runpytest_inprocess)(*args)
    result.assert_outcomes(failed=1, passed=1)
    # The causes first (undiagnosed here: one unexplained cause), then the table, then the totals.
    result.stdout.fnmatch_lines(["*conformance: 1 cause(s) in 3 divergent case(s)*",
                                 "*C1: unexplained*", "DIVERGENCE [[]encode[]] vocab=v pre_type=QWEN2*",
                                 "*conformance: (vocab, flags) x check*", "v * plain * 1/0*",
                                 "v * parse * 4/2*",
                                 "*1 cause(s) in 3 divergent case(s) (2 finding(s)), 0 port error(s)*"])
    data = json.loads((out / "conformance.json").read_text(encoding="utf-8"))
    # Two signatures (text lengths 2 and 3): the first text of each, and how many cases share it.
    assert [(d["text"], d["cases"], d["cause"]) for d in data["divergences"]] == [("ax", 2, "C1"), ("axx", 1, "C1")]
    assert data["vocabs"]["v"]["encode"]["cases"] == 5 and data["schema"] == 3
    assert [(c["id"], c["cases"], c["findings"]) for c in data["causes"]] == [("C1", 3, [0, 1])]
    cells = {c["flags"]: c for c in data["cells"]}
    assert (cells["parse"]["outcome"], cells["parse"]["divergent"]) == ("divergence", 3)
    assert cells["plain"]["outcome"] == "pass"
    assert "<tr class='div'><td>1</td>" in (out / "conformance.html").read_text(encoding="utf-8")
