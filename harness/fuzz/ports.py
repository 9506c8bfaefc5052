"""``python -m harness fuzz-ports``: hostile ports played against the engine (``make fuzz-ports``).

Each *session* opens one hostile port (:mod:`harness.fuzz.hostile`: the real server loop
over llama.cpp, one fault of one kind at one request line, and one planted bug) for a
pinned vocab, through the engine's own :class:`~harness.engine.session.Session` and
:class:`~harness.engine.vut.VocabUnderTest`, and runs a small check on it the way the
suite does: single requests or batches (the fast phase's :func:`run_phase`), encode,
decode or pieces, in a :class:`~harness.engine.hunt.Hunt`; then its tally goes through
the report (JSON, HTML, JUnit, the terminal summary). Sessions run in process: the port
is a child forked from this warm process (no interpreter start, no vocab load), spoken
to through :class:`~harness.protocol.client.ExternalPort`'s own pipes and deadline. A
share of the time goes to end-to-end runs: ``llama-conformance run`` with the hostile
port as a command.

The hostile port logs its own verdict on every answer the client took; the session is
judged from that log and its tally by :mod:`harness.fuzz.oracle` (which says what a defect
is); ``memory`` is this process's memory or open files growing past a bound over the run.

>>> sorted(WORKLOADS)
['decode', 'decode-batch', 'encode', 'encode-batch', 'piece', 'piece-batch']
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from harness._proc import status_bytes
from harness.engine.fastphase import run_phase
from harness.engine.hunt import CheckFailed, Hunt
from harness.engine.session import Session
from harness.engine.vut import VocabUnderTest
from harness.fuzz import hostile, report
from harness.fuzz.e2e import end_to_end
from harness.fuzz.oracle import FAILURES, judge, read_log
from harness.protocol.client import ExternalPort

OUTCOMES = ("cases", "played", "e2e", "port_error", "divergence", "pass", "overload", "exception", "hang",
            "wrong-pass", "unnamed", "false-alarm", "lost", "leak", "memory")
#: Small vocabs of three models (SPM, WPM, BPE): sessions are about the protocol, not the vocab.
VOCABS = ("llama-spm", "bert-bge", "gpt-2")
TIMEOUT = 0.25      # the port timeout of a session (PORT_TIMEOUT)
MAX_LINE = 1 << 20  # the client's answer limit in a session (64 MiB in a run)
MEMORY_GROWTH = 256 << 20
FD_GROWTH = 64
E2E_SHARE = 0.03    # of the wall time, for end-to-end runs
TEXTS = ("hello world", " a  b\tc", "x != y and a.b == c", "\u65e5\u672c\u8a9e", "\u1f08\u03b8\u1fc6\u03bd\u03b1\u03b9",
         "emoji \U0001f600\U0001f44d\U0001f3fd", "\n\n  \u00a0 ", "ab" * 40, "<s> </s> [CLS]", "123 4567 89",
         "caf\u00e9 na\u00efve", "don't WE'RE")


class Forked:
    """A ``subprocess.Popen`` look-alike for a child forked from this process: the child runs
    ``body()`` with its stdin and stdout on pipes and stderr on ``stderr_fd``, in its own
    session (as a port started with ``start_new_session``), every other descriptor closed."""

    def __init__(self, body, stderr_fd: int):
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            try:
                import gc
                gc.disable()  # a parent's file object collected here would close a descriptor of ours
                os.setsid()
                os.dup2(in_r, 0)
                os.dup2(out_w, 1)
                os.dup2(stderr_fd, 2)
                os.closerange(3, 1 << 16)
                body()
            except BaseException:
                import traceback
                os.write(2, traceback.format_exc().encode("utf-8", "replace"))
            finally:
                os._exit(0)
        os.close(in_r)
        os.close(out_w)
        self.pid, self.returncode, self.args = pid, None, ["forked"]
        self.stdin, self.stdout = os.fdopen(in_w, "wb"), os.fdopen(out_r, "rb")

    def poll(self):
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None):
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(0.002)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)


class HostilePort(ExternalPort):
    """An ExternalPort whose process is a forked :class:`hostile.Port` (see the module docstring)."""

    def __init__(self, plan: dict, backend, vocab_path, *, n_vocab: int):
        self._plan, self._backend = plan, backend
        super().__init__(f"hostile {plan['kind']} --at {plan['at']} --seed {plan['seed']} --vocab {{vocab}}",
                         vocab_path, n_vocab=n_vocab, timeout=TIMEOUT, max_line=MAX_LINE)

    def _spawn(self, argv, stderr):
        plan, backend = self._plan, self._backend

        def body():
            port = hostile.Port(backend, plan["kind"], plan["at"], plan["seed"], plan["log"],
                                timeout=TIMEOUT, max_line=MAX_LINE)
            port.serve(os.fdopen(0, "rb"))
        return Forked(body, stderr.fileno())


class Vocabs:
    """Each fuzzed vocab's reference and planted backend, loaded once."""

    def __init__(self, names=VOCABS):
        from harness.inputs.derived import resolve
        from reference.inproc import load_reference
        self.paths = {n: resolve(n) for n in names}
        self.refs = {n: load_reference(p) for n, p in self.paths.items()}
        self.planted = {n: hostile.Planted(r) for n, r in self.refs.items()}
        self.pre_types: dict[str, str] = {}

    def vut(self, name: str, plan: dict) -> VocabUnderTest:
        """A fresh VocabUnderTest whose Session opens this plan's hostile port."""
        def opener(spec, path, reference=None):
            return HostilePort(plan, self.planted[name], path, n_vocab=reference.n_vocab)
        session = Session(f"hostile {plan['kind']}", opener=opener)
        vut = VocabUnderTest(name, self.paths[name], session.port_spec, self.refs[name], session)
        if name not in self.pre_types:
            self.pre_types[name] = vut.pre_type
        vut.__dict__["pre_type"] = self.pre_types[name]
        return vut


