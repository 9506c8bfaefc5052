"""Diagnosis: name the llama.cpp rule a port breaks, from a few of its divergent cases.

The catalogue (:data:`CATALOGUE`) holds *rule variants*: each is a small named change
of the exact harness tokenizer that models one way real ports go wrong (a platform's
``\\s``, NFKC input, ``ignore_merges`` missing, a lossy decode, ...), with the rule
llama.cpp follows instead and where it lives at the pin. :func:`explain` runs every
applicable variant on a cause's cases and returns those that reproduce the port's
answers exactly, most specific first; the engine names the cause by the first.

- ``base``: :class:`Case`, :class:`Variant`, the exact outputs and the per-tokenizer caches;
- ``text``: input transforms (normal forms, code points read as others, chunking);
- ``specials``: the special-token partition, BOS/EOS, the space prefix;
- ``platform``: ``\\s``, ``\\d`` and categories as JavaScript, Java, ICU, Go, Python ``re``
  and other Unicode versions see them;
- ``split``: the pre-tokenizer's regex (digits, contractions, byte-mapped text) and merging;
- ``decode``: detokenize and token_to_piece;
- ``catalogue``: the ordered catalogue, ``explain`` and the README table.

It imports only ``harness.tokenizer`` and ``harness.errors`` (the layers contract in
pyproject.toml).

>>> sorted({c for v in CATALOGUE for c in v.checks})
['decode', 'encode', 'piece']
"""

from __future__ import annotations

from .base import Case, Variant
from .catalogue import CATALOGUE, explain, markdown_table

__all__ = ["Case", "Variant", "CATALOGUE", "explain", "markdown_table"]
