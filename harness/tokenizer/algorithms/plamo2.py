"""PLaMo-2 session: ``llm_tokenizer_plamo2`` (V:1349-1630).

A literal port of llama.cpp's table-driven unigram DP, quirks included:

* The table lists every non-BYTE token text and every code-point suffix of
  one (suffix-only entries have no score), sorted by *reversed* bytes; each
  suffix owns a block of rows: its prefixes that are table strings, longest
  first, then a sentinel "unknown" row of length 1.
* ``to_suffix`` maps (code point, id of S) -> id of ``cp + S``, so walking the
  text backwards finds the longest table string starting at each position.
* Scores are ``round(score * 1e4)`` as int32 (half away from zero); a
  non-finite score marks a row as unusable; the unknown row costs 10^7.
  The DP keeps the first strictly-better candidate, in row order.
* Unknown rows fall back to ``<0xXX>`` tokens of the code point's UTF-8
  bytes (all 256 must exist as BYTE tokens, or llama.cpp refuses the vocab).
* One leading U+FEFF of every fragment is dropped; add_special adds nothing.

>>> from types import SimpleNamespace
>>> toks = [b"<unk>"] + [b"<0x%02X>" % b for b in range(256)] + [b"ab", b"b", b"a"]
>>> v = SimpleNamespace(tokens=tuple(toks), scores=[0.0] * 257 + [-1.0, -2.0, -2.0],
...                     attrs=(1,) + (32,) * 256 + (4, 4, 4))
>>> Session(v).tokenize("\\ufeffabac".encode())  # ab, a, then 'c' as <0x63>
[257, 259, 100]
"""

from __future__ import annotations

import itertools
import math

from harness.tokenizer import unicode as U
from harness.errors import HarnessError, VocabError

ATTR_BYTE = 32
INVALID_SCORE = -20000000
UNKNOWN_SCORE = -10000000
_HEX = b"0123456789abcdefABCDEF"


def round_half_away(x: float) -> int:
    """``std::round``: halves go away from zero (Python's ``round`` goes to even).

    >>> round_half_away(2.5), round_half_away(-2.5), round_half_away(-0.4)
    (3, -3, 0)
    """
    r = math.floor(x)
    diff = x - r  # exact for doubles of this size
    if diff > 0.5 or (diff == 0.5 and x > 0):
        return r + 1
    return r


def _utf8_len(cpt: int) -> int:
    return 1 if cpt < 0x80 else 2 if cpt < 0x800 else 3 if cpt < 0x10000 else 4


def _cpts_encoded(text: bytes) -> tuple[list[int], bytes, list[int]]:
    """Code points of ``text`` (``unicode_cpts_from_utf8``), their re-encoding with
    ``unicode_cpt_to_utf8``, and the byte end of each code-point prefix of it.

    For strict UTF-8 the re-encoding is ``text`` itself (the fast path); otherwise
    invalid bytes became U+FFFD, overlong forms re-encode short, and a code point
    above U+10FFFF raises VocabError where llama.cpp throws.

    >>> _cpts_encoded("aé".encode()), _cpts_encoded(b"a\\xff")[1:]
    (([97, 233], b'a\\xc3\\xa9', [0, 1, 3]), (b'a\\xef\\xbf\\xbd', [0, 1, 4]))
    """
    try:
        cpts = [ord(ch) for ch in text.decode("utf-8")]
    except UnicodeDecodeError:
        cpts = U.cpts_from_utf8(text)
        try:
            text = b"".join(U.cpt_to_utf8(c) for c in cpts)
        except HarnessError as e:
            raise VocabError(f"PLaMo-2 vocab: token text {text!r} decodes to a code point above "
                             f"U+10FFFF; llama.cpp throws while building its table ({e}).") from e
    ends = list(itertools.accumulate(map(_utf8_len, cpts), initial=0))
    return cpts, text, ends


