"""``--hosts``: which hosts, how many workers each, and where things live on them.

A host is an SSH destination as ``ssh`` takes it (``hostB``, ``ci@10.0.0.7``, an alias of
``~/.ssh/config``), or ``local`` for workers on this machine; ``N*HOST`` asks for N
workers there (default: the host's CPU count, as ``--jobs auto``).

On an SSH host everything lives under one directory (``--remote-dir``, default
``.llama-conformance``, relative to the remote home; ``{host}`` in it becomes the host's
name): ``venv/`` (the package, ``prepare`` installs it) and ``work/`` (the workers'
working directory: Hypothesis' database; the replay store is the controller's, sent to
every worker: :mod:`harness.conformance.replaying`). The pin's vocabs and build are
in the host's per-user cache, or ``--remote-cache`` (``LLAMA_CONFORMANCE_CACHE`` there).

>>> parse_hosts("hostA, 2*ci@hostB,local")
[Host(name='hostA', workers=None), Host(name='ci@hostB', workers=2), Host(name='local', workers=None)]
>>> Layout(remote_dir="/srv/lc/{host}").python(Host("hostA"))
'/srv/lc/hostA/venv/bin/python'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import HarnessError

LOCAL = "local"
# BatchMode: never wait for a password prompt nobody sees; the keepalives notice a host that
# vanished (no FIN) within a minute; ConnectTimeout bounds reconnecting to a dead host.
SSH_OPTIONS = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=20",
               "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4")
# What the suite reads from the environment (harness.conformance.suite.conftest, the engine):
# local workers inherit it, SSH workers get it in their spec.
FORWARDED_ENV = ("PORT", "VOCABS", "PIN", "HYPOTHESIS_PROFILE", "KNOWN_EXAMPLES", "CONFORMANCE_SEED", "BUDGET",
                 "STRATEGY_FAMILIES", "PORT_TIMEOUT", "LENGTH_SCALING", "LLAMA_CONFORMANCE_REQUIRE_REFERENCE")
# Paths of this machine's own: a remote worker would check against another reference.
HOST_LOCAL_ENV = ("LLAMA_CPP_DIR", "LLAMA_CONFORMANCE_BUILD", "LLAMA_CONFORMANCE_VOCABS")


class HostsError(HarnessError, ValueError):
    """A malformed ``--hosts`` value or an option a remote worker cannot honour."""


@dataclass(frozen=True)
class Host:
    name: str
    workers: int | None = None  # N of N*HOST; None: the host's CPU count

    @property
    def local(self) -> bool:
        return self.name == LOCAL


def parse_hosts(text: str | list[str]) -> list[Host]:
    """``"a,b,2*c"`` (or several such strings) -> hosts, in order; HostsError naming the fix.

    >>> parse_hosts("a,0*b")
    Traceback (most recent call last):
    ...
    harness.remote.hosts.HostsError: --hosts: '0*b': N in N*HOST must be 1 or more
    >>> parse_hosts("a,2*a")
    Traceback (most recent call last):
    ...
    harness.remote.hosts.HostsError: --hosts: host 'a' given twice; give its workers once, as N*a
    """
    parts = [p.strip() for t in ([text] if isinstance(text, str) else text) for p in re.split(r"[,\s]+", t)]
    hosts: list[Host] = []
    for part in filter(None, parts):
        m = re.fullmatch(r"(?:(\d+)\*)?([^\s*]+)", part)
        if not m or "//" in part:
            raise HostsError(f"--hosts: {part!r}: give HOST or N*HOST (an ssh destination, or local)")
        n = int(m.group(1)) if m.group(1) else None
        if n is not None and n < 1:
            raise HostsError(f"--hosts: {part!r}: N in N*HOST must be 1 or more")
        if any(h.name == m.group(2) for h in hosts):
            raise HostsError(f"--hosts: host {m.group(2)!r} given twice; give its workers once, as N*{m.group(2)}")
        hosts.append(Host(m.group(2), n))
    if not hosts:
        raise HostsError("--hosts: no host given; e.g. --hosts hostA,2*hostB")
    return hosts


def remote_path(template: str, host: Host) -> str:
    """``template`` for ``host``: ``{host}`` replaced; ``~/x`` is ``x`` (commands run in the
    remote home, and nothing quotes a ``~`` the same way everywhere).

    >>> remote_path("~/lc/{host}", Host("ci@b"))
    'lc/ci@b'
    """
    path = template.replace("{host}", host.name)
    return path[2:] if path.startswith("~/") else path


@dataclass(frozen=True)
class Layout:
    """Where the package, the cache and the working directory are on each host."""

    remote_dir: str = ".llama-conformance"
    remote_cache: str | None = None  # LLAMA_CONFORMANCE_CACHE on the host; None: its own default
    remote_python: str | None = None  # a Python with the package; None: remote_dir's venv
    ssh_config: str | None = None  # ssh -F (aliases of another config file)

    def dir(self, host: Host) -> str:
        return remote_path(self.remote_dir, host)

    def python(self, host: Host) -> str:
        return remote_path(self.remote_python, host) if self.remote_python else f"{self.dir(host)}/venv/bin/python"

    def work(self, host: Host) -> str:
        return f"{self.dir(host)}/work"

    def env(self, host: Host) -> dict[str, str]:
        """The host's own environment entries (its cache)."""
        return {"LLAMA_CONFORMANCE_CACHE": remote_path(self.remote_cache, host)} if self.remote_cache else {}


