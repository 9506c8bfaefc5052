"""A small pytest plugin: what each conformance test checked -> reports.

Use: ``pytest harness/conformance/suite -p harness.conformance.plugin [-n auto]``.

On each worker, after a test's call (or a failed setup), the tallies of the
test's hunts (harness.engine.hunt: counts, distinct findings, root port
errors, restarts) are attached to the report as ``user_properties``; xdist
ships those to the controller, which gathers them into one
:class:`~harness.reports.run.RunReport` (the reports room renders it): at the end a
(vocab, flags) x check table, every port error once and every divergence, and
``<dir>/conformance.json``, ``conformance.html`` and ``conformance-junit.xml`` (one
failure per cause and test; ``--conformance-reports``, default ``reports``). The JSON
also records the run (pin, port, profile, seed, times, host) and its throughput.

``--conformance-shard=I/N`` keeps part I of N of the collected tests, by vocab group
(:mod:`harness.conformance.shard`); other plugins add keys to the run's metadata through
the ``pytest_conformance_run_info`` hook (``llama-conformance run --hosts`` lists its hosts).
"""

from __future__ import annotations

import json
import os
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from harness.errors import PortError
from harness.inputs.derived import label_of
from harness.reports.cells import cell_outcome, cell_outcomes
from harness.reports.run import RunReport

TALLY_KEY = "conformance_tally"  # user_properties key of each test's tally (JSON)


def pytest_addoption(parser):
    parser.addoption("--conformance-reports", default="reports",
                     help="directory for conformance.json and conformance.html (default: reports)")
    parser.addoption("--conformance-shard", default=None, metavar="I/N",
                     help="run part I of N of the collected tests, split by vocab (for CI matrices)")


class RunInfoSpec:
    """The plugin's own hook."""

    @pytest.hookspec
    def pytest_conformance_run_info(self, config, info: dict) -> None:
        """Add keys to the run's metadata (``conformance.json``'s ``run``) before it is written."""


def pytest_addhooks(pluginmanager):
    pluginmanager.add_hookspecs(RunInfoSpec)


@pytest.hookimpl(tryfirst=True)  # before Hypothesis' own plugin reads --hypothesis-seed
def pytest_configure(config):
    choose_seeds(config)
    config.pluginmanager.register(Collector(config), "conformance-collector")
    if not hasattr(config, "workerinput"):  # the run's owner: the only reader and writer of the store
        from harness.conformance.replaying import PLUGIN_NAME, open_replaying
        try:
            replaying = open_replaying(Path(config.getoption("--conformance-reports")), run_vocab_groups(config),
                                       vocab_scope, host_label)
        except Exception as e:  # the store is a convenience: the run goes on and says why it has none
            config._conformance_replay_error = f"replay store not used: {type(e).__name__}: {e}"
        else:
            config.pluginmanager.register(replaying, PLUGIN_NAME)


def pytest_unconfigure(config):
    if getattr(config, "_conformance_seed_set", False):
        os.environ.pop("CONFORMANCE_SEED", None)  # an in-process run leaves the environment as it was


def run_vocab_groups(config) -> set[str] | None:
    """The vocab groups this run (or its shard) checks, or None if they cannot be told here
    (a bad ``$VOCABS``: the run's own collection says so)."""
    try:
        from harness.conformance.suite.conftest import vocab_specs
        groups = list(vocab_specs())
    except Exception:
        return None
    shard = config.getoption("conformance_shard", default=None)
    if shard:
        from harness.conformance.shard import parse_shard, shard_groups
        groups = shard_groups(groups, *parse_shard(shard))
    return set(groups)


def _derived_info() -> dict:
    """What the reports say of each derived vocab in ``$VOCABS`` (derived from what, how)."""
    import re
    from harness.inputs.derived import describe, expand, is_derived
    words = [w for w in re.split(r"[\s,]+", os.environ.get("VOCABS", "")) if w]
    try:
        return {w: describe(w) for w in expand(words) if is_derived(w)}
    except Exception as e:  # the report must still be written; the tests' own errors say why
        return {"(unknown)": {"derived_from": "?", "kind": "?", "description": f"{type(e).__name__}: {e}"}}


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def choose_seeds(config) -> tuple[int, object]:
    """Every run has integer seeds, recorded in its report: the fast phase's
    (``CONFORMANCE_SEED``) and Hypothesis' (``--hypothesis-seed``). A seed given is kept;
    a missing one is the other one, or a new random one. The controller sets
    ``CONFORMANCE_SEED`` before xdist starts its workers, which inherit it and take
    Hypothesis' seed from it, so every process uses the same seeds."""
    import random
    hyp = config.getoption("hypothesis_seed", default=None)
    fast = _int_or_none(os.environ.get("CONFORMANCE_SEED", "").strip() or None)
    if fast is None:
        fast = _int_or_none(hyp)
        if fast is None:
            fast = random.SystemRandom().randrange(1, 2**31)
        os.environ["CONFORMANCE_SEED"] = str(fast)
        config._conformance_seed_set = True
    if hyp is None and hasattr(config.option, "hypothesis_seed"):
        config.option.hypothesis_seed = str(fast)
        hyp = fast
    return fast, _int_or_none(hyp) if _int_or_none(hyp) is not None else hyp


