"""Golden check: every .inp/.out case of the pin, port vs the recorded ids.

The .out ids were made by llama.cpp's test-tokenizer-0 with add_special=False
and parse_special=False, so only that combination is checked. Every case is
run and every divergent case reported (up to the cap).
"""

from __future__ import annotations


def _has_golden(spec: str) -> bool:
    from reference.vocabs import has_golden, names
    return spec in names() and has_golden(spec)


def test_golden(vut, hunt):
    from reference.vocabs import golden_cases
    h = hunt("golden", "plain", lambda case: vut.check_golden(*case))
    reason = vut.unsupported_reason("encode", add_special=False, parse_special=False)
    if reason:
        h.declare_unsupported(reason)
    else:
        for case in golden_cases(vut.name):
            h.case(case)
    h.finish()


test_golden.vocab_filter = _has_golden
