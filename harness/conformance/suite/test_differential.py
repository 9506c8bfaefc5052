"""Differential check: Hypothesis text, port vs llama.cpp in process.

Per vocab and (add_special, parse_special) combination: the port's ids must
equal llama.cpp's, and the port's decode of llama.cpp's ids must equal
llama.cpp's decode byte for byte (remove_special=add_special,
unparse_special=parse_special). A divergence raises with the readable diff;
Hypothesis shrinks the text first, so the report shows a minimal text.

The @example texts are known breakages of real ports (shared/docs/known-port-bugs.md),
run first on every vocab; each comment names the model it broke.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import example, given

from harness.conformance.checks import DecodeDivergence, EncodeDivergence
from harness.conformance.strategies import known, materialise, recipes

# On a failure Hypothesis describes the strategy; its alphabets are long character lists.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")


KNOWN_TEXTS = [
    ("", 'SPM (llama-spm): "" -> [BOS] with add_special; BOS defaults'),
    ("->", 'qwen2: missing pre -> GPT-2 fallback'),
    (" Việt", 'llama3: ignore_merges'),
    ("'RE", 'llama3/qwen2: contraction case'),
    ("'Rex", 'qwen2: (?i:\'re) takes "\'Re"; a case-sensitive port keeps "\'Rex"'),
    ("7777", 'qwen2/llama3: digit grouping ("What is 7777 + 3333?")'),
    ("a\xa0\xa0\x00b", 'gpt-2 family: NBSP is whitespace (whitespace set)'),
    ("\xa0aC", 'tekken-style case split with NBSP'),
    ("¼-a", 'deepseek: Unicode category tables'),
    ("a 〇b", 'category tables: U+3007 is a number'),
    ("\x1f-a", 'category tables: U+001F is not whitespace'),
    ("\ufeff//", 'BOM is not whitespace'),
    ("\n\n", 'qwen2: newline runs ([271])'),
    ("\r\n", 'CRLF grapheme'),
    ("किसानों", 'Hindi combining marks (grapheme seeding)'),
    ("brutalist", 'BPE merge order by rank'),
    ("thunderstorm", 'llama-spm: SPM bigram ties'),
    ("<s>G", 'llama-spm: space after special token'),
    ("a </s> b", 'phi-3: rstrip/lstrip'),
    (" <mask>", "nomic-bert-moe, jina-v2: <mask> LSTRIP ('one <mask>', shortened)"),
    ("a <mask> b", 'nomic-bert-moe: <mask> LSTRIP'),
    (".<|im_end|>", 'qwen2: parse_special and special registration'),
    ("[toxicity=0]", 'gemma2: USER_DEFINED in raw text'),
    ("Führer", 'deepseek-coder: added-token priority'),
    ("Der süße Bär", 'SPM byte fallback'),
    ("Kantō", 'bert: WordPiece accent stripping'),
    ("!!!!!!", 't5/UGM: charsmap and whitespace'),
    ("x != y and a.b == c", 'decode clean_up_tokenization_spaces'),
    ("\u3000", 'byte tokens leaking into decoded text (<0xE3>...)'),
    ("x ~é ~~", "deepseek-v3: '~' is neither P nor S"),
]


def _known_examples(test):
    """Apply every KNOWN_TEXTS example, unless KNOWN_EXAMPLES=0 (generation alone)."""
    if os.environ.get("KNOWN_EXAMPLES", "1") == "0":
        return test
    for text, _why in reversed(KNOWN_TEXTS):
        test = example(recipe=known(text))(test)
    return test


@_known_examples
@given(recipe=recipes())
def test_differential(vut, flags, recorder, recipe):
    text = materialise(recipe, vut.texts)
    add_special, parse_special = flags
    recorder.count("encode")
    found = vut.check_encode(text, add_special, parse_special)
    if found is not None:
        raise EncodeDivergence([found])
    recorder.count("decode")
    found = vut.check_decode(text, add_special, parse_special)
    if found is not None:
        raise DecodeDivergence([found])
