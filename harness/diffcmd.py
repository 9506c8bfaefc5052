"""``python -m harness diff``: the first-divergence diff for any text.

    python -m harness diff --vocab qwen2 --text 'a b' [--add-special] [--parse-special] [--port SPEC]
    python -m harness diff --vocab qwen2 --text-repr "'a\\xa0\\xa0b'"

    python -m harness diff --vocab llama-spm --ids 1,15043 --remove-special
    python -m harness diff --vocab llama-spm --ids 1,2 --piece --unparse-special

Prints every check's result for the input, whatever an earlier one found: for a
text, encode and the port's decode of llama.cpp's ids; for ids, decode (or each
id's piece). Exits 1 if any diverges, 2 on a usage or port error, 0 if all agree; a check
the port answers unsupported is printed as such and changes neither.

>>> parse_args(["--vocab", "qwen2", "--text", "a b", "--parse-special"]).parse_special
True
"""

from __future__ import annotations

import argparse
import ast
import os
import sys

from harness.errors import HarnessError, PortUnsupported


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line; one of ``--text``, ``--text-repr`` or ``--ids`` is required.

    >>> parse_args(["--vocab", "qwen2", "--text-repr", "'a\\\\n'"]).text
    'a\\n'
    >>> parse_args(["--vocab", "qwen2", "--ids", "1,2"]).ids
    [1, 2]
    """
    p = argparse.ArgumentParser(prog="python -m harness diff",
                                description="Show where a port's answers part from llama.cpp's for one text "
                                            "(encode, and decode of llama.cpp's ids) or one id list "
                                            "(decode, or with --piece each id's piece).")
    p.add_argument("--vocab", required=True, help="pinned vocab name (e.g. qwen2) or a .gguf path")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--text", help="the text, verbatim")
    g.add_argument("--text-repr", help="the text as a Python string literal, e.g. \"'a\\xa0b'\"")
    g.add_argument("--ids", help="comma-separated token ids to decode (',' for none)")
    p.add_argument("--add-special", action="store_true")
    p.add_argument("--parse-special", action="store_true")
    p.add_argument("--remove-special", action="store_true", help="decode flag (with --ids)")
    p.add_argument("--unparse-special", action="store_true",
                   help="decode flag (with --ids); with --piece, the piece's special flag")
    p.add_argument("--piece", action="store_true", help="with --ids: compare each id's piece")
    p.add_argument("--port", default=os.environ.get("PORT") or "harness",
                   help="harness (default), llama.cpp, llama-tokenize, py:MODULE:FACTORY, or a command with {vocab}")
    args = p.parse_args(argv)
    if args.text_repr is not None:
        try:
            args.text = ast.literal_eval(args.text_repr)
        except (ValueError, SyntaxError) as e:
            p.error(f"--text-repr must be a Python string literal such as \"'a\\n'\": {e}")
        if not isinstance(args.text, str):
            p.error("--text-repr must evaluate to a str")
    if args.ids is not None:
        try:
            args.ids = [int(t) for t in args.ids.split(",") if t.strip()]
        except ValueError:
            p.error(f"--ids must be comma-separated integers such as 1,2,3, got {args.ids!r}")
    return args


def _checks(vut, args):
    """(name, thunk) of every check that applies to the input."""
    if args.ids is not None:
        if args.piece:
            return [(f"piece {i}", lambda i=i: vut.check_piece(i, args.unparse_special)) for i in args.ids]
        return [("decode", lambda: vut.check_decode(args.ids, args.remove_special, args.unparse_special))]
    checks = [("encode", lambda: vut.check_encode(args.text, args.add_special, args.parse_special))]
    if args.port != "llama-tokenize":
        ids = vut.reference.encode(args.text, add_special=args.add_special, parse_special=args.parse_special)
        checks.append(("decode of llama.cpp's ids", lambda: vut.check_decode(
            ids, args.add_special, args.parse_special)))
    return checks


def main(argv: list[str] | None = None) -> int:
    """Run every check; returns the exit status (0 same, 1 divergent, 2 error)."""
    from harness.engine.session import Session
    from harness.reports.render import text_block
    args = parse_args(argv)
    session = Session(args.port)
    status = 0
    try:
        vut = session.vocab(args.vocab)
        for name, thunk in _checks(vut, args):
            try:
                found = thunk()
            except PortUnsupported as e:  # the port declared it cannot express this: not an error, not a pass
                print(f"{name}: unsupported (not checked): {e}")
                continue
            except HarnessError as e:
                print(f"{name}: port error: {e}")
                status = max(status, 2)
                continue
            if found is None:
                print(f"{name}: same as llama.cpp")
            else:
                print(f"{name}: DIVERGES\n{text_block(found)}")
                status = max(status, 1)
        if args.ids is None:
            ids = vut.reference.encode(args.text, add_special=args.add_special, parse_special=args.parse_special)
            print(f"llama.cpp ids: {ids}")
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        session.close()
    return status


if __name__ == "__main__":
    sys.exit(main())
