"""A pytest plugin that makes the in-process reference (llama.cpp, the oracle) fail mid-run:
the self-test subject of the ``error`` outcome (a check that raises something that is neither
a divergence nor a port error).

``-p tests.ports.faulty_reference`` with ``FAULTY_REFERENCE_DECODE_AFTER=N``: the reference's
``decode`` answers its first N calls, then raises ``ReferenceFailure`` on every call, as
llama.cpp throwing would. The class is restored when pytest ends (in-process runs).
"""

from __future__ import annotations

import os

from harness.errors import ReferenceFailure

_ORIGINAL = "_faulty_reference_original_decode"


def pytest_configure(config):
    after = os.environ.get("FAULTY_REFERENCE_DECODE_AFTER")
    if not after:
        return
    from reference.inproc import InProcessReference
    original = InProcessReference.decode
    calls = [0]

    def decode(self, ids, *args, **kwargs):
        calls[0] += 1
        if calls[0] > int(after):
            raise ReferenceFailure(f"llama_detokenize threw on call {calls[0]} (deliberately, after {after})")
        return original(self, ids, *args, **kwargs)

    setattr(InProcessReference, _ORIGINAL, original)
    InProcessReference.decode = decode


def pytest_unconfigure(config):
    from reference.inproc import InProcessReference
    original = InProcessReference.__dict__.get(_ORIGINAL)
    if original is not None:
        InProcessReference.decode = original
        delattr(InProcessReference, _ORIGINAL)
