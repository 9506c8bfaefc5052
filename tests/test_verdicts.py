"""Verdicts a CI can trust: each situation built with a deliberately faulty reference, adapter
or port, run through the suite in process, asserting the cell outcome, the totals and the
exit code ``llama-conformance run`` gives for those cells (``harness.cli.exit_code``)."""

from __future__ import annotations

import html
import re

import pytest

from harness import cli
from harness.engine.hunt import CheckFailed, Hunt
from tests.support.suite import SUITE, faulty_port, run_suite, suite_node

pytest_plugins = ["pytester"]


def _cells(report) -> dict:
    return {(c["vocab"], c["check"], c["flags"]): c for c in report["cells"]}


def _exit(result, report, allow_unsupported: bool = False) -> int:
    return cli.exit_code(pytest_rc=int(result.ret), cells=report["cells"],
                         reference_cells=report["reference_checks"]["cells"],
                         allow_unsupported=allow_unsupported)[0]


@pytest.mark.reference
def test_a_check_that_raises_keeps_its_cases_and_reads_error_everywhere(pytester, monkeypatch):
    """llama.cpp's decode throws from its 211th call on: the plain test crashes in its
    Hypothesis phase (after 200 fast cases and 10 examples), the add test at once."""
    junit = pytester.path / "reports" / "conformance-junit.xml"
    result, report = run_suite(pytester, monkeypatch, "harness", "llama-spm",
                               [suite_node("decode", "llama-spm", "plain"), suite_node("decode", "llama-spm", "add")],
                               args=("-p", "tests.ports.faulty_reference"),
                               FAULTY_REFERENCE_DECODE_AFTER="210")
    plain, add = _cells(report)[("llama-spm", "decode", "plain")], _cells(report)[("llama-spm", "decode", "add")]
    # Every case before the crash is kept; no Hypothesis rerun of the crashed example counts.
    assert (plain["outcome"], plain["cases"], plain["not_checked"], plain["errors"]) == ("error", 210, 20, 1)
    assert plain["error"].startswith("harness.errors.ReferenceFailure: llama_detokenize threw on call 211")
    assert plain["error_at"].startswith("tests/ports/faulty_reference.py:") and plain["error_at"].endswith("in decode")
    assert (add["outcome"], add["cases"], add["not_checked"]) == ("error", 0, 230)
    t = report["totals"]
    assert (t["errors"], t["cases"], t["cells_by_outcome"]) == (2, 210, {"error + partial": 1, "error + not checked": 1})
    assert [(e["flags"], e["cases"]) for e in report["errors"]] == [("plain", 210), ("add", 0)]
    out = result.stdout.str()
    assert "llama-spm   plain      210/0 ~20 error" in out and "llama-spm   add        error" in out
    html = (pytester.path / "reports" / "conformance.html").read_text(encoding="utf-8")
    assert "id='x-f-llama-spm-decode-plain'" in html and "llama_detokenize threw on call 211" in html
    xml = junit.read_text(encoding="utf-8")
    assert xml.count("<error ") == 2 and "<failure" not in xml
    assert 'name="conformance_outcome" value="error"' in xml
    result.assert_outcomes(failed=2)
    assert _exit(result, report) == cli.ERRORS


def _shows_both(pytester, report, key, worst, other, outcomes):
    """The cell ``key`` reads ``outcomes`` in the JSON and shows its ``worst`` and ``other``
    outcome in the table, the HTML grid and the JUnit XML."""
    cell = _cells(report)[key]
    assert (cell["outcome"], cell["outcomes"]) == (worst, outcomes)
    assert report["totals"]["cells_by_outcome"] == {" + ".join(outcomes): 1}
    reports = pytester.path / "reports"
    html = (reports / "conformance.html").read_text(encoding="utf-8")
    assert f"title='{' + '.join(outcomes)}'" in html and f">+{other}</a>" in html
    xml = (reports / "conformance-junit.xml").read_text(encoding="utf-8")
    assert f'name="conformance_outcomes" value="{" + ".join(outcomes)}"' in xml
    assert xml.count("<error ") == 1 and xml.count("<failure ") >= 1   # the error and each cause's failure


@pytest.mark.reference
def test_a_check_that_diverged_and_then_raised_is_an_error_and_a_divergence(pytester, monkeypatch):
    """A port that drops a leading space in decode, against a llama.cpp whose decode throws
    from its 41st call: the cell diverged, then raised; exit 3, not 1."""
    result, report = run_suite(pytester, monkeypatch, faulty_port("--bugs decode-space"), "llama-spm",
                               [suite_node("decode", "llama-spm", "plain")],
                               args=("-p", "tests.ports.faulty_reference"), FAULTY_REFERENCE_DECODE_AFTER="40")
    cell = _cells(report)[("llama-spm", "decode", "plain")]
    assert cell["divergent"] > 0 and cell["errors"] == 1 and cell["not_checked"] > 0, cell
    _shows_both(pytester, report, ("llama-spm", "decode", "plain"), "error", "divergence",
                ["error", "divergence", "partial"])
    assert re.search(r"^llama-spm   plain      \d+/[1-9]\d* ~\d+ error$", result.stdout.str(), re.M)
    assert _exit(result, report) == cli.ERRORS


