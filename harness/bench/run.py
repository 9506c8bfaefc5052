"""``make bench``: the harness tokenizer against llama.cpp, as ratios from one run.

For each vocab it measures vocab load time (up to the first encoded text: :data:`READY`, so
what a tokenizer builds on first use counts as load, as llama.cpp builds all at load), encode
throughput after that (fresh: every piece
cache emptied before each text, so each text is encoded as if seen first; cold: a fresh
tokenizer over the whole corpus, whose later texts meet pieces the earlier ones cached;
warm: the same tokenizer again) and decode throughput, for the
harness tokenizer and for llama.cpp in process, plus the load time of gguf-py's
``GGUFReader`` when it is installed (``pip install .[bench]``). Each timing is
repeated; min and median are kept, and ratios use the minima (these machines
are noisy). Both sides get the same chunks of the fixed corpus
(:mod:`harness.inputs.corpus`), and the run also reports whether their ids were
identical. Peak RSS is measured apart, in a fresh child process per side and
vocab (load, then encode the whole corpus), so each figure is that tokenizer's
alone; both children include a Python interpreter. The table is printed and
written to ``reports/bench.json``, with
the conformance suite's own throughput as the last ``make conformance`` run
recorded it in ``reports/conformance.json`` (``make bench`` runs it first).

>>> ratio(2.0, 1.0)
2.0
>>> forget(type("Tok", (), {"session": lambda self: None})())
0
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from harness.inputs.corpus import CORPUS_SHA256, chunks, corpus, sha256

FLAGS = {"add_special": True, "parse_special": True}  # llama-tokenize's defaults
# Encoded once right after load on both sides: the harness builds some of its session on first
# use (UGM's and WPM's prefix indexes, BPE's merge ranks), which is load work, not encode work.
READY = "Hello, world! 123 \u00fcn\u00efcode \u4e2d\u6587 \U0001f600"


def ready(tok):
    """``tok`` after one encode of :data:`READY` (anything with ``encode(text, **FLAGS)``)."""
    tok.encode(READY, **FLAGS)
    return tok


def timed(fn, repeat: int) -> tuple[list[float], object]:
    """Run ``fn`` ``repeat`` times; the wall times and the last result."""
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return times, result


def summary(times: list[float]) -> dict:
    return {"min": min(times), "median": statistics.median(times), "n": len(times)}


def ratio(ours: float, theirs: float) -> float:
    """How many times faster ours is (for throughputs: ours/theirs)."""
    return ours / theirs if theirs else float("inf")


def _encode_all(tok, parts):
    return [tok.encode(p, **FLAGS) for p in parts]


def _decode_all(tok, id_lists):
    return [tok.decode(ids) for ids in id_lists]


def bench_llama(path: Path, parts: list[str], repeat: int) -> dict:
    from reference.inproc import InProcessReference

    def load():
        ref = ready(InProcessReference(path))
        ref.close()
    load_t, _ = timed(load, repeat)
    ref = ready(InProcessReference(path))
    enc_t, ids = timed(lambda: _encode_all(ref, parts), repeat)
    dec_t, _ = timed(lambda: _decode_all(ref, ids), repeat)
    ref.close()
    return {"load": summary(load_t), "encode": summary(enc_t), "decode": summary(dec_t), "ids": ids}


def forget(tok) -> int:
    """Empty every piece cache of ``tok``'s algorithm session (each a
    :class:`harness.tokenizer.algorithms._cache.PieceMemo`); returns how many it emptied."""
    from harness.tokenizer.algorithms._cache import PieceMemo
    session = tok.session()
    memos = [v for v in getattr(session, "__dict__", {}).values() if isinstance(v, PieceMemo)]
    for memo in memos:
        memo.clear()
    return len(memos)


def _encode_fresh(tok, parts) -> float:
    """Seconds encoding each part with the piece caches emptied first (the emptying untimed)."""
    total = 0.0
    for p in parts:
        forget(tok)
        t0 = time.perf_counter()
        tok.encode(p, **FLAGS)
        total += time.perf_counter() - t0
    return total


def bench_harness(path: Path, parts: list[str], repeat: int) -> dict:
    from harness.tokenizer import Tokenizer

    load_t, _ = timed(lambda: ready(Tokenizer.from_gguf(path)), repeat)
    fresh_tok = ready(Tokenizer.from_gguf(path))
    fresh = [_encode_fresh(fresh_tok, parts) for _ in range(repeat)]
    cold, warm, ids = [], [], None
    for _ in range(repeat):
        tok = ready(Tokenizer.from_gguf(path))
        t, ids = timed(lambda: _encode_all(tok, parts), 1)
        cold += t
        t, _ = timed(lambda: _encode_all(tok, parts), 1)
        warm += t
    dec_t, _ = timed(lambda: _decode_all(tok, ids), repeat)
    return {"load": summary(load_t), "encode_fresh": summary(fresh), "encode_cold": summary(cold),
            "encode_warm": summary(warm), "decode": summary(dec_t), "ids": ids}


def bench_gguf_py(path: Path) -> dict | None:
    try:
        from gguf import GGUFReader
    except ImportError:
        return None
    t, _ = timed(lambda: GGUFReader(str(path)), 1)  # seconds per file: once is enough
    return {"load": summary(t)}


_RSS_CHILD = "import sys; from harness.bench.run import rss_child; rss_child(sys.argv[1], sys.argv[2], int(sys.argv[3]))"


def rss_child(side: str, path: str, nbytes: int) -> None:
    """In a fresh child: load ``path`` with ``side`` (harness or llama.cpp), encode the
    corpus (``nbytes``, 0 for the pinned one), print the peak RSS in bytes as JSON."""
    parts = chunks(corpus(nbytes) if nbytes else corpus())
    if side == "harness":
        from harness.tokenizer import Tokenizer
        tok = Tokenizer.from_gguf(path)
    else:
        from reference.inproc import InProcessReference
        tok = InProcessReference(Path(path))
    _encode_all(tok, parts)
    print(json.dumps({"peak_rss": _peak_rss()}))


def _peak_rss() -> int:
    """This process's peak RSS in bytes. Linux: VmHWM, since ru_maxrss survives exec and so
    would include the parent's RSS at fork time."""
    from harness._proc import status_bytes
    hwm = status_bytes("VmHWM")
    if hwm is not None:
        return hwm
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # macOS: bytes; elsewhere KiB


