"""One request line out, one answer line back, under one deadline.

The pipe to a port holds 64 KiB; a generated request reaches about 240 KB of
JSON. A blocking write to a port that stopped reading its stdin would wait
forever, and a port that floods stdout without a newline would grow a
``readline`` without limit. :class:`LineChannel` writes and reads the pipes
non-blocking under ``select``, in chunks, so:

- writing the request and reading its answer share one deadline;
- an answer longer than ``max_line`` bytes is an error, and memory stays
  below ``max_line`` plus one chunk however much the port writes.

POSIX only (``select`` on pipes).

>>> import subprocess, sys
>>> p = subprocess.Popen([sys.executable, "-c", "import sys; print(sys.stdin.readline().upper(), end='')"],
...                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)
>>> ch = LineChannel(p.stdin, p.stdout)
>>> ch.exchange(b"hi\\n", timeout=30)
b'HI'
>>> ch.close(); p.wait()
0
"""

from __future__ import annotations

import os
import selectors
import time
from typing import IO

MAX_LINE = 64 * 1024 * 1024  # one answer line; a real answer to a 240 KB request is far below
CHUNK = 1 << 16


class ChannelError(Exception):
    """The exchange failed; ``kind`` is one of ``stopped-reading``, ``hung``,
    ``too-long``, ``closed-stdin``, ``eof``. Not a HarnessError: the port
    turns it into a PortError with its own context."""

    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(message)


class LineChannel:
    """Non-blocking line I/O over a subprocess's stdin/stdout pipes."""

    def __init__(self, stdin: IO[bytes], stdout: IO[bytes], *, max_line: int = MAX_LINE):
        self._w, self._r, self.max_line = stdin.fileno(), stdout.fileno(), max_line
        os.set_blocking(self._w, False)
        os.set_blocking(self._r, False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._r, selectors.EVENT_READ)
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf known to hold no newline: each byte is searched once
        self._eof = False

    def _take_line(self) -> bytes | None:
        at = self._buf.find(b"\n", self._scanned)
        if at < 0:
            self._scanned = len(self._buf)
            return None
        if at > self.max_line:  # its newline came in the chunk that crossed the limit
            raise self._too_long()
        line = bytes(self._buf[:at])
        del self._buf[:at + 1]
        self._scanned = 0
        return line

    def _read(self) -> None:
        chunk = os.read(self._r, CHUNK)
        if not chunk:
            self._eof = True
            self._sel.unregister(self._r)
            return
        self._buf += chunk
        if len(self._buf) > self.max_line and self._buf.find(b"\n", self._scanned) < 0:
            raise self._too_long()

    def _too_long(self) -> ChannelError:
        return ChannelError("too-long", f"answered a line longer than {self.max_line} bytes: "
                            "one answer must be one JSON line")

    def _write(self, data: memoryview) -> int:
        try:
            return os.write(self._w, data[:CHUNK])
        except BlockingIOError:
            return 0
        except OSError as e:  # EPIPE: the port closed its stdin or exited
            raise ChannelError("closed-stdin", f"closed its stdin ({e.strerror}) "
                               "before reading the whole request") from None

    def exchange(self, data: bytes, timeout: float) -> bytes:
        """Write ``data``, return the next line (without ``\\n``) read back;
        both within ``timeout`` seconds in all. Raises ChannelError."""
        deadline = time.monotonic() + timeout
        view, sent = memoryview(data), 0
        if data:
            self._sel.register(self._w, selectors.EVENT_WRITE)
        try:
            while True:
                if sent == len(data):
                    line = self._take_line()
                    if line is not None:
                        return line
                    if self._eof:
                        raise ChannelError("eof", "closed its stdout")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._timeout(sent, len(data), timeout)
                for key, _ in self._sel.select(left):
                    if key.fd == self._r:
                        self._read()
                    else:
                        sent += self._write(view[sent:])
                        if sent == len(data):
                            self._sel.unregister(self._w)
                if self._eof and sent < len(data):
                    raise ChannelError("eof", "closed its stdout before reading the whole request")
        finally:
            if self._w in self._sel.get_map():
                self._sel.unregister(self._w)

    @staticmethod
    def _timeout(sent: int, total: int, timeout: float) -> ChannelError:
        hint = "(set PORT_TIMEOUT to allow more)"
        if sent < total:
            return ChannelError("stopped-reading", f"stopped reading its stdin: {sent} of {total} "
                                f"request bytes written within {timeout:g} s {hint}")
        return ChannelError("hung", f"hung: no answer within {timeout:g} s {hint}")

    def close(self) -> None:
        """Release the selector (the pipes belong to the process object)."""
        self._sel.close()
