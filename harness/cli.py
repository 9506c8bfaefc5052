"""``llama-conformance``: the one command (installed by ``pip install``; the Makefile calls it).

Subcommands:

* ``run --port "CMD {vocab}" [--vocabs ...] [--pin ...] [--profile ...] [--jobs N] [--report-dir DIR]``:
  fetch and build the pinned reference if needed, then run the conformance suite
  shipped in this package (``pytest --pyargs harness.conformance.suite``) against the port;
  ``--hosts a,2*b`` runs it on other machines over SSH (pytest-xdist's execnet gateways),
  ``--shard I/N`` runs part I of N (by vocab, for CI matrices);
* ``prepare --hosts ...``: install this package, fetch, build and verify the pin on each host;
* ``merge DIR...``: the reports of N shards as one;
* ``diff``, ``serve``, ``bench``, ``scoreboard``: the harness's own tools;
* ``fetch``, ``build``, ``pin``: the pinned reference (vocabs, sources and builds
  live in the per-user cache, see ``reference.paths``).

Exit codes of ``run`` (:func:`exit_code`; the first that applies, in this order: 3, 2, 1, 4):

* 3: errors: a check raised (an ``error`` cell), the reference's own check failed, or the
  run could not be set up (a collection error, a bad option, a missing build);
* 2: port errors: the port crashed, hung or answered garbage;
* 1: divergences: the port disagrees with llama.cpp;
* 4: incomplete: nothing above, but some cell is unsupported, partial or not checked, or
  no case was compared at all (``--allow-unsupported`` lets cases the port declared
  unsupported pass);
* 0: clean: every cell passed.

>>> args = parser().parse_args(["run", "--port", "python -m harness serve --vocab {vocab}", "--vocabs", "qwen2", "--jobs", "2"])
>>> args.port, args.vocabs, args.jobs, args.allow_unsupported
('python -m harness serve --vocab {vocab}', ['qwen2'], '2', False)
>>> exit_code(pytest_rc=1, cells=[{"vocab": "v", "flags": "plain", "check": "encode", "cases": 3, "divergent": 1}])
(1, 'divergences')
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys

CLEAN, DIVERGENCES, PORT_ERRORS, ERRORS, INCOMPLETE = 0, 1, 2, 3, 4
SETUP_ERRORS = ERRORS  # the name before the error outcome: a set-up error is one kind of error
EXIT_CODES = "0 clean, 1 divergences, 2 port errors, 3 errors, 4 incomplete"

# Subcommands that hand their arguments to an existing module's own parser (one code path).
DELEGATES = {
    "diff": ("harness.diffcmd", [], "first-divergent-token diff of a port vs llama.cpp for one text"),
    "serve": ("harness.cli:serve", [], "serve the harness tokenizer over the JSON-lines port protocol"),
    "pin-diff": ("harness.pindiff", [], "llama.cpp against llama.cpp across two pins"),
    "bench": ("harness.bench.run", [], "speed of the harness tokenizer against llama.cpp"),
    "scoreboard": ("harness.scoreboard.run", [], "build every port of ports/*/*/port.json and run the engine on each (make scoreboard)"),
    "diagnosis-bench": ("harness.scoreboard.diagnosis_bench", [], "score the engine's causes on labelled ports against their labelled bugs (make diagnosis-bench)"),
    "fetch": ("reference.__main__", ["fetch"], "fetch and verify the pinned vocabs and golden files"),
    "build": ("reference.__main__", ["build"], "build the pinned llama-tokenize and libllama (cached)"),
    "pin": ("reference.__main__", ["pin"], "move the pin to another llama.cpp commit"),
    "prepare": ("harness.remote.prepare", [], "make SSH hosts ready for run --hosts (package, pin, build)"),
    "merge": ("harness.cli:merge", [], "merge the reports of several runs (CI shards) into one"),
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="llama-conformance", description="Check a port of llama.cpp's tokenizer against the pinned llama.cpp.",
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=f"exit codes of run: {EXIT_CODES}")
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
                       epilog=f"exit codes: {EXIT_CODES} (unsupported, partial or not checked cells; "
                              "see --allow-unsupported)")
    r.add_argument("--port", default=os.environ.get("PORT") or "harness",
                   help='the port: a command with {vocab} (a .gguf path is substituted), e.g. '
                        '"java -jar port.jar --vocab {vocab}"; or harness, llama.cpp, py:MODULE:FACTORY '
                        "(default: $PORT, else harness)")
    r.add_argument("--vocabs", nargs="+", default=_env_list("VOCABS"), metavar="VOCAB",
                   help="pinned vocab names, .gguf paths, derived:<pre or model>, all-pre, all-derived or all "
                        "(default: $VOCABS, else every pinned vocab)")
    r.add_argument("--pin", default=os.environ.get("PIN") or None,
                   help="llama.cpp commit or pin name to check against (default: $PIN, else the lock's)")
    r.add_argument("--profile", default=os.environ.get("HYPOTHESIS_PROFILE") or "conformance",
                   help="Hypothesis budget: ci, conformance or thorough (default: $HYPOTHESIS_PROFILE, else conformance)")
    r.add_argument("--jobs", "-n", default=os.environ.get("JOBS") or "auto",
                   help="pytest-xdist workers: a number or auto (default: $JOBS, else auto)")
    r.add_argument("--report-dir", default="reports",
                   help="where conformance.json, conformance.html and conformance-junit.xml go (default: reports)")
    r.add_argument("--seed", type=int, default=_env_int("CONFORMANCE_SEED"),
                   help="seed of Hypothesis and of the fast random phase (default: $CONFORMANCE_SEED, else a "
                        "new one each run); the run prints it in its `reproduce:` line")
    r.add_argument("--allow-unsupported", action="store_true",
                   default=os.environ.get("ALLOW_UNSUPPORTED", "") == "1",
                   help="let cases the port declares unsupported pass: exit 0, not 4, when they are all "
                        "that is missing (default: $ALLOW_UNSUPPORTED=1)")
    r.add_argument("--budget", default=os.environ.get("BUDGET") or None,
                   help="wall time for the fast random phases, e.g. 5m or 300s (default: $BUDGET, else "
                        "the profile's counts)")
    r.add_argument("--no-known-examples", action="store_true",
                   help="generated text only, without the fixed known-bug texts (KNOWN_EXAMPLES=0)")
    r.add_argument("--no-fetch", action="store_true",
                   help="do not fetch or build the reference first (fail if it is missing)")
    r.add_argument("--shard", default=None, metavar="I/N",
                   help="run part I of N of the tests, split by vocab (CI matrices; merge the N reports with "
                        "`llama-conformance merge`)")
    r.add_argument("--replay-from", nargs="+", default=None, metavar="DIR",
                   help="add the replay stores of these report directories (their replay/, as shards and "
                        "merge write them) or store directories to this run's replay store before the run, "
                        "so their shrunk failures run first ($LLAMA_CONFORMANCE_REPLAY, else "
                        ".hypothesis/conformance)")
    r.add_argument("--hosts", default=None, action="append", metavar="HOST[,HOST...]",
                   help="run on these SSH hosts (N*HOST: N workers there; local: this machine) instead of "
                        "--jobs; each needs `llama-conformance prepare --hosts ...` first")
    from harness.remote.hosts import add_layout_options
    add_layout_options(r)
    r.add_argument("pytest_args", nargs="*", metavar="-- PYTEST_ARG",
                   help="further pytest arguments, after --")


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "").strip()
    return int(value) if value.lstrip("-").isdigit() else None


def _env_list(name: str) -> list[str] | None:
    value = os.environ.get(name, "").replace(",", " ").split()
    return value or None


def pytest_argv(args: argparse.Namespace, tx: list[str] | None = None) -> list[str]:
    """The pytest command line ``run`` uses; the suite comes from this package, not a checkout.
    ``tx``: xdist's ``--tx`` workers of ``--hosts`` in place of ``-n`` (the suite by its
    package name then, :mod:`harness.remote.launch`).

    >>> a = parser().parse_args(["run", "--jobs", "2", "--report-dir", "out", "--seed", "7"])
    >>> " ".join(pytest_argv(a))  # doctest: +ELLIPSIS
    '.../harness/conformance/suite -c ... -p harness.conformance.plugin -p no:cacheprovider -n 2 ...'
    """
    report_dir = os.path.abspath(args.report_dir)
    from harness.remote.launch import SUITE_ARGS
    argv = [*(suite_args() if tx is None else SUITE_ARGS), "-p", "harness.conformance.plugin", "-p", "no:cacheprovider",
            *(["-n", str(args.jobs)] if tx is None else tx), "--dist", "loadgroup",
            # harness and reference are imported before pytest starts (fetch, build): nothing to rewrite.
            "-W", "ignore::pytest.PytestAssertRewriteWarning",
            f"--conformance-reports={report_dir}"]
    if args.seed is not None:
        argv.append(f"--hypothesis-seed={args.seed}")
    if args.shard:
        argv.append(f"--conformance-shard={args.shard}")
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


def exit_code(*, pytest_rc: int, cells=(), reference_cells=(), setup_errors: int = 0,
              allow_unsupported: bool = False) -> tuple[int, str]:
    """The documented exit code and why, from the run's cells (see the module docstring).

    >>> cell = {"vocab": "v", "flags": "plain", "check": "encode", "cases": 3}
    >>> exit_code(pytest_rc=0, cells=[cell])
    (0, 'clean')
    >>> exit_code(pytest_rc=0, cells=[cell, dict(cell, flags="parse", cases=0, unsupported=5)])[0]
    4
    >>> exit_code(pytest_rc=0, cells=[cell, dict(cell, flags="parse", cases=0, unsupported=5)], allow_unsupported=True)
    (0, 'clean (1 unsupported cell(s) allowed by --allow-unsupported)')
    >>> exit_code(pytest_rc=1, cells=[dict(cell, errors=1), dict(cell, flags="add", port_errors=1)])
    (3, 'errors: 1 error cell(s)')
    >>> exit_code(pytest_rc=1, cells=[dict(cell, divergent=2, errors=1)])   # diverged, then raised
    (3, 'errors: 1 error cell(s)')
    """
    from harness.reports.cells import cell_outcomes, incomplete, merge_cells
    port = list(merge_cells(cells).values())
    ref = list(merge_cells(reference_cells).values())
    # Every outcome of every cell counts, not only its worst: a cell that diverged and then
    # raised is an error cell, and a divergent cell too.
    having = {kind: sum(1 for c in port if kind in cell_outcomes(c)) for kind in ("error", "port error", "divergence")}
    ref_bad = [c for c in ref if {"divergence", "error", "port error"} & set(cell_outcomes(c))]
    if setup_errors or pytest_rc not in (0, 1) or having["error"] or ref_bad:
        why = [f"{n} {what}" for n, what in ((having["error"], "error cell(s)"),
                                             (len(ref_bad), "failed reference check cell(s)"),
                                             (setup_errors, "set-up error(s)")) if n]
        return ERRORS, "errors: " + (", ".join(why) or f"pytest exit status {pytest_rc}")
    if having["port error"]:
        return PORT_ERRORS, "port errors"
    if having["divergence"]:
        return DIVERGENCES, "divergences"
    if pytest_rc != 0:
        return ERRORS, "errors: a test failed without a finding"
    short = [c for c in port if incomplete(c, allow_unsupported)]
    if short or not any(c.get("cases") for c in port):
        kinds: dict[str, int] = {}
        for c in short:
            kinds[c["outcome"]] = kinds.get(c["outcome"], 0) + 1
        why = ", ".join(f"{n} {k} cell(s)" for k, n in sorted(kinds.items())) or "no case was compared"
        hint = " (--allow-unsupported lets declared-unsupported cases pass)" if not allow_unsupported and \
            any(c["outcome"] in ("unsupported", "partial") for c in short) else ""
        return INCOMPLETE, f"incomplete: {why}{hint}"
    allowed = sum(1 for c in port if c["outcome"] in ("unsupported", "partial"))
    return CLEAN, "clean" + (f" ({allowed} unsupported cell(s) allowed by --allow-unsupported)" if allowed else "")


class Outcome:
    """Controller-side pytest plugin: gathers every test's cells (the conformance plugin's
    tallies) and counts failures no tally explains (collection errors, a failed teardown)."""

    def __init__(self):
        self.cells: list[dict] = []
        self.reference_cells: list[dict] = []
        self.setup_errors = 0

    def pytest_runtest_logreport(self, report):
        import json

        from harness.conformance.plugin import TALLY_KEY
        from harness.reports.cells import REFERENCE_CHECKS

        tallies = [json.loads(v) for k, v in report.user_properties if k == TALLY_KEY]
        for t in tallies:
            counts = t["counts"]
            (self.reference_cells if counts["check"] in REFERENCE_CHECKS else self.cells).append(counts)
        if report.failed and not tallies:
            self.setup_errors += 1

    def pytest_collectreport(self, report):
        if report.failed:
            self.setup_errors += 1


def reproduce_line(args: argparse.Namespace) -> str:
    """The command that runs this run again with its seed (from an empty replay store, the
    same inputs in the same order, so the same causes).

    >>> a = parser().parse_args(["run", "--port", "my port {vocab}", "--vocabs", "qwen2", "--profile", "ci",
    ...                          "--seed", "7"])
    >>> reproduce_line(a)
    "llama-conformance run --port 'my port {vocab}' --vocabs qwen2 --profile ci --seed 7"
    """
    argv = ["llama-conformance", "run", "--port", args.port]
    if args.vocabs:
        argv += ["--vocabs", *args.vocabs]
    if args.pin:
        argv += ["--pin", args.pin]
    argv += ["--profile", args.profile, "--seed", str(args.seed)]
    if args.budget:
        argv += ["--budget", args.budget]
    if args.no_known_examples:
        argv.append("--no-known-examples")
    if args.allow_unsupported:
        argv.append("--allow-unsupported")
    if getattr(args, "shard", None):
        argv += ["--shard", args.shard]  # (not --hosts: hosts change where tests run, not what they find)
    if args.pytest_args:
        argv += ["--", *args.pytest_args]
    return shlex.join(argv)


def run(args: argparse.Namespace) -> int:
    import random

    import pytest

    from harness.errors import HarnessError
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 2**31)  # printed below: the run reproduces
    try:
        os.environ.update(run_env(args))
        if args.shard:
            from harness.conformance.shard import parse_shard
            parse_shard(args.shard)
    except HarnessError as e:
        print(f"llama-conformance: {e}", file=sys.stderr)
        return ERRORS
    reproduce = reproduce_line(args)
    os.environ["LLAMA_CONFORMANCE_REPRODUCE"] = reproduce  # recorded in conformance.json's run
    if args.replay_from:
        try:
            _replay_from(args.replay_from)
        except HarnessError as e:
            print(f"llama-conformance: {e}", file=sys.stderr)
            return ERRORS
    if not args.no_fetch:
        prepared = _prepare_reference()
        if prepared:
            return prepared
    tx, plugins = None, []
    if args.hosts:
        from harness.remote.launch import launch
        from harness.remote.probe import facts
        try:
            tx, plugin = launch(args, facts(verify_vocabs=False))
        except HarnessError as e:
            print(f"llama-conformance: {e}", file=sys.stderr)
            return SETUP_ERRORS
        plugins.append(plugin)
    os.makedirs(args.report_dir, exist_ok=True)
    outcome = Outcome()
    rc = int(pytest.main(pytest_argv(args, tx), plugins=[outcome, *plugins]))
    if rc == pytest.ExitCode.NO_TESTS_COLLECTED and args.shard:
        print(f"llama-conformance: shard {args.shard} holds no vocab (fewer vocabs than shards); "
              f"its empty report is written for the merge; exit {CLEAN}", file=sys.stderr)
        return CLEAN
    code, why = exit_code(pytest_rc=rc, cells=outcome.cells, reference_cells=outcome.reference_cells,
                          setup_errors=outcome.setup_errors, allow_unsupported=args.allow_unsupported)
    slow = sum(c.get("slow", 0) for c in outcome.cells)
    if slow:  # a warning, never a code of its own (harness.reports.scaling): slow is not wrong
        why += f"; {slow} slow run(s) (length scaling: a warning, the exit code is unchanged)"
    budget = " (--budget runs by wall time: the same inputs in the same order, as many as time allows)" \
        if args.budget else ""
    print(f"reproduce: {reproduce}{budget}", file=sys.stderr)
    print(f"llama-conformance: exit {code} ({why}); reports in {args.report_dir}/", file=sys.stderr)
    return code


def _replay_from(sources: list[str]) -> None:
    """``--replay-from``: the named stores' entries into this run's store, said on stderr."""
    from harness.conformance.replaying import add_stores, run_pin
    from harness.engine.replay import ReplayStore, replay_root
    store = ReplayStore(replay_root(), run_pin())
    added, lines = add_stores(sources, store)
    for line in lines + [f"skipped: {p}" for p in store.problems]:
        print(f"llama-conformance: --replay-from: {line}", file=sys.stderr)


def _prepare_reference() -> int:
    """Fetch and build the pinned reference (each a no-op when cached); 3 on failure."""
    from reference.__main__ import main as reference_main

    for step in (["fetch"], ["build"]):
        if reference_main(step) != 0:
            print(f"llama-conformance: `{step[0]}` failed; exit 3 (errors: set-up)", file=sys.stderr)
            return ERRORS
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


def merge(argv: list[str]) -> int:
    """``merge DIR...`` (:mod:`harness.mergecmd`); its exit code is ``run``'s, from the merged cells."""
    from harness.mergecmd import main as merge_main
    return merge_main(argv, merged_exit_code)


