"""Causes: the unit of every report. Findings that one explanation reproduces are one cause.

A finding carries its explanations (the catalogue variants that reproduce the port's exact
output on it, harness.diagnosis, each with its bound parameter) and its reference-side
signature. Two findings are one cause when one explanation reproduces both: the explained
findings are covered by as few explanations as a greedy cover finds (the one covering the
most cases first), whatever their vocabs, checks and flag combinations; findings nothing
explains group by ``unexplained`` and their signature. So two bugs behind one first
divergent character stay two causes, and one bug seen through several checks is one.

Each cause has an id (``C1``, ``C2``, ... most cases first), a title (the rule the port
breaks, or an ``unexplained:`` description of where llama.cpp and the port part), the
diagnosis (a catalogue name or None), the rule (what llama.cpp does and where, at the pin),
its minimal example (the finding with the shortest input), its findings and cells, and its
divergent cases.

>>> from harness.reports.diff import Divergence
>>> d = Divergence(0, 0, True, (1,), (2,))
>>> fs = [Finding("encode", "v", None, False, False, "ab", d, cases=3,
...               explanations=(("nfc_input", "NFC", "r"), ("nfkc_input", "NFKC", "r"))),
...       Finding("encode", "w", None, True, False, "a", d, cases=2, explanations=(("nfc_input", "NFC", "r"),))]
>>> [(c.id, c.title, c.findings, c.cases, c.example) for c in group_causes(fs)]
[('C1', 'NFC', [0, 1], 5, 1)]
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass, field, replace

from harness.reports.finding import BYTE_CHECKS, Finding
from harness.reports.triggers import NON_ASCII, algorithm, every_non_ascii, trigger_classes, triggered_title


@dataclass
class Cause:
    """One cause of a run: the findings its explanation covers."""

    id: str
    key: tuple
    title: str
    diagnosis: str | None
    rule: str | None
    example: int  # index (into the run's findings) of the minimal example
    findings: list[int] = field(default_factory=list)
    cells: list[tuple[str, str, str]] = field(default_factory=list)  # (vocab, check, flags), sorted
    cases: int = 0
    params: list = field(default_factory=list)  # the variant's parameter values it holds (repr strings)
    predictions: tuple = ()  # (made, passed) summed over its findings; () when none were asked
    loci: Counter = field(default_factory=Counter)  # character or token at the divergence -> cases

    probed: tuple = ()  # (code points of its class that show it, that do not), from the engine's probes
    seconds: Counter = field(default_factory=Counter)  # wall s the engine spent on it, summed over its findings

    @property
    def characterisation(self) -> str:
        """What its cases show at the divergence (:func:`characterise`), and for a code-point
        cause, its class probed (:func:`probed_line`)."""
        return "; ".join(x for x in (characterise(self.loci), probed_line(self.probed)) if x)

    def to_json(self, findings: list[Finding]) -> dict:
        """The ``causes`` entry of conformance.json (schema 3, in harness/reports/run.py)."""
        return {"id": self.id, "title": self.title, "diagnosis": self.diagnosis, "rule": self.rule,
                "example": findings[self.example].to_json() | {"cause": self.id},
                "findings": [self.example] + [k for k in self.findings if k != self.example],  # example first
                "cases": self.cases, "params": list(self.params),
                "predictions": list(self.predictions), "characterisation": self.characterisation,
                "probed": [list(x) for x in self.probed],
                "diagnosis_seconds": {k: round(v, 3) for k, v in sorted(self.seconds.items())},
                "loci": [[k, n] for k, n in sorted(self.loci.items(), key=lambda kv: (-kv[1], str(kv[0])))[:200]],
                "cells": [{"vocab": v, "check": c, "flags": f} for v, c, f in self.cells]}

    def where(self) -> str:
        """Where it shows: vocabs × checks × flag combinations, in one line."""
        vocabs = sorted({v for v, _, _ in self.cells})
        checks = sorted({c for _, c, _ in self.cells})
        flags = sorted({f for _, _, f in self.cells})
        return (f"{len(vocabs)} vocab(s) ({', '.join(vocabs)}) × {len(checks)} check(s) "
                f"({', '.join(checks)}) × {len(flags)} flag combination(s) ({', '.join(flags)}): "
                f"{len(self.cells)} cell(s)")


def _size(f: Finding) -> tuple:
    """How small a finding's input is (the minimal example is the smallest)."""
    n = len(f.decoded_ids) if f.check in BYTE_CHECKS else len(f.text.encode("utf-8", "surrogatepass"))
    return (n, f.check in BYTE_CHECKS, f.vocab, f.flags, f.check)


