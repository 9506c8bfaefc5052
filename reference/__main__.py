"""``python -m reference fetch|build|pin|verify|paths`` (the Makefile's back end)."""

from __future__ import annotations

import argparse
import sys

from harness.errors import HarnessError


def _build(args) -> int:
    import os
    from pathlib import Path

    from . import build, lock, sources

    src = sources.make_source(lock.load(), args.source)
    tree = src.tree()
    arts = build.build(Path(tree), pinned_tree=not os.environ.get("LLAMA_CPP_DIR"))
    print(arts.build_dir)
    return 0


def _fetch(args) -> int:
    from .fetch import fetch

    result = fetch(source=args.source)
    print(f"fetch: {len(result.kept)} verified in place, {len(result.fetched)} fetched and verified",
          file=sys.stderr)
    return 0


def _verify(args) -> int:
    from .fetch import verify

    problems = verify()
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


def _pin(args) -> int:
    from .pin import main

    return main(args.ref, args.source or "github")


def _paths(args) -> int:
    from .build import artifacts

    arts = artifacts()
    print(f"llama-tokenize {arts.llama_tokenize}\nlibllama {arts.libllama}\nshim {arts.shim}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reference")
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name, fn, helptext in (("fetch", _fetch, "fetch the pinned vocabs into vocabs/"),
                               ("build", _build, "build llama-tokenize and libllama"),
                               ("verify", _verify, "check vocabs/ against the lock"),
                               ("paths", _paths, "print the built reference's paths")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--source", choices=("sdist", "github", "dir"), default=None)
        p.set_defaults(fn=fn)
    p = sub.add_parser("pin", help="move the pin to another commit")
    p.add_argument("ref")
    p.add_argument("--source", choices=("github", "dir"), default=None)
    p.set_defaults(fn=_pin)
    args = parser.parse_args(argv)
    try:
        return args.fn(args)
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
