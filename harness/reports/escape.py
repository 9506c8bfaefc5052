"""Escaping for people: a piece or a text rendered so every byte reads as itself.

>>> render_token(b" a\\n\\xe3")
"' a\\\\n\\\\xe3'"
"""

from __future__ import annotations

import unicodedata

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", "'": "\\'"}


def reads_as_itself(ch: str) -> bool:
    """Printable, not whitespace (except ' '), and not a combining mark: marks
    would silently attach to the quote or the previous character."""
    if ch == " ":
        return True
    return ch.isprintable() and not ch.isspace() and unicodedata.category(ch)[0] != "M"


def render_char(ch: str) -> str:
    """One code point, escaped if it would not read as itself on a terminal.

    >>> render_char("a"), render_char("\\xa0"), render_char("\\n")
    ('a', '\\\\u00a0', '\\\\n')
    """
    if ch in _NAMED:
        return _NAMED[ch]
    if reads_as_itself(ch):
        return ch
    cp = ord(ch)
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def render_token(piece: bytes) -> str:
    """A piece (bytes) as a quoted, readable string, like minbpe's render_token.

    Control and non-ASCII whitespace characters become ``\\uXXXX``; bytes
    that are not valid UTF-8 become ``\\xNN`` (lowercase), so a partial
    UTF-8 piece is told apart from a whole code point.

    >>> render_token(b"\\xc2\\xa0x"), render_token(b"\\xff")
    ("'\\\\u00a0x'", "'\\\\xff'")
    """
    out, i = [], 0
    while i < len(piece):
        for n in (1, 2, 3, 4):
            try:
                ch = piece[i:i + n].decode("utf-8")
            except UnicodeDecodeError:
                continue
            out.append(render_char(ch))
            i += n
            break
        else:
            out.append(f"\\x{piece[i]:02x}")
            i += 1
    return "'" + "".join(out) + "'"


def py_literal(text: str) -> str:
    r"""A double-quoted Python literal of ``text`` with no single quote in it
    (so it can sit inside shell single quotes) and non-printables escaped.

    >>> print(py_literal("it's\xa0a\n"))
    "it\x27s\xa0a\n"
    """
    out = []
    for ch in text:
        cp = ord(ch)
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch == "'":
            out.append("\\x27")
        elif ch in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[ch])
        elif reads_as_itself(ch):
            out.append(ch)
        elif cp < 0x100:
            out.append(f"\\x{cp:02x}")
        else:
            out.append(f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}")
    return '"' + "".join(out) + '"'
