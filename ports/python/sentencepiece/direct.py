"""sentencepiece called as its README shows, for the adapter check: ``./direct --vocab V``.

A second program beside ``serve.py`` sharing no code with it (harness/scoreboard/adapter.py):
it answers the same JSON-lines requests with sentencepiece's documented Python API and
nothing else. sentencepiece loads a model from a serialized ``ModelProto``
(``SentencePieceProcessor(model_proto=...)``, python/README.md); a GGUF holds the model's
pieces, scores and types, so the proto is filled from those; the normalizer, which the GGUF does
not hold, is the one of the model the GGUF was converted from (identity, whitespace kept), and
every other field keeps ``sentencepiece_model.proto``'s default. Then, from the README:

* ``sp.encode(text, out_type=int, add_bos=..., add_eos=...)``; add_special passes the GGUF's
  ``add_bos_token``/``add_eos_token`` (absent: unsupported, the package has no say);
  parse_special=true: unsupported (sentencepiece has no switch that matches control pieces);
* ``sp.decode(ids)`` (a str, encoded as UTF-8); unparse_special=true: unsupported;
* piece: unsupported (``id_to_piece`` is the vocab entry, not the token's bytes).
"""

import json
import sys


def gguf_field(reader, key, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


class Direct:
    def __init__(self, path):
        import sentencepiece as spm
        from gguf import GGUFReader
        from sentencepiece import sentencepiece_model_pb2 as model_pb2
        r = GGUFReader(path)
        if gguf_field(r, "tokenizer.ggml.model") != "llama":
            raise ValueError("not a SentencePiece (tokenizer.ggml.model llama) vocab")
        tokens = gguf_field(r, "tokenizer.ggml.tokens")
        scores = gguf_field(r, "tokenizer.ggml.scores")
        types = gguf_field(r, "tokenizer.ggml.token_type")
        m = model_pb2.ModelProto()
        for i, text in enumerate(tokens):
            piece = m.pieces.add()
            piece.piece = text
            if scores is not None:
                piece.score = scores[i]
            if types is not None:
                piece.type = types[i]
        m.trainer_spec.model_type = model_pb2.TrainerSpec.BPE
        m.trainer_spec.byte_fallback = types is not None and 6 in types
        for name, key in (("unk", "unknown"), ("bos", "bos"), ("eos", "eos"), ("pad", "padding")):
            tid = gguf_field(r, f"tokenizer.ggml.{key}_token_id")
            if tid is not None:
                setattr(m.trainer_spec, f"{name}_id", tid)
                setattr(m.trainer_spec, f"{name}_piece", tokens[tid])
        space = gguf_field(r, "tokenizer.ggml.add_space_prefix")
        if space is not None:
            m.normalizer_spec.add_dummy_prefix = space
        # The GGUF holds no normalizer: it takes the values of the SentencePiece model a llama-spm
        # GGUF is converted from (LLaMA's tokenizer.model: identity, extra whitespace kept), not
        # the proto's trainer defaults (nmt_nfkc, extra whitespace removed), which no such model has.
        m.normalizer_spec.name = "identity"
        m.normalizer_spec.remove_extra_whitespaces = False
        self.sp = spm.SentencePieceProcessor(model_proto=m.SerializeToString())
        self.add_bos = gguf_field(r, "tokenizer.ggml.add_bos_token")
        self.add_eos = gguf_field(r, "tokenizer.ggml.add_eos_token")

    def answer(self, req):
        op = req.get("op")
        if op == "info":
            return {"n_vocab": self.sp.get_piece_size()}
        if op == "encode":
            text = req["text"] if "text" in req else bytes.fromhex(req["text_hex"]).decode("utf-8", "surrogateescape")
            if req.get("parse_special"):
                return {"error": "unsupported: sentencepiece has no way to match control pieces in text"}
            if req.get("add_special") and self.add_bos is None:
                return {"error": "unsupported: the GGUF has no add_bos_token"}
            add = bool(req.get("add_special"))
            return {"ids": self.sp.encode(text, out_type=int, add_bos=add and bool(self.add_bos),
                                          add_eos=add and bool(self.add_eos))}
        if op == "decode":
            if req.get("unparse_special"):
                return {"error": "unsupported: sentencepiece's decode renders control pieces as nothing"}
            return {"bytes_hex": self.sp.decode(req["ids"]).encode("utf-8").hex()}
        if op == "piece":
            return {"error": "unsupported: sentencepiece has no call giving one token's bytes"}
        return {"error": f"unknown op {op!r}"}


def main():
    path = sys.argv[sys.argv.index("--vocab") + 1]
    try:
        d, failed = Direct(path), None
    except Exception as e:
        d, failed = None, f"unsupported: {type(e).__name__}: {e}"
    for line in sys.stdin.buffer:
        try:
            out = {"error": failed} if failed else d.answer(json.loads(line))
        except Exception as e:
            out = {"error": f"direct raised {type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
