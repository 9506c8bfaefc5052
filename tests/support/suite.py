"""``run_suite``: the conformance suite's nodes, run in process by pytester, with its report.

Shared by the tests that run the suite against a port (tests/test_suite_*.py) and the
generation-alone tests.
"""

from __future__ import annotations

import json
from pathlib import Path

# Imported here, not first inside pytester's in-process runs, so the runs reuse one loaded
# libllama and vocab cache (pytester forgets modules first imported inside a run; numpy
# cannot be re-imported). A test module that runs the suite in process imports this one.
# The engine, the catalogue, the fast phase's pool and the harness tokenizer too: their
# process-wide memos (the pool drawn per seed, harness.inputs.pool; the exact tokenizer per
# vocab file and the variant tokenizers built on it, harness.engine.diagnoser) then last
# across the runs, as they last across a worker's tests in make conformance, instead of
# being rebuilt, and the modules imported again, for every run.
import numpy  # noqa: F401
import numpy.random  # noqa: F401
import regex  # noqa: F401

import harness.conformance.plugin  # noqa: F401
import harness.conformance.suite  # noqa: F401
import harness.diagnosis  # noqa: F401
import harness.engine.causes  # noqa: F401
import harness.engine.checks  # noqa: F401
import harness.engine.diagnoser  # noqa: F401
import harness.engine.hunt  # noqa: F401
import harness.engine.replay  # noqa: F401
import harness.engine.session  # noqa: F401
import harness.inputs.known  # noqa: F401
import harness.inputs.pool  # noqa: F401
import harness.reports.html  # noqa: F401
import harness.reports.junit  # noqa: F401
import harness.tokenizer.algorithms.bpe  # noqa: F401
import harness.tokenizer.algorithms.spm  # noqa: F401
import harness.tokenizer.algorithms.ugm  # noqa: F401
import harness.tokenizer.algorithms.wpm  # noqa: F401
import harness.tokenizer.facade  # noqa: F401
import harness.inputs.wordbpe  # noqa: F401
import harness.tokenizer.gguf.writer  # noqa: F401
import harness.tokenizer.pretypes  # noqa: F401
import reference.build  # noqa: F401
import reference.cli  # noqa: F401
import reference.inproc  # noqa: F401
import reference.vocabs  # noqa: F401
import tests.ports.mutants  # noqa: F401
from harness.conformance.needs import require
from reference.paths import cache_dir

# pytester points HOME at a temporary directory; keep the real reference cache.
CACHE = cache_dir()
SUITE = Path(harness.conformance.suite.__file__).parent
REPO = Path(__file__).resolve().parents[2]


def suite_node(check: str, vocab: str, flags: str | None = None) -> str:
    """A suite node id, e.g. ``suite_node("encode", "qwen2", "plain")``."""
    test = {"piece": "pieces"}.get(check, check)
    params = vocab if flags is None else f"{vocab}-{flags}"
    return f"{SUITE / f'test_{test}.py'}::test_{test}[{params}]"


def faulty_port(*options: str) -> str:
    """PORT command of tests/ports/faulty_port.py (a JSON-lines port) with these options."""
    import shlex
    import sys
    script = REPO / "tests" / "ports" / "faulty_port.py"
    return " ".join([shlex.quote(sys.executable), shlex.quote(str(script)), "--vocab {vocab}", *options])


def mutant_port(name: str) -> str:
    """PORT of self-test mutant ``name`` (tests/ports/mutants.py, a Python adapter)."""
    return f"py:tests.ports.mutants:{name}"


def run_suite(pytester, monkeypatch, port: str, vocabs: str, nodes: list[str], profile: str = "ci",
              args: tuple[str, ...] = (), **env: str):
    """Run suite ``nodes`` with ``PORT``, ``VOCABS``, the profile, pytest ``args`` and ``env``;
    return (pytester's result, the conformance.json it wrote). Hypothesis' settings are restored."""
    from hypothesis import settings

    from reference.build import artifacts
    monkeypatch.setenv("LLAMA_CONFORMANCE_CACHE", str(CACHE))
    monkeypatch.syspath_prepend(str(REPO))  # py:tests.ports... adapters, from the repository root
    require(artifacts)
    previous = settings.default
    for k, v in {"PORT": port, "VOCABS": vocabs, "HYPOTHESIS_PROFILE": profile, **env}.items():
        monkeypatch.setenv(k, v)
    out = pytester.path / "reports"
    try:
        # --confcutdir: the suite's own conftest only, as `llama-conformance run` has it (the
        # repository's root conftest.py holds make test's rules, not the suite's).
        result = pytester.runpytest_inprocess(*nodes, "-p", "harness.conformance.plugin",
                                              f"--confcutdir={SUITE}",
                                              "--hypothesis-seed=0", f"--conformance-reports={out}",
                                              "-W", "ignore::pytest.PytestAssertRewriteWarning",
                                              "-p", "no:cacheprovider", "-q", *args)
    finally:
        settings.register_profile("_suite_run_restore", previous)
        settings.load_profile("_suite_run_restore")
    return result, json.loads((out / "conformance.json").read_text(encoding="utf-8"))