def _inputs(rng: random.Random, workload: str, ref) -> list:
    """The session's inputs: texts (one may hold the planted bug, one may be 100 KB), id lists or ids."""
    texts = rng.sample(TEXTS, rng.randint(2, 6))
    if rng.random() < 0.5:
        texts.insert(rng.randrange(len(texts) + 1), f"a{hostile.PLANT}b")
    if rng.random() < 0.05:
        texts.append("word " * 20_000)  # beyond the 64 KiB pipe: a port that stops reading shows
    if workload.startswith("encode"):
        return texts
    if workload.startswith("decode"):
        return [tuple(ref.encode(t, add_special=True, parse_special=True)[:40]) for t in texts]
    return [rng.randrange(ref.n_vocab) for _ in range(rng.randint(2, 12))]


WORKLOADS = ("encode", "encode-batch", "decode", "decode-batch", "piece", "piece-batch")


def run_workload(vut: VocabUnderTest, workload: str, inputs: list, flags: tuple) -> Hunt:
    """The check's body as the suite runs it (:mod:`harness.engine.checks`) on ``inputs``,
    single requests or batches; the hunt, finished."""
    op, batched = workload.split("-")[0], workload.endswith("batch")
    a, b = flags
    names = {"encode": ("add_special", "parse_special"), "decode": ("remove_special", "unparse_special")}
    kw = dict(zip(names.get(op, ()), flags))
    got: dict = {}
    run = {"encode": lambda t: vut.check_encode(t, a, b), "decode": lambda ids: vut.check_decode(ids, a, b),
           "piece": lambda i: vut.check_piece(i, a, got.pop(i, None))}[op]
    h = Hunt(op, "fuzz", run, vocab=vut.name, port_death=vut.port_death,
             notes=lambda: vut.session.take_notes(vut.name), revive=lambda: vut.session.can_restart(vut.name))
    with h.guard():
        if op == "piece" and batched:
            got.update(vut.port_pieces_of(inputs, a))
        if op != "piece" and batched:
            ref = vut.reference
            agrees = ((lambda t, ids: list(ids) == ref.encode(t, **kw)) if op == "encode"
                      else (lambda ids, answer: bytes(answer) == ref.decode(ids, **kw)))
            run_phase(h, iter(inputs), lambda batch: vut.port_many(op, batch, **kw), agrees,
                      count=len(inputs), seconds=None)
        else:
            for x in inputs:
                h.case(x)
    try:
        h.finish()
    except CheckFailed:
        pass
    except _skipped():
        pass  # every case unsupported: the suite skips such a test
    return h


