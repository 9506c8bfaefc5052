"""make pin-diff and PORT=llama.cpp@<pin>: llama.cpp against llama.cpp across pins."""

from __future__ import annotations

import pytest

from harness import pindiff as D
from harness.reports.pindiff import grouped


def test_shrink_keeps_a_difference_and_drops_the_rest():
    assert D.shrink("Hello ~~ world ~ and more", lambda t: "~~" in t) == "~~"
    assert D.shrink("abc", lambda t: False) == "abc"


def test_same_compares_ids_exactly_and_failures_by_kind():
    assert D.same([1, 2], [1, 2]) and not D.same([1, 2], [1, 3])
    assert D.same(("error", "a.gguf: x"), ("error", "b.gguf: x")) and not D.same(("crash", ""), [1])


def test_grouping_merges_flag_combinations_with_the_same_change():
    d = dict(vocab="v", text="~", from_ids=[1], to_ids=[2])
    groups = grouped([{**d, "add_special": False}, {**d, "add_special": True}, {**d, "text": "x"}])
    assert [len(g) for g in groups] == [2, 1]


@pytest.mark.pins
def test_pin_diff_finds_the_tilde_change_and_nothing_on_qwen2():
    from harness.conformance.needs import require
    from reference.build import artifacts

    for pin in ("4df29be", "0c1e570"):
        require(lambda: artifacts(pin=pin))
    r = D.pin_diff("4df29be", "0c1e570", budget=40, seed=1, only=["qwen2", "gpt-2+pre=deepseek-v3"])
    by = {v["vocab"]: v for v in r["vocabs"]}
    assert by["qwen2"]["differing"] == 0 and by["qwen2"]["cases"] > 0
    assert by["gpt-2+pre=deepseek-v3"]["differing"] > 0
    shrunk = {d["text"] for d in r["differences"]}
    assert shrunk and all("~" in t and len(t) <= 4 for t in shrunk), shrunk
    assert "tilde_is_symbol" in {c["name"] for c in r["changes"]}
    assert r["static"]["pre_types_added"] == ["HY_V4", "SPARK2_5", "UFAKZEKA"]


@pytest.mark.pins
def test_another_pin_is_a_port(tmp_path):
    """PORT=llama.cpp@4df29be: the old pin's build, out of process, through the port protocol."""
    from harness.ports import open_port
    from harness.tokenizer.gguf import GGUFValueType as T
    from harness.tokenizer.gguf.writer import rewrite_metadata
    from harness.conformance.needs import require
    from reference.build import artifacts
    from reference.inproc import InProcessReference
    from reference.vocabs import vocab_path

    require(lambda: artifacts(pin="4df29be"))
    path = tmp_path / "ds3.gguf"
    rewrite_metadata(require(vocab_path, "gpt-2"), path, {"tokenizer.ggml.pre": (T.STRING, "deepseek-v3")})
    old = open_port("llama.cpp@4df29be", path, reference=None)
    try:
        assert old.encode(" ~") == [220, 93]  # see docs/pin-diff-4df29be-0c1e570.md
        assert old.encode("hello world") == require(InProcessReference.load, path).encode("hello world")
    finally:
        old.close()


@pytest.mark.reference
def test_texts_pin_diff_does_not_send_are_counted_and_listed_with_the_reason(tmp_path):
    """A derived WHITESPACE vocab: llama.cpp aborts on a whitespace gap, so those texts are not
    sent; each is counted and listed with why (the pin against itself: only one build needed)."""
    from harness.conformance.needs import require
    from harness.reports.pindiff import render_md
    from harness.tokenizer.gguf import GGUFValueType as T
    from harness.tokenizer.gguf.writer import rewrite_metadata
    from reference.build import artifacts
    from reference.lock import load
    from reference.vocabs import vocab_path

    require(artifacts)
    path = tmp_path / "gpt2-pre-whitespace.gguf"
    rewrite_metadata(require(vocab_path, "gpt-2"), path, {"tokenizer.ggml.pre": (T.STRING, "whitespace")})
    target = D.Target("gpt-2+pre=whitespace", "derived", path, path, "whitespace")
    pin = load().name
    outcome, diffs = D.run_target(target, pin, pin, {"golden": ["single", "  two spaces", "  two spaces"]})
    assert (outcome.cases, outcome.differing, diffs) == (4, 0, [])   # "single" under 4 flag combinations
    [skipped] = outcome.skipped
    assert (skipped["text"], skipped["source"]) == ("  two spaces", "golden")
    assert "predicts llama.cpp aborts on it (not sent)" in skipped["reason"]
    report = {"from": {"name": pin, "commit": "c", "sdist": None}, "to": {"name": pin, "commit": "c", "sdist": None,
              "tree_sha256": None}, "static": {"files": [], "pre_types_added": [], "pre_types_removed": [],
              "pre_names_added": [], "pre_names_removed": [], "tokenizer_sources_changed": [],
              "unicode_data_changed": False}, "texts": {"golden": 3}, "seconds": 1, "cases": 4,
              "vocabs": [{"vocab": target.label, "cases": 4, "differing": 0, "skipped": 1}], "differences": [],
              "skipped": outcome.skipped}
    md = render_md(report)
    assert "1 text(s) skipped" in md and "## Texts skipped (1)" in md and "'  two spaces'" in md
