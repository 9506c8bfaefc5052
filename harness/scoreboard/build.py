"""Building one port: its ``build.sh``, timed, its log kept.

A build that fails (a missing toolchain, a registry that will not serve, a compile
error) is that port's result, never the board's: :func:`build_port` returns a
:class:`Build` with ``ok=False`` and the reason (the last lines the script printed),
and the port's vocabs then read ``error``.

>>> import tempfile
>>> d = Path(tempfile.mkdtemp())
>>> _ = (d / "build.sh").write_text("echo 'build.sh: cargo not found; install Rust' >&2; exit 1")
>>> b = build_port(d, "build.sh", d / "build.log")
>>> b.ok, b.reason
(False, 'build.sh exited 1: build.sh: cargo not found; install Rust')
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

#: A build taking longer than this is stopped (seconds; $SCOREBOARD_BUILD_TIMEOUT).
BUILD_TIMEOUT = float(os.environ.get("SCOREBOARD_BUILD_TIMEOUT") or 1800)


@dataclass
class Build:
    """What building one port gave."""

    ok: bool
    seconds: float
    log: str
    reason: str = ""

    def to_json(self) -> dict:
        return {"ok": self.ok, "seconds": round(self.seconds, 1), "log": self.log, "reason": self.reason}


def _tail(text: str, lines: int = 3) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:] if line.strip())


def build_port(directory: Path, script: str, log: Path, timeout: float = BUILD_TIMEOUT) -> Build:
    """Run ``bash <directory>/<script>`` in ``directory``; stdout and stderr go to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    path = Path(directory) / script
    if not path.is_file():
        log.write_text(f"{path}: no such build script\n", encoding="utf-8")
        return Build(False, 0.0, str(log), f"{path}: no such build script; port.json's 'build' names it")
    with open(log, "w", encoding="utf-8") as out:
        try:
            proc = subprocess.run(["bash", str(path)], cwd=directory, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=timeout)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
    seconds = time.monotonic() - start
    text = log.read_text(encoding="utf-8", errors="replace")
    if code is None:
        return Build(False, seconds, str(log), f"{script} did not finish in {timeout:.0f} s "
                     f"(SCOREBOARD_BUILD_TIMEOUT); see {log}")
    if code != 0:
        return Build(False, seconds, str(log), f"{script} exited {code}: {_tail(text) or 'no output'}")
    return Build(True, seconds, str(log))
