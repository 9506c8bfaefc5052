"""``conformance-junit.xml``: one test case per conformance test, and one failure per cause and test.

CI systems read JUnit XML: each cause a test shows becomes its own failing test case,
named ``<test> [C2]`` and titled by the cause, carrying that test's finding of it, so a
CI page lists bugs, not signatures. A test whose check itself raised (cell outcome
``error``) and a test's port errors are JUnit ``error`` s, whatever else happened in it (a
check that diverged and then raised is an ``error`` and its causes' failures); a test the
port could not express, or that nothing ran, is ``skipped`` with the reason (never a pass);
every test case carries its cell's counts, its worst outcome (``conformance_outcome``) and
all of them (``conformance_outcomes``: ``error + divergence``) as properties. A slow run (length
scaling, :mod:`harness.reports.scaling`) is a passing test case of its own, ``<test> [slow: repeat]``,
with its fit as properties: a warning, next to whatever the test's own case says.

>>> from xml.etree import ElementTree as ET
>>> from harness.reports.run import RunReport
>>> r = RunReport()
>>> r.add({"counts": {"vocab": "v", "check": "encode", "flags": "plain", "cases": 3, "outcome": "pass"},
...        "test": "test_encode[v-plain]", "findings": [], "port_errors": [], "restarts": []}, "gw0")
>>> ET.fromstring(junit_xml(r)).find("testsuite").get("tests")
'1'
"""

from __future__ import annotations

from xml.etree import ElementTree as ET

from harness.reports.cells import cell_outcome, cell_outcomes, outcome_label
from harness.reports.render import text_block


def junit_xml(run) -> str:
    """The JUnit XML of one :class:`~harness.reports.run.RunReport`."""
    causes = run.causes()
    cause_of = {k: c for c in causes for k in c.findings}
    errors_of: dict[str, list[str]] = {}
    for err in run.port_errors.values():
        for test in err.get("tests", []):
            errors_of.setdefault(test, []).append(err["message"])
    suite = ET.Element("testsuite", name="llama.cpp tokenizer conformance")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for test, cell in run.tests:
        classname = f"{cell.get('vocab')}.{cell.get('check')}"
        mine = [k for k, t in enumerate(run.finding_tests) if t == test]
        case = _case(suite, classname, test, cell, counts)
        _derived_property(case, run, cell)
        for message in errors_of.get(test, []):
            ET.SubElement(case, "error", message=message.splitlines()[0][:300], type="port error").text = message
            counts["errors"] += 1
        outcomes = cell_outcomes(cell)  # from the counts: a tally of an older run has no "outcomes"
        if "error" in outcomes:
            ET.SubElement(case, "error", message=str(cell.get("error", "the check raised"))[:300],
                          type="error").text = f"{cell.get('error', '')}\n  at {cell.get('error_at', '?')}"
            counts["errors"] += 1
        if not mine and not errors_of.get(test) and outcomes[0] in ("unsupported", "not checked"):
            reason = cell.get("unsupported_reason") or outcomes[0]
            ET.SubElement(case, "skipped", message=f"{outcomes[0]}: {reason}")
            counts["skipped"] += 1
        for cause in sorted({cause_of[k].id: cause_of[k] for k in mine}.values(), key=lambda c: c.id):
            failed = _case(suite, classname, f"{test} [{cause.id}]", cell, counts)
            text = "\n\n".join(text_block(run.findings[k]) for k in mine if cause_of[k] is cause)
            ET.SubElement(failed, "failure", message=f"{cause.id}: {cause.title}"[:500], type="divergence").text = text
            counts["failures"] += 1
        _slow_cases(suite, classname, test, cell, counts, [s for t, s in getattr(run, "scaling", []) if t == test])
    for k, v in counts.items():
        suite.set(k, str(v))
    root = ET.Element("testsuites", name="llama.cpp tokenizer conformance", **{k: str(v) for k, v in counts.items()})
    root.append(suite)
    ET.indent(root)
    return "<?xml version='1.0' encoding='utf-8'?>\n" + ET.tostring(root, encoding="unicode") + "\n"


def _slow_cases(suite, classname: str, test: str, cell: dict, counts: dict, runs) -> None:
    """A passing test case ``<test> [slow: <run>]`` per slow run of the test (JUnit has no
    warning: slow is not wrong), its fit as properties and its lines as ``system-out``."""
    for s in runs:
        if not s.slow:
            continue
        case = _case(suite, classname, f"{test} [slow: {s.run}]", cell, counts)
        props = case.find("properties")
        for key, value in (("scaling_exponent", f"{s.exponent:.2f}"),
                           ("scaling_reference_exponent", f"{s.reference_exponent:.2f}"),
                           ("scaling_port_s", f"{s.port_s[-1]:.6f}"), ("scaling_reference_s", f"{s.reference_s[-1]:.6f}"),
                           ("scaling_bytes", str(s.sizes[-1])), ("scaling_over_at", str(s.over_at))):
            ET.SubElement(props, "property", name=f"conformance_{key}", value=value)
        ET.SubElement(case, "system-out").text = f"{s.line()}\n  {s.inputs()}"


def _derived_property(case, run, cell: dict) -> None:
    """A derived vocab's test says so, and from what (``conformance_derived_from``)."""
    d = getattr(run, "derived", {}).get(cell.get("vocab"))
    if d:
        ET.SubElement(case.find("properties"), "property", name="conformance_derived_from",
                      value=f"{d.get('derived_from')}: {d.get('description')}")


def _case(suite, classname: str, name: str, cell: dict, counts: dict):
    case = ET.SubElement(suite, "testcase", classname=classname, name=name,
                         time=f"{float(cell.get('seconds', 0.0)):.3f}")
    props = ET.SubElement(case, "properties")
    ET.SubElement(props, "property", name="conformance_outcome", value=cell_outcome(cell))
    ET.SubElement(props, "property", name="conformance_outcomes", value=outcome_label(cell))
    for key in ("cases", "divergent", "unsupported", "port_error_cases", "not_checked", "capped", "error", "slow"):
        if key in cell:
            ET.SubElement(props, "property", name=f"conformance_{key}", value=str(cell[key]))
    counts["tests"] += 1
    return case
