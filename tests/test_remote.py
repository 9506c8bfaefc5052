"""``run --hosts``, ``prepare``, ``--shard`` and ``merge`` for real (``make test-remote``, ``make test-slow``).

An OpenSSH server on a loopback port (tests/support/sshd.py: throwaway keys and config)
with two Host aliases, hostA and hostB. ``prepare`` installs a wheel of this tree into a
venv per alias (``<root>/<alias>/venv``), each with its own cache, seeded with this
machine's build (``--copy-build``: the 5-minute compile is the one thing skipped; the
fetch, the build step and the lock verification run there for real). The port is the
faulty JSON-lines port (tests/ports/faulty_port.py, three bugs), so cells hold divergences.

"The same run on one machine" is this checkout's ``llama-conformance run --jobs 2`` with the
same options. Every run starts from an empty replay store (a fresh working directory: the
store is the controller's), as replayed shrunk inputs would change the cases, except the
replay test, which gives each run its own copy of one store.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.remote.session import cell_of_nodeid
from tests.support.sshd import Sshd

pytestmark = [pytest.mark.remote, pytest.mark.xdist_group("remote")]

REPO = Path(__file__).resolve().parents[1]
VOCABS = ["gpt-2", "llama-spm", "bert-bge"]
PORT = f"{sys.executable} {REPO}/tests/ports/faulty_port.py --vocab {{vocab}} --bugs digits,nbsp,decode-space"
COMMON = ["--no-fetch", "--profile", "ci", "--seed", "1", "--vocabs", *VOCABS, "--port", PORT]


class Cluster:
    def __init__(self, root: Path, sshd: Sshd):
        self.root, self.sshd = root, sshd
        self.layout = ["--remote-dir", f"{root}/{{host}}", "--remote-cache", f"{root}/{{host}}/cache",
                       "--ssh-config", str(sshd.config)]
        self.runs = 0

    def env(self, **extra) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HYPOTHESIS_"))}
        return dict(env, **extra)

    def fresh_dir(self) -> Path:
        self.runs += 1
        d = self.root / f"run{self.runs}"
        d.mkdir()
        for host in self.sshd.aliases:  # the hosts' Hypothesis databases too
            shutil.rmtree(self.root / host / "work" / ".hypothesis", ignore_errors=True)
        return d

    def controller(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "harness.cli", *args]

    def run(self, argv: list[str], **env) -> tuple[int, str, dict, Path]:
        """(exit code, output, conformance.json, report dir) of one run in a fresh directory."""
        cwd = self.fresh_dir()
        out = cwd / "reports"
        started = time.monotonic()
        p = subprocess.run([*argv, "--report-dir", str(out)], cwd=cwd, capture_output=True, text=True,
                           env=self.env(**env), timeout=900)
        print(f"{' '.join(argv[:3])}...: exit {p.returncode} in {time.monotonic() - started:.1f} s")
        report = json.loads((out / "conformance.json").read_text()) if (out / "conformance.json").exists() else {}
        return p.returncode, p.stdout + p.stderr, report, out

    def single(self, *extra: str):
        return self.run(self.controller("run", *COMMON, "--jobs", "2", *extra))

    def hosts(self, hosts: str, *extra: str):
        return self.run(self.controller("run", *COMMON, "--hosts", hosts, *self.layout, *extra))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("remote")
    sshd = Sshd(root / "sshd").start()
    try:
        dist = root / "dist"  # as make dist: the sdist, and the wheel built from it (no stale build/)
        subprocess.run([sys.executable, "-c", f"from setuptools import build_meta as b; b.build_sdist({str(dist)!r})"],
                       cwd=REPO, check=True, capture_output=True, timeout=600)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                        "-w", str(dist), str(next(dist.glob("*.tar.gz")))], check=True, timeout=600)
        wheel = next(dist.glob("*.whl"))
        c = Cluster(root, sshd)
        p = subprocess.run(c.controller("prepare", "--hosts", "hostA,hostB", "--package", str(wheel),
                                        "--copy-build", *c.layout),
                           capture_output=True, text=True, env=c.env(), timeout=1800)
        print(p.stdout[-3000:], p.stderr[-3000:])
        assert p.returncode == 0, p.stdout + p.stderr
        for host in ("hostA", "hostB"):
            assert f"{host}: lock verified: pin" in p.stdout
            assert f"{host}: venv {root}/{host}/venv created" in p.stdout
        yield c
    finally:
        sshd.stop()


@pytest.fixture(scope="module")
def single(cluster):
    rc, out, report, _ = cluster.single()
    assert rc == 1, out[-3000:]  # the faulty port diverges
    return report


def cells(report: dict) -> dict:
    return {(c["vocab"], c["check"], c["flags"]): (c.get("cases"), c["outcome"], c.get("divergences"),
                                                   c.get("divergent")) for c in report["cells"]}


def findings(report: dict) -> list:
    return sorted((f["vocab"], f["check"], f["flags"], f["text"], f["index"], tuple(f["signature"]), f["cases"])
                  for f in report["divergences"])


def causes(report: dict) -> list:
    return sorted((c.get("title"), c.get("cases"), len(c.get("findings", []))) for c in report.get("causes", []))


def assert_same_run(got: dict, want: dict) -> None:
    assert cells(got) == cells(want)
    assert findings(got) == findings(want)
    assert causes(got) == causes(want)
    timing = ("diagnosis_seconds",)  # wall seconds: how long, not what was found
    assert {k: v for k, v in got["totals"].items() if k not in timing} == \
        {k: v for k, v in want["totals"].items() if k not in timing}


def test_two_host_aliases_give_the_cells_and_findings_of_one_machine(cluster, single):
    rc, out, report, _ = cluster.hosts("1*hostA,1*hostB")
    assert rc == 1, out[-3000:]
    assert_same_run(report, single)
    hosts = report["run"]["hosts"]
    assert set(hosts) == {"hostA", "hostB"}
    assert hosts["hostA"]["python"] == f"{cluster.root}/hostA/venv/bin/python"
    assert hosts["hostB"]["cache"] == f"{cluster.root}/hostB/cache"
    per_host = report["throughput"]["hosts"]
    assert sum(h["cases"] for h in per_host.values()) == report["totals"]["cases"]
    assert all(h["cases_per_s"] > 0 for h in per_host.values())
    assert "llama-conformance: gw0 on hostA" in out and "llama-conformance: gw1 on hostB" in out


def _run_and_kill_hostB(cluster, hosts: str):
    """Start a --hosts run; once hostB's worker has a test result, kill hostB."""
    cwd = cluster.fresh_dir()
    log = cwd / "log"
    argv = cluster.controller("run", *COMMON, "--hosts", hosts, *cluster.layout, "--report-dir", str(cwd / "r"),
                              "--", "-v")
    with open(log, "w") as fh:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, env=cluster.env())
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            text = log.read_text()
            gw = [line.split()[1] for line in text.splitlines() if line.startswith("llama-conformance: gw")
                  and " on hostB " in line]
            if gw and any(line.startswith(f"[{gw[0]}]") and ("PASSED" in line or "FAILED" in line)
                          for line in text.splitlines()):
                break
            time.sleep(0.1)
        killed = cluster.sshd.kill_host("hostB", f"{cluster.root}/hostB/")
        assert killed, "hostB had no process to kill: the run ended before it could"
        rc = proc.wait(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
        cluster.sshd.write_config()  # hostB answers again for the next test
    report = json.loads((cwd / "r" / "conformance.json").read_text())
    return rc, log.read_text(), report


def test_a_host_killed_mid_run_has_its_tests_rerun_on_the_other(cluster, single):
    rc, out, report = _run_and_kill_hostB(cluster, "1*hostA,1*hostB")
    assert rc == 1, out[-3000:]
    down = report["run"]["workers_down"]
    assert down[0]["host"] == "hostB" and down[0]["host_lost"] and down[0]["replaced_by"].endswith(" on hostA")
    assert "host hostB lost" in out and "INTERNALERROR" not in out
    assert_same_run(report, single)  # every test ran once to its end, somewhere


def test_with_no_host_left_the_unfinished_tests_are_not_checked(cluster, single):
    rc, out, report = _run_and_kill_hostB(cluster, "1*hostB")
    down = report["run"]["workers_down"][0]
    lost = set(down["not_checked"])
    assert lost and down["replaced_by"] is None
    got, want = cells(report), cells(single)
    got_ref, want_ref = cells(report["reference_checks"]), cells(single["reference_checks"])
    assert set(got) == set(want) and set(got_ref) == set(want_ref)  # no test lost: each cell is there
    unrun = {cell_of_nodeid(t) for t in lost}  # one test per cell
    for mine, theirs in ((got, want), (got_ref, want_ref)):
        for (vocab, check, flags), value in mine.items():
            if (vocab, flags, check) in unrun:
                assert value[:2] == (0, "not checked"), (vocab, check, flags)  # never a pass
            else:
                assert value == theirs[vocab, check, flags]  # finished before the kill: as on one machine
    n_port = sum(1 for t in lost if cell_of_nodeid(t)[2] != "crosscheck")
    assert report["totals"]["cells_by_outcome"]["not checked"] == n_port > 0
    # incomplete (4), or divergences (1) if a test that finished before the kill found one
    assert rc == (1 if any(v[1] == "divergence" for v in got.values()) else 4), out[-3000:]


def test_two_shards_merged_equal_the_single_run(cluster, single):
    dirs = []
    for shard in ("1/2", "2/2"):
        rc, out, report, d = cluster.single("--shard", shard)
        assert report["run"]["shard"] == shard
        dirs.append(d)
    vocabs = [{c["vocab"] for c in json.loads((d / "conformance.json").read_text())["cells"]} for d in dirs]
    assert vocabs[0] and vocabs[1] and not vocabs[0] & vocabs[1]
    merged = cluster.root / "merged"
    p = subprocess.run(cluster.controller("merge", *map(str, dirs), "--report-dir", str(merged)),
                       capture_output=True, text=True, env=cluster.env(), timeout=300)
    assert p.returncode == 1, p.stdout + p.stderr  # as the single run's: divergences
    report = json.loads((merged / "conformance.json").read_text())
    assert_same_run(report, single)
    assert [m["shard"] for m in report["run"]["merged"]] == ["1/2", "2/2"]
    assert (merged / "conformance.html").stat().st_size > 10_000
    cases = [(d / "conformance-junit.xml").read_text().count("<testcase") for d in dirs]
    assert (merged / "conformance-junit.xml").read_text().count("<testcase") == sum(cases) > 0


def test_the_budget_is_shared_by_every_worker_of_every_host(cluster):
    """BUDGET=20s on 2 hosts of 1 worker: the fast phases get 20 s x 2 workers x 60 %, shared by
    the 16 generated tests of two vocabs: 1.5 s each (0.75 s if each host counted alone)."""
    rc, out, report, _ = cluster.run(cluster.controller(
        "run", "--no-fetch", "--profile", "ci", "--seed", "1", "--vocabs", "gpt-2", "bert-bge", "--port", "harness",
        "--budget", "20s", "--hosts", "1*hostA,1*hostB", *cluster.layout))
    assert rc == 0, out[-3000:]
    generated = [c for c in report["cells"] if c["check"] in ("encode", "decode")]
    assert len(generated) == 16
    assert min(c["seconds"] for c in generated) >= 1.45, sorted(c["seconds"] for c in generated)
    assert {len(h["workers"]) for h in report["run"]["hosts"].values()} == {1}


def test_a_failure_found_on_host_b_is_replayed_first_on_host_a_and_one_store_gives_one_run(cluster):
    """The replay store is the controller's: what hostB found (run 1) goes out to hostA's
    worker in run 2 and runs first there; and from copies of that one store, run --hosts,
    run on this machine and two merged shards give the same cells (cases and outcomes)."""
    vocabs = ["--vocabs", "llama-spm", "bert-bge"]  # (the last --vocabs wins: two small vocabs)
    store = cluster.root / "store"

    def run(*extra: str, copy: str):
        shutil.copytree(store, cluster.root / copy)
        return cluster.run(cluster.controller("run", *COMMON, *vocabs, *extra),
                           LLAMA_CONFORMANCE_REPLAY=str(cluster.root / copy))

    rc, out, first, _ = cluster.run(cluster.controller("run", *COMMON, *vocabs, "--hosts", "1*hostB", *cluster.layout),
                                    LLAMA_CONFORMANCE_REPLAY=str(store))
    assert rc == 1, out[-3000:]
    n = first["run"]["replay"]["found"]["hostB"]
    assert n >= 2 and first["run"]["replay"]["added"] == n and first["totals"]["replayed_inputs"] == 0
    rc, out, on_a, _ = run("--hosts", "1*hostA", *cluster.layout, copy="store-a")
    assert rc == 1, out[-3000:]
    replay = on_a["run"]["replay"]
    assert replay["sent"] == {"hostA": n} and replay["replayed"] == {"hostA": n}, replay
    assert on_a["totals"]["replayed_inputs"] == n and "hostA: " in out
    assert {tuple(f["signature"]) for f in first["divergences"]} <= {tuple(f["signature"]) for f in on_a["divergences"]}
    rc, out, here, _ = run("--jobs", "2", copy="store-local")
    assert rc == 1 and cells(here) == cells(on_a), out[-3000:]
    dirs = []
    for i in (1, 2):
        rc, out, _, d = run("--jobs", "1", "--shard", f"{i}/2", copy=f"store-shard{i}")
        dirs.append(d)
    merged = cluster.root / "merged-replay"
    p = subprocess.run(cluster.controller("merge", *map(str, dirs), "--report-dir", str(merged)),
                       capture_output=True, text=True, env=cluster.env(LLAMA_CONFORMANCE_REPLAY=str(store)),
                       timeout=300)
    assert p.returncode == 1, p.stdout + p.stderr
    assert cells(json.loads((merged / "conformance.json").read_text())) == cells(on_a)
