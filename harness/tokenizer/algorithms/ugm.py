"""UGM (SentencePiece unigram) session: ``llm_tokenizer_ugm[_session]`` (V:880-1240).

The input is the raw fragment bytes. Steps, as llama.cpp runs them:

1. ``normalize``: walk the input by ``normalize_prefix``: the longest path in
   the trie of USER_DEFINED texts passes through verbatim (llama.cpp counts
   the deepest trie *node*, even where no token ends); else the longest match
   in ``precompiled_charsmap`` (:class:`~harness.tokenizer.algorithms.charsmap.Charsmap`) is replaced; else one
   valid UTF-8 sequence (overlong and > U+10FFFF accepted) passes; else one
   byte becomes U+FFFD. Spaces in the output become ``▁``
   (if ``escape_whitespaces``) unless ``remove_extra_whitespaces``, which
   drops them and puts one ``▁`` before every non-space run instead;
   ``add_space_prefix`` puts one before the first run.
2. Viterbi over the normalized bytes, stepping by ``unicode_len_utf8``:
   tokens are NORMAL / USER_DEFINED / UNUSED texts; score is a double sum of
   float32 scores (0.0 for USER_DEFINED); a candidate replaces the best only
   if strictly greater. A code point no single token covers exactly also
   gets an unk candidate scored ``min(NORMAL scores) - 10`` (float32).
3. Backtrack from the end; runs of unk collapse to one.

>>> from types import SimpleNamespace
>>> toks = [b"<unk>", "▁a".encode(), b"b", "▁".encode(), b"a"]
>>> v = SimpleNamespace(tokens=tuple(toks), scores=[0.0, -1.0, -2.0, -3.0, -4.0],
...                     attrs=(1, 4, 4, 4, 4), unk=0, precompiled_charsmap=b"",
...                     escape_whitespaces=True, add_space_prefix=True,
...                     remove_extra_whitespaces=True)
>>> Session(v).tokenize(b"  ab  \\xc3\\xa9\\xff")  # -> '▁ab▁é\\ufffd'
[1, 2, 3, 0]
"""

from __future__ import annotations

import functools
import re
from itertools import chain

import numpy as np

from harness.tokenizer.algorithms._cache import PieceMemo
from harness.tokenizer.algorithms._prefixes import PrefixIndex
from harness.tokenizer.algorithms.charsmap import REPLACEMENT, Charsmap, utf8_sequence_len
from harness.tokenizer.algorithms.spm import _SEGMENT, UTF8_LEN, splits_at_spaces
from harness.errors import VocabError

ATTR_NORMAL, ATTR_USER_DEFINED, ATTR_UNUSED = 4, 16, 2
LLAMA_TOKEN_NULL = -1
ESCAPED_SPACE = b"\xe2\x96\x81"
_FLT_MAX = float(np.finfo(np.float32).max)
_DBL_MAX = float(np.finfo(np.float64).max)
_CACHE_MAX = 100_000
_RAW_CHUNK = re.compile(rb"[^ ]+| [^ ]*")  # cut before every space
_NON_SPACE_RUN = re.compile(rb"[^ ]+")


