"""Shared fixtures: the pinned reference, resolved once per session.

A missing reference skips with the command that fetches/builds it, except
under ``make test`` / ``make conformance`` (LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1),
where a missing reference is an error: CI must never pass by skipping. The rule that
no skip passes under ``make test`` lives in the repository's root conftest.py, so it
covers every item ``make test`` collects.
"""

from __future__ import annotations

import os

import pytest

# The harness's own tests time nothing: the suite runs they make leave the length-scaling
# probe out (harness.engine.scaling), except tests/test_scaling.py, which turns it on for its
# deliberately quadratic port and asserts the exponent the suite reports, never a time.
os.environ.setdefault("LENGTH_SCALING", "0")

from harness.conformance.needs import require


@pytest.fixture(scope="session")
def inproc():
    """``inproc("qwen2")`` -> the in-process llama.cpp reference for that vocab."""
    from reference.inproc import InProcessReference
    from reference.vocabs import vocab_path

    return lambda name: require(lambda: InProcessReference.load(vocab_path(name)))


@pytest.fixture(scope="session")
def cli():
    """``cli("qwen2")`` -> the llama-tokenize CLI reference for that vocab."""
    from reference.cli import CliReference
    from reference.vocabs import vocab_path

    return lambda name: require(lambda: CliReference(vocab_path(name)))


@pytest.fixture(scope="session")
def ref_chat():
    """:mod:`reference.chat` (llama.cpp's chat templating in process), its library built."""
    from reference import chat
    require(chat.chat_library)
    return chat

