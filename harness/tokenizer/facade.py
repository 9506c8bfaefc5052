"""The Tokenizer facade: llama.cpp's ``llama_tokenize`` / ``llama_detokenize`` / ``llama_token_to_piece``.

One object per vocab (like tiktoken's ``Encoding``). Encoding cuts special
tokens out of the raw bytes exactly as ``tokenizer_st_partition`` does, then
runs each raw fragment through the vocab type's algorithm session
(``harness.tokenizer.algorithms.<vocab_type>``) and adds BOS/EOS/CLS/SEP the way
``llama_vocab::impl::tokenize`` does for that type. Decoding needs no
algorithm: pieces come from token texts and attributes alone.

>>> tok = Tokenizer.from_gguf("vocabs/ggml-vocab-llama-spm.gguf")        # doctest: +SKIP
>>> tok.encode("Hello<s>world", parse_special=True)                      # doctest: +SKIP
[15043, 1, 3186]
>>> tok.decode([1, 15043], remove_special=True)                          # doctest: +SKIP
b' Hello'
"""

from __future__ import annotations

import codecs
import importlib
import operator
import os
import re
from itertools import chain
from typing import Iterable, Sequence

from harness.tokenizer import unicode as U
from harness.errors import HarnessError, VocabError
from harness.tokenizer.algorithms.rwkv import unescape as unescape_rwkv  # one port of llama_unescape_rwkv_token
from harness.tokenizer.vocab import BYTE, CONTROL, LSTRIP, NORMAL, RSTRIP, UNKNOWN, USER_DEFINED, Vocab

_ESCAPED_SPACE = "\u2581".encode()  # '▁'
_C_ISSPACE = b" \t\n\v\f\r"         # isspace() in the C locale
_HEAD = 6                          # bytes of a special's text tested before the whole text
LLAMA_TOKEN_NULL = -1
_UGM_DEFAULT_UNK = 2  # special_unk_id as llama.cpp's load sets it for tokenizer model "t5"
_ALGORITHM_MODULES = {"spm": "spm", "bpe": "bpe", "wpm": "wpm", "ugm": "ugm", "rwkv": "rwkv",
                      "plamo2": "plamo2", "test": "hashtest"}


class TokenIdError(HarnessError, IndexError):
    """A token id outside ``[0, n_vocab)`` (llama.cpp throws std::out_of_range)."""


