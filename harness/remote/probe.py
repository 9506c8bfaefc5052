"""What a host has, as JSON: run there by its own Python (``python -m harness.remote.probe``)
and here, and compared: ``run --hosts`` starts no worker on a host whose package differs
from this one's (another version or other files: the digest) or that lacks the pin's
vocabs or build, and says which ``prepare`` fixes it.

>>> sorted(facts(verify_vocabs=False))  # doctest: +NORMALIZE_WHITESPACE
['build', 'build_error', 'cache', 'commit', 'cpus', 'digest', 'node', 'pin', 'platform', 'python',
 'version', 'vocab_problems']
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from pathlib import Path

DISTRIBUTION = "llama-tokenizer-conformance"
# The files a wheel of this package holds (pyproject.toml: packages harness*, reference*,
# reference's package data); the digest covers exactly those, so an editable checkout and
# the wheel `make dist` builds from it agree.
PACKAGES = {"harness": (".py",), "reference": (".py", ".json", ".c", ".cpp")}


def package_digest() -> str:
    """sha256 over the package's files (relative path and bytes), sorted; 16 hex digits."""
    import harness
    import reference

    h = hashlib.sha256()
    for pkg in (harness, reference):
        root = Path(pkg.__file__).parent
        suffixes = PACKAGES[pkg.__name__]
        files = sorted(p for p in root.rglob("*") if p.suffix in suffixes and "__pycache__" not in p.parts
                       and (p.suffix == ".py" or p.parent == root) and p.is_file())
        for p in files:
            h.update(f"{pkg.__name__}/{p.relative_to(root).as_posix()}\0".encode())
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()[:16]


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version
    try:
        return dist_version(DISTRIBUTION)
    except PackageNotFoundError:
        return "not installed"


def facts(verify_vocabs: bool = True) -> dict:
    """This machine's package, pin, build and vocabs (the pin ``$PIN`` selects)."""
    from harness.errors import HarnessError
    from reference.lock import load
    from reference.paths import cache_dir

    out = {"version": version(), "digest": package_digest(), "cache": str(cache_dir().resolve()),
           "cpus": os.cpu_count() or 1, "python": sys.executable, "node": platform.node(),
           "platform": f"{platform.system()} {platform.machine()}, Python {platform.python_version()}"}
    lock = load()
    out.update(pin=lock.name, commit=lock.commit, build=None, build_error=None, vocab_problems=[])
    try:
        from reference.build import artifacts
        arts = artifacts()
        missing = arts.missing()
        out["build"] = str(arts.build_dir)
        if missing:
            out["build_error"] = f"{', '.join(map(str, missing))} missing"
    except HarnessError as e:
        out["build_error"] = str(e)
    if verify_vocabs:
        from reference.fetch import verify
        out["vocab_problems"] = verify()
    return out


def main(argv: list[str] | None = None) -> int:
    print(json.dumps(facts(verify_vocabs="--no-vocabs" not in (argv or sys.argv[1:]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
