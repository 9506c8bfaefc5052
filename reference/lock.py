"""The pins: llama.cpp commits and the sha256 of every file taken from each.

The lock is ``reference/lock.json``, committed: a list of pins, oldest first.
Each pin has a ``name`` (the commit's 7-hex prefix), the llama.cpp ``commit``
(a full hash where known; from an sdist, the prefix its CHANGELOG gives plus
``tree_sha256``, a hash of the extracted tree, so the pin stays content-addressed),
its ``source`` and its files' hashes.

``PIN=<name or commit prefix>`` (environment) selects the pin every target uses;
the default is the newest (the last in the list). Moving or adding a pin is
deliberate: ``make pin SDIST=<version>`` or ``make pin REF=<commit> SOURCE=github|dir``.

>>> lock = load()
>>> len(lock.name), len(lock.vocab_names())
(7, 19)
>>> [p.name for p in load_all()][:1]
['4df29be']
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.errors import HarnessError

LOCK_PATH = Path(__file__).with_name("lock.json")
SCHEMA = 2
_FULL_COMMIT = re.compile(r"^[0-9a-f]{40}$")


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
    """One pin. ``key`` names its cache entries (extracted tree, build)."""

    commit: str
    sdist: dict | None
    files: tuple[Pinned, ...]
    path: Path = LOCK_PATH
    name: str = ""
    tree_sha256: str | None = None
    source: str = "sdist"
    extra: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if not self.name:
            object.__setattr__(self, "name", self.commit[:7])

    @property
    def key(self) -> str:
        """The full commit, or ``<prefix>-<tree hash>`` for a pin known by prefix only.

        >>> Lock("0c1e57098", None, (), tree_sha256="ab" * 32).key
        '0c1e57098-abababababababab'
        """
        if _FULL_COMMIT.match(self.commit) or not self.tree_sha256:
            return self.commit
        return f"{self.commit}-{self.tree_sha256[:16]}"

    def vocab_names(self) -> list[str]:
        """Sorted vocab names: ``ggml-vocab-qwen2.gguf`` -> ``qwen2``."""
        return sorted(f.name[len("ggml-vocab-"):-len(".gguf")]
                      for f in self.files if f.name.endswith(".gguf"))

    def by_name(self) -> dict[str, Pinned]:
        return {f.name: f for f in self.files}

    def matches(self, wanted: str) -> bool:
        """``PIN`` matches by name or by a commit prefix (at least 4 hex digits)."""
        wanted = wanted.strip().lower()
        return wanted == self.name or (len(wanted) >= 4 and (
            self.commit.startswith(wanted) or wanted.startswith(self.commit)))


def load_all(path: Path = LOCK_PATH) -> list[Lock]:
    """Every pin in the lock, oldest first; a malformed lock names the problem."""
    try:
        raw = json.loads(Path(path).read_text())
        if raw.get("schema") != SCHEMA:
            raise ValueError(f"schema {raw.get('schema')!r}, expected {SCHEMA}")
        pins = [_pin_from_json(p, Path(path)) for p in raw["pins"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise HarnessError(f"{path}: unreadable lock file ({e!r}); restore it with "
                           f"`git checkout -- {path}` or rewrite it with `make pin`") from e
    if not pins:
        raise HarnessError(f"{path}: the lock holds no pin; add one with `make pin SDIST=<version>`")
    return pins


def _pin_from_json(p: dict, path: Path) -> Lock:
    files = tuple(Pinned(rel, meta["sha256"], int(meta["size"])) for rel, meta in sorted(p["files"].items()))
    return Lock(commit=p["llama_cpp"]["commit"], sdist=p.get("sdist"), files=files, path=path,
                name=p["name"], tree_sha256=p["llama_cpp"].get("tree_sha256"), source=p.get("source", "sdist"))


def select(wanted: str | None, pins: list[Lock]) -> Lock:
    """The pin ``wanted`` names (name or commit prefix); ``None``/empty: the newest.

    >>> select(None, load_all()).name == load_all()[-1].name
    True
    """
    if not wanted:
        return pins[-1]
    hits = [p for p in pins if p.matches(wanted)]
    if len(hits) == 1:
        return hits[0]
    known = ", ".join(f"{p.name} ({p.commit})" for p in pins)
    why = "matches several pins" if hits else "matches no pin"
    raise HarnessError(f"PIN={wanted!r} {why} in {pins[0].path}; pinned: {known}")


def load(path: Path = LOCK_PATH, pin: str | None = None) -> Lock:
    """The selected pin: ``pin``, else ``$PIN``, else the newest."""
    return select(pin if pin is not None else os.environ.get("PIN"), load_all(path))


def _pin_to_json(lock: Lock) -> dict:
    commit = {"commit": lock.commit}
    if lock.tree_sha256:
        commit["tree_sha256"] = lock.tree_sha256
    return {"name": lock.name, "llama_cpp": commit, "source": lock.source, "sdist": lock.sdist,
            "files": {f.relpath: {"sha256": f.sha256, "size": f.size} for f in lock.files}}


def dump_all(pins: list[Lock], path: Path = LOCK_PATH) -> None:
    """Write the lock (used by ``make pin``); pins oldest first, the last is the default."""
    body = {"schema": SCHEMA, "pins": [_pin_to_json(p) for p in pins]}
    tmp = Path(path).with_name(f".{Path(path).name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(body, indent=2) + "\n")
    os.replace(tmp, path)  # a reader (a running server) never sees half a lock


def add(new: Lock, path: Path = LOCK_PATH) -> list[Lock]:
    """Put ``new`` into the lock as the newest pin (replacing a pin of the same name)."""
    pins = [p for p in load_all(path) if p.name != new.name] if Path(path).is_file() else []
    pins.append(replace(new, path=Path(path)))
    dump_all(pins, path)
    return pins


def files_of(files: dict[str, tuple[str, int]]) -> tuple[Pinned, ...]:
    return tuple(Pinned(rel, sha, size) for rel, (sha, size) in sorted(files.items()))
