"""Generated encode: the port's ids vs llama.cpp's in process, on mixed-script text.

Per vocab and (add_special, parse_special) combination, two phases, each running its
whole budget whatever it finds: the fast random phase (texts from a pool of the named
families, in batches), then Hypothesis, which explores by its own mutations. Every
distinct divergence is kept, shrunk to a minimal text and reported. Texts that
diverged in earlier runs (the replay store, ``.hypothesis/conformance/``) run first. The body is
:func:`harness.engine.checks.encode`.
"""

from __future__ import annotations

import pytest

from harness.engine import checks

# On a failure Hypothesis describes the strategy; its alphabets are long character lists.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")


def test_encode(vut, flags, hunt, fast, replay):
    checks.encode(vut, flags, hunt, fast=fast, replay=replay)
