"""pytest plugin for a Python port's own tests (entry point ``pytest11: llama_conformance``).

Installing this package registers it in every pytest run of that environment, so
this module imports only pytest at import time; the reference, Hypothesis and the
checks load when a test uses them. ``-p no:llama_conformance`` turns it off.

It offers:

* the ``llama_reference`` fixture: ``llama_reference("qwen2")`` (a pinned vocab name
  or a ``.gguf`` path) is the pinned llama.cpp in process
  (``reference.inproc.InProcessReference``: ``encode(text, add_special, parse_special)``,
  ``decode``, ``token_to_piece``, ``n_vocab``), loaded once per session;
* the named Hypothesis strategies of the suite, importable from here:
  ``from harness.pytest_plugin import cjk, emoji, whitespace, recipes, materialise``;
* ``@conformance(vocabs=[...])`` on a function ``tokenize(text, add_special, parse_special)
  -> list[int]`` (optionally with a fourth parameter ``vocab``: the ``.gguf`` path): the
  function stays as it is, and pytest collects under its name the golden test (every
  ``.inp``/``.out`` case of the pin) and the differential test (Hypothesis text, every
  (add_special, parse_special) combination, against llama.cpp in process), each
  running its whole budget and reporting every distinct divergence shrunk, as the
  suite does, so ``-p harness.conformance.plugin`` reports them the same way.

A missing reference skips with the command that fetches/builds it, or fails under
``LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1``, as in the suite.

>>> @conformance(vocabs=["qwen2"])
... def tokenize(text, add_special, parse_special):
...     return []
>>> tokenize.__llama_conformance__.vocabs
('qwen2',)
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass
from pathlib import Path

import pytest



@dataclass(frozen=True)
class Spec:
    """What ``@conformance`` recorded on a function."""

    vocabs: tuple[str, ...]
    max_examples: int | None = None


def conformance(vocabs, *, max_examples: int | None = None):
    """Mark ``tokenize(text, add_special, parse_special[, vocab]) -> list[int]`` for conformance tests.

    ``max_examples`` overrides the Hypothesis profile's budget per (vocab, flags) test.
    """
    if isinstance(vocabs, str) or not vocabs:
        raise TypeError("conformance(vocabs=[...]) takes a non-empty list of pinned vocab names or .gguf paths")

    def mark(fn):
        params = inspect.signature(fn).parameters
        if len(params) not in (3, 4):
            raise TypeError(f"@conformance expects tokenize(text, add_special, parse_special[, vocab]); "
                            f"{fn.__qualname__} takes {len(params)} parameters")
        fn.__llama_conformance__ = Spec(tuple(str(v) for v in vocabs), max_examples)
        return fn

    return mark


def __getattr__(name: str):
    """The suite's named strategies (``cjk``, ``recipes``, ...), imported on first use.

    pytest looks up ``pytest_plugins`` and every ``pytest_*`` hook name on each plugin it
    registers; those are never strategies, and answering them without the import keeps
    Hypothesis (a second of start-up) out of every pytest process that has this plugin installed."""
    if name.startswith(("pytest_", "__")):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from harness.inputs import strategies

    if name in strategies.__all__:
        return getattr(strategies, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- the fixture ----------------------------------------------------------------------------

@pytest.fixture(scope="session")
def llama_reference():
    """``llama_reference("qwen2")`` -> the pinned llama.cpp in process for that vocab (name or .gguf path)."""
    loaded: dict[str, object] = {}

    def load(vocab: str | Path):
        from harness.conformance.needs import require
        from reference.inproc import InProcessReference
        from reference.vocabs import vocab_path

        key = str(vocab)
        if key not in loaded:
            loaded[key] = require(lambda: InProcessReference.load(vocab_path(key)))
        return loaded[key]

    return load


# --- @conformance -> tests --------------------------------------------------------------------

def pytest_pycollect_makeitem(collector, name, obj):
    if not (inspect.isfunction(obj) and isinstance(obj.__dict__.get("__llama_conformance__"), Spec)):
        return None
    return _ConformanceClass.from_parent(collector, name=name)


class _ConformanceClass(pytest.Class):
    """The tests of one ``@conformance`` function, collected under the function's name."""

    def _getobj(self):
        fn = getattr(self.parent.obj, self.name)
        return _test_class(fn, fn.__llama_conformance__)


def _vocab_id(vocab: str) -> str:
    return Path(vocab).stem.removeprefix("ggml-vocab-") if vocab.endswith(".gguf") else vocab


def _has_golden(vocab: str) -> bool:
    from reference.vocabs import has_golden, names

    return vocab in names() and has_golden(vocab)


