"""Run a function in a forked child under memory and time limits, and hear what it says.

The child reports JSON messages through a pipe as it goes; the parent gets them
back with how the child ended: ``ok`` (exited), ``crash`` (killed by a signal, or
exited with an error), or ``hang`` (silent for ``timeout`` seconds: killed). Each
message restarts the clock, so a child may work through many cases as long as it
reports each. A crash or an abort of llama.cpp, or a hang of the harness, ends
that child and nothing else. POSIX only (fork).

>>> ch = start(lambda send: send({"x": 1}), timeout=30, mem_bytes=1 << 30)
>>> collect([ch])[0].status, collect([ch])[0].messages
('ok', [{'x': 1}])
"""

from __future__ import annotations

import json
import os
import select
import signal
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable

Send = Callable[[dict], None]


@dataclass
class Child:
    pid: int
    fd: int
    timeout: float
    deadline: float
    stderr: object  # a temporary file: what the child wrote to fd 2 (abort messages)
    buf: bytearray = field(default_factory=bytearray)
    done: bool = False
    status: str = ""
    signal: int = 0
    messages: list = field(default_factory=list)

    def stderr_tail(self, n: int = 600) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")[-n:]


def _vm_size() -> int:
    """This process's virtual size in bytes (RLIMIT_AS counts from here); 0 if unknown."""
    from harness._proc import status_bytes
    return status_bytes("VmSize") or 0


def _child(fn: Callable[[Send], None], w: int, err_fd: int, mem_bytes: int) -> None:
    import faulthandler
    import resource
    os.dup2(err_fd, 1)  # whatever the child prints stays out of the parent's output
    os.dup2(err_fd, 2)  # llama.cpp's abort messages go to the case's stderr file, not the terminal
    faulthandler.disable()  # pytest's would print every expected abort on the parent's stderr
    vm = _vm_size()
    if vm and hasattr(resource, "RLIMIT_AS"):
        resource.setrlimit(resource.RLIMIT_AS, (vm + mem_bytes, vm + mem_bytes))

    def send(msg: dict) -> None:
        data = (json.dumps(msg) + "\n").encode()
        while data:
            data = data[os.write(w, data):]
    fn(send)


def start(fn: Callable[[Send], None], *, timeout: float, mem_bytes: int) -> Child:
    """Fork; the child runs ``fn(send)`` then exits. Collect it with :func:`collect`."""
    r, w = os.pipe()
    err = tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's code
        code = 0
        try:
            os.close(r)
            _child(fn, w, err.fileno(), mem_bytes)
        except BaseException:  # fn reports its own errors; anything left is a crash of the child
            code = 70
        finally:
            os._exit(code)
    os.close(w)
    return Child(pid, r, timeout, time.monotonic() + timeout, err)


def _finish(ch: Child, killed: bool) -> None:
    os.close(ch.fd)
    _, status = os.waitpid(ch.pid, 0)
    ch.done = True
    for line in ch.buf.splitlines():
        try:
            ch.messages.append(json.loads(line))
        except ValueError:
            pass
    if killed:
        ch.status = "hang"
    elif os.WIFSIGNALED(status):
        ch.status, ch.signal = "crash", os.WTERMSIG(status)
    else:
        ch.status = "ok" if os.WEXITSTATUS(status) == 0 else "crash"


def wait(children: list[Child]) -> list[Child]:
    """Block until some child finishes (or is killed for silence); the finished ones."""
    finished: list[Child] = []
    while not finished:
        live = [c for c in children if not c.done]
        if not live:
            return finished
        now = time.monotonic()
        for c in live:
            if now >= c.deadline:
                os.kill(c.pid, signal.SIGKILL)
                _finish(c, killed=True)
                finished.append(c)
        live = [c for c in live if not c.done]
        if finished or not live:
            return finished
        ready, _, _ = select.select([c.fd for c in live], [], [], max(0.0, min(c.deadline for c in live) - now))
        for c in live:
            if c.fd in ready:
                chunk = os.read(c.fd, 1 << 16)
                if chunk:
                    c.buf += chunk
                    c.deadline = time.monotonic() + c.timeout  # it is alive and reporting
                else:
                    _finish(c, killed=False)
                    finished.append(c)
    return finished


def collect(children: list[Child]) -> list[Child]:
    """Wait for every child to finish or fall silent past its timeout (then it is killed)."""
    while any(not c.done for c in children):
        wait(children)
    return children
