"""llama-cpp-python called as its README shows, for the adapter check: ``./direct --vocab V``.

A second program beside ``serve.py`` sharing no code with it (harness/scoreboard/adapter.py):
it answers the same JSON-lines requests with the binding's documented high-level API only
(the README's "High-level API" and the ``Llama`` docstrings in ``llama_cpp/llama.py``):

* load: ``Llama(model_path=path, vocab_only=True, verbose=False)`` ("vocab_only: Only load
  the vocabulary no weights");
* encode: ``llm.tokenize(text.encode("utf-8"), add_bos=add_special, special=parse_special)``
  (``text_hex``: its raw bytes, since ``tokenize`` takes bytes);
* decode: ``llm.detokenize(ids, special=unparse_special)``; ``detokenize`` has no
  remove_special: remove_special=true is unsupported;
* piece: ``llm.detokenize([id], special=special)``: the high-level ``Llama`` has no
  token_to_piece, and detokenizing one token is how its users render one token's bytes;
* info: ``llm.n_vocab()``.
"""

import json
import os
import sys


def main():
    out = os.fdopen(os.dup(1), "w")  # the protocol's stdout; anything llama.cpp prints goes to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    path = sys.argv[sys.argv.index("--vocab") + 1]
    try:
        from llama_cpp import Llama
        llm, failed = Llama(model_path=path, vocab_only=True, verbose=False), None
    except Exception as e:
        llm, failed = None, f"unsupported: {type(e).__name__}: {e}"
    for line in sys.stdin.buffer:
        try:
            reply = {"error": failed} if failed else answer(llm, json.loads(line))
        except Exception as e:
            reply = {"error": f"direct raised {type(e).__name__}: {e}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()


def answer(llm, req):
    op = req.get("op")
    if op == "info":
        return {"n_vocab": llm.n_vocab()}
    if op == "encode":
        text = req["text"].encode("utf-8") if "text" in req else bytes.fromhex(req["text_hex"])
        return {"ids": llm.tokenize(text, add_bos=bool(req.get("add_special")),
                                    special=bool(req.get("parse_special")))}
    if op == "decode":
        if req.get("remove_special"):
            return {"error": "unsupported: Llama.detokenize has no remove_special"}
        return {"bytes_hex": llm.detokenize(req["ids"], special=bool(req.get("unparse_special"))).hex()}
    if op == "piece":
        return {"bytes_hex": llm.detokenize([req["id"]], special=bool(req.get("special"))).hex()}
    return {"error": f"unknown op {op!r}"}


if __name__ == "__main__":
    main()
