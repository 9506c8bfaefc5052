"""``make pin-diff FROM=a TO=b``: llama.cpp against llama.cpp, across two pins.

Pin ``a``'s llama.cpp is the reference and pin ``b``'s the port. Both run out of
process as ``python -m reference serve --pin P --vocab V`` (two libllama builds
in one process may clash, and an abort on one text then costs one restart, not
the run). Under all four (add_special, parse_special) combinations it encodes:

* over every vocab file both pins have (each pin its own file), and over a
  derived vocab per pre-tokenizer name both pins know (gpt-2's vocab with
  ``tokenizer.ggml.pre`` rewritten, as tests/test_pretypes_derived.py builds
  them: most pre types have no pinned vocab);
* golden texts (every ``.inp`` text of pin a), corpus chunks
  (harness/inputs/corpus.py) and seeded generated texts.

Each text whose ids differ is counted; the first few per vocab, flags and text
kind are shrunk greedily and reported like a port divergence (text, first
divergent token, both windows with their pieces). Static changes come from
reference/pin.py. Reports: ``<out>/pin-diff.json``, ``.md``, ``.html``.

>>> shrink("xxxx~yyyy", lambda t: "~" in t)
'~'
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.engine.shrink import shrink_sequence
from harness.errors import HarnessError
from harness.flags import COMBINATIONS
from harness.inputs.rules import rule_texts
from harness.reports.diff import first_index, window_bounds
from harness.reports.pindiff import render_html, render_md

from reference import lock as _lock
from reference.paths import vocabs_dir

FLAGS = COMBINATIONS
SHRINK_PER_GROUP = 2  # differing texts shrunk per vocab, flags and text kind
SHRINK_CALLS = 1500  # encode pairs one shrink may spend


@dataclass
class Target:
    """One vocab both pins load: a pinned file (each pin its own copy) or a derived one."""

    label: str
    kind: str  # "vocab" or "derived"
    path_a: Path
    path_b: Path
    pre: str | None = None


@dataclass
class Outcome:
    cases: int = 0
    differing: int = 0
    by_kind: dict = field(default_factory=dict)
    load: dict | None = None  # set when a pin refuses to load the vocab
    skipped: list = field(default_factory=list)  # texts not sent: {"vocab", "source", "text", "reason"}


# --- the two sides ----------------------------------------------------------------------------

class Side:
    """One pin's llama.cpp server for one vocab; restarted after a crash."""

    def __init__(self, pin: str, path: Path):
        self.pin, self.path, self.port = pin, path, None
        self.crashes = 0

    def _open(self):
        from harness.ports import ExternalPort

        cmd = f"{sys.executable} -m reference serve --pin {self.pin} --vocab {{vocab}}"
        self.port = ExternalPort(cmd, self.path)
        return self.port

    def ask(self, request: dict):
        """The answer, ``("error", msg)`` when llama.cpp threw, or ``("crash", stderr)``."""
        from harness.ports import PortError

        try:
            answer = (self.port or self._open()).exchange(request)
        except PortError as e:
            self.crashes += 1
            self.close()
            return ("crash", (e.stderr or str(e))[-300:])
        if "error" in answer:
            return ("error", answer["error"])
        return answer

    def encode(self, text: str, add_special: bool, parse_special: bool):
        a = self.ask({"op": "encode", "text": text, "add_special": add_special, "parse_special": parse_special})
        return a["ids"] if isinstance(a, dict) else a

    def piece(self, tid: int) -> str:
        a = self.ask({"op": "piece", "id": tid, "special": True})
        return bytes.fromhex(a["bytes_hex"]).decode("utf-8", "replace") if isinstance(a, dict) else f"<{a[0]}>"

    def close(self):
        if self.port is not None:
            try:
                self.port.close()
            except Exception:  # the server is gone already
                pass
        self.port = None


def _info_kind(result):
    return ("ids",) if isinstance(result, dict) else result


def _loaded(result) -> str:
    return "loads" if isinstance(result, dict) else f"refuses: {result[1][:200]}"


def _kind(result) -> str:
    return "ids" if isinstance(result, list) else result[0]


def same(x, y) -> bool:
    """Equal ids; errors and crashes count as equal to their own kind (messages name paths)."""
    return x == y if isinstance(x, list) and isinstance(y, list) else _kind(x) == _kind(y)


# --- texts --------------------------------------------------------------------------------------

def golden_texts(pin: _lock.Lock) -> list[str]:
    from reference.vocabs import split_inp

    seen: dict[str, None] = {}
    for f in pin.files:
        if f.name.endswith(".inp"):
            for t in split_inp((vocabs_dir(pin.name) / f.name).read_bytes().decode("utf-8")):
                seen.setdefault(t, None)
    return list(seen)


