"""Unicode drift: code points whose llama.cpp properties differ from a port platform's.

llama.cpp classifies code points with its own Unicode 15.1 tables; a port asks
its platform (Python's ``unicodedata``, the ``regex`` module, Java, ICU, Go,
JavaScript), whose Unicode version and whose ``\\s``/``\\d``/``\\w`` differ. The
classes (``CLASSES``: name -> code point ranges) are computed from the tables by
tools/gen_drift_tables.py, which documents each source; sizes at the pin:

=============================================  =====  ====================================
class (``:X`` = category letter L N P S M)        size  what differs
=============================================  =====  ====================================
assigned_only_in_ud16.0:L/M/N/P/S               5185  Cn for llama.cpp, assigned in 16.0
                                                      (4302 L, 51 M, 80 N, 13 P, 739 S)
assigned_only_in_ud17.0:L/M/N/P/S               9988  ... in 17.0 (8946/93/93/14/842)
assigned_only_in_regex:X=..._ud18.0:X          22995  ... in 18.0, the regex module's
                                                      Unicode (21446/130/416/18/985)
unassigned_in_py311:C/L/M/N/P/S                 5116  assigned for llama.cpp (by its
                                                      category), Cn in Python 3.11 (14.0)
unassigned_in_ud15.0:L/S                         627  ... Cn in 15.0 (new in 15.1)
nfd_ud16.0=nfd_ud17.0=nfd_ud18.0                  20  NFD first code point
lowercase_py311 / uppercase_py311             1 / 27  simple case maps vs str.lower/upper
js_s / icu_s / java_s / go_s             2/2/19/20  \\s vs llama.cpp's WHITESPACE set
java_isWhitespace_s / python_re_s              8 / 4  Character.isWhitespace, str.isspace
go_d=java_d=js_d / icu_d=regex_d / python_re_d        \\d vs \\p{N}: 1821 / 1241 / 1171
icu_w / regex_w / python_re_w     25368/25498/5010  \\w vs [\\p{L}\\p{N}_]
=============================================  =====  ====================================

Go/Java/JS ``\\w`` (ASCII only) differs on every non-ASCII letter and number: the
script families draw those already, so it is not stored.

No general category of an assigned code point differs (at the granularity
llama.cpp keeps: L N P S M Z C) between its tables and Unicode 14.0-18.0, and
Unicode 15.1 itself gives no class at all: the tables are 15.1 exactly.

>>> from hypothesis import find
>>> find(drift_chars, lambda c: ord(c) == 0x85)
'\\x85'
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate

from hypothesis import strategies as st

from harness.tokenizer.unicode._drift_tables import CLASSES, VERSIONS

__all__ = ["CLASSES", "VERSIONS", "ORDER", "size", "nth", "drift_chars", "drift_in_context", "CONTEXTS"]


def size(name: str) -> int:
    """How many code points a class holds.

    >>> size("js_s")
    2
    """
    return sum(b - a + 1 for a, b in CLASSES[name])


#: Classes smallest first: a failure shrinks toward the class with the fewest code points.
ORDER = tuple(sorted(CLASSES, key=lambda n: (size(n), n)))
_STARTS = {n: [0, *accumulate(b - a + 1 for a, b in CLASSES[n])] for n in CLASSES}


def nth(name: str, i: int) -> str:
    """The ``i``-th code point (mod the class size) of a class, as a character.

    >>> nth("js_s", 0), nth("js_s", 1), nth("js_s", 2)
    ('\\x85', '\\ufeff', '\\x85')
    """
    starts = _STARTS[name]
    i %= starts[-1]
    k = bisect_right(starts, i) - 1
    return chr(CLASSES[name][k][0] + i - starts[k])


#: One drift code point: a class (small classes first), then an index in it (shrinks to its first).
drift_chars = st.tuples(st.sampled_from(ORDER), st.integers(0, 2**24)).map(lambda t: nth(*t))

#: Splitter contexts around a drift character ``c``: alone (a fragment edge), after a space,
#: inside a digit run, between letters, after an apostrophe, doubled, before a newline,
#: next to punctuation. (Next to a special token: strategies.drift glues one on.)
CONTEXTS = ("{c}", " {c}", "1{c}2", "a{c}b", "'{c}", "{c}{c}", "{c}\n", "'{c}s", " {c}a",
            "{c} ", "123{c}456", "A{c}", "{c}a", ".{c}", "  {c}", "\n{c}")

#: A drift character in one of CONTEXTS (shrinks toward the bare character).
drift_in_context = st.tuples(st.sampled_from(CONTEXTS), drift_chars).map(
    lambda t: t[0].replace("{c}", t[1]))