class Tokenizer:
    """llama.cpp's tokenizer for one :class:`Vocab`.

    >>> tok = Tokenizer.from_gguf("vocabs/ggml-vocab-qwen2.gguf")        # doctest: +SKIP
    >>> tok.token_to_piece(9707)                                          # doctest: +SKIP
    b'Hello'
    """

    def __init__(self, vocab: Vocab):
        self.vocab = vocab
        self._session = None
        self._pieces: dict[int, bytes] = {}
        # (id, text, attr) of cache_special_tokens, in llama.cpp's (libstdc++ std::sort) order
        self._specials = [(i, vocab.tokens[i], vocab.attrs[i]) for i in vocab.special_cache]
        self._by_head: dict[bytes, list[int]] | None = None  # see _candidates
        self._hidden: frozenset[int] | None = None           # see _hidden_ids

    @classmethod
    def from_gguf(cls, path: str | os.PathLike) -> "Tokenizer":
        """Load the vocab at ``path`` and wrap it.

        >>> Tokenizer.from_gguf("vocabs/ggml-vocab-gpt-2.gguf").n_vocab   # doctest: +SKIP
        50257
        """
        tok = cls(Vocab.from_gguf(path))
        if tok.vocab.vocab_type != "none":
            tok.session()  # llama.cpp builds its tokenizer while loading: a failure there refuses the file
        return tok

    @property
    def n_vocab(self) -> int:
        return self.vocab.n_vocab

    def __repr__(self) -> str:
        return f"Tokenizer({self.vocab!r})"

    # --- encode ------------------------------------------------------------------------
    def session(self):
        """The vocab type's algorithm session, built once (imported lazily)."""
        if self._session is None:
            vt = self.vocab.vocab_type
            if vt not in _ALGORITHM_MODULES:
                raise HarnessError(f"vocab_type {vt!r} of {self.vocab.path} cannot tokenize: llama.cpp "
                                   "aborts (GGML_ABORT) when tokenizing with a 'none' vocab")
            name = f"harness.tokenizer.algorithms.{_ALGORITHM_MODULES[vt]}"
            try:
                module = importlib.import_module(name)
            except ImportError as e:
                raise HarnessError(f"the {vt} algorithm ({name}) is not available: {e}; "
                                   "it is written separately -- check that the module exists") from e
            # llama.cpp builds its tokenizer (init_tokenizer) while loading: errors here are load errors
            self._session = module.Session(self.vocab)
            if vt in ("bpe", "ugm", "rwkv", "plamo2"):
                self._probe_linefeed()
        return self._session

    def _probe_linefeed(self) -> None:
        """llama.cpp's load ends by tokenizing "\n" (to find linefeed_id) for these types:
        if that throws, llama.cpp refuses the vocab. (Its RWKV GGML_ASSERT on an empty result
        cannot fire: the RWKV session emits unk, even -1, for every unmatched byte.)"""
        try:
            ids = self.encode("\n")
        except HarnessError as e:
            self._session = None
            raise VocabError(f"{self.vocab.path}: llama.cpp would refuse to load this vocab: tokenizing "
                             f"'\\n' during load fails: {e}") from e
        v = self.vocab
        # llama.cpp tokenizes "\n" before it reads the special ids, so an unknown there is
        # t5's default unk, 2; print_info then looks its text up with at(): out of range throws.
        if v.vocab_type == "ugm" and ids and ids[0] == (LLAMA_TOKEN_NULL if v.unk is None else v.unk) \
                and _UGM_DEFAULT_UNK >= v.n_vocab:
            self._session = None
            raise VocabError(f"{v.path}: llama.cpp would refuse to load this vocab: '\\n' tokenizes to "
                             f"unk, id {_UGM_DEFAULT_UNK} while loading (t5's default), and there are only "
                             f"{v.n_vocab} tokens (std::out_of_range); add tokens or map '\\n' to one")

    def encode(self, text: str | bytes, *, add_special: bool = False, parse_special: bool = False) -> list[int]:
        """``llama_tokenize(text, add_special, parse_special)``.

        ``text`` may be bytes: invalid UTF-8 reaches the algorithm exactly as
        llama.cpp would receive it. A ``str`` is UTF-8 encoded (surrogate
        escapes map back to their raw bytes).

        >>> Tokenizer.from_gguf("vocabs/ggml-vocab-llama-spm.gguf").encode("", add_special=True)  # doctest: +SKIP
        [1]
        """
        raw = _to_bytes(text)
        vt = self.vocab.vocab_type
        if vt == "none":
            self.session()  # raises: llama.cpp aborts for any input, even ""
        fragments = self.partition(raw, parse_special) if raw else []
        if vt == "spm":
            return self._encode_spm(fragments, add_special)
        if vt == "bpe":
            return self._encode_bpe(fragments, add_special)
        if vt == "wpm":
            out = [self._special_id("bos", "CLS")] if add_special else []
            out += self._run(fragments)
            return out + [self._special_id("sep", "SEP")] if add_special else out
        if vt == "ugm":
            return self._with_bos_eos(self._run(fragments), add_special)
        return self._run(fragments)  # rwkv, plamo2: add_special is ignored

    def partition(self, raw: bytes, parse_special: bool) -> list[int | bytes]:
        """``tokenizer_st_partition``: cut special tokens out of ``raw``.

        Returns raw-text fragments (bytes) and token ids in order. Specials are
        tried longest first (in cache order); each is cut at its leftmost
        occurrence in every remaining fragment, repeatedly. CONTROL/UNKNOWN
        only with ``parse_special``; USER_DEFINED always. LSTRIP/RSTRIP trim
        C-isspace bytes next to the token.
        """
        frags: list[int | tuple[int, int]] = [(0, len(raw))]
        specials = self._specials
        for k in self._candidates(raw):
            tid, text, attr = specials[k]
            if not parse_special and attr & (CONTROL | UNKNOWN):
                continue
            if text not in raw:  # fragments are slices of raw: a global pre-check
                continue
            out: list[int | tuple[int, int]] = []
            for f in frags:
                if isinstance(f, int):
                    out.append(f)
                else:
                    _split_fragment(raw, f[0], f[1], tid, text, attr, out)
            frags = out
        return [f if isinstance(f, int) else raw[f[0]:f[1]] for f in frags]

    def _candidates(self, raw: bytes) -> list[int]:
        """Indices (in cache order) of the specials whose first bytes occur in ``raw``.

        Many specials share a head ('<|reserved_special_token_...'): each head is
        looked for once, and specials under an absent head are never visited.
        """
        if self._by_head is None:
            self._by_head = {}
            for k, (_, text, _) in enumerate(self._specials):
                self._by_head.setdefault(text[:_HEAD], []).append(k)
        found = [ks for head, ks in self._by_head.items() if head in raw]
        return sorted(chain.from_iterable(found)) if len(found) > 1 else (found[0] if found else [])

    def _run(self, fragments: list[int | bytes]) -> list[int]:
        out: list[int] = []
        for f in fragments:
            if isinstance(f, int):
                out.append(f)
            else:
                out += self.session().tokenize(f)
        return out

    def _encode_spm(self, fragments: list[int | bytes], add_special: bool) -> list[int]:
        v = self.vocab
        out = [self._special_id("bos", "BOS")] if add_special and v.add_bos else []
        is_prev_special = True  # prefix with space if first token
        for f in fragments:
            if isinstance(f, int):
                out.append(f)
                is_prev_special = True
                continue
            text = (b" " + f) if v.add_space_prefix and is_prev_special else f
            out += self.session().tokenize(text.replace(b" ", _ESCAPED_SPACE))
            is_prev_special = False
        if add_special and v.add_eos:
            out.append(self._special_id("eos", "EOS"))
        return out

    def _encode_bpe(self, fragments: list[int | bytes], add_special: bool) -> list[int]:
        v = self.vocab
        if v.escape_whitespaces:
            fragments = [f if isinstance(f, int) else f.replace(b" ", _ESCAPED_SPACE) for f in fragments]
        return self._with_bos_eos(self._run(fragments), add_special)

    def _with_bos_eos(self, ids: list[int], add_special: bool) -> list[int]:
        v = self.vocab
        if add_special and v.add_bos:
            ids.insert(0, self._special_id("bos", "BOS"))
        if add_special and v.add_eos:
            ids.append(self._special_id("eos", "EOS"))
        return ids

    def _special_id(self, slot: str, what: str) -> int:
        tid = getattr(self.vocab, slot)
        if tid is None:
            raise HarnessError(f"add_special needs a {what} token but {self.vocab.path} has none "
                               f"(llama.cpp: GGML_ASSERT(special_{slot}_id != LLAMA_TOKEN_NULL) aborts)")
        return tid

    # --- decode ------------------------------------------------------------------------
    def token_to_piece(self, id: int, *, special: bool = False, lstrip: int = 0) -> bytes:
        """``llama_token_to_piece(id, lstrip, special)``: one token's bytes.

        Without ``special``, CONTROL and UNKNOWN tokens render as nothing.

        >>> Tokenizer.from_gguf("vocabs/ggml-vocab-llama-spm.gguf").token_to_piece(1)  # doctest: +SKIP
        b''
        """
        attr = self._attr(id)
        if not special and attr & (UNKNOWN | CONTROL):
            return b""
        piece = self._pieces.get(id)
        if piece is None:
            piece = self._pieces[id] = self._compute_piece(id)
        while lstrip > 0 and piece[:1] == b" ":  # skip up to lstrip leading spaces
            piece, lstrip = piece[1:], lstrip - 1
        return piece

    def _attr(self, id: int) -> int:
        if self.vocab.vocab_type == "none":
            raise HarnessError("llama.cpp aborts (GGML_ASSERT type != NONE) on a vocab without tokens")
        try:
            id = operator.index(id)
        except TypeError:
            raise TokenIdError(f"token id {id!r} is not an integer") from None
        if not 0 <= id < self.n_vocab:
            raise TokenIdError(f"token id {id!r} out of range [0, {self.n_vocab}) for {self.vocab.path}")
        return self.vocab.attrs[id]

    def _compute_piece(self, id: int) -> bytes:
        """The cached piece (``token_to_piece_for_cache(id, special=true)``)."""
        v, text, attr = self.vocab, self.vocab.tokens[id], self.vocab.attrs[id]
        vt = v.vocab_type
        if vt == "rwkv":
            return unescape_rwkv(text)
        if vt == "test":  # format("%x", token), whatever the token's type
            return b"%x" % id
        if vt == "plamo2":
            if attr & BYTE and len(text) == 6 and text[:3] == b"<0x" and text[5:] == b">" \
                    and all(c in b"0123456789abcdefABCDEF" for c in text[3:5]):
                return bytes([int(text[3:5], 16)])
            return text
        if attr & (UNKNOWN | CONTROL | USER_DEFINED):
            return text
        if attr & NORMAL:
            if vt == "bpe" and not v.escape_whitespaces:
                return decode_bpe_text(text)
            return text.replace(_ESCAPED_SPACE, b" ")
        if attr & BYTE:
            if vt == "wpm":
                raise HarnessError(f"token {id} of {v.path} is a BYTE token in a WPM vocab: llama.cpp "
                                   "aborts (token_to_byte has no WPM case) while loading it")
            return bytes([_strtol_hex(text, id)])
        return b""  # UNUSED / UNDEFINED only

    def decode(self, ids: Iterable[int], *, remove_special: bool = False, unparse_special: bool = False) -> bytes:
        """``llama_detokenize``: lossless bytes (may be invalid UTF-8).

        >>> Tokenizer.from_gguf("vocabs/ggml-vocab-llama-spm.gguf").decode([1, 15043])  # doctest: +SKIP
        b' Hello'
        """
        v = self.vocab
        if v.vocab_type == "none":
            return b""
        ids = list(ids)
        remove_space = v.add_space_prefix
        if remove_special and v.add_bos and ids and ids[0] == v.bos:
            remove_space = False
            ids = ids[1:]
        if remove_special and v.add_eos and ids and ids[-1] == v.eos:
            ids = ids[:-1]
        if ids and set(map(type, ids)) == {int}:
            parts = self._pieces_of(ids, unparse_special)
            if remove_space and parts[0][:1] == b" ":
                parts[0] = parts[0][1:]
        else:  # numpy ints, bools, bad values: one checked call per id
            parts = [self.token_to_piece(tid, special=unparse_special, lstrip=int(remove_space and i == 0))
                     for i, tid in enumerate(ids)]
        text = b"".join(parts)
        return clean_spaces(text) if v.clean_spaces else text

    def _pieces_of(self, ids: list[int], special: bool) -> list[bytes]:
        """token_to_piece of every id (plain ints), from the piece cache in one pass;
        an id not cached yet (or out of range) goes through token_to_piece."""
        parts = list(map(self._pieces.get, ids))
        if None in parts:
            for tid in set(t for t, p in zip(ids, parts) if p is None):
                self.token_to_piece(tid, special=True)  # validates and caches
            parts = list(map(self._pieces.__getitem__, ids))
        if not special:
            hidden = self._hidden_ids()
            if not hidden.isdisjoint(ids):
                parts = [b"" if t in hidden else p for t, p in zip(ids, parts)]
        return parts

    def _hidden_ids(self) -> frozenset[int]:
        """CONTROL and UNKNOWN tokens: pieces only with ``special``."""
        if self._hidden is None:
            self._hidden = frozenset(i for i, a in enumerate(self.vocab.attrs) if a & (UNKNOWN | CONTROL))
        return self._hidden

    def decode_str(self, ids: Iterable[int], *, remove_special: bool = False, unparse_special: bool = False) -> str:
        """:meth:`decode` as text. LOSSY: invalid UTF-8 becomes U+FFFD. Use for display only.

        >>> Tokenizer.from_gguf("vocabs/ggml-vocab-gpt-2.gguf").decode_str([15496])  # doctest: +SKIP
        'Hello'
        """
        return self.decode(ids, remove_special=remove_special,
                           unparse_special=unparse_special).decode("utf-8", "replace")