_WHAT = {"added special": "a token add_special adds", "special": "a special token",
         "byte token": "a byte token", "unknown token": "an unknown token",
         "leading space": "a token with a leading space", "whitespace": "a whitespace token",
         "newline": "a newline token", "invalid-utf8": "an invalid UTF-8 sequence", "end": "the end"}
_WHERE = {"start": "at the start", "inside": "inside the text", "end": "at the end"}
_ENCODE_WHAT = {"same text, other tokens": "the port splits the same text into other tokens",
                "other text": "the port's tokens spell another text than llama.cpp's"}


#: What llama.cpp emitted where a finding's triggers, not its signature, say what the defect is:
#: the text's content (not a wrapper token add_special adds, nor tokens added at the edges).
_CONTENT = ("same text, other tokens", "other text", "whitespace", "newline", "unknown token", "byte token",
            "special")


def _join_triggered(groups: dict[tuple, list[int]]) -> dict[tuple, list[int]]:
    """Triggered groups of one family and pre type whose trigger classes overlap are one:
    a regex that drops what it does not match meets control characters alone, and separators
    with punctuation, as one defect. The joined key names every class, in order.

    >>> g = {("unexplained", "encode", "triggered", "C", "GPT2"): [0], ("unexplained", "encode", "triggered", "C+Z", "GPT2"): [1],
    ...      ("unexplained", "encode", "triggered", "P+Z", "GPT2"): [2], ("unexplained", "encode", "triggered", "P", "BERT"): [3]}
    >>> sorted(_join_triggered(g).items())
    [(('unexplained', 'encode', 'triggered', 'C+P+Z', 'GPT2'), [0, 1, 2]), (('unexplained', 'encode', 'triggered', 'P', 'BERT'), [3])]
    """
    out: dict[tuple, list[int]] = {}
    triggered = [k for k in groups if k[2:3] == ("triggered",)]
    merged: list[tuple[set, tuple, list[int]]] = []  # (classes, (family, pre type), indices)
    for k in triggered:
        classes, where, idx = set(k[3].split("+")), (k[1], k[4]), list(groups[k])
        for other in [m for m in merged if m[1] == where and m[0] & classes]:
            merged.remove(other)
            classes |= other[0]
            idx += other[2]
        merged.append((classes, where, idx))
    for k, idx in groups.items():
        if k[2:3] != ("triggered",):
            out[k] = idx
    for classes, (family, pre), idx in merged:
        out[("unexplained", family, "triggered", "+".join(sorted(classes)), pre)] = sorted(idx)
    return out


