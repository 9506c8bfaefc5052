"""The adapter check: a port's server against its package called directly.

A scoreboard port's ``serve`` may map llama.cpp's flags onto its package and nothing more.
``port.json``'s optional ``direct`` (``"direct --vocab {vocab}"``) is a second program, in the
port's language, that answers the same JSON-lines requests by calling the package as the
package's README shows, sharing no code with ``serve``. :func:`check_adapter` sends both the
same fixed requests (:func:`encode_requests`, then :func:`decode_requests` built from
``serve``'s own ids) and compares the answers: one that differs is logic of the adapter's,
and the board says so beside the port's causes.

>>> [r["text"] for r in encode_requests()][:2], len(encode_requests()) == 4 * len(TEXTS)
(['', ''], True)
>>> decode_requests([[5, 6]], n_vocab=3)[0]
{'op': 'decode', 'ids': [5, 6], 'remove_special': False, 'unparse_special': False}
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from harness.inputs.known import KNOWN_TEXTS
from harness.scoreboard.ports import Port, split_serve

#: The check's vocabs: one or two of each vocab type the ports support.
VOCABS = ("llama-spm", "qwen2", "llama-bpe", "gpt-2", "bert-bge", "nomic-bert-moe")
TEXTS = [t for t, _ in KNOWN_TEXTS] + ["Hello world", " leading space", "数字 123 и текст 😀"]
FLAGS = [(a, p) for a in (False, True) for p in (False, True)]
#: Pieces asked: the first ids (specials, bytes) and every 997th after them.
PIECE_IDS = 64
TIMEOUT_S = 300


def encode_requests() -> list[dict]:
    """Every text under the four flag combinations."""
    return [{"op": "encode", "text": t, "add_special": a, "parse_special": p} for t in TEXTS for a, p in FLAGS]


def decode_requests(id_lists: list[list[int]], n_vocab: int) -> list[dict]:
    """Each id list ``serve`` gave, decoded under the four decode flags; then pieces."""
    out = [{"op": "decode", "ids": ids, "remove_special": r, "unparse_special": u}
           for ids in id_lists for r, u in FLAGS]
    ids = sorted(set(range(min(PIECE_IDS, n_vocab))) | set(range(PIECE_IDS, n_vocab, 997)))
    return out + [{"op": "piece", "id": i, "special": s} for i in ids for s in (False, True)]


def answers(argv: list[str], requests: list[dict], cwd: Path) -> list[dict]:
    """The program's answer to each request, in order; a crash, a hang or a short or unreadable
    answer is one ``{"error": "adapter check: ..."}`` standing for every unanswered request."""
    payload = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests)
    try:
        proc = subprocess.run(argv, input=payload, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=cwd)
    except subprocess.TimeoutExpired:
        return [{"error": f"adapter check: {argv[0]} did not answer {len(requests)} requests in {TIMEOUT_S} s"}]
    except OSError as e:
        return [{"error": f"adapter check: cannot start {argv[0]} ({e})"}]
    out = []
    for line in proc.stdout.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append({"error": f"adapter check: not JSON: {line[:200]!r}"})
    if len(out) < len(requests):
        tail = proc.stderr.strip().splitlines()[-1:] or [""]
        out.append({"error": f"adapter check: {argv[0]} answered {len(out)} of {len(requests)} requests "
                             f"(exit {proc.returncode}; {tail[0][:200]})"})
    return out


def unsupported(answer: dict) -> bool:
    """An ``{"error": "unsupported: <why>"}`` answer (the board counts every why the same)."""
    return str(answer.get("error", "")).startswith("unsupported: ")


def compare(requests: list[dict], served: list[dict], direct: list[dict]) -> tuple[int, list[dict]]:
    """(how many answers are equal, the first few that differ with both answers). Two
    ``unsupported`` answers are equal whatever their reasons: each program says why in its own words.

    >>> compare([{}, {}], [{"error": "unsupported: a"}, {"ids": [1]}], [{"error": "unsupported: b"}, {"ids": [2]}])[0]
    1
    """
    equal, differ = 0, []
    for i, request in enumerate(requests):
        a = served[i] if i < len(served) else served[-1]
        b = direct[i] if i < len(direct) else direct[-1]
        if a == b or (unsupported(a) and unsupported(b)):
            equal += 1
        elif len(differ) < 5:
            differ.append({"request": request, "serve": a, "direct": b})
    return equal, differ


def aligned(out: list[dict], n: int) -> list[dict]:
    """``out`` cut or padded to ``n`` answers: a program that stopped early answers every
    request after it with its last (error) answer, so later answers stay beside their requests.

    >>> aligned([{"ids": [1]}, {"error": "died"}], 3)
    [{'ids': [1]}, {'error': 'died'}, {'error': 'died'}]
    """
    out = out or [{"error": "adapter check: no answer"}]
    return (out + out[-1:] * n)[:n]


def check_vocab(port: Port, vocab: str, gguf: Path) -> dict:
    """One vocab: ``{"vocab", "requests", "equal", "differ"}``. Three program starts: ``serve``
    for info and the encodes, ``serve`` for the decodes and pieces built from its ids, and
    ``direct`` for all of them (info is ``serve``'s, only to size the pieces asked)."""
    serve, direct = split_serve(port, port.serve, gguf), split_serve(port, port.direct, gguf)
    first = encode_requests()
    info, *served = aligned(answers(serve, [{"op": "info"}] + first, port.directory), 1 + len(first))
    n_vocab = info.get("n_vocab") if isinstance(info.get("n_vocab"), int) else 0
    second = decode_requests([a["ids"] for a in served if isinstance(a.get("ids"), list)], n_vocab)
    requests = first + second
    served += aligned(answers(serve, second, port.directory), len(second))
    equal, differ = compare(requests, served, aligned(answers(direct, requests, port.directory), len(requests)))
    return {"vocab": vocab, "requests": len(requests), "equal": equal, "differ": differ}


def check_adapter(port: Port, vocab_path, vocabs=VOCABS) -> dict:
    """The port's adapter check on ``vocabs`` (those pinned), or ``{"checked": False, "why"}``
    when the port has no ``direct`` program."""
    if not port.direct:
        return {"checked": False, "why": "the port has no direct program (port.json 'direct')"}
    results = [check_vocab(port, v, Path(vocab_path(v))) for v in vocabs]
    return {"checked": True, "vocabs": results, "requests": sum(r["requests"] for r in results),
            "equal": sum(r["equal"] for r in results)}