def _to_bytes(text: str | bytes | bytearray | memoryview) -> bytes:
    if isinstance(text, str):
        try:
            return text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError as e:
            raise HarnessError(f"text contains a lone surrogate at index {e.start} that has no UTF-8 "
                               "form; pass the exact bytes instead (encode accepts bytes)") from e
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    raise TypeError(f"encode() takes str or bytes, not {type(text).__name__}")


def _split_fragment(raw: bytes, start: int, end: int, tid: int, text: bytes, attr: int,
                    out: list) -> None:
    """Cut every occurrence of ``text`` out of ``raw[start:end]`` (leftmost first), appending
    the left texts, the token and the final remainder to ``out``. Iterative (no recursion)."""
    n = len(text)
    while True:
        m = raw.find(text, start, end)
        if m < 0:
            if end > start:
                out.append((start, end))
            return
        left_end = m
        if attr & LSTRIP:
            while left_end > start and raw[left_end - 1] in _C_ISSPACE:
                left_end -= 1
        if left_end > start:
            out.append((start, left_end))
        out.append(tid)
        start = m + n
        if start >= end:
            return
        if attr & RSTRIP:
            while start < end and raw[start] in _C_ISSPACE:
                start += 1


# --- piece helpers ----------------------------------------------------------------------------