class FunctionPort:
    """A ``tokenize`` function as an encode-only port."""

    def __init__(self, fn, path: Path):
        self.fn, self.path = fn, path
        self.takes_vocab = len(inspect.signature(fn).parameters) == 4

    def encode(self, text: str, *, add_special: bool = False, parse_special: bool = False) -> list[int]:
        """The function's answer as it gave it: the engine checks its type (a ``str`` or a
        non-int id is a port error naming ``encode`` and the type, not a traceback)."""
        extra = (self.path,) if self.takes_vocab else ()
        return self.fn(text, add_special, parse_special, *extra)


class _FunctionSession:
    """What VocabUnderTest asks of a session: the port for a vocab."""

    def __init__(self, port: FunctionPort):
        self._port = port

    def port(self, vut):
        return self._port


def _vocab_under_test(fn, vocab: str, llama_reference):
    from harness.conformance.needs import require
    from harness.engine.vut import VocabUnderTest
    from reference.vocabs import vocab_path

    path = require(vocab_path, vocab)
    label = f"{fn.__module__}.{fn.__qualname__}"
    return VocabUnderTest(_vocab_id(vocab), path, label, llama_reference(vocab),
                          _FunctionSession(FunctionPort(fn, path)))


def _make_hunt(request, vut):
    """``make_hunt`` for the engine's checks: a Hunt whose tally harness.conformance.plugin
    reports (when loaded) for this test."""
    from harness.engine.hunt import Hunt

    def make(check: str, flags: str, run, **options):
        h = Hunt(check, flags, run, vocab=vut.name, detail=vut.with_spans, probe=vut.probe,
                 port_death=vut.port_death, **options)
        request.node.conformance_hunts = [h]
        return h
    return make


def _test_class(fn, spec: Spec) -> type:
    """A class of two parametrized tests for one ``@conformance`` function."""
    vocabs = [pytest.param(v, id=_vocab_id(v)) for v in spec.vocabs]
    from harness.flags import FLAGS
    flags = [pytest.param(f, id=label) for label, f in FLAGS.items()]

    @pytest.mark.parametrize("vocab", vocabs)
    def test_differential(self, vocab, flags, llama_reference, request):
        __tracebackhide__ = True  # the finding's diff is the message
        _differential(spec, _vocab_under_test(fn, vocab, llama_reference), flags, request)

    methods = {"test_differential": pytest.mark.parametrize("flags", flags)(test_differential)}
    golden = [v for v in vocabs if _has_golden(v.values[0])]
    if golden:
        @pytest.mark.parametrize("vocab", golden)
        def test_golden(self, vocab, llama_reference, request):
            __tracebackhide__ = True  # the finding's diff is the message
            _golden(_vocab_under_test(fn, vocab, llama_reference), request)

        methods = {"test_golden": test_golden, **methods}
    return type(f"Conformance_{fn.__name__}", (), {"__doc__": fn.__doc__, **methods})


def _golden(vut, request) -> None:
    """Every .inp/.out case of the pin: the suite's golden check (engine.checks.golden)."""
    __tracebackhide__ = True  # the finding's diff is the message
    from harness.engine import checks
    checks.golden(vut, _make_hunt(request, vut))


def _differential(spec: Spec, vut, flags, request) -> None:
    """The known texts, the fast random phase, then Hypothesis text: the suite's encode
    check (engine.checks.encode), port vs llama.cpp in process; the whole budget runs and
    every distinct divergence is shrunk and reported."""
    __tracebackhide__ = True  # the finding's diff is the message
    import random

    from hypothesis import HealthCheck

    from harness.engine import checks
    from harness.inputs.pool import FAST_EXAMPLES, run_seed

    known = _known_texts() if os.environ.get("KNOWN_EXAMPLES", "1") != "0" else []
    profile = os.environ.get("HYPOTHESIS_PROFILE") or "ci"
    fast = (FAST_EXAMPLES.get(profile, FAST_EXAMPLES["ci"]), None,
            random.Random(f"{run_seed()}:{request.node.nodeid}"))
    overrides = {"deadline": None, "database": None,
                 "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
    if spec.max_examples is not None:
        overrides["max_examples"] = spec.max_examples
    checks.encode(vut, flags, _make_hunt(request, vut), fast=fast, first=known,
                  settings_overrides=overrides)


def _known_texts() -> list[str]:
    """The texts that broke real ports (harness/inputs/known.py)."""
    from harness.inputs.known import KNOWN_TEXTS
    return [text for text, _why in KNOWN_TEXTS]
