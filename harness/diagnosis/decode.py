"""Variants of decoding and pieces: ``llama_detokenize`` and ``llama_token_to_piece``.

llama.cpp's rules at the pin (src/llama-vocab.cpp):
- ``llama_vocab::impl::token_to_piece``: a BYTE token's piece is its one byte; a
  CONTROL/UNKNOWN token's piece is empty unless ``special``;
- ``llama_vocab::impl::detokenize``: drops a leading BOS and trailing EOS with
  remove_special (when the vocab adds them), strips one leading space of the first
  piece when add_space_prefix (not after a removed BOS), then applies the three
  clean_spaces passes when the vocab's clean_spaces is true; the result is raw bytes,
  invalid UTF-8 included.

>>> DECODE_LOSSY.change(None, b"a\\xffb", None)
b'a\\xef\\xbf\\xbdb'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable

from harness.tokenizer import Tokenizer
from harness.tokenizer.vocab import BYTE, CONTROL, NORMAL, UNKNOWN, UNUSED, USER_DEFINED

from .base import Case, Variant, cached, titled

__all__ = ["BytesVariant", "DecodeVocabVariant", "PieceVariant", "DECODE_LOSSY", "DECODE_DROPS_INVALID",
           "NO_CLEAN_SPACES", "CLEAN_SPACES_FORCED", "LEADING_SPACE_KEPT", "LEADING_SPACE_STRIPPED_AFTER_BOS",
           "STRIPS_LEADING_SPACE", "BYTE_AS_CODEPOINT", "BYTE_AS_TEXT", "SPECIALS_ALWAYS_RENDERED",
           "SPECIALS_NEVER_RENDERED", "SPECIALS_AS_TEXT", "PIECE_IS_DECODE", "REMOVE_SPECIAL_IGNORED", "REMOVE_SPECIAL_FORCED", "PieceBufferVariant",
           "PIECE_FIXED_BUFFER", "DECODE_DROPS_LONG_PIECES",
           "ByteMapVariant", "UNMAPPED_CODEPOINT", "SPECIAL_TEXT_BYTE_DECODED", "WHITESPACE_MARKER_KEPT",
           "DECODE_LOSSY_PER_TOKEN", "UNUSED_RENDERED", "REMOVE_SPECIAL_DROPS_ALL"]

DETOKENIZE = "src/llama-vocab.cpp, llama_vocab::impl::detokenize"
TO_PIECE = "src/llama-vocab.cpp, llama_vocab::impl::token_to_piece"


@dataclass(frozen=True, kw_only=True)
class BytesVariant(Variant):
    """llama.cpp's decode output, changed by ``change(tok, out, case_ids) -> bytes``."""

    change: Callable
    needs: Callable = lambda tok: True
    headline: str = ""

    def applies(self, tok) -> bool:
        return tok.vocab.vocab_type != "none" and bool(self.needs(tok))

    def decode(self, tok, ids, remove, unparse):
        return self.change(tok, tok.decode(ids, remove_special=remove, unparse_special=unparse), ids)

    def piece(self, tok, id, special):
        return self.change(tok, tok.token_to_piece(id, special=special), [id])

    def title(self, cases) -> str:
        return titled(self.headline, self.rule)


DECODE_LOSSY = BytesVariant(
    name="decode_lossy_utf8", models="decode and token_to_piece return text: invalid UTF-8 replaced by U+FFFD",
    rule=f"detokenize and token_to_piece return raw bytes, invalid UTF-8 kept (a BYTE token's one byte, "
         f"half of a character) ({DETOKENIZE}; {TO_PIECE})",
    checks=("decode", "piece"), shipped_by="known-port-bugs 21 (invalid/partial UTF-8, U+FFFD); "
                                           "Java and JavaScript bindings returning strings",
    change=lambda tok, out, ids: out.decode("utf-8", "replace").encode("utf-8"),
    headline="decode or token_to_piece replaces invalid UTF-8 with U+FFFD")
