"""SPM (SentencePiece BPE-by-score) session: ``llm_tokenizer_spm_session`` (V:117-270).

The input is exactly what llama.cpp hands the session for one raw-text
fragment: the facade has already prepended ``" "`` (add_space_prefix after a
special token or at the start) and replaced every ``' '`` by ``▁``.

Algorithm, as llama.cpp runs it:

1. Cut the bytes into symbols by ``unicode_len_utf8`` of each lead byte (high
   nibble: ``0x0-0xB`` -> 1, ``0xC-0xD`` -> 2, ``0xE`` -> 3, ``0xF`` -> 4),
   clipped to the bytes left. No UTF-8 validation: a stray continuation byte
   is a 1-byte symbol.
2. Queue every adjacent pair whose concatenation is *any* vocab entry (no
   attribute filter), prioritised by that entry's score; highest score first,
   equal scores -> leftmost left symbol.
3. Pop; skip stale pairs (a side already merged away or grown); merge; queue
   the two new neighbour pairs.
4. Each final symbol: its id if it is a token, else one id per byte via
   ``byte_to_token``: ``<0xXX>`` (uppercase hex), else the 1-byte token.
   llama.cpp's ``rev_merge`` path is unreachable (a merged symbol is always a
   token, and no pair of symbols spells an unmerged one), so it is omitted.

>>> from types import SimpleNamespace
>>> import numpy as np
>>> toks = [b"<0x63>", b"a", b"b", b"ab"]
>>> v = SimpleNamespace(tokens=tuple(toks), token_to_id={t: i for i, t in enumerate(toks)},
...                     scores=np.array([0, -1, -2, -0.5], dtype=np.float32))
>>> Session(v).tokenize(b"abbc")  # ab (best pair), b, then c by byte fallback
[3, 2, 0]
"""

from __future__ import annotations

import heapq
import itertools
import re

from harness.tokenizer.algorithms._cache import PieceMemo
from harness.errors import VocabError

# unicode_len_utf8 (U:16): symbol length from the high nibble of the lead byte.
_LEN_BY_NIBBLE = (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4)
UTF8_LEN = tuple(_LEN_BY_NIBBLE[b >> 4] for b in range(256))


def byte_fallback_ids(token_to_id: dict[bytes, int]) -> list[int | None]:
    """``byte_to_token`` for SPM/UGM, per byte: ``<0xXX>`` else the raw byte, else None.

    >>> byte_fallback_ids({b"<0x0A>": 5, b"A": 9})[0x0A], byte_fallback_ids({b"A": 9})[0x41]
    (5, 9)
    """
    ids: list[int | None] = []
    for byte in range(256):
        tid = token_to_id.get(b"<0x%02X>" % byte)
        if tid is None:
            tid = token_to_id.get(bytes([byte]))
        ids.append(tid)
    return ids


