"""Divergence signatures: a stand-in for a divergence's cause, from llama.cpp's own classes.

encode, golden, known, crosscheck: the class of the character where the streams part
(llama.cpp's Unicode flags: letter, digit, space, newline, punct, symbol, mark,
control, unassigned; ``/non-ascii`` marked), or ``special`` where a special token's
text starts there under parse_special. decode: the kind of token whose output holds
the first divergent byte, and the edit there. piece: the kind of token.

>>> edit(b" ab", b"ab", 0)
'drops space'
"""

from __future__ import annotations

#: GGUF tokenizer.ggml.token_type codes -> the kind a signature names.
TOKEN_KINDS = {1: "normal", 2: "unknown", 3: "control", 4: "user_defined", 5: "unused", 6: "byte"}


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


def edit(ref: bytes, port: bytes, i: int) -> str:
    """How ``port`` departs from ``ref`` at byte ``i``: drops, adds or replaces a character.

    >>> edit(b" ab", b"ab", 0), edit(b"ab", b"a b", 1), edit(b"a\\xe3", "a\\ufffd".encode(), 1)
    ('drops space', 'adds space', 'replaces invalid-utf8 with symbol')
    """
    r = _char_len(ref, i) if i < len(ref) else 0
    p = _char_len(port, i) if i < len(port) else 0
    tail = 8
    if r and ref[i + r:i + r + tail] == port[i:i + tail]:
        return f"drops {class_at(ref, i)}"
    if p and port[i + p:i + p + tail] == ref[i:i + tail]:
        return f"adds {class_at(port, i)}"
    return f"replaces {class_at(ref, i)} with {class_at(port, i)}"


