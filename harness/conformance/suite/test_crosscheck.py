"""Cross-check: a sample of texts through the llama-tokenize CLI, as users run it,
against llama.cpp in process, so the fast oracle cannot drift from the binary.

llama-tokenize adds specials only when the model's add_bos is set: for other
vocabs add_special=True cannot be expressed, and those cells say unsupported.
The sample follows the Hypothesis profile (ci 1, conformance 1, thorough 5 texts
per vocab and flag combination). The body is :func:`harness.engine.checks.crosscheck`.
"""

from __future__ import annotations

import os

import pytest

from harness.engine import checks

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

SAMPLE = {"ci": 1, "conformance": 1, "thorough": 5}.get(os.environ.get("HYPOTHESIS_PROFILE") or "ci", 1)


def test_crosscheck(vocab_ref, cli_reference, flags, hunt):
    checks.crosscheck(vocab_ref, cli_reference, flags, hunt, sample=SAMPLE)