DECODE_DROPS_INVALID = BytesVariant(
    name="decode_drops_invalid_utf8", models="decode and token_to_piece return text: invalid UTF-8 dropped",
    rule=f"detokenize and token_to_piece return raw bytes, invalid UTF-8 kept ({DETOKENIZE}; {TO_PIECE})",
    checks=("decode", "piece"), shipped_by="known-port-bugs 21 (invalid/partial UTF-8)",
    change=lambda tok, out, ids: out.decode("utf-8", "ignore").encode("utf-8"),
    headline="decode or token_to_piece drops invalid UTF-8")
STRIPS_LEADING_SPACE = BytesVariant(
    name="decode_strips_leading_space", models="decode drops one leading space of every output",
    rule=f"strips the first piece's leading space only for add_space_prefix vocabs, and not after a removed "
         f"BOS ({DETOKENIZE})",
    checks=("decode",), shipped_by="known-port-bugs 24 (leading-space strip after BOS)",
    change=lambda tok, out, ids: out[1:] if out[:1] == b" " else out,
    headline="decode drops a leading space")


@dataclass(frozen=True, kw_only=True)
class DecodeVocabVariant(BytesVariant):
    """Decode with a changed vocab: ``changes(vocab) -> {field: value}``; ``prepare(tok, ids, remove,
    unparse)`` may rewrite the ids first."""

    change: Callable = None
    changes: Callable = dict
    prepare: Callable = lambda tok, ids, remove, unparse: ids

    def build(self, tok):
        return Tokenizer(replace(tok.vocab, **self.changes(tok.vocab)))

    def decode(self, tok, ids, remove, unparse):
        return self.tokenizer(tok).decode(self.prepare(tok, ids, remove, unparse), remove_special=remove,
                                          unparse_special=unparse)


def _drop_unprinted_lead(tok, ids, remove, unparse):
    """The leading tokens the output does not print taken off (a BOS remove_special removes,
    control and unknown tokens without unparse_special), so the first printed word is the first
    piece: Hugging Face's decoders strip its space there, llama.cpp only the first token's.

    >>> from types import SimpleNamespace as NS
    >>> tok = NS(vocab=NS(bos=1, add_bos=True, attrs=[1, 8, 4, 8]))  # unk, control, normal, control
    >>> drop = _drop_unprinted_lead
    >>> drop(tok, [1, 3, 2, 3], False, False), drop(tok, [1, 2], True, True), drop(tok, [3, 2], False, True)
    ([2, 3], [2], [3, 2])
    """
    v = tok.vocab
    k = 0
    while k < len(ids) and ((k == 0 and remove and v.add_bos and ids[0] == v.bos)
                            or (not unparse and v.attrs[ids[k]] & (CONTROL | UNKNOWN))):
        k += 1
    return ids[k:]


NO_CLEAN_SPACES = DecodeVocabVariant(
    name="decode_no_clean_spaces", models="decode skips clean_up_tokenization_spaces",
    rule=f"with the vocab's clean_spaces, drops the space in ' ?', ' !', ' .', ' ,', \" ' \", \" 's\" ... "
         f"({DETOKENIZE})",
    checks=("decode",), shipped_by="known-port-bugs 23 (clean_up_tokenization_spaces: 'x != y and a.b == c'); "
                                   "transformers",
    changes=lambda v: {"clean_spaces": False}, needs=lambda tok: tok.vocab.clean_spaces,
    headline="decode does not clean spaces before punctuation")
CLEAN_SPACES_FORCED = DecodeVocabVariant(
    name="decode_clean_spaces_forced", models="decode cleans spaces before punctuation where the vocab says not",
    rule=f"cleans spaces only when the vocab's clean_spaces is true (pre-type defaults) ({DETOKENIZE})",
    checks=("decode",), shipped_by="known-port-bugs 23 (clean_up_tokenization_spaces)",
    changes=lambda v: {"clean_spaces": True}, needs=lambda tok: not tok.vocab.clean_spaces,
    headline="decode cleans spaces though this vocab's clean_spaces is false")