def decode_bpe_text(text: bytes) -> bytes:
    """``llama_decode_text``: map a byte-level BPE token back to raw bytes.

    A code point outside the GPT-2 byte map becomes ``[UNK_BYTE_0x<its utf8 hex><whole text>]``.

    >>> decode_bpe_text("Ġhello".encode()), decode_bpe_text("a€".encode())
    (b' hello', b'a[UNK_BYTE_0xe282aca\\xe2\\x82\\xac]')
    """
    try:
        chars = text.decode("utf-8")  # valid UTF-8: same code points as unicode_cpts_from_utf8
        utf8s = None
    except UnicodeDecodeError:
        chars = None
        utf8s = [U.cpt_to_utf8(c) for c in U.cpts_from_utf8(text)]  # raises like llama.cpp on > U+10FFFF
    out = bytearray()
    table = U.UNICODE_TO_BYTE
    for i in range(len(chars) if chars is not None else len(utf8s)):
        if chars is not None:
            b = table.get(chars[i])
            enc = None if b is not None else chars[i].encode("utf-8")
        else:
            enc = utf8s[i]
            s = enc.decode("utf-8", "surrogatepass") if len(enc) else ""
            b = table.get(s) if len(s) == 1 else None
        if b is not None:
            out.append(b)
        else:
            out += b"[UNK_BYTE_0x" + enc.hex().encode() + text + b"]"
    return bytes(out)


