"""One conformance run's report: the tallies of its tests, gathered, and every form it takes.

Each test's tally arrives as the JSON its worker shipped (``counts``, ``findings``,
``port_errors``, ``restarts``); :class:`RunReport` gathers them (one root port error
counted once per vocab, whatever tests and cases it hit) and renders the run: the
terminal summary (:meth:`RunReport.summary`), ``conformance.json`` (:meth:`RunReport.to_json`,
schema below) and ``conformance.html`` (:mod:`harness.reports.html`), written by
:meth:`RunReport.write`.

JSON schema of ``conformance.json`` (version 2)::

    {"schema": 2,
     "run": {"pin", "port", "profile", "known_examples", "hypothesis_seed", "vocabs",
             "started", "wall_s", "host"},
     "totals": {"cases", "divergences", "divergent_cases", "port_errors", "unsupported_cases",
                "not_checked_cases", "restarts", "cells_by_outcome": {outcome: int}},
     "cells": [                  # one per vocab, check and flag combination
        {"vocab": str, "check": str, "flags": "plain"|"parse"|"add"|"add_parse",
         "cases": int,           # comparisons made with both answers in hand
         "divergences": int,     # distinct divergences (signatures) reported
         "divergent": int,       # cases that diverged
         "port_errors": int, "port_error_cases": int, "unsupported": int,
         "not_checked": int, "capped": int, "restarts": int, "seconds": float,
         "unsupported_reason": str,
         "outcome": "pass"|"divergence"|"port error"|"unsupported"|"partial"|"not checked"}],
     "divergences": [...],       # one per distinct divergence, shrunk: Finding.to_json
     "port_errors": [{"vocab": str, "check": str, "flags": str,   # the first cell it hit
                      "message": str, "stderr": str, "cases": int,
                      "fatal": bool, "tests": [str]}],       # one per root cause
     "restarts": [{"vocab": str, "test": str, "note": str}],
     "vocabs": {"<vocab>": {"<check>": {"cases", "divergences", "divergent",
                                         "port_errors", "unsupported", "not_checked"}}},
     "throughput": {"cases", "wall_s", "n_workers", "cases_per_s_per_worker",
                    "workers": {"<worker>": {"cases", "seconds", "cases_per_s"}},
                    "hosts": {"<host>": {"workers": [str], "cases", "seconds", "cases_per_s"}}},
     "tallies": [{"test": str, "worker": str, "counts": {...},   # every test's tally as it
                  "findings": [int],     # arrived (indices into "divergences"), so that
                  "port_errors": [...], "restarts": [str]}]}   # `llama-conformance merge`
                                                              # re-gathers the run exactly

``run`` may also hold ``shard`` ("I/N", ``--shard``), ``hosts`` (``--hosts``: each host's
workers, Python and what happened to it) and, in a merged report, ``merged`` (one entry per
report merged). A host's ``cases_per_s`` is the sum of its workers' (each worker's cases over
its own test time).

>>> r = RunReport()
>>> r.add({"counts": {"vocab": "v", "check": "encode", "flags": "plain", "cases": 3}, "test": "t",
...        "findings": [], "port_errors": [], "restarts": []}, "gw0")
>>> r.totals()["cases"], r.totals()["cells_by_outcome"]
(3, {'pass': 1})
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from harness.errors import root_cause
from harness.reports.cells import LEGEND, merge_cells, summary_table
from harness.reports.finding import Finding
from harness.reports.render import text_block

SCHEMA = 2


class RunReport:
    """The tallies of one run, gathered (works with and without xdist)."""

    def __init__(self):
        self.findings: list[Finding] = []
        self.cells: list[dict] = []
        self.port_errors: dict[tuple[str, str], dict] = {}
        self.restarts: list[dict] = []
        self.workers: dict[str, dict[str, float]] = {}
        self.started = time.perf_counter()
        self.tallies: list[dict] = []  # each test's tally as it arrived, findings as indices
        self.worker_hosts: dict[str, str] = {}  # worker id -> host (xdist over SSH)
        self.wall_s: float | None = None  # a merged report's wall time (else the clock's)

    def add(self, data: dict, worker: str) -> None:
        """One test's tally, as its worker shipped it."""
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
        first = len(self.findings) - len(data["findings"])
        self.tallies.append({"test": data["test"], "worker": worker, "counts": counts,
                             "findings": list(range(first, len(self.findings))),
                             "port_errors": data["port_errors"], "restarts": data.get("restarts", [])})

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

    def throughput(self) -> dict:
        """Cases checked, wall time, and cases per second per worker (two views: of the
        wall time, and of each worker's own test time)."""
        wall = time.perf_counter() - self.started if self.wall_s is None else self.wall_s
        cases = sum(w["cases"] for w in self.workers.values())
        n = max(len(self.workers), 1)
        workers = {k: dict(v, cases_per_s=v["cases"] / v["seconds"] if v["seconds"] else 0.0)
                   for k, v in sorted(self.workers.items())}
        out = {"cases": cases, "wall_s": wall, "n_workers": len(self.workers),
               "cases_per_s_per_worker": cases / wall / n if wall else 0.0, "workers": workers}
        if self.worker_hosts:
            out["hosts"] = self.host_throughput(workers)
        return out

    def host_throughput(self, workers: dict[str, dict]) -> dict[str, dict]:
        """Per host: its workers, cases, test seconds and cases/s (the sum of its workers')."""
        hosts: dict[str, dict] = {}
        for w, v in workers.items():
            h = hosts.setdefault(self.worker_hosts.get(w, "local"),
                                 {"workers": [], "cases": 0, "seconds": 0.0, "cases_per_s": 0.0})
            h["workers"].append(w)
            for k in ("cases", "seconds", "cases_per_s"):
                h[k] += v[k]
        return hosts

    def summary(self, report_dir: str) -> list[tuple[str | None, str]]:
        """The terminal summary as (section title or None, text) pairs, in order."""
        out: list[tuple[str | None, str]] = [("conformance: (vocab, flags) x check", LEGEND),
                                             (None, summary_table(self.cells))]
        for err in self.port_errors.values():
            out.append((f"-port error: {err['vocab']} ({err['cases']} case(s), {len(err['tests'])} test(s))",
                        err["message"]))
        out += [(None, f"port restarted: {r['vocab']} before {r['test']}: {r['note']}") for r in self.restarts]
        out += [(None, "\n" + text_block(f)) for f in self.findings]
        t = self.totals()
        out.append((None, f"\n{t['divergences']} distinct divergence(s) in {t['divergent_cases']} divergent "
                          f"case(s), {t['port_errors']} port error(s), {t['unsupported_cases']} unsupported "
                          f"case(s), {t['not_checked_cases']} case(s) not checked, {t['restarts']} restart(s); "
                          f"cells: {', '.join(f'{v} {k}' for k, v in sorted(t['cells_by_outcome'].items()))}; "
                          f"reports in {report_dir}/"))
        tp = self.throughput()
        if tp["cases"]:
            out.append((None, f"throughput: {tp['cases']} cases in {tp['wall_s']:.1f} s wall on "
                              f"{tp['n_workers']} worker(s): {tp['cases_per_s_per_worker']:.0f} cases/s per worker"))
        if set(tp.get("hosts", {})) - {"local"}:
            out += [(None, f"  host {h}: {len(v['workers'])} worker(s) ({', '.join(v['workers'])}), "
                           f"{v['cases']} cases, {v['cases_per_s']:.0f} cases/s")
                    for h, v in tp["hosts"].items()]
        return out

    def to_json(self, run_info: dict) -> dict:
        """The ``conformance.json`` object (schema in the module docstring)."""
        merged = list(merge_cells(self.cells).values())
        vocabs: dict[str, dict] = {}
        for c in merged:
            cur = vocabs.setdefault(c["vocab"], {}).setdefault(c["check"], {})
            for k in ("cases", "divergences", "divergent", "port_errors", "unsupported", "not_checked"):
                cur[k] = cur.get(k, 0) + c.get(k, 0)
        return {"schema": SCHEMA, "run": run_info, "totals": self.totals(),
                "divergences": [f.to_json() for f in self.findings],
                "port_errors": list(self.port_errors.values()), "restarts": self.restarts,
                "cells": sorted(merged, key=lambda c: (c["vocab"], c["check"], c["flags"])),
                "vocabs": vocabs, "throughput": self.throughput(), "tallies": self.tallies}

    def write(self, out: Path, run_info: dict) -> dict:
        """Write ``conformance.json`` and ``conformance.html`` into ``out``; returns the JSON object."""
        from harness.reports.html import html_page
        out.mkdir(parents=True, exist_ok=True)
        data = self.to_json(run_info)
        (out / "conformance.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n",
                                              encoding="utf-8")
        (out / "conformance.html").write_text(html_page(data, self.findings), encoding="utf-8")
        return data
