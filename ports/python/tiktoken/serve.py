"""tiktoken on a GGUF's byte-level BPE vocab, as users build one: ``./serve --vocab V`` (runs this file).

People who want tiktoken's speed for a GGUF model's tokenizer (Meta's own Llama 3
``tokenizer.py`` is a tiktoken ``Encoding``) build the ``Encoding`` from the vocab:

* ``mergeable_ranks``: every NORMAL token's bytes (the GPT-2 byte-to-unicode map undone)
  with its id as its rank (tiktoken merges the pair whose result has the lowest rank, and
  byte-level BPE vocabs list tokens in merge order);
* ``special_tokens``: the CONTROL tokens, by text (Llama 3's reserved special tokens are
  CONTROL). tiktoken has one kind of special token, matched in text only when allowed;
  llama.cpp matches USER_DEFINED texts in raw text always, and tiktoken has nothing that
  does: a vocab with USER_DEFINED tokens is unsupported (no mapping of the adapter's own);
* ``pat_str``: the pre-tokenizer regex of the model, copied from its reference
  implementation: GPT-2's (``tokenizer.ggml.pre`` gpt-2), Llama 3's (llama-bpe),
  Qwen2's (qwen2). Other pre-tokenizers have no published tiktoken pattern: unsupported.

How llama.cpp's flags map (README.md has the table):

* encode ``parse_special``: ``encode(text, allowed_special="all")``; without it
  ``encode(text, disallowed_special=())`` (special texts are plain text);
* encode ``add_special``: the BOS id prepended / EOS appended where the GGUF's
  ``add_bos_token`` / ``add_eos_token`` say so, as Llama 3's ``Tokenizer.encode(bos=True)``;
  where the GGUF has no ``add_bos_token`` tiktoken has no default to fall back on:
  ``add_special=true`` is unsupported there (no default of the adapter's own);
* decode: ``decode_bytes(ids)`` (exact bytes); it renders every special token's text, so
  only ``unparse_special=True, remove_special=False`` is expressible (the rest: unsupported);
* piece ``special=True``: ``decode_single_token_bytes(id)``; ``special=False`` unsupported.

A vocab that is not byte-level BPE (``tokenizer.ggml.model`` other than ``gpt2``) is unsupported.

>>> unbyte("Ġhi"), unbyte("<|x|>") is None
(b' hi', True)
"""

from __future__ import annotations

import sys

from harness.protocol.server import run_adapter

GPT2_PAT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_PAT = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
              r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
QWEN2_PAT = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
             r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
PATTERNS = {"gpt-2": GPT2_PAT, "llama-bpe": LLAMA3_PAT, "qwen2": QWEN2_PAT}
NORMAL, CONTROL, USER_DEFINED = 1, 3, 4


def _byte_map() -> dict[str, int]:
    """GPT-2's bytes_to_unicode, inverted: character -> byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


_UNBYTE = _byte_map()


def unbyte(text: str) -> bytes | None:
    """A byte-level token text as bytes; None if a character is outside the map."""
    try:
        return bytes(_UNBYTE[ch] for ch in text)
    except KeyError:
        return None


def _field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    return f.contents()


class TiktokenBackend:
    """A tiktoken Encoding built from one GGUF."""

    def __init__(self, enc, bos, eos, add_bos, add_eos):
        self.enc, self.bos, self.eos, self.add_bos, self.add_eos = enc, bos, eos, add_bos, add_eos
        self.n_vocab = enc.n_vocab

    @classmethod
    def load(cls, path) -> "TiktokenBackend":
        import tiktoken
        from gguf import GGUFReader
        reader = GGUFReader(path)
        model = _field(reader, "tokenizer.ggml.model")
        if model != "gpt2":
            raise ValueError(f"tokenizer.ggml.model is {model!r}: tiktoken does byte-level BPE only")
        pre = _field(reader, "tokenizer.ggml.pre", "default")
        if pre not in PATTERNS:
            raise ValueError(f"no tiktoken pattern for tokenizer.ggml.pre {pre!r} (have: {', '.join(PATTERNS)})")
        tokens = _field(reader, "tokenizer.ggml.tokens")
        types = _field(reader, "tokenizer.ggml.token_type") or [NORMAL] * len(tokens)
        if USER_DEFINED in types:
            raise ValueError(f"{list(types).count(USER_DEFINED)} USER_DEFINED tokens: llama.cpp matches their "
                             "texts in raw text always, tiktoken's special tokens only when allowed")
        ranks, special = {}, {}
        for i, (text, kind) in enumerate(zip(tokens, types)):
            if kind == CONTROL:
                special.setdefault(text, i)
                continue
            b = unbyte(text)
            if b is not None and b not in ranks:
                ranks[b] = i
        enc = tiktoken.Encoding(name=f"gguf-{pre}", pat_str=PATTERNS[pre], mergeable_ranks=ranks,
                                special_tokens=special)
        return cls(enc, _field(reader, "tokenizer.ggml.bos_token_id"), _field(reader, "tokenizer.ggml.eos_token_id"),
                   _field(reader, "tokenizer.ggml.add_bos_token"), _field(reader, "tokenizer.ggml.add_eos_token"))

    def encode(self, text: str, *, add_special: bool = False, parse_special: bool = False) -> list[int]:
        if parse_special:
            ids = self.enc.encode(text, allowed_special="all")
        else:
            ids = self.enc.encode(text, disallowed_special=())
        if add_special:
            if self.add_bos is None:
                raise NotImplementedError("the GGUF has no tokenizer.ggml.add_bos_token and tiktoken no add_special: "
                                          "whether BOS is added is not the package's to say")
            ids = ([self.bos] if self.add_bos and self.bos is not None else []) + ids
            ids += [self.eos] if self.add_eos and self.eos is not None else []
        return ids

    def decode(self, ids: list[int], *, remove_special: bool = False, unparse_special: bool = False) -> bytes:
        if remove_special or not unparse_special:
            raise NotImplementedError("tiktoken's decode renders every special token's text and removes "
                                      "none: only unparse_special=true, remove_special=false is expressible")
        return self.enc.decode_bytes(ids)

    def token_to_piece(self, id: int, *, special: bool = False) -> bytes:
        if not special:
            raise NotImplementedError("tiktoken renders special tokens' text: piece special=false is not expressible")
        return self.enc.decode_single_token_bytes(id)

    def info(self) -> dict:
        return {"unsupported": ["remove_special=true", "unparse_special=false", "special=false"]
                + (["add_special=true"] if self.add_bos is None else [])}


def _check_library() -> None:
    import gguf  # noqa: F401
    import tiktoken  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    return run_adapter(argv, name="tiktoken", check_library=_check_library, load=TiktokenBackend.load)


if __name__ == "__main__":
    sys.exit(main())
