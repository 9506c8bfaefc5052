"""Every token's piece: the port's ``piece`` answer vs llama_token_to_piece.

One pass over the whole vocab per ``special`` value (table rows: plain =
special=false, parse = special=true), byte for byte. Divergences are grouped by
token kind (normal, control, byte, user_defined, ...): the first id of each
kind is reported, with the number of ids of that kind that diverge.
"""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("special", [False, True], ids=["plain", "parse"])
def test_pieces(vut, special, hunt):
    h = hunt("piece", "parse" if special else "plain",
             lambda id: vut.check_piece(id, special), signature=vut.signature)
    reason = vut.unsupported_reason("piece", special=special)
    if reason:
        h.declare_unsupported(reason)
    else:
        for id in range(vut.reference.n_vocab):
            h.case(id)
    h.finish()