def unexplained_key(signature: tuple, triggers=(), pre_type: str | None = None, probed=()) -> tuple:
    """The run-level key of a finding no explanation covers. An encode finding whose cause's
    code points diverge by themselves (``triggers``) is keyed by their major categories: one
    defect in the handling of a class of characters meets texts through several signatures
    (a word that becomes [UNK], a piece that becomes a subword). Else its signature, less the
    edit (adds, drops, replaces) for encode and decode, where one defect meets texts through
    each of them; a piece's edit is the defect itself, and stays.

    >>> unexplained_key(("encode", "drops", "other text")), unexplained_key(("piece", "empty", "byte token"))
    (('unexplained', 'encode', 'other text'), ('unexplained', 'piece', 'empty', 'byte token'))
    >>> unexplained_key(("piece", "empty", "normal token"), (), "n/a (t5)")
    ('unexplained', 'piece', 'empty', 'normal token')
    >>> unexplained_key(("piece", "other bytes", "normal token"), (), "n/a (t5)")
    ('unexplained', 'piece', 'other bytes', 'normal token', 't5')
    >>> unexplained_key(("encode", "drops", "special"), ("\\u066a",), "BERT")
    ('unexplained', 'encode', 'triggered', 'P', 'BERT')

    A triggered key holds the pre type: a port handles a class of characters in one
    algorithm's code (WPM's punctuation, UGM's charsmap, a BPE regex), so the same class on
    vocabs of other pre types is another defect. Unless the port parts from llama.cpp on every
    non-ASCII code point probed (:func:`every_non_ascii`): that is its input, on every vocab.

    >>> unexplained_key(("encode", "replaces", "other text"), ("\u0409",), "LLAMA", (NON_ASCII, ()))
    ('unexplained', 'encode', 'triggered', 'non-ASCII', '')
    """
    if triggers and every_non_ascii(probed) and all(ord(c) > 0x7F for c in triggers if len(c) == 1):
        return ("unexplained", "encode", "triggered", "non-ASCII", "")
    content = signature[:1] == ("encode",) and signature[2:] and signature[2] in _CONTENT
    classes = trigger_classes(triggers, pre_type) if triggers and content else ""
    if classes:
        return ("unexplained", "encode", "triggered", classes, pre_type or "")
    if len(signature) == 3 and signature[1] == "adds" and signature[2] in ("start", "inside", "end"):
        return ("unexplained", signature[0], "adds tokens")  # where depends on the text, not the defect
    if len(signature) == 3 and signature[0] != "piece":
        return ("unexplained", signature[0], signature[2])
    if signature[2:] == ("normal token",) and signature[1] != "empty":
        # a normal token's text rendered otherwise is each algorithm's own code (SPM's U+2581,
        # WPM's ##, the byte-level map); a special token's is the vocabulary's, shared by all.
        # An empty piece is not rendered at all: one defect of the piece call on every algorithm
        return ("unexplained", *signature, algorithm(pre_type))
    return ("unexplained", *signature)


def unexplained_title(signature: tuple) -> str:
    """A title for a cause no catalogue variant explains, from its signature: the localised
    edit, never the class of the character where the outputs part.

    >>> unexplained_title(("piece", "leading space dropped", "normal token"))
    "unexplained (piece, decode): the port's piece of normal tokens: leading space dropped"
    >>> unexplained_title(("decode", "drops", "bytes dropped"))
    "unexplained (decode): the port's output, where it parts from llama.cpp's: bytes dropped"
    >>> unexplained_title(("encode", "adds", "start"))
    'unexplained (encode): the port adds tokens at the start'
    >>> unexplained_title(("encode", "replaces", "same text, other tokens"))
    'unexplained (encode): the port splits the same text into other tokens'
    >>> unexplained_title(("encode", "drops", "unknown token"))
    'unexplained (encode): the port drops an unknown token llama.cpp emits'
    """
    if len(signature) != 3:
        return f"unexplained: {' / '.join(map(str, signature)) or 'divergence'}"
    family, edit, what = signature
    if what == "adds tokens":
        return f"unexplained ({family}): the port adds tokens llama.cpp does not emit"
    if family == "piece":
        return f"unexplained (piece, decode): the port's piece of {what.replace(' token', ' tokens')}: {edit}"
    if family == "decode":
        return f"unexplained (decode): the port's output, where it parts from llama.cpp's: {what}"
    if what in _ENCODE_WHAT:
        return f"unexplained ({family}): {_ENCODE_WHAT[what]}"
    thing = _WHAT.get(what, f"a token starting with a {what}")
    if edit == "adds":
        where = _WHERE.get(what, f"where llama.cpp has {thing}")
        return f"unexplained ({family}): the port adds tokens {where}"
    if edit == "drops":
        return f"unexplained ({family}): the port drops {thing} llama.cpp emits"
    return f"unexplained ({family}): where llama.cpp emits {thing}, the port's tokens differ"


