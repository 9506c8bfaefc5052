"""Every token's piece: the port's ``piece`` answer vs llama_token_to_piece.

One pass over the whole vocab per ``special`` value (table rows: plain =
special=false, parse = special=true), byte for byte; an external port that has
the batch op gets 512 ids per request. Divergences are grouped by token kind
(normal, control, byte, user_defined, ...): the first id of each kind is
reported, with the number of ids of that kind that diverge. The body is
:func:`harness.engine.checks.pieces`.
"""

from __future__ import annotations

import pytest

from harness.engine import checks


@pytest.mark.parametrize("special", [False, True], ids=["plain", "parse"])
def test_pieces(vut, special, hunt):
    checks.pieces(vut, special, hunt)
