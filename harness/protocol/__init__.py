"""The port protocol, both ends: JSON lines over a port's stdin and stdout.

One JSON request per line in, one JSON answer per line out, in order, flushed::

    {"op":"encode","text":S,"add_special":B,"parse_special":B}          -> {"ids":[...]}
    {"op":"encode","text_hex":H,"add_special":B,"parse_special":B}      -> {"ids":[...]}   raw bytes
    {"op":"decode","ids":[...],"remove_special":B,"unparse_special":B}  -> {"bytes_hex":"..."}
    {"op":"piece","id":N,"special":B}                                   -> {"bytes_hex":"..."}
    {"op":"info"}                                -> {"n_vocab":N, "unsupported":[...], "batch":B, ...}
    {"op":"batch","requests":[R1, R2, ...]}      -> {"responses":[A1, A2, ...]}   (optional)
    {"op":"chat","template":S|null,"messages":[...],...} -> {"text":S,"ids":[...]} | {"raised":S}   (optional)
    a bad request                                -> {"error":"..."}, and keep serving
    a request the port cannot express            -> {"error":"unsupported: <why>"}

- :mod:`~harness.protocol.server`: the one server loop (every Python port server uses it);
- :mod:`~harness.protocol.client`: :class:`~harness.protocol.client.ExternalPort`, a port
  process driven over the protocol;
- :mod:`~harness.protocol.channel`: the client's non-blocking line I/O under one deadline;
- :mod:`~harness.protocol.chat`: the ``chat`` op's request checks and answer, both ends.

This is the wire both sides share: it imports nothing but the error root.
"""
