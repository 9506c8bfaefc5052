"""The benchmark's corpus is fixed forever, and both sides see the same bytes."""

from __future__ import annotations

import json

from harness.inputs.corpus import CORPUS_BYTES, CORPUS_SHA256, chunks, corpus, sha256


def test_corpus_is_the_pinned_bytes():
    text = corpus()
    assert len(text.encode()) >= CORPUS_BYTES
    assert sha256(text) == CORPUS_SHA256, "the corpus generator changed: bench figures are no longer comparable"


def test_corpus_mixes_every_family():
    text = corpus(200_000)
    for needle in ("def ", "汉字", "Привет", "مرحبا", "नमस्ते", "👨‍👩‍👧‍👦", "\u3000", "<|im_end|>", "\r\n"):
        assert needle in text, needle
    assert any(ch.isdigit() for ch in text)


def test_chunks_rejoin_exactly():
    text = corpus(300_000)
    parts = chunks(text)
    assert "".join(parts) == text
    assert len(parts) > 10 and max(len(p.encode()) for p in parts) < 64_000


def test_conformance_throughput_is_quoted(tmp_path):
    from harness.bench.run import conformance_throughput, throughput_line
    path = tmp_path / "conformance.json"
    assert "run `make conformance` first" in throughput_line(conformance_throughput(path), path)
    path.write_text(json.dumps({"divergences": [], "throughput": {
        "cases": 1000, "wall_s": 10.0, "n_workers": 2, "cases_per_s_per_worker": 50.0,
        "workers": {"gw0": {"cases": 500, "seconds": 4.0, "cases_per_s": 125.0}}}}))
    line = throughput_line(conformance_throughput(path), path)
    assert "1000 cases" in line and "50 cases/s per worker" in line and "gw0 125/s" in line


def test_bench_runs_end_to_end(tmp_path):
    """A small run of the real thing: both tokenizers, same ids, a table and a JSON report."""
    from harness.bench import run as bench
    from harness.conformance.needs import require
    from reference.vocabs import vocab_path
    require(vocab_path, "gpt-2")
    out = tmp_path / "bench.json"
    assert bench.main(["--vocabs", "gpt-2", "llama-spm", "--bytes", "20000", "--repeat", "1",
                       "--out", str(out), "--conformance-report", str(tmp_path / "none.json"),
                       "--engine-vocab", "gpt-2", "--engine-texts", "200"]) == 0
    report = json.loads(out.read_text())
    rows = report["rows"]
    # The engine table: every port checked every text, found nothing, next to the oracle's rate.
    engine = report["engine"]
    assert sorted(engine["ports"]) == ["harness", "harness serve", "oracle itself"]
    assert all(p["cases"] == 200 and p["divergent"] == 0 and p["port_errors"] == 0 for p in engine["ports"].values())
    assert engine["oracle_encode_per_s"] > 0 and engine["hypothesis_cases_per_s"] > 0
    assert [r["vocab"] for r in rows] == ["gpt-2", "llama-spm"]
    assert all(r["ids_identical"] for r in rows)
    assert all(r["ratios"]["encode_cold"] > 0 and r["ratios"]["load"] > 0 for r in rows)
    # Fresh (each text with the piece caches emptied), against llama.cpp in the same run, is
    # printed first, before cold and warm.
    assert all(r["ratios"]["encode_fresh"] > 0 and r["encode_MBps"]["harness_fresh"] > 0 for r in rows)
    head = bench.table(rows).splitlines()[0]
    assert head.index("fresh x") < head.index("cold x") < head.index("warm x")
    # Peak RSS of each side in its own child: real figures, the interpreter included.
    assert all(10 < r["peak_rss_MB"][side] < 4096 for r in rows for side in ("harness", "llama.cpp"))