class Session:
    """Tokenizes one UGM fragment. Build once per vocab (tries, charsmap)."""

    def __init__(self, vocab) -> None:
        self._unk = LLAMA_TOKEN_NULL if vocab.unk is None else vocab.unk
        self._space = ESCAPED_SPACE if vocab.escape_whitespaces else b" "
        self._prepend = bool(vocab.add_space_prefix)  # treat_whitespace_as_suffix is always false
        self._merge = bool(vocab.remove_extra_whitespaces)
        self._charsmap = Charsmap(bytes(vocab.precompiled_charsmap))
        attrs = np.asarray(vocab.attrs, dtype=np.int64)
        scores = np.asarray(vocab.scores, dtype=np.float32)[:len(attrs)]
        in_trie = np.flatnonzero(attrs & (ATTR_NORMAL | ATTR_USER_DEFINED | ATTR_UNUSED)).tolist()
        user = set(np.flatnonzero(attrs & ATTR_USER_DEFINED).tolist())
        tokens = vocab.tokens
        # llama.cpp's token_matcher trie, as a hash table text -> id and an index of every
        # proper prefix of a text (a trie node with children), linear in the texts' size.
        # Later ids win on equal texts, as naive_trie::insert overwrites (texts are unique
        # after load anyway).
        self._ids: dict[bytes, int] = {tokens[i]: i for i in in_trie}
        self._trie_texts = [tokens[i] for i in in_trie]  # _inner is built from them on first use
        # Viterbi score per id; double, 0.0 for USER_DEFINED (V:1012).
        as_double = scores.tolist()  # float32 -> Python float, exactly
        self._score = {i: 0.0 if i in user else as_double[i] for i in in_trie}
        # The user-defined trie only answers "how deep can the input walk": every prefix.
        self._user_texts = [tokens[i] for i in user]
        self._user_nodes = PrefixIndex(self._user_texts, proper=False)
        self._user_max = max((len(tokens[i]) for i in user), default=0)
        self._unk_score = float(_unknown_score(scores[attrs & ATTR_NORMAL != 0]))
        self._plain_run = self._plain_pattern({tokens[i][0] for i in user})
        self._normalized = PieceMemo(self._normalize_prefixes, _CACHE_MAX)
        self._segments = PieceMemo(lambda seg: tuple(self._viterbi(seg.encode())), _CACHE_MAX)
        self._cuts_at_spaces: bool | None = None
        self._cuttable = self._space == ESCAPED_SPACE and splits_at_spaces(self._ids)

    # Built on first use: llama.cpp builds its tokenizer while loading, so the harness builds
    # this session then too; these two take seconds on a 250k-token vocab and only Viterbi needs them.
    @functools.cached_property
    def _inner(self) -> PrefixIndex:
        return PrefixIndex(self._trie_texts)

    @functools.cached_property
    def _exact_len(self) -> int:
        return _exact_length(list(self._score.values()) + [self._unk_score])

    def _plain_pattern(self, user_first: set[int]) -> re.Pattern | None:
        """Runs of ASCII bytes that normalize_prefix passes through one by one unchanged.

        A byte qualifies when no USER_DEFINED text starts with it and either no
        charsmap key does (NUL never reaches the charsmap), or it is no key by
        itself and every key starting with it goes on with a non-ASCII byte (a
        letter before a combining mark): then it passes whenever the next byte
        is ASCII or the end.
        """
        cm = self._charsmap
        free, before_ascii = [], []
        for c in range(0x80):
            if c in user_first:
                continue
            if c == 0 or not cm.may_start(c):
                free.append(c)
            elif self._passes_before_ascii(c):
                before_ascii.append(c)
        alts = []
        if free:
            alts.append(b"[" + b"".join(re.escape(bytes([c])) for c in free) + b"]")
        if before_ascii:
            alts.append(b"[" + b"".join(re.escape(bytes([c])) for c in before_ascii) + b"](?![\x80-\xff])")
        return re.compile(b"(?:" + b"|".join(alts) + b")+") if alts else None

    def _passes_before_ascii(self, c: int) -> bool:
        try:  # a corrupt charsmap raises here; llama.cpp raises only when tokenizing
            return (self._charsmap.match(bytes([c]), 0) is None
                    and all(b >= 0x80 for b in self._charsmap.children(bytes([c]))))
        except VocabError:
            return False

    def tokenize(self, text: bytes) -> list[int]:
        """Ids for one raw fragment.

        >>> from types import SimpleNamespace
        >>> v = SimpleNamespace(tokens=(b"<unk>", b"a"), scores=[0.0, -1.0], attrs=(1, 4), unk=0,
        ...     precompiled_charsmap=b"", escape_whitespaces=True, add_space_prefix=False,
        ...     remove_extra_whitespaces=False)
        >>> Session(v).tokenize(b"aa xyz")  # ' ', 'x', 'y', 'z' are unk: one unk for the run
        [1, 1, 0]
        """
        norm = self.normalize(text)
        if not norm:
            return []
        if self._cuttable and len(norm) <= self._exact_len:
            try:
                return self._viterbi_segments(norm.decode("utf-8"))
            except UnicodeDecodeError:
                pass  # invalid UTF-8: symbols may straddle a '▁'
        return self._viterbi(norm)

    def _viterbi_segments(self, norm: str) -> list[int]:
        """The Viterbi ids, one cached segment at a time.

        Exact when (a) no candidate joins a char to a following '▁' (so every
        path breaks before such a '▁': see spm.splits_at_spaces), and (b) every
        partial score sum is a double computed without rounding (then shifting
        all candidates by the score before the segment changes no comparison);
        ``_exact_len`` bounds the fragment length for (b). Runs of unk collapse
        across segment edges as they do inside one.
        """
        found = self._segments.all(_SEGMENT.findall(norm))
        unk = self._unk
        if not any(ids[0] == unk for ids in found[1:]):
            return list(chain.from_iterable(found))
        out: list[int] = []
        for ids in found:
            out.extend(ids[1:] if out and out[-1] == unk and ids[0] == unk else ids)
        return out


    def normalize(self, text: bytes) -> bytes:
        """The normalized string llama.cpp's Viterbi runs on.

        >>> from types import SimpleNamespace
        >>> v = SimpleNamespace(tokens=(), scores=[], attrs=(), unk=None, precompiled_charsmap=b"",
        ...     escape_whitespaces=True, add_space_prefix=True, remove_extra_whitespaces=False)
        >>> Session(v).normalize(b"a  b ").decode()
        '▁a▁▁b▁'
        """
        return self.place_spaces(self.normalize_prefixes(text))

    def normalize_prefixes(self, text: bytes) -> bytes:
        """``normalize_prefix`` applied from left to right, outputs concatenated.

        With :meth:`cuts_at_spaces`, a walk never crosses a space, so the text is
        done one cached chunk (a space and what follows it) at a time.
        """
        if b" " not in text or not self.cuts_at_spaces():
            return self._normalize_prefixes(text)
        return b"".join(self._normalized.all(_RAW_CHUNK.findall(text)))

    def _normalize_prefixes(self, text: bytes) -> bytes:
        out = bytearray()
        offset, n = 0, len(text)
        plain_run = self._plain_run
        while offset < n:
            run = plain_run.match(text, offset) if plain_run is not None else None
            if run is not None:  # fast path: bytes normalize_prefix would pass one by one
                offset = run.end()
                out += run.group()
                continue
            chunk, consumed = self._normalize_prefix(text, offset)
            out += chunk
            offset += consumed
        return bytes(out)

    def place_spaces(self, norm: bytes) -> bytes:
        """llama.cpp's per-byte space rules over the normalized bytes, as whole-string steps.

        Merging: every run of non-space bytes gets one ``space`` before it and
        spaces vanish. Otherwise each space becomes ``space``, and with
        add_space_prefix one more goes before the first non-space byte.
        """
        space = self._space
        if self._merge:
            return b"".join(space + run for run in _NON_SPACE_RUN.findall(norm))
        first = _NON_SPACE_RUN.search(norm)
        if not self._prepend or first is None:
            return norm.replace(b" ", space)
        return norm[:first.start()].replace(b" ", space) + space + norm[first.start():].replace(b" ", space)

    def cuts_at_spaces(self) -> bool:
        """No USER_DEFINED text and no charsmap key holds a space after its first byte,
        so no normalize_prefix walk that starts before a space goes past it.
        Worked out on first need (the charsmap walk takes a moment)."""
        if self._cuts_at_spaces is None:
            self._cuts_at_spaces = (all(b" " not in t[1:] for t in self._user_texts)
                                    and not self._charsmap.byte_inside_keys(0x20))
        return self._cuts_at_spaces

    def _normalize_prefix(self, text: bytes, offset: int) -> tuple[bytes, int]:
        """(normalized bytes, input bytes consumed) at ``offset``: V:1155."""
        user = self._user_path(text, offset)
        if user > 0:
            return text[offset:offset + user], user
        hit = self._charsmap.match(text, offset)
        if hit is not None:
            consumed, replacement = hit
            return replacement, consumed
        n = utf8_sequence_len(text, offset)
        if n:
            return text[offset:offset + n], n
        return REPLACEMENT, 1

    def _user_path(self, text: bytes, offset: int) -> int:
        """``naive_trie::get_longest_prefix`` on the USER_DEFINED texts: the deepest trie
        node the input reaches, whether or not a token ends there (a llama.cpp quirk:
        with ``<abc>`` user-defined, ``<ab`` passes unnormalized)."""
        nodes = self._user_nodes
        if not nodes:
            return 0
        depth = 0
        limit = min(self._user_max, len(text) - offset)
        while depth < limit and text[offset:offset + depth + 1] in nodes:
            depth += 1
        return depth

    def _viterbi(self, norm: bytes) -> list[int]:
        n = len(norm)
        unk, unk_score, scores = self._unk, self._unk_score, self._score
        best_id = [unk] * (n + 1)
        best_from = [0] * (n + 1)
        best = [-_DBL_MAX] * (n + 1)
        best[0] = 0.0
        ids, inner = self._ids, self._inner
        i = 0
        while i < n:
            width = min(UTF8_LEN[norm[i]], n - i)
            base = best[i]
            single = False
            # Walk the token trie: every prefix of norm[i:] that is a token is a
            # candidate; stop when the prefix is no longer inside any token.
            for p in range(i + 1, n + 1):
                piece = norm[i:p]
                tid = ids.get(piece)
                if tid is not None:
                    if p - i == width:
                        single = True
                    challenger = base + scores[tid]
                    if challenger > best[p]:
                        best[p], best_id[p], best_from[p] = challenger, tid, i
                if piece not in inner:
                    break
            if not single:
                challenger = base + unk_score
                p = i + width
                if challenger > best[p]:
                    best[p], best_id[p], best_from[p] = challenger, unk, i
            i += width
        return _backtrack(best_id, best_from, n, unk)