LEADING_SPACE_KEPT = DecodeVocabVariant(
    name="decode_leading_space_kept", models="decode keeps the space add_space_prefix put before the first word",
    rule=f"strips one leading space of the first piece when add_space_prefix ({DETOKENIZE})",
    checks=("decode",), shipped_by="known-port-bugs 24; transformers on llama-spm",
    changes=lambda v: {"add_space_prefix": False}, needs=lambda tok: tok.vocab.add_space_prefix,
    headline="decode keeps the leading space of an add_space_prefix vocab")
LEADING_SPACE_STRIPPED_AFTER_BOS = DecodeVocabVariant(
    name="decode_leading_space_stripped_after_bos",
    models="decode strips the first printed word's leading space even after leading tokens it does not "
           "print (a removed BOS, control tokens not unparsed)",
    rule=f"strips only the first token's leading space: a word after a removed BOS or a control token "
         f"printed as nothing keeps its space ({DETOKENIZE})",
    checks=("decode",), shipped_by="known-port-bugs 24 (leading-space strip after BOS)",
    changes=lambda v: {"add_bos": False}, prepare=_drop_unprinted_lead,
    needs=lambda tok: tok.vocab.add_space_prefix and tok.vocab.add_bos and tok.vocab.bos is not None,
    headline="decode strips the leading space after a BOS or control token it does not print")



@dataclass(frozen=True, kw_only=True)
class PieceVariant(Variant):
    """Pieces (and so decode) with changed pieces or flags: ``special(asked) -> used``, ``pieces(tok) ->
    {id: piece}`` replacing some cached pieces."""

    special: Callable = lambda asked: asked
    remove: Callable = lambda asked: asked
    pieces: Callable = None
    needs: Callable = lambda tok: True
    headline: str = ""

    def applies(self, tok) -> bool:
        return tok.vocab.vocab_type not in ("none",) and bool(self.needs(tok))

    def build(self, tok):
        if self.pieces is None:
            return tok
        t = Tokenizer(tok.vocab)
        t._pieces.update(self.pieces(tok))
        return t

    def decode(self, tok, ids, remove, unparse):
        return self.tokenizer(tok).decode(ids, remove_special=self.remove(remove),
                                          unparse_special=self.special(unparse))

    def piece(self, tok, id, special):
        return self.tokenizer(tok).token_to_piece(id, special=self.special(special))

    def title(self, cases) -> str:
        return titled(self.headline, self.rule)


def _byte_pieces(render):
    def pieces(tok):
        v = tok.vocab
        return {i: render(tok, i) for i, a in enumerate(v.attrs) if a & BYTE}
    return lambda tok: cached(tok, ("byte pieces", render), lambda: pieces(tok))


def _has_bytes(tok) -> bool:
    return tok.vocab.vocab_type in ("spm", "ugm", "bpe") and any(a & BYTE for a in tok.vocab.attrs)


BYTE_AS_CODEPOINT = PieceVariant(
    name="byte_token_as_codepoint", models="a BYTE token <0xE3> decoded as the code point U+00E3, not the byte",
    rule=f"a BYTE token's piece is the one raw byte its text names ({TO_PIECE}, token_to_byte)",
    checks=("decode", "piece"), shipped_by="known-port-bugs 26 (byte tokens leaking into decoded text)",
    pieces=_byte_pieces(lambda tok, i: chr(tok.token_to_piece(i)[0]).encode("utf-8")), needs=_has_bytes,
    headline="byte tokens decoded as Latin-1 code points")
