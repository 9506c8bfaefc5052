"""This process's own figures from Linux's ``/proc/self/status``.

>>> status_bytes("NoSuchField") is None
True
"""

from __future__ import annotations


def status_bytes(name: str) -> int | None:
    """``/proc/self/status`` field ``name`` (``VmHWM``, ``VmSize``, ...) in bytes; None where
    there is no such file or field (not Linux)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(name + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None
