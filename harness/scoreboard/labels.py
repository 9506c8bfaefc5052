"""The labelled bugs of a real port (``tests/data/port-bugs/<port>.json``), and their ``match``.

A label file holds the root causes a person found by reading a port's source (the schema is
in ``tests/data/port-bugs/README.md``). :func:`load_labels` reads and checks one: a missing
or malformed key raises :class:`LabelError` naming the file, the bug and the key. A bug's
``match`` is a predicate on one finding of ``conformance.json`` (:func:`matches`); the
benchmark gives a cause to the first bug, in file order, whose match holds on it
(:func:`first_bug`).

Token types (``match.token_types``) are the GGUF's own ``tokenizer.ggml.token_type`` values,
read through the harness's reader (:class:`TokenTypes`), not the attributes llama.cpp's load
overrides afterwards: the label names what the file says a token is.

>>> import json, tempfile
>>> p = Path(tempfile.mkdtemp()) / "toy.json"
>>> _ = p.write_text(json.dumps({"port": "toy", "vocabs": ["v"], "bugs": [{"id": "nbsp", "vocabs": ["v"],
...     "diagnoses": [], "match": {"checks": ["encode"], "text": "\\\\xa0"}}]}))
>>> labels = load_labels(p)
>>> ex = {"check": "known", "vocab": "v", "flags": "plain", "text": "a\\xa0b", "reference_ids": [1], "port_ids": [2]}
>>> first_bug(labels.bugs, ex, TokenTypes())
'nbsp'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import regex

from harness.engine.signature import FAMILY, TOKEN_KINDS, piece_edit
from harness.errors import HarnessError
from harness.flags import LABELS

#: The keys a ``match`` may hold (tests/data/port-bugs/README.md).
MATCH_KEYS = ("checks", "vocabs", "flags", "text", "ids", "id_range", "token_types", "invalid_utf8", "edits")
#: The edits ``match.edits`` takes: from llama.cpp's bytes to the port's (signature.piece_edit).
EDITS = ("leading space dropped", "leading space added", "empty", "invalid UTF-8 replaced", "byte as its text",
         "bytes added", "bytes dropped", "other bytes")
#: The check families a bug shows in (golden and known are encode checks).
FAMILIES = ("encode", "decode", "piece")
#: The GGUF token type names ``match.token_types`` takes.
TOKEN_TYPES = tuple(TOKEN_KINDS.values())


class LabelError(HarnessError):
    """A label file of tests/data/port-bugs/ is unreadable or malformed; the message names
    the file and the key."""


@dataclass(frozen=True)
class Bug:
    """One labelled root cause: its id, where it shows, the diagnoses that name it, its match."""

    id: str
    vocabs: tuple[str, ...]
    diagnoses: tuple[str, ...]
    match: dict
    pattern: regex.Pattern | None = None  # match["text"], compiled (V1)
    summary: str = ""


@dataclass(frozen=True)
class Labels:
    """One port's label file."""

    path: Path
    port: str
    vocabs: tuple[str, ...]
    bugs: tuple[Bug, ...]
    # What the scoreboard's adapter, not the package, does (``adapter_effects``): a cause on one
    # of them is the adapter's, counted apart from the package's bugs.
    adapter_effects: tuple[Bug, ...] = ()


