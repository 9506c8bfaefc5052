"""Mutants of the pre-tokenizer: a broken word split plus a plain byte-level BPE.

llama.cpp cannot be told to split words wrongly, so these mutants split the
text themselves twice with Python ``regex``: once with QWEN2's pattern and
once with the bug. Where both splits agree the answer is llama.cpp's own;
where they differ, each broken word is BPE-encoded with the vocab's merges
(lowest rank first, ties to the leftmost pair, as llama.cpp does). Texts that
contain a special token's text are left to llama.cpp (the bug is in the
split of raw text, and specials are cut out before it).

>>> sorted(PATTERNS)[:2]
['ascii_whitespace', 'case_sensitive_contractions']
"""

from __future__ import annotations

from pathlib import Path

import regex

from harness.inputs.wordbpe import bpe_word, byte_encoder
from tests.ports.mutants import Wrapped

# QWEN2's pattern (llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_QWEN2), and two broken variants.
_CONTRACTIONS_I = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
_REST = r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2 = _CONTRACTIONS_I + _REST
CASE_SENSITIVE = r"'s|'t|'re|'ve|'m|'ll|'d" + _REST
# Go's regexp (and others) define \s as ASCII only: [\t\n\f\r ] plus \v here.
ASCII_WS = QWEN2.replace(r"\s", r"[\t\n\v\f\r ]").replace(r"\S", r"[^\t\n\v\f\r ]")
# Inside a negated class, "\s" was replaced by a nested class; flatten it.
ASCII_WS = ASCII_WS.replace(r"[^[\t\n\v\f\r ]\p{L}\p{N}]", r"[^\t\n\v\f\r \p{L}\p{N}]")

PATTERNS = {"case_sensitive_contractions": CASE_SENSITIVE, "ascii_whitespace": ASCII_WS,
            "platform_unicode": QWEN2}


class SplitBugPort(Wrapped):
    """A qwen2-style port whose word split has bug ``name`` (see PATTERNS)."""

    def __init__(self, reference, vocab_path: str | Path, name: str):
        from harness.tokenizer.gguf import GGUFReader
        r = GGUFReader(vocab_path)
        super().__init__(reference)
        self.name = name
        self.good, self.bad = regex.compile(QWEN2), regex.compile(PATTERNS[name])
        tokens = [t.decode("utf-8", "surrogateescape") for t in r.get("tokenizer.ggml.tokens")]
        self.token_to_id = {t: i for i, t in enumerate(tokens)}
        self.ranks = {}
        for rank, m in enumerate(r.get("tokenizer.ggml.merges")):
            text = m.decode("utf-8", "surrogateescape")
            cut = text.find(" ", 1)
            self.ranks.setdefault((text[:cut], text[cut + 1:]), rank)
        types = r.get("tokenizer.ggml.token_type")
        self.specials = [t for i, t in enumerate(tokens) if int(types[i]) in (2, 3, 4)]
        self.enc = byte_encoder()

    def _word_ids(self, word: str) -> list[int]:
        symbols = [self.enc[b] for b in word.encode("utf-8")]
        # As in llama.cpp: the word is byte-encoded first, so one symbol per byte.
        out = []
        for s in bpe_word(symbols, self.ranks):
            if s in self.token_to_id:
                out.append(self.token_to_id[s])
            else:
                out.extend(self.token_to_id[c] for c in s if c in self.token_to_id)
        return out

    def good_split(self, text: str) -> list[str]:
        """The correct split (QWEN2's pattern; overridden where the regex module is the bug)."""
        return self.good.findall(text)

    def encode(self, text, *, add_special=False, parse_special=False):
        ref = self.inner.encode(text, add_special=add_special, parse_special=parse_special)
        good, bad = self.good_split(text), self.bad.findall(text)
        if good == bad or any(s in text for s in self.specials):
            return ref
        ids = [i for w in bad for i in self._word_ids(w)]
        # Keep whatever llama.cpp adds around the text (BOS/EOS) as it is.
        body = self.inner.encode(text, add_special=False, parse_special=parse_special)
        head = ref[:len(ref) - len(body)] if ref[len(ref) - len(body):] == body else []
        return head + ids



class PlatformUnicodePort(SplitBugPort):
    """QWEN2's pattern run by the ``regex`` module with its own Unicode tables (18.0 in
    2026 releases) instead of llama.cpp's 15.1 ones: the port of a platform with a
    newer Unicode. The correct split is the harness's exact one (llama.cpp's tables)."""

    def __init__(self, reference, vocab_path: str | Path):
        super().__init__(reference, vocab_path, "platform_unicode")

    def good_split(self, text: str) -> list[str]:
        from harness.tokenizer.pretokenize import split_words
        return split_words("QWEN2", text)
