"""``require`` for the harness's own tests (it lives with the suite it serves)."""

from harness.conformance.needs import require

__all__ = ["require"]