def corpus_texts() -> list[str]:
    from harness.inputs.corpus import chunks, corpus

    return chunks(corpus(64 * 1024), 2048)


# --- plan ---------------------------------------------------------------------------------------

def plan(a: _lock.Lock, b: _lock.Lock, tree_a: Path, tree_b: Path, workdir: Path) -> list[Target]:
    from harness.tokenizer.gguf import GGUFValueType as T
    from harness.tokenizer.gguf.writer import rewrite_metadata

    from reference.pin import pre_names

    targets = []
    for name in sorted(set(a.vocab_names()) & set(b.vocab_names())):
        fa = vocabs_dir(a.name) / f"ggml-vocab-{name}.gguf"
        fb = vocabs_dir(b.name) / f"ggml-vocab-{name}.gguf"
        targets.append(Target(name, "vocab", fa, fb))
    base = vocabs_dir(a.name) / "ggml-vocab-gpt-2.gguf"
    both = sorted(pre_names(tree_a)[1] & pre_names(tree_b)[1])
    for pre in both:
        path = workdir / f"gpt2-pre-{pre}.gguf"
        rewrite_metadata(base, path, {"tokenizer.ggml.pre": (T.STRING, pre)})
        targets.append(Target(f"gpt-2+pre={pre}", "derived", path, path, pre))
    return targets


def _aborts_in_llama(target: Target, texts: list[str]) -> dict[str, str]:
    """Texts llama.cpp aborts on for a derived WHITESPACE vocab (a space gap on a gpt2 model,
    see tests/test_pretypes_derived.py), each with the reason: not sent, so that the run is not
    one restart per text, and reported as skipped.

    The prediction is the harness tokenizer's (its LlamaAbort); a text it cannot judge is sent."""
    if target.pre != "whitespace":
        return {}
    from harness.tokenizer.algorithms.bpe import LlamaAbort
    from harness.tokenizer import Tokenizer

    tok = Tokenizer.from_gguf(target.path_a)
    out = {}
    for t in texts:
        try:
            tok.encode(t)
        except LlamaAbort as e:
            out[t] = f"the harness tokenizer predicts llama.cpp aborts on it (not sent): {e}"
        except HarnessError:
            pass
    return out


# --- shrinking and reporting ---------------------------------------------------------------------

def shrink(text: str, differs, budget: int = SHRINK_CALLS) -> str:
    """The engine's one shrinker, deleting only, over non-empty texts that still differ."""
    return shrink_sequence(text, lambda t: bool(t) and differs(t), calls=budget)


def _window(ids, i: int, side: Side) -> list:
    if not isinstance(ids, list):
        return [{"kind": ids[0], "detail": ids[1]}]
    lo, hi = window_bounds(i, len(ids))
    return [{"i": j, "id": ids[j], "piece": side.piece(ids[j])} for j in range(lo, hi)]


def _first_index(x, y) -> int:
    if not isinstance(x, list) or not isinstance(y, list):
        return 0
    i = first_index(x, y)
    return 0 if i is None else i


def difference(target: Target, flags, kind: str, text: str, sa: Side, sb: Side, count_hint: int) -> dict:
    def differs(t):
        return not same(sa.encode(t, *flags), sb.encode(t, *flags))

    small = shrink(text, differs)
    ia, ib = sa.encode(small, *flags), sb.encode(small, *flags)
    i = _first_index(ia, ib)
    return {"vocab": target.label, "kind": target.kind, "pre": target.pre,
            "add_special": flags[0], "parse_special": flags[1], "source": kind,
            "text": small, "text_utf8_hex": small.encode("utf-8", "surrogatepass").hex(),
            "original_length": len(text), "index": i, "from_ids": ia, "to_ids": ib,
            "from_window": _window(ia, i, sa), "to_window": _window(ib, i, sb)}


def run_target(target: Target, a: str, b: str, texts: dict[str, list[str]]) -> tuple[Outcome, list[dict]]:
    sa, sb = Side(a, target.path_a), Side(b, target.path_b)
    out, diffs = Outcome(), []
    ia, ib = sa.ask({"op": "info"}), sb.ask({"op": "info"})
    if not same(_info_kind(ia), _info_kind(ib)) or not isinstance(ia, dict):
        sa.close()
        sb.close()
        out.load = {a: _loaded(ia), b: _loaded(ib)}
        if isinstance(ia, dict) or isinstance(ib, dict):
            out.differing = 1  # one pin loads the vocab, the other refuses it
        return out, []
    skip = _aborts_in_llama(target, [t for ts in texts.values() for t in ts])
    out.skipped = [{"vocab": target.label, "source": kind, "text": t, "reason": skip[t]}
                   for kind, ts in texts.items() for t in dict.fromkeys(ts) if t in skip]
    try:
        for flags in FLAGS:
            for kind, ts in texts.items():
                shrunk = 0
                for text in ts:
                    if text in skip:
                        continue
                    out.cases += 1
                    x, y = sa.encode(text, *flags), sb.encode(text, *flags)
                    if same(x, y):
                        continue
                    out.differing += 1
                    key = f"{kind} add_special={flags[0]} parse_special={flags[1]}"
                    out.by_kind[key] = out.by_kind.get(key, 0) + 1
                    if shrunk < SHRINK_PER_GROUP:
                        shrunk += 1
                        diffs.append(difference(target, flags, kind, text, sa, sb, 0))
    finally:
        sa.close()
        sb.close()
    return out, _dedupe(diffs)


