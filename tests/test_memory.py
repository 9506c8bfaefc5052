"""Bounded memory: load and encode stay linear in the vocab's size whatever its token lengths.

A vocab with one 40,000-byte token used to cost 800 MB (every proper prefix of every
text in a set) to encode "a"; llama.cpp loads it in 25 MB. Each case runs in a child
process that measures its own peak allocation with tracemalloc, so the number is the
tokenizer's alone.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from harness.tokenizer.algorithms._prefixes import PrefixIndex
from harness.tokenizer.gguf.keys import GGUFValueType as T
from harness.tokenizer.gguf.writer import write_gguf

ROOT = Path(__file__).resolve().parent.parent
LONG = 40_000
BOUND = 100 * 1024 * 1024  # the old prefix sets needed about 8x this


def _wpm(path: Path, tokens: list[bytes], types: list[int]) -> None:
    write_gguf(path, {"general.architecture": (T.STRING, "bert"), "tokenizer.ggml.model": (T.STRING, "bert"),
                      "tokenizer.ggml.tokens": (T.ARRAY, tokens, T.STRING),
                      "tokenizer.ggml.token_type": (T.ARRAY, types, T.INT32),
                      "tokenizer.ggml.unknown_token_id": (T.UINT32, 1)})


def _ugm(path: Path, tokens: list[bytes], types: list[int]) -> None:
    write_gguf(path, {"general.architecture": (T.STRING, "t5"), "tokenizer.ggml.model": (T.STRING, "t5"),
                      "tokenizer.ggml.tokens": (T.ARRAY, tokens, T.STRING),
                      "tokenizer.ggml.token_type": (T.ARRAY, types, T.INT32),
                      "tokenizer.ggml.scores": (T.ARRAY, [0.0] + [-1.0] * (len(tokens) - 1), T.FLOAT32),
                      "tokenizer.ggml.unknown_token_id": (T.UINT32, 1)})


_CHILD = """
import json, sys, tracemalloc
tracemalloc.start()
from harness.tokenizer import Tokenizer
tok = Tokenizer.from_gguf(sys.argv[1])
ids = tok.encode("a") + tok.encode(sys.argv[2])
print(json.dumps({"peak": tracemalloc.get_traced_memory()[1], "ids": ids}))
"""


def peak_and_ids(path: Path, text: str) -> tuple[int, list[int]]:
    """Peak traced allocation of loading ``path`` and encoding "a" then ``text``, in a child."""
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), text], capture_output=True,
                         text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    return got["peak"], got["ids"]


@pytest.mark.parametrize("kind", ["wpm", "ugm"])
def test_one_40000_byte_token_encodes_in_bounded_memory(tmp_path, kind):
    path = tmp_path / f"{kind}.gguf"
    long = "▁".encode() + b"x" * LONG if kind == "wpm" else b"x" * LONG
    tokens = [b"[PAD]", b"[UNK]", "▁a".encode(), b"a", long]
    # in UGM, USER_DEFINED (4) texts are walked by prefix too: make the long one user-defined
    (_wpm if kind == "wpm" else _ugm)(path, tokens, [3, 2, 1, 1, 1 if kind == "wpm" else 4])
    peak, ids = peak_and_ids(path, "x" * LONG)
    assert peak < BOUND, f"{peak / 2**20:.0f} MiB to load and encode"
    assert ids[-1] == 4  # the long token is still found whole


def _naive(texts: list[bytes], proper: bool) -> set[bytes]:
    return {t[:k] for t in texts for k in range(1, len(t) + (0 if proper else 1))}


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.binary(min_size=1, max_size=9, ).map(lambda b: bytes(x % 3 + 97 for x in b)),
                      min_size=1, max_size=12),
       short=st.integers(0, 6), proper=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_prefix_index_equals_the_set_of_every_prefix(texts, short, proper, seed):
    """Over a 3-letter alphabet, so that prefixes collide and shared runs are common."""
    ix, naive = PrefixIndex(texts, short=short, proper=proper), _naive(texts, proper)
    rng = random.Random(seed)
    probes = list(naive) + [rng.choice(texts)[:rng.randint(0, 10)] + bytes([rng.choice(b"abcd")])
                            for _ in range(30)]
    for p in probes:
        if p:
            assert (p in ix) == (p in naive), (p, texts, short, proper)
