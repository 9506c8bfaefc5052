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
  (add_special, parse_special) combination, against llama.cpp in process), raising
  the suite's findings, so ``-p harness.conformance.plugin`` reports them the same way.

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
import itertools
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

FLAGS = list(itertools.product([False, True], repeat=2))
_FLAG_IDS = {(False, False): "plain", (False, True): "parse", (True, False): "add", (True, True): "add_parse"}


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
    """The suite's named strategies (``cjk``, ``recipes``, ...), imported on first use."""
    from harness.conformance import strategies

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


class _Recorder:
    """Case counts for harness.conformance.plugin's table (same shape as the suite's)."""

    def __init__(self, vocab: str):
        self.vocab, self.cases = vocab, {}

    def count(self, check: str, n: int = 1) -> None:
        self.cases[check] = self.cases.get(check, 0) + n


class FunctionPort:
    """A ``tokenize`` function as an encode-only port."""

    def __init__(self, fn, path: Path):
        self.fn, self.path = fn, path
        self.takes_vocab = len(inspect.signature(fn).parameters) == 4

    def encode(self, text: str, *, add_special: bool = False, parse_special: bool = False) -> list[int]:
        extra = (self.path,) if self.takes_vocab else ()
        return list(self.fn(text, add_special, parse_special, *extra))


class _FunctionSession:
    """What VocabUnderTest asks of a session: the port for a vocab."""

    def __init__(self, port: FunctionPort):
        self._port = port

    def port(self, vut):
        return self._port


def _vocab_under_test(fn, vocab: str, llama_reference):
    from harness.conformance.checks import VocabUnderTest
    from harness.conformance.needs import require
    from harness.conformance.ports import ReferencePort
    from reference.vocabs import vocab_path

    path = require(vocab_path, vocab)
    ref = ReferencePort(llama_reference(vocab))
    label = f"{fn.__module__}.{fn.__qualname__}"
    return VocabUnderTest(_vocab_id(vocab), path, label, ref, _FunctionSession(FunctionPort(fn, path)))


def _recorder(request, vocab: str) -> _Recorder:
    rec = _Recorder(vocab)
    request.node.conformance_recorder = rec  # read by harness.conformance.plugin, when loaded
    return rec


def _test_class(fn, spec: Spec) -> type:
    """A class of two parametrized tests for one ``@conformance`` function."""
    vocabs = [pytest.param(v, id=_vocab_id(v)) for v in spec.vocabs]
    flags = [pytest.param(f, id=_FLAG_IDS[f]) for f in FLAGS]

    @pytest.mark.parametrize("vocab", vocabs)
    def test_differential(self, vocab, flags, llama_reference, request):
        __tracebackhide__ = True  # the finding's diff is the message
        _differential(fn, spec, _vocab_under_test(fn, vocab, llama_reference), flags, _recorder(request, vocab))

    methods = {"test_differential": pytest.mark.parametrize("flags", flags)(test_differential)}
    golden = [v for v in vocabs if _has_golden(v.values[0])]
    if golden:
        @pytest.mark.parametrize("vocab", golden)
        def test_golden(self, vocab, llama_reference, request):
            __tracebackhide__ = True  # the finding's diff is the message
            _golden(_vocab_under_test(fn, vocab, llama_reference), _recorder(request, vocab))

        methods = {"test_golden": test_golden, **methods}
    return type(f"Conformance_{fn.__name__}", (), {"__doc__": fn.__doc__, **methods})


def _golden(vut, rec: _Recorder) -> None:
    """Every .inp/.out case of the pin (made with add_special=False, parse_special=False)."""
    __tracebackhide__ = True  # the finding's diff is the message
    from harness.conformance.checks import EncodeDivergence
    from reference.vocabs import golden_cases

    findings = []
    for text, expected in golden_cases(vut.name):
        rec.count("golden")
        got = vut.call_port("encode", text, add_special=False, parse_special=False)
        found = vut.finding("golden", text, False, False, expected, list(got))
        if found is not None:
            findings.append(found)
    if findings:
        raise EncodeDivergence(findings)


def _differential(fn, spec: Spec, vut, flags, rec: _Recorder) -> None:
    """Hypothesis text (the suite's recipes, known breakages first), port vs llama.cpp in process."""
    __tracebackhide__ = True  # the finding's diff is the message
    from hypothesis import HealthCheck, example, given, settings

    from harness.conformance.checks import EncodeDivergence
    from harness.conformance.strategies import known, materialise, recipes

    add_special, parse_special = flags

    def check(recipe):
        text = materialise(recipe, vut.texts)
        rec.count("encode")
        found = vut.check_encode(text, add_special, parse_special)
        if found is not None:
            raise EncodeDivergence([found])

    check.__qualname__ = f"{fn.__module__}.{fn.__qualname__}[{vut.name}-{_FLAG_IDS[flags]}]"
    test = given(recipe=recipes())(check)
    if os.environ.get("KNOWN_EXAMPLES", "1") != "0":
        for text in reversed(_known_texts()):
            test = example(recipe=known(text))(test)
    overrides = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
    if spec.max_examples is not None:
        overrides["max_examples"] = spec.max_examples
    settings(**overrides)(test)()


def _known_texts() -> list[str]:
    """The suite's known breakages of real ports (``KNOWN_TEXTS`` of the suite's test_differential.py).

    Read as a literal, not imported: importing a suite module outside the suite's own
    conftest would bind its @given to settings without the suite's profiles.
    """
    import ast
    from importlib.resources import files

    source = files("harness.conformance.suite").joinpath("test_differential.py").read_text(encoding="utf-8")
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "KNOWN_TEXTS" for t in node.targets):
            return [text for text, _why in ast.literal_eval(node.value)]
    raise ImportError("harness/conformance/suite/test_differential.py defines no KNOWN_TEXTS literal")