def forwarded_env(environ: dict[str, str]) -> dict[str, str]:
    """The run's options a remote worker needs, from this process' environment; HostsError if
    one names this machine's own files.

    >>> forwarded_env({"PORT": "harness", "HOME": "/root", "BUDGET": "5m"})
    {'PORT': 'harness', 'BUDGET': '5m'}
    """
    local = [k for k in HOST_LOCAL_ENV if environ.get(k)]
    if local:
        raise HostsError(f"--hosts: {', '.join(local)} name(s) files of this machine; remote hosts check against "
                         "the pinned build `prepare` made there. Unset them, or run on this machine only")
    return {k: environ[k] for k in FORWARDED_ENV if environ.get(k) is not None}


def tx_specs(hosts: list[Host], layout: Layout, env: dict[str, str], workers: dict[str, int]) -> list[str]:
    """The ``--tx`` arguments: N workers per host, SSH ones with their Python, working
    directory and environment (``workers``: the default N per host name).

    >>> tx_specs([Host("a", 2), Host("local", 1)], Layout(), {"PORT": "harness"}, {})  # doctest: +NORMALIZE_WHITESPACE
    ['--tx', '2*ssh=-o BatchMode=yes -o ConnectTimeout=20 -o ServerAliveInterval=15 -o ServerAliveCountMax=4
      a//python=.llama-conformance/venv/bin/python//chdir=.llama-conformance/work//env:PORT=harness',
     '--tx', '1*popen']
    """
    out: list[str] = []
    for h in hosts:
        n = h.workers or workers.get(h.name) or 1
        if h.local:
            out += ["--tx", f"{n}*popen"]  # inherits this process' environment and directory
            continue
        parts = [f"ssh={' '.join([*SSH_OPTIONS, h.name])}", f"python={layout.python(h)}", f"chdir={layout.work(h)}"]
        if layout.ssh_config:
            parts.append(f"ssh_config={layout.ssh_config}")
        parts += [f"env:{k}={v}" for k, v in {**env, **layout.env(h)}.items()]
        for p in parts:
            if "//" in p:
                raise HostsError(f"--hosts: {p.split('=', 1)[0]}={p.split('=', 1)[1]!r} holds '//', which execnet "
                                 "specs cannot carry; give it without '//'")
        out += ["--tx", f"{n}*{'//'.join(parts)}"]
    return out


def add_layout_options(p) -> None:
    """The options ``prepare`` and ``run --hosts`` share (give both the same)."""
    p.add_argument("--remote-dir", default=Layout.remote_dir,
                   help="on each host: venv/ and work/ go here ({host} becomes the host's name; relative to "
                        f"the remote home; default {Layout.remote_dir})")
    p.add_argument("--remote-cache", default=None,
                   help="LLAMA_CONFORMANCE_CACHE on each host ({host} as above; default: the host's own cache)")
    p.add_argument("--remote-python", default=None,
                   help="a Python on each host with this package installed (default: <remote-dir>/venv/bin/python)")
    p.add_argument("--ssh-config", default=None, help="ssh -F FILE: host aliases from another config file")


def layout_from(args) -> Layout:
    import os
    return Layout(remote_dir=args.remote_dir, remote_cache=args.remote_cache, remote_python=args.remote_python,
                  ssh_config=os.path.abspath(args.ssh_config) if args.ssh_config else None)
