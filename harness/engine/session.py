"""Per-worker state: one reference, vocab and port per vocab, with restarts.

>>> Session("  ").port_spec
'harness'
"""

from __future__ import annotations

import traceback
from collections import OrderedDict

from harness.engine.vut import VocabUnderTest
from harness.errors import PortError, ReferenceUnavailable, death_kind
from harness.ports import Port, open_port
from harness.protocol.client import ExternalPort

MAX_OPEN_EXTERNAL = 3  # external port processes kept alive per worker
#: Quick deaths in a row (each within EARNED answers of the last) a port is restarted after,
#: per vocab and worker; a port that answered EARNED requests or more earns its restart and
#: ends the streak. So a port crashing on a random 0.1 % of requests is restarted as long as
#: the run goes on, one that dies at once is given up after 3 restarts, and restarts stay
#: below (MAX_RESTARTS + 1) * (1 + answered requests / EARNED).
MAX_RESTARTS = 3
EARNED = 100


class Session:
    """Per-process cache: references, vocabs and ports (one of each per vocab).

    A port that could not open stays failed for its vocab. A port that reports another
    ``n_vocab`` than llama.cpp's is that vocab's root port error, said once (:meth:`take_notes`),
    and the checks go on over the ids both sides have (:meth:`shared_ids`). A port that crashed, hung or answered garbage is started again
    when it is next needed, within the budget of :data:`MAX_RESTARTS` and
    :data:`EARNED`; each death and each restart is noted (:meth:`take_notes`) so the
    report shows and counts them. ``opener(spec, path,
    reference=...)`` opens a port (:func:`harness.ports.open_port`; the port fuzzer passes
    its scripted ports).
    """

    def __init__(self, port_spec: str = "harness", opener=open_port):
        self.port_spec = port_spec.strip() or "harness"
        self._opener = opener
        self._vocabs: dict[str, VocabUnderTest] = {}
        self._ports: OrderedDict[str, Port] = OrderedDict()
        self._errors: dict[str, PortError] = {}
        self._restarts: dict[str, list[str]] = {}
        self._quick: dict[str, int] = {}  # quick deaths in a row per vocab (see MAX_RESTARTS)
        self._earned: dict[str, int] = {}  # answers since the last death, by ports closed healthy
        self._untaken: dict[str, list[str]] = {}
        self._deaths: dict[str, list[str]] = {}
        self._said: dict[str, list[tuple[str, str]]] = {}  # (message, stderr) of errors the port keeps serving after
        self._n_vocab: dict[str, int] = {}  # the port's n_vocab, where it is not llama.cpp's

    def vocab(self, name: str) -> VocabUnderTest:
        """The vocab by pinned name, ``derived:`` name or .gguf path (ReferenceUnavailable if not
        fetched/built; a derived vocab is built on first use)."""
        if name not in self._vocabs:
            from harness.inputs.derived import resolve
            from reference.inproc import load_reference
            path = resolve(name)
            self._vocabs[name] = VocabUnderTest(name, path, self.port_spec, load_reference(path), self)
        return self._vocabs[name]

    def port(self, vut: VocabUnderTest) -> Port:
        """Open (or reuse, or restart) the port for one vocab."""
        if vut.name in self._errors:
            err = self._errors[vut.name]
            # The same message, so the report counts this root cause once.
            raise PortError(str(err).split("\n--- port stderr ---")[0], stderr=err.stderr)
        port = self._ports.get(vut.name)
        if isinstance(port, ExternalPort) and port.dead is not None:
            self._restart(vut.name, port)
            port = None
        if port is None:
            port = self._ports[vut.name] = self._open(vut)
            self._evict()
        self._ports.move_to_end(vut.name)
        return port

    def open_ports(self) -> list[Port]:
        """The ports open now (the port fuzzer checks none outlives its session)."""
        return list(self._ports.values())

    def port_death(self, name: str) -> PortError | None:
        """The error ``name``'s open external port went down with, or None."""
        port = self._ports.get(name)
        return port.dead if isinstance(port, ExternalPort) else None

    def can_restart(self, name: str) -> bool:
        """Whether ``name``'s port, if it is down now, will be started again when next needed.

        >>> Session().can_restart("qwen2")
        True
        """
        port = self._ports.get(name)
        if name in self._errors:
            return False
        quick = isinstance(port, ExternalPort) and port.dead is not None and self._quick_death(name, port)
        return not quick or self._quick.get(name, 0) < MAX_RESTARTS

    def _quick_death(self, name: str, port: ExternalPort) -> bool:
        """Whether ``port`` died within EARNED answers of the last death (answers of the ports
        of ``name`` evicted healthy in between count: eviction is not a death)."""
        return self._earned.get(name, 0) + port.answered < EARNED

    def _count_death(self, name: str, port: ExternalPort) -> None:
        self._note_death(name, port)
        self._quick[name] = self._quick.get(name, 0) + 1 if self._quick_death(name, port) else 0
        self._earned[name] = 0

    def _note_death(self, name: str, port) -> None:
        if isinstance(port, ExternalPort) and port.dead is not None and not port.death_noted:
            port.death_noted = True
            why = str(port.dead).splitlines()[0]
            self._deaths.setdefault(name, []).append(
                f"{death_kind(why)} after {port.answered} answer(s): {why}")

    def _restart(self, name: str, port: ExternalPort) -> None:
        dead = port.dead
        self._note_death(name, port)
        done = self._restarts.setdefault(name, [])
        allowed = self.can_restart(name)
        self._ports.pop(name).close()
        if not allowed:
            self._errors[name] = PortError(f"port for {name} went down {len(done) + 1} times, the last "
                                           f"{MAX_RESTARTS + 1} in a row within {EARNED} answers of a start; "
                                           f"not restarted again. Last error: {dead}", stderr=dead.stderr)
            raise self._errors[name]
        self._count_death(name, port)
        note = (f"restart {len(done) + 1} ({self._quick[name]}/{MAX_RESTARTS} quick in a row) after "
                f"{port.answered} answer(s): {str(dead).splitlines()[0]}")
        done.append(note)
        self._untaken.setdefault(name, []).append(note)

    def take_notes(self, name: str) -> tuple[list[str], list[str], list[tuple[str, str]]]:
        """``(restarts, deaths, said)`` of ``name``'s port not yet reported: a death is noted once,
        when the port is restarted or when this is asked while it is down; ``said`` are the
        (message, stderr) of its errors that stop no check (another ``n_vocab``)."""
        self._note_death(name, self._ports.get(name))
        return self._untaken.pop(name, []), self._deaths.pop(name, []), self._said.pop(name, [])

    def shared_ids(self, vut: VocabUnderTest) -> int:
        """How many token ids both llama.cpp and the port have (llama.cpp's n_vocab unless the
        port said fewer).

        >>> class R: n_vocab = 9
        >>> class V: name, reference = "v", R()
        >>> s = Session(); s._n_vocab["v"] = 7; s.shared_ids(V())
        7
        """
        return min(vut.reference.n_vocab, self._n_vocab.get(vut.name, vut.reference.n_vocab))

    def _open(self, vut: VocabUnderTest) -> Port:
        try:
            port = self._opener(self.port_spec, vut.path, reference=vut.reference)
            if isinstance(port, ExternalPort) and vut.name not in self._n_vocab:
                self._check_n_vocab(port, vut)
            return port
        except ReferenceUnavailable:
            raise
        except Exception as e:
            # A port that cannot load a vocab is that vocab's port error, reported with the run.
            err = e if isinstance(e, PortError) else PortError(
                f"port {self.port_spec!r} could not open {vut.path}: {type(e).__name__}: {e}",
                stderr=traceback.format_exc())
            self._errors[vut.name] = err
            raise err from (None if err is e else e)

    def _check_n_vocab(self, port: "ExternalPort", vut: VocabUnderTest) -> None:
        """Another ``n_vocab`` is said once (a root port error of the first test that takes the
        notes) and the port goes on serving: one wrong count must not hide the vocab's findings."""
        n, ref = port.info().get("n_vocab"), vut.reference.n_vocab
        if n is None or n == ref:
            return
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            port.close()  # its stderr is kept
            raise PortError(f"port {port.command!r} answers info with n_vocab={n!r}: not a token count "
                            "(the protocol's info op answers an integer, README 'Port protocol')",
                            stderr=port.stderr())
        self._n_vocab[vut.name] = n
        more = "more" if n > ref else "fewer"
        self._said.setdefault(vut.name, []).append((
            f"port {port.command!r} answers info with n_vocab={n:,}, {abs(n - ref):,} {more} tokens than "
            f"llama.cpp's {ref:,} (llama_vocab_n_tokens) in {vut.path}; the checks go on over the "
            f"{min(n, ref):,} ids both have", port.stderr()))

    def _evict(self) -> None:
        # External ports are processes: keep only a few alive per worker.
        external = [k for k, p in self._ports.items() if isinstance(p, ExternalPort)]
        for name in external[:-MAX_OPEN_EXTERNAL]:
            port = self._ports.pop(name)
            if port.dead is not None:
                self._count_death(name, port)  # noted, though it is not restarted here
            else:
                self._earned[name] = self._earned.get(name, 0) + port.answered
            port.close()

    def close(self) -> None:
        """Stop every external port process."""
        for p in self._ports.values():
            if isinstance(p, ExternalPort):
                p.close()
        self._ports.clear()
