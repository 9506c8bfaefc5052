"""A small pytest plugin: what each conformance test checked -> reports.

Use: ``pytest harness/conformance/suite -p harness.conformance.plugin [-n auto]``.

On each worker, after a test's call (or a failed setup), the tallies of the
test's hunts (harness.conformance.hunt: counts, distinct findings, root port
errors, restarts) are attached to the report as ``user_properties``; xdist
ships those to the controller, which aggregates them and at the end prints a
(vocab, flags) x check table, every port error once, and every divergence,
and writes ``<dir>/conformance.json`` and ``<dir>/conformance.html``
(``--conformance-reports``, default ``reports``). JUnit XML comes from pytest's
own ``--junitxml``. The JSON also records the run (pin, port, profile, seed,
times, host) and its throughput: cases checked per worker and per second.
"""

from __future__ import annotations

import json
import os
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from harness.conformance.hunt import root_cause
from harness.conformance.report import Finding, LEGEND, merge_cells, summary_table, text_block
from harness.errors import PortError

TALLY_KEY = _TALLY = "conformance_tally"  # user_properties key of each test's tally (JSON)
SCHEMA = 2


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
        from harness.conformance.hunt import flags_label
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
            report.user_properties.append((_TALLY, _tally_json(hunt.tally, item.nodeid)))
    elif call.when == "setup" and call.excinfo is not None:
        # The port could not be opened (or restarted) for this test: nothing ran.
        errors = [e for e in _leaves(call.excinfo.value) if isinstance(e, PortError)]
        if errors:
            vocab, flags, check = _cell_of(item)
            counts = {"vocab": vocab, "flags": flags, "check": check, "cases": 0,
                      "port_errors": 1, "outcome": "port error"}
            report.user_properties.append((_TALLY, json.dumps({
                "counts": counts, "test": item.nodeid, "findings": [], "restarts": [],
                "port_errors": [{"message": str(errors[0]), "stderr": errors[0].stderr,
                                 "cases": 0, "fatal": True, "at": "setup"}]})))


class Collector:
    """Controller-side aggregation (also works without xdist)."""

    def __init__(self, config):
        self.config = config
        self.findings: list[Finding] = []
        self.cells: list[dict] = []
        self.port_errors: dict[tuple[str, str], dict] = {}
        self.restarts: list[dict] = []
        self.workers: dict[str, dict[str, float]] = {}
        self.started = time.perf_counter()
        self.started_at = datetime.now(timezone.utc)

    def pytest_runtest_logreport(self, report):
        for key, value in report.user_properties:
            if key == _TALLY:
                self._add(json.loads(value), getattr(report, "worker_id", None) or
                          os.environ.get("PYTEST_XDIST_WORKER", "main"))

    def _add(self, data: dict, worker: str) -> None:
        counts = data["counts"]
        self.cells.append(counts)
        self.findings += [Finding.from_json(f) for f in data["findings"]]
        for err in data["port_errors"]:
            # One root cause counts once per vocab, however many tests and cases it hit.
            key = (counts["vocab"], root_cause(err["message"]))
            root = self.port_errors.setdefault(key, dict(err, vocab=counts["vocab"], check=counts["check"],
                                                         flags=counts["flags"], cases=0, tests=[]))
            root["cases"] += err.get("cases", 0)
            root["tests"].append(data["test"])
        self.restarts += [{"vocab": counts["vocab"], "test": data["test"], "note": n}
                          for n in data.get("restarts", [])]
        w = self.workers.setdefault(worker, {"cases": 0, "seconds": 0.0})
        w["cases"] += counts.get("cases", 0)
        w["seconds"] += counts.get("seconds", 0.0)

    # --- output ----------------------------------------------------------------------------
    def totals(self) -> dict:
        """Run-wide counts, each outcome apart."""
        merged = merge_cells(self.cells).values()
        outcomes: dict[str, int] = {}
        for c in merged:
            outcomes[c["outcome"]] = outcomes.get(c["outcome"], 0) + 1
        return {"cases": sum(c.get("cases", 0) for c in self.cells),
                "divergences": len(self.findings),
                "divergent_cases": sum(c.get("divergent", 0) for c in self.cells),
                "port_errors": len(self.port_errors),
                "unsupported_cases": sum(c.get("unsupported", 0) for c in self.cells),
                "not_checked_cases": sum(c.get("not_checked", 0) for c in self.cells),
                "restarts": len(self.restarts), "cells_by_outcome": outcomes}

    def pytest_terminal_summary(self, terminalreporter):
        if not self.cells:
            return
        tr = terminalreporter
        tr.section("conformance: (vocab, flags) x check")
        tr.write_line(LEGEND)
        tr.write_line(summary_table(self.cells))
        for err in self.port_errors.values():
            tr.section(f"port error: {err['vocab']} ({err['cases']} case(s), {len(err['tests'])} test(s))",
                       sep="-")
            tr.write_line(err["message"])
        for r in self.restarts:
            tr.write_line(f"port restarted: {r['vocab']} before {r['test']}: {r['note']}")
        for f in self.findings:
            tr.write_line("")
            tr.write_line(text_block(f))
        t = self.totals()
        tr.write_line("")
        tr.write_line(f"{t['divergences']} distinct divergence(s) in {t['divergent_cases']} divergent case(s), "
                      f"{t['port_errors']} port error(s), {t['unsupported_cases']} unsupported case(s), "
                      f"{t['not_checked_cases']} case(s) not checked, {t['restarts']} restart(s); "
                      f"cells: {', '.join(f'{v} {k}' for k, v in sorted(t['cells_by_outcome'].items()))}; "
                      f"reports in {self.config.getoption('--conformance-reports')}/")
        tp = self.throughput()
        if tp["cases"]:
            tr.write_line(f"throughput: {tp['cases']} cases in {tp['wall_s']:.1f} s wall on {tp['n_workers']} "
                          f"worker(s): {tp['cases_per_s_per_worker']:.0f} cases/s per worker")

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
                "wall_s": round(time.perf_counter() - self.started, 1),
                "host": f"{platform.node()} ({platform.system()} {platform.machine()}, "
                        f"{os.cpu_count()} cpus, Python {platform.python_version()})"}

    def report(self) -> dict:
        """The ``conformance.json`` object (schema in harness/conformance/report.py)."""
        merged = list(merge_cells(self.cells).values())
        vocabs: dict[str, dict] = {}
        for c in merged:
            cur = vocabs.setdefault(c["vocab"], {}).setdefault(c["check"], {})
            for k in ("cases", "divergences", "divergent", "port_errors", "unsupported", "not_checked"):
                cur[k] = cur.get(k, 0) + c.get(k, 0)
        return {"schema": SCHEMA, "run": self.run_info(), "totals": self.totals(),
                "divergences": [f.to_json() for f in self.findings],
                "port_errors": list(self.port_errors.values()), "restarts": self.restarts,
                "cells": sorted(merged, key=lambda c: (c["vocab"], c["check"], c["flags"])),
                "vocabs": vocabs, "throughput": self.throughput()}

    def pytest_sessionfinish(self, session):
        if hasattr(self.config, "workerinput"):
            return  # workers ship their data to the controller
        from harness.conformance.html_report import html_page
        out = Path(self.config.getoption("--conformance-reports"))
        out.mkdir(parents=True, exist_ok=True)
        data = self.report()
        (out / "conformance.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n",
                                              encoding="utf-8")
        (out / "conformance.html").write_text(html_page(data, self.findings), encoding="utf-8")
