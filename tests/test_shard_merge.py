"""``--shard I/N`` splits the collected tests by vocab group; ``llama-conformance merge`` joins
the shards' reports into the report of the whole run, and refuses what cannot be one run.
(The same over a real suite, hosts and SSH: tests/test_remote.py.)"""

from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import pytest

import tests.support.suite  # noqa: F401  (preloads what pytester's runs import)
from harness.conformance.plugin import vocab_scope
from harness.conformance.shard import ShardError, parse_shard, select
from harness.cli import merge
from tests.test_conformance_plugin import _PLUGIN_TESTS

pytest_plugins = ["pytester"]

_IDS = [f"test_{check}.py::test_{check}[{vocab}-{flags}]" for vocab in ("qwen2", "gpt-2", "bert-bge", "llama-spm")
        for check in ("encode", "decode") for flags in ("plain", "parse")] + ["test_golden.py::test_golden[phi-3]"]


def test_shards_split_by_vocab_into_disjoint_parts_that_cover_every_test():
    items = [SimpleNamespace(nodeid=i) for i in _IDS]
    for n in (1, 2, 3, 5, 7):
        parts = [select(items, f"{i}/{n}", vocab_scope)[0] for i in range(1, n + 1)]
        assert sorted(i.nodeid for p in parts for i in p) == sorted(_IDS)  # each test once
        groups = [{vocab_scope(i.nodeid) for i in p} for p in parts]
        assert all(not a & b for k, a in enumerate(groups) for b in groups[k + 1:])  # a vocab in one shard
        assert parts == [select(list(reversed(items)), f"{i}/{n}", vocab_scope)[0][::-1] for i in range(1, n + 1)]
    assert {vocab_scope(i.nodeid) for i in select(items, "1/2", vocab_scope)[0]} == {"bert-bge", "llama-spm", "qwen2"}  # of the sorted five


@pytest.mark.parametrize("bad", ["0/2", "3/2", "1/0", "2", "a/b", ""])
def test_a_bad_shard_names_the_fix(bad):
    with pytest.raises(ShardError, match="--shard"):
        parse_shard(bad)


def _run(pytester, name: str, *args: str) -> dict:
    out = pytester.path / name
    pytester.runpytest_inprocess("-p", "harness.conformance.plugin", f"--conformance-reports={out}", *args)
    return json.loads((out / "conformance.json").read_text(encoding="utf-8"))


def _without_times(report: dict) -> dict:
    data = {k: v for k, v in report.items() if k not in ("run", "throughput", "tallies")}
    data["cells"] = [{k: v for k, v in c.items() if k != "seconds"} for c in report["cells"]]
    return data


def test_two_shards_merged_are_the_whole_run(pytester, capsys, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_SEED", "5")  # one seed for every shard (merge refuses two)
    pytester.makepyfile(test_x=_PLUGIN_TESTS)
    whole = _run(pytester, "whole")
    shards = [_run(pytester, f"s{i}", f"--conformance-shard={i}/2") for i in (1, 2)]
    assert [s["run"]["shard"] for s in shards] == ["1/2", "2/2"]
    assert [len(s["tallies"]) for s in shards] == [1, 1]
    rc = merge([str(pytester.path / "s1"), str(pytester.path / "s2"), "--report-dir", str(pytester.path / "m")])
    assert rc == 1  # divergences, as the whole run
    merged = json.loads((pytester.path / "m" / "conformance.json").read_text(encoding="utf-8"))
    assert _without_times(merged) == _without_times(whole)
    assert [m["shard"] for m in merged["run"]["merged"]] == ["1/2", "2/2"]
    assert "conformance: (vocab, flags) x check" in capsys.readouterr().out
    assert (pytester.path / "m" / "conformance.html").is_file()
    assert (pytester.path / "m" / "conformance-junit.xml").is_file()


def _report(tmp_path, name: str, shard: str | None = "1/2", test: str = "t1", **run) -> str:
    d = tmp_path / name
    d.mkdir()
    info = {"pin": "p1", "port": "harness", "profile": "ci", "known_examples": True, "hypothesis_seed": 1,
            **({"shard": shard} if shard else {}), **run}
    counts = {"vocab": "v", "check": "encode", "flags": "plain", "cases": 3}
    (d / "conformance.json").write_text(json.dumps({"run": info, "divergences": [], "tallies": [
        {"test": test, "worker": "gw0", "counts": counts, "findings": [], "port_errors": [], "restarts": []}]}))
    return str(d)


@pytest.mark.parametrize("change, message", [
    ({"pin": "p2"}, "differ in pin"), ({"profile": "thorough"}, "differ in profile"),
    ({"hypothesis_seed": 2}, "differ in hypothesis_seed"), ({"conformance_seed": 7}, "differ in conformance_seed"),
    ({"port": "java -jar x.jar"}, "differ in port")])
def test_merge_refuses_reports_of_another_pin_profile_seed_or_port(tmp_path, capsys, change, message):
    a = _report(tmp_path, "a")
    b = _report(tmp_path, "b", "2/2", "t2", **change)
    assert merge([a, b, "--report-dir", str(tmp_path / "m")]) == 3
    err = capsys.readouterr().err
    assert message in err and "merge only reports of one pin, port, profile and seed" in err
    assert not (tmp_path / "m").exists()


def test_merge_refuses_overlaps_and_missing_shards(tmp_path, capsys):
    a, b = _report(tmp_path, "a"), _report(tmp_path, "b", "2/2")  # both hold test t1
    assert merge([a, b, "-o", str(tmp_path / "m")]) == 3
    assert "test t1 is in both" in capsys.readouterr().err
    c = _report(tmp_path, "c", "1/3", "t3")
    d = _report(tmp_path, "d", "2/3", "t4")
    assert merge([c, d, "-o", str(tmp_path / "m")]) == 3
    assert "shard(s) 3/3 missing" in capsys.readouterr().err
    assert merge([c, d, "-o", str(tmp_path / "m"), "--allow-missing"]) == 4  # merged: incomplete, and says so
    assert json.loads((tmp_path / "m" / "conformance.json").read_text())["run"]["missing_shards"] == ["3/3"]
    assert merge([c, c, "-o", str(tmp_path / "m2")]) == 3
    assert merge([c, d, "-o", c]) == 3
    assert "is one of the reports merged" in capsys.readouterr().err


def test_merge_refuses_a_report_without_tallies(tmp_path, capsys):
    a = _report(tmp_path, "a", None)
    data = json.loads((tmp_path / "a" / "conformance.json").read_text())
    del data["tallies"]
    (tmp_path / "a" / "conformance.json").write_text(json.dumps(data))
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    assert merge([a, str(tmp_path / "b"), "-o", str(tmp_path / "m")]) == 3
    assert "has no per-test tallies" in capsys.readouterr().err
