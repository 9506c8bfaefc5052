"""Where pinned files come from: the PyPI sdist, GitHub, or a local checkout.

Each source can (a) put one locked file at a target path, verified, and (b)
give the whole llama.cpp tree for the build. Every file from every source is
checked against the lock before it gets its final name.

* ``sdist`` (default): ``llama-cpp-python==0.3.35`` from PyPI, fetched with
  pip as a package; it vendors the pinned tree under ``vendor/llama.cpp/``.
* ``github``: the files at the full commit over ``requests``
  (``$LLAMA_CONFORMANCE_GITHUB_RAW`` overrides the base URL, e.g. a mirror).
* ``dir``: a local llama.cpp checkout (``LLAMA_CPP_DIR``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import BinaryIO

from harness.errors import HarnessError, ReferenceUnavailable

from .integrity import check, file_lock, not_a_file, place_verified, quarantine, sha256_file
from .lock import Lock, Pinned
from .paths import cache_dir
from .progress import ByteMeter

GITHUB_RAW = "https://raw.githubusercontent.com/ggml-org/llama.cpp"


class Source:
    """Base: ``put(pinned, target)`` and ``tree()``."""

    label = "source"

    def __init__(self, lock: Lock):
        self.lock = lock
        self.replaced = []

    replaced: list[str]  # messages about bad cached downloads this source moved aside

    def put_many(self, files: list[Pinned], dest: Path, by_hash: bool = False) -> None:
        """Put each file into ``dest``, named by its file name or (``by_hash``) its sha256."""
        for f in files:
            self.put(f, dest / (f.sha256 if by_hash else f.name))

    def put(self, pinned: Pinned, target: Path) -> None:
        raise NotImplementedError

    def tree(self) -> Path:
        raise NotImplementedError


class DirSource(Source):
    """A local llama.cpp checkout, e.g. ``LLAMA_CPP_DIR=~/src/llama.cpp``."""

    def __init__(self, lock: Lock, root: Path):
        super().__init__(lock)
        self.root = Path(root)
        self.label = f"LLAMA_CPP_DIR={self.root}"
        if not (self.root / "src" / "llama-vocab.cpp").is_file():
            raise HarnessError(f"LLAMA_CPP_DIR={self.root} is not a llama.cpp checkout "
                               f"(no src/llama-vocab.cpp); point it at the repository root")

    def put(self, pinned: Pinned, target: Path) -> None:
        src = self.root / pinned.relpath
        if not src.is_file():
            raise HarnessError(f"{src} does not exist in {self.label}; is it checked out at "
                               f"{self.lock.commit}?")
        not_a_file(src)
        place_verified(target, pinned, self.label, lambda fh: _copy_file(src, fh))

    def tree(self) -> Path:
        return self.root


def _copy_file(src: Path, fh: BinaryIO) -> None:
    with open(src, "rb") as inp:
        shutil.copyfileobj(inp, fh, 1 << 20)


class SdistSource(Source):
    """The PyPI sdist that vendors the pinned tree (verified by its sha256)."""

    label = "the PyPI sdist"

    def __init__(self, lock: Lock):
        super().__init__(lock)
        if not lock.sdist:
            raise HarnessError("no PyPI sdist vendors this pin (lock has no sdist entry); "
                               "use SOURCE=github or LLAMA_CPP_DIR=...")
        self.sdist = lock.sdist
        self.label = f"{self.sdist['package']}=={self.sdist['version']} sdist"

    def archive(self) -> Path:
        """The verified sdist in the cache, downloaded with pip if absent or bad."""
        root = cache_dir() / "sdist"
        target = root / self.sdist["filename"]
        pinned = Pinned(self.sdist["filename"], self.sdist["sha256"], _size_of(self.sdist))
        with file_lock(root / ".lock"):
            not_a_file(target)
            if target.is_file():
                actual = sha256_file(target)
                if actual == pinned.sha256:
                    return target
                aside = quarantine(target)
                msg = (f"cached sdist {target}: sha256 {actual} does not match the lock's "
                       f"{pinned.sha256}; the bad copy was moved to {aside}")
                print(f"fetch: {msg}; downloading a verified copy in its place", file=sys.stderr)
                self.replaced.append(msg)
            self._download(root, target, pinned)
        return target

    def _download(self, root: Path, target: Path, pinned: Pinned) -> None:
        spec = f"{self.sdist['package']}=={self.sdist['version']}"
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                   "--disable-pip-version-check", "-d", tmp, spec]
            print(f"fetch: downloading {spec} from PyPI (~75 MB) with pip", file=sys.stderr)
            proc = subprocess.run(cmd, stdout=None if sys.stderr.isatty() else subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
            got = Path(tmp) / self.sdist["filename"]
            if proc.returncode != 0 or not got.is_file():
                raise ReferenceUnavailable(f"`{' '.join(cmd)}` failed (exit {proc.returncode}); check "
                                           f"network access to PyPI.\n{proc.stderr[-2000:]}")
            check(got, pinned, f"pip download {spec}")
            print(f"fetch: downloaded {got.stat().st_size / 1e6:.1f} MB", file=sys.stderr)
            os.replace(got, target)

    def put_many(self, files: list[Pinned], dest: Path, by_hash: bool = False) -> None:
        """Extract the wanted members in one pass over the compressed archive."""
        prefix = self.sdist["tree"].rstrip("/") + "/"
        wanted = {prefix + f.relpath: f for f in files}
        with tarfile.open(self.archive(), "r:gz") as tar:
            for member in tar:
                pinned = wanted.pop(member.name, None)
                if pinned is None:
                    continue
                src = tar.extractfile(member)
                if src is None:
                    raise HarnessError(f"{member.name} in {self.label} is not a regular file")
                place_verified(dest / (pinned.sha256 if by_hash else pinned.name), pinned, self.label,
                               lambda fh, s=src: shutil.copyfileobj(s, fh, 1 << 20))
        if wanted:
            raise HarnessError(f"{self.label} lacks {', '.join(sorted(wanted))}; the lock and the "
                               f"sdist disagree: re-pin with `make pin`")

    def put(self, pinned: Pinned, target: Path) -> None:
        self.put_many([pinned], target.parent)

    def tree(self) -> Path:
        """The whole pinned tree, extracted once into the cache."""
        root = cache_dir() / "src" / self.lock.key
        tree = root / self.sdist["tree"]
        stamp = root / ".complete"
        with file_lock(cache_dir() / "src" / f".{self.lock.key}.lock"):
            if stamp.is_file() and tree.is_dir():
                return tree
            archive = self.archive()
            if root.exists():
                shutil.rmtree(root)  # a half-extracted tree from an interrupted run
            tmp = Path(tempfile.mkdtemp(prefix=".extract-", dir=root.parent))
            print(f"fetch: extracting the pinned llama.cpp tree to {root}", file=sys.stderr)
            with tarfile.open(archive, "r:gz") as tar:
                members = [m for m in tar.getmembers() if m.name.startswith(self.sdist["tree"] + "/")]
                tar.extractall(tmp, members=members, filter="data")
            os.replace(tmp, root)
            stamp.write_text(self.lock.key + "\n")
        return tree


def _size_of(sdist: dict) -> int:
    return int(sdist["size"])


class GithubSource(Source):
    """Files at the full commit from GitHub, over requests, with progress on a TTY."""

    def __init__(self, lock: Lock, base: str | None = None):
        super().__init__(lock)
        self.base = (base or os.environ.get("LLAMA_CONFORMANCE_GITHUB_RAW") or GITHUB_RAW).rstrip("/")
        self.label = f"{self.base}/{lock.commit}"

    def url(self, relpath: str) -> str:
        return f"{self.base}/{self.lock.commit}/{relpath}"

    def put(self, pinned: Pinned, target: Path) -> None:
        url = self.url(pinned.relpath)
        place_verified(target, pinned, url, lambda fh: download(url, fh, pinned.size))

    def tree(self) -> Path:
        raise HarnessError("SOURCE=github fetches the pinned files only; to build the reference from "
                           "a commit no sdist vendors, clone it and use LLAMA_CPP_DIR=/path/to/llama.cpp")


def download(url: str, fh: BinaryIO, expected_size: int = 0, timeout: float = 60.0) -> None:
    """Stream ``url`` into ``fh``; errors name the URL. Progress on a terminal."""
    import requests

    try:
        with requests.get(url, stream=True, timeout=timeout) as resp:
            if resp.status_code != 200:
                raise ReferenceUnavailable(f"GET {url} answered HTTP {resp.status_code}")
            done = 0
            # Bytes downloaded, for files of 1 MB or more (in place on a terminal, else every 25 %).
            meter = ByteMeter(f"  {url.rsplit('/', 1)[-1]}", expected_size, step=25) \
                if expected_size >= (1 << 20) else None
            for chunk in resp.iter_content(1 << 16):
                fh.write(chunk)
                done += len(chunk)
                if meter:
                    meter.bytes(done)
            if meter:
                meter.close()
    except requests.RequestException as e:
        raise ReferenceUnavailable(f"GET {url} failed: {e}; check the network or use another SOURCE") from e


def make_source(lock: Lock, kind: str | None = None, llama_cpp_dir: str | None = None) -> Source:
    """Pick a source: LLAMA_CPP_DIR wins, then SOURCE (``sdist`` default)."""
    llama_cpp_dir = llama_cpp_dir or os.environ.get("LLAMA_CPP_DIR")
    kind = (kind or os.environ.get("SOURCE") or ("dir" if llama_cpp_dir else "sdist")).lower()
    if kind == "dir":
        if not llama_cpp_dir:
            raise HarnessError("SOURCE=dir needs LLAMA_CPP_DIR=/path/to/llama.cpp")
        return DirSource(lock, Path(llama_cpp_dir))
    if kind == "sdist":
        return SdistSource(lock)
    if kind == "github":
        return GithubSource(lock)
    raise HarnessError(f"unknown SOURCE={kind!r}; use sdist (default), github, or dir with LLAMA_CPP_DIR")