def _strtol_hex(text: bytes, id: int) -> int:
    """``(char) strtol(text.substr(3, 2).c_str(), NULL, 16)`` for a BYTE token."""
    if len(text) < 3:
        raise HarnessError(f"BYTE token {id} text {text!r} is shorter than 3 bytes: llama.cpp's "
                           "substr(3, 2) throws std::out_of_range")
    s = text[3:5].split(b"\0", 1)[0]
    i = 0
    while i < len(s) and s[i] in _C_ISSPACE:
        i += 1
    neg = i < len(s) and s[i:i + 1] == b"-"
    if i < len(s) and s[i:i + 1] in (b"+", b"-"):
        i += 1
    digits = re.match(rb"[0-9a-fA-F]*", s[i:]).group()
    value = int(digits, 16) if digits else 0
    return (-value if neg else value) & 0xFF


# clean_up_tokenization_spaces, the three in-place passes of llama_vocab::impl::detokenize.
# Each pass reads only original bytes of its input (proved in tests against a literal port
# of the C loops), so each is one regex substitution:
_PASS1 = re.compile(rb" (?=[?!.,])")        # " ?" " !" " ." " ,"  -> drop the space
_PASS2 = re.compile(rb" ' ")                 # " ' " -> "'" (non-overlapping, left to right)
_PASS3 = re.compile(rb" (?='[sm]|'re|'ve)")  # " 's" " 'm" " 're" " 've" -> drop the space


