"""``python -m harness serve|diff ...``

* ``serve --vocab VOCAB``: the JSON-lines port server (the protocol other ports implement).
* ``diff --vocab V --text T [--add-special] [--parse-special] [--port CMD]``: the
  first-divergent-token diff of a port against llama.cpp for one text.
* ``bench [--vocabs ...] [--repeat N]``: speed against llama.cpp (``make bench``).
* ``fuzz [--seconds S] [--seed N]``: hostile GGUF files, judged by llama.cpp (``make fuzz``).
* ``fuzz-ports [--seconds S] [--seed N]``: hostile ports against the engine (``make fuzz-ports``).
* ``pin-diff --from A --to B [--out DIR]``: llama.cpp against llama.cpp across two pins (``make pin-diff``).
* ``chat-check [--port SPEC] [--vocabs ...]``: a port's chat renderings against llama.cpp's (``make chat-check``).
"""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "serve": "harness.cli:serve",
    "diff": "harness.diffcmd",
    "bench": "harness.bench.run",
    "fuzz": "harness.fuzz.run",
    "fuzz-ports": "harness.fuzz.ports",
    "pin-diff": "harness.pindiff",
    "chat-check": "harness.chatcheck",
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    module, _, function = COMMANDS[argv[0]].partition(":")
    return getattr(importlib.import_module(module), function or "main")(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
