"""One command on a host, through the ``ssh`` client itself (its config, aliases, keys and
agent work as they do in a shell), with :data:`~harness.remote.hosts.SSH_OPTIONS`.

The command is one shell line on the host, built from an argument list with every word
quoted, so no path or value is re-split there:

>>> remote_line(["python", "-m", "harness.remote.probe"], env={"LLAMA_CONFORMANCE_CACHE": "lc/cache dir"})
"env 'LLAMA_CONFORMANCE_CACHE=lc/cache dir' python -m harness.remote.probe"
>>> ssh_argv("hostB", "true", ssh_config="/tmp/cfg")[:3]
['ssh', '-F', '/tmp/cfg']
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.remote.hosts import SSH_OPTIONS


@dataclass
class Result:
    host: str
    line: str  # the remote command line
    returncode: int
    output: str  # stdout and stderr, interleaved

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def tail(self, n: int = 15) -> str:
        return "\n".join(self.output.rstrip().splitlines()[-n:])


def remote_line(argv: list[str], env: dict[str, str] | None = None) -> str:
    """A shell line on the host running ``argv`` with ``env`` added."""
    words = (["env", *(f"{k}={v}" for k, v in env.items())] if env else []) + list(argv)
    return " ".join(shlex.quote(w) for w in words)


def ssh_argv(host: str, line: str, ssh_config: str | None = None) -> list[str]:
    """The local ``ssh`` command running shell ``line`` on ``host``."""
    return ["ssh", *(["-F", ssh_config] if ssh_config else []), *SSH_OPTIONS, host, line]


def run(host: str, line: str, *, ssh_config: str | None = None, stdin: Path | None = None,
        timeout: float | None = None, on_line: Callable[[str], None] | None = None) -> Result:
    """Run shell ``line`` on ``host``; each output line also goes to ``on_line`` as it comes.
    ``stdin``: a local file fed to the command (an upload: ``cat > path``)."""
    argv = ssh_argv(host, line, ssh_config)
    lines: list[str] = []
    with open(stdin, "rb") if stdin else open("/dev/null", "rb") as fh:
        try:
            proc = subprocess.Popen(argv, stdin=fh, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, errors="replace")
        except OSError as e:
            return Result(host, line, 255, f"cannot run ssh: {e} (install the OpenSSH client)")
        try:
            for text in proc.stdout or ():
                lines.append(text)
                if on_line:
                    on_line(text.rstrip("\n"))
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            lines.append(f"\n(timed out after {timeout} s)")
            rc = 124
    return Result(host, line, rc, "".join(lines))
