"""Generated encode: Hypothesis text, the port's ids vs llama.cpp's in process.

Per vocab and (add_special, parse_special) combination, the whole example budget
runs whatever is found: every distinct divergence (see
``VocabUnderTest.signature``) is kept, shrunk to a minimal text and reported.
Texts that diverged in earlier runs (``.hypothesis/conformance/``) run first.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from harness.conformance.hunt import load_replay, shrink_text
from harness.conformance.strategies import materialise, recipes
from harness.conformance.hunt import flags_label

# On a failure Hypothesis describes the strategy; its alphabets are long character lists.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")


def test_encode(vut, flags, hunt, request):
    add_special, parse_special = flags
    h = hunt("encode", flags_label(*flags),
             lambda text: vut.check_encode(text, add_special, parse_special),
             signature=vut.signature, shrink=shrink_text)
    reason = vut.unsupported_reason("encode", add_special=add_special, parse_special=parse_special)
    if reason:
        h.declare_unsupported(reason)
        h.finish()
        return
    for text in load_replay(request.node.nodeid):
        if isinstance(text, str):
            h.case(text)

    @given(recipe=recipes())
    def explore(recipe):
        h.case(materialise(recipe, vut.texts))

    explore()
    h.finish()
