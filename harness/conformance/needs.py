"""``require``: call something that needs the fetched/built reference.

A missing reference skips with the command that fetches/builds it, except under
``make test`` / ``make conformance`` (LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1),
where it fails: CI must never pass by skipping. (A module of its own, not
conftest: two conftest.py files share the module name ``conftest``.)
"""

from __future__ import annotations

import os

import pytest

from harness.errors import ReferenceUnavailable


def require(fn, *args):
    """Call ``fn(*args)``; turn ReferenceUnavailable into a skip (or a failure under make)."""
    try:
        return fn(*args)
    except ReferenceUnavailable as e:
        if os.environ.get("LLAMA_CONFORMANCE_REQUIRE_REFERENCE") == "1":
            pytest.fail(f"reference unavailable: {e}")
        pytest.skip(str(e))
