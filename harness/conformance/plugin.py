"""A small pytest plugin: what each conformance test checked -> reports.

Use: ``pytest harness/conformance/suite -p harness.conformance.plugin [-n auto]``.

On each worker, after a test's call (or a failed setup), the tallies of the
test's hunts (harness.engine.hunt: counts, distinct findings, root port
errors, restarts) are attached to the report as ``user_properties``; xdist
ships those to the controller, which gathers them into one
:class:`~harness.reports.run.RunReport` (the reports room renders it): at the end a
(vocab, flags) x check table, every port error once and every divergence, and
``<dir>/conformance.json``, ``conformance.html`` and ``conformance-junit.xml`` (one
failure per cause and test; ``--conformance-reports``, default ``reports``). The JSON
also records the run (pin, port, profile, seed, times, host) and its throughput.
"""

from __future__ import annotations

import json
import os
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from harness.errors import PortError
from harness.reports.run import RunReport

TALLY_KEY = "conformance_tally"  # user_properties key of each test's tally (JSON)


def pytest_addoption(parser):
    parser.addoption("--conformance-reports", default="reports",
                     help="directory for conformance.json and conformance.html (default: reports)")


def pytest_configure(config):
    config.pluginmanager.register(Collector(config), "conformance-collector")


def vocab_scope(nodeid: str) -> str:
    """The vocab a suite node id belongs to (its scheduling group), or the node id itself.

    >>> vocab_scope("suite/test_encode.py::test_encode[llama-spm-add_parse]")
    'llama-spm'
    >>> vocab_scope("suite/test_golden.py::test_golden[gpt-2]")
    'gpt-2'
    """
    if "[" not in nodeid:
        return nodeid
    param = nodeid.split("[", 1)[1].rsplit("]", 1)[0]
    head, _, last = param.rpartition("-")
    return head if head and last in ("plain", "parse", "add", "add_parse") else param


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadgroup``, one vocab's tests go to one worker, so each worker
    loads only its share of vocabs. (xdist's own loadgroup marks node ids through
    ``item._nodeid``, which pytest 9.2 no longer reads; this groups by the vocab in
    the node id instead, which any pytest gives.)"""
    if config.getoption("dist", None) != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class VocabScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return vocab_scope(nodeid)

    return VocabScheduling(config, log)


def _leaves(exc: BaseException):
    """The exception itself, or every leaf of an ExceptionGroup."""
    if isinstance(exc, BaseExceptionGroup):
        for e in exc.exceptions:
            yield from _leaves(e)
    else:
        yield exc


def _cell_of(item) -> tuple[str, str, str]:
    """(vocab, flags, check) of a test item, from its name and parameters."""
    spec = getattr(item, "callspec", None)
    params = spec.params if spec else {}
    vocab = Path(str(params.get("vocab", "?"))).stem.removeprefix("ggml-vocab-")
    check = item.originalname.removeprefix("test_") if hasattr(item, "originalname") else item.name
    check = {"pieces": "piece"}.get(check, check)
    flags = params.get("flags")
    if "special" in params:
        label = "parse" if params["special"] else "plain"
    elif flags is not None:
        from harness.flags import flags_label
        label = flags_label(*flags)
    else:
        label = "plain"
    return vocab, label, check


def _tally_json(tally, test: str) -> str:
    return json.dumps({"counts": tally.counts(), "test": test,
                       "findings": [f.to_json() for f in tally.findings],
                       "port_errors": tally.port_errors, "restarts": tally.restarts})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when == "call":
        for hunt in getattr(item, "conformance_hunts", []):
            report.user_properties.append((TALLY_KEY, _tally_json(hunt.tally, item.nodeid)))
    elif call.when == "setup" and call.excinfo is not None:
        # The port could not be opened (or restarted) for this test: nothing ran.
        errors = [e for e in _leaves(call.excinfo.value) if isinstance(e, PortError)]
        if errors:
            vocab, flags, check = _cell_of(item)
            counts = {"vocab": vocab, "flags": flags, "check": check, "cases": 0,
                      "port_errors": 1, "outcome": "port error"}
            report.user_properties.append((TALLY_KEY, json.dumps({
                "counts": counts, "test": item.nodeid, "findings": [], "restarts": [],
                "port_errors": [{"message": str(errors[0]), "stderr": errors[0].stderr,
                                 "cases": 0, "fatal": True, "at": "setup"}]})))


class Collector:
    """Controller-side: each test's tally into one :class:`~harness.reports.run.RunReport`,
    then the terminal summary and the report files (also works without xdist)."""

    def __init__(self, config):
        self.config = config
        self.run = RunReport()
        self.started_at = datetime.now(timezone.utc)

    def pytest_runtest_logreport(self, report):
        for key, value in report.user_properties:
            if key == TALLY_KEY:
                self.run.add(json.loads(value), getattr(report, "worker_id", None) or
                             os.environ.get("PYTEST_XDIST_WORKER", "main"))

    def pytest_terminal_summary(self, terminalreporter):
        if not self.run.cells:
            return
        for title, text in self.run.summary(self.config.getoption("--conformance-reports")):
            if title is not None:
                terminalreporter.section(title.lstrip("-"), sep="-" if title.startswith("-") else "=")
            terminalreporter.write_line(text)

    def run_info(self) -> dict:
        """Pin, port, profile, seed, times and host of this run."""
        try:
            from reference.lock import load
            pin = load().commit
        except Exception as e:  # the report must still be written
            pin = f"unknown ({type(e).__name__})"
        seed = self.config.getoption("hypothesis_seed", default=None)
        return {"pin": pin, "port": os.environ.get("PORT") or "harness",
                "profile": os.environ.get("HYPOTHESIS_PROFILE") or "ci",
                "known_examples": os.environ.get("KNOWN_EXAMPLES", "1") != "0",
                "hypothesis_seed": seed if seed is not None else "random",
                "vocabs": os.environ.get("VOCABS") or "all pinned",
                "started": self.started_at.isoformat(timespec="seconds"),
                "wall_s": round(time.perf_counter() - self.run.started, 1),
                "host": f"{platform.node()} ({platform.system()} {platform.machine()}, "
                        f"{os.cpu_count()} cpus, Python {platform.python_version()})"}

    def pytest_sessionfinish(self, session):
        if hasattr(self.config, "workerinput"):
            return  # workers ship their data to the controller
        self.run.write(Path(self.config.getoption("--conformance-reports")), self.run_info())
