"""Cross-check: a sample of texts through the llama-tokenize CLI, as users run it,
against llama.cpp in process, so the fast oracle cannot drift from the binary.

llama-tokenize adds specials only when the model's add_bos is set, so
add_special is used only for such vocabs. The sample size follows the
Hypothesis profile (ci 2, conformance 4, thorough 20 texts per vocab); each text
cycles through the flag combinations.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import assume, given, settings

from harness.conformance.checks import EncodeDivergence
from harness.conformance.strategies import materialise, recipes

# On a failure Hypothesis describes the strategy; its alphabets are long character lists.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

SAMPLE = {"ci": 2, "conformance": 4, "thorough": 20}.get(os.environ.get("HYPOTHESIS_PROFILE") or "ci", 2)
_COMBOS = [(False, False), (True, True), (False, True), (True, False)]


@settings(max_examples=SAMPLE)
@given(recipe=recipes(max_fragments=4, max_repeat=2))
def test_crosscheck(vocab_ref, cli_reference, recorder, recipe):
    vut, cli = vocab_ref, cli_reference
    text = materialise(recipe, vut.texts)
    assume(text)  # llama-tokenize refuses an empty prompt
    add_special, parse_special = _COMBOS[recorder.cases.get("crosscheck", 0) % len(_COMBOS)]
    add_special = add_special and vut.reference.reference.add_bos
    recorder.count("crosscheck")
    expected = vut.reference.encode(text, add_special=add_special, parse_special=parse_special)
    got = cli.encode(text, add_special, parse_special)
    found = vut.finding("crosscheck", text, add_special, parse_special, expected, got,
                        port_label="llama-tokenize")
    if found is not None:
        raise EncodeDivergence([found])
