"""A small pytest plugin: divergences and port errors -> reports.

Use: ``pytest harness/conformance/suite -p harness.conformance.plugin [-n auto]``.

On each worker, after a test's call (or setup), the findings carried by the
raised :class:`~harness.conformance.checks.DivergenceFound` (Hypothesis
re-raises the final, shrunk example's) and any PortError, plus the test's case
counts, are attached to the report as ``user_properties``; xdist ships those
to the controller, which aggregates them and at the end prints a vocab x check
table and every divergence, and writes ``<dir>/conformance.json`` and
``<dir>/conformance.html`` (``--conformance-reports``, default ``reports``).
JUnit XML comes from pytest's own ``--junitxml``. The JSON also records the
run's own throughput: wall time, and cases checked per worker and per second
of that worker's test time (``make bench`` quotes it).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from harness.conformance.checks import DivergenceFound
from harness.conformance.report import Finding, html_page, summary_table, text_block
from harness.errors import PortError

_FINDING, _COUNT, _PORT_ERROR = "conformance_finding", "conformance_count", "conformance_port_error"


def pytest_addoption(parser):
    parser.addoption("--conformance-reports", default="reports",
                     help="directory for conformance.json and conformance.html (default: reports)")


def pytest_configure(config):
    config.pluginmanager.register(Collector(config), "conformance-collector")


def _leaves(exc: BaseException):
    """The exception itself, or every leaf of an ExceptionGroup (Hypothesis' multiple bugs)."""
    if isinstance(exc, BaseExceptionGroup):
        for e in exc.exceptions:
            yield from _leaves(e)
    else:
        yield exc


def _vocab_of(item) -> str:
    spec = getattr(item, "callspec", None)
    return str(spec.params.get("vocab", "?")) if spec else "?"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when not in ("setup", "call"):
        return
    rec = getattr(item, "conformance_recorder", None)
    if call.when == "call" and rec is not None:
        report.user_properties.append((_COUNT, json.dumps({
            "vocab": rec.vocab, "cases": rec.cases, "seconds": call.duration,
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")})))
    if call.excinfo is None:
        return
    for exc in _leaves(call.excinfo.value):
        if isinstance(exc, DivergenceFound):
            for f in exc.findings:
                report.user_properties.append((_FINDING, json.dumps(f.to_json())))
        elif isinstance(exc, PortError):
            report.user_properties.append((_PORT_ERROR, json.dumps(
                {"vocab": _vocab_of(item), "test": item.nodeid, "message": str(exc)})))


class Collector:
    """Controller-side aggregation (also works without xdist)."""

    def __init__(self, config):
        self.config = config
        self.findings: list[Finding] = []
        self.port_errors: list[dict] = []
        self.counts: dict[str, dict[str, dict[str, int]]] = {}
        self.workers: dict[str, dict[str, float]] = {}
        self.started = time.perf_counter()

    def _cell(self, vocab: str, check: str) -> dict[str, int]:
        return self.counts.setdefault(vocab, {}).setdefault(
            check, {"cases": 0, "divergences": 0, "port_errors": 0})

    def pytest_runtest_logreport(self, report):
        for key, value in report.user_properties:
            if key == _COUNT:
                data = json.loads(value)
                for check, n in data["cases"].items():
                    self._cell(data["vocab"], check)["cases"] += n
                w = self.workers.setdefault(data.get("worker", "main"), {"cases": 0, "seconds": 0.0})
                w["cases"] += sum(data["cases"].values())
                w["seconds"] += data.get("seconds", 0.0)
            elif key == _FINDING:
                f = Finding.from_json(json.loads(value))
                self.findings.append(f)
                self._cell(f.vocab, f.check)["divergences"] += 1
            elif key == _PORT_ERROR:
                err = json.loads(value)
                self.port_errors.append(err)
                check = report.nodeid.split("::")[-1].split("[")[0].removeprefix("test_")
                check = {"differential": "encode"}.get(check, check)
                self._cell(err["vocab"], check)["port_errors"] += 1

    def pytest_terminal_summary(self, terminalreporter):
        if not self.counts and not self.findings and not self.port_errors:
            return
        tr = terminalreporter
        tr.section("conformance: cases/divergences per vocab x check (!N = port errors)")
        tr.write_line(summary_table(self.counts))
        for err in self.port_errors:
            tr.section(f"port error: {err['vocab']}", sep="-")
            tr.write_line(err["message"])
        for f in self.findings:
            tr.write_line("")
            tr.write_line(text_block(f))
        tr.write_line("")
        tr.write_line(f"{len(self.findings)} divergence(s), {len(self.port_errors)} port error(s); "
                      f"reports in {self.config.getoption('--conformance-reports')}/")
        t = self.throughput()
        if t["cases"]:
            tr.write_line(f"throughput: {t['cases']} cases in {t['wall_s']:.1f} s wall on {t['n_workers']} "
                          f"worker(s): {t['cases_per_s_per_worker']:.0f} cases/s per worker")

    def throughput(self) -> dict:
        """Cases checked, wall time, and cases per second per worker (two views: of the
        wall time, and of each worker's own test time)."""
        wall = time.perf_counter() - self.started
        cases = sum(w["cases"] for w in self.workers.values())
        n = max(len(self.workers), 1)
        return {"cases": cases, "wall_s": wall, "n_workers": len(self.workers),
                "cases_per_s_per_worker": cases / wall / n if wall else 0.0,
                "workers": {k: dict(v, cases_per_s=v["cases"] / v["seconds"] if v["seconds"] else 0.0)
                            for k, v in sorted(self.workers.items())}}

    def pytest_sessionfinish(self, session):
        if hasattr(self.config, "workerinput"):
            return  # workers ship their data to the controller
        out = Path(self.config.getoption("--conformance-reports"))
        out.mkdir(parents=True, exist_ok=True)
        data = {"schema": 1, "divergences": [f.to_json() for f in self.findings],
                "port_errors": self.port_errors, "vocabs": self.counts,
                "throughput": self.throughput()}
        (out / "conformance.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n",
                                              encoding="utf-8")
        (out / "conformance.html").write_text(html_page(self.findings, self.counts, self.port_errors),
                                              encoding="utf-8")
