"""How an explained cause's set and an unexplained cause's characters are found by asking the
port (:class:`Characteriser`, the characterising half of :class:`harness.engine.causes.CauseFinder`).

>>> TRIGGER_CONTEXTS[1].replace("{}", "\u00a0")
'a\xa0b'
"""

from __future__ import annotations

from harness.reports.triggers import NON_ASCII

__all__ = ["Characteriser", "PROBES", "BLAND", "TRIGGER_CONTEXTS", "UNANSWERED"]

#: Code points of its class a code-point cause is probed with (CauseFinder._probed).
PROBES = 24
#: Plain texts a port must get right for an unexplained cause to be about characters at all.
BLAND = ("a", "Hello world", "the cat sat")
#: Where an unexplained cause's code point is put to see if it diverges by itself.
TRIGGER_CONTEXTS = ("{}", "a{}b", "x {} y")
#: What a prediction gets when the port cannot answer it (unsupported, a port error).
UNANSWERED = object()


class Characteriser:
    """Asks the port about characters: needs ``rerun(text)`` (the port's finding on a text of the
    test, None where it agrees), ``probe``, ``diagnoser`` and the two memos."""

    _bland_memo: bool | None = None
    _non_ascii_memo: bool | None = None
    _alone_memo: dict | None = None

    def _probed(self, cause) -> tuple:
        """A code-point cause's set, probed: its shrunk text with the code point replaced by
        others of llama.cpp's same class (:meth:`Diagnoser.probe_set`), each asked of the port.
        ``(shows, does_not)``: the code points on which the port answers as the explanation
        bound to them does, and those on which it answers as llama.cpp does. A person fixes
        the set, not the one code point the cause was met through."""
        probe_set = getattr(self.diagnoser, "probe_set", None)
        if probe_set is None:
            return ()
        shows, not_ = [], []
        for key in cause.keys[:1]:
            for cp, bound, x in probe_set(key, cause.finding, PROBES):
                got = self.probe(cause.finding.check, x, None)
                if got is UNANSWERED:
                    continue
                if got is None:
                    not_.append(cp)
                elif self.diagnoser.predicted(bound, x, got):
                    shows.append(cp)
        return (tuple(shows), tuple(not_)) if shows or not_ else ()

    def _bland(self) -> bool:
        """Whether the port parts from llama.cpp on plain ASCII words (:data:`BLAND`): then a
        cause is not about characters, and its triggers would name whatever the text held.
        Asked once per test (the same for every cause of it)."""
        if self._bland_memo is None:
            self._bland_memo = any(self.rerun(bland) is not None for bland in BLAND)
        return self._bland_memo

    def _non_ascii(self) -> bool:
        """Whether the port parts from llama.cpp on every code point of :data:`NON_ASCII` by
        itself, and on plain ASCII words not (its input, not a class of characters, nor a
        wrapper). Asked once per test."""
        if self._non_ascii_memo is None:
            self._non_ascii_memo = not self._bland() and all(
                any(self.rerun(ctx.replace("{}", c)) is not None for ctx in TRIGGER_CONTEXTS[:2]) for c in NON_ASCII)
        return self._non_ascii_memo

    def _wrong_alone(self, check: str, token: int) -> bool:
        """Whether the port parts from llama.cpp on ``token`` decoded by itself (the test's own
        flags). Asked once per token and test; a port that cannot answer is not wrong."""
        if self._alone_memo is None:
            self._alone_memo = {}
        if token not in self._alone_memo:
            got = self.probe(check, (token,), None)
            self._alone_memo[token] = got is not None and got is not UNANSWERED
        return self._alone_memo[token]

    def _triggers(self, text: str) -> tuple[str, ...]:
        """The code points of a shrunk text on which the port parts from llama.cpp by
        themselves: alone, or between fresh neighbours (:data:`TRIGGER_CONTEXTS`). What a
        person would fix is the handling of those characters; reports group unexplained
        causes by their class (harness.reports.causes)."""
        found = []
        for c in dict.fromkeys(text):
            if any(self.rerun(ctx.replace("{}", c)) is not None for ctx in TRIGGER_CONTEXTS):
                found.append(c)
        return tuple(found)
