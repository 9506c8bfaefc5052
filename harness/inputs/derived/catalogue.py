"""What derived vocabs exist at a pin: one per pre name, one per vocab type with no pinned file.

Both lists are read from the pin's own ``src/llama-vocab.cpp`` (``tokenizer_pre == "…"`` and
``tokenizer_model == "…"``), never hard-coded, so a new pin brings its new names along.
Each :class:`Spec` says what it is built from and how (a JSON-able ``recipe``):

* ``derived:<pre>`` for every pre name: a pinned BPE file with ``tokenizer.ggml.pre``
  relabelled. The base is gpt-2 (byte-level, 50,257 tokens: cheap, and its merges make every
  pre type's split visible in the ids), except for pre types that work on raw UTF-8 with
  '▁' for spaces (GEMMA4, SARVAM_MOE: gemma-4's tokens, as model ``gpt2``) and
  ``whitespace``, whose models are ``tokenizer.ggml.model = whitespace`` (the tests' builder).
* ``derived:<model>`` for each vocab type no pinned file has (rwkv, plamo2, hybriddna, test):
  the tests' builders over gpt-2's word pieces. ``none``/``no_vocab`` have no tokenizer
  (llama.cpp's tokenize aborts on LLAMA_VOCAB_TYPE_NONE) and ``whitespace`` is covered by
  ``derived:whitespace``.
* ``derived:<pinned>+<flag>`` (:data:`VARIANTS`): a pinned file with one tokenizer flag the
  converter writes set the other way, or with added tokens, for the llama.cpp paths no
  pinned file's metadata takes (BPE and SPM appending EOS, UGM's user-defined-token trie,
  UGM keeping whitespace runs).

>>> Spec("derived:x", "pre", "gpt-2", {"builder": "relabel"}, "gpt-2 relabelled").label
'derived:x'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

PREFIX = "derived:"
BASE = "gpt-2"
RAW_BASE = "gemma-4"  # tokens with '▁' for spaces, for the pre types that do not byte-encode
RAW_PRE_TYPES = ("GEMMA4", "SARVAM_MOE")
NO_TOKENIZER = ("none", "no_vocab")  # LLAMA_VOCAB_TYPE_NONE: tokenize aborts
COVERED_ELSEWHERE = {"whitespace": "derived:whitespace (pre and model whitespace)"}


@dataclass(frozen=True)
class Spec:
    """One derived vocab: its name, kind ('pre' or 'vocab_type'), base pinned vocab, recipe."""

    label: str
    kind: str
    base: str
    recipe: dict
    description: str

    @property
    def key(self) -> str:
        """The part after ``derived:`` (a pre name or a tokenizer model)."""
        return self.label[len(PREFIX):]


#: label key -> (pinned base, recipe, description). Each flag is one a real model's GGUF sets
#: (the converter writes it from the tokenizer's own config), so each vocab stays faithful.
VARIANTS = {
    "qwen2+add_eos": ("qwen2", {"builder": "keys", "changes": {"tokenizer.ggml.add_eos_token": ["bool", True]}},
                      "qwen2 with tokenizer.ggml.add_eos_token = true (as Qwen3-Embedding's GGUF has): "
                      "BPE's append_eos and its double-EOS warning"),
    "llama-spm+add_eos": ("llama-spm", {"builder": "keys", "changes": {"tokenizer.ggml.add_eos_token": ["bool", True]}},
                          "llama-spm with tokenizer.ggml.add_eos_token = true: SPM appends EOS"),
    "nomic-bert-moe+user_defined": (
        "nomic-bert-moe", {"builder": "add_tokens", "token_type": 4,
                           "tokens": ["<extra_id_0>", "<extra_id_1>", "[toxicity=0]", "\u2581hello\u2581world"]},
        "nomic-bert-moe plus four USER_DEFINED tokens (added tokens, as the converter types them): "
        "UGM's user-defined-token trie"),
    "nomic-bert-moe+keep_whitespace": (
        "nomic-bert-moe", {"builder": "keys", "changes": {"tokenizer.ggml.remove_extra_whitespaces": ["bool", False]}},
        "nomic-bert-moe with tokenizer.ggml.remove_extra_whitespaces = false (a SentencePiece normalizer "
        "that keeps whitespace runs): UGM's per-space escape"),
}


def variant_spec(key: str) -> Spec:
    """The derived vocab ``derived:<key>`` of :data:`VARIANTS`.

    >>> variant_spec("llama-spm+add_eos").base
    'llama-spm'
    """
    base, recipe, what = VARIANTS[key]
    return Spec(PREFIX + key, "variant", base, recipe, what)


def source_names(tree: Path) -> tuple[list[str], list[str]]:
    """(pre names, tokenizer models) that the pin's ``src/llama-vocab.cpp`` compares against."""
    body = (Path(tree) / "src" / "llama-vocab.cpp").read_text(encoding="utf-8", errors="replace")
    pres = sorted(set(re.findall(r'tokenizer_pre\s*==\s*"([^"]+)"', body)))
    models = sorted(set(re.findall(r'tokenizer_model\s*==\s*"([^"]+)"', body)))
    return pres, models


