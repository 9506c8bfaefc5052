"""Several ``conformance.json`` (CI shards, or runs of disjoint vocabs) as one run.

Nothing is summed from the reports' totals: every test's tally (``tallies`` in
``conformance.json``: its counts, findings, port errors and restarts, exactly as its
worker shipped them) is given again to one :class:`~harness.reports.run.RunReport`, so
cells, totals, causes, reference checks and every rendering come out of a merge exactly
as out of one run.

The merge refuses, naming each report's value, reports that cannot be one run:
another pin, port, profile or seed (any ``run`` key with "seed" in its name), the same
test in two reports (overlapping shards), or an incomplete set of shards (``--shard I/N``
of one N, each I once) unless missing shards are allowed, and then the run says which.

>>> a = {"run": {"pin": "p", "profile": "ci", "hypothesis_seed": 1}, "tallies": []}
>>> b = {"run": {"pin": "p", "profile": "ci", "hypothesis_seed": 2}, "tallies": []}
>>> check_mergeable([("a", a), ("b", b)])
Traceback (most recent call last):
...
harness.reports.merge.MergeError: cannot merge: the reports differ in hypothesis_seed (a: 1; b: 2); merge only reports of one pin, port, profile and seed
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.errors import HarnessError
from harness.reports.run import RunReport

# run keys that must agree (besides any key with "seed" in its name)
MUST_AGREE = ("pin", "port", "profile", "known_examples")


class MergeError(HarnessError):
    """Reports that cannot be merged into one run."""


def load_report(path: str | Path) -> dict:
    """``conformance.json`` of a report directory (or the file itself), checked for tallies."""
    path = Path(path)
    file = path / "conformance.json" if path.is_dir() else path
    if not file.is_file():
        raise MergeError(f"{path}: no conformance.json there (did that shard's run end before writing its "
                         "report? its log says why); give the directories `llama-conformance run --report-dir` wrote")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise MergeError(f"{file}: not a readable conformance.json ({e})") from e
    if "tallies" not in data:
        raise MergeError(f"{file}: has no per-test tallies (written by a llama-conformance older than `merge`); "
                         "run that shard again with this version")
    return data


def check_mergeable(reports: list[tuple[str, dict]], allow_missing: bool = False) -> list[str]:
    """MergeError if ``reports`` ((name, data) pairs) cannot be one run; else the shards
    missing (``"I/N"``), empty unless ``allow_missing``."""
    if not reports:
        raise MergeError("nothing to merge: give one or more report directories")
    keys = set(MUST_AGREE) | {k for _, d in reports for k in d["run"] if "seed" in k}
    for key in sorted(keys):
        values = {json.dumps(d["run"].get(key), sort_keys=True) for _, d in reports}
        if len(values) > 1:
            each = "; ".join(f"{name}: {d['run'].get(key, 'unset')}" for name, d in reports)
            raise MergeError(f"cannot merge: the reports differ in {key} ({each}); "
                             "merge only reports of one pin, port, profile and seed")
    seen: dict[str, str] = {}
    for name, d in reports:
        for t in d["tallies"]:
            if seen.setdefault(t["test"], name) != name:
                raise MergeError(f"cannot merge: test {t['test']} is in both {seen[t['test']]} and {name}; "
                                 "these reports overlap (the same shard twice, or shards of another split)")
    return _missing_shards(reports, allow_missing)


def _missing_shards(reports: list[tuple[str, dict]], allow_missing: bool) -> list[str]:
    shards = [(name, d["run"].get("shard")) for name, d in reports]
    if not any(s for _, s in shards):
        return []
    if not all(s for _, s in shards):
        unsharded = ", ".join(name for name, s in shards if not s)
        raise MergeError(f"cannot merge: {unsharded} ran without --shard, the others with it; "
                         "merge the N shards of one split")
    counts = {int(s.split("/")[1]) for _, s in shards}
    if len(counts) > 1:
        raise MergeError("cannot merge: shards of different splits (" +
                         "; ".join(f"{name}: {s}" for name, s in shards) + ")")
    n = counts.pop()
    have = [int(s.split("/")[0]) for _, s in shards]
    twice = sorted({i for i in have if have.count(i) > 1})
    if twice:
        raise MergeError(f"cannot merge: shard(s) {', '.join(f'{i}/{n}' for i in twice)} given twice")
    missing = [f"{i}/{n}" for i in range(1, n + 1) if i not in have]
    if missing and not allow_missing:
        raise MergeError(f"cannot merge: shard(s) {', '.join(missing)} missing (their vocabs would be absent "
                         "from the report); give every shard, or --allow-missing to merge what there is")
    return missing


def regather(reports: list[tuple[str, dict]]) -> RunReport:
    """One RunReport fed every test's tally of every report; worker ids become
    ``<shard or report>:<worker>``, each with the host it ran on."""
    run = RunReport()
    for name, d in reports:
        label = d["run"].get("shard") or name
        hosts = {w: h for h, v in d.get("throughput", {}).get("hosts", {}).items() for w in v.get("workers", [])}
        for t in d["tallies"]:
            worker = f"{label}:{t['worker']}"
            run.add({k: v for k, v in t.items() if k != "worker"}, worker)
            if t["worker"] in hosts:
                run.worker_hosts[worker] = hosts[t["worker"]]
    run.wall_s = max((float(d["run"].get("wall_s") or 0.0) for _, d in reports), default=0.0)
    for _, d in reports:
        run.derived.update(d["run"].get("derived") or {})
    return run


def merged_run_info(reports: list[tuple[str, dict]], missing: list[str]) -> dict:
    """The merged run's metadata: the keys all reports agree on, the earliest start, the
    longest wall time (shards run side by side), and each report's own under ``merged``."""
    runs = [d["run"] for _, d in reports]
    info = {k: v for k, v in runs[0].items() if all(r.get(k) == v for r in runs)}
    derived = {k: v for r in runs for k, v in (r.get("derived") or {}).items()}
    if derived:
        info["derived"] = derived
    info.pop("shard", None)
    starts = [r["started"] for r in runs if r.get("started")]
    info["started"] = min(starts) if starts else "?"
    info["wall_s"] = max(float(r.get("wall_s") or 0.0) for r in runs)
    if "vocabs" not in info:
        info["vocabs"] = "; ".join(f"{name}: {d['run'].get('vocabs')}" for name, d in reports)
    if "host" not in info:
        info["host"] = "; ".join(sorted({str(r.get("host")) for r in runs}))
    info["merged"] = [{"report": name, "shard": d["run"].get("shard"), "started": d["run"].get("started"),
                       "wall_s": d["run"].get("wall_s"), "host": d["run"].get("host"),
                       "cases": d.get("totals", {}).get("cases")} for name, d in reports]
    if missing:
        info["missing_shards"] = missing
    return info