def _name(key: str) -> str:
    """The catalogue name of an explanation key (its parameter cut off)."""
    return key.split(":", 1)[0]


def _cover(findings: list[Finding]) -> list[tuple[str, list[int]]]:
    """Explained findings grouped so that one catalogue variant (whatever its parameter:
    U+00A0 and U+0085 read as spaces are one whitespace table) reproduces every finding of a
    group, in as few groups as the greedy cover finds: the variant that covers the most
    findings not yet covered first (ties: the more specific, then the name)."""
    left = {k for k, f in enumerate(findings) if f.explanations}
    groups = []
    while left:
        score: dict[str, list] = {}
        for k in left:
            for name in dict.fromkeys(_name(e[0]) for e in findings[k].explanations):
                rank = next(r for r, e in enumerate(findings[k].explanations) if _name(e[0]) == name)
                entry = score.setdefault(name, [0, rank])
                entry[0] += findings[k].cases or 1
                entry[1] = min(entry[1], rank)
        name = min(score, key=lambda x: (-score[x][0], score[x][1], x))
        idx = sorted(k for k in left if any(_name(e[0]) == name for e in findings[k].explanations))
        groups.append((name, idx))
        left -= set(idx)
    return groups


def characterise(loci: Counter) -> str:
    """What a cause's cases show at the divergence, as a person would fix it: the code points
    (with their general categories) or the token ids, most frequent first.

    >>> characterise(Counter({"\\uff08": 3, "\\uff09": 2, "\\u2019": 1}))
    '3 code point(s): U+FF08 (3), U+FF09 (2), U+2019 (1); categories: Ps 1, Pe 1, Pf 1'
    >>> characterise(Counter({5: 2, 900: 1}))
    '2 token(s): ids 5..900: 5 (2), 900 (1)'
    >>> characterise(Counter({128247: 15, "<": 32}))
    '1 token(s): ids 128247..128247: 128247 (15); at its encode cases 1 code point(s): U+003C (32); categories: Sm 1'
    >>> characterise(Counter())
    ''
    """
    if not loci:
        return ""
    ids, chars = Counter({k: n for k, n in loci.items() if isinstance(k, int)}), Counter(
        {k: n for k, n in loci.items() if not isinstance(k, int)})
    if ids and chars:  # a vocabulary defect met in pieces (ids) and encode (characters): each apart
        return f"{characterise(ids)}; at its encode cases {characterise(chars)}"
    top = sorted(loci.items(), key=lambda kv: (-kv[1], str(kv[0])))
    shown = ", ".join(f"{_locus_name(k)} ({n})" for k, n in top[:12]) + (", ..." if len(top) > 12 else "")
    if all(isinstance(k, str) for k in loci):
        cats = Counter(unicodedata.category(k) for k in loci if len(k) == 1)
        return (f"{len(loci)} code point(s): {shown}; categories: "
                + ", ".join(f"{c} {n}" for c, n in cats.most_common()))
    ids = sorted(k for k in loci if isinstance(k, int))
    return f"{len(loci)} token(s): ids {ids[0]}..{ids[-1]}: {shown}" if ids else shown


def probed_line(probed) -> str:
    """A code-point cause's class, probed, in one line.

    >>> probed_line((("\\x85", "\\u2000"), ("\\u3000",)))
    'probed 3 more code point(s) of its class (llama.cpp flags): 2 show it (U+0085, U+2000), 1 do(es) not (U+3000)'
    >>> probed_line(())
    ''
    """
    if not probed:
        return ""
    shows, not_ = probed

    def names(cps):
        return ", ".join(f"U+{ord(c):04X}" for c in sorted(cps)[:16]) + (", ..." if len(cps) > 16 else "")
    return (f"probed {len(shows) + len(not_)} more code point(s) of its class (llama.cpp flags): "
            f"{len(shows)} show it ({names(shows) or 'none'}), {len(not_)} do(es) not ({names(not_) or 'none'})")


def _locus_name(k) -> str:
    if isinstance(k, str) and len(k) == 1:
        return f"U+{ord(k):04X}"
    return str(k)


