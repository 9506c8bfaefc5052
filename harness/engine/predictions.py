"""The inputs a diagnosis is tested on: fresh inputs where a variant and llama.cpp disagree
(its predictions), inputs where they agree (what it claims the port gets right), and the
neighbours, swaps and look-alikes both are drawn from (:class:`harness.engine.diagnoser.Diagnoser`
asks; the order is fixed, so the same finding gives the same inputs on any machine).

>>> f = Finding("encode", "v", None, False, False, "\u0689\u066a", None)
>>> list(prediction_inputs(None, f, "\u066a"))[:3]
['\u066a', 'a\u066ab', 'x \u066a y']
"""

from __future__ import annotations

from harness.reports.finding import BYTE_CHECKS, Finding


#: Contexts a prediction puts an encode finding's text in (prefix, suffix): other scripts,
#: digits, punctuation, whitespace and newlines on either side.
CONTEXTS = (("Hello ", ""), ("", " world"), ("a", "b"), ("1", "2"), ("\n", "\n"), (" ", " "),
            ("\u00e9", "\u00fc"), ("\u4e2d", "\u6587"), ("(", ")"), ("The ", " is here."), ("x", ""),
            ("", "x"), ("--", "--"), ("\u041f\u0440\u0438 ", " \u043c\u0438\u0440"), ("\t", "."))


def prediction_inputs(tok, f: Finding, param=None, points=()):
    """Candidate prediction inputs for ``f``, in a fixed order (see :meth:`Diagnoser.predictions`).

    encode: a code point the variant is bound to, alone and between fresh neighbours (so its
    own neighbours in the shrunk text, which may hide what the port does, are gone); other
    code points of the variant's own table (``points``); each character of the text likewise;
    the text with each of its non-alphanumeric characters replaced by each of ``points``;
    the text with each special token's text in it swapped for other special tokens' texts
    (a variant about *all* specials must hold for the others too); then the text in each of
    :data:`CONTEXTS`, twice over, and with spaces around;
    decode: each special, unknown or unused id swapped for other ids of its type; the ids
    after and before a greeting's ids, twice over, and each id alone; a character over two
    tokens (:func:`_split_character`), alone and after the ids;
    piece: nearby ids, then ids spread over the vocab, of the same token type first.

    >>> f = Finding("encode", "v", None, False, False, "\u0689\u066a", None)
    >>> list(prediction_inputs(None, f, "\u066a"))[:3]
    ['\u066a', 'a\u066ab', 'x \u066a y']
    """
    if f.check == "piece":
        yield from _piece_inputs(tok, f.decoded_ids[0])
        return
    if f.check == "decode":
        ids = tuple(f.decoded_ids)
        hello = tuple(tok.encode("Hello world", add_special=False, parse_special=False))
        swapped = [ids[:k] + (o,) + ids[k + 1:] for k, i in enumerate(ids) for o in _same_kind(tok, i)]
        split = _split_character(tok)  # a character over two tokens: whole in llama.cpp's output
        yield from dict.fromkeys(swapped + [hello + ids, ids + hello, ids + ids, *((i,) for i in ids),
                                            ids[1:], ids[:-1]] + ([split, ids + split] if split else []))
        return
    t = f.text
    chars = [param] if isinstance(param, str) and len(param) == 1 else []
    chars += [c for c in points if c not in chars]
    chars += [c for c in dict.fromkeys(t) if c not in chars]
    # the table's points in the shrunk text's own context, in place of each of its non-alphanumeric
    # characters: where a class matters only next to others ("\xa0 " for a whitespace run)
    swapped = [t.replace(c, p) for c in dict.fromkeys(t) if not c.isalnum() for p in points if p != c]
    seen = {t}
    for x in [n.replace("{}", c) for c in chars for n in _NEIGHBOURS] + swapped + _special_swaps(tok, t) + [
            p + t + s for p, s in CONTEXTS] + [t + t, f" {t} ", t + " " + t]:
        if x not in seen:
            seen.add(x)
            yield x


def outside_table(variant, f: Finding, n: int = 6) -> list[str]:
    """``f``'s text with each of its code points that a table variant (``variant.table()``)
    holds replaced by up to ``n`` code points llama.cpp classes the same way (the same
    flags) that the table does not hold, spread over them. Empty for other variants.

    >>> from harness.diagnosis.platform import WHITESPACE_VARIANTS
    >>> java = next(v for v in WHITESPACE_VARIANTS if v.name == "whitespace_java_iswhitespace")
    >>> [f"U+{ord(x[1]):04X}" for x in outside_table(java, Finding("encode", "v", None, False, False, "a\xa0", None))]
    ['U+0020', 'U+2000', 'U+2004', 'U+2006', 'U+2009', 'U+2028']
    """
    table = getattr(variant, "table", None)
    if table is None or f.check in BYTE_CHECKS:
        return []
    cps = table()
    return [f.text.replace(c, chr(cp)) for c in dict.fromkeys(f.text) if ord(c) in cps
            for cp in same_class(ord(c), n, leave_out=cps)]


