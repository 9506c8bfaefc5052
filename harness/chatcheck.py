"""``python -m harness chat-check [--port SPEC] [--vocabs ...]`` (``make chat-check``): the chat check.

Each pinned vocab whose GGUF carries ``tokenizer.chat_template`` (command-r, gemma-4,
phi-3, qwen2, qwen35 at 0c1e570) renders the fixed conversations of
:data:`harness.engine.chatdiff.CONVERSATIONS` through the port's ``chat`` op and through
llama.cpp (:mod:`reference.chat`), and every disagreement is listed. It is not part of
``make conformance``. The harness port renders with :mod:`harness.chat` and agrees on 29 of
the 35 cases at 0c1e570; it answers ``unsupported`` where it has not ported llama-server's
step (an assistant message last, gemma-4's tool-response rewrite), so it exits 4
(incomplete). ``PORT=llama.cpp`` gives 0 divergences.

Exit codes as ``llama-conformance run``'s: 0 every case agreed, 1 divergences, 2 port
errors, 3 the check could not run, 4 incomplete (some case unsupported).

>>> exit_code(["agree", "unsupported"]), exit_code(["diverge", "port error"]), exit_code([])
(4, 2, 4)
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

#: Outcome -> exit code, worst first (as harness.cli's order 3, 2, 1, 4).
_CODES = (("port error", 2), ("diverge", 1), ("unsupported", 4))


def exit_code(outcomes: list[str]) -> int:
    """The run's exit code from its cases' outcomes (no case at all is incomplete)."""
    if not outcomes:
        return 4
    return next((code for outcome, code in _CODES if outcome in outcomes), 0)


def chat_vocabs() -> list[str]:
    """The pinned vocabs whose GGUF carries ``tokenizer.chat_template``, sorted."""
    from harness.tokenizer.gguf.reader import GGUFReader
    from reference.vocabs import names, vocab_path
    return [n for n in sorted(names()) if GGUFReader(vocab_path(n)).fields.get("tokenizer.chat_template")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness chat-check", description=__doc__.splitlines()[0])
    ap.add_argument("--port", default="harness", help="a PORT spec (harness, llama.cpp, a command with {vocab})")
    ap.add_argument("--vocabs", nargs="*", default=None, help="pinned vocab names (default: every one with a template)")
    ap.add_argument("--json", metavar="FILE", help="also write every case (vocab, conversation, outcome, detail) as JSON")
    args = ap.parse_args(argv)
    from harness.engine.chatdiff import check_vocab
    from harness.errors import HarnessError
    from harness.ports import open_port
    from reference.inproc import load_reference
    from reference.vocabs import vocab_path

    cases = []
    try:
        for name in args.vocabs or chat_vocabs():
            ref = load_reference(vocab_path(name))
            port = open_port(args.port, vocab_path(name), reference=ref)
            if args.port == "harness":  # the tokenizer in process, with the chat answer its server gives
                from harness.tokenizer.serve import TokenizerBackend
                port = TokenizerBackend(port)
            try:
                cases += check_vocab(name, port, ref)
            finally:
                getattr(port, "close", lambda: None)()
    except HarnessError as e:
        print(f"chat-check: {e}", file=sys.stderr)
        return 3
    for case in cases:
        if case.outcome != "agree":
            print(f"{case.vocab} [{case.conversation}]: {case.outcome}: {case.detail}")
    counts = Counter(c.outcome for c in cases)
    code = exit_code([c.outcome for c in cases])
    if args.json:
        import json
        from dataclasses import asdict
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"port": args.port, "exit_code": code, "cases": [asdict(c) for c in cases]}, fh, indent=1,
                      ensure_ascii=False)
    print(f"chat-check: port {args.port!r}, {len(cases)} case(s) on {len({c.vocab for c in cases})} vocab(s): "
          + ", ".join(f"{counts[k]} {k}" for k in ("agree", "diverge", "port error", "unsupported")) + f"; exit {code}")
    return code
