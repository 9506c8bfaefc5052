"""``python -m harness fuzz``: hostile GGUF files through the harness and llama.cpp, judged by llama.cpp.

Each case is a seed vocab (:mod:`harness.fuzz.seeds`) with one mutation
(:mod:`harness.fuzz.mutations`). Both sides load it in their own forked child,
with a memory limit (RLIMIT_AS) and a deadline (:mod:`harness.fuzz.sandbox`);
a child works through a batch of cases, reporting each, and when it dies the
case it was on gets the blame and a fresh child takes the rest:
llama.cpp through the in-process reference (vocab_only), the harness through
``Tokenizer.from_gguf``. A side that loads answers the probes: the ids of a few
texts under two flag combinations, and the pieces of a few ids.

Outcomes per case (counted per mutation class):

- ``refused``: both refuse (a llama.cpp abort while loading counts as refusing);
- ``equal``: both load, and every probe agrees;
- ``mismatch``: one loads and the other refuses, or a probe differs;
- ``foreign``, ``crash``, ``hang``, ``memory``: the harness raised something other than
  a HarnessError, died, ran past the deadline, or ran out of memory;
- ``llama_crash``: llama.cpp crashed or hung after loading, or mid-probe: llama.cpp's
  fault, reported and not counted against the harness.

The last five harness outcomes and ``mismatch`` fail the run; each such case is
saved (the ``.gguf`` and a ``.json`` saying what each side did) under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from harness.fuzz.mutations import CLASSES, mutate
from dataclasses import dataclass, field

from harness.fuzz import report
from harness.fuzz.sandbox import Child, start, wait
from harness.fuzz.seeds import PROBE_FLAGS, PROBE_TEXTS, SEEDS

OUTCOMES = ("cases", "refused", "equal", "mismatch", "foreign", "crash", "hang", "memory", "llama_crash")
FAILURES = ("mismatch", "foreign", "crash", "hang", "memory")
TIMEOUT = 20.0
MEM_BYTES = 1 << 30
BATCH = 25  # cases per forked child: a fork costs about as much as a case


def probe_ids(n: int) -> list[int]:
    """The ids whose pieces are compared: the first 16, the last, and two in between.

    >>> probe_ids(300)
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 100, 150, 299]
    """
    return sorted({*range(min(n, 16)), n // 3, n // 2, n - 1} - {-1})


def _probe(encode, piece, n: int, errors: tuple) -> list:
    out = []
    for text in PROBE_TEXTS:
        for add, parse in PROBE_FLAGS:
            try:
                out.append(encode(text, add, parse))
            except errors:
                out.append("error")
    for i in probe_ids(n):
        for special in (False, True):
            try:
                out.append(piece(i, special).hex())
            except errors:
                out.append("error")
    return out


def llama_side(path: str, send) -> None:
    """In a child: load with llama.cpp (vocab_only) and probe."""
    os.environ["GGML_NO_BACKTRACE"] = "1"  # else each GGML_ABORT runs gdb to print a backtrace
    from reference.inproc import InProcessReference
    from harness.errors import ReferenceFailure
    try:
        ref = InProcessReference(Path(path))
    except ReferenceFailure as e:
        send({"load": "refused", "why": str(e).splitlines()[0][:300]})
        return
    send({"load": "ok", "n_vocab": ref.n_vocab})
    send({"probes": _probe(ref.encode, ref.token_to_piece, ref.n_vocab, (ReferenceFailure,))})


def harness_side(path: str, send) -> None:
    """In a child: load with the harness tokenizer and probe; say how it failed if it did."""
    from harness.errors import HarnessError
    from harness.tokenizer import Tokenizer
    stage = "load"
    try:
        try:
            tok = Tokenizer.from_gguf(path)  # builds the session too, as llama.cpp's load does
        except HarnessError as e:
            send({"load": "refused", "why": str(e)[:300]})
            return
        send({"load": "ok", "n_vocab": tok.n_vocab})
        stage = "probe"
        probes = _probe(lambda t, a, p: tok.encode(t, add_special=a, parse_special=p),
                        lambda i, s: tok.token_to_piece(i, special=s), tok.n_vocab, (HarnessError,))
        send({"probes": probes})
    except MemoryError:
        send({"memory": stage})
    except Exception as e:  # the point of the fuzzer: any of these is a harness bug
        send({"foreign": f"{type(e).__name__}: {str(e)[:300]}", "stage": stage})


@dataclass
class Side:
    """What one side did on one case: how its child ended there, and what it said."""

    status: str = "ok"
    signal: int = 0
    said: dict = field(default_factory=dict)
    stderr: str = ""


def _batch(side, paths: list[str], first: int, send) -> None:
    """In a child: ``side`` on each case in turn, every message tagged with the case number."""
    for k, path in enumerate(paths, first):
        send({"case": k})
        side(path, lambda msg, k=k: send({"case": k, **msg}))
        send({"case": k, "done": True})


def run_side(side, paths: list[str], first: int) -> Child:
    return start(lambda send: _batch(side, paths[first:], first, send), timeout=TIMEOUT, mem_bytes=MEM_BYTES)


def _absorb(ch: Child, records: list[Side], first: int) -> int:
    """File a finished child's messages under their cases; the next case to run.

    A child that died is blamed for the case it was on: the last one it started,
    or the one after the last it finished."""
    last = first - 1
    for m in ch.messages:
        last = m.pop("case")
        records[last].said.update(m)
    if ch.status == "ok":
        return len(records)
    k = max(last, first)
    if records[k].said.get("done"):
        k += 1
    if k < len(records):
        records[k].status, records[k].signal = ch.status, ch.signal
        records[k].stderr = ch.stderr_tail()
    return k + 1


def run_batch(datas: list[bytes], workdir: str) -> list[tuple[str, dict]]:
    """Both sides on each file, each side in its own sandboxed children."""
    paths = []
    for i, data in enumerate(datas):
        paths.append(os.path.join(workdir, f"case{i}.gguf"))
        with open(paths[-1], "wb") as f:
            f.write(data)
    records = {name: [Side() for _ in datas] for name in ("llama.cpp", "harness")}
    sides = {"llama.cpp": llama_side, "harness": harness_side}
    lanes = {name: (run_side(side, paths, 0), 0) for name, side in sides.items()}
    while lanes:
        for ch in wait([c for c, _ in lanes.values()]):
            name = next(n for n, (c, _) in lanes.items() if c is ch)
            nxt = _absorb(ch, records[name], lanes.pop(name)[1])
            ch.stderr.close()
            if nxt < len(paths):
                lanes[name] = (run_side(sides[name], paths, nxt), nxt)
    return [judge(records["llama.cpp"][i], records["harness"][i]) for i in range(len(datas))]


def judge(llama: Side, ours: Side) -> tuple[str, dict]:
    """The outcome of one case and what each side did."""
    lm, hm = llama.said, ours.said
    detail = {"llama.cpp": {"status": llama.status, "signal": llama.signal, **lm, "stderr": llama.stderr},
              "harness": {"status": ours.status, "signal": ours.signal, **hm, "stderr": ours.stderr}}
    if ours.status == "hang":
        return "hang", detail
    if "memory" in hm:
        return "memory", detail
    if "foreign" in hm:
        return "foreign", detail
    if ours.status == "crash" or "load" not in hm or (hm["load"] == "ok" and "probes" not in hm):
        return "crash", detail
    aborted_loading = llama.status == "crash" and "load" not in lm
    if not aborted_loading and (llama.status != "ok" or "load" not in lm or
                                (lm["load"] == "ok" and "probes" not in lm)):
        return "llama_crash", detail
    llama_refused = aborted_loading or lm["load"] == "refused"
    if llama_refused or hm["load"] == "refused":
        return ("refused" if llama_refused and hm["load"] == "refused" else "mismatch"), detail
    same = lm["n_vocab"] == hm["n_vocab"] and lm["probes"] == hm["probes"]
    return ("equal" if same else "mismatch"), detail


def run_case(data: bytes, workdir: str) -> tuple[str, dict]:
    """Both sides on one file's bytes (a batch of one)."""
    return run_batch([data], workdir)[0]


