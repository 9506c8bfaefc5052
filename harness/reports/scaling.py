"""Length scaling: how a port's encode time grows on long runs, as a finding of its own kind.

The encode check times the port and llama.cpp (in process) on growing runs
(:mod:`harness.engine.scaling` measures); this module holds what a measurement *is*, how
its growth is fitted and how it is reported. A run is **slow** when the port's time grows
faster than linearly: its fitted exponent (the least-squares slope of log time on log size)
is over :data:`SUPERLINEAR` and over llama.cpp's own exponent on the same texts by
:data:`MARGIN` (a port that grows as llama.cpp does is not slower than the judge). A slow
port is not a wrong port: a slow run never changes a cell's outcome or the exit code; it is
a warning, shown in the terminal, the JSON (``scaling``), the HTML and the JUnit XML, next
to whatever else the cell holds.

The fit's inputs are reported with it: each size in bytes, and at each size the fastest of
a few calls, in CPU time (noise on a shared machine only ever adds time) less the side's time for a
one-character text, its per-call overhead (never more than half of a call's time is taken
off, so a fast port's noise cannot turn into growth).

>>> s = Scaling("qwen2", "plain", "repeat", "'a' * n", (512, 1024, 2048, 4096),
...             (0.004, 0.016, 0.064, 0.256), (0.0001, 0.0002, 0.0004, 0.0008), 0.0, 0.0)
>>> round(s.exponent, 2), round(s.reference_exponent, 2), s.slow, s.over_at
(2.0, 1.0, True, 512)
>>> print(s.line())
slow: qwen2 encode plain, 'a' * n: time grows as n^2.00 (llama.cpp n^1.00); at 4096 bytes the port takes 256.0 ms, llama.cpp 0.80 ms (320x); over 10x llama.cpp from 512 bytes
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

#: A fitted exponent over this is faster than linear (n log n fits about 1.1 over 8x).
SUPERLINEAR = 1.5
#: ... and it must be over llama.cpp's own exponent on the same texts by this much.
MARGIN = 0.3
#: The port is reported "over FACTOR x llama.cpp" from the smallest size where it is.
FACTOR = 10


def fit_exponent(sizes: Sequence[float], seconds: Sequence[float]) -> float:
    """The least-squares slope of log(seconds) on log(sizes): time grows as n^slope.

    >>> fit_exponent([1, 2, 4, 8], [3, 6, 12, 24]), fit_exponent([1, 2, 4, 8], [1, 4, 16, 64])
    (1.0, 2.0)
    """
    xs = [math.log(n) for n in sizes]
    ys = [math.log(max(t, 1e-9)) for t in seconds]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return round(sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var, 6) if var else 0.0


def work(seconds: Sequence[float], overhead: float) -> list[float]:
    """Each call's time less the per-call ``overhead``, but never less than half of it.

    >>> work([0.010, 0.003], 0.002)
    [0.008, 0.0015]
    """
    return [max(t - overhead, t / 2) for t in seconds]


def _ms(t: float) -> str:
    return f"{t * 1e3:.1f} ms" if t >= 0.01 else f"{t * 1e3:.2f} ms"


@dataclass(frozen=True)
class Scaling:
    """One run timed at growing sizes: the port's times and llama.cpp's on the same texts.

    ``run`` names the kind of text (:data:`harness.engine.scaling.RUNS`), ``example`` shows
    it (``"'a' * n"``); ``port_s``/``reference_s`` are the fastest call per size, in
    seconds; ``port_overhead_s``/``reference_overhead_s`` each side's time for a
    one-character text (see the module docstring).
    """

    vocab: str
    flags: str
    run: str
    example: str
    sizes: tuple[int, ...]
    port_s: tuple[float, ...]
    reference_s: tuple[float, ...]
    port_overhead_s: float
    reference_overhead_s: float
    check: str = "encode"
    port: str = ""
    repeats: int = 0        # calls per size at most (one where a call is long; the fastest kept)
    clock: str = "cpu"      # "cpu": CPU time of the port's processes; "wall" where none can be read

    @property
    def exponent(self) -> float:
        """The port's fitted exponent (on its times less its overhead)."""
        return fit_exponent(self.sizes, work(self.port_s, self.port_overhead_s))

    @property
    def reference_exponent(self) -> float:
        """llama.cpp's fitted exponent on the same texts."""
        return fit_exponent(self.sizes, work(self.reference_s, self.reference_overhead_s))

    @property
    def slow(self) -> bool:
        """The port's time grows faster than linearly, and faster than llama.cpp's."""
        e = self.exponent
        return e > SUPERLINEAR and e > self.reference_exponent + MARGIN

    @property
    def over_at(self) -> int | None:
        """The smallest size where the port takes over :data:`FACTOR` times llama.cpp's time."""
        port, ref = work(self.port_s, self.port_overhead_s), work(self.reference_s, self.reference_overhead_s)
        return next((n for n, p, r in zip(self.sizes, port, ref) if p > FACTOR * r), None)

    def line(self) -> str:
        """One line: the growth, the times at the largest size and where it passes FACTOR."""
        p, r = self.port_s[-1], self.reference_s[-1]
        over = (f"over {FACTOR}x llama.cpp from {self.over_at} bytes" if self.over_at is not None
                else f"never over {FACTOR}x llama.cpp up to {self.sizes[-1]} bytes")
        return (f"{'slow' if self.slow else 'linear'}: {self.vocab} {self.check} {self.flags}, {self.example}: "
                f"time grows as n^{self.exponent:.2f} (llama.cpp n^{self.reference_exponent:.2f}); at "
                f"{self.sizes[-1]} bytes the port takes {_ms(p)}, llama.cpp {_ms(r)} ({p / max(r, 1e-9):.0f}x); "
                f"{over}")

    def inputs(self) -> str:
        """The fit's inputs, one line."""
        return (f"fit: sizes {' '.join(map(str, self.sizes))} bytes; port {' '.join(_ms(t) for t in self.port_s)} "
                f"(overhead {_ms(self.port_overhead_s)}); llama.cpp {' '.join(_ms(t) for t in self.reference_s)} "
                f"(overhead {_ms(self.reference_overhead_s)}); fastest of up to {self.repeats} call(s) per size, "
                f"{self.clock} time")

    def to_json(self) -> dict:
        """The JSON entry (``conformance.json``'s ``scaling``): the fields, and what they give."""
        d = asdict(self)
        d.update(sizes=list(self.sizes), port_s=[round(t, 7) for t in self.port_s],
                 reference_s=[round(t, 7) for t in self.reference_s],
                 port_overhead_s=round(self.port_overhead_s, 7),
                 reference_overhead_s=round(self.reference_overhead_s, 7),
                 exponent=round(self.exponent, 3), reference_exponent=round(self.reference_exponent, 3),
                 slow=self.slow, over_at=self.over_at, factor=FACTOR, superlinear=SUPERLINEAR, margin=MARGIN)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Scaling":
        """The inverse of :meth:`to_json` (what it derives is computed again).

        >>> s = Scaling("v", "plain", "repeat", "'a' * n", (1, 8), (1.0, 8.0), (1.0, 8.0), 0.0, 0.0)
        >>> Scaling.from_json(s.to_json()) == s
        True
        """
        names = cls.__dataclass_fields__
        kept = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items() if k in names}
        return cls(**kept)


