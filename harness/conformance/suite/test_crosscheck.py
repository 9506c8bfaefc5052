"""Cross-check: a sample of texts through the llama-tokenize CLI, as users run it,
against llama.cpp in process, so the fast oracle cannot drift from the binary.

llama-tokenize adds specials only when the model's add_bos is set: for other
vocabs add_special=True cannot be expressed, and those cells say unsupported.
The sample follows the Hypothesis profile (ci 1, conformance 1, thorough 5 texts
per vocab and flag combination).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings

from harness.conformance.strategies import materialise, recipes
from harness.conformance.hunt import flags_label
from harness.errors import PortUnsupported

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

SAMPLE = {"ci": 1, "conformance": 1, "thorough": 5}.get(os.environ.get("HYPOTHESIS_PROFILE") or "ci", 1)


def test_crosscheck(vocab_ref, cli_reference, flags, hunt):
    vut, cli = vocab_ref, cli_reference
    add_special, parse_special = flags

    def run(text):
        if add_special and not vut.reference.reference.add_bos:
            raise PortUnsupported("llama-tokenize adds specials only for vocabs with add_bos")
        expected = vut.reference.encode(text, add_special=add_special, parse_special=parse_special)
        got = cli.encode(text, add_special, parse_special)
        return vut.finding("crosscheck", text, add_special, parse_special, expected, got,
                           port_label="llama-tokenize")

    h = hunt("crosscheck", flags_label(*flags), run)

    @settings(max_examples=SAMPLE)
    @given(recipe=recipes(max_fragments=4, max_repeat=2))
    def explore(recipe):
        text = materialise(recipe, vut.texts)
        h.case(text or "a")  # llama-tokenize refuses an empty prompt

    explore()
    h.finish()
