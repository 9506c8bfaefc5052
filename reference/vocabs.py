"""The pinned vocabs by name, and their golden ``.inp``/``.out`` cases.

>>> names()[:3]
['aquila', 'baichuan', 'bert-bge']
"""

from __future__ import annotations

from pathlib import Path

from harness.errors import HarnessError, ReferenceUnavailable

from . import lock as _lock
from .paths import vocabs_dir

# test-tokenizer-0.cpp splits .inp files on this separator.
_SEPARATOR = "\n__ggml_vocab_test__\n"


def names() -> list[str]:
    """The 19 pinned vocab names, sorted (stable ids for every xdist worker)."""
    return _lock.load().vocab_names()


def vocab_path(name: str) -> Path:
    """``'qwen2'`` -> ``vocabs/ggml-vocab-qwen2.gguf``; a path to a .gguf is returned as is.

    Raises ReferenceUnavailable (with the fix) when the file is not fetched.
    """
    if name.endswith(".gguf") or "/" in name:
        path = Path(name)
        if not path.is_file():
            raise ReferenceUnavailable(f"{path}: no such GGUF file")
        return path
    if name not in names():
        raise HarnessError(f"unknown vocab {name!r}; pinned vocabs are: {', '.join(names())}")
    path = vocabs_dir() / f"ggml-vocab-{name}.gguf"
    if not path.is_file():
        raise ReferenceUnavailable(f"{path} is missing: run `make fetch`")
    return path


def has_golden(name: str) -> bool:
    """True when the pin ships ``.inp``/``.out`` files for this vocab."""
    return f"ggml-vocab-{name}.gguf.inp" in _lock.load().by_name()


def golden_cases(name: str) -> list[tuple[str, list[int]]]:
    """The ``(text, ids)`` pairs of a vocab's ``.inp``/``.out``, in file order.

    They were produced with add_special=False, parse_special=False
    (tests/test-tokenizer-0.cpp). The split rules are test-tokenizer-0's:
    ``.inp`` on ``"\\n__ggml_vocab_test__\\n"``, ``.out`` one stripped line per case.
    """
    base = vocab_path(name)
    inp, out = Path(f"{base}.inp"), Path(f"{base}.out")
    if not inp.is_file() or not out.is_file():
        raise ReferenceUnavailable(f"{inp} or {out} is missing: run `make fetch`")
    texts = split_inp(inp.read_bytes().decode("utf-8"))
    lines = out.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(texts) != len(lines):
        raise HarnessError(f"{inp}: {len(texts)} texts but {out} has {len(lines)} lines")
    return [(t, [int(x) for x in line.strip().split(" ") if x]) for t, line in zip(texts, lines)]


def split_inp(raw: str) -> list[str]:
    parts, pos = [], 0
    while pos < len(raw):
        nxt = raw.find(_SEPARATOR, pos)
        if nxt < 0:
            parts.append(raw[pos:])
            break
        parts.append(raw[pos:nxt])
        pos = nxt + len(_SEPARATOR)
    return parts


def all_inp_texts() -> list[str]:
    """Every distinct ``.inp`` text of the pin, in a stable order."""
    seen: dict[str, None] = {}
    for name in names():
        if has_golden(name):
            for text, _ in golden_cases(name):
                seen.setdefault(text, None)
    return list(seen)