class Session:
    """Tokenizes one SPM fragment. Build once per vocab; ``tokenize`` is reentrant."""

    def __init__(self, vocab) -> None:
        self._token_to_id: dict[bytes, int] = vocab.token_to_id
        # text -> -score: one lookup per candidate pair. float32 -> Python float is
        # exact, so heap order equals llama.cpp's float compare.
        scores = [float(s) for s in vocab.scores]
        self._neg_score: dict[bytes, float] = {t: -scores[i] for t, i in self._token_to_id.items()}
        self._byte_ids = byte_fallback_ids(self._token_to_id)
        self._cuttable = splits_at_spaces(self._token_to_id)
        self._segments = PieceMemo(lambda seg: tuple(self.tokenize_whole(seg.encode())))

    def tokenize(self, text: bytes) -> list[int]:
        """Ids for one escaped fragment (spaces already ``▁``).

        >>> from types import SimpleNamespace
        >>> v = SimpleNamespace(token_to_id={"▁a".encode(): 0, "▁".encode(): 1, b"a": 2},
        ...                     scores=[0.0, -1.0, -1.0])
        >>> Session(v).tokenize("▁a▁".encode())
        [0, 1]
        """
        if not text:
            # llama.cpp never calls the session with an empty fragment (it would
            # index symbols[0] of an empty vector); an empty fragment has no ids.
            return []
        if self._cuttable:
            try:
                return self._tokenize_segments(text.decode("utf-8"))
            except UnicodeDecodeError:
                pass  # invalid UTF-8: symbols may straddle a '▁', so no cuts
        return self.tokenize_whole(text)

    def _tokenize_segments(self, text: str) -> list[int]:
        """The same ids, one cached segment at a time (see :func:`splits_at_spaces`)."""
        return self._segments.flat(_SEGMENT.findall(text))

    def tokenize_whole(self, text: bytes) -> list[int]:
        """The reference: llama.cpp's symbol queue over the whole fragment."""
        starts, lens = _split_symbols(text)
        nxt = self._merge(text, starts, lens)
        out: list[int] = []
        i = 0
        while i != -1:
            s = starts[i]
            self._resegment(text[s:s + lens[i]], out)
            i = nxt[i]
        return out

    def _merge(self, text: bytes, starts: list[int], lens: list[int]) -> list[int]:
        """Run the bigram queue to exhaustion; mutates ``lens``, returns the next links.

        Heap entries are ``(-score, left, right, size)``: max score first, ties to
        the leftmost, as llama.cpp's comparator ``l.score < r.score || (== &&
        l.left > r.left)``. Two live entries never share ``left``, so the last two
        fields never decide between live entries (stale ones are skipped anyway).
        """
        n = len(starts)
        prev = list(range(-1, n - 1))
        nxt = list(range(1, n + 1))
        nxt[-1] = -1
        score_of = self._neg_score.get
        heap = []
        for left in range(n - 1):
            s, size = starts[left], lens[left] + lens[left + 1]
            key = score_of(text[s:s + size])
            if key is not None:
                heap.append((key, left, left + 1, size))
        heapq.heapify(heap)
        pop, push = heapq.heappop, heapq.heappush
        while heap:
            _, left, right, size = pop(heap)
            nl, nr = lens[left], lens[right]
            if nl == 0 or nr == 0 or nl + nr != size:
                continue  # stale: a side was merged away or has grown
            lens[left] = size
            lens[right] = 0
            after = nxt[right]
            nxt[left] = after
            before = prev[left]
            if after >= 0:
                prev[after] = left
            # the two new candidate pairs: (before, left) and (left, after)
            if before >= 0:
                s, pair = starts[before], lens[before] + size
                key = score_of(text[s:s + pair])
                if key is not None:
                    push(heap, (key, before, left, pair))
            if after >= 0:
                s, pair = starts[left], size + lens[after]
                key = score_of(text[s:s + pair])
                if key is not None:
                    push(heap, (key, left, after, pair))
        return nxt

    def _resegment(self, piece: bytes, out: list[int]) -> None:
        tid = self._token_to_id.get(piece)
        if tid is not None:
            out.append(tid)
            return
        for byte in piece:
            bid = self._byte_ids[byte]
            if bid is None:
                raise VocabError(
                    f"SPM byte fallback: the vocab has neither <0x{byte:02X}> nor the "
                    f"single byte {bytes([byte])!r} as a token (needed for piece {piece!r}); "
                    "llama.cpp's byte_to_token throws std::out_of_range here and "
                    "llama_tokenize aborts. Add the 256 <0xXX> byte tokens to the vocab.")
            out.append(bid)


_ESCAPED = "\u2581"
# A cut falls before every '▁' that follows another char: a segment is '▁'* then non-'▁'.
_SEGMENT = re.compile(f"{_ESCAPED}*[^{_ESCAPED}]+|{_ESCAPED}+")


def splits_at_spaces(token_to_id: dict[bytes, int]) -> bool:
    """True when no entry holds a '▁' right after another char (only after '▁' or at 0).

    Then no merge can join a char to a following '▁' (the merged text would be
    such an entry), so the queue works on each segment independently (merges
    in one never touch another, whatever the pop order between them) and the
    fragment's ids are the segments' ids in order. True for every SPM and UGM
    vocab at the pin; a vocab where it fails is tokenized whole.

    >>> splits_at_spaces({"▁▁a".encode(): 0}), splits_at_spaces({"a▁".encode(): 0})
    (True, False)
    """
    sp = _ESCAPED.encode()
    for text in token_to_id:
        i = text.find(sp, 1)
        while i > 0:
            if not text[:i].endswith(sp):
                return False
            i = text.find(sp, i + 1)
    return True


# One symbol per lead byte, as unicode_len_utf8 sizes it; the {0,n} ranges do the
# clipping, which can only happen at the end of the text.
_SYMBOL = re.compile(rb"[\xc0-\xdf][\x00-\xff]?|[\xe0-\xef][\x00-\xff]{0,2}"
                     rb"|[\xf0-\xff][\x00-\xff]{0,3}|[\x00-\xbf]")


def _split_symbols(text: bytes) -> tuple[list[int], list[int]]:
    """Symbol starts and lengths by lead byte, clipped at the end.

    >>> _split_symbols(b"a\\xe2\\x96\\x81\\x80\\xf0")
    ([0, 1, 4, 5], [1, 3, 1, 1])
    >>> _split_symbols(b"\\xc3\\xe2\\x96")  # C3 takes E2 as its second byte; 96 alone
    ([0, 2], [2, 1])
    """
    lens = list(map(len, _SYMBOL.findall(text)))
    starts = list(itertools.accumulate(lens, initial=0))
    starts.pop()
    return starts, lens


def _split_symbols_slow(text: bytes) -> tuple[list[int], list[int]]:
    """The same, as llama.cpp's loop reads (kept as the reference for ``_split_symbols``).

    >>> _split_symbols_slow(b"\\xc3\\xe2\\x96") == _split_symbols(b"\\xc3\\xe2\\x96")
    True
    """
    starts: list[int] = []
    lens: list[int] = []
    n = len(text)
    i = 0
    while i < n:
        step = min(UTF8_LEN[text[i]], n - i)
        starts.append(i)
        lens.append(step)
        i += step
    return starts, lens
