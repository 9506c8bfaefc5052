"""GGUF -> tokenizer.json, the way transformers.js users get one from a GGUF file.

    .venv/bin/python convert.py OUT_ROOT VOCAB.gguf [VOCAB.gguf ...]

runs Python transformers' ``AutoTokenizer.from_pretrained(dir, gguf_file=name)`` and
``save_pretrained(...)`` (tokenizer.json, tokenizer_config.json, ...) for each vocab, into
``OUT_ROOT/<file name>-<first 16 hex of its sha256>/``, which transformers.js then loads
offline (serve.js computes the same name). A vocab already converted is skipped. Nothing
here adjusts the result: what the converter writes is what is tested.

If transformers cannot convert a vocab, its directory holds ``unsupported.txt`` with the
message (one line: "<ExceptionType>: <message>") instead: an unconvertible vocab is a result,
cached like a conversion. Usage errors exit 2.

Example: ``convert.py build/tokenizers vocabs/0c1e570/ggml-vocab-qwen2.gguf`` writes
``build/tokenizers/ggml-vocab-qwen2.gguf-<sha16>/tokenizer.json``.
"""

import hashlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

# transformers' GGUF reader imports torch for dtype names only: torchless/ stands in, so the
# converter runs without the 5 GB torch wheel (any real torch call raises).
sys.path.insert(0, str(Path(__file__).resolve().with_name("torchless")))


def cache_dir(out_root: Path, vocab: Path) -> Path:
    """``OUT_ROOT/<name>-<sha256[:16]>``: a changed file gets a new conversion."""
    return out_root / f"{vocab.name}-{hashlib.sha256(vocab.read_bytes()).hexdigest()[:16]}"


def convert(vocab: Path, out: Path) -> None:
    """Converts one vocab into ``out`` (written aside, then renamed: readers never see half)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=out.name + ".tmp"))
    start = time.monotonic()
    try:
        import transformers.modeling_gguf_pytorch_utils as gguf_utils
        # load_gguf_checkpoint(return_tensors=False) reads metadata only but refuses without torch;
        # torchless/ stands in for the torch import (see ../../python/transformers/README.md).
        gguf_utils.is_torch_available = lambda: True
        from transformers import AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained(str(vocab.parent), gguf_file=vocab.name)
        tokenizer.save_pretrained(str(tmp))
        verdict = "converted"
    except Exception as e:  # the converter's own verdict, kept for the port's "unsupported" answer
        message = " ".join(f"{type(e).__name__}: {e}".split())
        (tmp / "unsupported.txt").write_text(message + "\n", encoding="utf-8")
        verdict = f"cannot convert: {message[:200]}"
    try:
        os.rename(tmp, out)
    except OSError:  # another process finished first: keep its result
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"convert.py: {vocab.name}: {verdict} ({time.monotonic() - start:.1f} s)", file=sys.stderr)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: convert.py OUT_ROOT VOCAB.gguf [VOCAB.gguf ...]", file=sys.stderr)
        return 2
    out_root = Path(argv[0])
    for arg in argv[1:]:
        vocab = Path(arg).resolve()
        if not vocab.is_file():
            print(f"convert.py: {vocab} is not a file: pass GGUF vocabs", file=sys.stderr)
            return 2
        out = cache_dir(out_root, vocab)
        if not out.exists():
            convert(vocab, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