def same_class(cp: int, n: int, leave_out=frozenset()) -> list[int]:
    """Up to ``n`` code points llama.cpp gives the same flags as ``cp`` (its Unicode class:
    whitespace, punctuation, ...), ``cp``, surrogates and ``leave_out`` aside, spread over them.

    >>> [f"U+{c:04X}" for c in same_class(0xA0, 3)]
    ['U+0020', 'U+2005', 'U+200A']
    """
    from harness.tokenizer import unicode as U
    import numpy as np
    same = [c for c in np.flatnonzero(U.FLAGS == U.FLAGS[cp]).tolist()
            if c != cp and c not in leave_out and not 0xD800 <= c < 0xE000]
    return same[::max(1, len(same) // n)][:n]


def _special_ids(tok) -> dict[int, list[int]]:
    """attr -> ids, for the special-like token types (control, user-defined, unknown, unused)."""
    from harness.tokenizer.vocab import CONTROL, UNKNOWN, UNUSED, USER_DEFINED
    v = tok.vocab
    out: dict[int, list[int]] = {}
    for i, a in enumerate(v.attrs):
        for bit in (CONTROL, USER_DEFINED, UNKNOWN, UNUSED):
            if a & bit:
                out.setdefault(bit, []).append(i)
    return out


def _same_kind(tok, id: int, n: int = 3) -> list[int]:
    """Up to ``n`` other ids of ``id``'s special-like type, spread over that type's ids, then
    one of each other special-like type (a variant about every special must hold for those
    too), a normal token as long (:func:`_normal_alike`) second; none for a normal token."""
    from harness.diagnosis.base import cached
    groups = cached(tok, ("prediction special ids",), lambda: _special_ids(tok))
    if not 0 <= id < tok.vocab.n_vocab:
        return []
    mine = next((bit for bit in groups if tok.vocab.attrs[id] & bit), None)
    if mine is None:
        return []
    others = [i for i in groups[mine] if i != id]
    step = max(1, len(others) // n)
    alike = _normal_alike(tok, id)
    spread = others[::step][:n]
    # the normal one second: predictions take the first few inputs where the variant disagrees
    return (spread[:1] + ([alike] if alike is not None else []) + spread[1:]
            + [ids[len(ids) // 2] for bit, ids in groups.items() if bit != mine and ids])


def _split_character(tok) -> tuple[int, ...] | None:
    """Ids whose pieces are the two bytes of U+00E9 one by one (byte tokens, or a byte-level
    BPE's base tokens), or None: llama.cpp decodes them to the whole character, a port that
    turns each piece into a string on its own gives two U+FFFD."""
    from harness.diagnosis.base import cached

    def find():
        single = {}
        for i in range(tok.vocab.n_vocab):
            piece = tok.token_to_piece(i, special=False)
            if len(piece) == 1:
                single.setdefault(piece, i)
        ids = tuple(single.get(bytes([b])) for b in "\u00e9".encode())
        return None if None in ids else ids
    return cached(tok, ("prediction split character",), find)


def _normal_alike(tok, id: int) -> int | None:
    """A normal token whose piece is as long as ``id``'s (or the next longer): a variant about
    pieces' length (a fixed buffer) must hold for normal tokens too, one about a type need not.
    Pieces, not texts: a byte-level BPE text is longer than its bytes."""
    from harness.diagnosis.base import cached
    from harness.tokenizer.vocab import NORMAL
    v = tok.vocab

    def by_length():
        out: dict[int, int] = {}
        for i, a in enumerate(v.attrs):
            if a & NORMAL:
                out.setdefault(len(tok.token_to_piece(i, special=True)), i)
        return out
    lengths = cached(tok, ("prediction normal ids by piece length",), by_length)
    want = len(tok.token_to_piece(id, special=True))
    fit = [n for n in lengths if n >= want]
    return lengths[min(fit)] if fit else None


def _special_swaps(tok, text: str) -> list[str]:
    """``text`` with each special token text in it (longest first) swapped for other specials' texts."""
    if tok is None:
        return []
    v = tok.vocab
    out = []
    from harness.diagnosis.base import cached
    longest_first = cached(tok, ("prediction specials, longest first",),
                           lambda: sorted(v.special_cache, key=lambda i: -len(v.tokens[i])))
    for i in longest_first:
        piece = v.tokens[i].decode("utf-8", "replace")
        if piece and piece in text:
            out += [text.replace(piece, v.tokens[o].decode("utf-8", "replace")) for o in _same_kind(tok, i)]
    return out


#: Fresh neighbours a prediction puts one code point between.
_NEIGHBOURS = ("{}", "a{}b", "x {} y", "1{}2", "{}{}", "Hello{}", "{}world", "\u4e2d{}\u6587", "\u00e9{}\u00e9")


def f_input(f: Finding):
    """A finding's input in the hunt's form: its text, its ids, or its one id (piece)."""
    if f.check == "piece":
        return f.decoded_ids[0]
    return tuple(f.decoded_ids) if f.check == "decode" else f.text


def _other_flags(f: Finding) -> list[tuple[bool, bool]]:
    """The flag combinations of ``f``'s check other than its own, in a fixed order."""
    if f.check == "piece":
        return [(not bool(f.unparse_special), False)]
    own = (bool(f.remove_special), bool(f.unparse_special)) if f.check == "decode" else (f.add_special, f.parse_special)
    return [fl for fl in ((False, False), (False, True), (True, False), (True, True)) if fl != own]


def _piece_inputs(tok, id: int):
    """Ids near ``id``, then about 400 ids spread over the vocab, those of the same token type
    first, but after the first two, one of each other special-like type and a normal token as
    long (:func:`_same_kind`): a variant about every special (or every long piece) must hold
    for those too, one about this type need not."""
    n = tok.vocab.n_vocab
    types = tok.vocab.attrs  # llama.cpp's token attributes: the type is one bit of them
    near = [i for d in range(1, 9) for i in (id - d, id + d) if 0 <= i < n]
    spread = list(range(id % 97, n, max(1, n // 400)))
    same = [i for i in near + spread if types[i] == types[id] and i != id]
    cross = [i for i in _same_kind(tok, id) if types[i] != types[id]]
    yield from dict.fromkeys(same[:2] + cross + same[2:] + [i for i in near + spread if i != id])
