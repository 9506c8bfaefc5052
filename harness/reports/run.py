"""One conformance run's report: the tallies of its tests, gathered, and every form it takes.

Each test's tally arrives as the JSON its worker shipped (``counts``, ``findings``,
``port_errors``, ``restarts``); :class:`RunReport` gathers them (one root port error
counted once per vocab, whatever tests and cases it hit) and renders the run, causes
first (:mod:`harness.reports.causes`): the terminal summary (:meth:`RunReport.summary`),
``conformance.json`` (:meth:`RunReport.to_json`, schema below), ``conformance.html``
(:mod:`harness.reports.html`) and ``conformance-junit.xml`` (:mod:`harness.reports.junit`),
written by :meth:`RunReport.write`. The reference's own checks (``REFERENCE_CHECKS``: the
llama-tokenize CLI against libllama in process) never touch the port: they are kept apart,
with their own cells, findings and totals.

JSON schema of ``conformance.json`` (version 3)::

    {"schema": 3,
     "run": {"pin", "port", "profile", "known_examples", "fast_seed", "hypothesis_seed",
             "reproduce", "vocabs", "started", "wall_s", "host", "replay_store",
             "replay": {"store", "pin", "sent", "replayed", "found", "added", "report_store",  # by host
                        "other_pins", "problems"},        # (harness/conformance/replaying.py)
             "derived": {"derived:<name>": {"kind", "derived_from", "description", "sha256"}}},
     "totals": {"cases", "causes", "divergences", "divergent_cases", "port_errors", "errors",
                "unsupported_cases", "not_checked_cases", "capped_cases", "unattributed_cases", "restarts", "port_deaths", "port_deaths_by_kind",
                "diagnosis_seconds": {"shrink", "diagnose", "predict", "characterise", "attribute"},   # worker seconds
                "replayed_inputs", "replayed_findings", "scaling_runs", "slow_runs",
                "cells_by_outcome": {outcome: int}},   # by all of a cell's outcomes: "error + divergence"
     "causes": [                 # the unit of the report: one per bug (harness/reports/causes.py)
        {"id": "C1", "title": str,                # the rule the port breaks, or "unexplained: ..."
         "diagnosis": str|null,                   # the catalogue variant that explains it
         "rule": str|null,                        # what llama.cpp does instead, and where, at the pin
         "example": {...},                        # its minimal finding (as in "divergences")
         "findings": [int],                       # indices into "divergences", the example first
         "cells": [{"vocab", "check", "flags"}], "cases": int,   # cases its explanation reproduces
         "params": [str],                         # the variant's parameter values it holds (one cause for all)
         "predictions": [made, passed],           # fresh inputs its diagnosis predicted ([]: none asked)
         "characterisation": str,                 # what its cases show at the divergence
         "diagnosis_seconds": {str: float},       # wall s spent on it: shrink, diagnose, predict, characterise,
                                                  # attribute (its cases matched against the known causes)
         "loci": [[str|int, int]]}],              # code point or token id there, with its cases
     "cells": [                  # the port's: one per vocab, check and flag combination
        {"vocab": str, "check": str, "flags": "plain"|"parse"|"add"|"add_parse",
         "cases": int,           # comparisons made with both answers in hand
         "divergences": int,     # distinct divergences (signatures) reported
         "divergent": int,       # cases that diverged
         "port_errors": int, "port_error_cases": int, "unsupported": int,
         "not_checked": int, "capped": int, "errors": int, "replayed": int,
         "unattributed": int,    # divergent cases no cause took within the count budgets
         "diagnosis_seconds": {"shrink", "diagnose", "predict", "characterise", "attribute"},  # wall s in this test
         "restarts": int, "deaths": int, "seconds": float,
         "scaling_runs": int, "slow": int,   # encode cells that timed runs: how many, how many slow
         "unsupported_reason": str, "error": str, "error_at": str,
         "outcome": "error"|"port error"|"divergence"|"unsupported"|"partial"|"not checked"|"pass",  # the worst
         "outcomes": [str]}],    # every outcome of the cell, worst first (harness/reports/cells.py)
     "divergences": [...],       # one per finding, shrunk: Finding.to_json, with its "cause" id
     "errors": [{"vocab", "check", "flags", "test", "error", "error_at", "cases"}],  # checks that raised
     "port_errors": [{"vocab": str, "check": str, "flags": str,   # the first cell it hit
                      "message": str, "stderr": str, "cases": int,  # its first message
                      "fatal": bool, "tests": [str],       # one per root cause and vocab:
                      "shape": str,                        # messages alike but for numbers, ids, quotes
                      "variants": [str],                   # its distinct messages (the first 50)
                      "variant_count": int}],              # how many there were
     "restarts": [{"vocab": str, "test": str, "note": str}],  # "restart N (Q/3 quick in a row) after A answer(s): why"
     "port_deaths": [{"vocab": str, "test": str, "note": str}],  # "<crashed|hung|...> after A answer(s): why"
     "scaling": [                # each run the encode check timed (harness/reports/scaling.py)
        {"vocab", "check", "flags", "test", "run": "repeat"|"word"|"whitespace"|"specials", "example",
         "sizes": [int],                          # bytes
         "port_s": [float], "reference_s": [float],   # the fastest call per size
         "port_overhead_s", "reference_overhead_s",   # each side's time for a one-character text
         "exponent", "reference_exponent",        # fitted: time grows as n^exponent
         "slow": bool,                            # a warning: never changes an outcome or the exit code
         "over_at": int|null, "factor", "superlinear", "margin", "repeats", "port",
         "clock": "cpu"|"wall"}],          # CPU time of the port's processes (wall only without /proc)
     "reference_checks": {"cells": [...], "divergences": [...], "errors": [...],
                          "totals": {"cases", "divergences", "divergent_cases", "errors",
                                     "unsupported_cases", "cells_by_outcome"}},
     "vocabs": {"<vocab>": {"<check>": {"cases", "divergences", "divergent",
                                         "port_errors", "unsupported", "not_checked", "errors"}}},
     "throughput": {"cases", "wall_s", "n_workers", "cases_per_s_per_worker",
                    "workers": {"<worker>": {"cases", "seconds", "cases_per_s"}},
                    "hosts": {"<host>": {"workers": [str], "cases", "seconds", "cases_per_s"}}},
     "tallies": [{"worker": str, "test": str, "counts": {...}, "findings": [...],
                  "port_errors": [...], "restarts": [str], ...}]}
                  # every test's tally as its worker shipped it (findings repeated in full),
                  # so that `llama-conformance merge` re-gathers the run exactly

``run`` may also hold ``shard`` ("I/N", ``--shard``), ``hosts`` (``--hosts``: each host's
workers, Python and what happened to it) and, in a merged report, ``merged`` (one entry per
report merged). A host's ``cases_per_s`` is the sum of its workers' (each worker's cases over
its own test time).

>>> r = RunReport()
>>> r.add({"counts": {"vocab": "v", "check": "encode", "flags": "plain", "cases": 3}, "test": "t",
...        "findings": [], "port_errors": [], "restarts": []}, "gw0")
>>> r.add({"counts": {"vocab": "v", "check": "crosscheck", "flags": "plain", "cases": 1}, "test": "c",
...        "findings": [], "port_errors": [], "restarts": []}, "gw0")
>>> r.totals()["cases"], r.totals()["cells_by_outcome"], r.reference_totals()["cases"]
(3, {'pass': 1}, 1)
"""

