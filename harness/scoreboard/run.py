"""``llama-conformance scoreboard`` (``make scoreboard``): every port, built and run on the engine.

For each port of ``ports/*/*/port.json`` (:mod:`.ports`; ``--ports`` selects), one after
the other:

1. **build** it (:mod:`.build`: its ``build.sh``, timed, the log in
   ``<out>/scoreboard/<port>/build.log``); a failed build makes every vocab of that port
   ``error`` with the reason, and the board goes on;
2. **run** ``llama-conformance run --port "<its serve command>"`` (the same checks, causes,
   diagnoses, reports and exit codes as any port) with ``--report-dir
   <out>/scoreboard/<port>`` (``conformance.json``, ``.html``, ``-junit.xml``; its output in
   ``run.log``), ``--jobs``, ``--budget``, ``--profile``; the reference's own cross-check is
   left out (``-k 'not crosscheck'``: it never touches the port, and ``make conformance``
   runs it); each port has its own replay store (``$LLAMA_CONFORMANCE_REPLAY/<port>``, else
   ``.hypothesis/scoreboard/<port>``; with ``--snapshot`` an empty one, so a published board is
   what a fresh clone gives);
3. for a binding (``bundles_llama_cpp``), label each cause drift or not (:mod:`.drift`);

then **summarise** (:mod:`.summary`) into ``<out>/scoreboard.json``, ``.md`` and ``.html``
(:mod:`harness.reports.scoreboard`). ``--snapshot DOCS`` copies the JSON and Markdown into
``DOCS`` and ``--readme FILE`` rewrites the table between the markers in FILE from
``DOCS/scoreboard.json``.

Examples::

    llama-conformance scoreboard --out reports --jobs 2 --budget 2m
    llama-conformance scoreboard --ports ollama shimmytok --vocabs qwen2 llama-spm
    llama-conformance scoreboard --readme README.md          # the README's table from docs/scoreboard.json

>>> run_argv(PortStub(), Path("out"), ["qwen2"], jobs="1", profile="ci", budget=None)[-4:]
['--vocabs', 'qwen2', '--', '-k=not test_crosscheck']
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from harness.errors import HarnessError
from harness.reports.scoreboard import (README_BEGIN, adapter_line, html_page, json_text, markdown, readme_block,
                                        replace_block)
from harness.scoreboard import drift
from harness.scoreboard.adapter import VOCABS as ADAPTER_VOCABS, check_adapter
from harness.scoreboard.build import build_port
from harness.scoreboard.fresh import check_fresh, engine_commit
from harness.scoreboard.ports import Port, discover, select
from harness.scoreboard.summary import port_row, read_report, vocab_types

#: The older pin a binding's divergences are checked against (drift).
OLD_PIN = os.environ.get("SCOREBOARD_OLD_PIN") or "4df29be"
#: Each run's budget when BUDGET is not set: none, the profile's counts (ci: 200 fast + 30
#: Hypothesis cases per generated test), which keeps the board with builds within an hour on 2 cores.
DEFAULT_BUDGET = None
#: Each request's time limit in the board's runs and chat checks (``$PORT_TIMEOUT`` when set):
#: a published package loading a 262,144-token vocab (gemma-4) took over the protocol's default
#: 30 s on its first request with both cores busy (five cells of the 2026-12-07 board were
#: those timeouts, not findings). A port that hangs is still stopped, after this long.
BOARD_PORT_TIMEOUT = "120"


def port_env(**extra: str) -> dict:
    """The environment of a port's run and chat check: :data:`BOARD_PORT_TIMEOUT` unless
    ``$PORT_TIMEOUT`` says otherwise, and ``extra``.

    >>> port_env(X="1")["X"], float(port_env()["PORT_TIMEOUT"]) > 0
    ('1', True)
    """
    env = dict(os.environ, **extra)
    env["PORT_TIMEOUT"] = env.get("PORT_TIMEOUT") or BOARD_PORT_TIMEOUT
    return env


class PortStub:
    name, directory = "stub", Path("/p")

    def command(self) -> str:
        return "/p/serve --vocab {vocab}"


def run_argv(port, report_dir: Path, vocabs: list[str] | None, *, jobs: str, profile: str,
             budget: str | None, keyword: str = "not test_crosscheck") -> list[str]:
    """The ``llama-conformance run`` command line for one port."""
    argv = [sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())",
            "run", "--no-fetch", "--port", port.command(), "--report-dir", str(report_dir),
            "--jobs", jobs, "--profile", profile]
    if budget:
        argv += ["--budget", budget]
    if vocabs:
        argv += ["--vocabs", *vocabs]
    return argv + ["--", f"-k={keyword}"]


def run_port(port: Port, out: Path, vocabs: list[str], args) -> dict:
    """Build and run one port (or, with ``--no-run``, read what its last run left); its row."""
    pdir = out / "scoreboard" / port.name
    if args.no_run:
        if args.adapter_check and (pdir / "steps.json").is_file():
            steps = json.loads((pdir / "steps.json").read_text(encoding="utf-8"))
            steps["adapter"] = adapter_check(port, args)
            (pdir / "steps.json").write_text(json.dumps(steps, indent=1), encoding="utf-8")
        return summarise_port(port, pdir, vocabs, args)
    steps = build_and_run(port, pdir, args)
    (pdir / "steps.json").write_text(json.dumps(steps, indent=1), encoding="utf-8")
    return summarise_port(port, pdir, vocabs, args)


def build_and_run(port: Port, pdir: Path, args, checks: bool = True) -> dict:
    """Build the port and run the engine on it: ``{"build", "run", "failure"}`` (kept in steps.json),
    with its adapter and chat checks unless ``checks`` is false (the diagnosis benchmark scores
    causes alone)."""
    if pdir.exists():
        shutil.rmtree(pdir)
    pdir.mkdir(parents=True)
    say(f"[{port.name}] building ({port.directory}/{port.build}; log {pdir / 'build.log'})")
    built = build_port(port.directory, port.build, pdir / "build.log")
    say(f"[{port.name}] build {'ok' if built.ok else 'FAILED'} in {built.seconds:.0f} s {built.reason}")
    if not built.ok:
        return {"build": built.to_json(), "run": None, "failure": f"build failed: {built.reason}"}
    argv = run_argv(port, pdir, args.vocabs, jobs=args.jobs, profile=args.profile, budget=args.budget,
                    keyword=args.keyword)
    # Each port its own replay store: one port's shrunk failures never run first for another. A
    # snapshot's start empty (in the port's report directory, emptied above): the published board
    # is what a fresh clone gives, with no earlier run's failures replayed first.
    store = (pdir / "replay" if getattr(args, "snapshot", False) else
             Path(os.environ.get("LLAMA_CONFORMANCE_REPLAY") or ".hypothesis/scoreboard") / port.name)
    env = port_env(LLAMA_CONFORMANCE_REPLAY=str(store.resolve()))
    start = time.monotonic()
    with open(pdir / "run.log", "w", encoding="utf-8") as log:
        code = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              env=env).returncode
    wall = time.monotonic() - start
    # The engine that judged this port: a board may hold rows of several runs (--snapshot with
    # --ports), and tests/test_scoreboard.py fails on a row older than the engine code.
    run = {"exit_code": code, "wall_s": round(wall, 1), "report": f"scoreboard/{port.name}/conformance.html",
           "log": f"scoreboard/{port.name}/run.log", "engine": engine_commit()}
    say(f"[{port.name}] run exited {code} in {wall:.0f} s")
    if not checks:
        return {"build": built.to_json(), "run": run, "failure": ""}
    return {"build": built.to_json(), "run": run, "failure": "", "adapter": adapter_check(port, args),
            "chat": chat_check(port, pdir, args.vocabs)}


def chat_check(port: Port, pdir: Path, vocabs: list[str] | None = None) -> dict | None:
    """The port's chat program through ``chat-check`` on ``vocabs`` (default: every vocab with a
    template; its cases in ``<pdir>/chat.json``); None when the port has no chat program."""
    if not port.chat:
        return None
    commit = engine_commit()  # what ran the check: its chat column is stale once chat code changes
    if vocabs:
        from harness.chatcheck import chat_vocabs
        vocabs = [v for v in chat_vocabs() if v in vocabs]
        if not vocabs:
            return {"exit_code": None, "cases": [], "failure": "not run: no vocab of this board carries a chat template",
                    "commit": commit}
    spec = port.command(port.chat)
    (pdir / "chat.json").unlink(missing_ok=True)  # a file an earlier check left is not this one's
    start = time.monotonic()
    with open(pdir / "chat.log", "w", encoding="utf-8") as log:
        code = subprocess.run([sys.executable, "-m", "harness", "chat-check", "--port", spec,
                               "--json", str(pdir / "chat.json"), *(["--vocabs", *vocabs] if vocabs else [])], stdout=log, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, env=port_env()).returncode
    say(f"[{port.name}] chat check exited {code} in {time.monotonic() - start:.0f} s")
    try:
        found = json.loads((pdir / "chat.json").read_text(encoding="utf-8"))
        cases, causes = found["cases"], found.get("causes", [])
    except (OSError, ValueError, KeyError) as e:
        tail = (pdir / "chat.log").read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:] or [""]
        return {"exit_code": code, "cases": [], "failure": f"chat-check exited {code} without cases ({e}): {tail[0][:300]}",
                "commit": commit}
    return {"exit_code": code, "cases": cases, "causes": causes, "log": f"scoreboard/{port.name}/chat.log",
            "commit": commit}


def adapter_check(port: Port, args) -> dict:
    """serve against the package called directly (:mod:`harness.scoreboard.adapter`), on the
    check's vocabs this board runs."""
    from reference.vocabs import vocab_path
    vocabs = [v for v in ADAPTER_VOCABS if not args.vocabs or v in args.vocabs]
    start = time.monotonic()
    check = check_adapter(port, vocab_path, vocabs)
    if check["checked"]:
        say(f"[{port.name}] adapter check: {check['equal']} of {check['requests']} answers equal "
            f"in {time.monotonic() - start:.0f} s")
    return check


