"""``make pin``: add a pin to the lock on purpose, and say what changed.

* ``make pin SDIST=0.3.36``: the tree a ``llama-cpp-python`` sdist vendors. The sdist is
  downloaded with pip (into the cache), the llama.cpp commit prefix is read from the
  version's CHANGELOG entry ("update llama.cpp to ggml-org/llama.cpp@0c1e57098"), and the
  extracted tree is hashed (``tree_sha256``) so the pin stays content-addressed.
* ``make pin REF=<40-hex> SOURCE=github|dir``: a commit no sdist vendors.

Either way every ``models/ggml-vocab-*`` file is hashed, the new pin becomes the newest
(the default) in ``reference/lock.json``, and the changes against the previous default
are printed: files added (``+``), removed (``-``) and changed (``~``); pre-tokenizer
names added and removed; whether the tokenizer sources changed.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from harness.errors import HarnessError, ReferenceUnavailable

from . import lock as _lock
from .integrity import file_lock, not_a_file, sha256_file
from .paths import cache_dir
from .sources import GithubSource, download, make_source

_VOCAB_FILE = re.compile(r"^ggml-vocab-[\w.+-]+\.gguf(\.inp|\.out)?$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
PACKAGE = "llama-cpp-python"
# The files whose change can change token ids (llama.cpp's tokenizer and its Unicode tables).
TOKENIZER_SOURCES = ("src/llama-vocab.cpp", "src/llama-vocab.h", "src/unicode.cpp", "src/unicode.h",
                     "src/unicode-data.cpp", "src/unicode-data.h")


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


# --- sdist ------------------------------------------------------------------------------------

def download_sdist(version: str) -> Path:
    """``llama-cpp-python==<version>`` sdist in the cache (pip download), reused if present."""
    root = cache_dir() / "sdist"
    target = root / f"llama_cpp_python-{version}.tar.gz"
    with file_lock(root / ".lock"):
        not_a_file(target)
        if target.is_file():
            return target
        spec = f"{PACKAGE}=={version}"
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                   "--disable-pip-version-check", "-d", tmp, spec]
            print(f"pin: downloading {spec} from PyPI with pip", file=sys.stderr)
            proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            got = Path(tmp) / target.name
            if proc.returncode != 0 or not got.is_file():
                raise ReferenceUnavailable(f"`{' '.join(cmd)}` failed (exit {proc.returncode}); check the "
                                           f"version and network access to PyPI.\n{proc.stderr[-2000:]}")
            os.replace(got, target)
    return target


def changelog_commit(changelog: str, version: str) -> str:
    """The llama.cpp commit prefix the CHANGELOG entry of ``version`` names.

    >>> changelog_commit("## [0.3.36]\\n\\n- feat: update llama.cpp to ggml-org/llama.cpp@0c1e57098\\n"
    ...                  "## [0.3.35]\\n- feat: update llama.cpp to ggml-org/llama.cpp@4df29be4f\\n", "0.3.36")
    '0c1e57098'
    """
    head = re.search(rf"^## \[{re.escape(version)}\][^\n]*\n(.*?)(?=^## \[|\Z)", changelog, re.M | re.S)
    if not head:
        raise HarnessError(f"CHANGELOG.md has no `## [{version}]` entry; is {version} a released version?")
    commits = re.findall(r"llama\.cpp@([0-9a-f]{7,40})\b", head.group(1))
    if len(commits) != 1:
        raise HarnessError(f"CHANGELOG.md entry {version} names {len(commits)} llama.cpp commits "
                           f"({', '.join(commits) or 'none'}); expected exactly one. Pin with REF= instead")
    return commits[0]


def scan_sdist(archive: Path, version: str) -> dict:
    """Commit prefix, tree hash, tree path and vocab files of an sdist, in one pass."""
    top = f"llama_cpp_python-{version}"
    tree = f"{top}/vendor/llama.cpp"
    tree_hash, files, changelog = [], {}, None
    with tarfile.open(archive, "r:gz") as tar:
        for m in tar:
            if m.name == f"{top}/CHANGELOG.md":
                changelog = tar.extractfile(m).read().decode("utf-8", "replace")
            if not m.name.startswith(tree + "/"):
                continue
            rel = m.name[len(tree) + 1:]
            if m.isfile():
                data = tar.extractfile(m).read()
                sha = hashlib.sha256(data).hexdigest()
                tree_hash.append(f"{rel}\0{sha}\n")
                if rel.startswith("models/") and _VOCAB_FILE.match(rel[len("models/"):]):
                    files[rel] = (sha, len(data))
            elif m.issym() or m.islnk():
                tree_hash.append(f"{rel}\0->{m.linkname}\n")
    if changelog is None:
        raise HarnessError(f"{archive} has no {top}/CHANGELOG.md; cannot tell which llama.cpp it vendors")
    if not files:
        raise HarnessError(f"{archive} vendors no {tree}/models/ggml-vocab-*.gguf; nothing to pin")
    return {"commit": changelog_commit(changelog, version), "tree": tree, "files": files,
            "tree_sha256": hashlib.sha256("".join(sorted(tree_hash)).encode()).hexdigest()}


def pin_sdist(version: str, path: Path = _lock.LOCK_PATH) -> tuple[_lock.Lock, _lock.Lock | None]:
    """Add the pin ``llama-cpp-python==version`` vendors; return (new pin, previous default)."""
    if not re.fullmatch(r"\d+(\.\d+)+\w*", version):
        raise HarnessError(f"SDIST={version!r} is not a version like 0.3.36")
    archive = download_sdist(version)
    scan = scan_sdist(archive, version)
    sdist = {"package": PACKAGE, "version": version, "filename": archive.name,
             "sha256": sha256_file(archive), "tree": scan["tree"], "size": archive.stat().st_size}
    new = _lock.Lock(commit=scan["commit"], sdist=sdist, files=_lock.files_of(scan["files"]),
                     name=scan["commit"][:7], tree_sha256=scan["tree_sha256"], source="sdist")
    return _add(new, path)


def _add(new: _lock.Lock, path: Path) -> tuple[_lock.Lock, _lock.Lock | None]:
    old = _lock.load_all(path)[-1] if Path(path).is_file() else None
    _lock.add(new, path)
    return new, old


def pin(ref: str, source: str, llama_cpp_dir: str | None = None, path: Path = _lock.LOCK_PATH) -> list[str]:
    """Add the pin for commit ``ref`` from ``source``; return the file diff lines."""
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
    new = _lock.Lock(commit=ref, sdist=None, files=_lock.files_of(files), source=source)
    new, old = _add(new, path)
    return diff(old, new) if old else [f"+ {f.relpath}" for f in new.files]


# --- what changed -------------------------------------------------------------------------------

def diff(old: _lock.Lock, new: _lock.Lock | dict[str, tuple[str, int]]) -> list[str]:
    """Human-readable lines: ``+ added``, ``- removed``, ``~ changed``."""
    after = new if isinstance(new, dict) else {f.relpath: (f.sha256, f.size) for f in new.files}
    before = {f.relpath: (f.sha256, f.size) for f in old.files}
    lines = [f"+ {k}" for k in sorted(after.keys() - before.keys())]
    lines += [f"- {k}" for k in sorted(before.keys() - after.keys())]
    lines += [f"~ {k}" for k in sorted(after.keys() & before.keys()) if after[k] != before[k]]
    return lines


def pre_names(tree: Path) -> tuple[dict[str, int], set[str]]:
    """(``LLAMA_VOCAB_PRE_TYPE_*`` -> value from llama-vocab.h, pre strings of llama-vocab.cpp)."""
    header = (tree / "src" / "llama-vocab.h").read_text()
    body = (tree / "src" / "llama-vocab.cpp").read_text()
    types = {n: int(v) for n, v in re.findall(r"LLAMA_VOCAB_PRE_TYPE_(\w+)\s*=\s*(\d+)", header)}
    return types, set(re.findall(r'tokenizer_pre == "([^"]+)"', body))


def static_changes(old: _lock.Lock, old_tree: Path, new: _lock.Lock, new_tree: Path) -> dict:
    """Everything two pins differ in without running them: files, pre names, tokenizer sources."""
    old_types, old_pres = pre_names(old_tree)
    new_types, new_pres = pre_names(new_tree)
    sources = {}
    for rel in TOKENIZER_SOURCES:
        a, b = old_tree / rel, new_tree / rel
        ha = sha256_file(a) if a.is_file() else None
        hb = sha256_file(b) if b.is_file() else None
        if ha != hb:
            sources[rel] = {"from": ha, "to": hb}
    return {"files": diff(old, new),
            "pre_types_added": sorted(new_types.keys() - old_types.keys()),
            "pre_types_removed": sorted(old_types.keys() - new_types.keys()),
            "pre_names_added": sorted(new_pres - old_pres),
            "pre_names_removed": sorted(old_pres - new_pres),
            "tokenizer_sources_changed": sources,
            "unicode_data_changed": any(k.startswith("src/unicode-data") for k in sources)}


def describe(changes: dict) -> list[str]:
    lines = [f"files ({len(changes['files'])} changed):"] + [f"  {x}" for x in changes["files"]]
    for what in ("pre_types_added", "pre_types_removed", "pre_names_added", "pre_names_removed"):
        lines.append(f"{what.replace('_', ' ')}: {', '.join(changes[what]) or '(none)'}")
    src = changes["tokenizer_sources_changed"]
    lines.append("tokenizer sources changed: " + (", ".join(src) if src else "no"))
    if changes["unicode_data_changed"]:
        lines.append("unicode-data changed: regenerate the tables (tools/gen_unicode_tables.py)")
    return lines


def main(ref: str | None, source: str, sdist: str | None = None) -> int:
    if sdist:
        new, old = pin_sdist(sdist)
        print(f"pinned llama.cpp {new.commit} (tree sha256 {new.tree_sha256[:16]}...) from "
              f"{PACKAGE}=={sdist} as pin {new.name}, now the default")
        if old and old.name != new.name:
            print(f"changes against the previous default {old.name}:")
            old_tree = make_source(old).tree()
            new_tree = make_source(new).tree()
            for line in describe(static_changes(old, Path(old_tree), new, Path(new_tree))):
                print(f"  {line}")
    else:
        if not ref:
            raise HarnessError("usage: make pin SDIST=<llama-cpp-python version> | REF=<commit> SOURCE=github|dir")
        changes = pin(ref, source)
        print(f"pinned llama.cpp {ref}; {len(changes)} file(s) changed:")
        for line in changes:
            print(f"  {line}")
    print(f"lock written to {_lock.LOCK_PATH}; review it with `git diff {_lock.LOCK_PATH}`")
    return 0