from __future__ import annotations

import bisect
import json
import time
from collections import Counter
from pathlib import Path

from harness.errors import VARIANTS_KEPT, root_cause, root_shape
from harness.reports.causes import Cause, group_causes
from harness.reports.cells import LEGEND, REFERENCE_CHECKS, cell_text, merge_cells, outcome_label, summary_table
from harness.reports.finding import Finding
from harness.reports.render import finding_line, text_block, variants_text
from harness.reports.scaling import Scaling, summary as scaling_summary

SCHEMA = 3
#: What the reference checks compare (their section's title).
REFERENCE_TITLE = "reference checks (llama-tokenize CLI vs libllama in process; not the port)"


def _summed(dicts) -> dict:
    """Key-wise sums of number dicts, keys sorted.

    >>> _summed([{"a": 1.0}, {"a": 0.5, "b": 2.0}])
    {'a': 1.5, 'b': 2.0}
    """
    out: dict = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = round(out.get(k, 0.0) + v, 3)
    return dict(sorted(out.items()))


def _by_outcome(cells) -> dict[str, int]:
    """Cells counted by all their outcomes at once (:func:`~harness.reports.cells.outcome_label`).

    >>> _by_outcome([{"vocab": "v", "flags": "plain", "check": "encode", "cases": 3, "divergent": 1, "errors": 1}])
    {'error + divergence': 1}
    """
    out: dict[str, int] = {}
    for c in merge_cells(cells).values():
        out[outcome_label(c)] = out.get(outcome_label(c), 0) + 1
    return out