def _dedupe(diffs: list[dict]) -> list[dict]:
    seen, out = set(), []
    for d in diffs:
        key = (d["vocab"], d["add_special"], d["parse_special"], d["text"])
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


# --- main ----------------------------------------------------------------------------------------

def pin_diff(frm: str, to: str, *, budget: int = 300, seed: int = 0, only: list[str] | None = None) -> dict:
    from reference.fetch import fetch
    from reference.pin import static_changes
    from reference.sources import make_source

    from reference.build import artifacts

    pins = _lock.load_all()
    a, b = _lock.select(frm, pins), _lock.select(to, pins)
    for p in (a, b):
        fetch(lock=p)
        artifacts(pin=p.name)  # ReferenceUnavailable, naming `make reference PIN=...`, if not built
    tree_a, tree_b = Path(make_source(a).tree()), Path(make_source(b).tree())
    report = {"from": _pin_info(a), "to": _pin_info(b), "static": static_changes(a, tree_a, b, tree_b),
              "texts": {}, "vocabs": [], "differences": [], "skipped": [],
              "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
    texts = {"golden": golden_texts(a), "corpus": corpus_texts(), "generated": rule_texts(budget, seed)}
    report["texts"] = {k: len(v) for k, v in texts.items()}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pin-diff-") as tmp:
        targets = plan(a, b, tree_a, tree_b, Path(tmp))
        if only:
            targets = [t for t in targets if t.label in only]
        for n, target in enumerate(targets, 1):
            outcome, diffs = run_target(target, a.name, b.name, texts)
            print(f"pin-diff: [{n}/{len(targets)}] {target.label}: {outcome.cases} cases, "
                  f"{outcome.differing} differ, {len(outcome.skipped)} text(s) skipped", file=sys.stderr)
            report["vocabs"].append({"vocab": target.label, "kind": target.kind, "pre": target.pre,
                                     "cases": outcome.cases, "differing": outcome.differing,
                                     "skipped": len(outcome.skipped),
                                     "by_kind": outcome.by_kind, "load": outcome.load})
            report["differences"] += diffs
            report["skipped"] += outcome.skipped
    report["seconds"] = round(time.monotonic() - t0, 1)
    report["changes"] = tracked_changes(a.name, b.name)
    report["cases"] = sum(v["cases"] for v in report["vocabs"])
    return report


def tracked_changes(frm: str, to: str) -> list[dict]:
    """harness.tokenizer.pins entries that appear after ``frm`` up to ``to`` (either direction).

    >>> [c["name"] for c in tracked_changes("4df29be", "0c1e570")][:1]
    ['pre_types_hy_v4_spark2_5_ufakzeka']
    """
    from harness.tokenizer import pins

    return [{"name": c.name, "since": c.since, "source": c.source} for c in pins.CHANGES
            if pins.has(c.name, frm) != pins.has(c.name, to)]


def _pin_info(p: _lock.Lock) -> dict:
    return {"name": p.name, "commit": p.commit, "tree_sha256": p.tree_sha256,
            "sdist": f"{p.sdist['package']}=={p.sdist['version']}" if p.sdist else None}


def main(argv: list[str] | None = None) -> int:
    """``python -m harness pin-diff --from A --to B [--out DIR] [--budget N] [--seed N]``."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m harness pin-diff",
                                 description="llama.cpp against llama.cpp across two pins")
    ap.add_argument("--from", dest="frm", required=True)
    ap.add_argument("--to", required=True)
    ap.add_argument("--out", default="reports")
    ap.add_argument("--budget", type=int, default=int(os.environ.get("PIN_DIFF_TEXTS", "300")),
                    help="generated texts per vocab and flag combination")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    only = os.environ.get("PIN_DIFF_VOCABS", "").split() or None
    try:
        report = pin_diff(args.frm, args.to, budget=args.budget, seed=args.seed, only=only)
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "pin-diff.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    (out_dir / "pin-diff.md").write_text(render_md(report))
    (out_dir / "pin-diff.html").write_text(render_html(report))
    print(render_md(report))
    print(f"pin-diff: reports in {out_dir}/pin-diff.{{json,md,html}}", file=sys.stderr)
    return 0