@pytest.mark.reference
def test_a_cell_that_diverged_and_had_a_port_error_is_a_port_error_and_a_divergence(pytester, monkeypatch, tmp_path):
    """A port that splits digits and crashes after 40 requests, on llama.cpp's golden cases:
    the cell diverged, then the port went down (and was started again: the check goes on, no
    case is left unchecked); exit 2, not 1."""
    port = faulty_port("--bugs digits", "--crash-after 40", f"--crash-once {tmp_path / 'crashed'}")
    result, report = run_suite(pytester, monkeypatch, port, "llama-bpe", [suite_node("golden", "llama-bpe")])
    cell = _cells(report)[("llama-bpe", "golden", "plain")]
    assert cell["divergent"] > 0 and cell["port_errors"] == 1, cell
    _shows_both(pytester, report, ("llama-bpe", "golden", "plain"), "port error", "divergence",
                ["port error", "divergence"])
    assert _exit(result, report) == cli.PORT_ERRORS


@pytest.mark.reference
def test_a_python_adapter_returning_str_is_a_port_error_naming_decode_and_str(pytester, monkeypatch):
    result, report = run_suite(pytester, monkeypatch, "py:tests.ports.faulty_adapter:str_decode", "llama-spm",
                               [suite_node("decode", "llama-spm", "plain")])
    cell = _cells(report)[("llama-spm", "decode", "plain")]
    assert (cell["outcome"], cell["cases"], cell["port_error_cases"]) == ("port error", 50, 180)
    [err] = report["port_errors"]
    assert "returned str from decode (expected bytes) in decode(" in err["message"], err["message"]
    assert "Traceback" not in err["message"] and report["totals"]["errors"] == 0
    assert _exit(result, report) == cli.PORT_ERRORS


@pytest.mark.reference
def test_a_vocab_the_reference_cannot_load_gets_error_cells(pytester, monkeypatch, tmp_path):
    bad = tmp_path / "ggml-vocab-broken.gguf"
    bad.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 40)
    result, report = run_suite(pytester, monkeypatch, "harness", str(bad),
                               [str(SUITE / "test_known.py"), str(SUITE / "test_decode.py")])
    cells = _cells(report)
    assert len(cells) == 8 and {c["outcome"] for c in cells.values()} == {"error"}
    assert all(c["cases"] == 0 and "could not load" in c["error"] for c in cells.values())
    assert report["totals"]["errors"] == 8 and report["divergences"] == []
    result.assert_outcomes(errors=8)
    assert _exit(result, report) == cli.ERRORS


@pytest.mark.reference
def test_an_all_unsupported_port_is_never_clean_and_the_crosscheck_is_the_references_own(pytester, monkeypatch):
    port = faulty_port("--declare encode,decode,piece")
    nodes = [str(SUITE / f"test_{t}.py") for t in ("golden", "known", "encode", "decode", "pieces", "crosscheck")]
    result, report = run_suite(pytester, monkeypatch, port, "llama-spm", nodes)
    cells = _cells(report)
    assert len(cells) == 15 and {c["outcome"] for c in cells.values()} == {"unsupported"}
    assert report["totals"]["cases"] == 0
    # The crosscheck never touches the port: its cells, cases and totals are apart.
    ref = report["reference_checks"]
    assert {c["check"] for c in ref["cells"]} == {"crosscheck"} and len(ref["cells"]) == 4
    assert ref["totals"]["cases"] == 4 and ref["totals"]["cells_by_outcome"] == {"pass": 4}
    assert "reference checks (llama-tokenize CLI vs libllama in process; not the port): 4 case(s)" \
        in result.stdout.str()
    assert "Reference checks (not the port)" in (pytester.path / "reports" / "conformance.html").read_text()
    result.assert_outcomes(passed=4, skipped=15)
    assert _exit(result, report) == cli.INCOMPLETE
    assert _exit(result, report, allow_unsupported=True) == cli.INCOMPLETE  # nothing was compared at all


# --- the Hunt and the report, without a port ---------------------------------------------------

def _divergent(text):
    from harness.reports.diff import Divergence
    from harness.reports.finding import Finding
    return Finding("encode", "v", "QWEN2", False, False, text, Divergence(0, 0, True, (1,), (2,)))


def _report(*hunts):
    from harness.reports.run import RunReport
    r = RunReport()
    for h in hunts:
        r.add({"counts": h.tally.counts(), "test": f"t-{h.tally.flags}",
               "findings": [f.to_json() for f in h.tally.findings],
               "port_errors": h.tally.port_errors, "restarts": []}, "gw0")
    return r


