"""Golden check: every .inp/.out case of the pin, port vs the recorded ids.

The .out ids were made by llama.cpp's test-tokenizer-0 with add_special=False
and parse_special=False, so only that combination is checked. Every case is
run; divergent cases are grouped by signature (as in the encode check) and the
first of each is shrunk (shrunk texts are checked against llama.cpp in process,
which the cross-check ties to the same ids) and reported with its count. The body
is :func:`harness.engine.checks.golden`.
"""

from __future__ import annotations

from harness.engine import checks


def _has_golden(spec: str) -> bool:
    from reference.vocabs import has_golden, names
    return spec in names() and has_golden(spec)


def test_golden(vut, hunt):
    checks.golden(vut, hunt)


test_golden.vocab_filter = _has_golden
