"""The replay store remembers everywhere: one store per run, owned by its controller,
out to every worker (local or on a host), back from every test's tally, into the report
directory for shards, unioned by ``merge`` and ``--replay-from`` (harness/conformance/replaying.py).

The SSH half (a failure found on host B replayed first on host A; run, run --hosts and
merged shards giving the same cells from one store) is in tests/test_remote.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.conformance.needs import require
from harness.conformance.plugin import host_label, run_vocab_groups, vocab_scope
from harness.conformance.replaying import REPORT_SUBDIR, WORKERINPUT_KEY, Replaying, replay_inputs, store_of
from harness.engine.replay import FORMAT, ReplayStore, check_key

REPO = Path(__file__).resolve().parents[1]
ENCODE = "test_encode[llama-spm-plain]"


# --- the store ---------------------------------------------------------------------------

def test_a_key_is_the_same_whatever_path_the_suite_was_collected_from():
    assert check_key(f"harness/conformance/suite/test_encode.py::{ENCODE}") == ENCODE
    assert check_key(f"test_encode.py::{ENCODE}") == ENCODE  # the node id on an SSH host (--pyargs)


def test_entries_of_another_pin_are_kept_and_not_replayed(tmp_path):
    ReplayStore(tmp_path, "4df29be").save(ENCODE, ["old pin"])
    mine = ReplayStore(tmp_path, "0c1e570")
    mine.save(ENCODE, ["this pin"])
    assert mine.load(ENCODE) == ["this pin"] and mine.entries() == {ENCODE: ["this pin"]}
    assert mine.other_pins() == {"4df29be": 1}
    assert ReplayStore(tmp_path, "4df29be").load(ENCODE) == ["old pin"]  # still there


@pytest.mark.parametrize("content, why", [
    ("{not json", "not a replay entry (JSONDecodeError"),
    (json.dumps({"format": 1, "test": ENCODE, "inputs": ["a"]}), f"not a replay entry of format {FORMAT}"),
    (json.dumps(["a", "b"]), f"not a replay entry of format {FORMAT}"),
])
def test_an_entry_the_harness_cannot_read_is_reported_once_skipped_and_left_as_it_is(tmp_path, content, why):
    store = ReplayStore(tmp_path, "0c1e570")
    store.save(ENCODE, ["kept"])
    bad = store.pin_dir / "0000.json"
    bad.write_text(content)
    assert store.entries() == {ENCODE: ["kept"]} and store.entries() == {ENCODE: ["kept"]}
    [problem] = store.problems  # twice read, once said
    assert problem.startswith(f"{bad}: {why}") and bad.read_text() == content


def test_ids_come_back_as_tuples_and_texts_as_texts(tmp_path):
    store = ReplayStore(tmp_path, "p")
    assert store.save("test_decode[v-plain]", [(1, 2), (1, 2), [3]]) == 2  # kept once each
    assert store.load("test_decode[v-plain]") == [(1, 2), (3,)]


# --- the controller: out, back, the report's store ----------------------------------------

def _config(shard=None, worker=False):
    config = SimpleNamespace(option=SimpleNamespace(), getoption=lambda name, default=None: shard if "shard" in name
                             else default, pluginmanager=SimpleNamespace(get_plugin=lambda name: None))
    if worker:
        config.workerinput = {}
    return config



def _replaying(store, report_dir, groups=None):
    return Replaying(store, report_dir, groups, vocab_scope, host_label)


def _node(ssh=None):
    spec = SimpleNamespace(ssh=ssh)
    return SimpleNamespace(gateway=SimpleNamespace(spec=spec), workerinput={})


def _tally(test, replayed=0, found=()):
    return {"counts": {"replayed": replayed}, "test": test, "findings": [], "replay": list(found)}


def test_the_controller_sends_the_run_s_entries_to_every_host_and_keeps_what_comes_back(tmp_path, monkeypatch):
    monkeypatch.setenv("VOCABS", "llama-spm")
    store = ReplayStore(tmp_path / "store", "0c1e570")
    store.save(ENCODE, ["x\xa0y"])
    store.save("test_encode[qwen2-plain]", ["not this run's vocab"])
    r = _replaying(store, tmp_path / "reports", run_vocab_groups(_config()))
    a, b, b2 = _node("-o BatchMode=yes hostA"), _node("-o BatchMode=yes hostB"), _node("-o BatchMode=yes hostB")
    for node in (a, b, b2):
        r.pytest_configure_node(node)
    assert b.workerinput[WORKERINPUT_KEY] == {ENCODE: ["x\xa0y"]}
    # hostB's worker replays the stored input and finds one more, then the host dies: what it sent is kept
    r.take(_tally(f"suite/test_encode.py::{ENCODE}", replayed=1, found=["x\xa0y", "7777"]), "hostB")
    assert ReplayStore(tmp_path / "store", "0c1e570").load(ENCODE) == ["x\xa0y", "7777"]
    assert r.write_report_store() == tmp_path / "reports" / REPORT_SUBDIR
    assert ReplayStore(tmp_path / "reports" / REPORT_SUBDIR, "0c1e570").entries() == {ENCODE: ["x\xa0y", "7777"]}
    info = r.to_json()
    assert info["sent"] == {"hostA": 1, "hostB": 1} and info["replayed"] == {"hostB": 1}
    assert info["found"] == {"hostB": 2} and info["added"] == 1
    assert "hostB: 1 out, 1 replayed, 2 back" in r.summary_line()


def test_a_report_directory_that_is_the_store_itself_keeps_the_store(tmp_path):
    """``LLAMA_CONFORMANCE_REPLAY=<report dir>/replay`` (the diagnosis bench's set-up): the
    report's store is not rewritten, so the store's other entries stay."""
    store = ReplayStore(tmp_path / REPORT_SUBDIR, "p")
    store.save("test_encode[qwen2-plain]", ["kept from an earlier run"])
    r = _replaying(store, tmp_path)
    r.take(_tally(ENCODE, found=["new"]), "local")
    assert r.write_report_store() == tmp_path / REPORT_SUBDIR
    assert ReplayStore(tmp_path / REPORT_SUBDIR, "p").entries() == {"test_encode[qwen2-plain]": ["kept from an earlier run"],
                                                                   ENCODE: ["new"]}


def test_a_worker_takes_its_test_s_inputs_from_its_workerinput():
    config = _config(worker=True)
    config.workerinput[WORKERINPUT_KEY] = {ENCODE: ["a", [1, 2]]}
    assert replay_inputs(config, f"test_encode.py::{ENCODE}") == ["a", (1, 2)]
    assert replay_inputs(config, "test_encode.py::test_encode[qwen2-plain]") == []


def test_a_shard_sends_only_its_own_vocabs(tmp_path, monkeypatch):
    monkeypatch.setenv("VOCABS", "llama-spm qwen2")
    store = ReplayStore(tmp_path / "store", "p")
    store.save(ENCODE, ["a"])
    store.save("test_encode[qwen2-plain]", ["b"])
    # sorted: llama-spm is shard 1 of 2, qwen2 shard 2
    groups = run_vocab_groups(_config(shard="2/2"))
    assert groups == {"qwen2"} and _replaying(store, tmp_path, groups).entries == {"test_encode[qwen2-plain]": ["b"]}


def test_merge_unions_the_shards_stores_into_its_report_and_the_local_store(tmp_path, monkeypatch):
    from harness.mergecmd import merge_stores
    for i, text in ((1, "a"), (2, "b")):
        ReplayStore(tmp_path / f"shard{i}" / REPORT_SUBDIR, "p").save(ENCODE, [text])
    (tmp_path / "shard3").mkdir()  # a shard that found nothing
    monkeypatch.setenv("LLAMA_CONFORMANCE_REPLAY", str(tmp_path / "local"))
    info = merge_stores([str(tmp_path / f"shard{i}") for i in (1, 2, 3)], tmp_path / "merged")
    assert info["found"] == {str(tmp_path / "shard1"): 1, str(tmp_path / "shard2"): 1} and info["added"] == 2
    assert ReplayStore(tmp_path / "merged" / REPORT_SUBDIR, "p").load(ENCODE) == ["a", "b"]
    assert ReplayStore(tmp_path / "local", "p").load(ENCODE) == ["a", "b"]
    assert store_of(tmp_path / "shard1") == tmp_path / "shard1" / REPORT_SUBDIR


# --- end to end: docs/ci.md's GitHub Actions recipes, run on this machine -----------------

def _workflows() -> tuple[str, str]:
    """docs/ci.md's single-job and sharded GitHub Actions workflows (its 1st and 3rd YAML)."""
    import re
    blocks = re.findall(r"```yaml\n(.*?)```", (REPO / "docs" / "ci.md").read_text(encoding="utf-8"), re.S)
    return blocks[0], blocks[2]


@pytest.mark.reference
def test_the_ci_recipes_cache_keeps_what_any_shard_found_for_the_next_workflow(tmp_path):
    """The sharded workflow, each job on a fresh runner (an empty directory), its 4 shards
    each finding what its vocabs hold; the merge job's saved cache; then the single-job
    workflow, on a new runner, restores that cache and replays every shrunk input any
    shard found, first, and each diverges again the same way. Only the port and the selection are
    the test's (``edit``): the cache steps, paths, keys and commands are the recipe's."""
    import os
    import shlex
    from reference.build import artifacts
    from reference.lock import load
    from tests.support.gha import Runner
    require(artifacts)
    port = f"{sys.executable} {REPO}/tests/ports/faulty_port.py --vocab {{vocab}} --bugs digits,nbsp"
    small = " --no-fetch --jobs 0 --profile ci --vocabs llama-spm bert-bge -- -k 'test_encode and plain'"

    def edit(line: str) -> str | None:
        if line.startswith("llama-conformance run "):
            return line.replace('"./target/release/myport-serve --vocab {vocab}"', shlex.quote(port)) + small
        return line if line.startswith("llama-conformance merge ") else None

    env = {k: v for k, v in os.environ.items()
           if k not in ("PORT", "VOCABS", "PIN", "HYPOTHESIS_PROFILE", "LLAMA_CONFORMANCE_REPLAY")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    gha = Runner(tmp_path, env, edit, {"steps.pin.outputs.commit": load().commit})
    single, sharded = _workflows()
    gha.workflow(sharded, run_id=11)
    codes = [code for _, code, _ in gha.log]
    assert codes == [1, 1, 0, 0, 1], gha.log  # two shards diverge, two hold no vocab; the merge's exit 1
    shards = [json.loads((tmp_path / f"runner{i}-shard" / f"shard-{i}" / "conformance.json").read_text())
              for i in (1, 2)]
    found = sum(sum(r["run"]["replay"]["found"].values()) for r in shards)
    assert found >= 2 and all(r["run"]["replay"]["sent"] == {"local": 0} for r in shards)  # fresh runners
    merged = json.loads((tmp_path / "runner5-merge" / "reports" / "conformance.json").read_text())
    assert merged["run"]["replay"]["added"] == found and len(gha.cache) == 1
    gha.workflow(single, run_id=12)
    line, code, out = gha.log[-1]
    assert code == 1 and "--seed" not in line, out[-3000:]  # its own seed: only the store makes it replay
    nxt = json.loads((tmp_path / "runner6-conformance" / "reports" / "conformance.json").read_text())
    assert nxt["totals"]["replayed_inputs"] == found and nxt["run"]["replay"]["sent"] == {"local": found}
    # Every shrunk input a shard found diverges again, the same way, replayed. (Not the causes'
    # titles: which cause a case is filed under can still depend on the run's other cases and the
    # diagnosis time budget, issue 30; a loaded machine once filed U+A9D6 under another cause.)
    found_again = {(d["text"], tuple(d["signature"])) for d in nxt["divergences"] if d["replayed"]}
    assert {(d["text"], tuple(d["signature"])) for d in merged["divergences"]} <= found_again
    assert len(gha.cache) == 2  # the single job saved its store under its own run's key


def test_the_gitlab_recipes_keep_the_store_in_a_cache_saved_also_on_failure():
    """GitLab's cache is not run here: its stanzas are read. The single job and the report
    job save the store (``when: always``: a job that found a divergence fails); the shards
    only read it (``policy: pull``: one writer)."""
    import re
    blocks = re.findall(r"```yaml\n(.*?)```", (REPO / "docs" / "ci.md").read_text(encoding="utf-8"), re.S)
    single, sharded = blocks[1], blocks[3]

    def replay_cache(text: str) -> str:
        """The cache entry ``- key: "conformance-replay-..."``: its line and the deeper ones under it."""
        lines = text.split("\n")
        [start] = [i for i, line in enumerate(lines) if line.strip().startswith('- key: "conformance-replay-')]
        indent = len(lines[start]) - len(lines[start].lstrip()) + 2
        entry = [lines[start]]
        for line in lines[start + 1:]:
            if len(line) - len(line.lstrip()) < indent:
                break
            entry.append(line)
        assert any(".hypothesis/conformance/" in line for line in entry), entry
        return "\n".join(entry)

    assert "when: always" in replay_cache(single)
    shard_job, report_job = sharded.split("tokenizer-conformance-report:")
    assert "policy: pull\n" in replay_cache(shard_job) + "\n" and "when:" not in replay_cache(shard_job)
    assert "policy: pull-push" in replay_cache(report_job) and "when: always" in replay_cache(report_job)
    assert "llama-conformance merge" in report_job
