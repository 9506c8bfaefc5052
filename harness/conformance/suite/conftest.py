"""The conformance suite's parametrization and per-worker state.

Options come from the environment (the Makefile passes them):
- ``PORT``: ``harness`` (default), ``llama.cpp``, ``py:MODULE:FACTORY`` or a command with ``{vocab}``;
- ``VOCABS``: a space/comma separated subset of the pinned names (or .gguf paths), derived
  vocabs (``derived:deepseek-v3``) and groups (``all-pre``, ``all-derived``, ``all``);
- ``HYPOTHESIS_PROFILE``: ``ci`` (default) | ``conformance`` | ``thorough``.

Tests are parametrized per vocab (sorted, names as ids, so every xdist worker
collects identical tests) and per (add_special, parse_special) combination.
Reports come from the plugin ``-p harness.conformance.plugin``.

Several machines: ``llama-conformance prepare --hosts ...`` then ``run --hosts a,2*b``
(harness/remote: xdist's SSH gateways, the suite by package name, no rsync), or
``run --shard I/N`` per CI job and ``llama-conformance merge``. Every worker collects the
same sorted ids, so the controller can hand any vocab to any host; each host's workers
load the reference and each vocab once.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import pytest
from harness.conformance.needs import require

from harness.engine.session import Session
from harness.engine.hunt import Hunt
from harness.flags import FLAGS
from harness.inputs.strategies import register_profiles
from harness.errors import HarnessError
from harness.inputs.derived import label_of



def pytest_configure(config):
    # At configure time, not import time, so an in-process re-run honours $HYPOTHESIS_PROFILE.
    register_profiles()


def vocab_specs() -> dict[str, str]:
    """Test id -> vocab spec, sorted by id. $VOCABS restricts (pinned names, .gguf paths,
    ``derived:<name>``, ``all-pre``, ``all-derived``, ``all``: harness/inputs/derived);
    unknown names fail loudly."""
    from harness.inputs.derived import expand, is_derived, label_of
    from reference.vocabs import names
    wanted = [w for w in re.split(r"[\s,]+", os.environ.get("VOCABS", "")) if w]
    if not wanted:
        return {n: n for n in names()}
    known, out = set(names()), {}
    for w in expand(wanted):
        if w.endswith(".gguf") or w in known or is_derived(w):
            out[label_of(w)] = w
        else:
            raise HarnessError(f"VOCABS names unknown vocab {w!r}; pinned vocabs: {', '.join(sorted(known))}; "
                               "or derived:<pre name or model>, all-pre, all-derived, all")
    return dict(sorted(out.items()))


def pytest_generate_tests(metafunc):
    if "vocab" in metafunc.fixturenames:
        specs = vocab_specs()
        only = getattr(metafunc.function, "vocab_filter", None)
        ids = [i for i in specs if only is None or only(specs[i])]
        # The group mark is set here, at collection, so xdist's --dist loadgroup sees it
        # and keeps each vocab's tests on one worker (each worker loads only its vocabs).
        metafunc.parametrize("vocab", [pytest.param(specs[i], id=i, marks=pytest.mark.xdist_group(i))
                                       for i in ids])
    if "flags" in metafunc.fixturenames:
        metafunc.parametrize("flags", list(FLAGS.values()), ids=list(FLAGS))


FAST_TESTS = ("test_encode", "test_decode")
#: The checks in the order a vocab's tests run (on one worker, --dist loadgroup): the encodes
#: first, so the causes they confirm (the port's vocabulary and text defects) are known to the
#: vocab's decode and piece tests (harness.engine.causes: causes other tests confirmed).
CHECK_ORDER = ("test_crosscheck", "test_encode", "test_known", "test_golden", "test_decode", "test_pieces")


def _check_rank(item) -> int:
    name = getattr(item, "originalname", "")
    return CHECK_ORDER.index(name) if name in CHECK_ORDER else len(CHECK_ORDER)


def pytest_collection_modifyitems(config, items):
    items.sort(key=_check_rank)  # stable: vocabs and flags keep their order within a check
    # The fast phases share a BUDGET among the generated tests of the whole run.
    config._conformance_fast_tests = sum(getattr(i, "originalname", "") in FAST_TESTS for i in items)


@pytest.fixture
def fast(request):
    """``(count, seconds, rng)`` of this test's fast random phase: the profile's count, or
    its share of BUDGET; a Random seeded from CONFORMANCE_SEED and the test's name."""
    from harness.inputs.pool import FAST_EXAMPLES, run_seed, time_share
    profile = os.environ.get("HYPOTHESIS_PROFILE") or "ci"
    seconds = time_share(getattr(request.config, "_conformance_fast_tests", 1))
    name = request.node.nodeid.split("::", 1)[-1]
    return FAST_EXAMPLES[profile], seconds, random.Random(f"{run_seed()}:{name}")


@pytest.fixture(scope="session")
def session():
    """One Session per worker: each reference, vocab and port loaded once."""
    s = Session(os.environ.get("PORT") or "harness")
    yield s
    s.close()


@pytest.fixture
def vut(session, vocab):
    """The vocab under test, with its port opened (a PortError fails setup)."""
    v = require(lambda: session.vocab(vocab))
    v.port  # open now: a port that cannot start is one setup error, not hundreds of failing cases
    return v


@pytest.fixture
def vocab_ref(session, vocab):
    """The vocab with its reference only (the port is not opened)."""
    return require(lambda: session.vocab(vocab))


@pytest.fixture
def hunt(request, session, vocab):
    """``hunt(check, flags_label, run, **options)``: the test's :class:`Hunt`; the plugin
    reads its tally (counts, findings, port errors) from the test item."""
    made = []

    def make(check: str, flags: str, run, **options) -> Hunt:
        h = Hunt(check, flags, run, vocab=label_of(vocab),
                 detail=session.vocab(vocab).with_spans,
                 probe=session.vocab(vocab).probe, port_death=session.vocab(vocab).port_death,
                 notes=lambda: session.take_notes(vocab), revive=lambda: session.can_restart(vocab), **options)
        made.append(h)
        request.node.conformance_hunts = made
        return h
    return make


@pytest.fixture
def replay(request) -> list:
    """This test's inputs from the run's replay store (earlier runs' shrunk failures, from
    any host or shard: :mod:`harness.conformance.replaying`), run first."""
    from harness.conformance.replaying import replay_inputs
    return replay_inputs(request.config, request.node.nodeid)


@pytest.fixture
def cli_reference(vocab_ref):
    """llama-tokenize for this vocab (skips, or fails under make, if not built)."""
    from reference.build import artifacts
    from reference.cli import CliReference
    require(artifacts)
    return CliReference(vocab_ref.path)
