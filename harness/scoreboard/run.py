"""``python -m harness.scoreboard``: every port x every pinned vocab -> the scoreboard.

For each port (a JSON-lines server of this package, see :data:`PORTS`):

1. **probe** each vocab (start the server, ask ``info``): a vocab the port
   cannot load is ``unsupported`` with its error, not a divergence;
2. **sample** each supported vocab on the pinned corpus (:mod:`.sample`);
3. run the **conformance suite** on each supported vocab with
   ``PORT="<server> --vocab {vocab}"``, writing its report to
   ``<out>/scoreboard/<port>/<vocab>/conformance.json`` (``--conformance-reports``);

then write ``<out>/scoreboard.md``, ``.html`` and ``.json``.

Example (what ``make scoreboard`` runs)::

    python -m harness.scoreboard --out reports
    python -m harness.scoreboard --ports transformers --vocabs qwen2 llama-spm --no-suite

>>> port_command("transformers", "/venv/bin/python")
'/venv/bin/python -m harness.scoreboard.hf --vocab {vocab}'
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.errors import HarnessError, PortError
from harness.protocol.client import ExternalPort
from harness.reports.scoreboard import Cell, cell_from_json, html_page, json_text, markdown
from harness.scoreboard.client import probe_result
from harness.scoreboard.results import fill_from_report, load_report, settle

PORTS = {"transformers": "harness.scoreboard.hf",
         "llama-cpp-python": "harness.scoreboard.llama_cpp_python"}
# pytest exit codes 0 (all passed) and 1 (some failed: divergences) both mean "the suite ran".
SUITE_RAN = (0, 1)


def port_command(port: str, python: str) -> str:
    """The PORT command (with ``{vocab}``) of a named port."""
    if port not in PORTS:
        raise HarnessError(f"unknown port {port!r}: the scoreboard knows {', '.join(PORTS)}")
    return f"{shlex.quote(python)} -m {PORTS[port]} --vocab {{vocab}}"


def with_pieces(sampled: dict, reference) -> dict:
    """Label the ids of each sample example with the reference's pieces (hex), like the
    engine's ``pieces``, so the diff reads as text; ids out of range stay unlabelled.

    >>> class R:
    ...     n_vocab = 2
    ...     def token_to_piece(self, id, special=False): return b"ab"[id:id + 1]
    >>> with_pieces({"examples": [{"reference_ids": [0], "port_ids": [1, 7]}]}, R())["examples"][0]["pieces"]
    {'0': '61', '1': '62'}
    """
    for ex in sampled.get("examples", []):
        ids = sorted({i for i in ex["reference_ids"] + ex["port_ids"] if 0 <= i < reference.n_vocab})
        ex["pieces"] = {str(i): reference.token_to_piece(i, special=True).hex() for i in ids}
    return sampled


def examine(command: str, vocab: str, texts: list[str], timeout: float) -> tuple[str, str, dict | None]:
    """Probe one vocab and, if the port loads it, sample it on ``texts`` (same process).

    Returns (status 'ok'|'unsupported'|'port-error', detail, sample JSON or None).
    """
    from harness.scoreboard.sample import sample
    from reference.inproc import load_reference
    from reference.vocabs import vocab_path

    path = vocab_path(vocab)
    try:
        client = ExternalPort(command, path, timeout=timeout)
    except PortError as e:
        return "port-error", str(e), None
    try:
        status, detail = probe_result(client.exchange({"op": "info"}))
        if status != "ok" or not texts:
            return status, detail, None
        reference = load_reference(path)
        return status, detail, with_pieces(sample(client, reference, texts).to_json(), reference)
    except PortError as e:
        return "port-error", str(e), None
    finally:
        client.close()


def run_suite(command: str, vocabs: list[str], out_dir: Path, *, jobs: str, profile: str,
              timeout: float) -> tuple[int, str]:
    """Run the conformance suite for one port; (pytest exit code, output tail)."""
    from harness.cli import suite_args

    out_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PORT=command, VOCABS=" ".join(vocabs), HYPOTHESIS_PROFILE=profile,
               LLAMA_CONFORMANCE_REQUIRE_REFERENCE="1", PORT_TIMEOUT=str(timeout))
    argv = [sys.executable, "-m", "pytest", "-q", "-n", jobs, "-p", "harness.conformance.plugin",
            *suite_args(), f"--conformance-reports={out_dir.resolve()}"]
    # The suite comes from the installed package, so this runs outside a checkout too.
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    (out_dir / "pytest.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    return proc.returncode, (proc.stdout + proc.stderr)[-3000:]


def _meta(profile: str) -> dict:
    from reference.lock import load
    return {"llama_cpp": load().commit, "profile": profile,
            "generated_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def suite_cell(cell: Cell, command: str, args) -> Cell:
    """Run the conformance suite for one port on one vocab and fill the cell.

    One run per vocab: each xdist worker then loads the port once (a port
    such as transformers takes a minute to start), and one vocab's crash
    cannot hide another's results.
    """
    out_dir = (Path(args.out) / "scoreboard" / cell.port / cell.vocab).resolve()
    code, tail = run_suite(command, [cell.vocab], out_dir, jobs=args.jobs, profile=args.profile,
                           timeout=args.timeout)
    if code in SUITE_RAN:
        fill_from_report(cell, load_report(out_dir / "conformance.json"))
    else:
        cell.port_errors.append(f"conformance suite failed (pytest exit {code}):\n{tail}")
    print(f"[{cell.port}] {cell.vocab}: suite exit {code}, golden {cell.golden_text()}, "
          f"gen {cell.generated_text()}", file=sys.stderr, flush=True)
    return cell


def score_port(port: str, args, vocabs: list[str], texts: list[str]) -> list[Cell]:
    """Probe, sample and run the suite for one port; its cells."""
    command = port_command(port, args.port_python)
    cells = {v: Cell(port, v) for v in vocabs}

    def one(v):
        status, detail, sampled = examine(command, v, texts, args.timeout)
        if status != "ok":
            cells[v].status, cells[v].error = status, detail
        cells[v].sample = sampled
        print(f"[{port}] {v}: {status} {detail[:100]} sample {cells[v].sample_text()}",
              file=sys.stderr, flush=True)

    with ThreadPoolExecutor(max_workers=args.probe_jobs) as pool:
        list(pool.map(one, vocabs))  # list(): re-raise any exception from the workers
    if not args.no_suite:
        for v in [v for v in vocabs if cells[v].status == "not-run"]:
            suite_cell(cells[v], command, args)
    return [settle(cells[v]) for v in vocabs]


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m harness.scoreboard", description=__doc__.split("\n")[0])
    p.add_argument("--ports", nargs="+", default=list(PORTS), choices=list(PORTS))
    p.add_argument("--vocabs", nargs="+", help="default: all pinned vocabs")
    p.add_argument("--out", default="reports", help="reports directory (default: reports)")
    p.add_argument("--jobs", default=os.environ.get("JOBS", "auto"), help="pytest-xdist -n (default auto)")
    p.add_argument("--profile", default=os.environ.get("HYPOTHESIS_PROFILE") or "conformance")
    p.add_argument("--timeout", type=float, default=900.0,
                   help="per-request port timeout in s (default 900: the first request pays the "
                        "port's load, 4+ min for gemma-4 in transformers on a busy 2-core machine)")
    p.add_argument("--port-python", default=sys.executable,
                   help="interpreter that has the port libraries (default: this one)")
    p.add_argument("--probe-jobs", type=int, default=2, help="vocabs probed/sampled at once (default 2)")
    p.add_argument("--no-suite", action="store_true", help="probe and sample only")
    p.add_argument("--no-sample", action="store_true", help="skip the corpus sample")
    p.add_argument("--merge", nargs="+", metavar="JSON",
                   help="run nothing: re-render these scoreboard.json files (e.g. one per port) into --out")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from harness.scoreboard.sample import corpus_chunks
    from reference.vocabs import names
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.merge:
        return write(*merged(args.merge), Path(args.out))
    vocabs = sorted(args.vocabs or names())
    texts = [] if args.no_sample else corpus_chunks()
    cells = [c for port in args.ports for c in score_port(port, args, vocabs, texts)]
    return write(cells, args.ports, vocabs, _meta(args.profile), Path(args.out))


def merged(paths: list[str]) -> tuple[list[Cell], list[str], list[str], dict]:
    """Cells, ports, vocabs and meta of several scoreboard.json files (later files win)."""
    import json
    cells: dict[tuple[str, str], Cell] = {}
    ports, vocabs, meta = [], set(), {}
    for path in paths:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        meta = data["meta"]
        ports += [p for p in data["ports"] if p not in ports]
        vocabs.update(data["vocabs"])
        cells.update({(c["port"], c["vocab"]): cell_from_json(c) for c in data["cells"]})
    return list(cells.values()), ports, sorted(vocabs), meta


def write(cells: list[Cell], ports: list[str], vocabs: list[str], meta: dict, out: Path) -> int:
    """Write scoreboard.md, .html and .json into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for name, render in (("md", markdown), ("html", html_page), ("json", json_text)):
        (out / f"scoreboard.{name}").write_text(render(cells, ports, vocabs, meta), encoding="utf-8")
    print(f"wrote {out}/scoreboard.md, .html, .json", file=sys.stderr)
    return 0
