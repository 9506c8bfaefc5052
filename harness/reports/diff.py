"""Where two token streams over one text part: a pure, tiny function.

``first_divergence`` compares the reference's ids with a port's ids and
returns a :class:`Divergence` (or ``None`` when they are equal). It never
calls a tokenizer: the caller passes the reference's pieces, so the result
depends only on its arguments and is trivially testable.

>>> d = first_divergence([1, 2, 3], [1, 2, 4], text=b"abc",
...                      reference_pieces=[b"a", b"b", b"c"])
>>> d.index, d.byte_offset, d.offset_exact
(2, 2, True)
>>> first_divergence([5], [5]) is None
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

# Bytes C's isspace() accepts: llama.cpp strips exactly these for LSTRIP/RSTRIP,
# and UGM/SPM normalisation may swallow them, so alignment may skip them.
_C_SPACE = b" \t\n\v\f\r"


#: The window around a first divergence: ids i-2 .. i+5, as llama.cpp's test-tokenizer-random.py shows.
BEFORE, AFTER = 2, 5


def window_bounds(index: int, length: int | None = None, before: int = BEFORE,
                  after: int = AFTER) -> tuple[int, int]:
    """``(lo, hi)``: the slice ``index-before .. index+after`` (inclusive), cut to ``length``.

    >>> window_bounds(1), window_bounds(10, 12)
    ((0, 7), (8, 12))
    """
    hi = index + after + 1
    return max(0, index - before), hi if length is None else min(hi, length)


@dataclass(frozen=True)
class Divergence:
    """The first index where two id lists part, and where that is in the text.

    ``byte_offset`` is the offset in the UTF-8 text where the streams part:
    the text consumed by the common-prefix tokens (see :func:`text_offset`).
    ``offset_exact`` is False when some common-prefix piece could not be
    matched against the text (normalised WPM/UGM pieces, dropped bytes), in
    which case ``byte_offset`` is where alignment stopped: a lower bound.

    >>> Divergence(0, 0, True, (1,), ()).window()
    ((1,), ())
    """

    index: int
    byte_offset: int
    offset_exact: bool
    reference_ids: tuple[int, ...]
    port_ids: tuple[int, ...]

    def window(self, before: int = BEFORE, after: int = AFTER) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Ids ``index-before .. index+after`` (inclusive) of both lists.

        >>> Divergence(3, 0, True, tuple(range(10)), tuple(range(10, 20))).window(1, 1)
        ((2, 3, 4), (12, 13, 14))
        """
        lo, hi = window_bounds(self.index, None, before, after)
        return self.reference_ids[lo:hi], self.port_ids[lo:hi]

    @property
    def window_start(self) -> int:
        """Index of the first id in :meth:`window` (for labelling).

        >>> Divergence(1, 0, True, (), ()).window_start
        0
        """
        return window_bounds(self.index)[0]


def first_index(a: Sequence, b: Sequence) -> int | None:
    """Index of the first position where ``a`` and ``b`` differ, else None.

    A strict prefix differs at the shorter length.

    >>> first_index([1, 2], [1, 2, 3]), first_index(b"ab", b"ab"), first_index([], [0])
    (2, None, 0)
    """
    if a == b:  # most comparisons agree: no walk (a list and a tuple are never equal: walked)
        return None
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return None if len(a) == len(b) else n


def text_offset(text: bytes, pieces: Sequence[bytes]) -> tuple[int, bool]:
    """Bytes of ``text`` consumed by ``pieces`` in order, and whether exactly.

    Not every token maps to whole bytes of the text, so each piece is tried
    in this order and the first that matches at the cursor advances it:
    1. the piece verbatim (BPE, byte tokens, special tokens parsed from text);
    2. the piece without its leading spaces (SPM's added space prefix);
    3. either of those after skipping C-space bytes of the text (LSTRIP/RSTRIP
       and UGM's whitespace collapsing swallow spaces);
    4. an ASCII-case-insensitive match (WPM lowercases).
    A piece matching none (BOS/EOS/CLS/SEP added by add_special, empty
    pieces of control tokens, accent-stripped WPM pieces) consumes nothing;
    if it is non-empty the result is marked inexact.

    >>> text_offset(b"Hello world", [b"<s>", b" Hello", b" world"])
    (11, False)
    >>> text_offset(b"a  <mask>", [b"a", b"<mask>"])
    (9, True)
    """
    cursor, exact = 0, True
    for piece in pieces:
        step = _match(text, cursor, piece)
        if step is None:
            exact = exact and not piece
            continue
        cursor = step
    return cursor, exact


def _match(text: bytes, cursor: int, piece: bytes) -> int | None:
    """New cursor if ``piece`` can be aligned at ``cursor`` (see text_offset)."""
    if not piece:
        return None
    skipped = cursor
    while skipped < len(text) and text[skipped] in _C_SPACE:
        skipped += 1
    for start in (cursor, skipped):
        for p in (piece, piece.lstrip(b" ")):
            if p and text.startswith(p, start):
                return start + len(p)
            if p and text[start:start + len(p)].lower() == p.lower():
                return start + len(p)
    return None


def first_divergence(reference_ids: Sequence[int], port_ids: Sequence[int], *,
                     text: bytes = b"",
                     reference_pieces: Sequence[bytes] = ()) -> Divergence | None:
    """The first divergence of ``port_ids`` from ``reference_ids``, or None.

    ``reference_pieces[k]`` is the reference's piece (special=True) of
    ``reference_ids[k]``; only the common prefix's pieces are used. Without
    pieces the byte offset is 0 and marked inexact unless the index is 0.

    >>> d = first_divergence([9, 1], [9, 2], text=b"xy", reference_pieces=[b"x", b"y"])
    >>> (d.index, d.byte_offset, d.reference_ids, d.port_ids)
    (1, 1, (9, 1), (9, 2))
    """
    index = first_index(reference_ids, port_ids)
    if index is None:
        return None
    common = list(reference_pieces[:index])
    offset, exact = text_offset(text, common)
    exact = exact and len(common) == index
    return Divergence(index, offset, exact, tuple(reference_ids), tuple(port_ids))


def first_byte_divergence(reference: bytes, port: bytes) -> Divergence | None:
    """Decode outputs compared byte for byte: the index is a byte offset.

    >>> first_byte_divergence(b" a", b"a").index
    0
    """
    index = first_index(reference, port)
    if index is None:
        return None
    return Divergence(index, index, True, tuple(reference), tuple(port))


def token_spans(text: bytes, pieces: Sequence[bytes]) -> list[tuple[int, int]]:
    """(start, end) bytes of ``text`` each piece covers, aligned as :func:`text_offset`
    does; a piece that matches no text (BOS, a normalised piece) gets an empty span.

    >>> token_spans(b"Hello world", [b"<s>", b"Hello", b" world"])
    [(0, 0), (0, 5), (5, 11)]
    """
    cursor, out = 0, []
    for piece in pieces:
        step = _match(text, cursor, piece)
        if step is None:
            out.append((cursor, cursor))
            continue
        out.append((cursor, step))  # spaces the token swallowed (LSTRIP, SPM's prefix) are its own
        cursor = step
    return out
