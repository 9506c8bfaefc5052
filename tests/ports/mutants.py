"""Deliberately broken ports: the harness proves it catches real bugs.

Each mutant wraps a correct port (llama.cpp in process) and changes behaviour
only where the named bug would. Three ways to build one:
- llama.cpp on a copy of the vocab whose metadata lacks the feature
  (``tokenizer.ggml.pre`` swapped for one that differs only by that flag);
- a transform of the input text, the flags, or the output;
- a word-level emulation of a broken pre-tokenizer (Python ``regex`` with the
  bug) plus a plain BPE over the vocab's merges, used only on texts where the
  broken split differs from the correct one.

``PORT=py:tests.ports.mutants:NAME`` selects one, from the repository root (a
Python adapter: the module's ``NAME`` is a factory of the vocab path); they are the
harness's self-test subjects, not part of the installed package. :data:`MUTANTS`
maps each name to the vocab it is meant for and a one-line description.

>>> sorted(MUTANTS)[:3]
['ascii_whitespace', 'bos_qwen2', 'case_sensitive_contractions']
"""

from __future__ import annotations

import tempfile
import unicodedata
from functools import lru_cache
from pathlib import Path

from harness.errors import HarnessError

# name -> (vocab the bug shows on, description). Vocab "gpt-2+mask" is derived
# from gpt-2 by derived_lstrip_vocab (no pinned BPE/SPM vocab has an LSTRIP token).
MUTANTS = {
    "ignore_merges_missing": ("llama-bpe", "LLAMA3's ignore_merges not honoured (BPE always merges)"),
    "ascii_whitespace": ("qwen2", "pre-tokenizer \\s matches ASCII whitespace only (Go regexp)"),
    "digit_grouping": ("gpt-2", "digits split one by one (\\p{N}) where GPT2 groups ' ?\\p{N}+'"),
    "case_sensitive_contractions": ("qwen2", "'s 't 're ... matched case-sensitively"),
    "bos_qwen2": ("qwen2", "BOS prepended with add_special although qwen2 has add_bos=false"),
    "control_split": ("llama-spm", "CONTROL tokens split out of text even with parse_special off"),
    "lstrip_ignored": ("gpt-2+mask", "a token's LSTRIP attribute ignored (spaces before <mask> kept)"),
    "nfc_input": ("llama-bpe", "input NFC-normalised before tokenizing"),
    "decode_drops_leading_space": ("qwen2", "decode drops a leading space of the output"),
    "platform_unicode": ("bert-bge", "WPM words split with the regex module's Unicode (18.0) "
                                     "categories, not llama.cpp's 15.1 tables"),
}


class Wrapped:
    """A port that delegates everything to ``inner``; mutants override one method."""

    def __init__(self, inner):
        self.inner = inner

    def encode(self, text, *, add_special=False, parse_special=False):
        return self.inner.encode(text, add_special=add_special, parse_special=parse_special)

    def decode(self, ids, *, remove_special=False, unparse_special=False):
        return self.inner.decode(ids, remove_special=remove_special, unparse_special=unparse_special)

    def token_to_piece(self, id, *, special=False):
        return self.inner.token_to_piece(id, special=special)

    @property
    def n_vocab(self):
        return self.inner.n_vocab


class EncodeWith(Wrapped):
    """Encode with another port (llama.cpp on a rewritten vocab); decode as ``inner``."""

    def __init__(self, inner, encoder):
        super().__init__(inner)
        self.encoder = encoder

    def encode(self, text, *, add_special=False, parse_special=False):
        return self.encoder.encode(text, add_special=add_special, parse_special=parse_special)


class BosAlways(Wrapped):
    """Prepends the vocab's BOS id whenever add_special is set."""

    def __init__(self, inner, bos: int):
        super().__init__(inner)
        self.bos = bos

    def encode(self, text, *, add_special=False, parse_special=False):
        ids = self.inner.encode(text, add_special=add_special, parse_special=parse_special)
        return [self.bos] + ids if add_special and ids[:1] != [self.bos] else ids


class ParseSpecialAlways(Wrapped):
    """Splits CONTROL texts out of raw text regardless of parse_special."""

    def encode(self, text, *, add_special=False, parse_special=False):
        return self.inner.encode(text, add_special=add_special, parse_special=True)


