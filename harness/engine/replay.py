"""The replay store: each check's shrunk failing inputs, run first on the next run.

A directory (``$LLAMA_CONFORMANCE_REPLAY``, else ``.hypothesis/conformance``) with one
subdirectory per pin and in it one JSON file per check, named by the check's *key*: the
test's name with its parameters (``test_encode[qwen2-add_parse]``), which is the same on
every host, whatever path the suite was collected from::

    .hypothesis/conformance/0c1e570/3f2a....json
        {"format": 2, "pin": "0c1e570", "test": "test_encode[qwen2-add_parse]", "inputs": [...]}

Only the process that owns the run (the xdist controller, or the only process) reads and
writes the store (:mod:`harness.conformance.replaying`): workers, local or on SSH hosts, get
the entries of their run's vocabs in their ``workerinput`` and send their new shrunk inputs
back with their tallies, so a run goes by one store wherever its tests run.

Entries of another pin are kept and not replayed. A file the harness cannot read (not JSON,
another format, the store of an older harness that keyed entries by node id) is reported
once per run and skipped; it is never a crash and never rewritten. The store is a
convenience: a read-only tree still runs the suite (a write that fails is reported too).

>>> check_key("../venv/lib/python3.11/site-packages/harness/conformance/suite/test_encode.py::test_encode[qwen2-plain]")
'test_encode[qwen2-plain]'
>>> jsonable((1, 2)), jsonable("a"), from_json([1, 2])
([1, 2], 'a', (1, 2))
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

#: Inputs kept per check (the newest).
KEEP = 40
#: The entry format this harness writes and replays.
FORMAT = 2


def replay_root() -> Path:
    """The replay store's directory: ``$LLAMA_CONFORMANCE_REPLAY``, else ``.hypothesis/conformance``."""
    return Path(os.environ.get("LLAMA_CONFORMANCE_REPLAY") or ".hypothesis/conformance")


def check_key(nodeid: str) -> str:
    """The store's key of a test: its name with its parameters (the part after the last ``::``)."""
    return nodeid.rsplit("::", 1)[-1]


def jsonable(x):
    return list(x) if isinstance(x, tuple) else x


def from_json(x):
    """An input as the checks take it: a JSON list of ids is a tuple (``jsonable``'s inverse)."""
    return tuple(x) if isinstance(x, list) else x


def _file_name(key: str) -> str:
    return hashlib.sha1(key.encode()).hexdigest()[:20] + ".json"


@dataclass
class ReplayStore:
    """The store at ``root``, as seen by a run of ``pin`` (the pin's name, e.g. ``0c1e570``).

    >>> import tempfile
    >>> s = ReplayStore(Path(tempfile.mkdtemp()), "0c1e570")
    >>> s.save("test_encode[qwen2-plain]", ["a1", "b"]), s.save("test_encode[qwen2-plain]", ["b", "c"])
    (2, 1)
    >>> s.load("test_encode[qwen2-plain]"), s.entries()
    (['a1', 'b', 'c'], {'test_encode[qwen2-plain]': ['a1', 'b', 'c']})
    """

    root: Path
    pin: str
    #: ``path: why`` of each file that could not be read or written, once each
    problems: list[str] = field(default_factory=list)

    @property
    def pin_dir(self) -> Path:
        return self.root / self.pin

    def _problem(self, path: Path, why: str) -> None:
        text = f"{path}: {why}"
        if text not in self.problems:
            self.problems.append(text)

    def _read(self, path: Path) -> dict | None:
        """An entry of this pin, or None (a missing file; an unreadable one is a problem)."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            self._problem(path, f"not a replay entry ({type(e).__name__}: {e}); skipped, left as it is")
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("inputs"), list) \
                or not isinstance(data.get("test"), str):
            self._problem(path, f"not a replay entry of format {FORMAT} (written by another version of the "
                                "harness?); skipped, left as it is")
            return None
        if data.get("pin") != self.pin:
            self._problem(path, f"an entry of pin {data.get('pin')!r} in the directory of pin {self.pin}; skipped")
            return None
        return data

    def load(self, key: str) -> list:
        """The inputs stored for the check ``key``, oldest first."""
        data = self._read(self.pin_dir / _file_name(key))
        return [from_json(x) for x in data["inputs"]] if data else []

    def save(self, key: str, inputs: Iterable) -> int:
        """Add ``inputs`` to the check's entry (kept once each, the newest KEEP); how many were new."""
        old = [jsonable(x) for x in self.load(key)]
        new = [x for x in dict.fromkeys(map(from_json, inputs)) if jsonable(x) not in old]
        if not new:
            return 0
        merged = old + [jsonable(x) for x in new]
        path = self.pin_dir / _file_name(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"format": FORMAT, "pin": self.pin, "test": key, "inputs": merged[-KEEP:]},
                                      ensure_ascii=False), encoding="utf-8")
            tmp.replace(path)
        except OSError as e:  # a read-only tree still runs the suite; the run says what was not kept
            self._problem(path, f"not written ({type(e).__name__}: {e}); this run's new inputs are not kept")
            return 0
        return len(new)

    def entries(self, keep: Callable[[str], bool] = lambda key: True) -> dict[str, list]:
        """Every check of this pin whose key ``keep`` accepts -> its inputs (JSON values)."""
        out: dict[str, list] = {}
        for path in sorted(self.pin_dir.glob("*.json")):
            data = self._read(path)
            if data and data["inputs"] and keep(data["test"]):
                out[data["test"]] = data["inputs"]
        return out

    def other_pins(self) -> dict[str, int]:
        """Pin name -> number of entries kept for it (not replayed by this run)."""
        out = {}
        if self.root.is_dir():
            for d in sorted(p for p in self.root.iterdir() if p.is_dir() and p.name != self.pin):
                n = sum(1 for _ in d.glob("*.json"))
                if n:
                    out[d.name] = n
        return out

    def old_files(self) -> list[Path]:
        """Entries of the store's first format (keyed by node id, no pin) at its top: kept, not replayed."""
        return sorted(self.root.glob("*.json")) if self.root.is_dir() else []

    def union(self, other: Path) -> int:
        """Add every entry of the store at ``other`` (every pin's) to this one; inputs added."""
        added = 0
        for pin_dir in sorted(p for p in other.iterdir() if p.is_dir()) if other.is_dir() else ():
            theirs = ReplayStore(other, pin_dir.name, self.problems)
            mine = ReplayStore(self.root, pin_dir.name, self.problems)
            for key, inputs in theirs.entries().items():
                added += mine.save(key, [from_json(x) for x in inputs])
        return added



def count_inputs(entries: dict[str, list]) -> int:
    """The number of inputs in ``entries`` (key -> inputs)."""
    return sum(len(v) for v in entries.values())
