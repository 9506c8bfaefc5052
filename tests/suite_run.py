"""``run_suite``: the conformance suite's nodes, run in process by pytester, with its report.

Shared by the engine's tests and the generation-alone tests. (A module of its own, not
conftest: two conftest.py files share the module name ``conftest``.)
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.conformance.needs import require
from reference.paths import cache_dir

# pytester points HOME at a temporary directory; keep the real reference cache.
CACHE = cache_dir()
REPO = Path(__file__).resolve().parent.parent


def mutant_port(name: str) -> str:
    """PORT of self-test mutant ``name`` (tests/ports/mutants.py, a Python adapter)."""
    return f"py:tests.ports.mutants:{name}"


def run_suite(pytester, monkeypatch, port: str, vocabs: str, nodes: list[str], profile: str = "ci",
              **env: str):
    """Run suite ``nodes`` with ``PORT``, ``VOCABS``, the profile and ``env``; return
    (pytester's result, the conformance.json it wrote). Hypothesis' settings are restored."""
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
        result = pytester.runpytest_inprocess(*nodes, "-p", "harness.conformance.plugin",
                                              "--hypothesis-seed=0", f"--conformance-reports={out}",
                                              "-W", "ignore::pytest.PytestAssertRewriteWarning",
                                              "-p", "no:cacheprovider", "-q")
    finally:
        settings.register_profile("_suite_run_restore", previous)
        settings.load_profile("_suite_run_restore")
    return result, json.loads((out / "conformance.json").read_text(encoding="utf-8"))
