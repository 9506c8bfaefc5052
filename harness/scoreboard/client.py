"""Probing a port: does it load this vocab at all?

The scoreboard asks what the conformance engine does not: ``info`` at
startup, to tell a vocab the port *cannot load* ("unsupported") from one it
loads and gets wrong. It uses the engine's own client
(:class:`harness.ports.ExternalPort`).

>>> probe_result({"n_vocab": 5})
('ok', '')
>>> probe_result({"error": "unsupported: ValueError: no"})
('unsupported', 'ValueError: no')
"""

from __future__ import annotations

from pathlib import Path

from harness.protocol.client import ExternalPort
from harness.errors import PortError
from harness.protocol.server import UNSUPPORTED


def probe_result(response: dict) -> tuple[str, str]:
    """Classify an ``info`` answer: ('ok'|'unsupported'|'port-error', detail)."""
    if "n_vocab" in response and "error" not in response:
        return "ok", ""
    error = str(response.get("error", response))
    if error.startswith(UNSUPPORTED):
        return "unsupported", error[len(UNSUPPORTED):]
    return "port-error", error


def probe(command: str, vocab_path: str | Path, *, timeout: float = 300.0) -> tuple[str, str]:
    """Start the port on one vocab and ask ``info``: ('ok'|'unsupported'|'port-error', detail)."""
    try:
        client = ExternalPort(command, vocab_path, timeout=timeout)
    except PortError as e:
        return "port-error", str(e)
    try:
        return probe_result(client.exchange({"op": "info"}))
    except PortError as e:
        return "port-error", str(e)
    finally:
        client.close()
