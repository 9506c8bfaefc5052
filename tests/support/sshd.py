"""A throwaway OpenSSH server on loopback, for the ``run --hosts`` tests (``make test-remote``).

``Sshd(root, aliases)`` starts ``/usr/sbin/sshd`` as the current user on a free
127.0.0.1 port with its own host key, a client key, ``authorized_keys`` and an
``ssh_config`` whose ``Host`` aliases all point at it; everything lives under ``root``.
Nothing of ``~/.ssh`` or ``/etc/ssh`` is read or written (``ssh -F``, ``sshd -f``, known
hosts and keys of its own). Run as root, sshd needs its privilege-separation directory
``/run/sshd``; it is made if missing, and removed again at ``stop()`` if this made it.

``kill_host(alias, marker)`` is a host dying mid-run: the alias is pointed at a closed
port (so nothing reconnects), then every process under this sshd whose command line holds
``marker`` (the host's remote directory) is killed with SIGKILL.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sshd:
    def __init__(self, root: Path, aliases: tuple[str, ...] = ("hostA", "hostB")):
        self.root, self.aliases = Path(root), aliases
        self.port = free_port()
        self.config = self.root / "ssh_config"
        self.proc: subprocess.Popen | None = None
        self.made_privsep = False
        self.dead: tuple[str, ...] = ()

    def start(self) -> "Sshd":
        if not Path(SSHD).is_file():
            raise RuntimeError(f"{SSHD} is missing: make test-remote installs it (apt-get install openssh-server)")
        self.root.mkdir(parents=True, exist_ok=True)
        for key in ("host_key", "client_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.root / key)], check=True)
        shutil.copy(self.root / "client_key.pub", self.root / "authorized_keys")
        (self.root / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {(self.root / 'host_key.pub').read_text()}")
        (self.root / "sshd_config").write_text("\n".join([
            f"Port {self.port}", "ListenAddress 127.0.0.1", f"HostKey {self.root / 'host_key'}",
            f"PidFile {self.root / 'sshd.pid'}", f"AuthorizedKeysFile {self.root / 'authorized_keys'}",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
            "PermitRootLogin prohibit-password", "StrictModes no", "UsePAM no", ""]))
        self.write_config()
        if os.geteuid() == 0 and not Path("/run/sshd").is_dir():
            os.makedirs("/run/sshd", mode=0o755)
            self.made_privsep = True
        log = open(self.root / "sshd.log", "w")
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.root / "sshd_config")],
                                     stdout=log, stderr=subprocess.STDOUT)
        for _ in range(100):
            ok = subprocess.run(["ssh", "-F", str(self.config), self.aliases[0], "true"],
                                capture_output=True, timeout=30).returncode == 0
            if ok:
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"sshd did not come up on port {self.port}: {(self.root / 'sshd.log').read_text()[-2000:]}")

    def write_config(self, dead: tuple[str, ...] = ()) -> None:
        blocks = []
        for alias in self.aliases:
            blocks += [f"Host {alias}", "  HostName 127.0.0.1", f"  Port {1 if alias in dead else self.port}",
                       f"  User {getpass.getuser()}", f"  IdentityFile {self.root / 'client_key'}",
                       "  IdentitiesOnly yes", f"  UserKnownHostsFile {self.root / 'known_hosts'}",
                       "  GlobalKnownHostsFile /dev/null", "  StrictHostKeyChecking yes"]
        self.config.write_text("\n".join(blocks) + "\n")
        self.dead = dead

    def kill_host(self, alias: str, marker: str) -> list[int]:
        """The host dies: its alias stops answering, then its processes (under this sshd) are killed."""
        self.write_config(dead=(*self.dead, alias))
        killed = [pid for pid in self._descendants() if marker in _cmdline(pid)]
        for pid in killed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return killed

    def _descendants(self) -> list[int]:
        children: dict[int, list[int]] = {}
        for d in Path("/proc").iterdir():
            if d.name.isdigit():
                try:
                    ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                children.setdefault(ppid, []).append(int(d.name))
        out, todo = [], [self.proc.pid] if self.proc else []
        while todo:
            pid = todo.pop()
            for c in children.get(pid, []):
                out.append(c)
                todo.append(c)
        return out

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            for pid in self._descendants():  # sessions still open
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.made_privsep:
            try:
                os.rmdir("/run/sshd")
            except OSError:
                pass


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