def _shared_binding(findings: list[Finding], idx: list[int], name: str) -> str | None:
    """The explanation key of variant ``name`` that every finding of ``idx`` has (a buffer size
    every vocab's cases allow), the best ranked; None when no one binding explains them all.

    >>> from harness.reports.diff import Divergence
    >>> d = Divergence(0, 0, True, (1,), (2,))
    >>> f = [Finding("decode", "v", None, False, False, "", d, explanations=(("b:64", "", ""), ("b:32", "", ""))),
    ...      Finding("decode", "w", None, False, False, "", d, explanations=(("b:32", "", ""),))]
    >>> _shared_binding(f, [0, 1], "b"), _shared_binding(f[:1] + [f[1]], [0], "c")
    ('b:32', None)
    """
    sets = [{e[0] for e in findings[k].explanations if _name(e[0]) == name} for k in idx]
    shared = set.intersection(*sets) if sets else set()
    if not shared:
        return None
    rank = {key: min(r for k in idx for r, e in enumerate(findings[k].explanations) if e[0] == key)
            for key in shared}
    return min(shared, key=lambda key: (rank[key], key))


def over_params(title: str, params: list[str]) -> str:
    """A title bound to one parameter value, said of all the values its cause holds.

    >>> over_params("U+00A0 read as a space; llama.cpp: keeps it", ["'\\xa0'", "'\\x85'"])
    'U+00A0, U+0085 read as a space; llama.cpp: keeps it'
    >>> over_params("a buffer of 8 bytes; llama.cpp: grows it", ["8", "16"])
    'a buffer of 8 bytes (and the same for each of 2 values: 8, 16); llama.cpp: grows it'
    """
    what, sep, rule = title.partition("; llama.cpp: ")
    chars = _chars(params)
    if chars:  # a code-point title names the code points: "U+00A0, U+0085 read as a space"
        names = [f"U+{ord(c):04X}" for c in chars]
        for name in names:
            if name in what:
                listed = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
                return f"{what.replace(name, listed, 1)}{sep}{rule}"
    values = ", ".join(params[:8]) + (", ..." if len(params) > 8 else "")
    return f"{what} (and the same for each of {len(params)} values: {values}){sep}{rule}"


def _chars(params: list[str]) -> list[str]:
    """The code points a list of parameter reprs names, if every one is a code point or a string
    of them (a variant bound to two code points met side by side).

    >>> _chars(["'\\xa0'", "'\\x85\\xa0'"]), _chars(["8"])
    (['\xa0', '\x85'], [])
    """
    import ast
    out = []
    for p in params:
        try:
            v = ast.literal_eval(p)
        except (ValueError, SyntaxError):
            return []
        if not (isinstance(v, str) and v):
            return []
        out.extend(c for c in v if c not in out)
    return out


def _param_of(key: str) -> str | None:
    return key.split(":", 1)[1] if ":" in key else None


def confirm_elsewhere(findings: list[Finding]) -> None:
    """Give an unexplained finding the explanation it could not be tested on in its own cell
    (:attr:`Finding.unjudged`) where another finding of the same vocab was named by that very
    explanation after its predictions: qwen2's '</s>' left NORMAL shows in a piece cell only on
    that one token, and in the encode and decode cells on fresh inputs. Likewise an explanation
    of every case of the finding whose predictions failed in its own cell, where the port's other
    bugs met them (:attr:`Finding.refuted`): named with those predictions counted. In place.

    >>> from harness.reports.finding import Divergence
    >>> e = ("token_types_not_overridden", "t", "r")
    >>> named = Finding("decode", "v", None, False, False, "", Divergence(0, 0, True, b"", b"x"), explanations=(e,))
    >>> alone = Finding("piece", "v", None, False, False, "", Divergence(0, 0, True, b"", b"x"), unjudged=(e,))
    >>> fs = [named, alone]; confirm_elsewhere(fs); fs[1].diagnosis
    ('token_types_not_overridden',)
    """
    confirmed = {(f.vocab, e[0]) for f in findings for e in f.explanations}
    for k, f in enumerate(findings):
        if not f.explanations and f.unjudged:
            have = tuple(e for e in f.unjudged if (f.vocab, e[0]) in confirmed)
            if have:
                findings[k] = replace(f, explanations=have, unjudged=())
        elif not f.explanations and f.refuted:
            # the port sided with it on most of its predictions here, missing only where another bug met them
            have = tuple(e for e in f.refuted if (f.vocab, e[0]) in confirmed and 0 < e[3][0] <= 2 * e[3][1])
            if have:
                made = tuple(sum(e[3][i] for e in have) for i in (0, 1))
                findings[k] = replace(f, explanations=tuple(e[:3] for e in have), predictions=made, refuted=())


