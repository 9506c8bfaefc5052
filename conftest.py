"""The rules of ``make test`` for every item it collects: tests/, examples/toyport/tests and the
docstring examples of harness/, reference/ and tools/.

Under ``make test`` (LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1) nothing may skip: a skip is a
failure naming its reason, so a test cannot quietly stop checking (xfail stays xfail).
Docstring examples marked ``+SKIP`` because they read ``vocabs/`` run too, on the selected
pin's vocabs. Under ``--dist loadgroup`` an ``xdist_group`` mark keeps its tests on one worker
(pytest 9.2 broke xdist's own way of doing it; see the end of this file).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest


def _skip_is_failure(report) -> None:
    """Under LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1 (make test), a skip is a failure naming its reason."""
    if not report.skipped or hasattr(report, "wasxfail") or os.environ.get("LLAMA_CONFORMANCE_REQUIRE_REFERENCE") != "1":
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"skipped under LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1, where nothing may skip: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _skip_is_failure(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield  # a whole module skipped at import (pytest.importorskip, skip(allow_module_level))
    _skip_is_failure(outcome.get_result())


def pytest_collection_modifyitems(config, items):
    """Under LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1 (make test, run from the checkout with the vocabs
    fetched) docstring examples marked ``+SKIP`` because they read ``vocabs/`` run too, so none skips.
    Docstrings name a vocab as ``vocabs/ggml-vocab-X.gguf``; the selected pin's directory
    (``vocabs/<pin>/``) is put in its place."""
    if os.environ.get("LLAMA_CONFORMANCE_REQUIRE_REFERENCE") != "1":
        return
    import doctest

    from reference.paths import vocabs_dir
    here = f'"{vocabs_dir()}/ggml-vocab-'
    for item in items:
        for example in getattr(getattr(item, "dtest", None), "examples", ()):
            example.options.pop(doctest.SKIP, None)
            example.source = example.source.replace('"vocabs/ggml-vocab-', here)


# --- xdist_group under pytest 9.2 -------------------------------------------------------------
# xdist's loadgroup puts a test in its group by suffixing ``@group`` to ``item._nodeid`` on the
# worker; pytest 9.2 no longer reads that attribute, so every test became a group of its own and
# tests that share a worker's cache (the chat-template sweeps share llama.cpp's renderings) ran
# on both workers, each paying for it. The controller sees node ids only, so the workers write
# ``{node id: group}`` to a file the controller names, and the scheduler reads it once every
# worker has collected.

#: Where the workers write their groups (set by the controller before it starts them).
GROUPS_ENV = "LLAMA_CONFORMANCE_TEST_XDIST_GROUPS"


def scope(groups: dict[str, str], nodeid: str) -> str:
    """A node's unit of scheduling: its group, else the node alone (xdist's loadgroup rule)."""
    group = groups.get(nodeid)
    return f"@{group}" if group else nodeid


def marked_groups(items) -> dict[str, str]:
    """``{node id: group}`` of the items an ``xdist_group`` mark puts in a group (several names
    joined with ``_``, as xdist joins them)."""
    groups = {}
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if names:
            groups[item.nodeid] = "_".join(names)
    return groups


def _loadgroup(config) -> bool:
    return config.getoption("dist", None) == "loadgroup"


def pytest_configure(config):
    if _loadgroup(config) and not hasattr(config, "workerinput"):
        config._test_groups_dir = tempfile.mkdtemp(prefix="make-test-groups-")
        os.environ[GROUPS_ENV] = str(Path(config._test_groups_dir) / "groups.json")


def pytest_unconfigure(config):
    if getattr(config, "_test_groups_dir", None):
        os.environ.pop(GROUPS_ENV, None)
        shutil.rmtree(config._test_groups_dir, ignore_errors=True)


def pytest_collection_finish(session):
    """On each worker: the same groups (every worker collects the same items), written atomically."""
    path = os.environ.get(GROUPS_ENV)
    if path and hasattr(session.config, "workerinput"):
        tmp = Path(f"{path}.{os.getpid()}")
        tmp.write_text(json.dumps(marked_groups(session.items)), encoding="utf-8")
        os.replace(tmp, path)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if not _loadgroup(config):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # first called once every worker has collected (and written)
                path = os.environ.get(GROUPS_ENV, "")
                self.groups = json.loads(Path(path).read_text(encoding="utf-8")) if Path(path).is_file() else {}
            return scope(self.groups, nodeid)

    return GroupScheduling(config, log)
