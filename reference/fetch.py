"""``make fetch``: the selected pin's vocabs and their ``.inp``/``.out`` into ``vocabs/<pin>/``.

The local copy always comes first: a file already in ``vocabs/<pin>/`` whose
sha256 matches the lock is kept and no network is touched. Next comes the
content-addressed store in the cache (``<cache>/store/<sha256>``): a file some
other pin already fetched is hard-linked from there (copied across file
systems), so identical files are stored once. Only what neither holds comes
from the source, into the store first.

A copy that fails its hash is moved aside (never deleted), a verified copy is
fetched in its place, and the run still fails, naming every file moved aside
with the expected and actual hash, even when the source then fails too, so a
corrupted cache never passes silently.

>>> # fetch()                     # sdist from PyPI, the default
>>> # fetch(source="github")      # raw files at the full commit
>>> # fetch(llama_cpp_dir="/src/llama.cpp")
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessError, IntegrityError

from . import lock as _lock
from .integrity import check, file_lock, not_a_file, place_verified, quarantine, sha256_file
from .lock import Pinned
from .paths import store_dir, vocabs_dir
from .sources import make_source


@dataclass
class FetchResult:
    kept: list[str] = field(default_factory=list)
    linked: list[str] = field(default_factory=list)  # taken from the store (another pin had them)
    fetched: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)  # one message per bad cached copy


def fetch(source: str | None = None, llama_cpp_dir: str | None = None,
          dest: Path | None = None, lock: _lock.Lock | None = None,
          store: Path | None = None) -> FetchResult:
    """Make ``dest`` hold every locked file, verified. See the module docstring."""
    lock = lock or _lock.load()
    dest = Path(dest or vocabs_dir(lock.name))
    store = Path(store or store_dir())
    result = FetchResult()
    with file_lock(dest / ".fetch.lock"), file_lock(store / ".lock"):
        missing = _scan(lock.files, dest, result)
        missing = [f for f in missing if not _from_store(f, dest, store, result)]
        if missing:
            _from_source(lock, source, llama_cpp_dir, missing, dest, store, result)
    if result.corrupt:
        raise IntegrityError("\n".join(result.corrupt) +
                             "\nVerified copies were fetched in their place; run `make fetch` again to confirm.")
    return result


def _from_source(lock, source, llama_cpp_dir, missing, dest, store, result) -> None:
    try:
        src = make_source(lock, source, llama_cpp_dir)
        print(f"fetch: {len(missing)} file(s) of pin {lock.name} from {src.label}", file=sys.stderr)
        staged = {f.sha256: f for f in missing}
        src.put_many([Pinned(f.relpath, f.sha256, f.size) for f in staged.values()], store, by_hash=True)
        result.corrupt += getattr(src, "replaced", [])
    except HarnessError as e:
        if not result.corrupt:
            raise
        # The source failed after bad copies were moved aside: name them too, not just the failure.
        raise type(e)("\n".join(result.corrupt) + f"\nNo verified copy could be fetched: {e}") from e
    for f in missing:
        _link(store / f.sha256, dest / f.name)
    result.fetched = [f.name for f in missing]


def _scan(files: tuple[Pinned, ...], dest: Path, result: FetchResult) -> list[Pinned]:
    missing = []
    for f in files:
        target = dest / f.name
        not_a_file(target)
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


def _from_store(f: Pinned, dest: Path, store: Path, result: FetchResult) -> bool:
    entry = store / f.sha256
    not_a_file(entry)
    if not entry.is_file():
        return False
    try:
        check(entry, f, f"the store ({store})")
    except IntegrityError:
        actual = sha256_file(entry)
        aside = quarantine(entry)
        result.corrupt.append(f"{entry} (store entry for {f.name}): sha256 {actual} does not match "
                              f"the lock's {f.sha256}; the bad copy was moved to {aside}")
        return False
    _link(entry, dest / f.name)
    result.linked.append(f.name)
    return True


def _link(entry: Path, target: Path) -> None:
    """Hard-link a verified store entry to ``target``; copy (verified) across file systems."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.link")
    try:
        os.link(entry, tmp)
    except OSError:
        pinned = Pinned(target.name, entry.name, entry.stat().st_size)
        place_verified(target, pinned, str(entry), lambda fh: fh.write(entry.read_bytes()))
        return
    os.replace(tmp, target)


def verify(dest: Path | None = None, lock: _lock.Lock | None = None) -> list[str]:
    """Problems with ``dest`` against the lock (missing or mismatching files); [] if clean."""
    lock = lock or _lock.load()
    dest = Path(dest or vocabs_dir(lock.name))
    problems = []
    for f in lock.files:
        target = dest / f.name
        if target.exists() and not target.is_file():
            problems.append(f"{target}: not a regular file; move it away, then run `make fetch`")
        elif not target.is_file():
            problems.append(f"{target}: missing (run `make fetch`)")
        elif (actual := sha256_file(target)) != f.sha256:
            problems.append(f"{target}: sha256 {actual}, lock says {f.sha256}")
    return problems