class NfcInput(Wrapped):
    """NFC-normalises the text first (a 'helpful' port normalising input)."""

    def encode(self, text, *, add_special=False, parse_special=False):
        return self.inner.encode(unicodedata.normalize("NFC", text), add_special=add_special,
                                 parse_special=parse_special)


class DecodeDropsLeadingSpace(Wrapped):
    """Strips one leading space from every decode (SPM's rule applied everywhere)."""

    def decode(self, ids, *, remove_special=False, unparse_special=False):
        out = self.inner.decode(ids, remove_special=remove_special, unparse_special=unparse_special)
        return out[1:] if out[:1] == b" " else out


class PlatformUnicodeWords(Wrapped):
    """A WPM (BERT) port whose pre-processing asks its platform, with a newer Unicode
    (the ``regex`` module's, 18.0), whether a code point is punctuation, a mark or a
    control: code points llama.cpp's 15.1 tables leave unassigned then split, drop or
    stay differently. Emulated at word level: the words come from the harness's exact
    ``preprocess`` with the platform's verdict for those code points, and each word is
    tokenized by llama.cpp itself; texts whose words do not change are llama.cpp's.
    """

    def __init__(self, inner, vocab_path):
        from harness.tokenizer.vocab import Vocab
        super().__init__(inner)
        v = Vocab.from_gguf(vocab_path)
        self.lowercase, self.strip_accents = v.lowercase, v.strip_accents
        self.platform = _platform_fates(self.lowercase, self.strip_accents)

    def encode(self, text, *, add_special=False, parse_special=False):
        from harness.tokenizer.algorithms.wpm import preprocess
        ref = self.inner.encode(text, add_special=add_special, parse_special=parse_special)
        data = text.encode("utf-8", "surrogatepass")
        good = preprocess(data, self.lowercase, self.strip_accents)
        bad = preprocess(data, self.lowercase, self.strip_accents, cache=dict(self.platform))
        if good == bad or (parse_special and "[" in text):
            return ref
        ids = [i for w in bad for i in self.inner.encode(w.decode("utf-8", "replace"))]
        body = self.inner.encode(text, add_special=False, parse_special=parse_special)
        # Keep what add_special puts around the text ([CLS] ... [SEP]) as llama.cpp has it.
        cut = next((k for k in range(len(ref) - len(body) + 1) if ref[k:k + len(body)] == body), 0)
        return ref[:cut] + ids + ref[cut + len(body):]


@lru_cache(maxsize=None)
def _platform_fates(lowercase: bool, strip_accents: bool) -> tuple:
    """(cpt, wpm fate) for every code point unassigned for llama.cpp but assigned in the
    regex module's Unicode, classified with the regex module's general category."""
    import regex

    from harness.tokenizer.algorithms.wpm import APPEND, DROP, SINGLE
    from harness.inputs.drift import CLASSES
    out = []
    newer = [rs for name, rs in CLASSES.items() if name.startswith("assigned_only_in_regex:")]
    for a, b in (r for rs in newer for r in rs):
        for cp in range(a, b + 1):
            c = chr(cp)
            data = c.encode("utf-8")
            if regex.match(r"\p{P}", c):
                out.append((cp, (SINGLE, data)))
            elif regex.match(r"\p{C}", c) or (strip_accents and regex.match(r"\p{M}", c)):
                out.append((cp, (DROP, b"")))
            else:
                out.append((cp, (APPEND, data)))
    return tuple(out)


def _rewritten(path: str | Path, tag: str, changes: dict) -> Path:
    """A cached copy of a vocab with some metadata changed (atomic write: xdist-safe)."""
    from harness.tokenizer.gguf.writer import rewrite_metadata
    out = Path(tempfile.gettempdir()) / "llama-conformance-mutants" / f"{Path(path).stem}-{tag}.gguf"
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.is_file() or out.stat().st_mtime < Path(path).stat().st_mtime:
        rewrite_metadata(path, out, changes)
    return out


def _string(value: str) -> tuple:
    from harness.tokenizer.gguf.keys import GGUFValueType
    return (GGUFValueType.STRING, value)


