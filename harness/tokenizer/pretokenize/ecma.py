"""Translate a std::regex ECMAScript pattern (as libstdc++ reads it) into Python ``regex``.

Only what changes meaning is rewritten; structure (groups, alternation,
greedy/lazy quantifiers, lookaheads) is the same backtracking semantics in
both engines. Rewritten, because libstdc++ runs in the "C" locale:

- ``\\s``/``\\S`` -> ``[\\t\\n\\v\\f\\r ]`` and its complement (Python's would be Unicode);
- ``\\d``, ``\\w``, ``\\b`` -> ASCII-only forms;
- ``.`` -> not \\n, \\r (and not U+2028/U+2029 for wregex);
- ``$`` -> end of the segment only (``\\Z``), never "before a final newline";
- every literal char -> a \\u/\\U escape, so no char is special to Python;
- constructs ECMAScript lacks (``(?i:``, possessive ``++``, lookbehind, ``\\p``)
  raise RegexNotSupported, like std::regex's constructor throwing.

>>> ecma_to_python("\\\\s+(?!\\\\S)", wide=False)
'[\\\\t\\\\n\\\\x0b\\\\x0c\\\\r ]+(?![^\\\\t\\\\n\\\\x0b\\\\x0c\\\\r ])'
"""

from __future__ import annotations

from harness.errors import RegexNotSupported

_SPACE = "\\t\\n\\x0b\\x0c\\r "
_WORD = "A-Za-z0-9_"
_CLASS_ESCAPES = {"s": _SPACE, "d": "0-9", "w": _WORD}
_CHAR_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\f", "v": "\v", "0": "\0"}
_B = f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))"
_NOT_B = f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))"


def _lit(ch: str) -> str:
    cp = ord(ch)
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def _escape_char(expr: str, i: int) -> tuple[str, int]:
    """A character escape at expr[i] == '\\\\' -> (the char, next index)."""
    if i + 1 >= len(expr):
        raise RegexNotSupported(f"regex {expr!r} ends with a lone backslash")
    c = expr[i + 1]
    if c in _CHAR_ESCAPES:
        return _CHAR_ESCAPES[c], i + 2
    if c == "x" and len(expr) >= i + 4:
        return chr(int(expr[i + 2:i + 4], 16)), i + 4
    if c == "u" and len(expr) >= i + 6:
        return chr(int(expr[i + 2:i + 6], 16)), i + 6
    if c == "c" and i + 2 < len(expr):
        return chr(ord(expr[i + 2]) % 32), i + 3
    if c.isalnum():
        raise RegexNotSupported(f"escape \\{c} in {expr!r} is not emulated (std::regex would "
                                "treat it as a class, backreference or error)")
    return c, i + 2  # identity escape of a syntax char: \[ \] \- \\ \$ ...


def _bracket(expr: str, i: int, wide: bool) -> tuple[str, int]:
    """A bracket expression starting at expr[i] == '[' -> (Python class, next index)."""
    i += 1
    negate = i < len(expr) and expr[i] == "^"
    i += negate
    if i < len(expr) and expr[i] == "]":  # ECMAScript: [] matches nothing, [^] anything
        return ("[\\s\\S]" if negate else "(?!)"), i + 1
    items: list[str] = []
    while True:
        if i >= len(expr):
            raise RegexNotSupported(f"unterminated bracket in {expr!r}")
        ch = expr[i]
        if ch == "]":
            break
        if ch == "\\" and expr[i + 1:i + 2] in ("s", "d", "w"):
            items.append(_CLASS_ESCAPES[expr[i + 1]])
            i += 2
            continue
        if ch == "\\" and expr[i + 1:i + 2] in ("S", "D", "W", "b", "B"):
            raise RegexNotSupported(f"\\{expr[i + 1]} inside a bracket in {expr!r} is not emulated")
        lo, i = _escape_char(expr, i) if ch == "\\" else (ch, i + 1)
        if expr[i:i + 1] == "-" and expr[i + 1:i + 2] not in ("]", ""):
            j = i + 1
            hi, i = _escape_char(expr, j) if expr[j] == "\\" else (expr[j], j + 1)
            if ord(hi) < ord(lo):
                raise RegexNotSupported(f"range {lo!r}-{hi!r} out of order in {expr!r} (error_range)")
            items.append(_lit(lo) + "-" + _lit(hi))
        else:
            items.append(_lit(lo))
    return ("[^" if negate else "[") + "".join(items) + "]", i + 1


def _quantifier_brace(expr: str, i: int) -> tuple[str, int]:
    j = expr.find("}", i)
    body = expr[i + 1:j] if j > 0 else ""
    parts = body.split(",")
    if j < 0 or not parts[0].isdigit() or len(parts) > 2 or (len(parts) == 2 and parts[1] and not parts[1].isdigit()):
        raise RegexNotSupported(f"bad brace quantifier at {i} in {expr!r} (std::regex: error_badbrace)")
    return expr[i:j + 1], j + 1


def ecma_to_python(expr: str, wide: bool) -> str:
    """The Python ``regex`` (V0) source equivalent to libstdc++'s reading of ``expr``."""
    out: list[str] = []
    i, after_quant = 0, False
    while i < len(expr):
        ch = expr[i]
        quant = False
        if ch == "\\":
            c = expr[i + 1:i + 2]
            if c in ("s", "d", "w"):
                piece, i = "[" + _CLASS_ESCAPES[c] + "]", i + 2
            elif c in ("S", "D", "W"):
                piece, i = "[^" + _CLASS_ESCAPES[c.lower()] + "]", i + 2
            elif c in ("b", "B"):
                piece, i = (_B if c == "b" else _NOT_B), i + 2
            else:
                lit, i = _escape_char(expr, i)
                piece = _lit(lit)
        elif ch == "[":
            piece, i = _bracket(expr, i, wide)
        elif ch == "(":
            if expr.startswith("(?", i) and expr[i + 2:i + 3] not in (":", "=", "!"):
                raise RegexNotSupported(f"group syntax {expr[i:i + 4]!r} in {expr!r} is not ECMAScript: "
                                        "std::regex throws, so llama.cpp fails with 'Failed to process regex'")
            piece = expr[i:i + 3] if expr.startswith("(?", i) else "("
            i += len(piece)
        elif ch in ")|":
            piece, i = ch, i + 1
        elif ch in "*+?":
            if after_quant and ch != "?":
                raise RegexNotSupported(f"'{ch}' after a quantifier in {expr!r}: std::regex throws")
            piece, i, quant = ch, i + 1, True
        elif ch == "{":
            piece, i = _quantifier_brace(expr, i)
            quant = True
        elif ch == ".":
            piece, i = ("[^\\n\\r\\u2028\\u2029]" if wide else "[^\\n\\r]"), i + 1
        elif ch == "$":
            piece, i = "\\Z", i + 1
        elif ch == "^":
            raise RegexNotSupported(f"'^' in {expr!r} is not emulated")
        else:
            piece, i = _lit(ch), i + 1
        out.append(piece)
        after_quant = quant and not (after_quant and piece == "?")
    return "".join(out)
