"""Divergence signatures: what llama.cpp emitted where the two outputs part, and the edit there.

A signature stands in for a cause that no diagnosis explains (harness.engine.causes), so
it is built from the *reference* side only, never from what the port happened to put
there: ``(family, edit, what)``, where

- ``family`` is the check family: ``encode`` (golden, known, encode, crosscheck),
  ``decode`` or ``piece``: findings merge across the checks of one family;
- ``edit`` is how the port departs: ``replaces``, ``drops`` or ``adds`` (tokens for
  encode, characters for decode);
- ``what`` is what llama.cpp emitted there: a kind of token (``added special``,
  ``special``, ``byte token``, ``unknown token``, ``leading space``, ``whitespace``) or the
  llama.cpp class of its first character (``letter``, ``digit``, ``invalid-utf8`` ...);
  where the port adds tokens, the position (``start``, ``inside``, ``end``).

>>> token_edit([5, 6, 7], [5, 9, 6, 7], 1), token_edit([5, 6, 7], [5, 7], 1), token_edit([5, 6], [5, 8], 1)
('adds', 'drops', 'replaces')
>>> byte_edit(b" ab", b"ab", 0)
'drops'
"""

from __future__ import annotations

#: GGUF tokenizer.ggml.token_type codes -> the kind a signature names.
TOKEN_KINDS = {1: "normal", 2: "unknown", 3: "control", 4: "user_defined", 5: "unused", 6: "byte"}


def attr_kind(attr: int) -> str:
    """The kind of a token from llama.cpp's attribute bits (harness.tokenizer.vocab), the type
    bits in the order llama.cpp's own checks take them.

    >>> attr_kind(8), attr_kind(8 | 2), attr_kind(4), attr_kind(0)
    ('control', 'unused', 'normal', 'undefined')
    """
    from harness.tokenizer.vocab import BYTE, CONTROL, NORMAL, UNKNOWN, UNUSED, USER_DEFINED
    for bit, kind in ((BYTE, "byte"), (UNKNOWN, "unknown"), (UNUSED, "unused"), (CONTROL, "control"),
                      (USER_DEFINED, "user_defined"), (NORMAL, "normal")):
        if attr & bit:
            return kind
    return "undefined"


def char_class(ch: str) -> str:
    """llama.cpp's own class of one character (its Unicode 15.1 flag table), for
    divergence signatures.

    >>> [char_class(c) for c in "a7 \\n\\u0301\\u00a0-"]
    ['letter', 'digit', 'space', 'newline', 'mark', 'space', 'punct']
    """
    from harness.tokenizer import unicode as U
    if ch in "\r\n":
        return "newline"
    flags = U.cpt_flags(ord(ch))
    if flags & U.WHITESPACE:
        return "space"
    for bit, name in ((U.LETTER, "letter"), (U.NUMBER, "digit"), (U.PUNCTUATION, "punct"),
                      (U.SYMBOL, "symbol"), (U.ACCENT_MARK, "mark"), (U.CONTROL, "control"),
                      (U.SEPARATOR, "separator")):
        if flags & bit:
            return name
    return "unassigned"


def class_at(data: bytes, offset: int) -> str:
    """Class of the character at (or containing) byte ``offset``; 'end' past the end,
    'invalid-utf8' where the bytes are not UTF-8."""
    if offset >= len(data):
        return "end"
    while offset > 0 and (data[offset] & 0xC0) == 0x80:
        offset -= 1
    for n in (1, 2, 3, 4):
        try:
            return char_class(data[offset:offset + n].decode("utf-8"))
        except UnicodeDecodeError:
            continue
    return "invalid-utf8"


def _char_len(data: bytes, i: int) -> int:
    """Bytes of the UTF-8 character at ``i`` (1 for an invalid byte)."""
    for n in (1, 2, 3, 4):
        try:
            data[i:i + n].decode("utf-8")
            return n
        except UnicodeDecodeError:
            continue
    return 1


FAMILY = {"golden": "encode", "known": "encode", "encode": "encode", "crosscheck": "encode",
          "decode": "decode", "piece": "piece"}
_LOOKAHEAD = 4  # tokens (or bytes x2) that must line up again after a drop or an insertion


def token_edit(ref, port, i: int) -> str:
    """How ``port`` departs from ``ref`` at token ``i``: ``adds``, ``drops`` or ``replaces``."""
    if i >= len(ref):
        return "adds"
    if i >= len(port):
        return "drops"
    k = _LOOKAHEAD
    if list(port[i + 1:i + 1 + k]) == list(ref[i:i + k]):
        return "adds"
    if list(ref[i + 1:i + 1 + k]) == list(port[i:i + k]):
        return "drops"
    return "replaces"


