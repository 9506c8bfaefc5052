"""Progress for long reference work: the build's percentage, the bytes downloaded.

On a terminal one line is rewritten in place; elsewhere (CI logs, ``make`` piped
to a file) a line is printed every ``step`` percent, so a log shows the work moving
without a line per compiled file.

>>> percent_of(b"[ 45%] Building CXX object src/CMakeFiles/llama.dir/llama.cpp.o")
45
>>> percent_of(b"[12/48] Building CXX object ggml/src/ggml.c.o")   # ninja
25
>>> percent_of(b"-- Configuring done") is None
True
>>> import io; out = io.StringIO()
>>> m = Meter("build", out, step=50); m.update(10); m.update(60); m.update(70)
>>> out.getvalue()
'build: 60%\\n'
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import TextIO

_MAKE = re.compile(rb"^\[\s*(\d+)%\]")
_NINJA = re.compile(rb"^\[(\d+)/(\d+)\]")


def percent_of(line: bytes) -> int | None:
    """The percentage a CMake (make or ninja) build line reports, or None."""
    m = _MAKE.match(line)
    if m:
        return int(m.group(1))
    m = _NINJA.match(line)
    if m and int(m.group(2)):
        return 100 * int(m.group(1)) // int(m.group(2))
    return None


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


class Meter:
    """A percentage shown as it moves; ``estimate_s`` (the last run's duration) gives time left."""

    def __init__(self, label: str, stream: TextIO | None = None, *, estimate_s: float | None = None,
                 step: int = 10):
        self.label, self.stream, self.estimate_s, self.step = label, stream or sys.stderr, estimate_s, step
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.started = time.monotonic()
        self.shown = 0  # last percentage printed (non-terminal)
        self.drawn = 0.0  # last redraw time (terminal)

    def text(self, pct: int) -> str:
        elapsed = time.monotonic() - self.started
        line = f"{self.label}: {pct}%"
        if self.estimate_s is not None:
            line += f" ({_clock(elapsed)} elapsed, about {_clock(self.estimate_s - elapsed)} left by the last build)"
        return line

    def update(self, pct: int) -> None:
        if self.tty:
            now = time.monotonic()
            if now - self.drawn >= 0.5 or pct >= 100:
                self.stream.write("\r\x1b[K" + self.text(pct))
                self.stream.flush()
                self.drawn = now
        elif pct >= self.shown + self.step or (pct >= 100 > self.shown):
            self.stream.write(self.text(pct) + "\n")
            self.stream.flush()
            self.shown = pct

    def close(self) -> None:
        if self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def run_logged(cmd: list[str], log: TextIO, meter: Meter | None = None) -> int:
    """Run ``cmd`` with its output into ``log``; feed build percentages to ``meter``. The exit code."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for line in proc.stdout or ():
        log.write(line.decode("utf-8", "replace"))
        pct = percent_of(line) if meter else None
        if pct is not None:
            meter.update(pct)
    log.flush()
    if meter:
        meter.close()
    return proc.wait()


class ByteMeter(Meter):
    """Bytes downloaded, as MB and (with a known total) a percentage.

    >>> import io; out = io.StringIO()
    >>> m = ByteMeter("x.tar.gz", 4_000_000, out); m.bytes(2_000_000); m.bytes(4_000_000)
    >>> out.getvalue().splitlines()
    ['x.tar.gz: 2.0 / 4.0 MB (50%)', 'x.tar.gz: 4.0 / 4.0 MB (100%)']
    """

    def __init__(self, label: str, total: int, stream: TextIO | None = None, step: int = 10):
        super().__init__(label, stream, step=step)
        self.total, self.done = total, 0

    def bytes(self, done: int) -> None:
        self.done = done
        # Without a known size, a step is 10 MB.
        self.update(100 * done // self.total if self.total else done // 1_000_000)

    def text(self, pct: int) -> str:
        if self.total:
            return f"{self.label}: {self.done / 1e6:.1f} / {self.total / 1e6:.1f} MB ({pct}%)"
        return f"{self.label}: {self.done / 1e6:.1f} MB"


def last_duration(path: Path) -> float | None:
    """Seconds the last build took, from ``path`` (written by :func:`record_duration`), or None."""
    try:
        return float(json.loads(path.read_text())["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def record_duration(path: Path, seconds: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"seconds": round(seconds, 1)}) + "\n")
