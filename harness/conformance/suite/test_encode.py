"""Generated encode: the port's ids vs llama.cpp's in process, on mixed-script text.

Per vocab and (add_special, parse_special) combination, two phases, each running its
whole budget whatever it finds:

1. the fast random phase (harness/conformance/fastphase.py): texts built from a pool
   of the same named families, sent to the port in batches;
2. Hypothesis, which explores by its own mutations.

Every distinct divergence (see ``VocabUnderTest.signature``) is kept, shrunk to a
minimal text and reported. Texts that diverged in earlier runs
(``.hypothesis/conformance/``) run first.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from harness.conformance.fastphase import fragment_pool, random_recipes, run_phase, run_seed
from harness.conformance.hunt import flags_label, load_replay, shrink_text
from harness.conformance.strategies import materialise, recipes

# On a failure Hypothesis describes the strategy; its alphabets are long character lists.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")


def test_encode(vut, flags, hunt, request, fast):
    add_special, parse_special = flags
    h = hunt("encode", flags_label(*flags),
             lambda text: vut.check_encode(text, add_special, parse_special),
             signature=vut.signature, shrink=shrink_text)
    replay = [t for t in load_replay(request.node.nodeid) if isinstance(t, str)]
    if h.begin(vut.unsupported_reason("encode", add_special=add_special, parse_special=parse_special), replay):
        count, seconds, rng = fast
        texts = (materialise(r, vut.texts) for r in random_recipes(fragment_pool(run_seed()), rng))
        run_phase(h, texts, lambda batch: vut.port_many("encode", batch, add_special=add_special,
                                                        parse_special=parse_special),
                  lambda text, ids: list(ids) == vut.reference.encode(text, add_special=add_special,
                                                                      parse_special=parse_special),
                  count=count, seconds=seconds)

        @given(recipe=recipes())
        def explore(recipe):
            h.case(materialise(recipe, vut.texts))

        explore()
    h.finish()
