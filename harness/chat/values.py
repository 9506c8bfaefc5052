"""llama.cpp's template values in Python: how its engine's strings, JSON and printing behave
(common/jinja/value.cpp, string.cpp, runtime.h), for :mod:`harness.chat.engine`.

- string methods: only llama.cpp's (``strip``, ``split``, ``upper``, ...), with its byte-wise
  ASCII semantics (:data:`STRING_METHODS`);
- ``tojson``: insertion order, ``", "``/``": "`` separators, no HTML escaping, no ASCII
  escaping unless asked (:func:`tojson`);
- printing: a value's text where a string is wanted (:func:`to_text`, ``as_string``) and what
  ``{{ value }}`` writes (:func:`output_text`), which are not the same in llama.cpp.

>>> to_text([1, "a"]), output_text([1, "a"])
("[1, 'a']", '1a')
"""

from __future__ import annotations

import json

import jinja2

from harness.chat.stats import Stats
from harness.errors import HarnessError


class TemplateRaised(HarnessError):
    """The template raised while rendering (``raise_exception`` or an error llama.cpp's engine raises too)."""


_SPACE = " \t\n\v\f\r"  # C isspace in the C locale: llama.cpp strips and title-cases on these bytes only


def _ascii(fn, s: str) -> str:
    """``fn`` applied to the ASCII letters of ``s`` only (llama.cpp's ``::toupper`` on bytes).

    >>> _ascii(str.upper, "éa")
    'éA'
    """
    return "".join(fn(c) if c.isascii() else c for c in s)


def title_case(s: str) -> str:
    """llama.cpp's ``titlecase``: a letter after C whitespace is upper-cased, every other one lowered.

    >>> title_case("hello wORLD-x")
    'Hello World-x'
    """
    out, up = [], True
    for c in s:
        if c in _SPACE:
            out.append(c)
            up = True
        else:
            out.append(_ascii(str.upper if up else str.lower, c))
            up = False
    return "".join(out)


def capitalize(s: str) -> str:
    """llama.cpp's ``capitalize``: the first byte upper-cased, the rest lowered (ASCII only).

    >>> capitalize("hELLO")
    'Hello'
    """
    return _ascii(str.upper, s[:1]) + _ascii(str.lower, s[1:])


def strip_chars(s: str, chars=None, left=True, right=True) -> str:
    """llama.cpp's ``strip``: C whitespace (or ``chars``) off the ends.

    >>> strip_chars("\\u3000 a \\n")
    '\\u3000 a'
    """
    chars = _SPACE if chars is None or isinstance(chars, jinja2.Undefined) else str(chars)
    if left:
        s = s.lstrip(chars)
    return s.rstrip(chars) if right else s


def _split(s: str, sep=" ", maxsplit=-1) -> list:
    """llama.cpp's ``split``: no separator means one space, not Python's runs of whitespace.

    >>> _split("a  b")
    ['a', '', 'b']
    """
    if sep == "":
        raise TemplateRaised("empty separator")
    return s.split(sep, maxsplit)


def _rsplit(s: str, sep=" ", maxsplit=-1) -> list:
    if sep == "":
        raise TemplateRaised("empty separator")
    return s.rsplit(sep, maxsplit)


def _string_only(name):
    def check(*args):
        if not all(isinstance(a, str) for a in args):
            raise TemplateRaised(f"{name}: expected string arguments, got {args!r:.80}")
        return getattr(str, name)(*args)
    return check


def _format(s: str, *args) -> str:
    """llama.cpp's ``str.format``: each ``{}`` takes the next argument as text; any other ``{``
    raises (value.cpp: "format() only supports simple '{}' placeholders").

    >>> _format("<think{}>", ":x"), _format("a}b")
    ('<think:x>', 'a}b')
    """
    out, arg, i = [], 0, 0
    while i < len(s):
        if s[i] != "{":
            out.append(s[i])
        elif s[i + 1:i + 2] == "}" and arg < len(args):
            out.append(to_text(args[arg]))
            arg, i = arg + 1, i + 1
        else:
            raise TemplateRaised("format() only supports simple '{}' placeholders, one argument each")
        i += 1
    return "".join(out)


#: The string methods llama.cpp's engine has (value.cpp, value_string_t::get_builtins); any
#: other name is undefined there (calling it raises).
STRING_METHODS = {
    "upper": lambda s: _ascii(str.upper, s), "lower": lambda s: _ascii(str.lower, s),
    "strip": lambda s, chars=None: strip_chars(s, chars), "lstrip": lambda s, chars=None: strip_chars(s, chars, right=False),
    "rstrip": lambda s, chars=None: strip_chars(s, chars, left=False), "title": title_case, "capitalize": capitalize,
    "startswith": _string_only("startswith"), "endswith": _string_only("endswith"), "split": _split,
    "rsplit": _rsplit, "replace": lambda s, old, new, count=-1: s.replace(old, new, count if count > 0 else -1),
    "length": lambda s: len(s.encode("utf-8")), "format": _format,
}
#: dict methods llama.cpp's objects have (value_object_t::get_builtins); ``obj.name`` prefers them to a key.
DICT_METHODS = ("get", "keys", "values", "items")
LIST_METHODS = ("append", "pop", "sort", "reverse", "index")