def _exact_length(scores: list[float]) -> int:
    """The longest normalized text (bytes) on which every Viterbi sum is exact in double.

    A path has at most one score per byte. With every score a multiple of
    2**-k and at most m in size, a sum over n bytes is a multiple of 2**-k
    below n*m: exact while n*m*2**k < 2**53. 0 when a score is not finite.

    >>> _exact_length([-1.5, -0.25, 0.0])  # k = 2, m = 1.5: n < 2**53 / 6
    1501199875790165
    """
    k, m = 0, 0.0
    for x in scores:
        if x != x or x in (float("inf"), float("-inf")):
            return 0
        k = max(k, x.as_integer_ratio()[1].bit_length() - 1)
        m = max(m, abs(x))
    return int((2 ** 53 - 1) // (m * 2 ** k)) if m else 2 ** 62


def _unknown_score(normal_scores: np.ndarray) -> np.float32:
    """``min_score - 10.0f`` in float32; min over NORMAL scores as ``std::min`` folds it
    from FLT_MAX (a NaN never wins a ``<``, so NaNs are skipped).

    >>> float(_unknown_score(np.array([-3.5, np.nan, -1.0], np.float32)))
    -13.5
    """
    finite = normal_scores[~np.isnan(normal_scores)]
    min_score = np.float32(_FLT_MAX) if finite.size == 0 else min(np.float32(_FLT_MAX), finite.min())
    return np.float32(min_score - np.float32(10.0))


def _backtrack(best_id: list[int], best_from: list[int], n: int, unk: int) -> list[int]:
    """Walk back from ``n``; consecutive unk ids collapse to one.

    >>> _backtrack([0, 9, 0, 0], [0, 0, 1, 2], 3, unk=0)
    [9, 0]
    """
    out: list[int] = []
    prev_unknown = False
    pos = n
    while True:
        tid = best_id[pos]
        is_unknown = tid == unk
        if not (prev_unknown and is_unknown):
            out.append(tid)
        if best_from[pos] == 0:
            break
        prev_unknown = is_unknown
        pos = best_from[pos]
    out.reverse()
    return out
