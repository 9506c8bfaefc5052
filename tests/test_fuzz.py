"""The GGUF fuzzer: a short seeded slice must be clean, and the judge must catch each kind of fault.

``make fuzz FUZZ_S=600`` is the long run; this is the slice ``make test`` runs.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from collections import Counter

import pytest

from harness.fuzz import run
from harness.fuzz.mutations import CLASSES, mutate
from harness.fuzz.seeds import SEEDS
from harness.conformance.needs import require
from tests.support.vocabs import with_type


def _case(doc_bytes: bytes) -> str:
    with tempfile.TemporaryDirectory() as d:
        return run.run_case(doc_bytes, d)[0]


@pytest.mark.reference
def test_a_seeded_slice_has_no_failures():
    require(run.warm_up)
    counts = run.fuzz(600, seed=14, max_cases=60)
    total = sum(counts.values(), Counter())
    assert total["cases"] == 60 and set(counts) == set(CLASSES)
    assert not {k: total[k] for k in run.FAILURES if total[k]}, "\n" + run.table(counts)
    assert total["refused"] > 0 and total["equal"] > 0  # both verdicts are exercised


@pytest.mark.reference
def test_an_injected_load_bug_is_a_mismatch(monkeypatch):
    """A harness that forgets one of llama.cpp's load-time refusals is caught."""
    require(run.warm_up)
    data = with_type("wpm", 7, 6).to_bytes()  # a BYTE token in a WPM vocab: llama.cpp aborts
    assert _case(data) == "refused"
    import harness.tokenizer.vocab
    monkeypatch.setattr(harness.tokenizer.vocab._Loader, "check_pieces", lambda self: None)
    assert _case(data) == "mismatch"


def _fake_llama(send_load: str = "ok", abort: bool = False):
    def side(path, send):
        if send_load == "refused":
            send({"load": "refused", "why": "x"})
            return
        send({"load": "ok", "n_vocab": 0})
        if abort:
            os.abort()
        send({"probes": []})
    return side


def _fake_harness(fn):
    def side(path, send):
        send({"load": "ok", "n_vocab": 0})
        fn()
        send({"probes": []})
    return side


@pytest.mark.parametrize("behaviour, outcome", [
    (lambda: None, "equal"),
    (lambda: time.sleep(30), "hang"),
    (lambda: os.abort(), "crash"),
    (lambda: bytearray(3 << 30), "memory"),
    (lambda: {}["missing"], "foreign"),
])
def test_the_judge_names_each_harness_fault(monkeypatch, behaviour, outcome):
    monkeypatch.setattr(run, "llama_side", _fake_llama())
    monkeypatch.setattr(run, "TIMEOUT", 2.0)

    def side(path, send):
        try:
            _fake_harness(behaviour)(path, send)
        except MemoryError:
            send({"memory": "probe"})
        except KeyError as e:
            send({"foreign": repr(e), "stage": "probe"})
    monkeypatch.setattr(run, "harness_side", side)
    assert _case(b"") == outcome


def test_a_llama_cpp_crash_is_llama_cpp_s(monkeypatch):
    monkeypatch.setattr(run, "harness_side", _fake_harness(lambda: None))
    monkeypatch.setattr(run, "llama_side", _fake_llama(abort=True))
    assert _case(b"") == "llama_crash"  # after loading: not counted against the harness
    monkeypatch.setattr(run, "llama_side", lambda path, send: os.abort())
    assert _case(b"") == "mismatch"  # an abort while loading is a refusal the harness must match
    monkeypatch.setattr(run, "llama_side", _fake_llama("refused"))
    assert _case(b"") == "mismatch"


def test_every_mutation_class_yields_bytes_for_every_seed():
    rng = random.Random(3)
    for cls in CLASSES:
        for name, seed in SEEDS.items():
            for _ in range(20):
                assert isinstance(mutate(cls, seed(), rng), bytes), (cls, name)


def test_table_has_a_row_per_class_and_a_total():
    text = run.table({"tokens": Counter(cases=3, refused=2, equal=1)})
    assert "tokens" in text and text.splitlines()[-1].split()[:4] == ["total", "3", "2", "1"]