class Session:
    """Tokenizes one PLaMo-2 fragment. Build once per vocab (the table is costly)."""

    def __init__(self, vocab) -> None:
        score_of, token_to_id = self._collect(vocab)
        self._build_table(score_of, token_to_id)

    def _collect(self, vocab) -> tuple[dict[bytes, float], dict[bytes, int]]:
        """Byte-token ids, and the score of every token text and suffix (NaN: suffix only)."""
        self._bytes = [0] * 256
        score_of: dict[bytes, float] = {}
        token_to_id: dict[bytes, int] = {}
        nan = float("nan")
        for tid, text in enumerate(vocab.tokens):
            token_to_id[text] = tid
            if vocab.attrs[tid] & ATTR_BYTE:
                if (len(text) == 6 and text[:3] == b"<0x" and text[5:] == b">"
                        and text[3] in _HEX and text[4] in _HEX):
                    self._bytes[int(text[3:5], 16)] = tid
                continue
            score_of[text] = float(vocab.scores[tid])
            _, enc, ends = _cpts_encoded(text)
            for i in range(1, len(ends) - 1):
                score_of.setdefault(enc[ends[i]:], nan)
        for byte, tid in enumerate(self._bytes):
            if tid == 0:  # llama.cpp uses 0 as "unset", so a byte token at id 0 counts as missing
                raise VocabError(f"PLaMo-2 vocab has no BYTE token <0x{byte:02X}> (at a non-zero "
                                 f"id); llama.cpp refuses it ('Byte token for <0x{byte}> is not "
                                 "set'). Add all 256 <0xXX> tokens with token_type BYTE.")
        return score_of, token_to_id

    def _build_table(self, score_of: dict[bytes, float], token_to_id: dict[bytes, int]) -> None:
        suffixes = sorted([*score_of, b""], key=lambda s: s[::-1])
        suffix_id: dict[bytes, int] = {}
        self._to_suffix: dict[int, int] = {}
        prefixes: list[list[tuple[int, bytes]]] = []  # per suffix: (cpt length, piece) in the table
        rows = 0
        for suffix in suffixes:
            suffix_id[suffix] = rows
            cpts, enc, ends = _cpts_encoded(suffix)  # enc differs from suffix if invalid UTF-8
            if cpts:
                # std::unordered_map::operator[] inserts 0 for a missing key.
                rest = suffix_id.setdefault(enc[ends[1]:], 0)
                self._to_suffix[(cpts[0] << 32) | rest] = rows
            found = [(k, enc[:ends[k]]) for k in range(len(cpts), 0, -1)
                     if enc[:ends[k]] in score_of]
            prefixes.append(found)
            rows += len(found) + 1
        # Row fields in parallel lists: piece length, token id, score, piece id.
        self._len, self._tid, self._score, self._pid = [], [], [], []
        for found in prefixes:
            for k, piece in found:
                score = score_of[piece]
                self._add_row(k, token_to_id.get(piece, -1),
                              round_half_away(score * 1e4) if math.isfinite(score) else INVALID_SCORE,
                              suffix_id[piece])
            self._add_row(1, -1, UNKNOWN_SCORE, 0)  # sentinel; piece id 0 is the empty suffix

    def _add_row(self, length: int, tid: int, score: int, pid: int) -> None:
        self._len.append(length)
        self._tid.append(tid)
        self._score.append(score)
        self._pid.append(pid)

    def tokenize(self, text: bytes) -> list[int]:
        """Ids for one raw fragment.

        >>> from types import SimpleNamespace
        >>> toks = [b"<unk>"] + [b"<0x%02X>" % b for b in range(256)] + [b"ab", b"abc", b"c"]
        >>> v = SimpleNamespace(tokens=tuple(toks), scores=[0.0] * 257 + [-1.0, -3.0, -1.0],
        ...                     attrs=(1,) + (32,) * 256 + (4, 4, 4))
        >>> Session(v).tokenize(b"abc")  # ab + c (cost 2) beats abc (cost 3)
        [257, 259]
        """
        cpts = U.cpts_from_utf8(text)
        if cpts and cpts[0] == 0xFEFF:
            del cpts[0]
        if not cpts:
            return []
        lengths, ids = self._best_path(cpts)
        out: list[int] = []
        pos = 0
        while pos < len(cpts):
            if ids[pos] >= 0:
                out.append(ids[pos])
            else:
                out.extend(self._bytes[b] for b in _fallback_bytes(cpts[pos]))
            pos += lengths[pos]
        return out

    def _best_path(self, cpts: list[int]) -> tuple[list[int], list[int]]:
        """DP from the end: per position, the chosen piece length and token id (-1: bytes)."""
        n = len(cpts)
        t_len, t_tid, t_score, t_pid = self._len, self._tid, self._score, self._pid
        to_suffix, n_rows = self._to_suffix, len(self._len)
        best = [1 << 60] * (n + 1)
        best[n] = 0
        lengths, ids = [0] * (n + 1), [0] * (n + 1)
        sid = 0
        for i in range(n - 1, -1, -1):
            c = cpts[i] << 32
            for p in range(sid, n_rows):
                sid = to_suffix.get(c | t_pid[p], 0)
                if sid > 0 or t_score[p] == UNKNOWN_SCORE:
                    break
            for p in range(sid, n_rows):
                score = t_score[p]
                if score > INVALID_SCORE:
                    s = best[i + t_len[p]] - score
                    if s < best[i]:
                        best[i], lengths[i], ids[i] = s, t_len[p], t_tid[p]
                if score == UNKNOWN_SCORE:
                    break
        return lengths, ids


def _fallback_bytes(cpt: int) -> list[int]:
    """The byte tokens llama.cpp emits for an unmatched code point (UTF-8 shaped).

    >>> _fallback_bytes(0x63), _fallback_bytes(0xE9), _fallback_bytes(0x1F600)
    ([99], [195, 169], [240, 159, 152, 128])
    """
    s = 1 + (cpt >= 0x80) + (cpt >= 0x800) + (cpt >= 0x10000)
    if s == 1:
        return [cpt]
    lead = (0xF00 >> s) & 0xFF
    return [(lead if k == 0 else 0x80) | ((cpt >> ((s - k - 1) * 6)) & 0x3F) for k in range(s)]