def merged_exit_code(data: dict, missing: list[str], allow_unsupported: bool = False) -> tuple[int, str]:
    """:func:`exit_code` of a merged report, from every test's cells (``tallies``); a shard
    missing (``merge --allow-missing``) makes it incomplete at best.

    >>> cell = {"vocab": "v", "flags": "plain", "check": "encode", "cases": 3}
    >>> merged_exit_code({"tallies": [{"counts": cell}]}, ["2/2"])
    (4, 'incomplete: shard(s) 2/2 missing')
    """
    from harness.reports.cells import REFERENCE_CHECKS
    cells = [t["counts"] for t in data["tallies"]]
    code, why = exit_code(pytest_rc=0, cells=[c for c in cells if c["check"] not in REFERENCE_CHECKS],
                          reference_cells=[c for c in cells if c["check"] in REFERENCE_CHECKS],
                          allow_unsupported=allow_unsupported)
    if missing and code in (CLEAN, INCOMPLETE):
        return INCOMPLETE, f"incomplete: shard(s) {', '.join(missing)} missing"
    return code, why


def serve(argv: list[str]) -> int:
    """``serve --vocab VOCAB``: the harness tokenizer over the port protocol; a pinned name
    (``qwen2``) is resolved to its ``.gguf`` path here, the server itself takes paths."""
    from harness.errors import HarnessError
    from harness.tokenizer.serve import main as serve_path
    argv = list(argv)
    for i, a in enumerate(argv):
        name = argv[i + 1] if a == "--vocab" and i + 1 < len(argv) else a.removeprefix("--vocab=")
        if (a == "--vocab" or a.startswith("--vocab=")) and not os.path.exists(name):
            from harness.inputs.derived import resolve
            try:
                path = str(resolve(name))
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
