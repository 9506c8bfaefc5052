"""The controller's xdist session under ``run --hosts``: xdist's own, with two changes.

* **No rsync.** xdist copies pytest itself into every SSH worker's directory (a feature
  it deprecated); each host runs its own installed package instead, found by
  ``--pyargs``, so nothing is copied.
* **A host that dies.** xdist replaces a crashed worker by starting the same spec again,
  and a dead host cannot start it: the run would stop with an internal error. Here a
  worker that goes down is replaced on its own host if that host still answers (a worker
  crash: xdist's own handling, the running test reported failed), else the host is
  *lost*: the worker is replaced on a remaining host, where the lost worker's unfinished
  tests run again (the scheduler puts them back; the test it was running too, from its
  start, not reported failed); with no host left (or the restarts spent) they are
  reported ``not checked`` (skipped tests, each with an empty tally: a ``not checked``
  cell, and the run exits 4, incomplete). A test is never dropped and never passes unrun.
  What happened goes to the run's metadata (``run.workers_down``) and the terminal.
"""

from __future__ import annotations

import json
import time

import execnet
import pytest
from xdist.dsession import DSession
from xdist.workermanage import NodeManager

from harness.conformance.plugin import TALLY_KEY, host_label, vocab_scope
from harness.flags import FLAGS


def cell_of_nodeid(nodeid: str) -> tuple[str, str, str]:
    """(vocab, flags, check) of a suite node id, as the plugin's tallies name them.

    >>> cell_of_nodeid("test_encode.py::test_encode[qwen2-add_parse]")
    ('qwen2', 'add_parse', 'encode')
    >>> cell_of_nodeid("test_pieces.py::test_pieces[gpt-2-parse]"), cell_of_nodeid("test_golden.py::test_golden[gpt-2]")
    (('gpt-2', 'parse', 'piece'), ('gpt-2', 'plain', 'golden'))
    """
    vocab = vocab_scope(nodeid)
    name = nodeid.rsplit("::", 1)[-1]
    last = name.split("[", 1)[-1].rstrip("]").rpartition("-")[2] if "[" in name else ""
    check = name.split("[", 1)[0].removeprefix("test_")
    return vocab, last if last in FLAGS else "plain", {"pieces": "piece"}.get(check, check)


class NoRsyncNodeManager(NodeManager):
    """Every host has the package installed: nothing to rsync (pytest included)."""

    def _getrsyncdirs(self) -> list:
        return []


class HostsSession(DSession):
    """xdist's DSession with the two changes of the module docstring."""

    def __init__(self, config, hosts):
        super().__init__(config)
        self.hosts = hosts  # HostsPlugin: what happened to each host

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session):
        self.nodemanager = NoRsyncNodeManager(self.config)
        self._active_nodes.update(self.nodemanager.setup_nodes(putevent=self.queue.put))
        self._session = session

    def worker_errordown(self, node, error):
        """A worker went down: replace it (its host, else another), or report its work not checked."""
        self.config.hook.pytest_testnodedown(node=node, error=error)
        host = host_label(node.gateway.spec)
        unfinished = [nid for unit in getattr(self.sched, "assigned_work", {}).get(node, {}).values()
                      for nid, done in unit.items() if not done]
        try:
            crashitem = self.sched.remove_node(node)  # puts its unfinished tests back in the queue
        except KeyError:
            crashitem = None  # down before it was scheduled
        self._active_nodes.discard(node)
        self._failed_nodes_count += 1
        idle = not unfinished and not getattr(self.sched, "workqueue", None) \
            and getattr(self.sched, "collection", None) is not None
        if idle:  # down after its last test: nothing to re-run, no worker to start
            replacement, why = None, "it had no test left"
        elif self._max_worker_restart is not None and self._failed_nodes_count > self._max_worker_restart:
            replacement, why = None, f"the {self._max_worker_restart} worker restart(s) allowed are spent"
        else:
            replacement, why = self._replace(node)
        lost = host in self.hosts.lost
        if crashitem and not lost:
            self.handle_crashitem(crashitem, node)  # xdist's: the worker crashed, its host lives
        self.hosts.node_down(node, host, error, unfinished, replacement, why)
        if replacement is not None:
            self.shuttingdown = False  # as xdist does: the replacement runs what was put back
            return
        if not idle and not [n for n in self.sched.nodes if not n.shutting_down]:
            self._not_checked(node, f"host {host} went down ({_short(error)}) and {why}")
        if not self._active_nodes:
            self.triggershutdown()

    def _replace(self, node):
        """(a new worker, None) on the node's host if it answers, else on another live
        host; (None, why) when none answers."""
        spec = node.gateway.spec
        host = host_label(spec)
        candidates = [spec] if host not in self.hosts.lost else []
        candidates += [s for s in self.nodemanager.specs if host_label(s) not in {*self.hosts.lost, host}]
        for s in candidates:
            try:
                return self._start(s), None
            except Exception as e:  # execnet.HostNotFound, OSError, EOFError: the host does not answer
                what = ("ssh could not reach it or start its Python" if isinstance(e, execnet.HostNotFound)
                        else f"{type(e).__name__}: {e}")
                self.hosts.host_lost(host_label(s), f"starting a worker there failed: {what}")
        return None, "no host is left to run its tests"

    def _start(self, spec):
        fresh = execnet.XSpec(str(spec))  # a new id; the spec's python, directory and environment
        self.nodemanager.group.allocate_id(fresh)
        node = self.nodemanager.setup_node(fresh, self.queue.put)
        self._active_nodes.add(node)
        return node

    def _not_checked(self, node, why: str) -> None:
        """Every test still queued: a failed report with a ``not checked`` tally."""
        if getattr(self.sched, "collection", None) is None:  # no worker ever collected: nothing was scheduled
            self.config.hook.pytest_collectreport(report=pytest.CollectReport(
                node.gateway.id, "failed", f"not checked: {why}; the suite never started", []))
            return
        queue = self.sched.workqueue
        ids = [nid for unit in queue.values() for nid, done in unit.items() if not done]
        queue.clear()
        for nid in ids:
            vocab, flags, check = cell_of_nodeid(nid)
            tally = {"counts": {"vocab": vocab, "flags": flags, "check": check, "cases": 0, "seconds": 0.0},
                     "test": nid, "findings": [], "port_errors": [], "restarts": []}
            # skipped, not failed: the cell reads "not checked" and the run exits 4 (incomplete),
            # as for any cell that was not checked; a skip here is never a pass
            rep = pytest.TestReport(nid, (nid.split("::")[0], None, nid), {}, "skipped",
                                    (nid.split("::")[0], 0, f"not checked: {why}"), "call",
                                    user_properties=[(TALLY_KEY, json.dumps(tally))])
            rep.node, rep.worker_id = node, node.gateway.id
            self.config.hook.pytest_runtest_logreport(report=rep)
        self.hosts.not_checked(ids)