def peak_rss(side: str, path: Path, nbytes: int) -> int:
    """Peak RSS in bytes of loading ``path`` and encoding the corpus, in its own process.

    >>> peak_rss("nonsense", Path("x.gguf"), 10)
    Traceback (most recent call last):
    ValueError: side must be 'harness' or 'llama.cpp', not 'nonsense'
    """
    if side not in ("harness", "llama.cpp"):
        raise ValueError(f"side must be 'harness' or 'llama.cpp', not {side!r}")
    out = subprocess.run([sys.executable, "-c", _RSS_CHILD, side, str(path), str(nbytes)],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"bench: the {side} peak-RSS child failed on {path}:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.splitlines()[-1])["peak_rss"]


def bench_vocab(name: str, parts: list[str], repeat: int, nbytes: int = 0) -> dict:
    from reference.vocabs import vocab_path

    path = vocab_path(name)
    nbytes = sum(len(p.encode()) for p in parts)
    ours, theirs = bench_harness(path, parts, repeat), bench_llama(path, parts, repeat)
    ntok = sum(map(len, theirs["ids"]))
    out_bytes = nbytes  # decode throughput is measured over the same text volume
    row = {
        "vocab": name, "bytes": nbytes, "tokens": ntok,
        "ids_identical": ours["ids"] == theirs["ids"],
        "load_s": {"harness": ours["load"], "llama.cpp": theirs["load"], "gguf-py": None},
        "encode_MBps": {
            "harness_fresh": nbytes / ours["encode_fresh"]["min"] / 1e6,
            "harness_cold": nbytes / ours["encode_cold"]["min"] / 1e6,
            "harness_warm": nbytes / ours["encode_warm"]["min"] / 1e6,
            "llama.cpp": nbytes / theirs["encode"]["min"] / 1e6},
        "encode_tokens_per_s": {
            "harness_fresh": ntok / ours["encode_fresh"]["min"],
            "harness_cold": ntok / ours["encode_cold"]["min"],
            "harness_warm": ntok / ours["encode_warm"]["min"],
            "llama.cpp": ntok / theirs["encode"]["min"]},
        "decode_MBps": {"harness": out_bytes / ours["decode"]["min"] / 1e6,
                        "llama.cpp": out_bytes / theirs["decode"]["min"] / 1e6},
        "peak_rss_MB": {side: peak_rss(side, path, nbytes) / 2**20 for side in ("harness", "llama.cpp")},
        "timings": {"harness": {k: v for k, v in ours.items() if k != "ids"},
                    "llama.cpp": {k: v for k, v in theirs.items() if k != "ids"}},
    }
    gg = bench_gguf_py(path)
    if gg:
        row["load_s"]["gguf-py"] = gg["load"]
    row["ratios"] = {
        "encode_fresh": ratio(row["encode_MBps"]["harness_fresh"], row["encode_MBps"]["llama.cpp"]),
        "encode_cold": ratio(row["encode_MBps"]["harness_cold"], row["encode_MBps"]["llama.cpp"]),
        "encode_warm": ratio(row["encode_MBps"]["harness_warm"], row["encode_MBps"]["llama.cpp"]),
        "decode": ratio(row["decode_MBps"]["harness"], row["decode_MBps"]["llama.cpp"]),
        "load": ours["load"]["min"] / theirs["load"]["min"],
        "peak_rss": row["peak_rss_MB"]["harness"] / row["peak_rss_MB"]["llama.cpp"],
    }
    return row


def table(rows: list[dict]) -> str:
    """Fixed-width text table; ratios > 1 mean the harness is faster (load, RSS: < 1 is
    faster or smaller)."""
    head = (f"{'vocab':16} {'load ms ours/llama/gguf-py':>28} {'load x':>7} {'enc MB/s fresh/cold/warm/llama':>31} "
            f"{'fresh x':>7} {'cold x':>7} {'warm x':>7} {'dec x':>7} {'RSS MB ours/llama':>18} {'RSS x':>6} {'same ids':>8}")
    lines = [head, "-" * len(head)]
    for r in rows:
        ld = r["load_s"]
        gg = f"{ld['gguf-py']['min'] * 1e3:.0f}" if ld["gguf-py"] else "-"
        e, m = r["encode_MBps"], r["peak_rss_MB"]
        lines.append(
            f"{r['vocab']:16} {ld['harness']['min'] * 1e3:>9.0f}/{ld['llama.cpp']['min'] * 1e3:.0f}/{gg:<8} "
            f"{r['ratios']['load']:>7.2f} {e['harness_fresh']:>8.2f}/{e['harness_cold']:.2f}/{e['harness_warm']:.2f}/"
            f"{e['llama.cpp']:<8.2f} {r['ratios']['encode_fresh']:>7.2f} {r['ratios']['encode_cold']:>7.2f} {r['ratios']['encode_warm']:>7.2f} {r['ratios']['decode']:>7.2f} "
            f"{m['harness']:>11.0f}/{m['llama.cpp']:<6.0f} {r['ratios']['peak_rss']:>6.2f} "
            f"{'yes' if r['ids_identical'] else 'NO':>8}")
    return "\n".join(lines)


def conformance_throughput(path: Path) -> dict | None:
    """The ``throughput`` block of a conformance.json, with the file's age; None if absent."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    t = data.get("throughput")
    if not t:
        return None
    return dict(t, report=str(path), age_s=time.time() - path.stat().st_mtime,
                divergences=len(data.get("divergences", [])), by_kind=by_kind(data.get("cells", [])))


#: The checks whose cases the generators draw (encode texts, decode id lists), apart from pieces.
GENERATED = ("encode", "decode")


def by_kind(cells: list[dict]) -> dict:
    """Cases and the cells' own seconds (worker time) of the generated checks and of pieces.

    >>> by_kind([{"check": "encode", "cases": 300, "seconds": 0.1}, {"check": "decode", "cases": 200, "seconds": 0.15},
    ...          {"check": "piece", "cases": 9000, "seconds": 0.2}, {"check": "known", "cases": 30, "seconds": 0.5}])
    {'generated': {'cases': 500, 'seconds': 0.25}, 'piece': {'cases': 9000, 'seconds': 0.2}}
    """
    out = {"generated": {"cases": 0, "seconds": 0.0}, "piece": {"cases": 0, "seconds": 0.0}}
    for c in cells:
        kind = "generated" if c.get("check") in GENERATED else c.get("check")
        if kind in out:
            out[kind]["cases"] += int(c.get("cases") or 0)
            out[kind]["seconds"] = round(out[kind]["seconds"] + float(c.get("seconds") or 0.0), 6)
    return out


def throughput_line(t: dict | None, path: Path) -> str:
    if t is None:
        return f"conformance throughput: no {path} (run `make conformance` first)"
    per_worker = ", ".join(f"{k} {v['cases_per_s']:.0f}/s" for k, v in t["workers"].items())
    kinds = "; ".join(f"{name} {k['cases']} cases in {k['seconds']:.0f} worker-s = "
                      f"{k['cases'] / k['seconds']:.0f} cases/s per worker"
                      for name, k in (("generated encode and decode", t["by_kind"]["generated"]),
                                      ("pieces", t["by_kind"]["piece"])) if k["seconds"] > 0)
    return (f"conformance (from {t['report']}, {t['age_s'] / 60:.0f} min old): {t['cases']} cases, "
            f"{t['wall_s']:.0f} s wall on {t['n_workers']} workers = {t['cases_per_s_per_worker']:.0f} "
            f"cases/s per worker of wall time ({per_worker} of test time); {t['divergences']} divergences"
            + (f"\n  by the cells' own time: {kinds}" if kinds else ""))


def machine() -> dict:
    return {"platform": platform.platform(), "python": platform.python_version(),
            "cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()}


def main(argv: list[str] | None = None) -> int:
    from reference.vocabs import names

    ap = argparse.ArgumentParser(prog="python -m harness bench")
    ap.add_argument("--vocabs", nargs="*", default=None)
    ap.add_argument("--repeat", type=int, default=int(os.environ.get("BENCH_REPEAT", "3")))
    ap.add_argument("--bytes", type=int, default=None, help="corpus size (default: the pinned corpus)")
    ap.add_argument("--out", default="reports/bench.json")
    ap.add_argument("--conformance-report", default="reports/conformance.json")
    ap.add_argument("--engine-vocab", default="qwen2",
                    help="vocab of the engine table (cases/s per worker vs the oracle's own rate)")
    ap.add_argument("--engine-texts", type=int, default=3000, help="fast-phase texts in the engine table")
    args = ap.parse_args(argv)
    text = corpus(args.bytes) if args.bytes else corpus()
    if not args.bytes and sha256(text) != CORPUS_SHA256:
        print(f"error: generated corpus sha256 {sha256(text)} != pinned {CORPUS_SHA256}", file=sys.stderr)
        return 2
    parts = chunks(text)
    wanted = args.vocabs or os.environ.get("VOCABS", "").split() or names()
    rows = []
    for name in wanted:
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        rows.append(bench_vocab(name, parts, args.repeat, args.bytes or 0))
    report = {"machine": machine(), "corpus": {"bytes": len(text.encode()), "sha256": sha256(text),
                                               "chunks": len(parts)},
              "flags": FLAGS, "repeat": args.repeat, "rows": rows,
              "conformance": conformance_throughput(Path(args.conformance_report))}
    from harness.bench import engine as bench_engine
    print(f"bench: engine on {args.engine_vocab} ...", file=sys.stderr, flush=True)
    report["engine"] = bench_engine.measure(args.engine_vocab, args.engine_texts)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(table(rows))
    print(throughput_line(report["conformance"], Path(args.conformance_report)))
    print(bench_engine.table(report["engine"]))
    print(f"\nmachine: {report['machine']}; corpus {report['corpus']['bytes']} bytes "
          f"sha256 {report['corpus']['sha256'][:16]}...; written to {args.out}")
    return 0
