"""The pin: one llama.cpp commit and the sha256 of every file taken from it.

The lock is ``reference/lock.json``, committed. Moving the pin is deliberate:
``make pin REF=<commit> SOURCE=github|dir`` rewrites it and prints which
files changed.

>>> lock = load()
>>> lock.commit[:7], len(lock.vocab_names())
('4df29be', 19)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError

LOCK_PATH = Path(__file__).with_name("lock.json")


@dataclass(frozen=True)
class Pinned:
    """One locked file: its path inside the llama.cpp tree, size and sha256."""

    relpath: str
    sha256: str
    size: int

    @property
    def name(self) -> str:
        return self.relpath.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Lock:
    commit: str
    sdist: dict
    files: tuple[Pinned, ...]
    path: Path = LOCK_PATH

    def vocab_names(self) -> list[str]:
        """Sorted vocab names: ``ggml-vocab-qwen2.gguf`` -> ``qwen2``."""
        return sorted(f.name[len("ggml-vocab-"):-len(".gguf")]
                      for f in self.files if f.name.endswith(".gguf"))

    def by_name(self) -> dict[str, Pinned]:
        return {f.name: f for f in self.files}


def load(path: Path = LOCK_PATH) -> Lock:
    """Read and validate the lock file; a malformed lock names the problem."""
    try:
        raw = json.loads(Path(path).read_text())
        files = tuple(Pinned(rel, meta["sha256"], int(meta["size"]))
                      for rel, meta in sorted(raw["files"].items()))
        return Lock(commit=raw["llama_cpp"]["commit"], sdist=raw["sdist"], files=files, path=Path(path))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise HarnessError(f"{path}: unreadable lock file ({e!r}); restore it with "
                           f"`git checkout -- {path}` or rewrite it with `make pin`") from e


def dump(commit: str, sdist: dict, files: dict[str, tuple[str, int]], path: Path = LOCK_PATH) -> None:
    """Write a lock file (used by ``make pin``)."""
    body = {
        "schema": 1,
        "llama_cpp": {"commit": commit},
        "sdist": sdist,
        "files": {rel: {"sha256": sha, "size": size} for rel, (sha, size) in sorted(files.items())},
    }
    Path(path).write_text(json.dumps(body, indent=2) + "\n")