def _error_entry(counts: dict, test: str) -> dict:
    return {"vocab": counts["vocab"], "check": counts["check"], "flags": counts["flags"], "test": test,
            "error": counts.get("error", ""), "error_at": counts.get("error_at", ""),
            "cases": counts.get("cases", 0)}


def derived_lines(derived: dict[str, dict]) -> str:
    """One line per derived vocab: its name, what it was derived from and how.

    >>> print(derived_lines({"derived:kimi-k2": {"derived_from": "gpt-2", "kind": "pre",
    ...                      "description": "gpt-2 with tokenizer.ggml.pre = 'kimi-k2'"}}))
    derived:kimi-k2  derived from gpt-2 (pre): gpt-2 with tokenizer.ggml.pre = 'kimi-k2'
    """
    return "\n".join(f"{k}  derived from {v.get('derived_from')} ({v.get('kind')}): {v.get('description')}"
                     for k, v in sorted(derived.items()))


def death_lines(deaths: list[dict]) -> list[str]:
    """One line per vocab: how many times its port went down, and how.

    >>> death_lines([{"vocab": "v", "note": "crashed after 3 answer(s): x"},
    ...              {"vocab": "v", "note": "hung after 9 answer(s): y"}])
    ['port went down: v: 2 time(s) (crashed 1, hung 1)']
    """
    by_vocab: dict[str, Counter] = {}
    for d in deaths:
        by_vocab.setdefault(d["vocab"], Counter())[d["note"].split(" after ")[0]] += 1
    return [f"port went down: {v}: {sum(c.values())} time(s) ({', '.join(f'{k} {n}' for k, n in sorted(c.items()))})"
            for v, c in sorted(by_vocab.items())]


