"""Build the pinned ``llama-tokenize`` and ``libllama`` (``make reference``).

Each pin's build directory is keyed by the pin, the CMake options, the compiler and
the shim's source, so a second ``make reference`` with nothing changed returns
in seconds, and changing any of them builds afresh beside the old one.
The log goes to ``<build>/build.log``; on failure its tail is shown.

Two shims are built against the pinned headers: ``libreference_shim.so``
(``shim.cpp``, libllama's tokenizer) and ``libreference_chat.so`` (``chat_shim.cpp``,
chat templating: libllama's built-in formats and common/'s Jinja path). The chat shim
links ``libllama-common`` (common/: chat.cpp, jinja/, no curl or OpenSSL with the options
below), which llama-tokenize links already: naming it in TARGETS builds nothing more.

``LLAMA_CONFORMANCE_BUILD=/path`` points the adapters at an existing build
(with ``bin/llama-tokenize``, ``bin/libllama.so``, ``libreference_shim.so`` and
``libreference_chat.so``).

>>> sorted(TARGETS)
['llama', 'llama-common', 'llama-tokenize']
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError, ReferenceUnavailable

from . import lock as _lock
from . import progress
from .paths import cache_dir

CMAKE_OPTIONS = (
    ("CMAKE_BUILD_TYPE", "Release"),
    ("BUILD_SHARED_LIBS", "ON"),
    ("GGML_NATIVE", "OFF"),
    ("LLAMA_CURL", "OFF"),
    ("LLAMA_OPENSSL", "OFF"),
    ("LLAMA_BUILD_TESTS", "OFF"),
    ("LLAMA_BUILD_EXAMPLES", "OFF"),
    ("LLAMA_BUILD_SERVER", "OFF"),
    ("LLAMA_BUILD_APP", "OFF"),
    ("LLAMA_BUILD_UI", "OFF"),
    ("LLAMA_BUILD_TOOLS", "ON"),  # llama-tokenize lives in tools/
)
# llama-common: common/ (chat.cpp, jinja/) for the chat shim; llama-tokenize links it already.
TARGETS = ("llama-tokenize", "llama", "llama-common")
SHIM_SOURCE = Path(__file__).with_name("shim.cpp")
CHAT_SHIM_SOURCE = Path(__file__).with_name("chat_shim.cpp")
_STAMP = "complete.json"


@dataclass(frozen=True)
class Artifacts:
    """Paths of one build's outputs."""

    build_dir: Path

    @property
    def llama_tokenize(self) -> Path:
        return self.build_dir / "bin" / "llama-tokenize"

    @property
    def libllama(self) -> Path:
        return self.build_dir / "bin" / "libllama.so"

    @property
    def shim(self) -> Path:
        return self.build_dir / "libreference_shim.so"

    @property
    def chat_shim(self) -> Path:
        return self.build_dir / "libreference_chat.so"

    def missing(self) -> list[Path]:
        """The tokenizer's outputs that are absent (the chat shim is asked for apart, by
        :mod:`reference.chat`: a build copied by ``prepare --copy-build`` has no chat shim)."""
        return [p for p in (self.llama_tokenize, self.libllama, self.shim) if not p.is_file()]


def _compiler_id() -> str:
    try:
        out = subprocess.run(["c++", "--version"], capture_output=True, text=True, timeout=30)
        return out.stdout.splitlines()[0] if out.stdout else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def build_key(commit: str, source_tag: str = "pinned") -> str:
    """A short hash naming the build directory: pin, options, compiler, shims."""
    blob = json.dumps([commit, source_tag, CMAKE_OPTIONS, TARGETS, _compiler_id(),
                       hashlib.sha256(SHIM_SOURCE.read_bytes()).hexdigest(),
                       hashlib.sha256(CHAT_SHIM_SOURCE.read_bytes()).hexdigest()])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _source_tag(source_dir: Path | None) -> str:
    return "pinned" if source_dir is None else f"dir:{Path(source_dir).resolve()}"


def artifacts(source_dir: Path | None = None, pin: str | None = None) -> Artifacts:
    """The completed build for the pin (``pin``, else ``$PIN``, else the newest);
    ReferenceUnavailable (with the fix) if absent."""
    explicit = os.environ.get("LLAMA_CONFORMANCE_BUILD")
    if explicit:
        arts = Artifacts(Path(explicit))
    else:
        lock = _lock.load(pin=pin)
        key = build_key(lock.key, _source_tag(source_dir or _env_source_dir()))
        arts = Artifacts(cache_dir() / "build" / key)
        if not (arts.build_dir / _STAMP).is_file():
            raise ReferenceUnavailable(
                f"the llama.cpp reference for pin {lock.name} is not built ({arts.build_dir}): "
                f"run `make reference PIN={lock.name}`")
    return arts