def group_causes(findings: list[Finding]) -> list[Cause]:
    """The run's causes, most divergent cases first (ids in that order). Findings confirmed
    by another cell take its explanation first (:func:`confirm_elsewhere`)."""
    confirm_elsewhere(findings)
    keyed: list[tuple[tuple, list[int]]] = [(("diagnosis", name), idx) for name, idx in _cover(findings)]
    unexplained: dict[tuple, list[int]] = {}
    for k, f in enumerate(findings):
        if not f.explanations:
            unexplained.setdefault(unexplained_key(tuple(f.signature), f.triggers, f.pre_type, f.probed), []).append(k)
    keyed += list(_join_triggered(unexplained).items())
    causes = []
    for key, idx in keyed:
        example = min(idx, key=lambda k: _size(findings[k]))
        params: list = []
        if key[0] == "diagnosis":
            diagnosis = key[1]
            one = _shared_binding(findings, idx, diagnosis)
            if one is not None:  # one value explains every finding: the cause is that binding
                key = ("diagnosis", one)
            _key, title, rule = next(e for e in findings[example].explanations
                                     if (e[0] == one if one is not None else _name(e[0]) == diagnosis))
            params = [_param_of(one)] if one is not None and _param_of(one) is not None else sorted(
                {p for k in idx for e in findings[k].explanations if _name(e[0]) == diagnosis
                 for p in [_param_of(e[0])] if p is not None})
            widened = {p for k in idx for w in findings[k].widened if _name(w) == diagnosis
                       for p in [_param_of(w)] if p is not None}
            params = params + sorted(widened - set(params))
        else:
            edits = {tuple(findings[k].signature)[1:2] for k in idx}
            signature = tuple(findings[example].signature)
            if len(edits) > 1:  # one localised difference met through several edits
                signature = (signature[0], "replaces", *signature[2:])
            if key[2:] == ("adds tokens",) and len({tuple(findings[k].signature)[2:] for k in idx}) > 1:
                signature = (signature[0], "adds", "adds tokens")  # at the start, inside and at the end
            title, rule, diagnosis = unexplained_title(signature), None, None
            if key[2:3] == ("triggered",):
                triggers = sorted({c for k in idx for c in findings[k].triggers})
                title = triggered_title(key[1], key[3], triggers)
        made = [findings[k].predictions for k in idx if findings[k].predictions]
        loci: Counter = Counter()
        for k in idx:
            loci.update(dict((x, n) for x, n in findings[k].loci))
        shows = {c for k in idx if findings[k].probed for c in findings[k].probed[0]}
        not_ = {c for k in idx if findings[k].probed for c in findings[k].probed[1]} - shows
        cause = Cause("", key, title, diagnosis, rule, example, idx,
                      sorted({(findings[k].vocab, findings[k].check, findings[k].flags) for k in idx}),
                      sum(findings[k].cases for k in idx), params,
                      (sum(m[0] for m in made), sum(m[1] for m in made)) if made else (), loci,
                      (tuple(sorted(shows)), tuple(sorted(not_))) if shows or not_ else ())
        for k in idx:
            cause.seconds.update(dict(findings[k].seconds))
        if len(params) > 1:
            cause.title = over_params(title, params)
        causes.append(cause)
    causes.sort(key=lambda c: (-c.cases, c.findings[0]))
    for n, c in enumerate(causes, 1):
        c.id = f"C{n}"
    return causes