def divergent_span(ref, port, i: int) -> list:
    """llama.cpp's ids from the first divergent one, ``i``, up to the tail the two outputs share.

    >>> divergent_span([29, 128247], [1472, 82, 29], 0), divergent_span([5, 6, 9], [5, 7, 9], 1)
    ([29, 128247], [6])
    """
    ref, port = list(ref[i:]), list(port[i:])
    while ref and port and ref[-1] == port[-1]:
        ref.pop()
        port.pop()
    return ref


def byte_edit(ref: bytes, port: bytes, i: int) -> str:
    """How ``port`` departs from ``ref`` at byte ``i``: ``drops``, ``adds`` or ``replaces`` a character."""
    r = _char_len(ref, i) if i < len(ref) else 0
    p = _char_len(port, i) if i < len(port) else 0
    tail = 2 * _LOOKAHEAD
    if r and ref[i + r:i + r + tail] == port[i:i + tail]:
        return "drops"
    if p and port[i + p:i + p + tail] == ref[i:i + tail]:
        return "adds"
    return "replaces"


_SPACES = (b" ", "\u2581".encode())


def piece_edit(ref: bytes, port: bytes) -> str:
    r"""The edit from llama.cpp's piece of a token to the port's, as a person would fix it
    (never the class of the character where the bytes part, which splits one defect once
    per character class).

    >>> piece_edit(b" the", b"the"), piece_edit(b"\xe3", b"\xef\xbf\xbd"), piece_edit(b"a", b""), piece_edit(b" ", b"")
    ('leading space dropped', 'invalid UTF-8 replaced', 'empty', 'leading space dropped')
    >>> piece_edit(b"\n", b"<0x0A>"), piece_edit(b"ab", b"abc"), piece_edit(b"abc", b"ab"), piece_edit(b"ab", b"xy")
    ('byte as its text', 'bytes added', 'bytes dropped', 'other bytes')
    """
    for space in _SPACES:  # first: a piece that is one space, stripped, is empty too
        if ref.startswith(space) and port == ref[len(space):]:
            return "leading space dropped"
        if port.startswith(space) and ref == port[len(space):]:
            return "leading space added"
    if not port:
        return "empty"
    try:
        ref.decode("utf-8")
    except UnicodeDecodeError:
        if "\ufffd".encode() in port:
            return "invalid UTF-8 replaced"
    if len(ref) == 1 and port.upper() == f"<0X{ref[0]:02X}>".encode():
        return "byte as its text"
    if ref in port:
        return "bytes added"
    if port in ref:
        return "bytes dropped"
    return "other bytes"


def _continuation(data: bytes, i: int) -> bool:
    return 0 <= i < len(data) and 0x80 <= data[i] < 0xC0


def differing_parts(ref: bytes, port: bytes) -> tuple[bytes, bytes]:
    r"""The parts of two outputs between their common head and tail, cut at character boundaries.

    >>> differing_parts(b"ab\xe3c", "ab\ufffdc".encode()), differing_parts(b"a b", b"ab")
    ((b'\xe3', b'\xef\xbf\xbd'), (b' ', b''))
    """
    i = 0
    while i < min(len(ref), len(port)) and ref[i] == port[i]:
        i += 1
    while i > 0 and (_continuation(ref, i) or _continuation(port, i)):
        i -= 1
    j = 0
    while j < min(len(ref), len(port)) - i and ref[-1 - j] == port[-1 - j]:
        j += 1
    while j > 0 and (_continuation(ref, len(ref) - j) or _continuation(port, len(port) - j)):
        j -= 1
    return ref[i:len(ref) - j], port[i:len(port) - j]


def output_edit(ref: bytes, port: bytes) -> str:
    r"""The edit from llama.cpp's decoded output to the port's where no token's piece explains
    it, as a person would fix it (never the kind of token or character where they part, which
    splits one defect once per kind).

    >>> output_edit(b"a\xe3", "a\ufffd".encode()), output_edit(b"<s>a", b"a"), output_edit(b"a", b"a b")
    ('invalid UTF-8 replaced', 'bytes dropped', 'bytes added')
    >>> output_edit(b"a .", b"a."), output_edit(b"a", b" a"), output_edit(b"a b", "a\u2581b".encode()), output_edit(b"ab", b"xy")
    ('spaces differ', 'spaces differ', 'spaces differ', 'other bytes')

    A space dropped, a space added and a space for another are one difference: the spaces
    (a clean-up rule, a prefix space, an escaped space), which one rule of the port decides.
    """
    r, p = differing_parts(ref, port)
    try:
        r.decode("utf-8")
    except UnicodeDecodeError:
        if "\ufffd".encode() in p:
            return "invalid UTF-8 replaced"
    if _unspaced(r) == _unspaced(p):
        return "spaces differ"
    if not p:
        return "bytes dropped"
    if not r:
        return "bytes added"
    return "other bytes"