def _skipped():
    import pytest
    return pytest.skip.Exception


def render(h: Hunt) -> None:
    """The session's tally through every report: the JSON, HTML, JUnit and terminal text,
    encoded as the files and the terminal are (UTF-8): what raises here is a report defect."""
    from harness.conformance.plugin import tally_json
    from harness.reports.html import html_page
    from harness.reports.junit import junit_xml
    from harness.reports.run import RunReport
    rr = RunReport()
    rr.add(json.loads(tally_json(h.tally, "fuzz-ports::session")), "gw0")
    data = rr.to_json({})
    json.dumps(data, ensure_ascii=False).encode("utf-8")
    html_page(data, rr.findings, rr.reference_findings).encode("utf-8")
    junit_xml(rr).encode("utf-8")
    "\n".join(f"{t or ''}\n{x}" for t, x in rr.summary("reports")).encode("utf-8")


def session(vocabs: Vocabs, rng: random.Random, work: str, kind: str | None = None) -> tuple[str, list[str], dict]:
    """One hostile-port session; (kind, defects, what happened)."""
    kind = kind or rng.choice(hostile.ALL_KINDS)
    batchy = kind.startswith("batch-") or kind == "swap"
    workload = rng.choice([w for w in WORKLOADS if w.endswith("batch") or not batchy])
    name = rng.choice(sorted(vocabs.paths))
    inputs = _inputs(rng, workload, vocabs.refs[name])
    plan = {"kind": kind, "at": rng.randrange(0, 3 if batchy else len(inputs) + 2),
            "seed": rng.randrange(1 << 30), "log": os.path.join(work, f"log{rng.randrange(1 << 40)}")}
    flags = (rng.random() < 0.5, rng.random() < 0.5)
    vut = vocabs.vut(name, plan)
    started, error, h = time.monotonic(), "", None
    try:
        h = run_workload(vut, workload, inputs, flags)
        render(h)
    except BaseException as e:  # anything but a port error, out of the engine: the defect itself
        if isinstance(e, KeyboardInterrupt):
            raise
        import traceback
        error = "".join(traceback.format_exception(e))[-3000:]
    pids = [p.proc.pid for p in vut.session.open_ports() if isinstance(p, ExternalPort)]
    vut.session.close()
    seconds = time.monotonic() - started
    log = read_log(plan["log"])
    pids += [e["child"] for e in log if "child" in e]
    defects = judge(log, h, len(inputs), seconds, error, pids, workload, timeout=TIMEOUT)
    for p in pids:  # whatever the verdict, nothing of this session survives it
        _kill(p)
    detail = {"kind": kind, "plan": plan, "vocab": name, "workload": workload, "flags": flags,
              "inputs": [repr(x)[:200] for x in inputs], "seconds": round(seconds, 3), "error": error,
              "log": log[:60], "tally": h.tally.counts() if h else None,
              "port_errors": [e["message"][:1000] for e in h.tally.port_errors] if h else []}
    try:
        os.unlink(plan["log"])
    except OSError:
        pass
    return kind, defects, detail


