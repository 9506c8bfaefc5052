"""``llama-conformance diagnosis-bench`` (``make diagnosis-bench``): the engine's causes against labelled bugs.

For each labelled port (``tests/data/port-bugs/<port>.json``, :mod:`.labels`; ``--ports``
selects), one after the other:

1. **build and run** it as the scoreboard does (:func:`harness.scoreboard.run.build_and_run`:
   its ``build.sh``, then ``llama-conformance run`` with ``--profile``, ``--jobs``, ``-k 'not
   test_crosscheck'``) on the label file's ``vocabs``, into ``<out>/diagnosis-bench/<port>/``,
   with a fixed seed (``--seed``, default ``$CONFORMANCE_SEED`` else 1) and a replay store of its
   own that starts empty, so that a run is repeatable and no earlier run's failures count;
2. **score** its causes (``conformance.json``): each cause goes to the first bug (of several,
   the first its diagnosis names) whose ``match``
   holds on its minimal example (:func:`harness.scoreboard.labels.first_bug`); its other
   findings are matched too, and a cause whose findings match two bugs is *mixed*;
3. **write** ``<out>/diagnosis-bench.json`` and ``.md`` (:mod:`harness.reports.diagnosis_bench`:
   one row per port and a total; per port, which cause went to which bug) and print the table.

``--from-reports DIR`` scores ``DIR/<port>/conformance.json`` without building or running
anything; ``--readme FILE`` rewrites the section between the diagnosis-bench markers in FILE
from ``<out>/diagnosis-bench.json``.

Examples::

    llama-conformance diagnosis-bench --ports ollama --jobs 1
    llama-conformance diagnosis-bench --from-reports reports/diagnosis-bench   # score the last runs again
    llama-conformance diagnosis-bench --readme README.md

>>> verdict(None, None), verdict("nfc_input", None)
('unexplained', 'wrong')
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

from harness.errors import HarnessError
from harness.reports.diagnosis_bench import json_text, markdown, readme_block, replace_block, table
from harness.scoreboard.labels import Bug, Labels, TokenTypes, characterised_set, first_bug, load_labels, names_set
from harness.scoreboard.ports import Port, discover, select
from harness.scoreboard.run import build_and_run, header
from harness.scoreboard.summary import read_report

#: The seed of every run when $CONFORMANCE_SEED is not set.
DEFAULT_SEED = 1
#: The row's counts that add up in the total row.
COUNTS = ("true_bugs", "bugs_found", "causes", "adapter_causes", "named_correctly", "named_or_characterised",
          "wrong_diagnoses", "unexplained", "uncharacterised", "unmatched", "mixed", "matched_causes")


def verdict(diagnosis: str | None, bug: Bug | None) -> str:
    """``right`` (the diagnosis is one of the bug's), ``wrong`` (another, or on no bug) or ``unexplained``."""
    if diagnosis is None:
        return "unexplained"
    return "right" if bug is not None and diagnosis in bug.diagnoses else "wrong"


def assign(cause: dict, findings: list[dict], bugs: list[Bug], token_types: TokenTypes,
           adapter: tuple[Bug, ...] = ()) -> dict:
    """One cause's bug (from its minimal example), verdict and, if its findings match two
    bugs or more, those bugs (``mixed``, in file order). A cause no bug matches but an
    adapter effect does is the adapter's (``adapter``), judged by that effect's diagnoses."""
    bug = first_bug(bugs, cause["example"], token_types, cause.get("diagnosis"))
    effect = first_bug(adapter, cause["example"], token_types, cause.get("diagnosis")) if bug is None else None
    if effect is not None:
        e = next(b for b in adapter if b.id == effect)
        return {"cause": cause["id"], "bug": None, "adapter": effect, "diagnosis": cause.get("diagnosis"),
                "verdict": verdict(cause.get("diagnosis"), e), "mixed": [], "cases": cause.get("cases", 0),
                "title": cause.get("title", "")}
    seen = {bug} | {first_bug(bugs, findings[k], token_types) for k in cause.get("findings", [])
                    if 0 <= k < len(findings)}
    mixed = [b.id for b in bugs if b.id in seen] if len(seen - {None}) > 1 else []
    by_id = {b.id: b for b in bugs}
    chars, ids = characterised_set(cause, findings) if not cause.get("diagnosis") else (set(), set())
    return {"cause": cause["id"], "bug": bug, "adapter": None, "diagnosis": cause.get("diagnosis"),
            "verdict": verdict(cause.get("diagnosis"), by_id.get(bug)), "mixed": mixed,
            "characterised": bool(chars or ids),
            "names_set": bug is not None and bool(chars or ids) and names_set(by_id[bug], chars, ids, token_types),
            "cases": cause.get("cases", 0), "title": cause.get("title", "")}


def true_bugs(labels: Labels, vocabs) -> list[Bug]:
    """The labelled bugs that can show in a run on ``vocabs`` (their vocabs meet)."""
    return [b for b in labels.bugs if set(b.vocabs) & set(vocabs)]


def bug_entry(bug: Bug, assignment: list[dict]) -> dict:
    mine = [a for a in assignment if a["bug"] == bug.id]
    return {"id": bug.id, "summary": bug.summary, "diagnoses": list(bug.diagnoses),
            "causes": [a["cause"] for a in mine], "named": any(a["verdict"] == "right" for a in mine),
            "characterised": any(a.get("names_set") for a in mine)}


def score_report(labels: Labels, report: dict, token_types: TokenTypes, wall_s: float | None = None) -> dict:
    """One port's row: its causes scored against its labels (see the module docstring)."""
    vocabs = sorted({c["vocab"] for c in report.get("cells", [])})
    bugs = true_bugs(labels, vocabs)
    assignment = [assign(c, report.get("divergences", []), bugs, token_types, labels.adapter_effects)
                  for c in report["causes"]]
    package = [a for a in assignment if not a["adapter"]]
    entries = [bug_entry(b, assignment) for b in bugs]
    found = sum(1 for b in entries if b["causes"])
    matched = sum(1 for a in assignment if a["bug"])
    return {"port": labels.port, "vocabs": vocabs, "failure": "", "wall_s": wall_s,
            "true_bugs": len(bugs), "bugs_found": found, "causes": len(package),
            "adapter_causes": len(assignment) - len(package),
            "causes_per_found_bug": round(matched / found, 2) if found else None,
            "named_correctly": sum(b["named"] for b in entries),
            "named_or_characterised": sum(b["named"] or b["characterised"] for b in entries),
            "wrong_diagnoses": sum(a["verdict"] == "wrong" for a in package),
            "unexplained": sum(a["verdict"] == "unexplained" for a in package),
            "uncharacterised": sum(a["verdict"] == "unexplained" and not a["characterised"] for a in package),
            "unmatched": sum(a["bug"] is None for a in package),
            "mixed": sum(bool(a["mixed"]) for a in package), "matched_causes": matched,
            "bugs": entries, "assignment": assignment}


def failed_row(labels: Labels, failure: str, wall_s: float | None = None) -> dict:
    """The row of a port whose build or run gave no report: its bugs, none found."""
    row = score_report(labels, {"cells": [{"vocab": v} for v in labels.vocabs], "causes": []},
                       TokenTypes(), wall_s)
    return dict(row, failure=failure, vocabs=list(labels.vocabs))


def score_dir(labels: Labels, pdir: Path, token_types: TokenTypes) -> dict:
    """The row of one port from what its run left in ``pdir`` (``steps.json`` if the
    benchmark ran it, and ``conformance.json``)."""
    steps = {}
    if (pdir / "steps.json").is_file():
        steps = json.loads((pdir / "steps.json").read_text(encoding="utf-8"))
    wall = (steps.get("run") or {}).get("wall_s")
    if steps.get("failure"):
        return failed_row(labels, steps["failure"], wall)
    try:
        report = read_report(pdir / "conformance.json")
    except HarnessError as e:
        return failed_row(labels, str(e), wall)
    return score_report(labels, report, token_types, wall if wall is not None else report["run"].get("wall_s"))


def total_row(rows: list[dict]) -> dict:
    """The total: every count summed; causes per found bug over all ports.

    >>> total_row([{"bugs_found": 2, "matched_causes": 3, "wall_s": 1.0}, {"bugs_found": 1, "wall_s": None}])["causes_per_found_bug"]
    1.0
    """
    total = {k: sum(r.get(k) or 0 for r in rows) for k in COUNTS}
    found = total["bugs_found"]
    walls = [r["wall_s"] for r in rows if r.get("wall_s") is not None]
    return dict(total, port="total", causes_per_found_bug=round(total["matched_causes"] / found, 2) if found else None,
                wall_s=round(sum(walls), 1) if walls else None)


def label_files(root: Path, names: list[str] | None) -> list[Path]:
    """The label files named (``root/<name>.json``), or every ``root/*.json``."""
    known = sorted(Path(root).glob("*.json"))
    if not names:
        if not known:
            raise HarnessError(f"{root}: no label files (<port>.json); tests/data/port-bugs/README.md gives the schema")
        return known
    missing = [n for n in names if not (Path(root) / f"{n}.json").is_file()]
    if missing:
        raise HarnessError(f"no label file for port(s) {', '.join(missing)} in {root}; labelled ports: "
                           f"{', '.join(p.stem for p in known) or 'none'}")
    return [Path(root) / f"{n}.json" for n in names]


@contextlib.contextmanager
def _environ(**values: str):
    """``os.environ`` with ``values`` set, for the child processes the scoreboard starts."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_port(port: Port, labels: Labels, out: Path, args) -> Path:
    """Build and run one port the scoreboard's way, on the labels' vocabs; its report dir."""
    pdir = out / "diagnosis-bench" / port.name
    opts = argparse.Namespace(vocabs=list(labels.vocabs), jobs=args.jobs, profile=args.profile,
                              budget=args.budget, keyword=args.keyword)
    # The replay store lives in pdir, which build_and_run empties first: every run starts
    # from no stored failures, so with the fixed seed it finds what the same code finds.
    with _environ(CONFORMANCE_SEED=str(args.seed), LLAMA_CONFORMANCE_REPLAY=str(pdir / "replay")):
        # The adapter and chat checks judge the adapter, not the causes: not run here.
        steps = build_and_run(port, pdir, opts, checks=False)
    if steps["run"]:
        steps["run"].update(report=f"diagnosis-bench/{port.name}/conformance.html",
                            log=f"diagnosis-bench/{port.name}/run.log")
    (pdir / "steps.json").write_text(json.dumps(steps, indent=1), encoding="utf-8")
    return pdir


def say(message: str) -> None:
    print(f"diagnosis-bench: {message}", file=sys.stderr, flush=True)


def bench_header(args, wall: float | None) -> dict:
    """The scoreboard's run header (the engine's commit among it), with the seed, the -k and where the labels came from."""
    return dict(header(args, wall), seed=args.seed, keyword=args.keyword, labels=str(args.labels),
                from_reports=args.from_reports)


def write(bench: dict, out: Path) -> None:
    """``<out>/diagnosis-bench.json`` and ``.md``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "diagnosis-bench.json").write_text(json_text(bench), encoding="utf-8")
    (out / "diagnosis-bench.md").write_text(markdown(bench), encoding="utf-8")
    say(f"wrote {out}/diagnosis-bench.json, .md")


