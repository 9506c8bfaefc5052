"""Golden check: every .inp/.out case of the pin, port vs the recorded ids.

The .out ids were made by llama.cpp's test-tokenizer-0 with add_special=False
and parse_special=False, so only that combination is checked. Every case is
run; divergent cases are grouped by signature (as in the encode check) and the
first of each is shrunk (shrunk texts are checked against llama.cpp in process,
which the cross-check ties to the same ids) and reported with its count.
"""

from __future__ import annotations


def _has_golden(spec: str) -> bool:
    from reference.vocabs import has_golden, names
    return spec in names() and has_golden(spec)


def test_golden(vut, hunt):
    from harness.conformance.hunt import shrink_text
    from reference.vocabs import golden_cases
    expected = dict(golden_cases(vut.name))
    h = hunt("golden", "plain", lambda text: vut.check_golden(text, expected.get(text)),
             signature=vut.signature, shrink=shrink_text)
    h.begin(vut.unsupported_reason("encode", add_special=False, parse_special=False), expected)
    h.finish()


test_golden.vocab_filter = _has_golden
