"""sentencepiece on a model built from an SPM GGUF, as users build one: ``./serve --vocab V`` (runs this file).

A GGUF of ``tokenizer.ggml.model`` ``llama`` is a SentencePiece BPE model taken apart
(convert_hf_to_gguf.py copies pieces, scores and types out of ``tokenizer.model``).
People without the original ``tokenizer.model`` put it back together with sentencepiece's
own protobuf (``sentencepiece_model_pb2.ModelProto``):

* one piece per token: its text, score and type (NORMAL 1, UNKNOWN 2, CONTROL 3,
  USER_DEFINED 4, UNUSED 5, BYTE 6, as in the GGUF);
* ``trainer_spec``: ``model_type`` BPE, ``byte_fallback`` when the vocab has BYTE tokens,
  ``unk_id``/``bos_id``/``eos_id``/``pad_id`` from the GGUF (-1 where absent);
* ``normalizer_spec``: ``identity`` (no NFKC), ``add_dummy_prefix`` from
  ``tokenizer.ggml.add_space_prefix`` (default true), ``remove_extra_whitespaces`` false,
  ``escape_whitespaces`` true;

then ``SentencePieceProcessor(model_proto=...)``.

How llama.cpp's flags map (README.md has the table):

* encode: ``encode(text, out_type=int)``; ``add_special``: the BOS id prepended / EOS
  appended where the GGUF's ``add_bos_token`` / ``add_eos_token`` say so
  (``add_bos=``/``add_eos=`` of ``encode``); a GGUF without ``add_bos_token`` leaves it
  to the caller, and sentencepiece has no default of its own: unsupported there; ``parse_special=true``: sentencepiece never
  matches CONTROL pieces in text: unsupported;
* decode: ``decode_ids(ids)`` renders CONTROL tokens as "" (llama.cpp's
  ``unparse_special=false``); ``unparse_special=true`` is not expressible (unsupported);
  ``remove_special`` has nothing left to remove; the str is encoded as UTF-8;
* piece: unsupported. sentencepiece has no call that gives one token's bytes:
  ``id_to_piece(id)`` is the vocab entry (``▁hello``, ``<0x0A>``) and ``decode_ids([id])``
  drops the dummy-prefix space; turning either into llama_token_to_piece's bytes would be
  the adapter's logic, not the package's.

A vocab of another ``tokenizer.ggml.model`` is unsupported.
"""

from __future__ import annotations

import sys

from harness.protocol.server import run_adapter

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def _field(reader, key, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def build_model(reader) -> bytes:
    """The serialized ModelProto rebuilt from a GGUF's tokenizer keys."""
    from sentencepiece import sentencepiece_model_pb2 as pb
    model = _field(reader, "tokenizer.ggml.model")
    if model != "llama":
        raise ValueError(f"tokenizer.ggml.model is {model!r}: not a SentencePiece (llama) vocab")
    tokens = _field(reader, "tokenizer.ggml.tokens")
    scores = _field(reader, "tokenizer.ggml.scores") or [0.0] * len(tokens)
    types = _field(reader, "tokenizer.ggml.token_type") or [NORMAL] * len(tokens)
    proto = pb.ModelProto()
    for text, score, kind in zip(tokens, scores, types):
        p = proto.pieces.add()
        p.piece, p.score, p.type = text, float(score), int(kind) if 1 <= int(kind) <= 6 else NORMAL
    t = proto.trainer_spec
    t.model_type = pb.TrainerSpec.BPE
    t.vocab_size = len(tokens)
    t.byte_fallback = BYTE in types
    for name, key in (("unk_id", "unknown"), ("bos_id", "bos"), ("eos_id", "eos"), ("pad_id", "padding")):
        setattr(t, name, int(_field(reader, f"tokenizer.ggml.{key}_token_id", -1)))
    n = proto.normalizer_spec
    n.name = "identity"
    n.add_dummy_prefix = bool(_field(reader, "tokenizer.ggml.add_space_prefix", True))
    n.remove_extra_whitespaces = False
    n.escape_whitespaces = True
    return proto.SerializeToString()


class SentencePieceBackend:
    """A SentencePieceProcessor on the model rebuilt from one GGUF."""

    def __init__(self, sp, add_bos: bool | None, add_eos: bool | None):
        self.sp, self.add_bos, self.add_eos = sp, add_bos, add_eos
        self.n_vocab = sp.get_piece_size()

    @classmethod
    def load(cls, path) -> "SentencePieceBackend":
        import sentencepiece as spm
        from gguf import GGUFReader
        reader = GGUFReader(path)
        sp = spm.SentencePieceProcessor(model_proto=build_model(reader))
        return cls(sp, _field(reader, "tokenizer.ggml.add_bos_token"), _field(reader, "tokenizer.ggml.add_eos_token"))

    def encode(self, text: str, *, add_special: bool = False, parse_special: bool = False) -> list[int]:
        if parse_special:
            raise NotImplementedError("sentencepiece never matches CONTROL piece texts in the input")
        if add_special and self.add_bos is None:
            raise NotImplementedError("the GGUF has no tokenizer.ggml.add_bos_token and sentencepiece no default: "
                                      "whether BOS is added is not the package's to say")
        return list(self.sp.encode(text, out_type=int, add_bos=add_special and bool(self.add_bos),
                                   add_eos=add_special and bool(self.add_eos)))

    def decode(self, ids: list[int], *, remove_special: bool = False, unparse_special: bool = False) -> bytes:
        if unparse_special:
            raise NotImplementedError("sentencepiece's decode renders CONTROL tokens as \"\" always")
        return self.sp.decode_ids(list(ids)).encode("utf-8")

    def token_to_piece(self, id: int, *, special: bool = False) -> bytes:
        raise NotImplementedError("sentencepiece has no call that renders one token as its bytes (id_to_piece "
                                  "gives the vocab entry, decode_ids([id]) drops the dummy-prefix space)")

    def info(self) -> dict:
        return {"unsupported": ["parse_special=true", "unparse_special=true", "piece"]
                + (["add_special=true"] if self.add_bos is None else [])}


def _check_library() -> None:
    import gguf  # noqa: F401
    import sentencepiece  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    return run_adapter(argv, name="sentencepiece", check_library=_check_library, load=SentencePieceBackend.load)


if __name__ == "__main__":
    sys.exit(main())
