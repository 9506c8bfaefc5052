"""Length scaling, measured: the encode check times the port and llama.cpp on growing runs.

A port whose encode time grows as n² on a long run of one character (Hugging Face's fast
tokenizers on some inputs; llama.cpp's own std::regex path on ``'A' * 10000`` in the past)
would otherwise show only as a timeout, if a text happened to be long enough. At the end of
its encode test (:func:`harness.engine.checks.encode`) each vocab gets the runs of
:data:`RUNS` that belong to the test's flags: one character repeated, a long word and long
whitespace under ``plain``, the vocab's special texts back to back under ``parse`` (where
they are parsed). Each run is timed at :data:`SIZES`; each size is called
:data:`REPEATS` times on texts that differ by a character (a port's cache of whole texts
cannot answer for it), and the fastest call counts. Times are CPU time (:func:`port_clock`:
the port's processes, or this thread for a port in process; this thread for llama.cpp), so
waiting for other processes' turns on a busy machine is not counted. The fit and the
finding are :class:`harness.reports.scaling.Scaling`; a run that looks slow is measured a
second time and the fastest calls of both rounds are fitted, so one burst of load on a
shared machine does not make a finding.

Every call's ids are compared with llama.cpp's, as cases of the cell (a divergence on a long
run is a finding like any other); a port error ends the run (counted, as any case's).
``LENGTH_SCALING=0`` leaves the probe out (``make test`` does: the harness's own tests time
nothing but tests/test_scaling.py's deliberately quadratic port).

>>> [(name, flags) for name, (flags, _, _) in RUNS.items()]
[('repeat', (False, False)), ('word', (False, False)), ('whitespace', (False, False)), ('specials', (False, True))]
>>> RUNS["word"][2](None, 30, 1)
'bcdefghijklmnopqrstuvwxyzabcdef'
"""

from __future__ import annotations

import gc
import os
import resource
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from harness.errors import PortError
from harness.flags import flags_label
from harness.reports.scaling import Scaling

#: Sizes in bytes: 8x from the first to the last, and all under 8 KiB, above which
#: llama.cpp in process runs on a thread of its own (reference.inproc.BIG_STACK_ABOVE),
#: whose CPU time the calling thread's clock would not see.
SIZES = (512, 1024, 2048, 4096)
#: Calls per size (and per round); the fastest is kept. A call over LONG_CALL seconds is
#: not repeated: the noise is small beside it.
REPEATS = 3
LONG_CALL = 0.1
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_SOUP_SPECIALS = 64  # special texts a soup cycles through at most


