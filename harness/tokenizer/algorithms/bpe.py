"""llama.cpp's BPE session (llm_tokenizer_bpe_session::tokenize, src/llama-vocab.cpp).

Per raw-text fragment: decode to code points (invalid bytes -> U+FFFD), split
into words with the pre type's regexes (harness.tokenizer.pretokenize), GPT-2
byte-encode each word unless the pre type works on raw UTF-8 (GEMMA4,
SARVAM_MOE, WHITESPACE), then merge inside each word:

- ``ignore_merges``: a word that is itself a token is one symbol;
  GEMMA4: a word made only of ``\\n`` that is a token is one symbol.
- Otherwise symbols are the word's UTF-8 chars. Adjacent pairs with a merge
  rank go into a queue: lowest rank first, ties to the leftmost pair. A
  popped pair whose sides changed since it was queued is skipped (detected by
  comparing texts, as llama.cpp does). Merges never cross word boundaries.
- Each final symbol becomes its token; a symbol that is not a token falls
  back to one lookup per byte (the raw 1-byte string when byte-encoding, else
  ``<0xXX>``), and bytes without a token are silently dropped: BPE never
  emits UNK.

Models ``hybriddna`` (DNA k-mers inside ``<dna>...</dna>``) and
``whitespace`` (split on whitespace, optional lowercase, BPE per piece) wrap
this session as llama.cpp does.

>>> from harness.tokenizer.vocab import Vocab                                   # doctest: +SKIP
>>> Session(Vocab.from_gguf("vocabs/ggml-vocab-gpt-2.gguf")).tokenize(b"Hello world")  # doctest: +SKIP
[15496, 995]
"""

from __future__ import annotations

import heapq
import re

from harness.tokenizer import unicode as U
from harness.tokenizer.algorithms._cache import PieceMemo
from harness.errors import HarnessError
from harness.tokenizer.pretokenize import byte_encodes, split_words
from harness.tokenizer.merges import LazyMergeRanks

_LEN_BY_NIBBLE = (1,) * 12 + (2, 2, 3, 4)  # unicode_len_utf8: lead byte's high nibble
_DNA_OPEN, _DNA_CLOSE, _DNA_OOV = b"<dna>", b"</dna>", b"<oov>"
_DNA_MARKER = "\ue000".encode()  # k-mer texts carry U+E000 in token_to_id
_DNA_K = 6
_SEGMENT_MIN = 24          # symbols; shorter words merge whole
_ESCAPED_STR = "\u2581"
_ESCAPED = _ESCAPED_STR.encode()


class LlamaAbort(HarnessError):
    """Input on which llama.cpp would hit a GGML_ASSERT (abort the process), not return ids."""


def utf8_symbols(word: bytes) -> list[bytes]:
    """Split a word into symbols by unicode_len_utf8 of each lead byte (clipped at the end).

    No validation, like llama.cpp: a stray continuation byte is its own symbol.

    >>> utf8_symbols("aé€".encode()), utf8_symbols(b"\\xe2\\x82")
    ([b'a', b'\\xc3\\xa9', b'\\xe2\\x82\\xac'], [b'\\xe2\\x82'])
    """
    try:  # valid UTF-8 (nearly always): one symbol per char, split in C
        return [ch.encode() for ch in word.decode("utf-8")]
    except UnicodeDecodeError:
        pass
    out, i = [], 0
    while i < len(word):
        n = _LEN_BY_NIBBLE[word[i] >> 4]
        out.append(word[i:i + n])
        i += n
    return out


def merge_word(symbols: list[bytes], ranks: dict[tuple[bytes, bytes], int]) -> list[bytes]:
    """The rank queue over one word's symbols; returns the final symbols in order.

    >>> merge_word([b"a", b"b", b"c"], {(b"b", b"c"): 0, (b"a", b"b"): 1, (b"a", b"bc"): 2})
    [b'abc']
    >>> merge_word([b"a", b"a", b"a"], {(b"a", b"a"): 0})   # tie -> leftmost pair first
    [b'aa', b'a']
    """
    sym = list(symbols)
    n = len(sym)
    if n < 2:
        return sym
    get = ranks.get
    prev = list(range(-1, n - 1))
    nxt = list(range(1, n + 1))
    nxt[-1] = -1
    # llm_bigram_bpe::comparator: lowest rank, then lowest left index
    queue = [(r, i, i + 1, sym[i] + sym[i + 1]) for i in range(n - 1)
             if (r := get((sym[i], sym[i + 1]))) is not None]
    heapq.heapify(queue)
    pop, push = heapq.heappop, heapq.heappush
    while queue:
        _, left, right, text = pop(queue)
        a, b = sym[left], sym[right]
        # outdated bigram: a side is gone or has grown since it was queued (symbols
        # only grow, so comparing lengths is comparing texts, as llama.cpp does)
        if not a or not b or len(a) + len(b) != len(text):
            continue
        sym[left], sym[right] = text, b""
        after = nxt[left] = nxt[right]
        if after >= 0:
            prev[after] = left
        before = prev[left]
        if before >= 0 and (r := get((sym[before], text))) is not None:
            push(queue, (r, before, left, sym[before] + text))
        if after >= 0 and (r := get((text, sym[after]))) is not None:
            push(queue, (r, left, after, text + sym[after]))
    return [s for s in sym if s]