class HostsPlugin:
    """Controller plugin of ``run --hosts``: puts :class:`HostsSession` in place of xdist's,
    reports each worker's host as it starts and each host lost, and adds ``hosts`` to the
    run's metadata: per host its facts (probe), workers, and what was lost and re-run."""

    def __init__(self, facts: dict[str, dict]):
        self.facts = facts  # host -> probe facts (local too)
        self.workers: dict[str, list[str]] = {h: [] for h in facts}
        self.lost: dict[str, str] = {}
        self.events: list[dict] = []
        self.started = time.monotonic()
        self.config = None

    def pytest_configure(self, config):
        self.config = config

    def pytest_plugin_registered(self, plugin, plugin_name, manager):
        """xdist registers its session in its own pytest_configure: ours takes its place."""
        if plugin_name != "dsession" or isinstance(plugin, HostsSession):
            return
        manager.unregister(plugin)
        if manager.get_plugin("terminaldistreporter") is not None:
            manager.unregister(name="terminaldistreporter")  # HostsSession registers its own
        manager.register(HostsSession(plugin.config, self), "dsession")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session):
        if not isinstance(session.config.pluginmanager.getplugin("dsession"), HostsSession) \
                and not session.config.getoption("collectonly"):
            raise pytest.UsageError("run --hosts: pytest-xdist's session could not be replaced; this "
                                    "pytest-xdist is not one run --hosts knows (3.5 to 3.8)")

    def say(self, text: str) -> None:
        terminal = self.config.pluginmanager.getplugin("terminalreporter") if self.config else None
        if terminal:
            terminal.write_line(f"llama-conformance: {text}")

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodeready(self, node):
        host = host_label(node.gateway.spec)
        self.workers.setdefault(host, []).append(node.gateway.id)
        info = node.workerinfo
        self.say(f"{node.gateway.id} on {host} ({info.get('platform', '?')}, {info.get('executable', '?')}, "
                 f"in {info.get('cwd', '?')})")

    def host_lost(self, host: str, why: str) -> None:
        if host not in self.lost:
            self.lost[host] = why
            self.say(f"host {host} lost: {why}")

    def node_down(self, node, host: str, error, unfinished: list[str], replacement, why: str | None) -> None:
        event = {"worker": node.gateway.id, "host": host, "at_s": round(time.monotonic() - self.started, 1),
                 "error": _short(error), "unfinished": unfinished, "host_lost": host in self.lost,
                 "replaced_by": (f"{replacement.gateway.id} on {host_label(replacement.gateway.spec)}"
                                 if replacement is not None else None)}
        self.events.append(event)
        then = (f"they run again on {event['replaced_by']}" if replacement is not None
                else f"no new worker started: {why}")
        self.say(f"{node.gateway.id} on {host} went down ({event['error']}) with {len(unfinished)} test(s) "
                 f"unfinished; {then}")

    def not_checked(self, ids: list[str]) -> None:
        if self.events:
            self.events[-1]["not_checked"] = ids
        self.say(f"{len(ids)} test(s) reported not checked: no worker is left to run them")

    def pytest_conformance_run_info(self, config, info):
        info["hosts"] = {h: {"workers": self.workers.get(h, []),
                             **{k: f.get(k) for k in ("node", "platform", "python", "cpus", "cache")},
                             **({"lost": self.lost[h]} if h in self.lost else {})}
                         for h, f in self.facts.items()}
        if self.events:
            info["workers_down"] = self.events


def _short(error) -> str:
    text = str(error).strip().splitlines()
    return text[-1][:200] if text else "no reason given"
