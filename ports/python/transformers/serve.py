"""Hugging Face transformers' GGUF conversion as a port: ``./serve --vocab V`` (runs this file).

transformers converts a GGUF's tokenizer metadata into a fast (``tokenizers``)
tokenizer: ``AutoTokenizer.from_pretrained(dir, gguf_file=name)``. People use
it to run GGUF models outside llama.cpp. Its GGUF loading imports torch even
when only the tokenizer is wanted; this port runs it on a stand-in (``torchless/``,
README.md) and lets ``load_gguf_checkpoint`` read metadata without torch.

How llama.cpp's flags map onto transformers (where it cannot express a
flag, the divergence is real and is reported, not papered over):

=======================  ==========================================================
protocol request         transformers call
=======================  ==========================================================
encode add_special       ``add_special_tokens=add_special`` (its post-processor adds
                         BOS/EOS/CLS/SEP as the converted tokenizer was configured).
encode parse_special     ``split_special_tokens=not parse_special``. transformers
                         matches *special* added tokens (GGUF CONTROL tokens) only
                         when not split, like llama.cpp's parse_special; its
                         non-special added tokens (USER_DEFINED) are always matched,
                         as in llama.cpp. Which added tokens it marks special is
                         the converter's choice: where that differs from llama.cpp's
                         token types, the ids diverge.
decode remove_special,   ``decode(ids, skip_special_tokens=not unparse_special)``.
unparse_special          llama.cpp renders CONTROL tokens as ""
                         unless unparse_special, and with remove_special drops only a
                         leading BOS / trailing EOS. transformers has one switch that
                         drops every special token, so remove_special=True with
                         unparse_special=True (drop BOS, keep other control texts) is
                         not expressible: unsupported. Its ``clean_up_tokenization_spaces`` is left
                         at the converted tokenizer's default, as a user gets it.
decode output            ``str.encode("utf-8")``: lossy. A sequence ending inside a
                         UTF-8 character decodes to U+FFFD in transformers, where
                         llama.cpp returns the raw bytes.
piece                    unsupported: transformers has no call giving one token's
                         bytes. ``decode([id])`` (and ``convert_tokens_to_string``)
                         run the decoders over a lone token (SPM's leading-space
                         Strip, the clean-up): a detokenize, not token_to_piece.
info                     ``len(tokenizer)`` (base vocab + added tokens).
=======================  ==========================================================

A GGUF it cannot convert (unknown architecture or tokenizer model) is served
as ``unsupported: <the exception>`` (see :mod:`harness.protocol.server`).

>>> class Tok:
...     def __len__(self): return 3
...     def __call__(self, text, **kw): return {"input_ids": [len(text), kw["add_special_tokens"],
...                                                          kw["split_special_tokens"]]}
>>> HFBackend(Tok()).encode("ab", add_special=True, parse_special=True)
[2, True, False]
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness.protocol.server import run_adapter


PIECE_UNSUPPORTED = "transformers has no call giving one token's piece"


class HFBackend:
    """One vocab converted by transformers."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.n_vocab = len(tokenizer)

    @classmethod
    def load(cls, path: Path) -> "HFBackend":
        import transformers.modeling_gguf_pytorch_utils as gguf_utils
        # load_gguf_checkpoint(return_tensors=False) reads metadata only, but refuses without
        # torch; the tokenizer conversion never calls torch (torchless/ raises if it did).
        gguf_utils.is_torch_available = lambda: True
        from transformers import AutoTokenizer
        path = Path(path).resolve()
        return cls(AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name))

    def encode(self, text: str, *, add_special: bool = False, parse_special: bool = False) -> list[int]:
        out = self.tokenizer(text, add_special_tokens=add_special, split_special_tokens=not parse_special)
        return list(out["input_ids"])

    def decode(self, ids: list[int], *, remove_special: bool = False, unparse_special: bool = False) -> bytes:
        if remove_special and unparse_special:
            raise NotImplementedError("decode's one switch skip_special_tokens cannot drop BOS/EOS "
                                      "while rendering the other special tokens")
        return self.tokenizer.decode(ids, skip_special_tokens=not unparse_special).encode("utf-8")

    def token_to_piece(self, id: int, *, special: bool = False) -> bytes:
        raise NotImplementedError(PIECE_UNSUPPORTED)

    def info(self) -> dict:
        return {"unsupported": ["piece"]}


def _check_library() -> None:
    import transformers  # noqa: F401  (ImportError -> exit code 3 with the install hint)
    import gguf  # noqa: F401  transformers needs gguf-py to read GGUF files


def main(argv: list[str] | None = None) -> int:
    return run_adapter(argv, name="transformers", check_library=_check_library, load=HFBackend.load)


if __name__ == "__main__":
    sys.exit(main())
