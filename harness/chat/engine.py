"""A Jinja2 environment that renders chat templates as llama.cpp's own engine (common/jinja/) does.

Every Python port renders chat templates with Jinja2; llama.cpp does not, it has its own
engine. :func:`environment` configures and extends Jinja2 so that each place where the two
differ follows llama.cpp (README, "Chat templates: the harness renderer", lists each one
with the llama.cpp source that decides it):

- whitespace: ``trim_blocks`` and ``lstrip_blocks`` on, one trailing newline dropped
  (common/jinja/lexer.cpp, "default config for chat template");
- ``tojson``: insertion order, ``", "``/``": "`` separators, no HTML escaping, no ASCII
  escaping unless asked (common/jinja/value.cpp, ``tojson`` and ``value_to_json``);
- string methods and filters: only llama.cpp's (``strip``, ``split``, ``upper``, ...), with
  its byte-wise ASCII semantics (common/jinja/string.cpp, value.cpp ``value_string_t``);
- undefined: a member of an undefined value is undefined, never an error (runtime.cpp,
  ``member_expression``); a ``for`` over a string raises, a ``for`` over a dict gives keys
  or (two names) pairs (runtime.cpp, ``for_statement``);
- globals: ``raise_exception`` raises ``Jinja Exception: <msg>``, ``strftime_now`` formats
  local time (value.cpp, ``global_builtins``); ``break``/``continue`` are statements.

>>> environment().from_string("{% for m in messages %}\\n  {{ m.content | tojson }}\\n{% endfor %}").render(
...     messages=[{"content": "é<"}])
'  "é<"\\n'
"""

from __future__ import annotations

import time

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.ext import loopcontrols
from jinja2.visitor import NodeTransformer

from harness.chat.stats import Stats, tracked_iter
from harness.chat.values import (DICT_METHODS, LIST_METHODS, STRING_METHODS, TemplateRaised, capitalize, strip_chars,
                                 title_case, output_text, to_text, tojson)

__all__ = ["TemplateRaised", "environment", "llama_add", "llama_in", "llama_iter"]


def raise_exception(message) -> None:
    """The template's own refusal, with llama.cpp's prefix (value.cpp, global ``raise_exception``)."""
    raise TemplateRaised(f"Jinja Exception: {message}")


def strftime_now(fmt) -> str:
    """Local time through C strftime, as llama.cpp's ``strftime_now``."""
    return time.strftime(str(fmt), time.localtime())


