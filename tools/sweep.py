"""Sweep every code point as a one-character text: our tokenizer vs llama.cpp in process.

For each vocab, each code point 0..0x10FFFF except the surrogates D800-DFFF is
UTF-8 encoded on its own and tokenized by harness.tokenizer.Tokenizer and by
reference.inproc.InProcessReference with one (add_special, parse_special)
combination. Mismatches are printed one per line (code point, ours, theirs)
and counted; the wall time per vocab is reported. Exit status 1 on any
mismatch.

    python tools/sweep.py qwen2 gpt-2                       # all code points
    python tools/sweep.py --range 0:0x3000 -j 2 llama-spm   # a slice, two processes
    python tools/sweep.py --add-special --parse-special bert-bge

``--via session`` skips the facade's special-token partition when no special
token text can occur inside the character (texts of <= 4 bytes only): much
faster on vocabs with hundreds of specials; BPE vocabs only (a one-char text
then is a single raw fragment); other types always use the facade.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor

SURROGATES = range(0xD800, 0xE000)


def code_points(lo: int, hi: int) -> list[int]:
    """[lo, hi) without surrogates.

    >>> len(code_points(0, 0x110000))
    1112064
    """
    return [c for c in range(lo, hi) if not 0xD800 <= c < 0xE000]


class _Ours:
    """Our side: the facade, or (``via='session'``) the session when partition is a no-op."""

    def __init__(self, path, via: str, add_special: bool, parse_special: bool):
        from harness.tokenizer import Tokenizer
        self.tok = Tokenizer.from_gguf(path)
        self.add_special, self.parse_special = add_special, parse_special
        self.short_specials = [t for _, t, _ in self.tok._specials if len(t) <= 4]
        # only BPE: its facade does nothing but partition (+ ' ' -> '▁' when escape_whitespaces)
        self.direct = via == "session" and not add_special and self.tok.vocab.vocab_type == "bpe"

    def encode(self, text: bytes) -> list[int]:
        if self.direct and not any(s in text for s in self.short_specials):
            frag = text.replace(b" ", "\u2581".encode()) if self.tok.vocab.escape_whitespaces else text
            return self.tok.session().tokenize(frag)
        return self.tok.encode(text, add_special=self.add_special, parse_special=self.parse_special)


def sweep_chunk(args: tuple) -> tuple[int, list[tuple[int, object, object]]]:
    """Compare one chunk of code points; returns (count, mismatches)."""
    path, cps, via, add_special, parse_special = args
    from reference.inproc import InProcessReference
    ours = _Ours(path, via, add_special, parse_special)
    ref = InProcessReference.load(path)
    bad = []
    for cp in cps:
        text = chr(cp).encode("utf-8")
        try:
            a = ours.encode(text)
        except Exception as e:  # a crash of ours is a finding, not a sweep failure
            a = f"{type(e).__name__}: {e}"
        try:
            b = ref.encode(text, add_special=add_special, parse_special=parse_special)
        except Exception as e:
            b = f"{type(e).__name__}: {e}"
        if a != b:
            bad.append((cp, a, b))
    return len(cps), bad


def sweep_vocab(name: str, cps: list[int], jobs: int, via: str, add_special: bool, parse_special: bool,
                out=sys.stdout) -> tuple[int, float]:
    """Sweep one vocab; prints mismatches; returns (mismatch count, seconds)."""
    from reference.vocabs import vocab_path
    path = str(vocab_path(name))
    t0 = time.perf_counter()
    n = max(1, jobs)
    chunks = [(path, cps[i::n], via, add_special, parse_special) for i in range(n)]
    if n == 1:
        results = [sweep_chunk(chunks[0])]
    else:
        with ProcessPoolExecutor(n) as pool:
            results = list(pool.map(sweep_chunk, chunks))
    bad = sorted(m for _, ms in results for m in ms)
    for cp, a, b in bad:
        print(f"{name}\tU+{cp:04X}\tours={a}\tllama.cpp={b}", file=out)
    return len(bad), time.perf_counter() - t0


def _parse_range(s: str) -> tuple[int, int]:
    lo, hi = s.split(":")
    return int(lo, 0), int(hi, 0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("vocabs", nargs="+", help="pinned vocab names (reference.vocabs.names()) or .gguf paths")
    ap.add_argument("--range", type=_parse_range, default=(0, 0x110000), help="LO:HI code points (default all)")
    ap.add_argument("--add-special", action="store_true")
    ap.add_argument("--parse-special", action="store_true")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--via", choices=("tokenizer", "session"), default="tokenizer",
                    help="our side: the full facade (default) or the session fast path")
    args = ap.parse_args(argv)
    cps = code_points(*args.range)
    total = 0
    for name in args.vocabs:
        n_bad, secs = sweep_vocab(name, cps, args.jobs, args.via, args.add_special, args.parse_special)
        total += n_bad
        print(f"# {name}: {len(cps)} code points, {n_bad} mismatches, {secs:.1f} s "
              f"(add_special={args.add_special}, parse_special={args.parse_special}, via={args.via})",
              flush=True)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
