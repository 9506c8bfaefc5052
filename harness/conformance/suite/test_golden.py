"""Golden check: every .inp/.out case of the pin, port vs the recorded ids.

The .out ids were made by llama.cpp's test-tokenizer-0 with add_special=False
and parse_special=False, so only that combination is checked. Every case is
run and every divergence reported (not only the first).
"""

from __future__ import annotations

from harness.conformance.checks import EncodeDivergence


def _has_golden(spec: str) -> bool:
    from reference.vocabs import has_golden, names
    return spec in names() and has_golden(spec)


def test_golden(vut, recorder):
    from reference.vocabs import golden_cases
    findings = []
    for text, expected in golden_cases(vut.name):
        recorder.count("golden")
        got = vut.call_port("encode", text, add_special=False, parse_special=False)
        found = vut.finding("golden", text, False, False, expected, list(got))
        if found is not None:
            findings.append(found)
    if findings:
        raise EncodeDivergence(findings)


test_golden.vocab_filter = _has_golden
