"""A small client of the JSON-lines port protocol: probe a port, sample it.

The conformance engine has its own client; this one exists so the
scoreboard can ask what the engine does not: ``info`` at startup, to tell a
vocab the port *cannot load* ("unsupported") from one it loads and gets
wrong. It speaks only the protocol of :mod:`harness.scoreboard.protocol`.

>>> probe_result({"n_vocab": 5})
('ok', '')
>>> probe_result({"error": "unsupported: ValueError: no"})
('unsupported', 'ValueError: no')
"""

from __future__ import annotations

import json
import queue
import shlex
import subprocess
import tempfile
import threading
from pathlib import Path

from harness.errors import PortError
from harness.scoreboard.protocol import UNSUPPORTED


def port_argv(command: str, vocab_path: str | Path) -> list[str]:
    """Shell words of ``command`` with ``{vocab}`` replaced after splitting.

    >>> port_argv("python -m x --vocab {vocab}", "a b.gguf")
    ['python', '-m', 'x', '--vocab', 'a b.gguf']
    """
    return [w.replace("{vocab}", str(vocab_path)) for w in shlex.split(command)]


class PortClient:
    """One port process for one vocab; ``request`` returns the raw response object."""

    def __init__(self, command: str, vocab_path: str | Path, *, timeout: float = 120.0):
        self.argv, self.timeout = port_argv(command, vocab_path), timeout
        self._stderr = tempfile.TemporaryFile()  # a file, not a pipe: a chatty port cannot block
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self._stderr)
        except OSError as e:
            raise PortError(f"cannot start {self.argv!r}: {e}") from e
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def stderr(self) -> str:
        """What the port wrote to stderr so far."""
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def request(self, obj: dict) -> dict:
        """Send one request; the response object (may hold "error"). PortError if none comes."""
        try:
            self.proc.stdin.write(json.dumps(obj, ensure_ascii=True).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:
            pass  # the process died; the reader below reports how
        try:
            line = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            self.close()
            raise PortError(f"{self.argv!r}: no answer within {self.timeout:g} s", stderr=self.stderr())
        if line is None:
            code = self.proc.wait(timeout=5)
            raise PortError(f"{self.argv!r} exited with code {code}", stderr=self.stderr())
        try:
            response = json.loads(line)
        except ValueError:
            raise PortError(f"{self.argv!r} answered non-JSON {line[:200]!r}", stderr=self.stderr())
        if not isinstance(response, dict):
            raise PortError(f"{self.argv!r} answered {response!r:.200}, not an object")
        return response

    def _ok(self, obj: dict, key: str):
        response = self.request(obj)
        if key not in response:
            raise PortError(f"{self.argv!r} answered {response!r:.300} to {obj!r:.200}",
                            stderr=self.stderr())
        return response[key]

    def encode(self, text: str, *, add_special: bool = False, parse_special: bool = False) -> list[int]:
        """The port's ids (PortError if it answered an error)."""
        return self._ok({"op": "encode", "text": text, "add_special": add_special,
                         "parse_special": parse_special}, "ids")

    def close(self) -> None:
        """Stop the process (idempotent)."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


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
        client = PortClient(command, vocab_path, timeout=timeout)
    except PortError as e:
        return "port-error", str(e)
    try:
        return probe_result(client.request({"op": "info"}))
    except PortError as e:
        return "port-error", str(e)
    finally:
        client.close()