def _unspaced(data: bytes) -> bytes:
    return data.replace("\u2581".encode(), b"").translate(None, b" \t\r\n")


#: What llama.cpp emitted at an encode divergence when that is the text's content (not a
#: wrapper token, a special, a byte or unknown token): the kinds a token further on may overrule.
CONTENT_KINDS = ("same text, other tokens", "other text", "whitespace", "newline")


#: The edit of a port whose piece of a token is llama.cpp's piece of another token: an id map
#: the port has wrong (ids narrowed to 16 bits, shifted by one, renumbered), whatever the bytes.
ANOTHER_TOKEN = "another token's piece"
#: Edits :data:`ANOTHER_TOKEN` overrules where it holds: those that say only that bytes differ.
BYTES_EDITS = ("bytes added", "bytes dropped", "other bytes")

#: Piece edits that are one defect whatever the token's kind (a lossy UTF-8 round trip, a
#: stripped space, an id map): their signature names no kind, so byte and normal tokens are one cause.
KIND_FREE_EDITS = ("invalid UTF-8 replaced", "leading space dropped", "leading space added", "byte as its text",
                   ANOTHER_TOKEN)
#: Of those, the edits of how a piece is rendered, not of what the token's text is.
RENDERING_EDITS = ("invalid UTF-8 replaced", "leading space dropped", "leading space added")


def piece_signature(edit: str, kind: str) -> tuple:
    """The signature of a piece defect: its edit, and the token kind where the kind matters.

    >>> piece_signature("invalid UTF-8 replaced", "byte"), piece_signature("other bytes", "control")
    (('piece', 'invalid UTF-8 replaced', 'any token'), ('piece', 'other bytes', 'control token'))
    """
    return ("piece", edit, "any token" if edit in KIND_FREE_EDITS else f"{kind} token")


def piece_kind(piece: bytes) -> str:
    """What a token's piece is, for a signature: ``leading space`` (a space, or SPM's
    escaped one, before more), ``whitespace``, ``newline``, ``invalid-utf8``, or the
    llama.cpp class of its first character.

    >>> piece_kind(b" the"), piece_kind("\\u2581a".encode()), piece_kind(b"\\n\\n"), piece_kind(b"7")
    ('leading space', 'leading space', 'newline', 'digit')
    """
    for space in (b" ", "\u2581".encode()):
        if piece.startswith(space) and piece.strip(b" ").replace("\u2581".encode(), b""):
            return "leading space"
    if piece and not piece.strip(b" \t\r\n\v\f"):
        return "newline" if b"\n" in piece or b"\r" in piece else "whitespace"
    what = class_at(piece, 0)
    return "whitespace" if what == "space" else what


def locus(f) -> str | int | None:
    """Where a finding's divergence is, as the thing a person would fix: llama.cpp's character
    at the first divergent byte of the text (encode), the id whose piece holds the first
    divergent byte (decode), or the id (piece). None where it cannot be told.

    >>> from harness.reports.diff import Divergence
    >>> from harness.reports.finding import Finding
    >>> locus(Finding("encode", "v", None, False, False, "a\xa0b", Divergence(1, 1, True, (1,), (2,))))
    '\xa0'
    >>> locus(Finding("piece", "v", None, False, False, "", Divergence(0, 0, True, b"a", b"b"), decoded_ids=(7,)))
    7
    """
    d = f.divergence
    if d is None:
        return None
    if f.check == "piece":
        return f.decoded_ids[0] if f.decoded_ids else None
    if f.check == "decode":
        pos = 0
        for i in f.decoded_ids:
            piece = f.pieces.get(i)
            if piece is None:
                return None
            pos += len(piece)
            if pos > d.index:
                return i
        return None
    data = f.text.encode("utf-8", "surrogatepass") if isinstance(f.text, str) else bytes(f.text)
    off = d.byte_offset
    if not 0 <= off < len(data):
        return None
    for n in (1, 2, 3, 4):
        try:
            return data[off:off + n].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None
