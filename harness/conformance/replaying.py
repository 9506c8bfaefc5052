"""One replay store per run, wherever its tests run (local workers, SSH hosts, shards).

The process that owns the run (the xdist controller, or the only process) opens the
store (:class:`harness.engine.replay.ReplayStore`, this run's pin) and is the only one
that reads or writes it:

* **out**: each worker gets the stored inputs of the run's vocabs in its ``workerinput``
  (``conformance_replay``), so a worker on an SSH host replays what a run on another host
  found; a test takes its own with :func:`replay_inputs`;
* **back**: each test's tally carries the shrunk inputs of its findings (``replay`` in the
  tally JSON, :func:`harness.conformance.plugin.tally_json`), and the controller adds them
  to the store as each test's report arrives, so what a host found before it died is kept;
* **report**: the inputs this run found are also written to ``<report dir>/replay/`` (a
  store of its own): ``llama-conformance merge`` unions the shards' into the merged
  report's and into the local store, ``run --replay-from DIR`` adds a directory's to the
  local store before the run.

The run's JSON says what went where (``run.replay``)::

    {"store": ".hypothesis/conformance", "pin": "0c1e570",
     "sent": {"local": 12}, "replayed": {"local": 12},  # stored inputs each host got; ran there
     "found": {"hostB": 3}, "added": 2,                 # inputs each host brought back; new to the store
     "report_store": "reports/replay",                 # where this run's found inputs were written
     "other_pins": {"4df29be": 5}, "problems": [...]}  # entries kept, not replayed; files skipped

>>> import tempfile
>>> d = Path(tempfile.mkdtemp()); (d / "replay").mkdir()
>>> store_of(d) == d / "replay", store_of(d / "replay") == d / "replay"
(True, True)
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.engine.replay import ReplayStore, check_key, count_inputs, from_json, replay_root
from harness.errors import HarnessError

WORKERINPUT_KEY = "conformance_replay"
PLUGIN_NAME = "conformance-replay"
REPORT_SUBDIR = "replay"


class ReplayError(HarnessError, ValueError):
    """A replay store named on the command line that is not there."""


def run_pin() -> str:
    """The name of the pin this run checks against (``$PIN``, else the newest)."""
    from reference.lock import load
    return load(pin=os.environ.get("PIN") or None).name


def store_of(path: str | Path) -> Path:
    """The store a ``--replay-from`` or ``merge`` argument names: a report directory's
    ``replay/`` if it has one, else the directory itself (a store's root)."""
    path = Path(path)
    return path / REPORT_SUBDIR if (path / REPORT_SUBDIR).is_dir() else path


def replay_inputs(config, nodeid: str) -> list:
    """The stored inputs of the test ``nodeid`` for this process: a worker's from its
    ``workerinput``, the only process' from the run's store; ``[]`` without the plugin.

    The inputs come back as the checks take them (a list of ids is a tuple)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        entries = workerinput.get(WORKERINPUT_KEY) or {}
    else:
        plugin = config.pluginmanager.get_plugin(PLUGIN_NAME)
        entries = plugin.entries if plugin is not None else {}
    return [from_json(x) for x in entries.get(check_key(nodeid), [])]


class Replaying:
    """Controller side: the store out to the workers, their findings back in (module docstring).

    ``groups``: the vocab groups the run checks (None: every entry goes out); ``scope(key)``
    the group of a check's key; ``host_of(spec)`` the host of an xdist worker's spec."""

    def __init__(self, store: ReplayStore, report_dir: Path, groups: set[str] | None,
                 scope: Callable[[str], str], host_of: Callable):
        self.store, self.report_dir, self.host_of = store, report_dir, host_of
        self.entries = store.entries(lambda key: groups is None or scope(key) in groups)
        self.sent: Counter = Counter()
        self.replayed: Counter = Counter()
        self.found: Counter = Counter()
        self.added = 0
        self.found_entries: dict[str, list] = {}

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        """xdist: hand a starting worker (local or on a host) the run's stored inputs."""
        node.workerinput[WORKERINPUT_KEY] = self.entries
        self.sent[self.host_of(node.gateway.spec)] = count_inputs(self.entries)  # each host once, not per worker

    def take(self, tally: dict, host: str) -> None:
        """One test's tally as it arrives from ``host``: its shrunk inputs into the store now
        (what a host found before it died is kept), its replayed inputs counted."""
        self.replayed[host] += tally.get("counts", {}).get("replayed", 0)
        inputs = tally.get("replay") or []
        if inputs:
            check = check_key(tally["test"])
            mine = self.found_entries.setdefault(check, [])
            new = []
            for x in inputs:
                if x not in mine:  # two causes shrunk to one input: found once
                    mine.append(x)
                    new.append(x)
            self.found[host] += len(new)
            self.added += self.store.save(check, new)

    def pytest_conformance_run_info(self, config, info: dict) -> None:
        info["replay_store"] = str(self.store.root)
        info["replay"] = self.to_json()

    def write_report_store(self) -> Path | None:
        """This run's found inputs as a store in ``<report dir>/replay`` (for merge and
        ``--replay-from``), replacing an earlier run's there; None if it found none."""
        import shutil
        target = self.report_dir / REPORT_SUBDIR
        if target.resolve() == self.store.root.resolve():
            return target if self.found_entries else None  # the store itself: it holds them, and more to keep
        shutil.rmtree(target, ignore_errors=True)  # a report's store is this run's findings only
        if not self.found_entries:
            return None
        out = ReplayStore(self.report_dir / REPORT_SUBDIR, self.store.pin, self.store.problems)
        for key, inputs in sorted(self.found_entries.items()):
            out.save(key, inputs)
        return out.root

    def _sent(self) -> Counter:
        # Without xdist no worker is configured: this process replays the entries itself.
        return self.sent if self.sent else Counter({"local": count_inputs(self.entries)})

    def to_json(self) -> dict:
        report = self.report_dir / REPORT_SUBDIR
        return {"store": str(self.store.root), "pin": self.store.pin,
                "sent": dict(sorted(self._sent().items())), "replayed": dict(sorted(self.replayed.items())),
                "found": dict(sorted(self.found.items())), "added": self.added,
                "report_store": str(report) if self.found_entries else None,
                "other_pins": self.store.other_pins(),
                "problems": self.store.problems + [f"{p}: an entry of the store's first format (keyed by node id, "
                                                   "no pin); kept, not replayed" for p in self.store.old_files()]}

    def summary_line(self) -> str:
        """One line for the terminal: what went out, what ran, what came back."""
        sent = self._sent()
        replayed, found = (sum(c.values()) for c in (self.replayed, self.found))
        hosts = sorted(set(sent) | set(self.found))
        per = "" if hosts in ([], ["local"]) else " (" + "; ".join(
            f"{h}: {sent[h]} out, {self.replayed[h]} replayed, {self.found[h]} back" for h in hosts) + ")"
        line = (f"replay: store {self.store.root} (pin {self.store.pin}): {count_inputs(self.entries)} stored "
                f"input(s) for this run's vocabs, {replayed} replayed; {found} shrunk input(s) found, "
                f"{self.added} new to the store{per}")
        others = self.store.other_pins()
        if others:
            line += "; kept for other pins, not replayed: " + ", ".join(f"{p} ({n})" for p, n in others.items())
        problems = self.to_json()["problems"]
        return line + "".join(f"\n  skipped: {p}" for p in problems)


def open_replaying(report_dir: Path, groups: set[str] | None, scope: Callable[[str], str],
                   host_of: Callable) -> Replaying:
    """The run's :class:`Replaying`, on ``$LLAMA_CONFORMANCE_REPLAY`` (else the default store)."""
    return Replaying(ReplayStore(replay_root(), run_pin()), report_dir, groups, scope, host_of)


def add_stores(sources: list[str], store: ReplayStore) -> tuple[int, list[str]]:
    """Union every store named in ``sources`` (report directories or stores) into ``store``:
    ``(inputs added, lines saying what came from where)``; ReplayError for a source that
    does not exist (a report directory without ``replay/``: its run found nothing).

    >>> add_stores(["/nonexistent/reports"], None)
    Traceback (most recent call last):
    ...
    harness.conformance.replaying.ReplayError: --replay-from /nonexistent/reports: no such directory; give a report directory of llama-conformance run or merge (its replay/), or a replay store
    """
    missing = [s for s in sources if not Path(s).is_dir()]
    if missing:
        raise ReplayError(f"--replay-from {missing[0]}: no such directory; give a report directory of "
                          "llama-conformance run or merge (its replay/), or a replay store")
    added, lines = 0, []
    for source in sources:
        path = store_of(source)
        if path == Path(source) and (path / "conformance.json").is_file():
            lines.append(f"{source}: a report whose run found nothing (no {REPORT_SUBDIR}/); nothing added")
            continue
        n = store.union(path)
        added += n
        lines.append(f"{path}: {n} input(s) new to {store.root}")
    return added, lines
