"""``python -m reference fetch|build|pin|verify|paths`` (the Makefile's back end)."""

from __future__ import annotations

import argparse
import sys

from harness.errors import HarnessError


def _build(args) -> int:
    import os
    from pathlib import Path

    from . import build, lock, sources

    pin = lock.load()
    src = sources.make_source(pin, args.source)
    tree = src.tree()
    if src.replaced:
        from harness.errors import IntegrityError
        raise IntegrityError("\n".join(src.replaced) + "\nA verified copy is in its place; run `make reference` again.")
    arts = build.build(Path(tree), pinned_tree=not os.environ.get("LLAMA_CPP_DIR"), lock=pin)
    print(arts.build_dir)
    return 0


def lock_name() -> str:
    from .lock import load

    return load().name


def _fetch(args) -> int:
    from .fetch import fetch

    result = fetch(source=args.source)
    print(f"fetch: pin {lock_name()}: {len(result.kept)} verified in place, {len(result.linked)} linked from "
          f"the store, {len(result.fetched)} fetched and verified",
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

    return main(args.ref, args.source or "github", sdist=args.sdist)


def _pins(args) -> int:
    from .lock import load_all

    for p in load_all():
        print(p.name)
    return 0


def _serve(args) -> int:
    from .serve import main as serve

    return serve(args.pin, args.vocab)


def _paths(args) -> int:
    from .build import artifacts

    arts = artifacts()
    print(f"llama-tokenize {arts.llama_tokenize}\nlibllama {arts.libllama}\nshim {arts.shim}\n"
          f"chat shim {arts.chat_shim}")
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
    p.add_argument("ref", nargs="?")
    p.add_argument("--sdist", help="a llama-cpp-python version whose sdist vendors the tree to pin")
    p.add_argument("--source", choices=("github", "dir"), default=None)
    p.set_defaults(fn=_pin)
    sub.add_parser("pins", help="list the pins, oldest first (the last is the default)").set_defaults(fn=_pins)
    p = sub.add_parser("serve", help="the port protocol over a pinned llama.cpp build")
    p.add_argument("--pin", required=True)
    p.add_argument("--vocab", required=True)
    p.set_defaults(fn=_serve)
    args = parser.parse_args(argv)
    try:
        return args.fn(args)
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
