"""The finding model: one divergence in context, and the JSON it travels as.

A :class:`Finding` is one divergence with its context (vocab, flags, text,
port, the pieces of the ids in the window). It round-trips through JSON so
xdist workers can ship it to the controller, which renders every report.

Its JSON (:meth:`Finding.to_json`) is one entry of ``conformance.json``'s
``divergences`` (the whole file's schema is in :mod:`harness.reports.run`)::

    {"check": "golden"|"known"|"encode"|"decode"|"piece"|"crosscheck",
     "vocab": str, "pre_type": str|null, "port": str, "flags": str,
     "add_special": bool, "parse_special": bool,         # encode flags
     "remove_special": bool|null, "unparse_special": bool|null,   # decode (piece: special)
     "text": str, "text_utf8_hex": str,                  # "" for decode and piece
     "index": int,           # first divergent index (a byte index for decode and piece)
     "byte_offset": int,     # offset in the UTF-8 text where the streams part
     "byte_offset_exact": bool,
     "reference_ids": [int], "port_ids": [int],          # decode/piece: the ids given
     "reference_bytes_hex": str, "port_bytes_hex": str,   # decode and piece only
     "pieces": {"<id>": "<hex of llama.cpp's piece>"},
     "port_pieces": {"<id>": "<hex of the port's own piece>"},
     "spans": [[[start, end], ...], [[start, end], ...]], # text bytes per id, both sides
     "signature": [str], "cases": int,                   # reference-side signature; cases of its cause
     "replayed": int,        # of those cases, inputs from the replay store (earlier runs' failures)
     "diagnosis": [str],                                 # the catalogue variants that reproduce it
     "explanations": [{"key", "title", "rule"}],          # each, with its parameter, title and rule
     "predictions": [made, passed],                      # fresh inputs its explanations predicted ([]: none asked)
     "loci": [[str|int, int]],                           # its cases' character or token at the divergence, counted
     "triggers": [str],                                  # unexplained encode: code points that diverge alone
     "probed": [[str], [str]],                           # a code-point cause's class probed: shows it, does not
     "widened": [str],                                   # its variant bound to other values, each for some cases
     "unjudged": [{"key", "title", "rule"}],             # explanations no input of its check could test
     "refuted": [{"key", "title", "rule", "predictions"}], # explanations of every case whose predictions failed here
     "diagnosis_seconds": {str: float},                  # wall s spent on its cause: shrink, diagnose, predict, ...
     "cause": str,                                       # its cause's id (conformance.json's causes)
     "repro": str}           # one-line command printing the same diff

>>> Finding("encode", "v", None, True, False, "x", Divergence(0, 0, True, (1,), (2,))).flags
'add'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from harness.flags import flags_label
from harness.reports.diff import Divergence
from harness.reports.repro import python_command, repro_command

BYTE_CHECKS = ("decode", "piece")  # checks whose divergence indexes bytes, not tokens


@dataclass(frozen=True)
class Finding:
    """One divergence in context. ``pieces`` maps ids in the window to the
    reference's piece (special=True), ``port_pieces`` to the port's own (from its
    ``piece`` op). For "decode" and "piece" the divergence indexes the two
    outputs' bytes and ``decoded_ids`` holds the ids given to both;
    ``remove_special``/``unparse_special`` are their flags (``unparse_special`` is
    ``special`` for a piece). ``cases`` counts the divergent cases of the run
    with this finding's signature (this one included)."""

    check: str
    vocab: str
    pre_type: str | None
    add_special: bool
    parse_special: bool
    text: str
    divergence: Divergence
    port: str = "harness"
    pieces: Mapping[int, bytes] = field(default_factory=dict)
    decoded_ids: tuple[int, ...] = ()
    remove_special: bool | None = None
    unparse_special: bool | None = None
    port_pieces: Mapping[int, bytes] = field(default_factory=dict)
    cases: int = 1
    signature: tuple = ()
    spans: tuple = ()  # ((start, end) per reference id, (start, end) per port id): text bytes
    replayed: int = 0  # of ``cases``, inputs from the replay store; == cases: only the store found it
    # The catalogue variants that reproduce the port's output exactly, most specific first:
    # (key, title, rule), the key naming the variant and its bound parameter, if any.
    explanations: tuple = ()
    # (made, passed): fresh inputs its explanations predicted and the port answered as they
    # do (harness.engine.causes); () when the port was not asked (it went down, or no diagnosis ran).
    predictions: tuple = ()
    # What its cause's cases show at the divergence (harness.engine.signature.locus): llama.cpp's
    # character (encode) or token id (decode, piece) there, counted: ((locus, count), ...).
    loci: tuple = ()
    # An unexplained encode cause's code points on which the port diverges by themselves.
    triggers: tuple = ()
    # A code-point cause's set, probed: (code points that show it, code points that do not).
    probed: tuple = ()
    # Its variant bound to other values (other code points of one table), each explaining some cases.
    widened: tuple = ()
    # Explanations that reproduce it but that no fresh input of its check could test (the variant
    # parts from llama.cpp on this one token alone): named only where another finding confirms them.
    unjudged: tuple = ()
    # Explanations that reproduce every case of its cause but whose predictions failed in its test,
    # ((key, title, rule, (made, passed)), ...): the port's other bugs met them there (a prefix space
    # predicted on 'a-b' by a port that also splits with GPT-2's regex). Named only where another
    # finding of the vocab confirms them, with these predictions counted.
    refuted: tuple = ()
    # Wall seconds the engine spent on its cause in its test: ((what, seconds), ...) for shrink,
    # diagnose, predict and characterise (harness.engine.causes), so a slow catalogue shows.
    seconds: tuple = ()

    @property
    def diagnosis(self) -> tuple[str, ...]:
        """The catalogue names of the variants that explain this finding.

        >>> Finding("decode", "v", None, False, False, "", Divergence(0, 0, True, (1,), (2,)),
        ...         explanations=(("char_read_as_space:'\\xa0'", "t", "r"),)).diagnosis
        ('char_read_as_space',)
        """
        return tuple(key.split(":", 1)[0] for key, _title, _rule in self.explanations)

    @property
    def flags(self) -> str:
        """The flag combination's label: plain, parse, add or add_parse (for decode
        read add as remove_special and parse as unparse_special; for piece, parse as special)."""
        if self.check in BYTE_CHECKS:
            a, p = bool(self.remove_special), bool(self.unparse_special)
        else:
            a, p = self.add_special, self.parse_special
        return flags_label(a, p)

    @property
    def repro(self) -> str:
        """See :func:`repro_command`."""
        if self.check in BYTE_CHECKS:
            return repro_command(self.vocab, "", False, False, self.port, python=python_command(),
                                 ids=self.decoded_ids, remove_special=bool(self.remove_special),
                                 unparse_special=bool(self.unparse_special),
                                 piece=self.check == "piece")
        return repro_command(self.vocab, self.text, self.add_special,
                             self.parse_special, self.port, python=python_command())

    def to_json(self) -> dict:
        """The JSON object documented in the module docstring."""
        d = self.divergence
        obj = {"check": self.check, "vocab": self.vocab, "pre_type": self.pre_type,
               "port": self.port, "flags": self.flags, "add_special": self.add_special,
               "parse_special": self.parse_special, "remove_special": self.remove_special,
               "unparse_special": self.unparse_special, "text": self.text,
               "text_utf8_hex": self.text.encode("utf-8", "surrogatepass").hex(),
               "index": d.index, "byte_offset": d.byte_offset,
               "byte_offset_exact": d.offset_exact, "cases": self.cases, "replayed": self.replayed,
               "signature": list(self.signature), "spans": [list(map(list, side)) for side in self.spans],
               "diagnosis": list(self.diagnosis),
               "explanations": [{"key": k, "title": t, "rule": r} for k, t, r in self.explanations],
               "predictions": list(self.predictions), "loci": [list(x) for x in self.loci],
               "triggers": list(self.triggers), "probed": [list(x) for x in self.probed], "widened": list(self.widened),
               "unjudged": [{"key": k, "title": t, "rule": r} for k, t, r in self.unjudged],
               "refuted": [{"key": k, "title": t, "rule": r, "predictions": list(p)} for k, t, r, p in self.refuted],
               "diagnosis_seconds": dict(self.seconds),
               "pieces": {str(k): v.hex() for k, v in self.pieces.items()},
               "port_pieces": {str(k): v.hex() for k, v in self.port_pieces.items()},
               "repro": self.repro}
        if self.check in BYTE_CHECKS:
            obj["reference_ids"] = obj["port_ids"] = list(self.decoded_ids)
            obj["reference_bytes_hex"] = bytes(d.reference_ids).hex()
            obj["port_bytes_hex"] = bytes(d.port_ids).hex()
        else:
            obj["reference_ids"], obj["port_ids"] = list(d.reference_ids), list(d.port_ids)
        return obj

    @classmethod
    def from_json(cls, obj: dict) -> "Finding":
        """Inverse of :meth:`to_json`.

        >>> f = Finding("encode", "v", None, False, False, "x", Divergence(0, 0, True, (1,), (2,)))
        >>> Finding.from_json(f.to_json()) == f
        True
        """
        if obj["check"] in BYTE_CHECKS:
            ref, port = bytes.fromhex(obj["reference_bytes_hex"]), bytes.fromhex(obj["port_bytes_hex"])
            decoded = tuple(obj["reference_ids"])
        else:
            ref, port, decoded = obj["reference_ids"], obj["port_ids"], ()
        div = Divergence(obj["index"], obj["byte_offset"], obj["byte_offset_exact"],
                         tuple(ref), tuple(port))
        pieces = {int(k): bytes.fromhex(v) for k, v in obj["pieces"].items()}
        own = {int(k): bytes.fromhex(v) for k, v in obj.get("port_pieces", {}).items()}
        return cls(obj["check"], obj["vocab"], obj["pre_type"], obj["add_special"],
                   obj["parse_special"], obj["text"], div, obj["port"], pieces, decoded,
                   obj.get("remove_special"), obj.get("unparse_special"), own, obj.get("cases", 1),
                   tuple(obj.get("signature", ())),
                   tuple(tuple(tuple(span) for span in side) for side in obj.get("spans", ())),
                   replayed=obj.get("replayed", 0),
                   explanations=tuple((e["key"], e["title"], e["rule"]) for e in obj.get("explanations", ())),
                   predictions=tuple(obj.get("predictions", ())),
                   loci=tuple(tuple(x) for x in obj.get("loci", ())),
                   triggers=tuple(obj.get("triggers", ())),
                   probed=tuple(tuple(x) for x in obj.get("probed", ())),
                   widened=tuple(obj.get("widened", ())),
                   unjudged=tuple((e["key"], e["title"], e["rule"]) for e in obj.get("unjudged", ())),
                   refuted=tuple((e["key"], e["title"], e["rule"], tuple(e["predictions"]))
                                 for e in obj.get("refuted", ())),
                   seconds=tuple(obj.get("diagnosis_seconds", {}).items()))


