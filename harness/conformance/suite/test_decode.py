"""Generated decode, in its own right: the port's bytes vs llama_detokenize's.

Per vocab and (remove_special, unparse_special) combination (table rows: add =
remove_special, parse = unparse_special), on three kinds of id lists:

- ``whole``: llama.cpp's ids of a generated text, with specials added and parsed
  (so BOS/EOS and special tokens are there to remove or render);
- ``prefix``: a prefix of those, as a streaming engine decodes them (often ends
  inside a character: the bytes are not valid UTF-8);
- ``random``: ids drawn from the whole vocab.

Bytes are compared exactly: a port that replaces invalid UTF-8 with U+FFFD
diverges. A fast random phase (harness/conformance/fastphase.py) runs first, then
Hypothesis; every distinct divergence is shrunk (ids deleted) and reported.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.conformance.fastphase import fragment_pool, random_recipes, run_phase, run_seed
from harness.conformance.hunt import load_replay, shrink_ids
from harness.conformance.strategies import materialise, recipes
from harness.conformance.hunt import flags_label

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

SOURCES = ("whole", "prefix", "random")


def test_decode(vut, flags, hunt, request, fast):
    remove_special, unparse_special = flags
    h = hunt("decode", flags_label(*flags),
             lambda ids: vut.check_decode(ids, remove_special, unparse_special),
             signature=vut.signature, shrink=shrink_ids)
    replay = [ids for ids in load_replay(request.node.nodeid) if isinstance(ids, tuple)]
    if not h.begin(vut.unsupported_reason("decode", remove_special=remove_special,
                                          unparse_special=unparse_special), replay):
        h.finish()
        return
    count, seconds, rng = fast
    pool = fragment_pool(run_seed())
    inputs = (vut.decode_input(materialise(r, vut.texts), rng.choice(SOURCES), rng.randrange(2**16),
                               [rng.randrange(2**31) for _ in range(rng.randint(1, 12))])
              for r in random_recipes(pool, rng))
    run_phase(h, inputs, lambda batch: vut.port_many("decode", batch, remove_special=remove_special,
                                                     unparse_special=unparse_special),
              lambda ids, got: bytes(got) == vut.reference.decode(ids, remove_special=remove_special,
                                                                  unparse_special=unparse_special),
              count=count, seconds=seconds)

    @given(recipe=recipes(max_repeat=20), source=st.sampled_from(SOURCES), cut=st.integers(0, 2**16),
           rand=st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=12))
    def explore(recipe, source, cut, rand):
        h.case(vut.decode_input(materialise(recipe, vut.texts), source, cut, rand))

    explore()
    h.finish()
