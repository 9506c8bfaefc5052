"""Adversarial texts derived from one vocab's own structure, computed when it loads.

A port reads the vocab and re-implements llama.cpp's use of it; its bugs hide
where the vocab is unusual. Each family below is a tuple of texts sorted
shortest first (so a failing index shrinks toward the shortest text), capped
at ``CAP`` texts, and empty when the vocab has nothing of the kind:

- ``unmerged_tokens`` (BPE): tokens that a plain merge loop over their own text
  does not produce as one token (844 on llama-bpe); under LLAMA3-style
  ``ignore_merges`` llama.cpp takes the whole word when it is a token
  (" Việt" on llama-bpe), a port that always merges does not.
- ``merge_ties`` (BPE): ``a+a+a`` for a merge ``(a, a)`` and ``a+b+a`` when both
  ``(a, b)`` and ``(b, a)`` merge: the leftmost of equal-rank pairs must win.
- ``score_ties`` (SPM/UGM): two tokens with the same score that overlap by one
  character (``x + y[1:]``): which bigram wins is llama.cpp's tie rule.
- ``odd_tokens``: tokens holding an inner space, a newline/tab/CR, digits glued
  to letters, or letters of two scripts.
- ``special_overlaps``: special texts that are prefixes of other special texts
  (both, the longer one cut short, and the two glued), texts where one special's
  end overlaps another's start, and normal tokens containing a user-defined text.
- ``byte_fallback`` (SPM/UGM/WPM): characters that are not tokens (byte fallback
  or UNK) alone, after a space, and glued to letters.
- ``tag_pairs``: for each ``<name>`` token whose ``</name>`` is a token too (``<think>``,
  ``<tool_call>``, hybriddna's ``<dna>``): the pair around short contents, and the
  opening tag left unclosed. Tokenizers that treat tagged spans on their own (hybriddna's
  k-mers) are only reached through both tags in one text.

>>> decode_symbols("ĠViá»ĩt", "gpt2")
' Việt'
>>> sorted_texts(["bb", "a", "", "bb"])
('a', 'bb')
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from functools import lru_cache
from pathlib import Path

__all__ = ["FAMILIES", "CAP", "vocab_adversarial", "compute", "decode_symbols", "sorted_texts"]

FAMILIES = ("unmerged_tokens", "merge_ties", "score_ties", "odd_tokens", "special_overlaps",
            "byte_fallback", "tag_pairs")
CAP = 4000
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED = 1, 2, 3, 4
_VERSION = 3  # bump when a family changes: the disk cache is keyed by it


def _byte_decoder() -> dict[str, int]:
    from harness.inputs.wordbpe import byte_encoder
    return {c: b for b, c in byte_encoder().items()}


_BYTE_DECODER = _byte_decoder()


def decode_symbols(token: str, model: str) -> str | None:
    """A token's text as the input text that holds it; None if it is not valid UTF-8.

    >>> decode_symbols("▁the", "llama"), decode_symbols("##ing", "bert")
    (' the', 'ing')
    """
    if model == "gpt2":
        if all(c in _BYTE_DECODER for c in token):
            try:
                return bytes(_BYTE_DECODER[c] for c in token).decode("utf-8")
            except UnicodeDecodeError:
                return None
        return token  # a BPE vocab without the byte encoding
    if model == "bert":
        return token[2:] if token.startswith("##") else token
    return token.replace("\u2581", " ")


def sorted_texts(texts) -> tuple[str, ...]:
    """Distinct non-empty texts, shortest first, at most CAP."""
    return tuple(sorted({t for t in texts if t}, key=lambda t: (len(t), t))[:CAP])


@lru_cache(maxsize=None)
def _script(c: str) -> str:
    try:
        return unicodedata.name(c).split()[0]
    except ValueError:
        return "?"


def _odd(text: str) -> bool:
    """Inner space, newline/tab/CR, digits with letters, or letters of two scripts."""
    if " " in text.strip(" ") or any(c in text for c in "\n\t\r"):
        return True
    letters = [c for c in text if c.isalpha()]
    if letters and any(c.isdigit() for c in text):
        return True
    return not text.isascii() and len({_script(c) for c in letters}) > 1


def _unmerged(tokens, types, merges, model) -> list[str]:
    from harness.inputs.wordbpe import bpe_word
    ranks: dict[tuple[str, str], int] = {}
    for rank, m in enumerate(merges):
        cut = m.find(" ", 1)  # as llama.cpp: the separator is the first space after position 0
        ranks.setdefault((m[:cut], m[cut + 1:]), rank)
    out = []
    for t, ty in zip(tokens, types):
        # One symbol per character of the byte-encoded text, merged lowest rank first.
        if ty == _NORMAL and len(t) > 1 and bpe_word(list(t), ranks) != [t]:
            text = decode_symbols(t, model)
            if text:
                out.append(text)
                if len(out) >= CAP:
                    break
    return out


def _merge_ties(merges, model) -> list[str]:
    pairs = set()
    for m in merges:
        cut = m.find(" ", 1)
        if cut > 0:
            pairs.add((m[:cut], m[cut + 1:]))
    out = []
    for a, b in pairs:
        if a == b:
            out.append(a * 3)
        elif (b, a) in pairs:
            out.append(a + b + a)
    return [t for t in (decode_symbols(s, model) for s in out) if t]


def _score_ties(tokens, types, scores, model) -> list[str]:
    by_score: dict[float, list[str]] = {}
    for t, ty, s in zip(tokens, types, scores):
        if ty == _NORMAL and len(t) > 1:
            by_score.setdefault(float(s), []).append(t)
    out = []
    for group in by_score.values():
        if len(group) < 2:
            continue
        starts: dict[str, list[str]] = {}
        for t in group[:200]:
            starts.setdefault(t[0], []).append(t)
        for x in group[:200]:
            for y in starts.get(x[-1], [])[:3]:
                if y != x:
                    out.append(x + y[1:])
        if len(out) > CAP:
            break
    return [t for t in (decode_symbols(s, model) for s in out) if t]


def _special_overlaps(specials: list[str], user_defined: list[str], normal: list[str]) -> list[str]:
    out = []
    present = set(specials)
    starting: dict[str, list[str]] = {}
    for s in specials:
        for k in range(1, len(s)):
            starting.setdefault(s[:k], []).append(s)
    for s in specials:
        for k in range(1, len(s)):
            if s[:k] in present:  # a shorter special is a prefix of s
                out += [s[:k], s[:-1], s[:k] + s]
            for t in starting.get(s[k:], [])[:2]:  # s's end overlaps t's start
                out.append(s[:k] + t)
    if user_defined:
        import regex
        pat = regex.compile("|".join(regex.escape(u) for u in sorted(user_defined, key=len, reverse=True)))
        out += [t for t in normal if t not in present and pat.search(t)][:CAP]
    return out


def _byte_fallback(texts: set[str]) -> list[str]:
    from harness.inputs.drift import CLASSES
    pool = list(range(0xA0, 0x3400, 13)) + list(range(0x4E00, 0xA000, 97))
    newer = [a for name, rs in CLASSES.items() if name.startswith("unassigned_in_py311:") for a, _ in rs]
    pool += list(range(0x1F300, 0x1FA00, 7)) + newer
    out = []
    for cp in pool:
        c = chr(cp)
        if c not in texts and not (0xD800 <= cp < 0xE000):
            out += [c, " " + c, "a" + c + "b"]
    return out


_TAG = re.compile(r"<([A-Za-z_|][\w|:.-]{0,30})>")
_TAG_CONTENTS = ("", "ACGTAC", "ACGTACGTAAAAC", "x y", "\n", "<", "a</")


def _tag_pairs(texts: set[str]) -> list[str]:
    out = []
    for t in sorted(texts):
        m = _TAG.fullmatch(t)
        if m and f"</{m.group(1)}>" in texts:
            close = f"</{m.group(1)}>"
            out += [t + c + close for c in _TAG_CONTENTS] + [t + "ACGTAC", "a " + t + "b" + close + " c"]
    return out


def vocab_adversarial(path: str | Path, reference=None) -> dict[str, tuple[str, ...]]:
    """Every family's texts for one vocab, cached on disk per vocab file (computing them
    takes 0.2-10 s; ``reference`` is unused, kept so a family may later ask llama.cpp).
    On llama-bpe, ``["unmerged_tokens"][:2]`` is ``('토토', 'しない')``.
    """
    p = Path(path)
    st = p.stat()
    cache = _cache_dir() / f"{p.stem}-{st.st_size}-{int(st.st_mtime)}-v{_VERSION}.json"
    if cache.is_file():
        try:
            return {k: tuple(v) for k, v in json.loads(cache.read_text(encoding="utf-8")).items()}
        except (OSError, ValueError):
            pass  # a torn or stale cache file is recomputed
    fam = compute(p)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(fam, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, cache)  # atomic: xdist workers may compute the same vocab at once
    return fam


def _cache_dir() -> Path:
    from reference.paths import cache_dir
    return cache_dir() / "vocabgen"


def compute(path: str | Path) -> dict[str, tuple[str, ...]]:
    """Every family's texts for one vocab, without the cache."""
    from harness.tokenizer.gguf import GGUFReader
    r = GGUFReader(path)
    model = r.get("tokenizer.ggml.model") or ""
    tokens = [t.decode("utf-8", "replace") for t in (r.get("tokenizer.ggml.tokens") or [])]
    raw_types = r.get("tokenizer.ggml.token_type")
    types = [int(t) for t in raw_types] if raw_types is not None else [_NORMAL] * len(tokens)
    merges = [m.decode("utf-8", "replace") for m in (r.get("tokenizer.ggml.merges") or [])]
    scores = r.get("tokenizer.ggml.scores")
    specials = [t for t, ty in zip(tokens, types) if ty in (_UNKNOWN, _CONTROL, _USER_DEFINED)]
    user_defined = [t for t, ty in zip(tokens, types) if ty == _USER_DEFINED and t]
    texts = [decode_symbols(t, model) if ty == _NORMAL else None for t, ty in zip(tokens, types)]
    normal = [t for t in texts if t]
    fam = {
        "unmerged_tokens": _unmerged(tokens, types, merges, model) if merges else [],
        "merge_ties": _merge_ties(merges, model) if merges else [],
        "score_ties": _score_ties(tokens, types, scores, model) if scores is not None and not merges else [],
        "odd_tokens": [t for t in normal if _odd(t)],
        "special_overlaps": _special_overlaps([s for s in specials if s], user_defined, normal),
        "byte_fallback": _byte_fallback(set(normal)) if model != "gpt2" else [],
        "tag_pairs": _tag_pairs(set(normal) | set(specials)),
    }
    return {k: sorted_texts(v) for k, v in fam.items()}
