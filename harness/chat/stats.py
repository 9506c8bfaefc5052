"""Which input values a template used: llama.cpp's ``is_get_stats`` for its capability probes.

llama.cpp learns what a template supports (a system role, tool calls, typed content, ...)
by rendering probe conversations and asking which input values the template touched
(common/jinja/caps.cpp, ``caps_get``; the marks are set in common/jinja/runtime.cpp and
value.cpp: a member access marks the member and its object, a filter or test marks its input
with the op's name, a ``for`` marks its sequence ``array_access``, ``tojson`` marks deep).
Here a probe's inputs are :func:`tracked` copies whose ``_stats`` record the same marks.

>>> v = tracked({"content": "x"})
>>> Stats.mark(v["content"]); Stats.used(v["content"]), Stats.used(v)
(True, False)
"""

from __future__ import annotations


class TDict(dict):
    __slots__ = ("_stats",)


class TList(list):
    __slots__ = ("_stats",)


class TStr(str):
    __slots__ = ("_stats",)


_TRACKED = (TDict, TList, TStr)


def tracked(value):
    """A deep copy of JSON-like ``value`` whose dicts, lists and strings record their use."""
    if isinstance(value, dict):
        out = TDict({k: tracked(v) for k, v in value.items()})
    elif isinstance(value, list):
        out = TList(tracked(v) for v in value)
    elif isinstance(value, str):
        out = TStr(value)
    else:
        return value
    out._stats = set()
    return out


class Stats:
    """The marks: ``used`` plus the names of the ops applied (``test_is_string``, ``selectattr``, ...)."""

    @staticmethod
    def mark(value, op: str | None = None) -> None:
        if isinstance(value, _TRACKED):
            value._stats.add("used")
            if op:
                value._stats.add(op)

    @staticmethod
    def mark_deep(value) -> None:
        Stats.mark(value)
        if isinstance(value, dict):
            for v in value.values():
                Stats.mark_deep(v)
        elif isinstance(value, list):
            for v in value:
                Stats.mark_deep(v)

    @staticmethod
    def used(value) -> bool:
        return isinstance(value, _TRACKED) and "used" in value._stats

    @staticmethod
    def has_op(value, op: str) -> bool:
        return isinstance(value, _TRACKED) and op in value._stats


def tracked_iter(iterable) -> None:
    """A ``for`` over ``iterable``: llama.cpp marks it used, ``array_access`` (runtime.cpp, for_statement)."""
    Stats.mark(iterable, "array_access")
    if isinstance(iterable, dict):
        Stats.mark(iterable, "object_access")