def _pinned_models(pinned: dict[str, Path]) -> set[str]:
    from harness.tokenizer.gguf import GGUFReader
    return {GGUFReader(p).get("tokenizer.ggml.model") for p in pinned.values()}


def pre_spec(pre: str) -> Spec:
    """The derived vocab for one pre name (see the module docstring for the base)."""
    from harness.errors import UnsupportedPreTokenizer
    from harness.tokenizer.gguf import GGUFValueType as T  # noqa: F401  (recipe values are plain)
    from harness.tokenizer.pretypes import pre_type_of
    if pre == "whitespace":
        return Spec(PREFIX + pre, "pre", BASE, {"builder": "whitespace"},
                    f"{BASE} as tokenizer.ggml.model = pre = 'whitespace'")
    try:
        raw = pre_type_of(pre) in RAW_PRE_TYPES
    except UnsupportedPreTokenizer:
        raw = False  # the harness does not know it: the run will say so (an error cell)
    base = RAW_BASE if raw else BASE
    changes = {"tokenizer.ggml.pre": pre}
    if raw:
        changes["tokenizer.ggml.model"] = "gpt2"
    what = ", ".join(f"{k} = {v!r}" for k, v in changes.items())
    return Spec(PREFIX + pre, "pre", base, {"builder": "relabel", "changes": changes}, f"{base} with {what}")


def model_spec(model: str) -> Spec:
    """The derived vocab for one tokenizer model with no pinned file."""
    recipes = {
        "rwkv": ({"builder": "rwkv"}, f"RWKV world-style vocab of {BASE}'s word pieces (raw bytes, escaped)"),
        "plamo2": ({"builder": "plamo2", "limit": 20000},
                   f"PLaMo-2 vocab: specials, 256 byte tokens, {BASE}'s first 20,000 UTF-8 word pieces, seeded scores"),
        "hybriddna": ({"builder": "hybriddna"}, f"{BASE} as model 'hybriddna' plus <dna>, </dna>, <oov> and k-mers"),
        "test": ({"builder": "relabel", "changes": {"tokenizer.ggml.model": "test"}},
                 f"{BASE} as tokenizer.ggml.model = 'test' (5-byte hash chunks)"),
    }
    recipe, what = recipes[model]
    return Spec(PREFIX + model, "vocab_type", BASE, recipe, what)


def catalogue(tree: Path, pinned: dict[str, Path]) -> dict[str, Spec]:
    """Every derived vocab of the pin whose source tree is ``tree``, by label (sorted)."""
    from harness.errors import HarnessError
    pres, models = source_names(tree)
    out = {PREFIX + p: pre_spec(p) for p in pres}
    have = _pinned_models(pinned)
    for m in models:
        if m in have or m in NO_TOKENIZER or m in COVERED_ELSEWHERE:
            continue
        spec = model_spec(m) if m in ("rwkv", "plamo2", "hybriddna", "test") else None
        if spec is None:
            raise HarnessError(f"{tree}/src/llama-vocab.cpp knows tokenizer model {m!r}, which no pinned file "
                               "has and no builder in harness/inputs/derived/builders.py makes: add one")
        if spec.label in out:
            raise HarnessError(f"derived vocab {spec.label!r} would be both a pre name and a tokenizer model")
        out[spec.label] = spec
    for key, (base, _, _) in VARIANTS.items():
        if base in pinned:  # a pin without the base file has no such variant
            out[PREFIX + key] = variant_spec(key)
    return dict(sorted(out.items()))