def readme(path: Path, bench_json: Path) -> int:
    """Rewrite the section between the diagnosis-bench markers in ``path`` from ``bench_json``."""
    try:
        bench = json.loads(bench_json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise HarnessError(f"{bench_json}: cannot read the benchmark's results ({e}); run "
                           "`make diagnosis-bench` first, then `make diagnosis-bench-readme`") from None
    path.write_text(replace_block(path.read_text(encoding="utf-8"), readme_block(bench), where=str(path)),
                    encoding="utf-8")
    say(f"rewrote the diagnosis-bench table in {path} from {bench_json}")
    return 0


def parse_args(argv):
    p = argparse.ArgumentParser(prog="llama-conformance diagnosis-bench", description=__doc__.split("\n")[0])
    p.add_argument("--ports", nargs="*", default=(os.environ.get("PORTS") or "").split() or None,
                   help="port names (default: $PORTS, else every label file)")
    p.add_argument("--labels", default="tests/data/port-bugs", help="the label files (default: tests/data/port-bugs)")
    p.add_argument("--ports-root", default="ports", help="where the ports live (default: ports)")
    p.add_argument("--out", default="reports", help="reports directory (default: reports)")
    p.add_argument("--jobs", default=os.environ.get("JOBS") or "2", help="--jobs of each port's run (default 2)")
    p.add_argument("--profile", default=os.environ.get("HYPOTHESIS_PROFILE") or "ci",
                   help="Hypothesis profile of each run (default: ci)")
    p.add_argument("--seed", type=int, default=int(os.environ.get("CONFORMANCE_SEED") or DEFAULT_SEED),
                   help=f"--seed of each run (default: $CONFORMANCE_SEED, else {DEFAULT_SEED})")
    p.add_argument("--budget", default=os.environ.get("BUDGET") or None, help="--budget of each run (default none)")
    p.add_argument("--keyword", default="not test_crosscheck", help="pytest -k of each run")
    p.add_argument("--from-reports", metavar="DIR", help="build and run nothing: score DIR/<port>/conformance.json")
    p.add_argument("--readme", metavar="FILE", help="run nothing: rewrite FILE's diagnosis-bench section "
                   "from OUT/diagnosis-bench.json")
    return p.parse_args(argv)


def bench(args) -> dict:
    """Run (unless ``--from-reports``) and score every selected port."""
    labels = [load_labels(p) for p in label_files(Path(args.labels), args.ports)]
    start, rdir = time.monotonic(), Path(args.from_reports or Path(args.out) / "diagnosis-bench")
    if not args.from_reports:
        for port, lab in zip(select(discover(Path(args.ports_root)), [lab.port for lab in labels]), labels):
            run_port(port, lab, Path(args.out), args)
    token_types = TokenTypes()
    rows = [score_dir(lab, rdir / lab.port, token_types) for lab in labels]
    wall = None if args.from_reports else time.monotonic() - start
    return {"schema": 1, "header": bench_header(args, wall), "ports": rows, "total": total_row(rows)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args.readme:
            return readme(Path(args.readme), Path(args.out) / "diagnosis-bench.json")
        result = bench(args)
    except HarnessError as e:
        say(str(e))
        return 2
    write(result, Path(args.out))
    print("\n".join(table(result)))
    return 0
