"""``make pin REF=<commit> SOURCE=github|dir``: move the pin on purpose.

Hashes every ``models/ggml-vocab-*`` file of the new commit, rewrites
``reference/lock.json`` and prints exactly which files were added, removed or
changed, so the move is reviewed like any other diff.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from harness.errors import HarnessError

from . import lock as _lock
from .integrity import sha256_file
from .sources import GithubSource, download

_VOCAB_FILE = re.compile(r"^ggml-vocab-[\w.+-]+\.gguf(\.inp|\.out)?$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def _from_dir(root: Path) -> dict[str, tuple[str, int]]:
    models = root / "models"
    if not models.is_dir():
        raise HarnessError(f"{models} does not exist; LLAMA_CPP_DIR must be a llama.cpp checkout")
    return {f"models/{p.name}": (sha256_file(p), p.stat().st_size)
            for p in sorted(models.iterdir()) if _VOCAB_FILE.match(p.name)}


def _from_github(commit: str) -> dict[str, tuple[str, int]]:
    import requests

    api = os.environ.get("LLAMA_CONFORMANCE_GITHUB_API", "https://api.github.com/repos/ggml-org/llama.cpp")
    resp = requests.get(f"{api}/contents/models", params={"ref": commit}, timeout=60)
    if resp.status_code != 200:
        raise HarnessError(f"listing models/ at {commit} failed: HTTP {resp.status_code}")
    names = sorted(e["name"] for e in resp.json() if _VOCAB_FILE.match(e.get("name", "")))
    src = GithubSource(_lock.Lock(commit=commit, sdist={}, files=()))
    out = {}
    for name in names:
        with tempfile.NamedTemporaryFile() as fh:
            download(src.url(f"models/{name}"), fh)
            fh.flush()
            out[f"models/{name}"] = (sha256_file(Path(fh.name)), Path(fh.name).stat().st_size)
    return out


def diff(old: _lock.Lock, new: dict[str, tuple[str, int]]) -> list[str]:
    """Human-readable lines: ``+ added``, ``- removed``, ``~ changed``."""
    before = {f.relpath: (f.sha256, f.size) for f in old.files}
    lines = [f"+ {k}" for k in sorted(new.keys() - before.keys())]
    lines += [f"- {k}" for k in sorted(before.keys() - new.keys())]
    lines += [f"~ {k}" for k in sorted(new.keys() & before.keys()) if new[k] != before[k]]
    return lines


def pin(ref: str, source: str, llama_cpp_dir: str | None = None, path: Path = _lock.LOCK_PATH) -> list[str]:
    """Rewrite the lock for commit ``ref`` from ``source``; return the diff lines."""
    if not _COMMIT.match(ref):
        raise HarnessError(f"REF={ref!r} is not a full 40-hex commit; pin an exact commit, not a branch")
    if source == "dir":
        root = llama_cpp_dir or os.environ.get("LLAMA_CPP_DIR")
        if not root:
            raise HarnessError("SOURCE=dir needs LLAMA_CPP_DIR=/path/to/llama.cpp checked out at REF")
        files = _from_dir(Path(root))
    elif source == "github":
        files = _from_github(ref)
    else:
        raise HarnessError(f"make pin takes SOURCE=github or SOURCE=dir, not {source!r}")
    if not any(k.endswith(".gguf") for k in files):
        raise HarnessError(f"no models/ggml-vocab-*.gguf found at {ref} via {source}; nothing pinned")
    old = _lock.load(path)
    changes = diff(old, files)
    # The sdist entry stays only if the commit is unchanged: no sdist is known to vendor another one.
    sdist = old.sdist if ref == old.commit else None
    _lock.dump(ref, sdist, files, path)
    return changes


def main(ref: str, source: str) -> int:
    changes = pin(ref, source)
    print(f"pinned llama.cpp {ref}; {len(changes)} file(s) changed:")
    for line in changes:
        print(f"  {line}")
    print(f"lock written to {_lock.LOCK_PATH}; review it with `git diff {_lock.LOCK_PATH}`")
    return 0
