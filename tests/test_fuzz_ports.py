"""The port fuzzer: a short seeded slice must be clean, and each bug it found stays fixed.

``make fuzz-ports FUZZ_S=600`` is the long run; this is the slice ``make test`` runs. Each
regression is a session of the kind that found the bug (harness/fuzz/ports.py judges it).
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from harness.fuzz import hostile, ports, report
from harness.fuzz.oracle import FAILURES
from harness.fuzz.verdict import verdict

pytestmark = pytest.mark.reference


@pytest.fixture(scope="module")
def vocabs():
    from harness.conformance.needs import require
    return require(ports.Vocabs)


def test_a_seeded_slice_has_no_defects(vocabs, tmp_path):
    counts = ports.fuzz_ports(60, seed=3, max_sessions=len(hostile.ALL_KINDS) + 10, e2e_share=0, out=tmp_path)
    total = sum(counts.values(), Counter())
    assert total["cases"] == len(hostile.ALL_KINDS) + 10 and total["played"] > 20
    assert not report.failures(total, FAILURES), "\n" + report.table(counts, ports.OUTCOMES)


# kind -> the bug its sessions found, or (deep-json, hex-bad, ids-range) a bug found reading the
# client that its sessions guard; each fixed in the engine or the client
FOUND = {
    "utf16": "the client took UTF-16 and UTF-32 answers (json.loads detects them): UTF-8 only now",
    "non-utf8": "the client took an encoded lone surrogate in an answer (json.loads' surrogatepass)",
    "deep-json": "an answer nested too deep raised RecursionError out of the client: an engine error",
    "swap": "a batch answer that disagreed and then agreed alone counted as a pass",
    "fork-child": "a child the port forked kept the pipes open and outlived the session",
    "unsupported": "a lone surrogate in an unsupported answer made the reports raise",
    "huge": "a line over the limit whose newline came in the chunk that crossed it was taken",
    "not-object": "a port that died on a divergence's own pieces was counted nowhere (and restarted mid-test)",
    "info-garbage": "a batch check whose port could not open counted one input twice",
    "stdout-before-info": "a port down mid-batch was restarted once per remaining input",
    "hex-bad": "bytes_hex with spaces between the pairs was taken (bytes.fromhex skips them)",
    "ids-range": "an id out of range was taken as an answer (a divergence, not a port error)",
}


@pytest.mark.parametrize("kind", sorted(FOUND))
def test_each_bug_the_fuzzer_found_stays_fixed(vocabs, tmp_path, kind):
    rng = random.Random(kind)
    for _ in range(6):
        _, defects, detail = ports.session(vocabs, rng, str(tmp_path), kind)
        assert not defects, (FOUND[kind], defects, detail)


def test_the_verdict_reads_the_protocol_strictly():
    v = lambda line, right, op: verdict(line, right, {"op": op}, 10, 100)
    assert v(b'{"bytes_hex": "6162"}', {"bytes_hex": "6162"}, "piece") == "same"
    assert v(b'{"bytes_hex": "61 62"}', {"bytes_hex": "6162"}, "piece") == "bad"
    assert v(b'{"bytes_hex": "C3A9"}', {"bytes_hex": "c3a9"}, "piece") == "same"
    assert v(b'{"ids": [1.0]}', {"ids": [1]}, "encode") == "bad"
    assert v(b'{"ids": [2]}', {"ids": [1]}, "encode") == "wrong"
    assert v(b'{"error": "x"}', {"n_vocab": 10}, "info") == "same"
    assert v(b" " * 101, {"ids": []}, "encode") == "bad"
