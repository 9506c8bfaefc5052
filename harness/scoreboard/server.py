"""The command line shared by the port servers: ``--vocab PATH``, a guarded stdout, serve.

Libraries under test print: transformers logs warnings, llama.cpp's C code may
``printf``. One stray line on stdout would shift every protocol answer, so
before the library is imported the real stdout (fd 1) is moved to a private
descriptor kept for the protocol, and fd 1 is pointed at stderr.

Exit codes when the server cannot serve at all (a vocab it cannot *load* is
served as ``unsupported`` answers instead, see :mod:`.protocol`):
2 = usage (bad arguments, missing file), 3 = the library is not installed.

>>> parse_args(["--vocab", "x.gguf"]).vocab
'x.gguf'
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Callable

from harness.scoreboard.protocol import EXIT_MISSING_LIBRARY, EXIT_USAGE, Backend, serve

INSTALL_HINT = "install the optional port dependencies: pip install -e '.[ports]' (or make scoreboard)"


def parse_args(argv: list[str], description: str = "") -> argparse.Namespace:
    """``--vocab PATH`` (the .gguf file to load)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--vocab", required=True, help="path of the .gguf vocab to serve")
    return parser.parse_args(argv)


def protocol_stdout():
    """A binary stream on the original stdout; fd 1 now goes to stderr.

    Why: anything a library prints (Python or C) lands on stderr, never
    between protocol answers.
    """
    sys.stdout.flush()
    private = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr  # Python-level prints follow the fd
    return os.fdopen(private, "wb", buffering=0)


def run(argv: list[str] | None, *, name: str, check_library: Callable[[], None],
        load: Callable[[Path], Backend]) -> int:
    """Parse arguments, check the library, then serve ``load(vocab)``.

    ``check_library`` imports the library (raising ImportError if absent);
    ``load`` builds the backend and may raise anything for a vocab the
    library cannot load.
    """
    args = parse_args(sys.argv[1:] if argv is None else argv, f"{name} as a JSON-lines port")
    path = Path(args.vocab)
    if not path.is_file():
        print(f"{name} port: --vocab {path}: no such file; give the path of a .gguf vocab",
              file=sys.stderr)
        return EXIT_USAGE
    out = protocol_stdout()
    try:
        check_library()
    except ImportError as e:
        print(f"{name} port: cannot import its library ({e}); {INSTALL_HINT}", file=sys.stderr)
        return EXIT_MISSING_LIBRARY
    return serve(lambda: load(path), sys.stdin.buffer, out)
