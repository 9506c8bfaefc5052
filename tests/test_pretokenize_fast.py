"""The precompiled patterns (harness.tokenizer.pretokenize.fast) split exactly like the reference loops.

The loops in harness.tokenizer.pretokenize.splitters follow llama.cpp step by step and
are checked against its output in test_pretokenize.py; here every fast
pattern must give the same words as its loop, on known texts, on generated
mixed-script text and on code points from every class of llama.cpp's table.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from harness.tokenizer import unicode as U
from harness.inputs.corpus import corpus
from harness.tokenizer.pretokenize import fast, split_words
from harness.tokenizer.pretokenize.regexes import REGEX_EXPRS
from reference.vocabs import all_inp_texts
from harness.conformance.needs import require
from tests.test_pretokenize import CASES

# every pre type with a custom splitter that has a pattern, alone or within a list of regexes
FAST_TYPES = sorted(t for t in REGEX_EXPRS if any(fast.pattern_for(e) for e in REGEX_EXPRS[t]))
# one pre type per distinct regex list: the heavy checks need not repeat aliases
DISTINCT = sorted({REGEX_EXPRS[t]: t for t in reversed(FAST_TYPES)}.values())


def mismatches(pre_type: str, texts, pat=None) -> list[tuple[str, list[str], list[str]]]:
    """(text, reference words, fast words) for each text where the two paths differ
    (``pat``: split with this single pattern instead of the pre type's fast path)."""
    out = []
    for text in texts:
        want = split_words(pre_type, text, fast=False)
        got = fast.split(pat, text) if pat is not None else split_words(pre_type, text)
        if want != got:
            out.append((text, want, got))
    return out


def test_the_common_pre_types_have_a_pattern():
    # llama3, qwen2/35, gpt2-likes and gemma4 cover most GGUFs in use: a pin move that
    # disables their patterns (fast._exact() false) must be noticed, not silently slower
    for t in ("GPT2", "LLAMA3", "QWEN2", "QWEN35", "GEMMA4", "DBRX", "OLMO"):
        assert fast.pattern(t) is not None
    for t in ("DEFAULT", "FALCON", "STARCODER", "COMMAND_R"):  # GPT2's splitter inside a list
        assert t in FAST_TYPES and fast.pattern(t) is None
    assert "KIMI_K2" not in FAST_TYPES and "DEEPSEEK_LLM" not in FAST_TYPES


@pytest.mark.parametrize("pre_type,text,words", [c for c in CASES if c[0] in FAST_TYPES])
def test_known_splits_on_both_paths(pre_type, text, words):
    assert split_words(pre_type, text) == words
    assert split_words(pre_type, text, fast=False) == words


@pytest.mark.parametrize("pre_type", DISTINCT)
def test_inp_texts_and_corpus(pre_type):
    texts = require(all_inp_texts) + corpus(200_000).splitlines(keepends=True)
    assert mismatches(pre_type, texts) == []


# Characters the splitters treat specially, and one of each class from the flag table.
_TRICKY = list("'sStTrReEvVmMlLdD \t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u3000\u200b0٣½aéЖ汉\u0301\u093f!~$"
               "\ufffd\U0001f999\U000e0001\ud800")
_ANY = st.characters(min_codepoint=0, max_codepoint=0x10FFFF)


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.one_of(st.sampled_from(_TRICKY), _ANY), max_size=40),
       pre_type=st.sampled_from(FAST_TYPES))
def test_generated_text(pre_type, text):
    assert mismatches(pre_type, [text]) == []


def _every_class_sample(step: int) -> list[int]:
    """All code points whose (flags, lowercase) differ from the previous one, plus every step-th."""
    cps = np.arange(U.MAX_CODEPOINTS)
    flags, lower = U.FLAGS[:U.MAX_CODEPOINTS], U.LOWER[:U.MAX_CODEPOINTS]
    change = np.flatnonzero((np.diff(flags) != 0) | (np.diff(lower.astype(np.int64) - cps) != 0)) + 1
    return sorted(set(change.tolist()) | set(range(0, U.MAX_CODEPOINTS, step)) | set(range(0x80)))


@pytest.mark.parametrize("pre_type", DISTINCT)
def test_code_points_in_context(pre_type):
    # each cpt between letters, after a space, doubled before a digit, after a quote, before \n
    cps = [chr(c) for c in _every_class_sample(step=97)]
    for template in ("a{}b", " {}", "{0}{0}1", "'{}", "{}\n", " {}'s"):
        text = "".join(template.format(c) for c in cps)
        assert mismatches(pre_type, [text[i:i + 5000] for i in range(0, len(text), 5000)]) == []


@pytest.mark.slow
@pytest.mark.parametrize("pre_type", DISTINCT)
def test_every_code_point_in_context(pre_type):
    cps = [chr(c) for c in range(U.MAX_CODEPOINTS)]
    for template in ("a{}b", " {}", "{0}{0}1", "'{}"):
        text = "".join(template.format(c) for c in cps)
        assert mismatches(pre_type, [text[i:i + 20000] for i in range(0, len(text), 20000)]) == []


@pytest.mark.parametrize("ws", ["\t\n\x0b\x0c\r \x1c-\x1f\x0b", "\t\n\x0c\r "],
                         ids=["python-isspace", "no-vertical-tab-or-stand-in"])
def test_a_wrong_class_is_caught(monkeypatch, ws):
    """The check above is not vacuous: GPT2's pattern built with another whitespace class fails it."""
    classes = dict(fast._classes(), WS=ws)
    monkeypatch.setattr(fast, "_classes", lambda: classes)
    bad = re.compile(fast._gpt2())
    texts = ["a!\x1c!b", "a\x1c\x1c b", "a\u00a0\u00a0b", "x \u3000 y", "p\x0b\x0bq"]
    assert mismatches("GPT2", texts, pat=bad) != []