def warm_up() -> None:
    """Load libllama and every harness module once in this process, so each forked
    child starts warm (and a missing reference fails here, once, with its fix)."""
    from reference.inproc import library
    from harness.tokenizer import Tokenizer
    library()
    with tempfile.TemporaryDirectory() as d:
        for name, seed in SEEDS.items():
            p = os.path.join(d, f"{name}.gguf")
            with open(p, "wb") as f:
                f.write(seed().to_bytes())
            tok = Tokenizer.from_gguf(p)
            for text in PROBE_TEXTS:
                tok.encode(text)


def fuzz(seconds: float, *, seed: int = 0, max_cases: int | None = None, classes: list[str] | None = None,
         out: Path | None = None, keep: int = 20, progress=None) -> dict[str, Counter]:
    """Run cases until ``seconds`` pass (or ``max_cases`` ran); counts per mutation class."""
    rng = random.Random(seed)
    classes = classes or sorted(CLASSES)
    counts = {c: Counter() for c in classes}
    saved = Counter()
    warm_up()
    end = time.monotonic() + seconds
    n = 0
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as work:
        while time.monotonic() < end and (max_cases is None or n < max_cases):
            size = BATCH if max_cases is None else min(BATCH, max_cases - n)
            cases = []
            for i in range(n, n + size):
                cls, seed_name = classes[i % len(classes)], rng.choice(sorted(SEEDS))
                case_seed = rng.randrange(2**32)
                cases.append((cls, seed_name, case_seed,
                               mutate(cls, SEEDS[seed_name](), random.Random(case_seed))))
            for (cls, seed_name, case_seed, data), (outcome, detail) in zip(
                    cases, run_batch([c[3] for c in cases], work)):
                counts[cls]["cases"] += 1
                counts[cls][outcome] += 1
                if outcome in FAILURES and out is not None and saved[outcome] < keep:
                    saved[outcome] += 1
                    _save(out, f"{outcome}-{cls}-{seed_name}-{case_seed}", data,
                          {"class": cls, "seed_vocab": seed_name, "case_seed": case_seed, "outcome": outcome,
                           **detail})
            n += size
            if progress and n // 500 != (n - size) // 500:
                progress(n)
    return counts


def _save(out: Path, stem: str, data: bytes, detail: dict) -> None:
    report.save(out, stem, detail, data)


def table(counts: dict[str, Counter]) -> str:
    """Counts per mutation class, one row each, and a total row."""
    return report.table(counts, OUTCOMES)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("FUZZ_S", "60")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("FUZZ_SEED", "0")))
    ap.add_argument("--cases", type=int, default=None, help="stop after this many cases")
    ap.add_argument("--classes", nargs="*", default=None, choices=sorted(CLASSES))
    ap.add_argument("--out", default="reports/fuzz", help="where failing cases are saved")
    args = ap.parse_args(argv)
    started = time.monotonic()
    counts = fuzz(args.seconds, seed=args.seed, max_cases=args.cases, classes=args.classes,
                  out=Path(args.out), progress=lambda n: print(f"fuzz: {n} cases", file=sys.stderr, flush=True))
    print(table(counts))
    total = sum((c for c in counts.values()), Counter())
    print("\n" + report.closing(total, FAILURES, time.monotonic() - started, args.seed, args.out, "cases"))
    return 1 if report.failures(total, FAILURES) else 0


if __name__ == "__main__":
    sys.exit(main())
