"""Hashing, verified atomic placement, and inter-process file locks.

The one rule: a file reaches its final name only after its sha256 matched the
lock. Downloads and copies go to a temporary name in the same directory, are
verified, then renamed over the target; a good cached copy is therefore never
replaced by a bad one, and a crash mid-download leaves only a temp file.

>>> sha256_bytes(b"")[:12]
'e3b0c44298fc'
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
import time
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from harness.errors import HarnessError, IntegrityError

from .lock import Pinned

_CHUNK = 1 << 20


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """The sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def check(path: Path, pinned: Pinned, origin: str) -> None:
    """Raise IntegrityError naming the file, expected and actual hash, unless it matches."""
    size = path.stat().st_size
    actual = sha256_file(path)
    if actual == pinned.sha256 and size == pinned.size:
        return
    kind = "truncated" if size < pinned.size else "corrupt"
    raise IntegrityError(
        f"{pinned.relpath} from {origin} is {kind}: expected sha256 {pinned.sha256} "
        f"({pinned.size} bytes), got sha256 {actual} ({size} bytes). Nothing was replaced. "
        f"If the pin moved on purpose, run `make pin`; otherwise retry or use another SOURCE.")


def place_verified(target: Path, pinned: Pinned, origin: str,
                   write: Callable[[BinaryIO], None]) -> None:
    """Write via ``write(fh)`` to a temp file beside ``target``, verify, then rename."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        check(Path(tmp), pinned, origin)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def not_a_file(path: Path) -> None:
    """One clear error when something other than a regular file sits at ``path`` (a directory, say).

    >>> not_a_file(Path("/"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    harness.errors.HarnessError: / is a directory, where a file belongs; ...
    """
    if path.is_symlink() and not path.exists():
        kind = "a dangling symlink"
    elif not path.exists() or path.is_file():
        return
    else:
        kind = "a directory" if path.is_dir() else "not a regular file"
    raise HarnessError(f"{path} is {kind}, where a file belongs; move or remove it "
                       f"(e.g. `mv {path} {path}.old`), then run `make fetch` again")


def quarantine(path: Path) -> Path:
    """Move a bad cached file aside (never delete it: nothing is lost)."""
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    os.replace(path, aside)
    return aside


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock: safe for xdist workers and two terminals at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