def vocab_scope(nodeid: str) -> str:
    """The vocab a suite node id belongs to (its scheduling group), or the node id itself.

    >>> vocab_scope("suite/test_encode.py::test_encode[llama-spm-add_parse]")
    'llama-spm'
    >>> vocab_scope("suite/test_golden.py::test_golden[gpt-2]")
    'gpt-2'
    """
    if "[" not in nodeid:
        return nodeid
    param = nodeid.split("[", 1)[1].rsplit("]", 1)[0]
    head, _, last = param.rpartition("-")
    return head if head and last in ("plain", "parse", "add", "add_parse") else param


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadgroup``, one vocab's tests go to one worker, so each worker
    loads only its share of vocabs. (xdist's own loadgroup marks node ids through
    ``item._nodeid``, which pytest 9.2 no longer reads; this groups by the vocab in
    the node id instead, which any pytest gives.)"""
    if config.getoption("dist", None) != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class VocabScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return vocab_scope(nodeid)

    return VocabScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """``--conformance-shard=I/N``: keep this shard's vocab groups (first, so the suite's
    own hooks, such as BUDGET's share per test, see only the shard's tests)."""
    shard = config.getoption("conformance_shard")
    if shard:
        from harness.conformance.shard import select
        kept, dropped = select(items, shard, vocab_scope)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept


def host_label(spec) -> str:
    """The host an xdist worker runs on: the SSH destination of its gateway, else ``local``.

    >>> from execnet import XSpec
    >>> host_label(XSpec("ssh=-o BatchMode=yes ci@hostB//python=py")), host_label(XSpec("popen"))
    ('ci@hostB', 'local')
    """
    return spec.ssh.split()[-1] if getattr(spec, "ssh", None) else "local"


def _leaves(exc: BaseException):
    """The exception itself, or every leaf of an ExceptionGroup."""
    if isinstance(exc, BaseExceptionGroup):
        for e in exc.exceptions:
            yield from _leaves(e)
    else:
        yield exc


def _cell_of(item) -> tuple[str, str, str]:
    """(vocab, flags, check) of a test item, from its name and parameters."""
    spec = getattr(item, "callspec", None)
    params = spec.params if spec else {}
    vocab = label_of(params.get("vocab", "?"))
    check = item.originalname.removeprefix("test_") if hasattr(item, "originalname") else item.name
    check = {"pieces": "piece", "differential": "encode"}.get(check, check)
    flags = params.get("flags")
    if "special" in params:
        label = "parse" if params["special"] else "plain"
    elif flags is not None:
        from harness.flags import flags_label
        label = flags_label(*flags)
    else:
        label = "plain"
    return vocab, label, check


def tally_json(tally, test: str, replays: bool = False) -> str:
    """One test's tally as its worker ships it to the controller (``RunReport.add`` reads it);
    with the shrunk inputs of its findings for the replay store if the test ``replays`` them
    (it takes the ``replay`` fixture: a store holds only what some test runs first)."""
    return json.dumps({"counts": tally.counts(), "test": test,
                       "findings": [f.to_json() for f in tally.findings],
                       "port_errors": tally.port_errors, "restarts": tally.restarts, "deaths": tally.deaths,
                       "scaling": [s.to_json() for s in tally.scaling], "replay": tally.shrunk if replays else []})


def _is_check(item) -> bool:
    """A conformance test (it has a vocab parameter), whose failure belongs to a cell."""
    spec = getattr(item, "callspec", None)
    return spec is not None and "vocab" in spec.params


def _explained(exc: BaseException, hunts) -> bool:
    """Whether a test's exception is one its hunts already counted: CheckFailed (its
    divergences and port errors) or the exception a hunt stopped on."""
    from harness.engine.hunt import CheckFailed
    return isinstance(exc, CheckFailed) or any(h.error is exc for h in hunts)


def _lone_hunt(item, exc: BaseException):
    """A Hunt for a test that failed before any hunt of its own: its cell gets the
    exception (an error, or the port error that kept the port from opening)."""
    from harness.engine.hunt import Hunt
    vocab, flags, check = _cell_of(item)
    h = Hunt(check, flags, lambda x: None, vocab=vocab)
    h.absorb(exc)
    return h


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    failed = call.excinfo.value if call.excinfo is not None and report.failed else None
    if call.when == "call":
        hunts = list(getattr(item, "conformance_hunts", []))
        if failed is not None and not _explained(failed, hunts) and (hunts or _is_check(item)):
            if hunts:
                hunts[-1].absorb(failed)   # raised outside the hunt's cases (after its guard)
            else:
                hunts = [_lone_hunt(item, failed)]
        replays = "replay" in getattr(item, "fixturenames", ())
        for hunt in hunts:
            report.user_properties.append((TALLY_KEY, tally_json(hunt.tally, item.nodeid, replays)))
    elif call.when == "setup" and failed is not None and _is_check(item):
        # Nothing ran: the port could not be opened (or restarted), or the test failed before
        # it started (the reference cannot load the vocab, say): its cell says so.
        errors = [e for e in _leaves(failed) if isinstance(e, PortError)]
        if errors:
            vocab, flags, check = _cell_of(item)
            counts = {"vocab": vocab, "flags": flags, "check": check, "cases": 0, "port_errors": 1}
            counts.update(outcomes=list(cell_outcomes(counts)), outcome=cell_outcome(counts))
            report.user_properties.append((TALLY_KEY, json.dumps({
                "counts": counts, "test": item.nodeid, "findings": [], "restarts": [],
                "port_errors": [{"message": str(errors[0]), "stderr": errors[0].stderr,
                                 "cases": 0, "fatal": True, "at": "setup"}]})))
        else:
            hunt = _lone_hunt(item, failed)
            report.user_properties.append((TALLY_KEY, tally_json(hunt.tally, item.nodeid)))


class Collector:
    """Controller-side: each test's tally into one :class:`~harness.reports.run.RunReport`,
    then the terminal summary and the report files (also works without xdist)."""

    def __init__(self, config):
        self.config = config
        self.run = RunReport()
        self.started_at = datetime.now(timezone.utc)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodeready(self, node):
        """Which host each xdist worker runs on (the throughput per host)."""
        self.run.worker_hosts[node.gateway.id] = host_label(node.gateway.spec)

    def pytest_runtest_logreport(self, report):
        node = getattr(report, "node", None)  # xdist's controller: the worker it came from
        host = host_label(node.gateway.spec) if hasattr(node, "gateway") else "local"
        for key, value in report.user_properties:
            if key == TALLY_KEY:
                data = json.loads(value)
                self.run.add(data, getattr(report, "worker_id", None) or os.environ.get("PYTEST_XDIST_WORKER", "main"))
                if self._replaying() is not None:
                    self._replaying().take(data, host)

    def pytest_terminal_summary(self, terminalreporter):
        if not (self.run.cells or self.run.reference_cells):
            return
        self.run.derived = self.run.derived or _derived_info()
        for title, text in self.run.summary(self.config.getoption("--conformance-reports")):
            if title is not None:
                terminalreporter.section(title.lstrip("-"), sep="-" if title.startswith("-") else "=")
            terminalreporter.write_line(text)
        replaying = self._replaying()
        if replaying is not None:
            terminalreporter.write_line(replaying.summary_line())
        elif getattr(self.config, "_conformance_replay_error", None):
            terminalreporter.write_line(self.config._conformance_replay_error)
        info = self.run_info()
        terminalreporter.write_line(f"seeds: CONFORMANCE_SEED={info['fast_seed']} "
                                    f"--hypothesis-seed={info['hypothesis_seed']} (give both to run it again)")

    def run_info(self) -> dict:
        """Pin, port, profile, seed, times and host of this run."""
        try:
            from reference.lock import load
            pin = load().commit
        except Exception as e:  # the report must still be written
            pin = f"unknown ({type(e).__name__})"
        from harness.engine.replay import replay_root
        hyp = self.config.getoption("hypothesis_seed", default=None)
        info = {"pin": pin, "port": os.environ.get("PORT") or "harness",
                "profile": os.environ.get("HYPOTHESIS_PROFILE") or "ci",
                "known_examples": os.environ.get("KNOWN_EXAMPLES", "1") != "0",
                "fast_seed": _int_or_none(os.environ.get("CONFORMANCE_SEED")),
                "hypothesis_seed": _int_or_none(hyp) if _int_or_none(hyp) is not None else hyp,
                "reproduce": os.environ.get("LLAMA_CONFORMANCE_REPRODUCE") or None,
                "replay_store": str(replay_root()),
                "vocabs": os.environ.get("VOCABS") or "all pinned",
                "started": self.started_at.isoformat(timespec="seconds"),
                "wall_s": round(time.perf_counter() - self.run.started, 1),
                "host": f"{platform.node()} ({platform.system()} {platform.machine()}, "
                        f"{os.cpu_count()} cpus, Python {platform.python_version()})"}
        self.run.derived = self.run.derived or _derived_info()
        if self.run.derived:
            info["derived"] = self.run.derived
        if self.config.getoption("conformance_shard"):
            info["shard"] = self.config.getoption("conformance_shard").replace(" ", "")
        self.config.hook.pytest_conformance_run_info(config=self.config, info=info)
        return info

    def _replaying(self):
        from harness.conformance.replaying import PLUGIN_NAME
        return self.config.pluginmanager.get_plugin(PLUGIN_NAME)

    def pytest_sessionfinish(self, session):
        if hasattr(self.config, "workerinput"):
            return  # workers ship their data to the controller
        if self._replaying() is not None:
            self._replaying().write_report_store()
        self.run.write(Path(self.config.getoption("--conformance-reports")), self.run_info())
