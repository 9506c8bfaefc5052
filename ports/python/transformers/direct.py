"""transformers called as its docs show, for the adapter check: ``./direct --vocab V``.

A second program beside ``serve.py`` sharing no code with it (harness/scoreboard/adapter.py):
it answers the same JSON-lines requests with transformers' documented API and nothing else.

* load: ``AutoTokenizer.from_pretrained(directory, gguf_file=filename)`` (docs: "GGUF and
  interaction with Transformers"). transformers' GGUF reader refuses to run without torch
  (``is_torch_available()``); the port has no torch (README.md, ``torchless/``), so the
  ``direct`` wrapper puts the stand-in on ``PYTHONPATH`` and this program sets
  ``modeling_gguf_pytorch_utils.is_torch_available`` true before loading: the environment the
  docs assume, not tokenizer logic.
* encode: ``tokenizer(text, add_special_tokens=add_special, split_special_tokens=not
  parse_special)["input_ids"]`` (``PreTrainedTokenizerBase.__call__``; split_special_tokens:
  "Whether or not the special tokens should be split during the tokenization process").
* decode: ``tokenizer.decode(ids, skip_special_tokens=...)``, the str encoded as UTF-8.
  skip_special_tokens ("Whether or not to remove special tokens in the decoding") is false only
  for remove_special=false, unparse_special=true; remove_special=true with unparse_special=true
  (drop BOS/EOS but render the other special tokens) has no counterpart: unsupported.
* piece: one token's text rendered by the tokenizer's decoder:
  ``convert_tokens_to_string(convert_ids_to_tokens([id], skip_special_tokens=not special))``
  (decode's docstring: "Similar to doing convert_tokens_to_string(convert_ids_to_tokens(ids))").
* info: ``len(tokenizer)``.
"""

import json
import os
import sys
from pathlib import Path


def load(path):
    import transformers.modeling_gguf_pytorch_utils as gguf_loading
    gguf_loading.is_torch_available = lambda: True  # torchless stand-in (see the docstring)
    from transformers import AutoTokenizer
    p = Path(path).resolve()
    return AutoTokenizer.from_pretrained(str(p.parent), gguf_file=p.name)


def answer(tok, req):
    op = req.get("op")
    if op == "info":
        return {"n_vocab": len(tok)}
    if op == "encode":
        if "text_hex" in req:
            try:
                text = bytes.fromhex(req["text_hex"]).decode("utf-8")
            except UnicodeDecodeError:
                return {"error": "unsupported: the tokenizer takes a str; invalid UTF-8 cannot be expressed"}
        else:
            text = req["text"]
        enc = tok(text, add_special_tokens=bool(req.get("add_special")),
                  split_special_tokens=not req.get("parse_special"))
        return {"ids": enc["input_ids"]}
    if op == "decode":
        remove, unparse = bool(req.get("remove_special")), bool(req.get("unparse_special"))
        if remove and unparse:
            return {"error": "unsupported: decode's one switch skip_special_tokens cannot drop BOS/EOS "
                             "while rendering the other special tokens"}
        return {"bytes_hex": tok.decode(req["ids"], skip_special_tokens=not unparse).encode("utf-8").hex()}
    if op == "piece":
        return {"error": "unsupported: transformers has no call giving one token's piece"}
    return {"error": f"unknown op {op!r}"}


def main():
    out = os.fdopen(os.dup(1), "w")  # the protocol's stdout; anything the library prints goes to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    path = sys.argv[sys.argv.index("--vocab") + 1]
    try:
        tok, failed = load(path), None
    except Exception as e:
        tok, failed = None, f"unsupported: {type(e).__name__}: {e}"
    for line in sys.stdin.buffer:
        try:
            reply = {"error": failed} if failed else answer(tok, json.loads(line))
        except Exception as e:
            reply = {"error": f"direct raised {type(e).__name__}: {e}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
