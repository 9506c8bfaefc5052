"""tiktoken called as its README shows, for the adapter check: ``./direct --vocab V``.

A second program beside ``serve.py`` sharing no code with it (harness/scoreboard/adapter.py):
it answers the same JSON-lines requests with tiktoken's documented Python API and nothing else.

tiktoken's README ("Extending tiktoken") builds an encoding with
``tiktoken.Encoding(name, pat_str=..., mergeable_ranks=..., special_tokens=...)`` and says to
"load the arguments directly" as ``tiktoken_ext/openai_public.py`` does. A GGUF has no
``.tiktoken`` file, so the arguments are read from it; that glue is unavoidable and is all
this program does besides tiktoken's calls:

* ``mergeable_ranks``: each NORMAL token's text turned back into bytes with the GPT-2
  byte-to-character table exactly as ``tiktoken.load.data_gym_to_mergeable_bpe_ranks`` builds it
  (printable bytes map to themselves, the rest to chr(256 + n)), rank = the token's id;
* ``special_tokens``: the CONTROL tokens, text -> id;
* ``pat_str``: for ``tokenizer.ggml.pre`` gpt-2, tiktoken's own GPT-2 pattern
  (``tiktoken_ext.openai_public.r50k_pat_str``); for llama-bpe and qwen2, the pattern their
  models publish (Meta's Llama 3 ``tokenizer.py``, Qwen's ``tokenization_qwen.py``);
* not expressible, so answered unsupported: a vocab that is not byte-level BPE
  (``tokenizer.ggml.model`` not gpt2), a pre-tokenizer with no published pattern, and a vocab
  with USER_DEFINED tokens (tiktoken has no token matched in raw text always).

Then, from the README and ``tiktoken/core.py``'s docstrings:

* encode: ``enc.encode(text, allowed_special="all")`` (parse_special=true),
  ``enc.encode_ordinary(text)`` (false; "equivalent to encode(text, disallowed_special=())");
  add_special=true: unsupported (an ``Encoding`` adds no BOS/EOS);
* decode: ``enc.decode_bytes(ids)``, which renders every special token's text and drops none:
  only remove_special=false, unparse_special=true is expressible, the rest unsupported;
* piece: ``enc.decode_single_token_bytes(id)`` ("this will decode all special tokens"):
  special=true only, special=false unsupported.
"""

import json
import os
import sys

LLAMA3_PAT_STR = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")  # Meta's llama3 tokenizer.py, pat_str
QWEN_PAT_STR = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")  # Qwen's tokenization_qwen.py, PAT_STR


def data_gym_byte_to_byte():
    """The character -> byte table of tiktoken.load.data_gym_to_mergeable_bpe_ranks (not exported)."""
    printable = [b for b in range(2**8) if chr(b).isprintable() and chr(b) != " "]
    table = {chr(b): b for b in printable}
    n = 0
    for b in range(2**8):
        if b not in printable:
            table[chr(2**8 + n)] = b
            n += 1
    return table


def encoding_from_gguf(path):
    import tiktoken
    from gguf import GGUFReader
    from tiktoken_ext.openai_public import r50k_pat_str

    r = GGUFReader(path)

    def field(key):
        return r.fields[key].contents() if key in r.fields else None

    if field("tokenizer.ggml.model") != "gpt2":
        raise ValueError("not a byte-level BPE vocab (tokenizer.ggml.model is not gpt2)")
    pre = field("tokenizer.ggml.pre")
    pat_str = {"gpt-2": r50k_pat_str, "llama-bpe": LLAMA3_PAT_STR, "qwen2": QWEN_PAT_STR}.get(pre)
    if pat_str is None:
        raise ValueError(f"no published tiktoken pattern for pre-tokenizer {pre!r}")
    tokens, types = field("tokenizer.ggml.tokens"), field("tokenizer.ggml.token_type")
    if 4 in types:
        raise ValueError("USER_DEFINED tokens: tiktoken has no token that is matched in raw text always")
    table = data_gym_byte_to_byte()
    mergeable_ranks = {bytes(table[c] for c in text): i for i, (text, kind) in enumerate(zip(tokens, types)) if kind == 1}
    special_tokens = {text: i for i, (text, kind) in enumerate(zip(tokens, types)) if kind == 3}
    return tiktoken.Encoding(name=f"gguf-{pre}", pat_str=pat_str, mergeable_ranks=mergeable_ranks,
                             special_tokens=special_tokens)


def answer(enc, req):
    op = req.get("op")
    if op == "info":
        return {"n_vocab": enc.n_vocab}
    if op == "encode":
        if "text_hex" in req:
            try:
                text = bytes.fromhex(req["text_hex"]).decode("utf-8")
            except UnicodeDecodeError:
                return {"error": "unsupported: encode takes a str; invalid UTF-8 cannot be expressed"}
        else:
            text = req["text"]
        if req.get("add_special"):
            return {"error": "unsupported: a tiktoken Encoding adds no BOS/EOS"}
        ids = enc.encode(text, allowed_special="all") if req.get("parse_special") else enc.encode_ordinary(text)
        return {"ids": ids}
    if op == "decode":
        if req.get("remove_special") or not req.get("unparse_special"):
            return {"error": "unsupported: decode_bytes renders every special token and removes none"}
        return {"bytes_hex": enc.decode_bytes(req["ids"]).hex()}
    if op == "piece":
        if not req.get("special"):
            return {"error": "unsupported: decode_single_token_bytes renders special tokens"}
        return {"bytes_hex": enc.decode_single_token_bytes(req["id"]).hex()}
    return {"error": f"unknown op {op!r}"}


def main():
    out = os.fdopen(os.dup(1), "w")  # the protocol's stdout; anything printed goes to stderr
    os.dup2(2, 1)
    path = sys.argv[sys.argv.index("--vocab") + 1]
    try:
        enc, failed = encoding_from_gguf(path), None
    except Exception as e:
        enc, failed = None, f"unsupported: {type(e).__name__}: {e}"
    for line in sys.stdin.buffer:
        try:
            reply = {"error": failed} if failed else answer(enc, json.loads(line))
        except Exception as e:
            reply = {"error": f"direct raised {type(e).__name__}: {e}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