BYTE_AS_TEXT = PieceVariant(
    name="byte_token_as_text", models="a BYTE token's piece is its text '<0x0A>', not the byte",
    rule=f"a BYTE token's piece is the one raw byte its text names ({TO_PIECE}, token_to_byte)",
    checks=("decode", "piece"), shipped_by="known-port-bugs 26 (U+3000 -> <0xE3>...)",
    pieces=_byte_pieces(lambda tok, i: tok.vocab.tokens[i]), needs=_has_bytes,
    headline="byte tokens rendered as their text '<0xXX>'")
_MARKER = "\u2581".encode()


def _marked(tok) -> bool:
    v = tok.vocab
    return v.vocab_type in ("spm", "ugm", "wpm") and any(
        a & NORMAL and _MARKER in t for t, a in zip(v.tokens, v.attrs))


def _lossy_pieces(tok) -> dict:
    out = {}
    for i, a in enumerate(tok.vocab.attrs):
        if a & (NORMAL | BYTE | USER_DEFINED):
            p = tok.token_to_piece(i)
            q = p.decode("utf-8", "replace").encode("utf-8")
            if q != p:
                out[i] = q
    return out


WHITESPACE_MARKER_KEPT = PieceVariant(
    name="whitespace_marker_kept", models="U+2581 kept in pieces: a normal token's '\u2581' not turned back into a space",
    rule=f"an SPM, UGM or WPM normal token's piece has U+2581 unescaped to a space ({TO_PIECE}, "
         f"llama_unescape_whitespace)",
    checks=("decode", "piece"), shipped_by="shimmytok 0.8.4 on bert-bge and nomic-bert-moe",
    pieces=lambda tok: {i: t for i, (t, a) in enumerate(zip(tok.vocab.tokens, tok.vocab.attrs))
                        if a & NORMAL and _MARKER in t},
    needs=_marked, headline="'\u2581' kept in pieces (not turned back into a space)")
DECODE_LOSSY_PER_TOKEN = PieceVariant(
    name="decode_lossy_per_token", models="decode converts each piece to text alone (invalid UTF-8 replaced per "
                                           "token), so a character over two tokens becomes two U+FFFD",
    rule=f"detokenize concatenates the pieces' raw bytes: a character split over tokens comes out whole "
         f"({DETOKENIZE})",
    checks=("decode", "piece"), shipped_by="shimmytok 0.8.4 (from_utf8_lossy per token)",
    pieces=_lossy_pieces,
    headline="decode replaces each token's invalid UTF-8 with U+FFFD, piece by piece")
UNUSED_RENDERED = PieceVariant(
    name="unused_rendered", models="UNUSED tokens printed as their text",
    rule=f"a token that is not NORMAL, BYTE or USER_DEFINED (or CONTROL/UNKNOWN with special) renders as "
         f"nothing: an UNUSED token's piece is empty ({TO_PIECE})",
    checks=("decode", "piece"), shipped_by="shimmytok 0.8.4 on nomic-bert-moe ([PAD250001]...)",
    pieces=lambda tok: {i: tok.vocab.tokens[i] for i, a in enumerate(tok.vocab.attrs) if a == UNUSED},
    needs=lambda tok: UNUSED in tok.vocab.attrs, headline="UNUSED tokens printed as their text")
SPECIALS_ALWAYS_RENDERED = PieceVariant(
    name="specials_always_rendered", models="unparse_special (special) ignored: control tokens always printed",
    rule=f"CONTROL/UNKNOWN pieces are empty unless special / unparse_special ({TO_PIECE})",
    checks=("decode", "piece"), special=lambda asked: True, headline="special tokens printed without unparse_special")
SPECIALS_NEVER_RENDERED = PieceVariant(
    name="specials_never_rendered", models="unparse_special (special) ignored: control tokens never printed",
    rule=f"with special / unparse_special, CONTROL/UNKNOWN pieces are their texts ({TO_PIECE})",
    checks=("decode", "piece"), special=lambda asked: False, headline="special tokens not printed with unparse_special")