def derived_lstrip_vocab(gpt2_path: str | Path) -> Path:
    """gpt-2 plus a CONTROL ``<mask>`` token, with pre ``jina-v2-es`` (GPT2 split), so
    llama.cpp gives ``<mask>`` LSTRIP: the vocab the lstrip_ignored mutant is checked on.
    """
    import numpy as np

    from harness.tokenizer.gguf import GGUFReader
    from harness.tokenizer.gguf.keys import GGUFValueType as T
    r = GGUFReader(gpt2_path)
    tokens = list(r.get("tokenizer.ggml.tokens")) + [b"<mask>"]
    types = np.append(np.asarray(r.get("tokenizer.ggml.token_type"), dtype=np.int32), 3)
    changes = {"tokenizer.ggml.tokens": (T.ARRAY, tokens, T.STRING),
               "tokenizer.ggml.token_type": (T.ARRAY, types, T.INT32),
               "tokenizer.ggml.pre": _string("jina-v2-es")}
    if r.get("tokenizer.ggml.scores") is not None:
        scores = np.append(np.asarray(r.get("tokenizer.ggml.scores"), dtype=np.float32), 0.0)
        changes["tokenizer.ggml.scores"] = (T.ARRAY, scores, T.FLOAT32)
    return _rewritten(gpt2_path, "mask", changes)


def _reference(path):
    from reference.inproc import load_reference
    return load_reference(path)


def make_mutant(name: str, vocab_path: str | Path, reference):
    """The mutant port ``name`` for one vocab, wrapping ``reference``."""
    from tests.ports.splitbug import SplitBugPort
    from harness.tokenizer.gguf import GGUFReader
    from harness.tokenizer.gguf.keys import GGUFValueType as T
    if name not in MUTANTS:
        raise HarnessError(f"unknown mutant {name!r}; known: {', '.join(sorted(MUTANTS))}")
    if name == "ignore_merges_missing":
        # DBRX runs LLAMA3's splitter without ignore_merges (and without add_bos: put it back).
        path = _rewritten(vocab_path, "dbrx-bos", {"tokenizer.ggml.pre": _string("dbrx"),
                                                   "tokenizer.ggml.add_bos_token": (T.BOOL, True)})
        return EncodeWith(reference, _reference(path))
    if name == "digit_grouping":
        # STARCODER = GPT2's splitter after a \p{N} split, same flags; decode stays the original's.
        path = _rewritten(vocab_path, "starcoder", {"tokenizer.ggml.pre": _string("starcoder")})
        return EncodeWith(reference, _reference(path))
    if name == "lstrip_ignored":
        # Same vocab under the plain gpt-2 pre: no LSTRIP source, otherwise identical.
        path = _rewritten(vocab_path, "nolstrip", {"tokenizer.ggml.pre": _string("gpt-2")})
        return EncodeWith(reference, _reference(path))
    if name in ("ascii_whitespace", "case_sensitive_contractions"):
        return SplitBugPort(reference, vocab_path, name)
    if name == "platform_unicode":
        return PlatformUnicodeWords(reference, vocab_path)
    if name == "bos_qwen2":
        bos = GGUFReader(vocab_path).get("tokenizer.ggml.bos_token_id", 11)
        return BosAlways(reference, int(bos))
    return {"control_split": ParseSpecialAlways, "nfc_input": NfcInput,
            "decode_drops_leading_space": DecodeDropsLeadingSpace}[name](reference)


@lru_cache(maxsize=None)
def mutant_vocab(name: str) -> str:
    """The vocab (name or derived .gguf path) a mutant is meant to be checked on."""
    target = MUTANTS[name][0]
    if target == "gpt-2+mask":
        from reference.vocabs import vocab_path
        return str(derived_lstrip_vocab(vocab_path("gpt-2")))
    return target


def __getattr__(name: str):
    """``NAME`` -> a factory ``(vocab_path) -> port`` (what ``PORT=py:tests.ports.mutants:NAME`` calls)."""
    if name in MUTANTS:
        return lambda vocab_path: make_mutant(name, vocab_path, _reference(vocab_path))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}; mutants: {', '.join(sorted(MUTANTS))}")


__all__ = ["MUTANTS", "make_mutant", "mutant_vocab", "derived_lstrip_vocab", "Wrapped"]