def clean_spaces(text: bytes) -> bytes:
    """Apply llama.cpp's three clean_spaces passes.

    >>> clean_spaces(b"Hello ? world"), clean_spaces(b"a ' b"), clean_spaces(b"it 's do 't")
    (b'Hello? world', b"a'b", b"it's do 't")
    """
    return _PASS3.sub(b"", _PASS2.sub(b"'", _PASS1.sub(b"", text)))


class IncrementalDecoder:
    """Streaming decode: feed ids, get back text that can no longer change.

    ``decode(ids)`` returns the newly final text; ``flush()`` the rest. The
    concatenation of all outputs equals ``tokenizer.decode(all_ids).decode(
    "utf-8", "replace")``. Text is held back while it ends in an incomplete
    UTF-8 sequence, or (with clean_spaces) in bytes a later piece could still
    remove (a trailing space or `` '``). Each call re-decodes the stream, so
    cost grows with its length -- fine for chat-sized streams.

    >>> d = IncrementalDecoder(Tokenizer.from_gguf("vocabs/ggml-vocab-gpt-2.gguf"))  # doctest: +SKIP
    >>> d.decode([15496]) + d.decode([995]) + d.flush()                             # doctest: +SKIP
    'Hello world'
    """

    def __init__(self, tokenizer: Tokenizer, *, remove_special: bool = False, unparse_special: bool = False):
        self.tok, self.kw = tokenizer, dict(remove_special=remove_special, unparse_special=unparse_special)
        self.ids: list[int] = []
        self.done = 0  # bytes of the full decode already turned into text
        self.utf8 = codecs.getincrementaldecoder("utf-8")("replace")

    def decode(self, ids: Sequence[int]) -> str:
        self.ids += list(ids)
        full = self.tok.decode(self.ids, **self.kw)
        stable = len(full)
        if self.tok.vocab.clean_spaces:
            stable -= 8  # a later byte can still remove a space up to a few bytes back (" 're")
        if self.kw["remove_special"] and self.tok.vocab.add_eos:
            stable = min(stable, self._before_last())  # a trailing EOS may still be dropped
        stable = max(stable, self.done)
        out = self.utf8.decode(full[self.done:stable])
        self.done = stable
        return out

    def _before_last(self) -> int:
        return len(self.tok.decode(self.ids[:-1], **self.kw)) if self.ids else 0

    def flush(self) -> str:
        full = self.tok.decode(self.ids, **self.kw)
        out = self.utf8.decode(full[self.done:], final=True)
        self.done = len(full)
        return out
