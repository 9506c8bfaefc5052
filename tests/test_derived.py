"""Derived vocabs (harness/inputs/derived): the catalogue is the pin's, builds are
deterministic and cached, ``VOCABS`` selects them, and a few cheap ones run the real suite
(harness tokenizer vs llama.cpp, every check) with 0 divergences.

The full set is ``make conformance VOCABS=all`` (a nightly: README, Derived vocabs).
"""

from __future__ import annotations

import json

import pytest

from harness.errors import HarnessError
from harness.inputs import derived as D
from harness.inputs.derived.cache import build
from harness.inputs.derived.catalogue import source_names
from harness.tokenizer import pins

from tests.support.suite import run_suite, suite_node

pytest_plugins = ["pytester"]


def _tree():
    from reference import lock
    from reference.sources import make_source
    return make_source(lock.load()).tree()


def test_catalogue_is_every_pre_name_and_model_of_the_pins_source():
    from reference.pin import pre_names
    pres, models = source_names(_tree())
    assert set(pres) == pre_names(_tree())[1] and "deepseek-v3" in pres and "kimi-k2" in pres
    specs = D.specs()
    assert {k for k, s in specs.items() if s.kind == "pre"} == {f"derived:{p}" for p in pres}
    types = {k for k, s in specs.items() if s.kind == "vocab_type"}
    want = {"derived:rwkv", "derived:plamo2", "derived:hybriddna"} | ({"derived:test"} if pins.has("vocab_type_test") else set())
    assert types == want and ("test" in models) == pins.has("vocab_type_test")
    assert specs["derived:gemma4"].base == "gemma-4" and specs["derived:deepseek-v3"].base == "gpt-2"


def test_build_is_deterministic_hashed_and_cached(tmp_path):
    from reference import lock
    from reference.paths import vocabs_dir
    pin = lock.load()
    base = vocabs_dir(pin.name) / "ggml-vocab-gpt-2.gguf"
    spec = D.spec("derived:deepseek-v3")
    p1, r1 = build(spec, pin.name, base, "x", tmp_path / "a")
    p2, r2 = build(spec, pin.name, base, "x", tmp_path / "b")
    assert p1.read_bytes() == p2.read_bytes() and r1["sha256"] == r2["sha256"]
    assert r1["derived_from"] == "gpt-2" and "tokenizer.ggml.pre = 'deepseek-v3'" in r1["description"]
    mtime = p1.stat().st_mtime_ns
    assert build(spec, pin.name, base, "x", tmp_path / "a")[0].stat().st_mtime_ns == mtime  # cached
    p1.write_bytes(p1.read_bytes()[:-1] + b"?")  # a file that no longer matches its record is rebuilt
    assert build(spec, pin.name, base, "x", tmp_path / "a")[1]["sha256"] == r1["sha256"]
    from harness.tokenizer import Tokenizer
    assert Tokenizer.from_gguf(p1).vocab.pre_type == "DEEPSEEK3_LLM"


def test_vocabs_words_expand_and_unknown_names_fail():
    from reference.vocabs import names
    pre = [k for k, s in D.specs().items() if s.kind == "pre"]
    assert D.expand(["all-pre"]) == pre
    assert D.expand(["all"]) == names() + list(D.specs())
    assert D.expand(["qwen2", "derived:kimi-k2", "qwen2"]) == ["qwen2", "derived:kimi-k2"]
    with pytest.raises(HarnessError, match="unknown derived vocab 'derived:nope'.*all-pre"):
        D.expand(["derived:nope"])
    assert D.label_of("derived:a.x-4.0") == "derived:a.x-4.0"


def test_variants_are_pinned_files_with_one_flag_or_added_tokens():
    """derived:<pinned>+<flag>: the flag set as a real model's GGUF sets it, everything else
    the base's, so llama.cpp takes the paths no pinned file's metadata takes."""
    from harness.inputs.derived.catalogue import VARIANTS
    from harness.tokenizer.gguf import GGUFReader
    specs = D.specs()
    for key, (base, _, _) in VARIANTS.items():
        s = specs[f"derived:{key}"]
        assert s.kind == "variant" and s.base == base
    spm, base = GGUFReader(D.path("derived:llama-spm+add_eos")), GGUFReader(D.resolve("llama-spm"))
    assert spm.get("tokenizer.ggml.add_eos_token") is True and base.get("tokenizer.ggml.add_eos_token") is False
    assert spm.get("tokenizer.ggml.tokens") == base.get("tokenizer.ggml.tokens")
    ugm = GGUFReader(D.path("derived:nomic-bert-moe+user_defined"))
    n = len(GGUFReader(D.resolve("nomic-bert-moe")).get("tokenizer.ggml.tokens"))
    assert [bytes(t) for t in ugm.get("tokenizer.ggml.tokens")[n:]][:2] == [b"<extra_id_0>", b"<extra_id_1>"]
    assert list(ugm.get("tokenizer.ggml.token_type")[n:]) == [4] * 4 and len(ugm.get("tokenizer.ggml.scores")) == n + 4
    assert "added tokens" in D.describe("derived:nomic-bert-moe+user_defined")["description"]


CHEAP = "derived:test derived:rwkv derived:kimi-k2 derived:llama-spm+add_eos"


@pytest.mark.reference
def test_cheap_derived_vocabs_run_the_suite_with_zero_divergences(pytester, monkeypatch):
    """The harness tokenizer on three derived vocabs (the TEST hash type, RWKV, the Kimi-K2
    splitter), every check and flag: no divergence, and every report says they are derived."""
    nodes = [suite_node(c, v, f) for v in CHEAP.split() if v != "derived:test" or pins.has("vocab_type_test")
             for c, f in (("encode", "plain"), ("encode", "add_parse"), ("decode", "add"), ("piece", "parse"))]
    result, report = run_suite(pytester, monkeypatch, "harness", CHEAP, nodes)
    assert report["totals"]["divergences"] == 0 and report["totals"]["errors"] == 0, result.stdout.str()[-3000:]
    assert {c["vocab"] for c in report["cells"]} == {n.split("[")[1].rsplit("-", 1)[0] for n in nodes}
    assert all(c["cases"] > 0 and c["outcome"] == "pass" for c in report["cells"]), report["cells"]
    derived = report["run"]["derived"]
    assert derived["derived:rwkv"]["derived_from"] == "gpt-2" and derived["derived:kimi-k2"]["kind"] == "pre"
    out = result.stdout.str()
    assert "derived vocabs: 4" in out or "derived vocabs: 3" in out
    assert "derived:kimi-k2  derived from gpt-2 (pre)" in out
    junit = (pytester.path / "reports" / "conformance-junit.xml").read_text()
    assert 'name="conformance_derived_from"' in junit
    html = (pytester.path / "reports" / "conformance.html").read_text()
    assert "derived:rwkv (derived)" in html
    json.dumps(report)