def summarise_port(port: Port, pdir: Path, vocabs: list[str], args) -> dict:
    """The port's row from ``steps.json`` and its ``conformance.json``."""
    try:
        steps = json.loads((pdir / "steps.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return port_row(port.manifest(), vocabs, None, outcome="not checked",
                        failure=f"not run in this board (no {pdir}/steps.json: {type(e).__name__})")
    build, run = steps["build"], steps["run"]
    if steps["failure"]:
        return port_row(port.manifest(), vocabs, None, build=build, run=run, failure=steps["failure"])
    try:
        report = read_report(pdir / "conformance.json")
    except Exception as e:  # no report: every vocab is an error with the reason, the board goes on
        tail = (pdir / "run.log").read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
        return port_row(port.manifest(), vocabs, None, build=build, run=run,
                        failure=f"run exited {run['exit_code']} without a report ({e}): {' | '.join(tail)}")
    run.update({k: report["run"].get(k) for k in ("reproduce", "fast_seed", "profile", "pin")})
    run["replayed_inputs"] = report["totals"].get("replayed_inputs", 0)  # earlier runs' failures run first
    row = port_row(port.manifest(), vocabs, report, build=build, run=run, tree=pinned_tree())
    row["adapter"] = steps.get("adapter") or (None if port.direct else check_adapter(port, None, ()))
    row["chat"] = steps.get("chat")
    if port.bundles_llama_cpp and row["causes"]:
        from reference.lock import load
        from reference.vocabs import vocab_path
        pin_diff = drift.pin_diff_file(Path(args.docs), OLD_PIN, load().name)
        drift.label(row["causes"], OLD_PIN, vocab_path, pin_diff)
    return row


def pinned_tree() -> Path | None:
    """The pinned llama.cpp tree (the rules' source lines come from it), None if not fetched."""
    from reference.lock import load
    from reference.sources import make_source
    try:
        return Path(make_source(load(), None).tree())
    except HarnessError:
        return None


def say(message: str) -> None:
    print(f"scoreboard: {message}", file=sys.stderr, flush=True)


def header(args, wall: float | None) -> dict:
    """The run header: pin, the engine's commit, generated date, machine, budget."""
    from reference.lock import load
    lock = load()
    return {"pin": lock.name, "llama_cpp": lock.commit, "engine": engine_commit(),
            "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()} "
                       f"{platform.release()}, Python {platform.python_version()}",
            "profile": args.profile, "budget": args.budget, "jobs": args.jobs,
            "wall_s": None if wall is None else round(wall, 1)}


def write(board: dict, out: Path) -> None:
    """``<out>/scoreboard.json``, ``.md``, ``.html``."""
    out.mkdir(parents=True, exist_ok=True)
    for ext, render in (("json", json_text), ("md", markdown), ("html", html_page)):
        (out / f"scoreboard.{ext}").write_text(render(board), encoding="utf-8")
    say(f"wrote {out}/scoreboard.json, .md, .html")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="llama-conformance scoreboard", description=__doc__.split("\n")[0])
    p.add_argument("--ports", nargs="*", default=(os.environ.get("PORTS") or "").split() or None,
                   help="port names (default: $PORTS, else every ports/*/*/port.json)")
    p.add_argument("--ports-root", default="ports", help="where the ports live (default: ports)")
    p.add_argument("--vocabs", nargs="+", default=(os.environ.get("VOCABS") or "").split() or None)
    p.add_argument("--out", default="reports", help="reports directory (default: reports)")
    p.add_argument("--jobs", default=os.environ.get("JOBS") or "2", help="--jobs of each port's run (default 2)")
    p.add_argument("--profile", default=os.environ.get("HYPOTHESIS_PROFILE") or "ci",
                   help="Hypothesis profile of each run (default: ci)")
    p.add_argument("--budget", default=os.environ.get("BUDGET") or DEFAULT_BUDGET,
                   help="--budget of each port's run, e.g. 2m (default: $BUDGET, else the profile's counts)")
    p.add_argument("--keyword", default="not test_crosscheck",
                   help="pytest -k of each run (default: every check but the reference's own cross-check)")
    p.add_argument("--no-run", action="store_true",
                   help="build and run nothing: summarise what the last runs left in OUT/scoreboard/")
    p.add_argument("--adapter-check", action="store_true",
                   help="with --no-run: run each port's adapter check again (its built serve and direct) into its steps.json")
    p.add_argument("--checks-only", action="store_true",
                   help="build each port and run its adapter and chat checks, not the engine; with --snapshot, "
                   "set those rows' checks in DOCS/scoreboard.json and keep the rest of each row")
    p.add_argument("--docs", default="docs", help="where pin-diff reports and the snapshot live")
    p.add_argument("--snapshot", action="store_true", help="also copy scoreboard.json/.md into --docs")
    p.add_argument("--readme", metavar="FILE", help="run nothing: rewrite FILE's scoreboard table from "
                   "DOCS/scoreboard.json")
    p.add_argument("--check-readme", metavar="FILE", help="run nothing: exit 1 if FILE's table is not "
                   "what DOCS/scoreboard.json gives")
    p.add_argument("--check-fresh", action="store_true", help="run nothing: exit 1 if a row of "
                   "DOCS/scoreboard.json is older than the engine code or its port, naming the rows to refresh")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.readme or args.check_readme:
        return readme(Path(args.readme or args.check_readme), Path(args.docs) / "scoreboard.json",
                      check=bool(args.check_readme))
    if args.check_fresh:
        return check_fresh(Path(args.docs) / "scoreboard.json", Path(args.ports_root))
    if args.checks_only:
        return checks_only(select(discover(Path(args.ports_root)), args.ports), Path(args.out), args)
    from reference.vocabs import names
    ports = select(discover(Path(args.ports_root)), args.ports)
    vocabs = sorted(args.vocabs or names())
    out = Path(args.out)
    start = time.monotonic()
    rows = [run_port(p, out, vocabs, args) for p in ports]
    board = {"schema": 1, "header": header(args, None if args.no_run else time.monotonic() - start),
             "vocabs": vocabs, "vocab_types": vocab_types(vocabs), "ports": rows}
    board["header"]["steps_s"] = round(sum((r.get("build") or {}).get("seconds") or 0 for r in rows)
                                       + sum((r.get("run") or {}).get("wall_s") or 0 for r in rows), 1)
    if args.snapshot and args.ports:
        board = merged(board, Path(args.docs) / "scoreboard.json",
                       [p.name for p in discover(Path(args.ports_root))])
    write(board, out)
    if args.snapshot:
        for ext in ("json", "md"):
            text = (out / f"scoreboard.{ext}").read_text(encoding="utf-8")
            (Path(args.docs) / f"scoreboard.{ext}").write_text(portable(text), encoding="utf-8")
        say(f"snapshot in {args.docs}/scoreboard.json, .md")
    return 0