def test_the_cap_shows_in_the_cell_the_totals_and_the_html():
    from harness.engine.hunt import CAP, CheckFailed, Hunt
    from harness.reports.html import html_page
    h = Hunt("encode", "plain", _divergent, vocab="v", signature=lambda f: f.text)
    for k in range(CAP + 5):
        h.case(f"t{k}")
    with pytest.raises(CheckFailed, match="5 more divergent case"):
        h.finish()
    r = _report(h)
    assert r.totals()["capped_cases"] == 5
    assert "v           plain      25/20 +5 capped" in "\n".join(text for _, text in r.summary("r"))
    assert "25/20 +5 capped" in html_page(r.to_json({}), r.findings)


def test_replayed_inputs_and_the_findings_only_they_found_are_reported_apart():
    from harness.engine.hunt import CheckFailed, Hunt
    h = Hunt("encode", "plain", lambda t: _divergent(t) if "x" in t or "y" in t else None, vocab="v",
             signature=lambda f: f.text[0])
    h.begin(replay=["x1", "ok"])            # the store: 'x' only comes from it
    for text in ["a", "y1", "y2"]:          # generated: 'y'
        h.case(text)
    with pytest.raises(CheckFailed):
        h.finish()
    assert (h.tally.replayed, h.tally.cases) == (2, 5)
    found = {f.text: (f.cases, f.replayed) for f in h.tally.findings}
    assert found == {"x1": (1, 1), "y1": (2, 0)}
    r = _report(h)
    assert (r.totals()["replayed_inputs"], r.totals()["replayed_findings"]) == (2, 1)
    text = "\n".join(t for _, t in r.summary("r"))
    assert "replay store: 2 stored input(s) of earlier runs ran first; 1 finding(s) came only from them" in text


def test_an_exception_outside_the_cases_is_filed_where_it_belongs():
    from harness.engine.hunt import Hunt
    from harness.errors import PortError
    h = Hunt("encode", "plain", lambda t: None, vocab="v")
    with h.guard():
        h.case("a")
        raise PortError("port 'p' crashed (exit code 9)")
    assert (h.tally.cases, h.down, h.tally.outcome) == (1, True, "port error")
    h = Hunt("encode", "plain", lambda t: None, vocab="v")
    body = h.explore_body(lambda t: [][1])    # raised in a Hypothesis body: never reaches Hypothesis
    body("a")
    body("b")                                 # stopped: not checked, nothing runs
    assert (h.tally.cases, h.tally.not_checked, h.tally.outcome) == (0, 2, "error")
    assert h.tally.error == "IndexError: list index out of range"
    with pytest.raises(IndexError) as e:
        h.finish()
    assert "its cell reads 'error'" in "\n".join(e.value.__notes__)


def test_port_errors_alike_but_for_an_id_are_one_root_with_its_variants():
    """A port that refuses each control token with its id in the message: one root, not one
    per id, in the cell, the JSON, the terminal, the HTML and the JUnit."""
    from harness.errors import PortRequestError
    from harness.reports.html import html_page
    from harness.reports.junit import junit_xml

    def refuse(text):
        if text.isdigit():
            raise PortRequestError(f"port 'p' answered error: token {text} refused on request {{\"text\": {text!r}}}")
    h = Hunt("encode", "parse", refuse, vocab="qwen2")
    for text in ["151643", "151644", "151643", "ok"]:
        h.case(text)
    with pytest.raises(CheckFailed):
        h.finish()
    assert (h.tally.port_error_cases, len(h.tally.port_errors), h.tally.port_errors[0]["variant_count"]) == (3, 1, 2)
    r = _report(h, _refusing("plain", "151645"))
    [root] = r.to_json({})["port_errors"]
    assert (root["variant_count"], root["cases"], len(root["tests"])) == (3, 4, 2)
    assert root["variants"] == ["port 'p' answered error: token 151643 refused",
                                "port 'p' answered error: token 151644 refused",
                                "port 'p' answered error: token 151645 refused"]
    assert r.to_json({})["totals"]["port_errors"] == 1
    line = "3 variants of \"port '…' answered error: token <n> refused\": port 'p' answered error: token 151643 refused"
    assert line in "\n".join(text for _, text in r.summary("r"))
    assert html.escape(line) in html_page(r.to_json({}), r.findings)
    assert junit_xml(r).count("<error ") == 2   # one per test the root hit


def _refusing(flags, *ids):
    from harness.errors import PortRequestError

    def refuse(text):
        raise PortRequestError(f"port 'p' answered error: token {text} refused on request {{}}")
    h = Hunt("encode", flags, refuse, vocab="qwen2")
    for text in ids:
        h.case(text)
    with pytest.raises(CheckFailed):
        h.finish()
    return h
