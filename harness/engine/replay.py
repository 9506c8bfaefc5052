"""The replay store: each test's shrunk failing inputs, run first on the next run.

Saved under ``.hypothesis/conformance/`` (``LLAMA_CONFORMANCE_REPLAY`` moves it), one
JSON file per test node id. A convenience: a read-only tree still runs the suite.

>>> jsonable((1, 2)), jsonable("a")
([1, 2], 'a')
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

#: Inputs kept per test (the newest).
KEEP = 40


def replay_root() -> Path:
    """The replay store's directory: ``$LLAMA_CONFORMANCE_REPLAY``, else ``.hypothesis/conformance``."""
    return Path(os.environ.get("LLAMA_CONFORMANCE_REPLAY") or ".hypothesis/conformance")


def _replay_path(key: str) -> Path:
    return replay_root() / (hashlib.sha1(key.encode()).hexdigest()[:20] + ".json")


def jsonable(x):
    return list(x) if isinstance(x, tuple) else x


def load_replay(key: str) -> list:
    """Inputs saved by earlier runs of the test ``key`` (its node id), oldest first."""
    try:
        data = json.loads(_replay_path(key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [tuple(x) if isinstance(x, list) else x for x in data.get("inputs", [])]


def save_replay(key: str, inputs: list) -> None:
    """Remember this run's shrunk failing inputs (merged with earlier ones, at most KEEP)."""
    if not inputs:
        return
    old = [jsonable(x) for x in load_replay(key)]
    merged = old + [x for x in inputs if x not in old]
    path = _replay_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"test": key, "inputs": merged[-KEEP:]}, ensure_ascii=False),
                       encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # the replay store is a convenience; a read-only tree still runs the suite
