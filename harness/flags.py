"""The flag table, named once: llama.cpp's two booleans per check, and their labels.

Every check runs under the four combinations of two flags: (add_special,
parse_special) for encode; (remove_special, unparse_special) for decode; piece has
one, special (labelled ``plain``/``parse``). Reports label a combination ``plain``,
``parse``, ``add`` or ``add_parse``: read ``add`` as the first flag, ``parse`` as the
second.

>>> flags_label(True, False), FLAGS["parse"]
('add', (False, True))
>>> list(FLAGS) == list(LABELS)
True
"""

from __future__ import annotations

#: label -> (first flag, second flag), in table order.
FLAGS: dict[str, tuple[bool, bool]] = {
    "plain": (False, False), "parse": (False, True), "add": (True, False), "add_parse": (True, True)}
#: The labels, in table order.
LABELS: tuple[str, ...] = tuple(FLAGS)
#: The combinations, in table order.
COMBINATIONS: tuple[tuple[bool, bool], ...] = tuple(FLAGS.values())
_LABEL_OF = {v: k for k, v in FLAGS.items()}


def flags_label(a: bool, b: bool) -> str:
    """'plain', 'parse', 'add' or 'add_parse' for (add_special, parse_special), or for
    (remove_special, unparse_special) in decode."""
    return _LABEL_OF[(bool(a), bool(b))]