class GenerationBlock(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}`` (transformers' assistant mask): llama.cpp's parser
    renders the body as is (common/jinja/parser.cpp)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


class LlamaUndefined(jinja2.ChainableUndefined):
    """llama.cpp's undefined: members of it are undefined, it prints nothing, it is false."""

    __slots__ = ()

    def __add__(self, other):
        """``undefined + "text"`` is the text (runtime.cpp, workaround_concat_null_with_str)."""
        if isinstance(other, str):
            return other
        raise TemplateRaised("Cannot perform operation + on undefined values")

    __radd__ = __add__


def llama_iter(iterable, pairs: bool = False):
    """A ``for`` loop's sequence as llama.cpp makes it (runtime.cpp, ``for_statement``).

    >>> list(llama_iter({"a": 1})), list(llama_iter({"a": 1}, pairs=True)), list(llama_iter(LlamaUndefined()))
    (['a'], [('a', 1)], [])
    >>> llama_iter("ab")
    Traceback (most recent call last):
    ...
    harness.chat.values.TemplateRaised: Expected iterable or object type in for loop: got String
    """
    if isinstance(iterable, jinja2.Undefined):
        return []
    tracked_iter(iterable)
    if isinstance(iterable, dict):
        return list(iterable.items()) if pairs else list(iterable.keys())
    if isinstance(iterable, str):
        raise TemplateRaised("Expected iterable or object type in for loop: got String")
    return iterable


def llama_in(needle, haystack, negate: bool = False) -> bool:
    """``needle in haystack`` (``not in`` with ``negate``) as llama.cpp's binary expression runs it
    (runtime.cpp, ``binary_expression::execute``): anything in undefined is false, undefined
    in anything else raises, and so does anything in none; the rest is Jinja2's membership.
    Jinja2 finds an undefined in nothing and says false: Cohere2MoE's ``tool_call_id not in``
    on a tool message without one renders there and raises in llama-server.

    >>> llama_in("a", LlamaUndefined()), llama_in("a", LlamaUndefined(), negate=True), llama_in("a", ["a"])
    (False, True, True)
    >>> llama_in(LlamaUndefined(), ["a"], negate=True)
    Traceback (most recent call last):
    ...
    harness.chat.values.TemplateRaised: Cannot perform operation not in on undefined values
    """
    if isinstance(haystack, jinja2.Undefined):
        return negate
    if isinstance(needle, jinja2.Undefined):
        raise TemplateRaised(f"Cannot perform operation {'not in' if negate else 'in'} on undefined values")
    if haystack is None:
        raise TemplateRaised("Cannot perform operation on null values")
    return (needle not in haystack) if negate else (needle in haystack)


def _null(value) -> bool:
    return value is None or isinstance(value, jinja2.Undefined)


def llama_add(left, right, op: str = "+"):
    """``left + right`` (``left ~ right`` with ``op="~"``) as llama.cpp's binary expression runs it
    (runtime.cpp, ``binary_expression::execute``): none or undefined next to a string is the
    string (Python raises on ``None + "a"``, Jinja2's ``~`` prints ``None``); any other none or
    undefined raises; two numbers add (``~`` raises); two lists join; a string with anything is
    both printed and joined; anything else raises.

    >>> llama_add(None, "a"), llama_add("a", 1), llama_add(1, 2.5), llama_add([1], [2]), llama_add(None, "a", "~")
    ('a', 'a1', 3.5, [1, 2], 'a')
    >>> llama_add(1, 2, "~")
    Traceback (most recent call last):
    ...
    harness.chat.values.TemplateRaised: Unknown operator "~" between Integer and Integer
    """
    if _null(left) or _null(right):
        if isinstance(left, str) or isinstance(right, str):
            return left if isinstance(left, str) else right
        undefined = isinstance(left, jinja2.Undefined) or isinstance(right, jinja2.Undefined)
        raise TemplateRaised(f"Cannot perform operation {op} on undefined values" if undefined
                             else "Cannot perform operation on null values")
    if op == "+" and _number(left) and _number(right):
        return left + right
    if op == "+" and isinstance(left, list) and isinstance(right, list):
        return left + right
    if isinstance(left, str) or isinstance(right, str):
        return to_text(left) + to_text(right)
    raise TemplateRaised(f'Unknown operator "{op}" between {_type(left)} and {_type(right)}')


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _type(value) -> str:
    """llama.cpp's name of a value's type (value.h, ``type()``)."""
    kinds = ((bool, "Boolean"), (int, "Integer"), (float, "Float"), (str, "String"), (list, "Array"),
             (tuple, "Array"), (dict, "Object"))
    return next((name for kind, name in kinds if isinstance(value, kind)), type(value).__name__)


class _Membership(NodeTransformer):
    """Each ``a in b`` / ``a not in b`` of a template becomes ``__llama_in(a, b, negate)``, each
    ``a + b`` ``__llama_add(a, b)`` and each ``a ~ b ~ c`` ``__llama_add(__llama_add(a, b, "~"), c, "~")``
    (left to right, as llama.cpp's parser reads additive operators)."""

    def visit_Add(self, node):
        node = self.generic_visit(node)
        return self._call("__llama_add", [node.left, node.right], node.lineno)

    def visit_Concat(self, node):
        node = self.generic_visit(node)
        out = node.nodes[0]
        for operand in node.nodes[1:]:
            out = self._call("__llama_add", [out, operand, nodes.Const("~")], node.lineno)
        return out

    @staticmethod
    def _call(name: str, args: list, lineno: int):
        return nodes.Call(nodes.Name(name, "load"), args, [], None, None, lineno=lineno)

    def visit_Compare(self, node):
        node = self.generic_visit(node)
        if len(node.ops) == 1 and node.ops[0].op in ("in", "notin"):
            return nodes.Call(nodes.Name("__llama_in", "load"),
                              [node.expr, node.ops[0].expr, nodes.Const(node.ops[0].op == "notin")], [], None, None,
                              lineno=node.lineno)
        return node


class LlamaEnvironment(jinja2.Environment):
    """Jinja2 with llama.cpp's semantics: attribute lookup, for loops, stats for the caps probes."""

    def getattr(self, obj, attribute):
        if isinstance(obj, jinja2.Undefined) and attribute in ON_UNDEFINED:  # undefined.items() is [] there
            empty = ON_UNDEFINED[attribute]
            return lambda *a, **k: list(empty) if isinstance(empty, tuple) else empty
        if isinstance(obj, str) and not isinstance(obj, jinja2.Undefined):
            fn = STRING_METHODS.get(attribute)
            return self._used(obj, attribute, (lambda *a, **k: fn(obj, *a, **k)) if fn else self.undefined(obj=obj))
        if isinstance(obj, dict):
            if attribute in DICT_METHODS:
                return self._used(obj, attribute, getattr(obj, attribute))
            return self._item(obj, attribute)
        if isinstance(obj, list) and attribute in LIST_METHODS:
            return self._used(obj, attribute, getattr(obj, attribute))
        return super().getattr(obj, attribute)

    def getitem(self, obj, argument):
        if isinstance(obj, dict):
            return self._item(obj, argument)
        if isinstance(obj, (list, str)) and isinstance(argument, int):
            n = len(obj)
            i = argument + n if argument < 0 else argument
            return self._used(obj, "array_access", obj[i]) if 0 <= i < n else self.undefined(obj=obj)
        if isinstance(obj, (list, str)) and not isinstance(argument, slice):
            return self.undefined(obj=obj)  # a string or list indexed by anything else: undefined (member_expression)
        return super().getitem(obj, argument)

    def _item(self, obj: dict, key):
        if key in obj:
            return self._used(obj, "object_access", obj[key])
        return self.undefined(obj=obj, name=key)

    @staticmethod
    def _used(obj, op, value):
        Stats.mark(obj, op)
        Stats.mark(value)
        return value

    def _parse(self, source, name, filename):
        tree = super()._parse(source, name, filename)
        for loop in tree.find_all(nodes.For):
            pairs = isinstance(loop.target, nodes.Tuple)
            loop.iter = nodes.Call(nodes.Name("__llama_iter", "load"), [loop.iter, nodes.Const(pairs)], [], None, None,
                                   lineno=loop.lineno)
        return _Membership().visit(tree)


#: What a filter gives for an undefined input in llama.cpp (value.cpp, value_undefined_t::get_builtins).
ON_UNDEFINED = {**dict.fromkeys(("capitalize", "join", "lower", "replace", "safe", "string", "strip", "trim", "title",
                                 "truncate", "upper"), ""),
                **dict.fromkeys(("length", "sum", "wordcount"), 0),
                **dict.fromkeys(("items", "list", "map", "reject", "rejectattr", "reverse", "select", "selectattr",
                                 "sort", "unique"), ())}


#: Filters that, named without arguments, read a defined non-string input as its text first
#: (runtime.cpp, apply_filter: "Coercing %s to String"): ``[{'type': 'text'}] | trim`` is that list's text.
COERCED = ("capitalize", "lower", "replace", "strip", "trim", "title", "upper", "wordcount")


def _tracked(op, fn):
    """``fn`` (a filter or a test) marking its input used, with ``op``, for the caps probes; a filter
    of an undefined value gives llama.cpp's empty answer."""
    def wrapped(value, *args, **kwargs):
        Stats.mark(value, op)
        if isinstance(value, jinja2.Undefined) and op in ON_UNDEFINED:
            return list(ON_UNDEFINED[op]) if isinstance(ON_UNDEFINED[op], tuple) else ON_UNDEFINED[op]
        if op in COERCED and not args and not kwargs and not isinstance(value, (str, jinja2.Undefined)):
            value = to_text(value)
        return fn(value, *args, **kwargs)
    wrapped.jinja_pass_arg = getattr(fn, "jinja_pass_arg", None)
    if wrapped.jinja_pass_arg is not None:  # context/environment filters get it first: mark the value after it
        def wrapped(first, value, *args, **kwargs):  # noqa: F811
            Stats.mark(value, op)
            return fn(first, value, *args, **kwargs)
        wrapped.jinja_pass_arg = fn.jinja_pass_arg
    return wrapped


def _indent(value, width=4, first=False, blank=False) -> str:
    r"""llama.cpp's ``indent`` (value.cpp): lines split on ``\n`` alone (Jinja2's ``splitlines``
    also splits on U+2028, U+0085 and the other line breaks), and, as its ``std::getline`` loop
    does, no newline is written while the output is still empty.

    >>> _indent("a\u2028b\nc", 2) == "a\u2028b\n  c", _indent("\nx", 2), _indent("a\n", 2, blank=True)
    (True, 'x', 'a\n  ')
    """
    text = value if isinstance(value, str) else to_text(value)
    pad = " " * width if isinstance(width, int) and not isinstance(width, bool) else \
        width if isinstance(width, str) else "    "
    lines = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n") if text else []
    out = ""
    for line in lines:
        if out:
            out += "\n"
        if first if not out else (line or blank):
            out += pad
        out += line
    if text.endswith("\n"):
        out += "\n" + (pad if blank else "")
    return out


def _string_filter(value):
    """``|string``: a float's is its ``tojson`` (value.cpp maps a number's ``string`` to ``tojson``:
    six significant digits), anything else its text.

    >>> _string_filter(-4.076325972842906e+16), _string_filter(3.0), _string_filter([1])
    ('-4.07633e+16', '3', '[1]')
    """
    Stats.mark_deep(value)
    if isinstance(value, float):
        return tojson(value)
    return to_text(value)


def jinja2_tojson(value, indent=None, **_) -> str:
    """Jinja2's own ``tojson`` (``htmlsafe_json_dumps``: keys sorted, ASCII and ``<>&'`` escaped):
    what a port that keeps Jinja2's filter renders (the chat causes' variant, not llama.cpp's).

    >>> jinja2_tojson({"b": "é<", "a": 1})
    '{"a": 1, "b": "\\\\u00e9\\\\u003c"}'
    """
    return str(jinja2.utils.htmlsafe_json_dumps(value, indent=indent, sort_keys=True))


def environment(jinja2_whitespace: bool = False, jinja2_json: bool = False) -> LlamaEnvironment:
    """A fresh environment configured as llama.cpp's engine (see the module docstring); with
    ``jinja2_whitespace`` Jinja2's whitespace defaults instead (``trim_blocks``/``lstrip_blocks``
    off), with ``jinja2_json`` Jinja2's ``tojson``: what ports with those defects render."""
    env = LlamaEnvironment(trim_blocks=not jinja2_whitespace, lstrip_blocks=not jinja2_whitespace,
                           keep_trailing_newline=False,
                           undefined=LlamaUndefined, extensions=[loopcontrols, GenerationBlock], finalize=output_text, autoescape=False)
    env.filters.update({
        "tojson": jinja2_tojson if jinja2_json else tojson, "trim": lambda s, chars=None: strip_chars(s, chars), "upper": STRING_METHODS["upper"],
        "lower": STRING_METHODS["lower"], "title": title_case, "capitalize": capitalize, "string": _string_filter,
        "safe": _string_filter, "indent": _indent,
    })
    env.filters.update({name: _tracked(name, fn) for name, fn in env.filters.items()})
    env.tests.update({name: _tracked("test_is_" + name, fn) for name, fn in env.tests.items()})
    env.globals.update({"raise_exception": raise_exception, "strftime_now": strftime_now, "__llama_iter": llama_iter,
                        "__llama_in": llama_in, "__llama_add": llama_add})
    return env
