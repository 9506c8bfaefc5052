"""``run --hosts``: check every host first, then the pytest arguments that run the suite there.

Before any worker starts, each SSH host's own Python runs :mod:`harness.remote.probe`
(side by side): a host that cannot be reached, runs another version of the package (or
other files: the digest), another pin, or lacks the pin's vocabs or build is a set-up
error naming the host and the ``prepare`` command that fixes it, not an internal error
halfway through the run.

The suite is then named the same way on every host: ``--pyargs harness.conformance.suite``
(each host's installed copy), its ``conftest.py`` loaded as a plugin and every other
conftest off (a working directory's ``conftest.py`` must not change a run), and no ini
file. xdist hands its arguments to every worker as they are, so none of them may be a
path of this machine: xdist would demand it lie under an rsync root (the error the old
recipe met).

>>> SUITE_ARGS[:2]
['--pyargs', 'harness.conformance.suite']
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor

from harness.errors import HarnessError
from harness.remote import ssh
from harness.remote.hosts import Host, Layout, forwarded_env, layout_from, parse_hosts, tx_specs

# Node ids must be identical on every host (xdist compares them): relative to the suite's
# package directory, which they are when the rootdir is no ancestor of it. /dev is that on
# every POSIX host (the working directory is not: an editable install under it would give
# "harness/conformance/suite/test_x.py::..." there and "test_x.py::..." elsewhere).
SUITE_ARGS = ["--pyargs", "harness.conformance.suite", "--noconftest", "-p", "harness.conformance.suite.conftest",
              "--config-file=/dev/null", "--rootdir=/dev"]
RESTARTS_PER_WORKER = 4  # as xdist's default for -n


class HostsUnready(HarnessError):
    """A host cannot run the suite; the message says which and how to fix it."""


def launch(args, here: dict) -> tuple[list[str], object]:
    """``(pytest worker arguments, the controller plugin)`` for ``args.hosts``; HostsUnready
    (every host's problem) or HostsError before anything starts."""
    from harness.remote.session import HostsPlugin

    hosts = parse_hosts(args.hosts)
    layout = layout_from(args)
    env = forwarded_env(dict(os.environ))
    for a in getattr(args, "pytest_args", []):
        if not a.startswith("-") and os.path.exists(a.split("::")[0]):
            raise HostsUnready(f"run --hosts: pytest argument {a!r} names a file of this machine; each host runs "
                               "its own installed suite (select tests with -k or --vocabs instead)")
    remote = [h for h in hosts if not h.local]
    with ThreadPoolExecutor(max_workers=max(1, len(remote))) as pool:
        found = dict(zip([h.name for h in remote], pool.map(lambda h: probe(h, layout), remote)))
    problems = [f"{name}: {p}" for name, f in found.items() if (p := problem(f, here))]
    if problems:
        flags = "".join(f" --{k.replace('_', '-')} {v}" for k, v in vars(layout).items()
                        if v and v != getattr(Layout, k, None))
        raise HostsUnready("run --hosts: not every host can run the suite:\n  " + "\n  ".join(problems) +
                           f"\nfix: llama-conformance prepare --hosts {','.join(found)}{flags}")
    facts = {h.name: (here if h.local else found[h.name]) for h in hosts}
    tx = tx_specs(hosts, layout, env, {name: f["cpus"] for name, f in facts.items()})
    n = sum(int(t.split("*", 1)[0]) for t in tx if t != "--tx")
    return tx + [f"--max-worker-restart={RESTARTS_PER_WORKER * n}"], HostsPlugin(facts)


def probe(host: Host, layout: Layout) -> dict:
    """The host's facts (:mod:`harness.remote.probe`), or ``{"error": ...}``."""
    env = dict(layout.env(host), **({"PIN": os.environ["PIN"]} if os.environ.get("PIN") else {}))
    r = ssh.run(host.name, ssh.remote_line([layout.python(host), "-m", "harness.remote.probe"], env),
                ssh_config=layout.ssh_config)
    lines = r.output.strip().splitlines()
    if r.ok and lines:
        try:
            return json.loads(lines[-1])
        except ValueError:
            pass
    return {"error": f"`ssh {host.name} {r.line}` failed (exit {r.returncode}): {r.tail(5) or 'no output'}"}


def problem(f: dict, here: dict) -> str | None:
    """What keeps a host with facts ``f`` from running this machine's suite, or None.

    >>> here = {"version": "0.1.0", "digest": "ab", "commit": "c1", "pin": "p"}
    >>> problem(dict(here, build_error=None, vocab_problems=[]), here) is None
    True
    >>> problem(dict(here, digest="cd", build_error=None, vocab_problems=[]), here)
    'its package files differ from this one (digest cd there, ab here): install this version with prepare'
    """
    if "error" in f:
        return f["error"]
    if f["version"] != here["version"] or f["digest"] != here["digest"]:
        if f["version"] != here["version"]:
            return f"it runs llama-tokenizer-conformance {f['version']}, this machine {here['version']}"
        return (f"its package files differ from this one (digest {f['digest']} there, {here['digest']} here): "
                "install this version with prepare")
    if f["commit"] != here["commit"]:
        return f"its pin is {f['pin']} ({f['commit']}), this run's {here['pin']} ({here['commit']})"
    if f["build_error"] or f["vocab_problems"]:
        return "the pin is not ready there: " + "; ".join(filter(None, [f["build_error"], *f["vocab_problems"][:3]]))
    return None
