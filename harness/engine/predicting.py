"""How a diagnosis is held to the port (:class:`Predictor`, the predicting half of
:class:`harness.engine.causes.CauseFinder`): explanations that all fit a shrunk case are told
apart on inputs where they differ, and each must then predict the port on fresh inputs where
it and llama.cpp disagree, and agree with the port where it claims llama.cpp's answer.

>>> PREDICT, PREDICTED_EXPLANATIONS
(8, 3)
"""

from __future__ import annotations

from harness.engine.characterise import UNANSWERED
from harness.reports.finding import BYTE_CHECKS
from harness.reports.triggers import NON_ASCII

__all__ = ["Predictor", "PREDICT", "OTHER_FLAGS", "NARROW", "AGREEMENTS", "PREDICTED_EXPLANATIONS"]

#: Fresh inputs a diagnosis must predict to name a cause (see the module docstring).
PREDICT = 8
#: Of those, inputs under the check's other flag combinations (a variant about a flag must hold there too).
OTHER_FLAGS = 3
#: An explanation with fewer own-flag predictions than this is narrow: it is held to agreements too.
NARROW = 2
#: Inputs around a narrow explanation's case where it agrees with llama.cpp, asked of the port.
AGREEMENTS = 3
#: Explanations of one shrunk case told apart and tested by predictions at a time (the catalogue's
#: first ones; the next ones only when the port sides with none of these).
PREDICTED_EXPLANATIONS = 3


class Predictor:
    """Asks the port what an explanation predicts: needs ``probe``, ``diagnoser``, ``ask``,
    ``other_flags``, ``causes`` (the test's, for the known ones), ``_elsewhere``, ``_signature``,
    ``_non_ascii`` and ``_wrong_alone``."""

    def _sided_with(self, found: tuple, f) -> tuple:
        """The first PREDICTED_EXPLANATIONS of ``found`` the port sides with (:meth:`_discriminated`),
        taken in the catalogue's order a window at a time: where the port answers none of a window's
        explanations, the next window is told apart. ollama's Go \\s fits `` \\x85a`` on qwen2 as
        JavaScript's, ICU's, Java's and Go's do; the port refutes the first three, and Go's is fifth."""
        for start in range(0, len(found), PREDICTED_EXPLANATIONS):
            alive = self._discriminated(found[start:start + PREDICTED_EXPLANATIONS], f)
            if alive:
                return alive
        return ()

    def _discriminated(self, found: tuple, f) -> tuple:
        """Of explanations that all fit ``f``, those the port sides with on inputs where they
        answer differently from each other (:meth:`Diagnoser.discriminating`): two variants
        that fit one case by sharing one code point are told apart by the others. All of
        them when the port cannot be asked or no such input exists."""
        discriminating = getattr(self.diagnoser, "discriminating", None)
        if len(found) < 2 or not self.ask or discriminating is None:
            return found
        keys = [e[0] for e in found]
        alive = set(keys)  # (timed as prediction by the caller)
        for x in discriminating(keys, f, PREDICT):
            got = self.probe(f.check, x, None)
            if got is UNANSWERED:
                continue
            alive = {k for k in alive if self.diagnoser.answers(k, f, x, got)}
            if not alive:
                break
        return tuple(e for e in found if e[0] in alive)

    def _tainted(self, key: str, f, x) -> bool:
        """Whether a decode prediction ``x`` holds a token the port gets wrong by itself where the
        explanation ``key`` gets it right (:meth:`Characteriser._wrong_alone`): a second defect
        of the port's, met on the way, whose answer says nothing of this one. transformers.js
        on phi-3 prints ``</s>`` (its GGUF type kept) and strips the space after an unprinted
        BOS: "strips after an unprinted token" predicts ``</s> a`` as ``a``, and the port answers
        ``</s> a`` because of the other bug."""
        if f.check != "decode" or not isinstance(x, tuple):
            return False
        return any(self._wrong_alone(f.check, t) and self.diagnoser.agrees(key, f, (t,)) for t in dict.fromkeys(x))

    def _predicts(self, key: str, f) -> tuple[int, int, bool]:
        """``(made, passed, predicts)``: the explanation's predictions asked of the port, how many
        the port answered as the explanation does, and whether that is enough. It predicts when every one under the cell's own
        flags passes (it stops at the first miss) and most of those under other flag
        combinations do: there a second bug of that combination (a port that forgets its forced
        BOS on an empty text, say) may answer one of them, and where the port parts from
        llama.cpp in another way the prediction tells nothing and is not counted. Nothing is
        asked of a port that went down (it predicts nothing then, and is kept unrefuted)."""
        if not self.ask:
            return 0, 0, True
        own = [0, 0]
        other = [0, 0]
        # bugs a prediction may also meet: this test's causes and those earlier tests of the vocab confirmed
        known = tuple(k for k in (*(k for c in self.causes for k in c.keys), *self._elsewhere()) if k != key)
        for x, flags in self.diagnoser.predictions(key, f, PREDICT, OTHER_FLAGS if self.other_flags else 0):
            if flags is None and self._tainted(key, f, x):
                continue  # it holds another defect of the port's: no evidence either way
            got = self.probe(f.check, x, flags)
            if got is UNANSWERED:
                continue  # unsupported or a port error: no evidence either way
            ok = self.diagnoser.predicted(key, x, got, known)
            if ok is None:
                continue  # the port parted from llama.cpp before the variant's claim: no evidence
            if flags is not None:
                if got is not None and not ok and not (known and self.diagnoser.explains(known, got)):
                    continue  # the port parts from llama.cpp in another way there: no evidence
                # (where a known cause alone gives the port's answer, the variant's own claim did
                # not show: evidence against it, as a port that agrees with llama.cpp is)
                other[0] += 1
                other[1] += ok
                continue
            own[0] += 1
            if not ok:
                return own[0] + other[0], own[1] + other[1], False
            own[1] += 1
        # An explanation also claims the port is right where it agrees with llama.cpp: a narrow
        # one around its case, any one where a wider defect of its kind shows (the rest of a
        # table's class, a character over two tokens). Where the port parts from llama.cpp there
        # the same way, the defect is wider than the explanation ("no BOS on an empty text" for
        # no BOS at all, "U+1343D is unassigned" for every format control kept, lossy UTF-8 for
        # lossy per token).
        # A port that parts from llama.cpp on every non-ASCII code point (its input) is wider
        # than any explanation that leaves some of them as llama.cpp has them.
        if isinstance(f.text, str) and f.check not in BYTE_CHECKS and self._non_ascii() and any(
                self.diagnoser.agrees(key, f, c) for c in NON_ASCII):
            return own[0] + other[0] + 1, own[1] + other[1], False
        for x in self.diagnoser.agreements(key, f, AGREEMENTS, targeted=own[0] >= NARROW):
            got = self.probe(f.check, x, None)
            if got is UNANSWERED or got is None:
                continue
            if known and self.diagnoser.wrapped(known, got):
                continue  # a known wrapper bug's own tokens (a BOS forced on every text): no wider defect
            mine, theirs = tuple(self._signature(got)), tuple(self._signature(f))
            if mine[:1] + mine[2:] == theirs[:1] + theirs[2:]:  # the same difference, whatever the edit
                return own[0] + other[0] + 1, own[1] + other[1], False
        return own[0] + other[0], own[1] + other[1], 2 * other[1] > other[0] or not other[0]