def summary(runs: Iterable[Scaling]) -> list[tuple[str | None, str]]:
    """The terminal's length-scaling section: each slow run with its fit, or one line when
    none is slow (with the range of exponents measured, so "linear" is a measurement).

    >>> fast = Scaling("v", "plain", "word", "'abc…' * n", (1, 8), (1.0, 8.0), (1.0, 8.0), 0.0, 0.0)
    >>> summary([fast])[0][1]
    '\\nlength scaling: 1 run(s) timed on 1 vocab(s); none grows faster than linearly (port n^1.00 to n^1.00, llama.cpp n^1.00 to n^1.00)'
    """
    runs = list(runs)
    if not runs:
        return []
    slow = [s for s in runs if s.slow]
    ports, refs = [s.exponent for s in runs], [s.reference_exponent for s in runs]
    span = (f"port n^{min(ports):.2f} to n^{max(ports):.2f}, llama.cpp n^{min(refs):.2f} to n^{max(refs):.2f}")
    head = f"length scaling: {len(runs)} run(s) timed on {len({s.vocab for s in runs})} vocab(s); "
    if not slow:
        return [(None, "\n" + head + f"none grows faster than linearly ({span})")]
    body = "\n".join(f"{s.line()}\n  {s.inputs()}" for s in slow)
    return [(f"-length scaling: {len(slow)} slow run(s) (a warning: slow is not wrong, the exit code "
             f"is unchanged)", head + f"{len(slow)} slow: faster than n^{SUPERLINEAR} and than llama.cpp's "
                                      f"exponent + {MARGIN} ({span})\n" + body)]


def html_section(entries: Iterable[dict]) -> str:
    """``conformance.html``'s section: every run timed (``conformance.json``'s ``scaling``
    entries), slow ones first and marked, with the fit's inputs.

    >>> s = Scaling("v", "plain", "repeat", "'a' * n", (1, 8), (1.0, 64.0), (1.0, 8.0), 0.0, 0.0)
    >>> "slow" in html_section([s.to_json()]) and html_section([]) == ""
    True
    """
    import html
    e = html.escape
    runs = sorted((Scaling.from_json(d) for d in entries), key=lambda s: (not s.slow, s.vocab, s.run))
    if not runs:
        return ""
    rows = "".join(
        f"<tr{' class=div' if s.slow else ''}><td>{'slow' if s.slow else 'linear'}</td><td>{e(s.vocab)}</td>"
        f"<td>{e(s.flags)}</td><td>{e(s.example)}</td><td>{s.exponent:.2f}</td><td>{s.reference_exponent:.2f}</td>"
        f"<td>{e(_ms(s.port_s[-1]))}</td><td>{e(_ms(s.reference_s[-1]))}</td>"
        f"<td>{s.over_at if s.over_at is not None else '-'}</td><td class=c>{e(s.inputs())}</td></tr>" for s in runs)
    n = sum(s.slow for s in runs)
    return (f"<h2>Length scaling</h2><p>{n} slow run(s) of {len(runs)} timed: the port's encode time grows "
            f"faster than n^{SUPERLINEAR} and than llama.cpp's by {MARGIN}. A warning: slow is not wrong, "
            f"no cell's outcome or exit code changes.</p><table><tr><th></th><th>vocab</th><th>flags</th>"
            f"<th>run</th><th>port n^</th><th>llama.cpp n^</th><th>port at largest</th><th>llama.cpp</th>"
            f"<th>over {FACTOR}x from (bytes)</th><th>fit</th></tr>{rows}</table>")