def checks_only(ports: list[Port], out: Path, args) -> int:
    """``--checks-only``: build each port and run the two checks that never run the engine, the
    adapter check and the chat check (into its steps.json when a run left one); with
    ``--snapshot``, those rows of DOCS/scoreboard.json take the new checks and keep their cells,
    causes and engine, so a row stays as fresh as it was. 0, or 1 when an adapter check found
    answers that differ or could not run.

    ``make scoreboard PORTS=x CHECKS_ONLY=1 SNAPSHOT=1 && make scoreboard-readme``
    """
    checks = {}
    for port in ports:
        pdir = out / "scoreboard" / port.name
        pdir.mkdir(parents=True, exist_ok=True)
        built = build_port(port.directory, port.build, pdir / "build.log")
        say(f"[{port.name}] build {'ok' if built.ok else 'FAILED'} in {built.seconds:.0f} s {built.reason}")
        failed = {"checked": False, "why": f"build failed: {built.reason}"}
        checks[port.name] = {"adapter": adapter_check(port, args) if built.ok else failed,
                             "chat": chat_check(port, pdir, args.vocabs) if built.ok else None}
        if (pdir / "steps.json").is_file():
            steps = json.loads((pdir / "steps.json").read_text(encoding="utf-8"))
            (pdir / "steps.json").write_text(json.dumps(steps | checks[port.name], indent=1), encoding="utf-8")
    for name, check in checks.items():
        say(f"[{name}] {adapter_line(check['adapter'])}")
    if args.snapshot:
        with_checks(Path(args.docs), checks)
    return 1 if any(p.direct and not agrees(checks[p.name]["adapter"]) for p in ports) else 0