REMOVE_SPECIAL_IGNORED = PieceVariant(
    name="remove_special_ignored", models="remove_special ignored: BOS/EOS kept",
    rule=f"with remove_special, drops a leading BOS and a trailing EOS the vocab adds ({DETOKENIZE})",
    checks=("decode",), remove=lambda asked: False, needs=lambda tok: tok.vocab.add_bos or tok.vocab.add_eos,
    headline="remove_special ignored (BOS/EOS kept)")
REMOVE_SPECIAL_FORCED = PieceVariant(
    name="remove_special_forced", models="decode drops BOS/EOS even without remove_special",
    rule=f"drops the leading BOS / trailing EOS only with remove_special ({DETOKENIZE})",
    checks=("decode",), remove=lambda asked: True, needs=lambda tok: tok.vocab.add_bos or tok.vocab.add_eos,
    headline="decode drops BOS/EOS without remove_special")


def _every_special_dropped(tok, ids, remove, unparse):
    attrs = tok.vocab.attrs
    return [i for i in ids if not attrs[i] & (CONTROL | UNKNOWN)] if remove else ids


REMOVE_SPECIAL_DROPS_ALL = DecodeVocabVariant(
    name="remove_special_drops_every_special",
    models="remove_special drops every control and unknown token, anywhere (skip_special_tokens)",
    rule=f"with remove_special, detokenize drops only a leading BOS (when add_bos) and a trailing EOS (when "
         f"add_eos) ({DETOKENIZE})",
    checks=("decode",), shipped_by="shimmytok 0.8.4 (skip_special_tokens)", prepare=_every_special_dropped,
    changes=lambda v: {},
    needs=lambda tok: sum(1 for a in tok.vocab.attrs if a & (CONTROL | UNKNOWN)) > 2,
    headline="remove_special drops every special token, not just a leading BOS and a trailing EOS")
SPECIALS_AS_TEXT = PieceVariant(
    name="specials_as_text", models="control tokens decoded as plain text: never removed, always printed "
                                    "(their CONTROL type lost, e.g. in a tokenizer.json conversion)",
    rule=f"remove_special drops a leading BOS / trailing EOS, and CONTROL pieces are empty without "
         f"unparse_special ({DETOKENIZE}; {TO_PIECE})",
    checks=("decode", "piece"), shipped_by="@huggingface/transformers 4.3.2 on deepseek-llm/deepseek-coder (BOS printed)",
    special=lambda asked: True, remove=lambda asked: False, needs=lambda tok: tok.vocab.add_bos or tok.vocab.add_eos,
    headline="control tokens decoded as text (never removed, always printed)")


@dataclass(frozen=True, kw_only=True)
class PieceAsDecodeVariant(BytesVariant):
    """``token_to_piece(id)`` answered by decoding ``[id]``: detokenize's leading-space strip and
    clean_spaces reach single pieces."""

    change: Callable = None

    def piece(self, tok, id, special):
        return tok.decode([id], remove_special=False, unparse_special=special)


PIECE_IS_DECODE = PieceAsDecodeVariant(
    name="piece_is_decode", models="token_to_piece answered by decode([id]): a lone piece loses its leading "
                                   "space (SPM) or has its spaces cleaned (' .' -> '.')",
    rule=f"token_to_piece is the token's own bytes; only detokenize strips the first leading space and "
         f"cleans spaces ({TO_PIECE})",
    checks=("piece",), shipped_by="@huggingface/transformers 4.3.2 (decode([id])) on llama-spm, phi-3, aquila",
    needs=lambda tok: tok.vocab.add_space_prefix or tok.vocab.clean_spaces,
    headline="token_to_piece is decode([id]) (a lone piece's leading space stripped or spaces cleaned)")


# --- a fixed-size piece buffer: llama_token_to_piece's negative size ignored ------------------