def _strings(value, where: str, choices: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """A list of strings (from ``choices`` when given), or LabelError saying what ``where`` needs.

    >>> _strings(["a"], "x")
    ('a',)
    """
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise LabelError(f"{where} must be a list of strings, not {value!r}")
    bad = [v for v in value if choices is not None and v not in choices]
    if bad:
        raise LabelError(f"{where}: unknown value(s) {', '.join(map(repr, bad))}; it takes {', '.join(choices)}")
    return tuple(value)


def _ints(value, where: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise LabelError(f"{where} must be a list of token ids (integers), not {value!r}")
    return value


def _check_match(match, where: str) -> regex.Pattern | None:
    """Check one ``match`` object; its ``text`` pattern compiled (or None)."""
    if not isinstance(match, dict) or not match:
        raise LabelError(f"{where} must be a non-empty object with some of {', '.join(MATCH_KEYS)}")
    unknown = sorted(set(match) - set(MATCH_KEYS))
    if unknown:
        raise LabelError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; a match takes "
                         f"{', '.join(MATCH_KEYS)}")
    for key, choices in (("checks", FAMILIES), ("vocabs", None), ("flags", LABELS), ("token_types", TOKEN_TYPES),
                         ("edits", EDITS)):
        if key in match:
            _strings(match[key], f"{where}.{key}", choices)
    if "invalid_utf8" in match and match["invalid_utf8"] is not True:
        raise LabelError(f"{where}.invalid_utf8 must be true (leave it out otherwise), not {match['invalid_utf8']!r}")
    if "ids" in match:
        _ints(match["ids"], f"{where}.ids")
    if "id_range" in match:
        lo_hi = _ints(match["id_range"], f"{where}.id_range")
        if len(lo_hi) != 2 or lo_hi[0] > lo_hi[1]:
            raise LabelError(f"{where}.id_range must be [lo, hi] with lo <= hi, not {lo_hi!r}")
    if "text" not in match:
        return None
    if not isinstance(match["text"], str):
        raise LabelError(f"{where}.text must be a regex pattern (a string), not {match['text']!r}")
    try:
        return regex.compile(match["text"], regex.V1)
    except regex.error as e:
        raise LabelError(f"{where}.text: {match['text']!r} is not a regex (V1) pattern: {e}") from None


def _bug(obj, where: str) -> Bug:
    """One entry of ``bugs``, checked."""
    if not isinstance(obj, dict):
        raise LabelError(f"{where} must be an object (id, vocabs, diagnoses, match, ...)")
    for key in ("id", "vocabs", "diagnoses", "match"):
        if key not in obj:
            raise LabelError(f"{where}: missing key {key!r} (tests/data/port-bugs/README.md lists the fields)")
    if not isinstance(obj["id"], str) or not obj["id"]:
        raise LabelError(f"{where}.id must be a non-empty string, not {obj['id']!r}")
    where = f"{where} ({obj['id']})"
    pattern = _check_match(obj["match"], f"{where}.match")
    return Bug(obj["id"], _strings(obj["vocabs"], f"{where}.vocabs"),
               _strings(obj["diagnoses"], f"{where}.diagnoses"), obj["match"], pattern,
               str(obj.get("summary", "")))


def load_labels(path: Path) -> Labels:
    """One label file, checked; every error names the file and the key."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise LabelError(f"{path}: cannot read the label file ({e}); it must be a JSON object "
                         "(tests/data/port-bugs/README.md)") from None
    if not isinstance(data, dict):
        raise LabelError(f"{path}: the label file must be a JSON object with port, vocabs and bugs")
    for key in ("port", "vocabs", "bugs"):
        if key not in data:
            raise LabelError(f"{path}: missing key {key!r} (tests/data/port-bugs/README.md lists the fields)")
    if data["port"] != path.stem:
        raise LabelError(f"{path}: key 'port' is {data['port']!r}; it must be the file's name, {path.stem!r}")
    if not isinstance(data["bugs"], list):
        raise LabelError(f"{path}: key 'bugs' must be a list of bug objects")
    bugs = tuple(_bug(b, f"{path}: bugs[{k}]") for k, b in enumerate(data["bugs"]))
    ids = [b.id for b in bugs]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise LabelError(f"{path}: bug id(s) {', '.join(map(repr, twice))} used twice; ids must be unique")
    effects = data.get("adapter_effects", [])
    if not isinstance(effects, list):
        raise LabelError(f"{path}: key 'adapter_effects' must be a list of objects like bugs'")
    adapter = tuple(_bug(b, f"{path}: adapter_effects[{k}]") for k, b in enumerate(effects))
    return Labels(path, data["port"], _strings(data["vocabs"], f"{path}: key 'vocabs'"), bugs, adapter)


class TokenTypes:
    """Each vocab's GGUF token types by id (``normal``, ``control``, ...), read once per vocab.

    ``resolve`` maps a vocab name to its file (default: pinned and derived vocabs,
    :func:`harness.inputs.derived.resolve`).

    >>> import tempfile
    >>> from harness.tokenizer.gguf import GGUFValueType as T
    >>> from harness.tokenizer.gguf.writer import write_gguf
    >>> gguf = Path(tempfile.mkdtemp()) / "v.gguf"
    >>> write_gguf(gguf, {"tokenizer.ggml.tokens": (T.ARRAY, [b"a", b"<0x41>"], T.STRING),
    ...                   "tokenizer.ggml.token_type": (T.ARRAY, [1, 6], T.INT32)})
    >>> TokenTypes(resolve=lambda name: gguf).type_of("v", 1), TokenTypes(resolve=lambda name: gguf).type_of("v", 9)
    ('byte', None)
    """

    def __init__(self, resolve=None):
        self._resolve = resolve
        self._types: dict[str, list] = {}

    def of(self, vocab: str) -> list:
        """Every token's type name (None for a code outside the table)."""
        if vocab not in self._types:
            self._types[vocab] = self._read(vocab)
        return self._types[vocab]

    def _read(self, vocab: str) -> list:
        from harness.tokenizer.gguf import GGUFReader, Keys
        if self._resolve is None:
            from harness.inputs.derived import resolve
            self._resolve = resolve
        with GGUFReader(self._resolve(vocab)) as reader:
            codes = reader.get(Keys.Tokenizer.TOKEN_TYPE)
            n = len(reader.get(Keys.Tokenizer.TOKENS) or [])
        # llama.cpp reads a missing token_type array as every token normal (src/llama-vocab.cpp).
        return ["normal"] * n if codes is None else [TOKEN_KINDS.get(int(c)) for c in codes]

    def type_of(self, vocab: str, token_id: int) -> str | None:
        types = self.of(vocab)
        return types[token_id] if 0 <= token_id < len(types) else None


def example_ids(ex: dict) -> list[int]:
    """A finding's ids: the ids given (decode, piece), or both sides' ids (encode).

    >>> example_ids({"check": "encode", "reference_ids": [1, 2], "port_ids": [1, 3]})
    [1, 2, 3]
    """
    ids = list(ex.get("reference_ids") or [])
    return ids + [i for i in ex.get("port_ids") or [] if i not in ids]


def _invalid_utf8(ex: dict) -> bool:
    """Whether a decode or piece finding's llama.cpp bytes are not valid UTF-8.

    >>> _invalid_utf8({"reference_bytes_hex": "ec9d"}), _invalid_utf8({"reference_bytes_hex": "61"}), _invalid_utf8({})
    (True, False, False)
    """
    try:
        bytes.fromhex(ex.get("reference_bytes_hex") or "").decode("utf-8")
    except UnicodeDecodeError:
        return True
    except ValueError:
        return False
    return False


def _edit(ex: dict) -> str | None:
    """The edit from a decode or piece finding's llama.cpp bytes to the port's (None for encode).

    >>> _edit({"reference_bytes_hex": "497473", "port_bytes_hex": "20497473"}), _edit({"text": "a"})
    ('leading space added', None)
    """
    if "reference_bytes_hex" not in ex or "port_bytes_hex" not in ex:
        return None
    return piece_edit(bytes.fromhex(ex["reference_bytes_hex"]), bytes.fromhex(ex["port_bytes_hex"]))


def matches(bug: Bug, ex: dict, token_types: TokenTypes) -> bool:
    """Does every key of the bug's match hold on finding ``ex``? (token types are read last:
    they open the vocab's file.)"""
    m = bug.match
    if "checks" in m and FAMILY.get(ex.get("check"), ex.get("check")) not in m["checks"]:
        return False
    if "vocabs" in m and ex.get("vocab") not in m["vocabs"]:
        return False
    if "flags" in m and ex.get("flags") not in m["flags"]:
        return False
    if bug.pattern is not None and not bug.pattern.search(ex.get("text") or ""):
        return False
    if m.get("invalid_utf8") and not _invalid_utf8(ex):
        return False
    if "edits" in m and _edit(ex) not in m["edits"]:
        return False
    ids = example_ids(ex)
    if "ids" in m and not set(ids) & set(m["ids"]):
        return False
    if "id_range" in m and not any(m["id_range"][0] <= i <= m["id_range"][1] for i in ids):
        return False
    if "token_types" in m:
        return any(token_types.type_of(ex["vocab"], i) in m["token_types"] for i in ids)
    return True


def first_bug(bugs, ex: dict, token_types: TokenTypes, diagnosis: str | None = None) -> str | None:
    """The id of the first bug whose match holds on ``ex``, or None; of several, the first
    that ``diagnosis`` names (a minimal example can show two bugs at once, as candle's "a" on
    llama-bpe: no BOS and a space put before it; the cause named for one of them is that
    one's)."""
    held = [b for b in bugs if matches(b, ex, token_types)]
    named = [b for b in held if diagnosis is not None and diagnosis in b.diagnoses]
    pick = named or held
    return pick[0].id if pick else None


def characterised_set(cause: dict, findings: list[dict]) -> tuple[set[str], set[tuple[str, int]]]:
    """What an unexplained cause's characterisation names: the code points its encode findings
    diverge on by themselves (their ``triggers``), and the ``(vocab, id)`` tokens its piece
    findings touch. Both empty for a cause characterised by neither.

    >>> fs = [{"check": "encode", "vocab": "v", "triggers": ["\uff08"]}, {"check": "piece", "vocab": "v", "loci": [[7, 2]]}]
    >>> characterised_set({"findings": [0, 1]}, fs)
    ({'（'}, {('v', 7)})
    """
    chars: set[str] = set()
    ids: set[tuple[str, int]] = set()
    for k in cause.get("findings", []):
        if not 0 <= k < len(findings):
            continue
        f = findings[k]
        chars.update(c for c in f.get("triggers") or [] if isinstance(c, str))
        if f.get("check") == "piece":
            ids.update((f["vocab"], x) for x, _n in f.get("loci") or [] if isinstance(x, int))
    return chars, ids


def names_set(bug: Bug, chars: set[str], ids: set[tuple[str, int]], token_types: TokenTypes) -> bool:
    """Does a characterisation name the bug's set: is every code point it names one the bug's
    ``match.text`` finds, or every token one of its ``ids``, ``id_range`` or ``token_types``?
    A bug whose match names no set of either kind is never characterised.

    >>> b = Bug("p", ("v",), (), {"text": r"[\\p{P}--\\p{ASCII}]"}, regex.compile(r"[\\p{P}--\\p{ASCII}]", regex.V1))
    >>> names_set(b, {"\uff08", "\u2019"}, set(), TokenTypes()), names_set(b, {"\uff08", "a"}, set(), TokenTypes())
    (True, False)
    """
    m = bug.match
    if chars and bug.pattern is not None:
        return all(bug.pattern.search(c) for c in chars)
    if ids and any(k in m for k in ("ids", "id_range", "token_types")):
        def holds(vocab, i):
            return (("ids" not in m or i in m["ids"])
                    and ("id_range" not in m or m["id_range"][0] <= i <= m["id_range"][1])
                    and ("token_types" not in m or token_types.type_of(vocab, i) in m["token_types"]))
        return all(holds(v, i) for v, i in ids)
    return False
