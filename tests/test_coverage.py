"""``make coverage``'s bookkeeping: which lines count, how they are summed, and which
uncovered lines are declared unreachable (the instrumented build itself runs only in
``make coverage``)."""

from __future__ import annotations

import pytest

from harness import coverage as C
from harness.inputs import strategies
from harness.errors import HarnessError


def test_only_tokenizer_functions_of_llama_vocab_count():
    assert C.in_scope("src/llama-vocab.cpp", "llama_vocab::impl::tokenizer_st_partition(std::forward_list<fragment_buffer_variant>&, bool) const")
    assert C.in_scope("src/llama-vocab.cpp", "llama_vocab::impl::token_to_piece(int, char*, int, int, bool) const")
    assert C.in_scope("src/llama-vocab.cpp", "llm_tokenizer_spm_session::tokenize(std::string const&, std::vector<int>&)")
    assert not C.in_scope("src/llama-vocab.cpp", "llama_vocab::impl::load(llama_model_loader&, LLM_KV const&)")
    assert not C.in_scope("src/llama-vocab.cpp", "llama_vocab::impl::print_info() const")
    assert C.in_scope("src/unicode.cpp", "unicode_cpt_flags_from_cpt(unsigned int)")


def test_summary_counts_lines_and_branches():
    lines = {("a", 1): (3, [1, 0], "f"), ("a", 2): (0, [0, 0], "f"), ("b", 7): (1, [], "g")}
    assert C.summarise(lines) == {"lines_covered": 2, "lines_total": 3,
                                  "branches_covered": 1, "branches_total": 4}


def test_unreachable_lines_name_the_missing_vocab_type_or_pre_type():
    lines = {("src/llama-vocab.cpp", 10): (0, [], "llm_tokenizer_plamo2_session::encode(...)"),
             ("src/llama-vocab.cpp", 11): (0, [], "llm_tokenizer_bpe_session::tokenize(...)"),
             ("src/unicode.cpp", 5): (0, [], "unicode_regex_split_custom_kimi_k2(std::string const&)"),
             ("src/unicode.cpp", 6): (0, [], "unicode_regex_split_custom_qwen2(std::string const&)"),
             ("src/unicode.cpp", 7): (4, [], "unicode_regex_split_custom_afmoe(std::string const&)")}
    out = C.unreachable(lines, models={"gpt2", "llama"}, pre_types={"QWEN2"})
    assert out == [{"file": "src/llama-vocab.cpp", "line": 10, "reason": "vocab type plamo2: no pinned or derived vocab"},
                   {"file": "src/unicode.cpp", "line": 5, "reason": "unicode_regex_split_custom_kimi_k2: "
                                                                   "used by pre-type KIMI_K2, no pinned or derived vocab"}]


def test_splitters_map_to_the_pre_types_that_select_them():
    users = C.splitter_pre_types()
    assert "TINY_AYA" in users["unicode_regex_split_custom_afmoe"] and "AFMOE" in users["unicode_regex_split_custom_afmoe"]
    assert "GEMMA4" in users["unicode_regex_split_custom_newlines"]
    assert all(users.values()), users


def test_phases_cover_every_check_and_strategy_family():
    names = [p[0] for p in C.phases(None)]
    assert names[:2] == ["golden", "crosscheck"] and names[-2:] == ["known_examples", "derived"]
    assert C.phases(["derived"])[0][2] == {"VOCABS": "all-derived"}
    assert {f"strategy:{f}" for f in strategies.FRAGMENT_FAMILIES} <= set(names)
    assert [p[0] for p in C.phases(["unicode_drift"])] == ["strategy:unicode_drift"]


def test_unknown_strategy_family_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("STRATEGY_FAMILIES", "ascii_words,nope")
    with pytest.raises(HarnessError, match=r"unknown families \['nope'\]; known: ascii_words"):
        strategies._selected_fragments()
    monkeypatch.setenv("STRATEGY_FAMILIES", "vocab:merge_ties")
    assert strategies._selected_fragments() is not None


def _pin_sources():
    from reference import lock
    from reference.sources import make_source
    from pathlib import Path
    tree = Path(make_source(lock.load()).tree())
    return tree, {f: (tree / f).read_text(encoding="utf-8", errors="replace").splitlines() for f in C.FILES}


def test_every_reason_for_an_unreached_line_still_matches_the_pins_code():
    """A WHY_UNREACHED entry whose pattern no longer matches any line of the pin leaves its
    lines as "no reason found": the table cannot go stale silently when a pin moves."""
    import re
    _, sources = _pin_sources()
    text = "\n".join(sources["src/llama-vocab.cpp"] + sources["src/unicode.cpp"])
    for prefix, pattern, _reason in C.WHY_UNREACHED:
        assert prefix.split("(")[0].split("::")[-1] in text, prefix
        assert re.search(pattern, text, re.M), (prefix, pattern)


def test_uncovered_reasons_name_dead_code_cleanup_lines_and_bad_utf8():
    tree, sources = _pin_sources()
    uni = sources["src/unicode.cpp"]
    dead = next(i for i, t in enumerate(uni, 1) if "unicode_cpts_to_utf8(const std::vector" in t)
    assert C.uncovered_reason(uni, dead + 1, "unicode_cpts_to_utf8(std::vector<unsigned int> const&)",
                              entered=False, sources_dir=tree).startswith("dead code")
    # a function that is called is not dead, even with a line left unreached
    live = next(i for i, t in enumerate(uni, 1) if t.startswith("std::string unicode_cpt_to_utf8("))
    assert not C.uncovered_reason(uni, live + 1, "unicode_cpt_to_utf8[abi:cxx11](unsigned int)",
                                  entered=False, sources_dir=tree).startswith("dead code")
    bad = next(i for i, t in enumerate(uni, 1) if 'throw std::invalid_argument("invalid character")' in t)
    assert "valid UTF-8" in C.uncovered_reason(uni, bad, "unicode_cpt_from_utf8(std::string const&, unsigned long&)")
    # a closing brace counts as cleanup only in a function that ran; otherwise nothing explains it
    assert C.uncovered_reason(["void f() {", "  g();", "}"], 3, "f()", entered=True).startswith("exception cleanup")
    assert C.uncovered_reason(["void f() {", "  g();", "}"], 3, "f()", entered=False).startswith("no reason found")
    assert C.uncovered_reason(["x = 1;", "  y();"], 2, "h()").startswith("no reason found")