def _overflowed(tok, cases) -> list[int]:
    """Buffer sizes the cases point at, largest first: a piece answer's length when it ends in
    NUL padding; for decode, every power of two (>= 8) below the case's longest piece. Not
    only the largest: a case whose longest piece has 100 bytes is as much a 32-byte buffer's
    as a 64-byte one's, and on another vocab a 40-byte piece tells them apart, so the causes
    of one binding meet under the size that explains them all.

    >>> class T: token_to_piece = lambda self, i, special: b"x" * i; n_vocab = 100
    >>> _overflowed(T(), [Case("decode", (3, 40), (False, False), b"xxx")])
    [32, 16, 8]
    """
    sizes = set()
    for c in cases:
        out = c.port_output
        if c.family == "piece" and isinstance(out, bytes) and len(out) >= 8 and out.endswith(b"\0"):
            sizes.add(len(out))
        elif c.family == "decode":
            longest = max((len(tok.token_to_piece(i, special=True)) for i in c.input
                           if 0 <= i < tok.n_vocab), default=0)
            n = 8
            while n < longest:
                sizes.add(n)
                n *= 2
    return sorted(sizes, reverse=True)


@dataclass(frozen=True, kw_only=True)
class PieceBufferVariant(Variant):
    """token_to_piece into a fixed buffer of ``param`` bytes, ignoring the length it returns:
    ``padded`` keeps the whole buffer (a piece answer NUL-padded, a longer piece all NULs);
    otherwise decode joins the pieces and loses every piece longer than the buffer."""

    padded: bool = False

    def applies(self, tok) -> bool:
        return tok.vocab.vocab_type != "none"

    def candidates(self, tok, cases):
        for size in _overflowed(tok, cases):
            yield self.bind(size)

    def piece(self, tok, id, special):
        p = tok.token_to_piece(id, special=special)
        return p.ljust(self.param, b"\0") if len(p) <= self.param else b"\0" * self.param

    def build(self, tok):
        t = Tokenizer(tok.vocab)
        n = self.param
        t._pieces.update({i: b"" for i in range(tok.n_vocab) if len(tok.token_to_piece(i, special=True)) > n})
        return t

    def title(self, cases) -> str:
        n = self.param
        what = (f"piece answered as a whole {n}-byte buffer (NUL-padded; a longer piece is all NULs)"
                if self.padded else f"decode loses every piece longer than {n} bytes (a {n}-byte piece buffer)")
        return titled(what, self.rule)


_BUFFER_RULE = (f"llama_token_to_piece returns the piece's length, or minus the size it needs when the "
                f"buffer is too small; a caller keeps that many bytes, or grows the buffer and asks again "
                f"({TO_PIECE})")
PIECE_FIXED_BUFFER = PieceBufferVariant(
    name="piece_fixed_buffer", models="token_to_piece returns its whole fixed-size buffer: NUL padding, "
                                     "longer pieces lost", rule=_BUFFER_RULE, checks=("piece",), padded=True,
    shipped_by="known-port-bugs 25 (token_to_piece negative size); llama-cpp-python 0.3.36 (32 bytes)")
DECODE_DROPS_LONG_PIECES = PieceBufferVariant(
    name="decode_drops_long_pieces", models="decode joins token_to_piece calls into a fixed-size buffer: "
                                           "pieces longer than it are lost", rule=_BUFFER_RULE, checks=("decode",),
    every_param=True,
    shipped_by="known-port-bugs 25 (64-space token); llama-cpp-python 0.3.36 (32 bytes)")


# --- byte-level BPE pieces: code points outside the GPT-2 byte map ----------------------------

_UNMAPPED = {"raw": lambda c: c.encode("utf-8"), "dropped": lambda c: b"",
             "low byte": lambda c: bytes([ord(c) & 0xFF])}


