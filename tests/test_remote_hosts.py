"""``--hosts`` parsed into xdist ``--tx`` specs, and what ``run --hosts`` refuses before any
worker starts (no SSH here: tests/test_remote.py runs it against a real server)."""

from __future__ import annotations

import argparse

import pytest

from harness.remote.hosts import Host, HostsError, Layout, forwarded_env, parse_hosts, tx_specs
from harness.remote.launch import HostsUnready, SUITE_ARGS, launch, problem
from harness.remote.session import cell_of_nodeid


def test_hosts_parse_counts_aliases_and_local():
    assert parse_hosts(["a,2*b", "3*local"]) == [Host("a"), Host("b", 2), Host("local", 3)]
    assert parse_hosts("ci@10.0.0.7 hostB") == [Host("ci@10.0.0.7"), Host("hostB")]


@pytest.mark.parametrize("bad", ["", "2*", "x*a", "a//b", "*a"])
def test_a_bad_host_list_names_the_form(bad):
    with pytest.raises(HostsError, match="--hosts"):
        parse_hosts(bad)


def test_specs_carry_python_directory_environment_and_config_per_host():
    layout = Layout(remote_dir="/srv/lc/{host}", remote_cache="/srv/cache/{host}", ssh_config="/tmp/cfg")
    tx = tx_specs([Host("a"), Host("b", 3), Host("local")], layout, {"PORT": "java -jar /opt/p.jar --vocab {vocab}"},
                  {"a": 2, "local": 1})
    specs = tx[1::2]
    assert tx[::2] == ["--tx"] * 3
    assert specs[0].startswith("2*ssh=-o BatchMode=yes") and " a//python=/srv/lc/a/venv/bin/python//" in specs[0]
    assert "//chdir=/srv/lc/a/work//ssh_config=/tmp/cfg//" in specs[0]
    assert specs[0].endswith("//env:PORT=java -jar /opt/p.jar --vocab {vocab}//env:LLAMA_CONFORMANCE_CACHE=/srv/cache/a")
    assert specs[1].startswith("3*ssh=") and specs[2] == "1*popen"
    assert tx_specs([Host("a")], Layout(remote_python="~/venv/bin/python"), {}, {})[1].count("python=venv/bin/python")


def test_specs_refuse_what_execnet_cannot_carry_and_this_machines_paths():
    with pytest.raises(HostsError, match="holds '//'"):
        tx_specs([Host("a")], Layout(), {"PORT": "curl http://x/{vocab}"}, {})
    with pytest.raises(HostsError, match="LLAMA_CPP_DIR"):
        forwarded_env({"LLAMA_CPP_DIR": "/src/llama.cpp", "PORT": "harness"})
    env = forwarded_env({"BUDGET": "5m", "CONFORMANCE_SEED": "3", "HOME": "/root", "PYTEST_XDIST_WORKER": "gw0"})
    assert env == {"CONFORMANCE_SEED": "3", "BUDGET": "5m"}  # BUDGET: each worker's share is of all hosts' workers


def test_run_hosts_refuses_pytest_arguments_that_are_local_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "test_mine.py").write_text("")
    args = argparse.Namespace(hosts=["hostA"], remote_dir=".llama-conformance", remote_cache=None,
                              remote_python=None, ssh_config=None, pytest_args=["test_mine.py"])
    with pytest.raises(HostsUnready, match="names a file of this machine"):
        launch(args, {})
    assert not any(a.startswith("/") or a == "." for a in SUITE_ARGS if a != "--config-file=/dev/null"
                   and a != "--rootdir=/dev")


def test_a_host_is_refused_for_another_version_pin_or_a_missing_build():
    here = {"version": "0.1.0", "digest": "ab", "commit": "c1", "pin": "p1"}
    ok = dict(here, build_error=None, vocab_problems=[])
    assert problem(ok, here) is None
    assert "runs llama-tokenizer-conformance 0.0.9" in problem(dict(ok, version="0.0.9", digest="x"), here)
    assert "its pin is p0" in problem(dict(ok, commit="c0", pin="p0"), here)
    assert "not ready" in problem(dict(ok, build_error="the llama.cpp reference for pin p1 is not built"), here)
    assert "exit 255" in problem({"error": "`ssh hostB ...` failed (exit 255): Connection refused"}, here)


@pytest.mark.parametrize("nodeid, cell", [
    ("test_encode.py::test_encode[llama-spm-add_parse]", ("llama-spm", "add_parse", "encode")),
    ("test_decode.py::test_decode[gpt-2-plain]", ("gpt-2", "plain", "decode")),
    ("test_known.py::test_known[deepseek-coder-parse]", ("deepseek-coder", "parse", "known")),
    ("test_pieces.py::test_pieces[bert-bge-parse]", ("bert-bge", "parse", "piece")),
    ("test_crosscheck.py::test_crosscheck[qwen2-add]", ("qwen2", "add", "crosscheck")),
    ("test_golden.py::test_golden[command-r]", ("command-r", "plain", "golden")),
])
def test_a_node_id_names_its_cell_as_the_tallies_do(nodeid, cell):
    assert cell_of_nodeid(nodeid) == cell


# What a worker's checks read from the environment, and why each is not forwarded as it is.
NOT_FORWARDED = {
    "LLAMA_CPP_DIR": "this machine's files: refused (HOST_LOCAL_ENV)",
    "LLAMA_CONFORMANCE_BUILD": "this machine's files: refused (HOST_LOCAL_ENV)",
    "LLAMA_CONFORMANCE_VOCABS": "this machine's files: refused (HOST_LOCAL_ENV)",
    "LLAMA_CONFORMANCE_CACHE": "each host's own (--remote-cache)",
    "XDG_CACHE_HOME": "each host's own",
    "PYTEST_XDIST_WORKER": "xdist sets it on each worker",
    "PYTEST_XDIST_WORKER_COUNT": "xdist sets it on each worker",
    "LLAMA_CONFORMANCE_REPLAY": "the controller's store, sent in workerinput (harness.conformance.replaying)",
    "LLAMA_CONFORMANCE_REPRODUCE": "read by the controller only (run.reproduce)",
    "SOURCE": "fetch's, on the host by prepare",
    "LLAMA_CONFORMANCE_GITHUB_RAW": "fetch's, on the host by prepare",
    "LLAMA_CONFORMANCE_GITHUB_API": "fetch's, on the host by prepare",
}


def test_every_option_a_worker_reads_from_the_environment_reaches_the_hosts():
    """A run option a check reads that --hosts does not forward makes run --hosts differ from
    run (LENGTH_SCALING did: the hosts timed scaling runs the local run left out)."""
    import re
    from pathlib import Path
    from harness.remote.hosts import FORWARDED_ENV
    root = Path(__file__).resolve().parents[1]
    read = set()
    for sub in ("harness/conformance", "harness/engine", "harness/inputs", "harness/protocol", "harness/reports",
                "harness/diagnosis", "harness/tokenizer", "reference"):
        for path in (root / sub).rglob("*.py"):
            read |= set(re.findall(r"environ(?:\.get\(|\[)\"([A-Z_]+)\"", path.read_text(encoding="utf-8")))
    assert read - set(FORWARDED_ENV) - set(NOT_FORWARDED) == set()
    assert "LENGTH_SCALING" in FORWARDED_ENV
