"""Variants that change the text before llama.cpp's algorithm sees it, or cut it up.

llama.cpp tokenizes the bytes it is given: ``llama_vocab::impl::tokenize``
(src/llama-vocab.cpp) partitions out special tokens and hands every raw fragment
to the vocab type's session, with no normalisation, no substitution and no
chunking (SPM only turns ' ' into U+2581; UGM applies the vocab's own charsmap).
A port that "cleans" the text first answers with the ids of another text.

>>> NFKC_INPUT.transform("ﬁ\\u00a0", None)
'fi '
>>> CHAR_AS_SPACE.transform("a\\x85b", "\\x85")
'a b'
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace
from typing import Any, Callable

from harness.tokenizer import Tokenizer
from harness.tokenizer import unicode as U

from .base import Variant, cached, cp_name, encode_exact, texts, titled, with_specials

__all__ = ["TextVariant", "CharVariant", "Chunked", "DigitsApart", "NFC_INPUT", "NFKC_INPUT", "CRLF_FOLDED",
           "CURLY_APOSTROPHE", "NATIVE_DIGITS", "CHAR_AS_SPACE", "CHAR_DROPPED", "CHUNKED", "DIGITS_APART",
           "PrefixSpaceVariant", "PREFIX_SPACE_ADDED", "LEADING_WHITESPACE_STRIPPED", "MetaspaceVariant",
           "METASPACE_FIRST", "SPACE_PREFIX_SKIPPED"]

TOKENIZE = "src/llama-vocab.cpp, llama_vocab::impl::tokenize"
_VERBATIM = f"tokenizes the text's own bytes, unnormalised ({TOKENIZE})"


@dataclass(frozen=True, kw_only=True)
class TextVariant(Variant):
    """The exact tokenizer on a transformed text: ``transform(text, param) -> text``."""

    transform: Callable[[str, Any], str]
    headline: str = ""

    def applies(self, tok) -> bool:
        return tok.vocab.vocab_type != "none"

    def encode(self, tok, text, add, parse):
        if not isinstance(text, str):
            text = text.decode("utf-8", "surrogateescape")
        changed = self.transform(text, self.param)
        return encode_exact(tok, text if changed == text else changed, add, parse)

    def title(self, cases) -> str:
        return titled(self.headline or self.models, _VERBATIM)


def _nfc(text: str, _=None) -> str:
    return unicodedata.normalize("NFC", text)


def _nfkc(text: str, _=None) -> str:
    return unicodedata.normalize("NFKC", text)


def _native_digits(text: str, _=None) -> str:
    return "".join(str(unicodedata.decimal(c)) if not c.isascii() and unicodedata.decimal(c, None) is not None
                   else c for c in text)


NFC_INPUT = TextVariant(
    name="nfc_input", models="the input is NFC-normalised before tokenizing",
    rule=f"no normalisation of the input: the bytes go to the session as given ({TOKENIZE})",
    checks=("encode",), shipped_by="", transform=_nfc, headline="the port NFC-normalises its input")
NFKC_INPUT = TextVariant(
    name="nfkc_input", models="the input is NFKC-normalised before tokenizing",
    rule=f"no normalisation of the input (UGM vocabs apply only their own charsmap) ({TOKENIZE})",
    checks=("encode",), transform=_nfkc, headline="the port NFKC-normalises its input")
CRLF_FOLDED = TextVariant(
    name="crlf_folded", models="CRLF is folded to LF before tokenizing",
    rule=f"\\r\\n is two code points the pre-tokenizer sees, e.g. \\s*[\\r\\n]+ takes both ({TOKENIZE})",
    checks=("encode",), shipped_by="known-port-bugs 8 (newline runs and CRLF)",
    transform=lambda t, _: t.replace("\r\n", "\n"), headline="CRLF read as LF")
CURLY_APOSTROPHE = TextVariant(
    name="curly_apostrophe", models="’ (U+2019) read as ' (U+0027), so contractions match it",
    rule="contractions match only U+0027: '[sS]|'[tT]|... (src/unicode.cpp, unicode_regex_split_custom_*)",
    checks=("encode",), transform=lambda t, _: t.replace("\u2019", "'"),
    headline="’ (U+2019) read as ' (U+0027)")
NATIVE_DIGITS = TextVariant(
    name="native_digits_ascii", models="non-ASCII decimal digits read as ASCII 0-9",
    rule=f"a digit's own bytes are tokenized; \\p{{N}} groups it, nothing maps it to ASCII ({TOKENIZE})",
    checks=("encode",), transform=_native_digits, headline="non-ASCII decimal digits read as ASCII digits")


@dataclass(frozen=True, kw_only=True)
class CharVariant(TextVariant):
    """A text variant whose parameter is one code point, tried for each one in the first case."""

    def candidates(self, tok, cases):
        seen = texts(cases)
        if not seen:
            return
        for c in dict.fromkeys(seen[0]):
            if c != " " and not U.cpt_flags(ord(c)) & (U.LETTER | U.NUMBER):
                yield self.bind(c)

    def encode(self, tok, text, add, parse):
        if self.param is None:  # unbound: no code point chosen yet, so no change
            return encode_exact(tok, text, add, parse)
        return super().encode(tok, text, add, parse)

    def title(self, cases) -> str:
        what = self.headline.format(cp=cp_name(self.param) if self.param else "a code point")
        return titled(what, _VERBATIM)


CHAR_AS_SPACE = CharVariant(
    name="char_read_as_space", models="one code point (a non-ASCII space, NEL, ...) read as U+0020",
    rule=f"the code point's own bytes are tokenized; only SPM turns U+0020 into U+2581 ({TOKENIZE})",
    checks=("encode",), shipped_by="known-port-bugs 6 (whitespace set: NBSP, NEL, en space)",
    transform=lambda t, c: t.replace(c, " "), headline="{cp} read as a space (U+0020)")
CHAR_DROPPED = CharVariant(
    name="char_dropped", models="one code point (ZWJ, a format or control character) dropped",
    rule=f"every code point reaches the session; none is dropped before tokenizing ({TOKENIZE})",
    checks=("encode",), transform=lambda t, c: t.replace(c, ""), headline="{cp} dropped from the input")



#: Unicode White_Space: what Rust's trim_start, Java's strip and JavaScript's trimStart (less U+FEFF) take off.
_LEADING_WHITE_SPACE = re.compile("^[\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")
LEADING_WHITESPACE_STRIPPED = TextVariant(
    name="leading_whitespace_stripped", models="leading whitespace trimmed off the text (trim_start) before it "
                                               "is tokenized",
    rule=f"every byte of the text is tokenized, leading whitespace included ({TOKENIZE})",
    checks=("encode",), shipped_by="shimmytok 0.8.4 on gpt-2 and mpt ('\\na' gives [64])",
    transform=lambda t, _: _LEADING_WHITE_SPACE.sub("", t),
    headline="leading whitespace trimmed off the text")

@dataclass(frozen=True, kw_only=True)
class PrefixSpaceVariant(TextVariant):
    """A space put before the text of a byte-level BPE vocab (Hugging Face ByteLevel's
    ``add_prefix_space``), unless it starts with one."""

    def applies(self, tok) -> bool:
        from harness.tokenizer.pretokenize import byte_encodes
        return tok.vocab.vocab_type == "bpe" and byte_encodes(tok.vocab.pre_type)

    def encode(self, tok, text, add, parse):
        """The space goes before each text fragment between special tokens, as Hugging Face runs
        its pre-tokenizer on each ('a[PAD32060]a' is ' a', [PAD32060], ' a')."""
        raw = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else bytes(text)
        frags = tok.partition(raw, parse) if raw else []
        return tuple(tok._encode_bpe([f if isinstance(f, int) or f[:1] == b" " else b" " + f for f in frags], add))

    def title(self, cases) -> str:
        return titled(self.headline, self.rule)


PREFIX_SPACE_ADDED = PrefixSpaceVariant(
    name="prefix_space_added", models="byte-level BPE with a space put before the text (Hugging Face ByteLevel "
                                      "add_prefix_space=true)",
    rule="BPE tokenizes the text as given; only SPM/UGM vocabs with add_space_prefix prepend a space "
         "(src/llama-vocab.cpp, llm_tokenizer_bpe_session::tokenize)",
    checks=("encode",), shipped_by="candle-core 0.11.1 (TokenizerFromGguf's GPT-2 ByteLevel fallback)",
    transform=lambda t, _: t if not t or t[0] == " " else " " + t,
    headline="a space is put before the text (ByteLevel add_prefix_space)")

@dataclass(frozen=True, kw_only=True)
class MetaspaceVariant(TextVariant):
    """SPM's space prefix put as Hugging Face's Metaspace pre-tokenizer puts its ``▁``: not before a
    fragment that starts with a space, and with ``scheme`` "first" only before the text's first
    fragment (none after a special token). llama.cpp puts one before the first fragment and
    after each special, whatever the fragment starts with.

    >>> SPACE_PREFIX_SKIPPED.scheme, METASPACE_FIRST.scheme
    ('always', 'first')
    """

    scheme: str = "always"

    def applies(self, tok) -> bool:
        return tok.vocab.vocab_type == "spm" and bool(tok.vocab.add_space_prefix)

    def encode(self, tok, text, add, parse):
        """Each fragment gets its space as Metaspace decides, then llama.cpp's SPM encoding with
        add_space_prefix off (so it adds none of its own)."""
        raw = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else bytes(text)
        frags = [b" " + f if isinstance(f, bytes) and f[:1] != b" " and (self.scheme == "always" or k == 0) else f
                 for k, f in enumerate(tok.partition(raw, parse) if raw else [])]
        return tuple(_no_space_prefix(tok)._encode_spm(frags, add))

    def title(self, cases) -> str:
        return titled(self.headline, self.rule)


def _no_space_prefix(tok):
    """``tok`` with add_space_prefix off, sharing its SPM session (which never adds the space)."""
    def build():
        t = Tokenizer(replace(tok.vocab, add_space_prefix=False))
        t._session = tok.session()
        return t
    return cached(tok, ("no space prefix",), build)


_SPM_PREFIX = (f"SPM prepends one space to the first fragment and to each fragment after a special token, "
               f"also when it starts with a space ({TOKENIZE}: is_prev_special)")
METASPACE_FIRST = MetaspaceVariant(
    name="metaspace_prepend_first", scheme="first", transform=lambda t, _: t,
    models="SPM's space prefix as Hugging Face's Metaspace with prepend_scheme \"first\": only before the "
           "text's first fragment, and not when it starts with a space",
    rule=_SPM_PREFIX, checks=("encode",),
    shipped_by="known-port-bugs 12 (spaces next to special tokens in SPM); transformers and transformers.js on llama-spm "
               "(LlamaTokenizer's Metaspace)",
    headline="the space prefix goes only before the text's first fragment, none after a special token, "
             "and none before a leading space (Metaspace prepend_scheme \"first\")")
SPACE_PREFIX_SKIPPED = MetaspaceVariant(
    name="space_prefix_skipped_before_space", scheme="always", transform=lambda t, _: t,
    models="SPM's space prefix left out before a fragment that starts with a space (as Hugging Face's Metaspace "
           "does under either prepend_scheme)",
    rule=_SPM_PREFIX, checks=("encode",),
    shipped_by="known-port-bugs 12 (spaces next to special tokens in SPM); shimmytok, transformers and "
               "transformers.js on llama-spm",
    headline="no space prefix before a fragment that starts with a space (' a' is \u2581a, not \u2581\u2581a)")


@dataclass(frozen=True, kw_only=True)
class Chunked(Variant):
    """Long input cut every ``param = (size, unit)`` and each chunk tokenized alone."""

    SIZES = (64, 100, 128, 256, 500, 512, 1000, 1024, 2000, 2048, 4096, 8192, 16384, 32768)

    def candidates(self, tok, cases):
        seen = texts(cases)
        if not seen:
            return
        for size in self.SIZES:
            for unit in ("chars", "bytes"):
                if len(seen[0] if unit == "chars" else seen[0].encode("utf-8", "surrogateescape")) > size:
                    yield self.bind((size, unit))

    def encode(self, tok, text, add, parse):
        size, unit = self.param
        data = text if unit == "chars" else text.encode("utf-8", "surrogateescape")
        body = [i for k in range(0, len(data), size) for i in tok.encode(data[k:k + size], parse_special=parse)]
        return with_specials(tok, text, add, parse, body)

    def title(self, cases) -> str:
        size, unit = self.param or ("N", "chars")
        return titled(f"long input cut every {size} {unit} and each piece tokenized alone",
                      f"tokenizes the whole text in one call, words never cut ({TOKENIZE})")


CHUNKED = Chunked(
    name="long_input_chunked", models="long input cut into fixed-size chunks tokenized one by one",
    rule=f"one llama_tokenize call over the whole text; a word is never cut at a chunk edge ({TOKENIZE})",
    checks=("encode",), shipped_by="known-port-bugs 22 (very long runs)")


@dataclass(frozen=True, kw_only=True)
class DigitsApart(Variant):
    """Each decimal digit (Python ``re``'s ``\\d``) tokenized as a text of its own."""

    def encode(self, tok, text, add, parse):
        parts = [p for p in re.split(r"(\d)", text) if p]
        if len(parts) < 2:
            return encode_exact(tok, text, add, parse)
        body = [i for p in parts for i in encode_exact(tok, p, False, parse)]
        return with_specials(tok, text, add, parse, body)

    def title(self, cases) -> str:
        return titled("each digit tokenized as a separate text",
                      f"splits digits only as the pre type's regex says, the text in one call ({TOKENIZE})")


DIGITS_APART = DigitsApart(
    name="digits_encoded_apart", models="the text cut at every decimal digit and each piece tokenized alone",
    rule=f"one call over the whole text; the pre type's regex decides digit grouping ({TOKENIZE})",
    checks=("encode",))