def _json(value, indent, item_sep, key_sep, level=0) -> str:
    """llama.cpp's ``value_to_json``: insertion order, its separators, floats as ``ostream`` prints them."""
    pad = "\n" + " " * (indent * (level + 1)) if indent is not None else ""
    end = "\n" + " " * (indent * level) if indent is not None else ""
    if value is None or isinstance(value, jinja2.Undefined):
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        items = [_json(str(k), None, item_sep, key_sep) + key_sep + _json(v, indent, item_sep, key_sep, level + 1)
                 for k, v in value.items()]
    elif isinstance(value, (list, tuple)) or hasattr(value, "__next__"):  # a filter's generator is a list there
        items = [_json(v, indent, item_sep, key_sep, level + 1) for v in value]
    else:
        return "null"
    open_, close = ("{", "}") if isinstance(value, dict) else ("[", "]")
    return open_ + (pad + (item_sep + pad).join(items) + end if items else "") + close


def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False) -> str:
    """llama.cpp's ``tojson`` filter (value.cpp): no sorting (``sort_keys`` raises), no HTML escaping.

    >>> tojson({"b": 1, "a": [1.5, "é"]})
    '{"b": 1, "a": [1.5, "é"]}'
    >>> tojson({"a": 1}, indent=2)
    '{\\n  "a": 1\\n}'
    """
    if sort_keys:
        raise TemplateRaised("tojson sort_keys=true not implemented")
    Stats.mark_deep(value)
    indent = indent if isinstance(indent, int) and not isinstance(indent, bool) else None
    seps = list(separators) if isinstance(separators, (list, tuple)) else []
    item_sep = seps[0] if seps else (", " if indent is None else ",")
    key_sep = seps[1] if len(seps) > 1 else ": "
    out = _json(value, indent, item_sep, key_sep)
    return _ascii_escaped(out) if ensure_ascii else out


def _ascii_escaped(text: str) -> str:
    """``ensure_ascii``: each non-ASCII character as ``\\uXXXX``, one outside the BMP as its
    UTF-16 surrogate pair, lowercase hex (as llama.cpp's JSON writer).

    >>> print(_ascii_escaped("é\\U000113d5"))
    \\u00e9\\ud804\\udfd5
    """
    out = []
    for c in text:
        n = ord(c)
        if n < 0x80:
            out.append(c)
        elif n < 0x10000:
            out.append(f"\\u{n:04x}")
        else:
            n -= 0x10000
            out.append(f"\\u{0xD800 + (n >> 10):04x}\\u{0xDC00 + (n & 0x3FF):04x}")
    return "".join(out)


def to_text(value) -> str:
    """How llama.cpp prints a value (``as_string``): floats as ``%f`` without trailing zeros.

    >>> to_text(0.5), to_text(2.0), to_text(None), to_text(True)
    ('0.5', '2.0', 'None', 'True')
    """
    if isinstance(value, float):
        out = f"{value:f}".rstrip("0")
        return out + "0" if out.endswith(".") else out
    if isinstance(value, jinja2.Undefined):
        return ""
    if isinstance(value, list):
        return "[" + ", ".join(map(_repr, value)) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(map(_repr, value)) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_repr(k)}: {_repr(v)}" for k, v in value.items()) + "}"
    return str(value)


def output_text(value) -> str:
    """What ``{{ value }}`` prints in llama.cpp (runtime.h, ``gather_string_parts_recursive``): a
    string as it is, a number or a boolean as its text, a list's items one after another, and
    nothing for none, undefined or an object (Jinja2 prints ``None`` and a list's repr).

    >>> output_text(None), output_text([1, None, ["a", 2.5], {"k": 1}]), output_text(True), output_text({"a": 1})
    ('', '1a2.5', 'True', '')
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return to_text(value)
    if isinstance(value, (list, tuple)):
        return "".join(map(output_text, value))
    return ""


def _repr(value) -> str:
    """llama.cpp's ``value_to_string_repr``, an item of a printed list or dict: a string in single
    quotes as it is, or as JSON when it holds a single quote; anything else printed.

    >>> print(to_text([{"type": "text", "text": "a"}, "it's", 1, None]))
    [{'type': 'text', 'text': 'a'}, "it's", 1, None]
    """
    if isinstance(value, str):
        return _json(value, None, ", ", ": ") if "'" in value else f"'{value}'"
    return to_text(value)
