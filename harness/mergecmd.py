"""``llama-conformance merge DIR... [--report-dir OUT]``: the reports of N shards as one run.

Each DIR is a ``--report-dir`` of ``llama-conformance run --shard I/N`` (or of runs of
disjoint vocabs). The merged ``conformance.json``, ``conformance.html`` and
``conformance-junit.xml`` go to OUT (default ``reports``), and the table, causes and
totals are printed as a run prints them (:mod:`harness.reports.merge` re-gathers every
test's tally into one report). Reports of another pin, port, profile or seed, overlapping
reports and missing shards are refused with the values that differ.

Exit codes: 0 clean, 1 divergences, 2 port errors, 3 a refusal, a missing shard
(``--allow-missing``) or a cell not checked without a port error to explain it (a host
lost mid-run). A shard's own set-up errors are in its own exit code and log.

>>> main(["/nonexistent/shard1"])  # stderr: "/nonexistent/shard1: no conformance.json there (...)"
3
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

CLEAN, DIVERGENCES, PORT_ERRORS, SETUP_ERRORS = 0, 1, 2, 3


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="llama-conformance merge",
                                description="Merge the conformance.json of several runs (CI shards) into one report.")
    p.add_argument("reports", nargs="+", metavar="DIR", help="report directories (or conformance.json files)")
    p.add_argument("--report-dir", "-o", default="reports", help="where the merged reports go (default: reports)")
    p.add_argument("--allow-missing", action="store_true",
                   help="merge even if shards are missing (the run lists them; exit 3)")
    return p


def main(argv: list[str] | None = None) -> int:
    from harness.errors import HarnessError
    from harness.reports.merge import check_mergeable, load_report, merge_junit, merged_run_info, regather

    args = parser().parse_args(argv)
    out = Path(args.report_dir)
    try:
        reports = [(name, load_report(name)) for name in args.reports]
        if any(_same_dir(out, name) for name in args.reports):
            raise HarnessError(f"--report-dir {out} is one of the reports merged; give another directory")
        missing = check_mergeable(reports, args.allow_missing)
    except HarnessError as e:
        print(f"llama-conformance merge: {e}", file=sys.stderr)
        return SETUP_ERRORS
    run = regather(reports)
    out.mkdir(parents=True, exist_ok=True)
    junit = out / "conformance-junit.xml"
    junit.unlink(missing_ok=True)
    data = run.write(out, merged_run_info(reports, missing))
    if not junit.exists():  # the reports room writes none: join the runs' own (pytest's)
        files = [p for name, _ in reports if (p := _dir(name) / "conformance-junit.xml").is_file()]
        junit.write_text(merge_junit(files), encoding="utf-8")
    for title, text in run.summary(str(out)):
        if title is not None:
            print(f"{'-' if title.startswith('-') else '='} {title.lstrip('-')} {'-' if title.startswith('-') else '='}")
        print(text)
    code = exit_code(data, missing)
    print(f"llama-conformance merge: {len(reports)} report(s), exit {code}; merged reports in {out}/", file=sys.stderr)
    return code


def exit_code(data: dict, missing: list[str]) -> int:
    """The run's exit code from the merged totals (see the module docstring).

    >>> exit_code({"totals": {"divergences": 2, "port_errors": 0, "cells_by_outcome": {"divergence": 1}}}, [])
    1
    """
    t = data["totals"]
    outcomes = t.get("cells_by_outcome", {})
    if missing or outcomes.get("error") or (outcomes.get("not checked") and not t.get("port_errors")):
        return SETUP_ERRORS
    if t.get("port_errors"):
        return PORT_ERRORS
    return DIVERGENCES if t.get("divergences") else CLEAN


def _dir(name: str) -> Path:
    p = Path(name)
    return p if p.is_dir() else p.parent


def _same_dir(out: Path, name: str) -> bool:
    try:
        return out.resolve() == _dir(name).resolve()
    except OSError:
        return False


if __name__ == "__main__":
    sys.exit(main())