class Session:
    """One BPE tokenizer for a Vocab (vocab_type 'bpe': models gpt2, gemma4, hybriddna, whitespace)."""

    def __init__(self, vocab):
        if vocab.vocab_type != "bpe":
            raise HarnessError(f"bpe.Session needs a BPE vocab, got vocab_type {vocab.vocab_type!r} "
                               f"({vocab.path}): use harness.tokenizer.Tokenizer, which picks the algorithm")
        self.vocab = vocab
        self.pre_type = vocab.pre_type
        self.byte_encode = byte_encodes(vocab.pre_type)
        self._t2i = vocab.token_to_id
        self._ranks_dict: dict | None = None  # see ranks()
        # word (before byte encoding) -> ids; raw segment -> merged symbols
        self._words = PieceMemo(lambda w: tuple(self.word_ids(self._encode_word(w))))
        self._segments = PieceMemo(lambda seg: merge_word(utf8_symbols(seg.encode()), self.ranks()))
        self._cut: re.Pattern | None | bool = False  # False: not worked out yet

    # --- the plain BPE session -------------------------------------------

    def tokenize(self, text: bytes) -> list[int]:
        """Token ids for one raw-text fragment, as the model's llama.cpp session produces them."""
        model = self.vocab.model
        if model == "hybriddna":
            return self._tokenize_dna(text)
        if model == "whitespace":
            return self._tokenize_whitespace(text)
        return self.tokenize_bpe(text)

    def tokenize_bpe(self, text: bytes) -> list[int]:
        """llm_tokenizer_bpe_session::tokenize, with a bounded cache of word -> ids.

        The cache is keyed by the word before byte encoding, so a hit costs one
        dict lookup (a word's ids depend on nothing but the word).
        """
        words = split_words(self.pre_type, U.text_from_utf8(text))
        return self._words.flat(words)

    def _encode_word(self, word: str) -> bytes:
        return U.byte_encode(word).encode("utf-8") if self.byte_encode else U.cpts_to_utf8(word)

    def words(self, text: bytes) -> list[bytes]:
        """The words as llama.cpp's unicode_regex_split returns them (byte-encoded if it does)."""
        return [self._encode_word(w) for w in split_words(self.pre_type, U.text_from_utf8(text))]

    def word_ids(self, word: bytes) -> list[int]:
        """The reference loop for one word: symbols, merges, then ids with byte fallback."""
        t2i = self._t2i
        whole = (self.vocab.ignore_merges or (self.pre_type == "GEMMA4" and not word.strip(b"\n")))
        if whole and word in t2i:
            symbols = [word]
        else:
            symbols = utf8_symbols(word)
            if len(symbols) > 1 and b" " in word:
                raise LlamaAbort(
                    f"word {word!r} has a space inside a multi-symbol BPE word: llama.cpp's "
                    "find_bpe_rank hits GGML_ASSERT(token_left.find(' ') == npos) and aborts "
                    f"(pre_type {self.pre_type}, byte_encode {self.byte_encode})")
            symbols = self._merge(word, symbols)
        out: list[int] = []
        for s in symbols:
            tid = t2i.get(s)
            if tid is not None:
                out.append(tid)
                continue
            for b in s:  # byte fallback; a byte without a token is dropped (no UNK)
                key = bytes((b,)) if self.byte_encode else b"<0x%02X>" % b
                tid = t2i.get(key)
                if tid is not None:
                    out.append(tid)
        return out

    def _merge(self, word: bytes, symbols: list[bytes]) -> list[bytes]:
        """merge_word, one cached segment at a time where :meth:`cut_pattern` allows.

        Long words (GEMMA4 makes a whole line one word) would otherwise run one
        big queue per line; segments repeat far more often than lines do.
        """
        if len(symbols) < 2:
            return symbols  # nothing to merge: the ranks are not even needed
        cut = self.cut_pattern() if len(symbols) >= _SEGMENT_MIN else None
        if cut is None:
            return merge_word(symbols, self.ranks())
        try:
            text = word.decode("utf-8")
        except UnicodeDecodeError:
            return merge_word(symbols, self.ranks())
        return self._segments.flat(cut.split(text))

    def ranks(self) -> dict[tuple[bytes, bytes], int]:
        """The merge ranks as a plain dict (the vocab builds them on first use)."""
        if self._ranks_dict is None:
            ranks = self.vocab.merge_ranks
            self._ranks_dict = ranks.dict() if isinstance(ranks, LazyMergeRanks) else ranks
        return self._ranks_dict

    def cut_pattern(self) -> "re.Pattern | None":
        """Where a word may be cut before merging: before each '▁' whose previous char
        cannot end the left side of a merge whose right side starts with '▁'.

        No merge can then join across the cut, and merges on either side never
        meet, so merging the pieces apart gives the same symbols. Only for vocabs
        that merge raw text with '▁' for spaces (no byte encoding); None otherwise.
        """
        if self._cut is False:
            self._cut = None
            if not self.byte_encode and self.vocab.escape_whitespaces:
                lefts = [left for left, right in self.ranks() if right[:3] == _ESCAPED]
                ends = {utf8_symbols(left)[-1] for left in lefts if left and left[-3:] != _ESCAPED}
                try:
                    chars = "".join(re.escape(e.decode("utf-8")) for e in sorted(ends))
                    self._cut = re.compile(f"(?<=[^{_ESCAPED_STR}{chars}])(?={_ESCAPED_STR})")
                except UnicodeDecodeError:
                    self._cut = None  # a left side ending in a broken sequence: no cuts
        return self._cut

    # --- model 'whitespace' (llm_tokenizer_whitespace_session) -------------

    def _tokenize_whitespace(self, text: bytes) -> list[int]:
        lower = self.vocab.lowercase
        out: list[int] = []
        segment: list[bytes] = []
        for cp in U.cpts_from_utf8(text):
            if U.is_whitespace(cp):  # whitespace only separates; it is dropped
                if segment:
                    out += self.tokenize_bpe(b"".join(segment))
                    segment = []
            else:
                segment.append(U.cpt_to_utf8(U.to_lower(cp) if lower else cp))
        if segment:
            out += self.tokenize_bpe(b"".join(segment))
        return out

    # --- model 'hybriddna' (llm_tokenizer_hybriddna_session) ---------------

    def _tokenize_dna(self, text: bytes) -> list[int]:
        t2i = self._t2i
        open_id, close_id, oov_id = (t2i.get(_DNA_OPEN), t2i.get(_DNA_CLOSE), t2i.get(_DNA_OOV))
        if open_id is None or close_id is None or oov_id is None:
            return self.tokenize_bpe(text)  # llama.cpp falls back to plain BPE
        out: list[int] = []
        pos = 0
        while pos < len(text):
            start = text.find(_DNA_OPEN, pos)
            if start < 0:
                out += self.tokenize_bpe(text[pos:])
                break
            if start > pos:
                out += self.tokenize_bpe(text[pos:start])
            out.append(open_id)
            content = start + len(_DNA_OPEN)
            end = text.find(_DNA_CLOSE, content)
            out += self._dna_kmers(text[content:end if end >= 0 else len(text)], oov_id)
            if end < 0:
                break
            out.append(close_id)
            pos = end + len(_DNA_CLOSE)
        return out

    def _dna_kmers(self, raw: bytes, oov_id: int) -> list[int]:
        """k=6 k-mers of the ASCII-uppercased bytes; the tail padded with 'A'; unknown -> <oov>."""
        seq = bytes(b - 32 if 0x61 <= b <= 0x7A else b for b in raw)
        kmers = [seq[i:i + _DNA_K] for i in range(0, len(seq), _DNA_K)]
        if kmers and len(kmers[-1]) < _DNA_K:
            kmers[-1] = kmers[-1] + b"A" * (_DNA_K - len(kmers[-1]))
        return [self._t2i.get(k + _DNA_MARKER, oov_id) for k in kmers]
