"""The JUnit XML pytest writes, with each test's cell outcome in it.

pytest's ``--junitxml`` writes a failed test call as ``<failure>``, whatever failed. A
conformance test carries its cell outcome as the property ``conformance_outcome`` (and an
error's last line and place as ``conformance_error``); :func:`mark_errors` turns the
``<failure>`` of each test whose outcome is ``error`` (the check itself raised: not a
verdict on the port) into an ``<error>``, as JUnit means it, and fixes the suite's counts.

>>> import tempfile, os
>>> xml = ('<testsuites><testsuite errors="0" failures="1" tests="1"><testcase name="t">'
...        '<properties><property name="conformance_outcome" value="error"/></properties>'
...        '<failure message="TypeError: x">tb</failure></testcase></testsuite></testsuites>')
>>> with tempfile.TemporaryDirectory() as d:
...     p = os.path.join(d, "j.xml")
...     _ = open(p, "w").write(xml)
...     mark_errors(p), "<error message=\\"TypeError: x\\">" in open(p).read(), 'errors="1" failures="0"' in open(p).read()
(1, True, True)
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

OUTCOME_PROPERTY = "conformance_outcome"


def mark_errors(path: str | Path) -> int:
    """Rewrite ``path`` so tests whose cell outcome is ``error`` are JUnit errors; returns
    how many were changed (0: the file is left as it is)."""
    tree = ET.parse(path)
    changed = 0
    for suite in tree.iter("testsuite"):
        n = 0
        for case in suite.iter("testcase"):
            props = {p.get("name"): p.get("value") for p in case.iter("property")}
            if props.get(OUTCOME_PROPERTY) != "error":
                continue
            for failure in case.findall("failure"):
                failure.tag = "error"
                n += 1
        if n:
            suite.set("failures", str(max(0, int(suite.get("failures", "0")) - n)))
            suite.set("errors", str(int(suite.get("errors", "0")) + n))
            changed += n
    if changed:
        tree.write(path, encoding="utf-8", xml_declaration=True)
    return changed