def _word(n: int, k: int) -> str:
    """One word of ``n`` letters, the alphabet cycled from its ``k``-th letter."""
    start = _LETTERS[k % 26:] + _LETTERS[:k % 26]
    return (start * (n // 26 + 1))[:n]


def _soup(texts, n: int, k: int) -> str | None:
    """The vocab's special texts back to back (from the ``k``-th), up to ``n`` bytes."""
    specials = [s for s in texts.specials if s][:_SOUP_SPECIALS]
    if not specials:
        return None
    out, size, i = [], 0, k
    while True:
        s = specials[i % len(specials)]
        if size + len(s.encode("utf-8")) > n and out:
            return "".join(out)
        out.append(s)
        size += len(s.encode("utf-8"))
        i += 1


#: name -> ((add_special, parse_special) it runs under, how it reads, make(vocab texts, n, k)):
#: about ``n`` bytes, the ``k``-th of its size (each k a different text).
RUNS: dict[str, tuple[tuple[bool, bool], str, Callable]] = {
    "repeat": ((False, False), "'a' * n", lambda texts, n, k: "a" * (n + k)),
    "word": ((False, False), "'abcdefghijklmnopqrstuvwxyzab…' (one word of n letters)",
             lambda texts, n, k: _word(n + k, k)),
    "whitespace": ((False, False), "' ' * n + 'a'", lambda texts, n, k: " " * (n + k) + "a"),
    "specials": ((False, True), "the vocab's special texts back to back (parse_special)", _soup),
}


def enabled() -> bool:
    """Whether the encode check times runs (``LENGTH_SCALING``, default on).

    >>> os.environ.get("LENGTH_SCALING", "1") != "0" or not enabled()
    True
    """
    return os.environ.get("LENGTH_SCALING", "1").strip() != "0"


def in_process_cpu() -> float:
    """CPU seconds of this thread and of the children this process has waited for (a port
    that runs a program per call, as ``llama-tokenize`` does).

    >>> in_process_cpu() > 0
    True
    """
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.thread_time() + children.ru_utime + children.ru_stime


def tree_cpu(pid: int) -> float:
    """CPU seconds of process ``pid``, every thread and every descendant alive, from each
    task's ``/proc/<pid>/task/<tid>/schedstat`` (Linux: nanoseconds on a CPU).

    >>> tree_cpu(os.getpid()) > 0
    True
    """
    total, todo = 0, [pid]
    while todo:
        try:
            tasks = list(Path(f"/proc/{todo.pop()}/task").iterdir())
        except OSError:
            continue  # a process that ended meanwhile
        for task in tasks:
            try:
                total += int((task / "schedstat").read_text().split()[0])
                todo += [int(c) for c in (task / "children").read_text().split()]
            except (OSError, ValueError, IndexError):
                continue  # a thread that ended meanwhile, or no children file (CONFIG_PROC_CHILDREN)
    return total / 1e9


def port_clock(port) -> tuple[str, Callable[[], float]]:
    """``(kind, clock)`` that times ``port``'s work: CPU time, the wall clock only where it
    cannot be had. On a shared machine a call longer than a scheduler slice waits for other
    processes' slices, and that waiting grows with the call: wall time would show it as the
    port's growth. An external port's own processes (:func:`tree_cpu`), an in-process port's
    thread (:func:`in_process_cpu`); the wall clock only where ``/proc`` cannot be read.

    >>> port_clock(object())[0]
    'cpu'
    """
    proc = getattr(port, "proc", None)
    if proc is None:
        return "cpu", in_process_cpu
    try:  # tree_cpu skips what it cannot read: the port's own entry must be readable
        int(Path(f"/proc/{proc.pid}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return "wall", time.perf_counter
    return "cpu", lambda: tree_cpu(proc.pid)


def _timed(clock: Callable[[], float], fn: Callable, *args, **kwargs):
    """``(fn(*args, **kwargs), seconds by clock)``, the collector off meanwhile (its pauses
    are the engine's garbage, not the call's)."""
    was = gc.isenabled()
    gc.disable()
    try:
        start = clock()
        out = fn(*args, **kwargs)
        return out, clock() - start
    finally:
        if was:
            gc.enable()


def _call(vut, h, clock, text: str, flags) -> tuple[float, float] | None:
    """(port seconds, llama.cpp seconds) for ``text``, its ids compared as a case of ``h``;
    None if the port could not answer (filed by the hunt)."""
    add_special, parse_special = flags
    try:
        ids, port_s = _timed(clock, vut.call_port, "encode", text, add_special=add_special,
                             parse_special=parse_special)
    except PortError as e:
        h.failed_case(text, e)
        return None
    ref, ref_s = _timed(time.thread_time, vut.reference.encode, text, add_special=add_special,
                        parse_special=parse_special)
    if list(ids) == ref:
        h.passed_case()
    else:
        h.case(text)  # the slow path: compared again, grouped, shrunk and reported
    return port_s, ref_s


def _fastest(vut, h, clock, texts, flags) -> tuple[float, float] | None:
    """The fastest port and llama.cpp times over ``texts`` (the repeats of one size)."""
    best_port = best_ref = float("inf")
    for text in texts:
        got = _call(vut, h, clock, text, flags)
        if got is None or h.stopped:
            return None
        best_port, best_ref = min(best_port, got[0]), min(best_ref, got[1])
        if got[0] > LONG_CALL:
            break
    return best_port, best_ref


def measure(vut, h, name: str, offset: int = 0) -> Scaling | None:
    """One round of run ``name`` (texts ``offset`` on): None if the vocab has no such text
    or the port could not answer. (An example: :func:`probe`.)"""
    flags, example, make = RUNS[name]
    kind, clock = port_clock(vut.port)
    overhead = _fastest(vut, h, clock, [_LETTERS[(offset + k) % 26] for k in range(5)], flags)
    sizes, port, ref = [], [], []
    for n in SIZES:
        texts = [make(vut.texts, n, offset + k) for k in range(REPEATS)]
        if overhead is None or None in texts:
            return None
        got = _fastest(vut, h, clock, texts, flags)
        if got is None:
            return None
        sizes.append(len(texts[0].encode("utf-8")))
        port.append(got[0])
        ref.append(got[1])
    return Scaling(vut.name, flags_label(*flags), name, example, tuple(sizes), tuple(port), tuple(ref),
                   overhead[0], overhead[1], port=vut.port_spec, repeats=REPEATS, clock=kind)


def fastest_of(a: Scaling, b: Scaling) -> Scaling:
    """Two rounds of one run as one: the fastest time of each size and overhead.

    >>> a = Scaling("v", "plain", "repeat", "x", (1, 8), (1.0, 9.0), (1.0, 8.0), 0.5, 0.0)
    >>> fastest_of(a, replace(a, port_s=(2.0, 8.0), port_overhead_s=0.2)).port_s
    (1.0, 8.0)
    """
    return replace(a, port_s=tuple(map(min, a.port_s, b.port_s)), reference_s=tuple(map(min, a.reference_s, b.reference_s)),
                   port_overhead_s=min(a.port_overhead_s, b.port_overhead_s),
                   reference_overhead_s=min(a.reference_overhead_s, b.reference_overhead_s),
                   repeats=a.repeats + b.repeats)


def probe(vut, h, flags) -> None:
    """Time the runs of ``flags`` (see the module docstring) into ``h.tally.scaling``; each
    call is a case of ``h``. Nothing runs once the hunt has stopped.

    >>> class Ref:
    ...     def encode(self, text, add_special, parse_special): return [len(text)]
    >>> class Vut:  # a port answering as llama.cpp does, as fast
    ...     name, port_spec, port, texts, reference = "v", "fake", object(), None, Ref()
    ...     def call_port(self, op, text, **flags): return self.reference.encode(text, **flags)
    >>> from harness.engine.hunt import Hunt
    >>> h = Hunt("encode", "plain", lambda text: None, vocab="v")
    >>> probe(Vut(), h, (False, False))
    >>> [s.run for s in h.tally.scaling], h.tally.cases >= 3 * (5 + 4 * REPEATS), h.tally.divergent
    (['repeat', 'word', 'whitespace'], True, 0)
    """
    for name, (run_flags, _, _) in RUNS.items():
        if tuple(flags) != run_flags or h.stopped:
            continue
        found = measure(vut, h, name)
        if found is not None and found.slow:
            again = measure(vut, h, name, offset=REPEATS)
            found = fastest_of(found, again) if again is not None else found
        if found is not None:
            h.tally.scaling.append(found)