def require(path: Path) -> Path:
    """``path`` if it exists, else ReferenceUnavailable with the fix."""
    if not path.is_file():
        raise ReferenceUnavailable(f"{path} is missing: run `make reference`")
    return path


def _env_source_dir() -> Path | None:
    d = os.environ.get("LLAMA_CPP_DIR")
    return Path(d) if d else None


def build(source_dir: Path, *, pinned_tree: bool = True, jobs: int | None = None,
          lock: _lock.Lock | None = None) -> Artifacts:
    """Configure and build llama-tokenize + libllama + the shim; idempotent.

    ``source_dir`` is the llama.cpp tree; ``pinned_tree`` says whether it is the
    verified pinned tree (the sdist) or a user's checkout (keyed by its path).
    """
    lock = lock or _lock.load()
    key = build_key(lock.key, "pinned" if pinned_tree else _source_tag(source_dir))
    arts = Artifacts(cache_dir() / "build" / key)
    stamp = arts.build_dir / _STAMP
    if stamp.is_file() and not arts.missing() and arts.chat_shim.is_file():
        print(f"reference: up to date ({arts.build_dir})", file=sys.stderr)
        return arts
    arts.build_dir.mkdir(parents=True, exist_ok=True)
    log = arts.build_dir / "build.log"
    jobs = jobs or os.cpu_count() or 2
    configure = ["cmake", "-S", str(source_dir), "-B", str(arts.build_dir)]
    configure += [f"-D{k}={v}" for k, v in CMAKE_OPTIONS]
    compile_cmd = ["cmake", "--build", str(arts.build_dir), "-j", str(jobs), "--target", *TARGETS]
    last = progress.last_duration(_last_build_file())
    print(f"reference: building llama.cpp {lock.commit[:12]} (pin {lock.name}) in {arts.build_dir} ("
          + (f"the last build took {last / 60:.1f} minutes" if last is not None else "about 5-10 minutes on 2 cores")
          + f"; log: {log})", file=sys.stderr)
    started = time.monotonic()
    meter = progress.Meter("reference: build", estimate_s=last)  # its clock counts from here, as `last` did
    with open(log, "w") as fh:
        for cmd in (configure, compile_cmd, _shim_command(source_dir, arts), _chat_shim_command(source_dir, arts)):
            _run_logged(cmd, fh, log, meter if cmd is compile_cmd else None)
    seconds = time.monotonic() - started
    stamp.write_text(json.dumps({"commit": lock.commit, "pin": lock.name, "options": CMAKE_OPTIONS,
                                 "source": str(source_dir), "seconds": round(seconds, 1)}, indent=2))
    progress.record_duration(_last_build_file(), seconds)
    print(f"reference: built {arts.llama_tokenize} in {seconds / 60:.1f} minutes", file=sys.stderr)
    return arts


def _shim_command(source_dir: Path, arts: Artifacts) -> list[str]:
    src = Path(source_dir)
    return ["c++", "-std=c++17", "-O2", "-shared", "-fPIC",
            "-I", str(src / "include"), "-I", str(src / "ggml" / "include"), "-I", str(src / "src"),
            str(SHIM_SOURCE), "-o", str(arts.shim),
            "-L", str(arts.libllama.parent), "-lllama", f"-Wl,-rpath,{arts.libllama.parent}"]


def _chat_shim_command(source_dir: Path, arts: Artifacts) -> list[str]:
    # common/'s headers (chat.h, json.h, jinja/), and libllama-common beside libllama in bin/
    src = Path(source_dir)
    return ["c++", "-std=c++17", "-O2", "-shared", "-fPIC",
            "-I", str(src / "include"), "-I", str(src / "ggml" / "include"), "-I", str(src / "common"),
            "-I", str(src / "vendor"),  # nlohmann/, which common/ includes directly at older pins
            str(CHAT_SHIM_SOURCE), "-o", str(arts.chat_shim),
            "-L", str(arts.libllama.parent), "-lllama-common", "-lllama", f"-Wl,-rpath,{arts.libllama.parent}"]


def _last_build_file() -> Path:
    # Any pin's last build: the estimate for the next one (same machine, same options).
    return cache_dir() / "build" / "last-build.json"


def _run_logged(cmd: list[str], fh, log: Path, meter: progress.Meter | None = None) -> None:
    fh.write(f"$ {' '.join(cmd)}\n")
    fh.flush()
    if shutil.which(cmd[0]) is None:
        raise HarnessError(f"`{cmd[0]}` is not installed; the reference build needs cmake and a C++ "
                           f"compiler (e.g. `apt-get install cmake g++`)")
    proc = subprocess.CompletedProcess(cmd, progress.run_logged(cmd, fh, meter))
    if proc.returncode != 0:
        fh.flush()
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise HarnessError(f"reference build step failed (exit {proc.returncode}): {' '.join(cmd[:3])} ...\n"
                           f"{tail}\nfull log: {log}")
