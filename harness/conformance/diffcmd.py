"""``python -m harness diff``: the first-divergence diff for any text.

    python -m harness diff --vocab qwen2 --text 'a b' [--add-special] [--parse-special] [--port SPEC]
    python -m harness diff --vocab qwen2 --text-repr "'a\\xa0\\xa0b'"

Prints the same block the conformance suite reports, for encode and for the
port's decode of the reference's ids; exits 1 if either diverges, 0 if not,
2 on a usage or port error.

>>> parse_args(["--vocab", "qwen2", "--text", "a b", "--parse-special"]).parse_special
True
"""

from __future__ import annotations

import argparse
import ast
import os
import sys

from harness.errors import HarnessError


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line; ``--text`` and ``--text-repr`` are exclusive and one is required.

    >>> parse_args(["--vocab", "qwen2", "--text-repr", "'a\\\\n'"]).text
    'a\\n'
    """
    p = argparse.ArgumentParser(prog="python -m harness diff",
                                description="Show where a port's tokens part from llama.cpp's for one text.")
    p.add_argument("--vocab", required=True, help="pinned vocab name (e.g. qwen2) or a .gguf path")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--text", help="the text, verbatim")
    g.add_argument("--text-repr", help="the text as a Python string literal, e.g. \"'a\\xa0b'\"")
    p.add_argument("--add-special", action="store_true")
    p.add_argument("--parse-special", action="store_true")
    p.add_argument("--port", default=os.environ.get("PORT") or "harness",
                   help="harness (default), llama.cpp, llama-tokenize, mutant:NAME, or a command with {vocab}")
    args = p.parse_args(argv)
    if args.text_repr is not None:
        try:
            args.text = ast.literal_eval(args.text_repr)
        except (ValueError, SyntaxError) as e:
            p.error(f"--text-repr must be a Python string literal such as \"'a\\n'\": {e}")
        if not isinstance(args.text, str):
            p.error("--text-repr must evaluate to a str")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the diff; returns the exit status (0 same, 1 divergent, 2 error)."""
    from harness.conformance.checks import Session
    from harness.conformance.report import text_block
    args = parse_args(argv)
    session = Session(args.port)
    try:
        vut = session.vocab(args.vocab)
        found = [vut.check_encode(args.text, args.add_special, args.parse_special)]
        if args.port != "llama-tokenize":
            found.append(vut.check_decode(args.text, args.add_special, args.parse_special))
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        session.close()
    found = [f for f in found if f is not None]
    for f in found:
        print(text_block(f))
    if not found:
        ids = vut.reference.encode(args.text, add_special=args.add_special, parse_special=args.parse_special)
        print(f"no divergence: vocab={vut.name} port={args.port} ids={ids}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
