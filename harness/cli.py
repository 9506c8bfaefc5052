"""``llama-conformance``: the one command (installed by ``pip install``; the Makefile calls it).

Subcommands:

* ``run --port "CMD {vocab}" [--vocabs ...] [--pin ...] [--profile ...] [--jobs N] [--report-dir DIR]``:
  fetch and build the pinned reference if needed, then run the conformance suite
  shipped in this package (``pytest --pyargs harness.conformance.suite``) against the port;
* ``diff``, ``serve``, ``bench``, ``scoreboard``: the harness's own tools;
* ``fetch``, ``build``, ``pin``: the pinned reference (vocabs, sources and builds
  live in the per-user cache, see ``reference.paths``).

Exit codes of ``run`` (the worst that happened wins):

* 0: clean, every check passed;
* 1: divergences: the port disagrees with llama.cpp;
* 2: port errors: the port crashed, hung or answered garbage;
* 3: set-up errors: the reference or the suite could not run (a test failed
  without a finding, a collection error, a bad option, a missing build).

>>> args = parser().parse_args(["run", "--port", "python -m harness serve --vocab {vocab}", "--vocabs", "qwen2"])
>>> args.port, args.vocabs, args.jobs
('python -m harness serve --vocab {vocab}', ['qwen2'], 'auto')
>>> exit_code(pytest_rc=1, divergences=3, port_errors=0, setup_errors=0)
1
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

CLEAN, DIVERGENCES, PORT_ERRORS, SETUP_ERRORS = 0, 1, 2, 3

# Subcommands that hand their arguments to an existing module's own parser (one code path).
DELEGATES = {
    "diff": ("harness.diffcmd", [], "first-divergent-token diff of a port vs llama.cpp for one text"),
    "serve": ("harness.cli:serve", [], "serve the harness tokenizer over the JSON-lines port protocol"),
    "pin-diff": ("harness.pindiff", [], "llama.cpp against llama.cpp across two pins"),
    "bench": ("harness.bench.run", [], "speed of the harness tokenizer against llama.cpp"),
    "scoreboard": ("harness.scoreboard.run", [], "run the suite against real ports (transformers, ...)"),
    "fetch": ("reference.__main__", ["fetch"], "fetch and verify the pinned vocabs and golden files"),
    "build": ("reference.__main__", ["build"], "build the pinned llama-tokenize and libllama (cached)"),
    "pin": ("reference.__main__", ["pin"], "move the pin to another llama.cpp commit"),
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="llama-conformance", description="Check a port of llama.cpp's tokenizer against the pinned llama.cpp.",
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="exit codes of run: 0 clean, 1 divergences, 2 port errors, 3 set-up errors")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _run_parser(sub)
    for name, (_module, _prefix, helptext) in DELEGATES.items():
        d = sub.add_parser(name, help=helptext, add_help=False, allow_abbrev=False,
                           description=f"{helptext}; `llama-conformance {name} --help` lists its options")
        d.add_argument("--pin", default=None, help="llama.cpp commit or pin name (sets $PIN)")
    return p


def _run_parser(sub) -> None:
    r = sub.add_parser("run", help="run the conformance suite against a port",
                       description="Run the conformance suite against a port: golden, known texts, generated "
                                   "encode and decode, every piece, and the llama-tokenize cross-check, under "
                                   "every flag combination.",
                       epilog="exit codes: 0 clean, 1 divergences, 2 port errors, 3 set-up errors")
    r.add_argument("--port", default=os.environ.get("PORT") or "harness",
                   help='the port: a command with {vocab} (a .gguf path is substituted), e.g. '
                        '"java -jar port.jar --vocab {vocab}"; or harness, llama.cpp, py:MODULE:FACTORY '
                        "(default: $PORT, else harness)")
    r.add_argument("--vocabs", nargs="+", default=_env_list("VOCABS"), metavar="VOCAB",
                   help="pinned vocab names or .gguf paths (default: $VOCABS, else every pinned vocab)")
    r.add_argument("--pin", default=os.environ.get("PIN") or None,
                   help="llama.cpp commit or pin name to check against (default: $PIN, else the lock's)")
    r.add_argument("--profile", default=os.environ.get("HYPOTHESIS_PROFILE") or "conformance",
                   help="Hypothesis budget: ci, conformance or thorough (default: $HYPOTHESIS_PROFILE, else conformance)")
    r.add_argument("--jobs", "-n", default=os.environ.get("JOBS") or "auto",
                   help="pytest-xdist workers: a number or auto (default: $JOBS, else auto)")
    r.add_argument("--report-dir", default="reports",
                   help="where conformance.json, conformance.html and conformance-junit.xml go (default: reports)")
    r.add_argument("--seed", type=int, default=None,
                   help="seed of Hypothesis and of the fast random phase (CONFORMANCE_SEED), to reproduce a run")
    r.add_argument("--budget", default=os.environ.get("BUDGET") or None,
                   help="wall time for the fast random phases, e.g. 5m or 300s (default: $BUDGET, else "
                        "the profile's counts)")
    r.add_argument("--no-known-examples", action="store_true",
                   help="generated text only, without the fixed known-bug texts (KNOWN_EXAMPLES=0)")
    r.add_argument("--no-fetch", action="store_true",
                   help="do not fetch or build the reference first (fail if it is missing)")
    r.add_argument("pytest_args", nargs="*", metavar="-- PYTEST_ARG",
                   help="further pytest arguments, after --")


def _env_list(name: str) -> list[str] | None:
    value = os.environ.get(name, "").replace(",", " ").split()
    return value or None


def pytest_argv(args: argparse.Namespace) -> list[str]:
    """The pytest command line ``run`` uses; the suite comes from this package, not a checkout.

    >>> a = parser().parse_args(["run", "--jobs", "2", "--report-dir", "out", "--seed", "7"])
    >>> " ".join(pytest_argv(a))  # doctest: +ELLIPSIS
    '.../harness/conformance/suite -c ... -p harness.conformance.plugin -p no:cacheprovider -n 2 ...'
    """
    report_dir = os.path.abspath(args.report_dir)
    argv = [*suite_args(), "-p", "harness.conformance.plugin", "-p", "no:cacheprovider",
            "-n", str(args.jobs), "--dist", "loadgroup",
            # harness and reference are imported before pytest starts (fetch, build): nothing to rewrite.
            "-W", "ignore::pytest.PytestAssertRewriteWarning",
            f"--conformance-reports={report_dir}"]
    if args.seed is not None:
        argv.append(f"--hypothesis-seed={args.seed}")
    return argv + list(args.pytest_args)


def suite_args() -> list[str]:
    """pytest arguments selecting the suite shipped in this package, by its installed path, rooted
    there, with no ini file: a conftest.py or pytest.ini of the working directory (a port's
    repository) must not change the run."""
    import harness.conformance.suite

    suite = os.path.dirname(harness.conformance.suite.__file__)
    return [suite, "-c", os.devnull, "--rootdir", suite, "--confcutdir", suite]


def run_env(args: argparse.Namespace) -> dict[str, str]:
    """The environment the suite reads its options from (``harness.conformance.suite.conftest``)."""
    env = {"PORT": args.port, "HYPOTHESIS_PROFILE": args.profile, "LLAMA_CONFORMANCE_REQUIRE_REFERENCE": "1"}
    if args.vocabs:
        env["VOCABS"] = " ".join(args.vocabs)
    if args.pin:
        env["PIN"] = args.pin
    if args.no_known_examples:
        env["KNOWN_EXAMPLES"] = "0"
    if args.seed is not None:
        env["CONFORMANCE_SEED"] = str(args.seed)
    if args.budget:
        from harness.inputs.pool import parse_budget
        parse_budget(args.budget)  # a bad budget is a set-up error now, not in every worker
        env["BUDGET"] = args.budget
    return env


def exit_code(*, pytest_rc: int, divergences: int, port_errors: int, setup_errors: int) -> int:
    """The documented exit code (the worst outcome wins).

    >>> exit_code(pytest_rc=0, divergences=0, port_errors=0, setup_errors=0)
    0
    >>> exit_code(pytest_rc=1, divergences=2, port_errors=1, setup_errors=0)
    2
    >>> exit_code(pytest_rc=1, divergences=0, port_errors=0, setup_errors=0)  # failed, but why?
    3
    """
    if setup_errors or pytest_rc not in (0, 1):
        return SETUP_ERRORS
    if port_errors:
        return PORT_ERRORS
    if divergences:
        return DIVERGENCES
    return CLEAN if pytest_rc == 0 else SETUP_ERRORS


class Outcome:
    """Controller-side pytest plugin: sorts every failed test into divergence, port error or set-up error.

    A failure is a divergence or a port error when the conformance plugin attached that
    finding to its report; any other failure (or error in setup) is a set-up error.
    """

    def __init__(self):
        self.divergences = self.port_errors = self.setup_errors = 0

    def pytest_runtest_logreport(self, report):
        import json

        from harness.conformance.plugin import TALLY_KEY

        tallies = [json.loads(v) for k, v in report.user_properties if k == TALLY_KEY]
        if any(t["port_errors"] for t in tallies):
            self.port_errors += 1
        elif any(t["findings"] for t in tallies):
            self.divergences += 1
        elif report.failed:
            self.setup_errors += 1

    def pytest_collectreport(self, report):
        if report.failed:
            self.setup_errors += 1


def run(args: argparse.Namespace) -> int:
    import pytest

    from harness.errors import HarnessError
    try:
        os.environ.update(run_env(args))
    except HarnessError as e:
        print(f"llama-conformance: {e}", file=sys.stderr)
        return SETUP_ERRORS
    if not args.no_fetch:
        prepared = _prepare_reference()
        if prepared:
            return prepared
    os.makedirs(args.report_dir, exist_ok=True)
    outcome = Outcome()
    rc = int(pytest.main(pytest_argv(args), plugins=[outcome]))
    code = exit_code(pytest_rc=rc, divergences=outcome.divergences, port_errors=outcome.port_errors,
                     setup_errors=outcome.setup_errors)
    print(f"llama-conformance: exit {code} ({_MEANING[code]}); reports in {args.report_dir}/", file=sys.stderr)
    return code


_MEANING = {CLEAN: "clean", DIVERGENCES: "divergences", PORT_ERRORS: "port errors", SETUP_ERRORS: "set-up errors"}


def _prepare_reference() -> int:
    """Fetch and build the pinned reference (each a no-op when cached); 3 on failure."""
    from reference.__main__ import main as reference_main

    for step in (["fetch"], ["build"]):
        if reference_main(step) != 0:
            print(f"llama-conformance: `{step[0]}` failed; exit 3 (set-up error)", file=sys.stderr)
            return SETUP_ERRORS
    return 0


def main(argv: list[str] | None = None) -> int:
    args, rest = parse(list(sys.argv[1:] if argv is None else argv))
    if args.command == "run":
        return run(args)
    target, prefix, _help = DELEGATES[args.command]
    if args.pin:
        os.environ["PIN"] = args.pin
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function or "main")(prefix + rest)


def serve(argv: list[str]) -> int:
    """``serve --vocab VOCAB``: the harness tokenizer over the port protocol; a pinned name
    (``qwen2``) is resolved to its ``.gguf`` path here, the server itself takes paths."""
    from harness.errors import HarnessError
    from harness.tokenizer.serve import main as serve_path
    argv = list(argv)
    for i, a in enumerate(argv):
        name = argv[i + 1] if a == "--vocab" and i + 1 < len(argv) else a.removeprefix("--vocab=")
        if (a == "--vocab" or a.startswith("--vocab=")) and not os.path.exists(name):
            from reference.vocabs import vocab_path
            try:
                path = str(vocab_path(name))
            except HarnessError as e:
                print(f"serve: cannot load vocab {name!r}: {e}", file=sys.stderr)
                return 2
            argv[i:i + (2 if a == "--vocab" else 1)] = ["--vocab", path]
            break
    return serve_path(argv)


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """``(args, rest)``: ``rest`` goes to a delegate's own parser (its ``--help`` too); ``run`` takes none.

    >>> parse(["serve", "--vocab", "qwen2"])[1]
    ['--vocab', 'qwen2']
    """
    p = parser()
    args, rest = p.parse_known_args(argv)
    if args.command == "run" and rest:
        p.error(f"run: unrecognized arguments: {' '.join(rest)} (pytest arguments go after --)")
    return args, rest


if __name__ == "__main__":
    sys.exit(main())
