"""``llama-conformance merge DIR... [--report-dir OUT]``: the reports of N shards as one run.

Each DIR is a ``--report-dir`` of ``llama-conformance run --shard I/N`` (or of runs of
disjoint vocabs). The merged ``conformance.json``, ``conformance.html`` and
``conformance-junit.xml`` go to OUT (default ``reports``), and the table, causes and
totals are printed as a run prints them (:mod:`harness.reports.merge` re-gathers every
test's tally into one report). Reports of another pin, port, profile or seed, overlapping
reports and missing shards are refused with the values that differ.

Its exit code is ``run``'s, from the merged cells (``harness.cli.merged_exit_code``: 0
clean, 1 divergences, 2 port errors, 3 errors, 4 incomplete), 4 at best when shards are
missing (``--allow-missing``), and 3 when the reports cannot be merged. A shard's own
set-up errors (a collection error) are in its own exit code and log, not in its report.

>>> main(["/nonexistent/shard1"], None)  # stderr: "/nonexistent/shard1: no conformance.json there (...)"
3
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REFUSED = 3  # run's "errors"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="llama-conformance merge",
                                description="Merge the conformance.json of several runs (CI shards) into one report.")
    p.add_argument("reports", nargs="+", metavar="DIR", help="report directories (or conformance.json files)")
    p.add_argument("--report-dir", "-o", default="reports", help="where the merged reports go (default: reports)")
    p.add_argument("--allow-missing", action="store_true",
                   help="merge even if shards are missing (the run lists them; exit 4 at best)")
    p.add_argument("--allow-unsupported", action="store_true",
                   help="as run's: cases the port declared unsupported do not make the exit code 4")
    return p


def main(argv: list[str] | None, exit_code) -> int:
    """Merge as ``argv`` says; ``exit_code(data, missing, allow_unsupported) -> (code, why)``."""
    from harness.errors import HarnessError
    from harness.reports.merge import check_mergeable, load_report, merged_run_info, regather

    args = parser().parse_args(argv)
    out = Path(args.report_dir)
    try:
        reports = [(name, load_report(name)) for name in args.reports]
        if any(_same_dir(out, name) for name in args.reports):
            raise HarnessError(f"--report-dir {out} is one of the reports merged; give another directory")
        missing = check_mergeable(reports, args.allow_missing)
    except HarnessError as e:
        print(f"llama-conformance merge: {e}", file=sys.stderr)
        return REFUSED
    run = regather(reports)
    info = merged_run_info(reports, missing)
    info["replay"] = merge_stores([name for name, _ in reports], out)
    data = run.write(out, info)  # JSON, HTML and JUnit, as a run writes them
    for title, text in run.summary(str(out)):
        if title is not None:
            print(f"{'-' if title.startswith('-') else '='} {title.lstrip('-')} {'-' if title.startswith('-') else '='}")
        print(text)
    print(f"llama-conformance merge: replay: {_replay_line(info['replay'])}", file=sys.stderr)
    code, why = exit_code(data, missing, args.allow_unsupported)
    print(f"llama-conformance merge: {len(reports)} report(s); exit {code} ({why}); merged reports in {out}/",
          file=sys.stderr)
    return code


def merge_stores(names: list[str], out: Path) -> dict:
    """Every report's ``replay/`` (the shrunk inputs its shard found) into ``<out>/replay`` and
    into this checkout's replay store, so the next run (or the CI cache of that store)
    replays what any shard found; what went where, as ``run.replay`` of the merged report."""
    from harness.conformance.replaying import REPORT_SUBDIR
    from harness.engine.replay import ReplayStore, count_inputs, replay_root
    union = ReplayStore(out / REPORT_SUBDIR, "")
    local = ReplayStore(replay_root(), "", union.problems)
    found, added = {}, 0
    for name in names:
        src = _dir(name) / REPORT_SUBDIR
        if src.is_dir():
            found[name] = sum(count_inputs(ReplayStore(src, p.name, union.problems).entries())
                              for p in sorted(src.iterdir()) if p.is_dir())
            union.union(src)
            added += local.union(src)
    return {"store": str(local.root), "found": found, "added": added,
            "report_store": str(union.root) if found else None, "problems": union.problems}


def _replay_line(replay: dict) -> str:
    """What :func:`merge_stores` did, in one line (and a line per file it skipped)."""
    if not replay["found"]:
        line = "no report holds a replay store (their runs found nothing, or an older harness made them)"
    else:
        line = (f"{sum(replay['found'].values())} shrunk input(s) in the reports' stores; {replay['added']} new to "
                f"{replay['store']}; their union in {replay['report_store']}")
    return line + "".join(f"\n  skipped: {p}" for p in replay["problems"])


def _dir(name: str) -> Path:
    p = Path(name)
    return p if p.is_dir() else p.parent


def _same_dir(out: Path, name: str) -> bool:
    try:
        return out.resolve() == _dir(name).resolve()
    except OSError:
        return False