def _byte_decoded(text: bytes, unmapped: str) -> bytes:
    """A token's text through the GPT-2 byte map, a code point outside it handled the port's way.

    >>> _byte_decoded("Ġa▁".encode(), "low byte"), _byte_decoded("Ġa▁".encode(), "dropped")
    (b' a\\x81', b' a')
    """
    from harness.tokenizer.unicode import UNICODE_TO_BYTE
    out = bytearray()
    for c in text.decode("utf-8", "replace"):
        b = UNICODE_TO_BYTE.get(c)
        out += bytes([b]) if b is not None else _UNMAPPED[unmapped](c)
    return bytes(out)


_TYPES = UNKNOWN | UNUSED | NORMAL | CONTROL | USER_DEFINED | BYTE  # the attrs a token type sets


def _byte_map_changes(tok, kinds: int) -> tuple[int, ...]:
    """The ids of ``kinds`` whose piece a port's byte map can change. A NORMAL token's llama.cpp
    piece is its text through the byte map (llama_decode_text), so one whose every code point is
    in the map decodes alike whatever the port does with the others: only NORMAL tokens with an
    unmapped code point, and every token of another kind (even NORMAL as well: qwen2's ``</s>`` is
    also CONTROL, its piece empty), are built (once per vocab: qwen2 has 151,643 NORMAL tokens, each variant built three times)."""
    def build():
        from harness.tokenizer.unicode import UNICODE_TO_BYTE
        unmapped = re.compile("[^" + "".join(re.escape(c) for c in UNICODE_TO_BYTE) + "]")
        v = tok.vocab
        return tuple(i for i, a in enumerate(v.attrs) if a & kinds and (
            a & _TYPES != NORMAL or unmapped.search(v.tokens[i].decode("utf-8", "replace"))))
    return cached(tok, ("byte map changes", kinds), build)


def _is_byte_level(tok) -> bool:
    return tok.vocab.vocab_type == "bpe" and not tok.vocab.escape_whitespaces


@dataclass(frozen=True, kw_only=True)
class ByteMapVariant(PieceVariant):
    """Byte-level BPE pieces decoded with a code point outside the byte map kept raw, dropped or
    cut to its low byte (``param``); ``kinds`` are the token attributes whose pieces change."""

    kinds: int = 0

    def candidates(self, tok, cases):
        for unmapped in _UNMAPPED:
            yield self.bind(unmapped)

    def applies(self, tok) -> bool:
        return _is_byte_level(tok)

    def build(self, tok):
        v, t = tok.vocab, Tokenizer(tok.vocab)
        t._pieces.update({i: _byte_decoded(v.tokens[i], self.param) for i in _byte_map_changes(tok, self.kinds)})
        return t

    def title(self, cases) -> str:
        return titled(f"{self.headline} (this port: {self.param})", self.rule)


UNMAPPED_CODEPOINT = ByteMapVariant(
    name="byte_map_unmapped_codepoint", kinds=NORMAL,
    models="a normal token's code point outside the GPT-2 byte map kept raw, dropped or cut to a byte",
    rule=f"a code point outside the byte map is written as [UNK_BYTE_0x<utf8 hex><token text>] "
         f"(src/llama-vocab.cpp, llama_decode_text)", checks=("decode", "piece"),
    shipped_by="candle (kept raw), shimmytok (dropped) on command-r", headline="pieces: a code point outside "
    "the byte map is not written as [UNK_BYTE_0x…]")
SPECIAL_TEXT_BYTE_DECODED = ByteMapVariant(
    name="special_text_byte_decoded", kinds=CONTROL | USER_DEFINED | UNKNOWN,
    models="a special token's text decoded through the GPT-2 byte map like a normal token's",
    rule=f"the piece of a CONTROL, USER_DEFINED or UNKNOWN token is its text as is ({TO_PIECE})",
    checks=("decode", "piece"), shipped_by="ollama (low byte), shimmytok (dropped) on deepseek's "
    "'<｜begin▁of▁sentence｜>'", headline="special tokens' text decoded through the byte map")
