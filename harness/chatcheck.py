"""``python -m harness chat-check [--port SPEC] [--vocabs ...]`` (``make chat-check``): the chat check.

Each pinned vocab whose GGUF carries ``tokenizer.chat_template`` (command-r, gemma-4,
phi-3, qwen2, qwen35 at 0c1e570) renders the fixed conversations of
:data:`harness.engine.chatdiff.CONVERSATIONS` through the port's ``chat`` op and through
llama.cpp (:mod:`reference.chat`), and every disagreement is listed. ``make conformance
CHECKS=chat`` runs it after the suite (``--after``: the worse of the two exit codes). The harness port renders with :mod:`harness.chat` and agrees on 29 of
the 35 cases at 0c1e570; it answers ``unsupported`` where it has not ported llama-server's
step (an assistant message last, gemma-4's tool-response rewrite), so it exits 4
(incomplete). ``PORT=llama.cpp`` gives 0 divergences.

Then the generated phase (:mod:`harness.engine.chatgen`): ``--examples`` Hypothesis
conversations per vocab (30 by default; 0 skips it), drawn from ``--seed`` (0), checked the
same way; for each kind of divergence met (text, ids, one side raised) the smallest
conversation that still diverges that way is printed, as JSON, with the first divergent byte
of the rendering and the first divergent token of the ids. Generated cases count in the
totals and the exit code like the fixed ones (``PORT=harness`` at 0c1e570, seed 0: 150
generated, 0 divergences; with ``--examples 100`` the renderer's two typed-content
disagreements, see the README).

Then the causes (:mod:`harness.engine.chatcauses`): each divergent case explained by the
first catalogue variant (a named port defect) that reproduces the port's answer, else grouped
as ``unexplained (chat): ...`` by the edit at its first divergent byte; one line per cause with
its cases count and smallest conversation (``--json``: ``causes``).

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


#: ``llama-conformance run``'s exit codes, the one that applies first first (harness.cli).
_ORDER = (3, 2, 1, 4, 0)


def worse(a: int, b: int) -> int:
    """The exit code of two checks run one after the other (``make conformance CHECKS=...
    chat``): the first of the two in run's order (3 errors, 2 port errors, 1 divergences,
    4 incomplete, 0 clean); a code outside it is an error.

    >>> worse(0, 4), worse(1, 4), worse(2, 1), worse(0, 0), worse(0, 5)
    (4, 1, 2, 0, 3)
    """
    return min((c if c in _ORDER else 3 for c in (a, b)), key=_ORDER.index)


def chat_vocabs() -> list[str]:
    """The pinned vocabs whose GGUF carries ``tokenizer.chat_template``, sorted."""
    from harness.tokenizer.gguf.reader import GGUFReader
    from reference.vocabs import names, vocab_path
    return [n for n in sorted(names()) if GGUFReader(vocab_path(n)).fields.get("tokenizer.chat_template")]


def main(argv: list[str] | None = None) -> int:
    from harness.engine.chatgen import EXAMPLES, SEED
    ap = argparse.ArgumentParser(prog="python -m harness chat-check", description=__doc__.splitlines()[0])
    ap.add_argument("--port", default="harness", help="a PORT spec (harness, llama.cpp, a command with {vocab})")
    ap.add_argument("--vocabs", nargs="*", default=None, help="pinned vocab names (default: every one with a template)")
    ap.add_argument("--examples", type=int, default=EXAMPLES,
                    help=f"generated conversations per vocab after the fixed ones (default {EXAMPLES}; 0: none)")
    ap.add_argument("--seed", type=int, default=SEED, help=f"the generated phase's seed (default {SEED})")
    ap.add_argument("--json", metavar="FILE", help="also write every case (vocab, conversation, outcome, detail) "
                                                   "and the shrunk divergences as JSON")
    ap.add_argument("--html", metavar="FILE", help="also write the check's page: the causes with llama.cpp's "
                                                   "rendering beside the port's (harness/reports/chathtml.py)")
    ap.add_argument("--after", type=int, default=None, metavar="CODE",
                    help="the exit code of a run this check follows (make conformance CHECKS=... chat): exit "
                         "with the worse of the two, in run's order 3, 2, 1, 4, 0")
    args = ap.parse_args(argv)
    code = _main(args)
    if args.after is None:
        return code
    both = worse(args.after, code)
    print(f"chat-check: the run before it exited {args.after}, this check {code}: exit {both}")
    return both


def _main(args) -> int:
    from harness.errors import HarnessError
    from harness.engine.chatcauses import causes
    cases, shrunk, vocabs = [], [], {}
    names = chat_vocabs()
    if args.vocabs:
        from reference.vocabs import names as pinned
        unknown = sorted(set(args.vocabs) - set(pinned()))
        if unknown:
            print(f"chat-check: unknown vocab(s) {', '.join(unknown)}; the chat check takes pinned vocab names "
                  f"(those with a chat template: {', '.join(names)})", file=sys.stderr)
            return 3
        left = [v for v in args.vocabs if v not in names]
        if left:
            print(f"chat-check: not checked: {', '.join(left)} (no tokenizer.chat_template; those with one: "
                  f"{', '.join(names)})")
        names = [v for v in args.vocabs if v in names]
        if not names:
            return 4  # nothing compared: incomplete, as run with no case
    try:
        for name in names:
            got = _check(name, args)
            cases += got[0]
            shrunk += got[1]
            if any(c.outcome == "diverge" for c in got[0]):
                vocabs[name] = chat_vocab(name)
        found = causes(cases, vocabs)
    except HarnessError as e:
        print(f"chat-check: {e}", file=sys.stderr)
        return 3
    code = exit_code([c.outcome for c in cases])
    _print(args, cases, shrunk, code, found)
    if args.json or args.html:
        import json
        from dataclasses import asdict
        data = {"port": args.port, "exit_code": code, "seed": args.seed, "examples": args.examples,
                "cases": [c.to_json() for c in cases], "shrunk": [asdict(s) for s in shrunk],
                "causes": [c.to_json() for c in found]}
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=1, ensure_ascii=False)
        if args.html:
            from harness.reports.chathtml import chat_page
            with open(args.html, "w", encoding="utf-8") as fh:
                fh.write(chat_page(data))
    return code


def chat_vocab(name: str):
    """The pinned vocab's :class:`~harness.engine.chatcauses.ChatVocab`: its template, BOS/EOS
    texts and flags (read by the harness tokenizer, as llama-server reads them) and llama.cpp's
    tokenizer."""
    from harness.engine.chatcauses import ChatVocab
    from harness.tokenizer.facade import Tokenizer
    from harness.tokenizer.gguf.reader import GGUFReader
    from reference.inproc import load_reference
    from reference.vocabs import vocab_path
    tok, ref = Tokenizer.from_gguf(vocab_path(name)), load_reference(vocab_path(name))
    v = tok.vocab

    def text(token_id) -> str:
        return "" if token_id is None else tok.token_to_piece(token_id, special=True).decode("utf-8", "replace")
    with GGUFReader(vocab_path(name)) as reader:
        template = reader.fields.get("tokenizer.chat_template") or ""
        tool_use = reader.fields.get("tokenizer.chat_template.tool_use") or ""
    return ChatVocab(template, text(v.bos), text(v.eos), v.add_bos, v.add_eos, v.bos,
                     lambda data, add, parse: ref.encode(data, add_special=add, parse_special=parse), tool_use)


def _check(name: str, args) -> tuple[list, list]:
    """One vocab: its fixed cases, then (``--examples``) its generated cases and shrunk divergences."""
    from harness.engine.chatdiff import Restarting, check_vocab
    from harness.ports import open_port
    from reference.inproc import load_reference
    from reference.vocabs import vocab_path
    ref = load_reference(vocab_path(name))
    if args.port == "harness":  # the tokenizer in process, with the chat answer its server gives
        from harness.tokenizer.serve import TokenizerBackend
        port = TokenizerBackend(open_port(args.port, vocab_path(name), reference=ref))
    else:  # a port that goes down is opened again for the next case (chatdiff.Restarting)
        def start():
            return open_port(args.port, vocab_path(name), reference=ref)
        port = Restarting(start, start())
    try:
        cases, shrunk = check_vocab(name, port, ref), []
        if args.examples > 0:
            from harness.engine.chatgen import generate
            from harness.inputs.vocabtexts import vocab_texts
            generated, shrunk = generate(name, port, ref, vocab_texts(vocab_path(name), ref),
                                         examples=args.examples, seed=args.seed)
            cases += generated
        return cases, shrunk
    finally:
        getattr(port, "close", lambda: None)()


def _print(args, cases: list, shrunk: list, code: int, found: list = ()) -> None:
    """Every fixed disagreement, the generated ones by outcome and reason, each shrunk
    divergence with its conversation, the causes, and the totals line."""
    import json

    from harness.engine.chatgen import kind
    fixed = [c for c in cases if not c.conversation.startswith("generated")]
    for case in fixed:
        if case.outcome != "agree":
            print(f"{case.vocab} [{case.conversation}]: {case.outcome}: {case.detail}")
    groups = Counter((c.vocab, c.outcome, c.detail[:120] if c.outcome != "diverge" else kind(c.detail))
                     for c in cases if c.conversation.startswith("generated") and c.outcome != "agree")
    for (vocab, outcome, why), n in groups.items():
        print(f"{vocab} [generated, {n} of {args.examples}]: {outcome}: {why}")
    for s in shrunk:
        msgs, chars = s.size()
        how = f"shrunk to {msgs} message(s), {chars} content character(s)" if s.shrunk else "not shrunk"
        conv = s.conversation
        request = {"messages": conv.messages, "tools": conv.tools,
                   "add_generation_prompt": conv.add_generation_prompt, "kwargs": conv.kwargs}
        print(f"{s.vocab} [generated, {how}]: diverge: {s.detail}\n    {json.dumps(request, ensure_ascii=False)}")
    _print_causes(found)
    counts = Counter(c.outcome for c in cases)
    print(f"chat-check: port {args.port!r}, {len(cases)} case(s) on {len({c.vocab for c in cases})} vocab(s) "
          f"({len(fixed)} fixed, {len(cases) - len(fixed)} generated, seed {args.seed}): "
          + ", ".join(f"{counts[k]} {k}" for k in ("agree", "diverge", "port error", "unsupported")) + f"; exit {code}")


def _print_causes(found: list) -> None:
    """Each cause: its title, how many cases, the smallest conversation and where it diverges."""
    import json
    for n, cause in enumerate(found, 1):
        ex = cause.example()
        conv = ex.evidence[0]
        also = f", {len(cause.with_another)} with another defect" if cause.with_another else ""
        print(f"cause {n}: {cause.title} ({len(cause.cases)} case(s){also})" + (f"; llama.cpp: {cause.rule}" if cause.rule
                                                                            else ""))
        print(f"    e.g. {ex.vocab} [{ex.conversation}] {json.dumps(conv.messages, ensure_ascii=False)[:300]}\n"
              f"    {ex.detail}")