def agrees(check: dict) -> bool:
    """An adapter check that ran and found every answer equal."""
    return bool(check.get("checked")) and check["equal"] == check["requests"]


def with_checks(docs: Path, checks: dict[str, dict]) -> None:
    """DOCS/scoreboard.json and .md with ``checks`` (``{port: {"adapter": ..., "chat": ...}}``)
    as those rows' adapter and chat checks."""
    snapshot = docs / "scoreboard.json"
    try:
        board = json.loads(snapshot.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise HarnessError(f"{snapshot}: cannot read the snapshot to set adapter and chat checks in ({e}); "
                           "run make scoreboard SNAPSHOT=1 first") from e
    missing = sorted(set(checks) - {r["name"] for r in board["ports"]})
    if missing:
        raise HarnessError(f"{snapshot}: no row for {', '.join(missing)}; run make scoreboard "
                           f"PORTS=\"{' '.join(missing)}\" SNAPSHOT=1 to add one")
    for row in board["ports"]:
        row.update(checks.get(row["name"], {}))
    snapshot.write_text(portable(json_text(board)), encoding="utf-8")
    (docs / "scoreboard.md").write_text(portable(markdown(board)), encoding="utf-8")
    say(f"adapter and chat checks of {', '.join(checks)} set in {snapshot} and scoreboard.md")


def merged(board: dict, snapshot: Path, order: list[str]) -> dict:
    """``board`` (some ports just run) over the snapshot's other rows, in ``order`` (the ports').

    ``make scoreboard PORTS=x SNAPSHOT=1`` refreshes x's row and keeps the rest, each row with
    the engine that ran it (``run.engine``); a snapshot of another pin or vocab list is not
    mixed in: that is an error naming the fix (run every port).
    """
    try:
        old = json.loads(snapshot.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise HarnessError(f"{snapshot}: cannot read the snapshot to refresh some of its rows ({e}); "
                           "run make scoreboard SNAPSHOT=1 without PORTS=") from e
    if (old["header"].get("pin"), old["vocabs"]) != (board["header"]["pin"], board["vocabs"]):
        raise HarnessError(f"{snapshot}: made on pin {old['header'].get('pin')} with {len(old['vocabs'])} vocabs, "
                           f"this run pin {board['header']['pin']} with {len(board['vocabs'])}: rows of the two "
                           "cannot share a board; run make scoreboard SNAPSHOT=1 without PORTS=")
    fresh = {r["name"]: r for r in board["ports"]}
    rows = {r["name"]: r for r in old["ports"]} | fresh
    names = [n for n in order if n in rows] + [n for n in rows if n not in order]
    header = dict(board["header"], refreshed=sorted(fresh), wall_s=None)
    return dict(board, header=header, ports=[rows[n] for n in names])


def portable(text: str, root: Path | None = None, home: str | None = None) -> str:
    """The snapshot without this machine's paths: the checkout's root and the home directory go.

    >>> portable("--port '/src/x/ports/go/ollama/serve' in /home/u/.cache/l", Path("/src/x"), "/home/u")
    "--port 'ports/go/ollama/serve' in ~/.cache/l"
    """
    root = Path.cwd().resolve() if root is None else root
    home = os.path.expanduser("~") if home is None else home
    text = text.replace(str(root) + "/", "")
    return text.replace(home + "/", "~/") if home not in ("", "/") else text


def readme(path: Path, board_json: Path, *, check: bool) -> int:
    """Rewrite (or check) the block between the scoreboard markers in ``path``."""
    try:
        board = json.loads(board_json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise HarnessError(f"{board_json}: cannot read the scoreboard snapshot ({e}); "
                           "run `make scoreboard SNAPSHOT=1` to write it, then `make scoreboard-readme`") from None
    text = path.read_text(encoding="utf-8")
    new = replace_block(text, readme_block(board), where=str(path))
    if check:
        if new != text:
            say(f"{path}: the table between {README_BEGIN!r} and its end marker is not what "
                f"{board_json} gives; run `make scoreboard-readme`")
            return 1
        return 0
    path.write_text(new, encoding="utf-8")
    say(f"rewrote the scoreboard table in {path} from {board_json}")
    return 0
