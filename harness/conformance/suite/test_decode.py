"""Generated decode, in its own right: the port's bytes vs llama_detokenize's.

Per vocab and (remove_special, unparse_special) combination (table rows: add =
remove_special, parse = unparse_special), on three kinds of id lists: ``whole``
(llama.cpp's ids of a generated text, with specials added and parsed), ``prefix`` (a
prefix of those, as a streaming engine decodes them) and ``random`` (ids drawn from
the whole vocab). Bytes are compared exactly: a port that replaces invalid UTF-8 with
U+FFFD diverges. The fast random phase runs first, then Hypothesis; every distinct
divergence is shrunk (ids deleted) and reported. The body is
:func:`harness.engine.checks.decode`.
"""

from __future__ import annotations

import pytest

from harness.engine import checks

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")


def test_decode(vut, flags, hunt, fast, replay):
    checks.decode(vut, flags, hunt, fast=fast, replay=replay)