def _kill(pid: int) -> None:
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
        except OSError:
            pass
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def outcome_of(detail: dict) -> str:
    """A session's outcome for the table: ``port_error``, ``divergence`` or ``pass``.

    >>> outcome_of({"tally": {"port_errors": 1, "divergences": 1}}), outcome_of({"tally": None})
    ('port_error', 'pass')
    """
    t = detail["tally"] or {}
    return "port_error" if t.get("port_errors") else "divergence" if t.get("divergences") else "pass"


def _footprint() -> tuple[int, int]:
    return status_bytes("VmRSS") or 0, len(os.listdir("/proc/self/fd"))


def fuzz_ports(seconds: float, *, seed: int = 0, max_sessions: int | None = None, kinds: list[str] | None = None,
               out: Path | None = None, keep: int = 20, e2e_share: float = E2E_SHARE, progress=None) -> dict[str, Counter]:
    """Sessions until ``seconds`` pass (or ``max_sessions`` ran); counts per kind."""
    rng = random.Random(seed)
    kinds = kinds or list(hostile.ALL_KINDS)
    counts = {k: Counter() for k in kinds}
    vocabs = Vocabs()
    saved, n, e2e_s = Counter(), 0, 0.0
    start = time.monotonic()
    end = start + seconds
    base = None
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as work:
        while time.monotonic() < end and (max_sessions is None or n < max_sessions):
            kind = kinds[n % len(kinds)]
            if e2e_share and e2e_s < e2e_share * (time.monotonic() - start) and n > 50:
                t0 = time.monotonic()
                kind, defects, detail = end_to_end(rng, work, kind, VOCABS)
                e2e_s += time.monotonic() - t0
            else:
                kind, defects, detail = session(vocabs, rng, work, kind)
            n += 1
            if n == 200:
                base = _footprint()
            if base and n % 100 == 0:
                rss, fds = _footprint()
                if rss - base[0] > MEMORY_GROWTH or fds - base[1] > FD_GROWTH:
                    defects.append("memory")
                    detail["footprint"] = {"rss": rss, "fds": fds, "base": base}
                    base = (rss, fds)
            c = counts[kind]
            c["cases"] += 1
            c["played"] += any("kind" in e for e in detail["log"])
            c["e2e"] += bool(detail.get("e2e"))
            c[outcome_of(detail)] += 1
            for d in defects:
                c[d] += 1
            defects = [d for d in defects if d in FAILURES]
            if defects and out is not None and saved[kind] < keep:
                saved[kind] += 1
                report.save(out, f"{'-'.join(defects)}-{kind}-{n}", {"defects": defects, **detail})
            if progress and n % 1000 == 0:
                progress(n)
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness fuzz-ports", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("FUZZ_S", "60")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("FUZZ_SEED", "0")))
    ap.add_argument("--sessions", type=int, default=None, help="stop after this many sessions")
    ap.add_argument("--kinds", nargs="*", default=None, choices=hostile.ALL_KINDS)
    ap.add_argument("--e2e-share", type=float, default=E2E_SHARE, help="share of the time for end-to-end runs")
    ap.add_argument("--out", default="reports/fuzz-ports", help="where defective sessions are saved")
    args = ap.parse_args(argv)
    started = time.monotonic()
    counts = fuzz_ports(args.seconds, seed=args.seed, max_sessions=args.sessions, kinds=args.kinds,
                        out=Path(args.out), e2e_share=args.e2e_share,
                        progress=lambda n: print(f"fuzz-ports: {n} sessions", file=sys.stderr, flush=True))
    print(report.table(counts, OUTCOMES, width=8))
    total = sum((c for c in counts.values()), Counter())
    print("\n" + report.closing(total, FAILURES, time.monotonic() - started, args.seed, args.out, "sessions"))
    print(f"kinds played: {', '.join(hostile.ALL_KINDS)}")
    return 1 if report.failures(total, FAILURES) else 0


if __name__ == "__main__":
    sys.exit(main())
