"""Generation alone finds every self-test mutant: the suite runs with
KNOWN_EXAMPLES=0 (no fixed @example texts), in process, on the mutant's vocab and
one flag combination and a fixed seed, under the ``ci`` profile (make test) and the
``conformance`` profile (the default budget of ``make conformance``; make test-slow). The
shrunk texts are printed (``-s``).

Also: the Unicode-drift classes are what the tables say, and the vocab-derived
families hold what their names promise.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
import regex
from hypothesis import find, settings

import harness.conformance.suite
import tests.ports.mutants
from harness.conformance.needs import require
from harness.inputs import drift, strategies, vocabgen
from harness.tokenizer import unicode as U
from tests.support.suite import mutant_port, run_suite

pytest_plugins = ["pytester"]
SUITE = Path(harness.conformance.suite.__file__).parent
# mutant -> the flag combination where its bug shows (as in tests/test_suite_ports.py)
MUTANT_FLAGS = {"bos_qwen2": "add", "lstrip_ignored": "parse"}


# --- Unicode drift -------------------------------------------------------------------------
def _members(name):
    return [cp for a, b in drift.CLASSES[name] for cp in range(a, b + 1)]


def test_drift_classes_agree_with_the_tables_they_come_from():
    # Python 3.11's own unicodedata is here at test time: recompute its classes from scratch.
    assert drift.VERSIONS["py311"] == unicodedata.unidata_version == "14.0.0"
    for name in [n for n in drift.CLASSES if n.startswith("unassigned_in_py311:")]:
        for cp in _members(name):
            assert unicodedata.category(chr(cp)) == "Cn" and not U.cpt_flags(cp) & U.UNDEFINED
    assert [chr(c) for c in _members("js_s")] == ["\x85", "\ufeff"]
    assert _members("python_re_s") == [0x1C, 0x1D, 0x1E, 0x1F]
    for cp in _members("assigned_only_in_ud16.0:P"):
        assert U.cpt_flags(cp) == U.UNDEFINED
    # The regex module's own classes agree with the class it was put in.
    for cat in "LMNPS":
        members = _members(f"assigned_only_in_regex:{cat}=assigned_only_in_ud18.0:{cat}")
        assert all(regex.match(r"\p{%s}" % cat, chr(cp)) for cp in members[::37])


# Whatever profile or example database the session has: find() must search and shrink in full.
_FIND = settings(database=None, max_examples=2000, deadline=None)


# One test per class (they are independent, and each search takes seconds: xdist spreads them).
@pytest.mark.parametrize("name", drift.ORDER)
def test_every_drift_class_is_drawn_and_shrinks_to_the_bare_character(name):
    first = drift.nth(name, 0)
    members = set(map(chr, _members(name)))
    # A member of the class, in any context, is found and shrinks to one bare member (the
    # first of the smallest class that shares it, when classes overlap).
    found = find(drift.drift_in_context, lambda s, m=members: any(c in m for c in s), settings=_FIND)
    assert len(found) == 1 and found in members, (name, found)
    assert first in members
    assert strategies.FAMILIES["unicode_drift"] is drift.drift_in_context


def test_drift_characters_sit_in_splitter_contexts():
    texts = {drift.CONTEXTS[k].replace("{c}", "X") for k in range(len(drift.CONTEXTS))}
    assert {"X", " X", "1X2", "aXb", "'X", "123X456"} <= texts


# --- the known texts the generators hold ----------------------------------------------------------
#: Known texts (harness/inputs/known.py) that are string literals of the generators: two
#: whitespace runs every generator of line breaks makes (CRLF, a blank line) and three code
#: snippets of strategies.punctuation_code. The README (generation alone) names them.
IN_THE_GENERATORS = {"\r\n", "\n\n", "->", "x != y and a.b == c", "x ~é ~~"}


def test_the_known_texts_the_generators_hold_are_the_ones_the_readme_names():
    """KNOWN_EXAMPLES=0 leaves the known check out, not every known text: these five are
    drawn by the generators as they are. Any other known text that becomes a literal of a
    generator module fails here, so the README's list cannot fall behind."""
    import ast
    import inspect

    from harness.inputs import known
    texts = {t for t, _ in known.KNOWN_TEXTS if t}
    held = set()
    for module in (strategies, vocabgen, drift):
        tree = ast.parse(inspect.getsource(module))
        held |= texts & {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert held == IN_THE_GENERATORS


# --- vocab-derived families -------------------------------------------------------------------
@pytest.fixture(scope="module")
def llama_bpe():
    from reference.vocabs import vocab_path
    return require(vocab_path, "llama-bpe")


@pytest.mark.reference
def test_unmerged_tokens_are_tokens_a_merge_loop_does_not_make(llama_bpe):
    fam = vocabgen.compute(llama_bpe)
    assert " Việt" in fam["unmerged_tokens"]
    assert len(fam["unmerged_tokens"][0]) <= len(fam["unmerged_tokens"][-1])
    # a+a+a or a+b+a: the text starts and ends with the same symbol's text.
    assert all(len(t) >= 2 and t[0] == t[-1] for t in fam["merge_ties"][:200])
    assert all(vocabgen._odd(t) for t in fam["odd_tokens"][:200])


def test_special_overlaps_and_byte_fallback_from_a_small_vocab():
    out = vocabgen._special_overlaps(["<s>", "<s>x", "ab", "bc"], ["<s>"], ["a<s>b", "zz"])
    assert {"<s>", "<s>x"[:-1], "<s><s>x", "abc", "a<s>b"} <= set(out)
    # Characters that are tokens are not byte-fallback texts; the others come in three contexts.
    assert "\u00ad" not in vocabgen._byte_fallback({chr(c) for c in range(0x80, 0x3400)})
    assert {"\u00ad", " \u00ad", "a\u00adb"} <= set(vocabgen._byte_fallback(set()))


def test_tag_pairs_wrap_contents_in_each_tag_whose_closing_tag_is_a_token():
    out = vocabgen._tag_pairs({"<dna>", "</dna>", "<think>", "<s>", "<a b>"})
    assert "<dna>ACGTAC</dna>" in out and "<dna>ACGTAC" in out and "<dna></dna>" in out
    assert not any(t.startswith(("<think>", "<s>", "<a b>")) for t in out)  # no closing tag, not a tag


def test_vocab_text_marker_materialises_and_every_special_is_drawable():
    vt = strategies.VocabTexts(("a",), tuple(f"<{i}>" for i in range(2400)),
                               {"merge_ties": ("aaa", "abab")})
    r = strategies.Recipe((strategies.VocabText("merge_ties", 3), strategies.VocabText("odd_tokens", 0),
                           strategies.SpecialText(2399)))
    assert strategies.materialise(r, vt) == "abab<2399>"
    # Indexes reach far beyond 2,400 (taken mod the count): no special is out of reach.
    assert find(strategies._special, lambda p: p.index >= 2**16, settings=_FIND).index == 2**16


# --- the suite, generation alone ----------------------------------------------------------------
def _run_suite(pytester, monkeypatch, port, vocabs, nodes, profile):
    return run_suite(pytester, monkeypatch, port, vocabs, nodes, profile, KNOWN_EXAMPLES="0")


#: make test runs each mutant under the ci profile (200 fast-phase texts and 30 Hypothesis
#: examples: generation alone catches every mutant with that much too), make test-slow under
#: conformance, make conformance's default budget (20 times as many texts, 4 times the time).
PROFILES = [pytest.param("ci", id="ci"), pytest.param("conformance", id="conformance", marks=pytest.mark.slow)]


@pytest.mark.reference
@pytest.mark.parametrize("mutant", sorted(tests.ports.mutants.MUTANTS))
@pytest.mark.parametrize("profile", PROFILES)
def test_generation_alone_catches_mutant(pytester, monkeypatch, profile, mutant):
    from tests.ports.mutants import mutant_vocab
    vocab = require(mutant_vocab, mutant)
    vid = Path(vocab).stem.removeprefix("ggml-vocab-") if vocab.endswith(".gguf") else vocab
    test = "decode" if mutant == "decode_drops_leading_space" else "encode"
    node = f"{SUITE / f'test_{test}.py'}::test_{test}[{vid}-{MUTANT_FLAGS.get(mutant, 'plain')}]"
    result, report = _run_suite(pytester, monkeypatch, mutant_port(mutant), vocab, [node], profile)
    assert result.ret == 1, result.stdout.str()[-3000:]
    texts = [d["text"] or d["reference_ids"] for d in report["divergences"]]
    print(f"{mutant}: caught by generation alone with {texts!r}")
    assert texts and min(len(t) for t in texts) <= 12, texts
