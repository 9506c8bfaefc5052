"""Every token's piece: the port's ``piece`` answer vs llama_token_to_piece.

One pass over the whole vocab per ``special`` value (table rows: plain =
special=false, parse = special=true), byte for byte; an external port that has
the batch op gets 512 ids per request. Divergences are grouped by token kind
(normal, control, byte, user_defined, ...): the first id of each kind is
reported, with the number of ids of that kind that diverge.
"""

from __future__ import annotations

import pytest

CHUNK = 512


@pytest.mark.parametrize("special", [False, True], ids=["plain", "parse"])
def test_pieces(vut, special, hunt):
    got: dict = {}
    h = hunt("piece", "parse" if special else "plain",
             lambda id: vut.check_piece(id, special, got.get(id)), signature=vut.signature)
    reason = vut.unsupported_reason("piece", special=special)
    if reason:
        h.declare_unsupported(reason)
    else:
        n = vut.reference.n_vocab
        for start in range(0, n, CHUNK):
            ids = range(start, min(n, start + CHUNK))
            got = vut.port_pieces_of(list(ids), special) if not h.down else {}
            for id in ids:
                h.case(id)
    h.finish()