class RunReport:
    """The tallies of one run, gathered (works with and without xdist)."""

    def __init__(self):
        self.findings: list[Finding] = []
        self.finding_tests: list[str] = []  # the test each finding came from (node id)
        self.tests: list[tuple[str, dict]] = []  # (node id, counts) of every test tally
        self.cells: list[dict] = []
        self.errors: list[dict] = []
        self.port_errors: dict[tuple[str, str], dict] = {}
        self.restarts: list[dict] = []
        self.deaths: list[dict] = []  # each time the port went down: {"vocab", "test", "note"}
        self.reference_cells: list[dict] = []
        self.reference_findings: list[Finding] = []
        self.reference_errors: list[dict] = []
        self.workers: dict[str, dict[str, float]] = {}
        self.started = time.perf_counter()
        self.tallies: list[dict] = []  # each test's tally as it arrived, findings as indices
        self.worker_hosts: dict[str, str] = {}  # worker id -> host (xdist over SSH)
        self.wall_s: float | None = None  # a merged report's wall time (else the clock's)
        # derived vocab -> {"kind", "derived_from", "description", "sha256"} (harness/inputs/derived)
        self.derived: dict[str, dict] = {}
        self.scaling: list[tuple[str, Scaling]] = []  # (test, run timed), in test order

    def add(self, data: dict, worker: str) -> None:
        """One test's tally, as its worker shipped it."""
        self.tallies.append({"worker": worker, **data})
        counts = data["counts"]
        if counts["check"] in REFERENCE_CHECKS:
            self.reference_cells.append(counts)
            self.reference_findings += [Finding.from_json(f) for f in data["findings"]]
            if counts.get("errors"):
                self.reference_errors.append(_error_entry(counts, data["test"]))
            return
        self.cells.append(counts)
        self.tests.append((data["test"], counts))
        # Findings in test order, not arrival order: which worker finishes first must not
        # change the report (a cause's findings are indices into this list).
        at = bisect.bisect_right(self.finding_tests, data["test"])
        self.findings[at:at] = [Finding.from_json(f) for f in data["findings"]]
        self.finding_tests[at:at] = [data["test"]] * len(data["findings"])
        if counts.get("errors"):
            self.errors.append(_error_entry(counts, data["test"]))
        for err in data["port_errors"]:
            self._port_error(err, counts, data["test"])
        self.restarts += [{"vocab": counts["vocab"], "test": data["test"], "note": n}
                          for n in data.get("restarts", [])]
        self.deaths += [{"vocab": counts["vocab"], "test": data["test"], "note": n}
                        for n in data.get("deaths", [])]
        self.scaling = sorted(self.scaling + [(data["test"], Scaling.from_json(x)) for x in data.get("scaling", [])],
                              key=lambda ts: (ts[0], ts[1].run))
        w = self.workers.setdefault(worker, {"cases": 0, "seconds": 0.0})
        w["cases"] += counts.get("cases", 0)
        w["seconds"] += counts.get("seconds", 0.0)

    def _port_error(self, err: dict, counts: dict, test: str) -> None:
        """One test's root port error into the run's: one root per vocab and shape
        (:func:`harness.errors.root_shape`), however many tests, cases and variants it had.
        A tally of an older run (no ``variants``) has its message as its one variant."""
        shape = root_shape(err["message"])
        root = self.port_errors.setdefault((counts["vocab"], shape), dict(
            err, vocab=counts["vocab"], check=counts["check"], flags=counts["flags"], cases=0, tests=[],
            shape=shape, variants=[], variant_count=0))
        root["cases"] += err.get("cases", 0)
        root["tests"].append(test)
        mine = err.get("variants") or [root_cause(err["message"])]
        root["variants"] += [v for v in mine if v not in root["variants"]][:VARIANTS_KEPT - len(root["variants"])]
        # Exact unless a test kept fewer variants than it counted: then at least this many.
        root["variant_count"] = max(len(root["variants"]), root["variant_count"], err.get("variant_count", 1))

    def causes(self) -> list[Cause]:
        """The run's causes (harness.reports.causes), most divergent cases first."""
        return group_causes(self.findings)

    def totals(self) -> dict:
        """Run-wide counts of the port's cells, each outcome apart."""
        return {"cases": sum(c.get("cases", 0) for c in self.cells),
                "causes": len(self.causes()),
                "divergences": len(self.findings),
                "divergent_cases": sum(c.get("divergent", 0) for c in self.cells),
                "port_errors": len(self.port_errors),
                "errors": len(self.errors),
                "unsupported_cases": sum(c.get("unsupported", 0) for c in self.cells),
                "not_checked_cases": sum(c.get("not_checked", 0) for c in self.cells),
                "capped_cases": sum(c.get("capped", 0) for c in self.cells),
                "unattributed_cases": sum(c.get("unattributed", 0) for c in self.cells),
                "diagnosis_seconds": _summed(c.get("diagnosis_seconds") or {} for c in self.cells),
                "restarts": len(self.restarts),
                "port_deaths": len(self.deaths),
                "port_deaths_by_kind": dict(sorted(Counter(d["note"].split(" after ")[0] for d in self.deaths).items())),
                "replayed_inputs": sum(c.get("replayed", 0) for c in self.cells),
                "replayed_findings": len(self.replay_only()),
                "scaling_runs": len(self.scaling), "slow_runs": sum(s.slow for _, s in self.scaling),
                "cells_by_outcome": _by_outcome(self.cells)}

    def reference_totals(self) -> dict:
        """Counts of the reference's own checks (never the port's)."""
        return {"cases": sum(c.get("cases", 0) for c in self.reference_cells),
                "divergences": len(self.reference_findings),
                "divergent_cases": sum(c.get("divergent", 0) for c in self.reference_cells),
                "errors": len(self.reference_errors),
                "unsupported_cases": sum(c.get("unsupported", 0) for c in self.reference_cells),
                "cells_by_outcome": _by_outcome(self.reference_cells)}

    def replay_only(self) -> list[Finding]:
        """Findings whose every case was an input from the replay store: a run from an empty
        store does not find them."""
        return [f for f in self.findings if f.replayed and f.replayed >= f.cases]

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

    def _cause_text(self, c: Cause) -> str:
        """One cause in the terminal: title, diagnosis, rule, where, cases, its smallest example
        drawn in full and its other findings one line each."""
        others = [k for k in c.findings if k != c.example]
        body = [f"{c.title}", f"  diagnosis: {c.diagnosis or 'none: no catalogue variant reproduces it and predicts the port'}"
                + (f" (it predicted the port on {c.predictions[1]} of {c.predictions[0]} fresh input(s))"
                   if c.diagnosis and c.predictions else "")]
        if c.characterisation:
            body.append(f"  shows at: {c.characterisation}")
        if c.seconds:
            body.append(f"  engine time: {sum(c.seconds.values()):.1f} s ("
                        + ", ".join(f"{k} {v:.1f}" for k, v in sorted(c.seconds.items())) + ")")
        body += [f"  shows in: {c.where()}", f"  cases: {c.cases} divergent case(s), "
                 f"{len(c.findings)} finding(s); the smallest:", text_block(self.findings[c.example])]
        if others:
            body += [f"  {len(others)} more finding(s) of this cause:"]
            body += [f"    {finding_line(self.findings[k])}" for k in others[:12]]
            body += [f"    ... and {len(others) - 12} more in conformance.json"] * (len(others) > 12)
        return "\n".join(body)

    def summary(self, report_dir: str) -> list[tuple[str | None, str]]:
        """The terminal summary as (section title or None, text) pairs, in order: the causes
        first (each with its minimal example, where it shows and its cases), then the table,
        errors, port errors and restarts, the reference checks, the replay store, the totals
        and the throughput."""
        causes, t = self.causes(), self.totals()
        out: list[tuple[str | None, str]] = []
        if causes:
            out.append((f"conformance: {len(causes)} cause(s) in {t['divergent_cases']} divergent case(s)",
                        "each cause: what the port gets wrong, its smallest example, where it shows"))
        for c in causes:
            # The section rule holds a short name; the title (what the port does, and llama.cpp's
            # rule) is the body's first line, where it is not cut or wrapped by the rule.
            out.append((f"-{c.id}: {c.diagnosis or 'unexplained'}", self._cause_text(c)))
        out += [("conformance: (vocab, flags) x check", LEGEND), (None, summary_table(self.cells))]
        if self.derived:
            out.append((f"-derived vocabs: {len(self.derived)} (not pinned files: built from one)",
                        derived_lines(self.derived)))
        for err in self.errors:
            out.append((f"-error: {err['vocab']} {err['check']} {err['flags']} (after {err['cases']} case(s))",
                        f"{err['error']}\n  at {err['error_at']}\n  test {err['test']}"))
        for err in self.port_errors.values():
            variants = variants_text(err)
            out.append((f"-port error: {err['vocab']} ({err['cases']} case(s), {len(err['tests'])} test(s))",
                        err["message"] + (f"\n  {variants}" if variants else "")))
        out += [(None, f"port restarted: {r['vocab']} in {r['test']}: {r['note']}") for r in self.restarts]
        out += scaling_summary(s for _, s in self.scaling)
        out += [(None, line) for line in death_lines(self.deaths)]
        out += self._reference_summary()
        if t["replayed_inputs"]:
            only = self.replay_only()
            out.append((None, f"\nreplay store: {t['replayed_inputs']} stored input(s) of earlier runs ran first; "
                              f"{len(only)} finding(s) came only from them"
                              + "".join(f"\n  replayed: [{f.check}] {f.vocab} {f.flags} {' / '.join(f.signature)}"
                                        for f in only)))
        out.append((None, f"\n{t['causes']} cause(s) in {t['divergent_cases']} divergent case(s) "
                          f"({t['divergences']} finding(s)), {t['port_errors']} port error(s), {t['errors']} error(s), "
                          f"{t['unsupported_cases']} unsupported case(s), {t['not_checked_cases']} case(s) not "
                          f"checked, {t['capped_cases']} capped case(s), {t['unattributed_cases']} divergent case(s) "
                          f"unattributed (past the cases kept and examined per signature, or no cause left to give them), "
                          f"{t['restarts']} restart(s), {t['port_deaths']} time(s) the port went down"
                          + (f" ({', '.join(f'{k} {v}' for k, v in t['port_deaths_by_kind'].items())})"
                             if t["port_deaths"] else "") + f", {t['slow_runs']} slow run(s) (length scaling); "
                          f"cells: {', '.join(f'{v} {k}' for k, v in sorted(t['cells_by_outcome'].items()))}; "
                          f"reports in {report_dir}/"))
        spent = t["diagnosis_seconds"]
        if spent:
            out.append((None, "diagnosis: " + ", ".join(f"{k} {v:.1f} s" for k, v in spent.items())
                              + f" (worker seconds; {sum(spent.values()):.1f} s in all)"))
        tp = self.throughput()
        if tp["cases"]:
            out.append((None, f"throughput: {tp['cases']} cases in {tp['wall_s']:.1f} s wall on "
                              f"{tp['n_workers']} worker(s): {tp['cases_per_s_per_worker']:.0f} cases/s per worker"))
        if set(tp.get("hosts", {})) - {"local"}:
            out += [(None, f"  host {h}: {len(v['workers'])} worker(s) ({', '.join(v['workers'])}), "
                           f"{v['cases']} cases, {v['cases_per_s']:.0f} cases/s")
                    for h, v in tp["hosts"].items()]
        return out

    def _reference_summary(self) -> list[tuple[str | None, str]]:
        if not self.reference_cells:
            return []
        rt = self.reference_totals()
        odd = [c for c in merge_cells(self.reference_cells).values() if c["outcome"] not in ("pass", "unsupported")]
        line = (f"{REFERENCE_TITLE}: {rt['cases']} case(s), {rt['divergences']} divergence(s), "
                f"{rt['errors']} error(s), {rt['unsupported_cases']} unsupported case(s); cells: "
                + ", ".join(f"{v} {k}" for k, v in sorted(rt["cells_by_outcome"].items()))
                + "".join(f"\n  {c['vocab']} {c['check']} {c['flags']}: {cell_text(c)}" for c in odd))
        out: list[tuple[str | None, str]] = [(None, "\n" + line)]
        out += [(None, f"  error: {e['vocab']} {e['check']} {e['flags']}: {e['error']} at {e['error_at']}")
                for e in self.reference_errors]
        out += [(None, "\n" + text_block(f)) for f in self.reference_findings]
        return out

    def to_json(self, run_info: dict) -> dict:
        """The ``conformance.json`` object (schema in the module docstring)."""
        merged = list(merge_cells(self.cells).values())
        vocabs: dict[str, dict] = {}
        for c in merged:
            cur = vocabs.setdefault(c["vocab"], {}).setdefault(c["check"], {})
            for k in ("cases", "divergences", "divergent", "port_errors", "unsupported", "not_checked", "errors"):
                cur[k] = cur.get(k, 0) + c.get(k, 0)
        order = (lambda c: (c["vocab"], c["check"], c["flags"]))
        reference = {"cells": sorted(merge_cells(self.reference_cells).values(), key=order),
                     "divergences": [f.to_json() for f in self.reference_findings],
                     "errors": self.reference_errors, "totals": self.reference_totals()}
        causes = self.causes()
        cause_of = {k: c.id for c in causes for k in c.findings}
        return {"schema": SCHEMA, "run": run_info, "totals": self.totals(),
                "causes": [c.to_json(self.findings) for c in causes],
                "divergences": [f.to_json() | {"cause": cause_of[k]} for k, f in enumerate(self.findings)],
                "errors": self.errors,
                "port_errors": list(self.port_errors.values()), "restarts": self.restarts, "port_deaths": self.deaths,
                "scaling": [s.to_json() | {"test": test} for test, s in self.scaling],
                "cells": sorted(merged, key=order), "reference_checks": reference,
                "vocabs": vocabs, "throughput": self.throughput(), "tallies": self.tallies}

    def write(self, out: Path, run_info: dict) -> dict:
        """Write ``conformance.json``, ``conformance.html`` and ``conformance-junit.xml`` into
        ``out``; returns the JSON object."""
        from harness.reports.html import html_page
        from harness.reports.junit import junit_xml
        out.mkdir(parents=True, exist_ok=True)
        data = self.to_json(run_info)
        (out / "conformance.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n",
                                              encoding="utf-8")
        (out / "conformance.html").write_text(html_page(data, self.findings, self.reference_findings),
                                              encoding="utf-8")
        (out / "conformance-junit.xml").write_text(junit_xml(self), encoding="utf-8")
        return data
