"""``make coverage``: how much of llama.cpp's tokenizer code the conformance suite reaches.

Makes an instrumented copy of the pinned llama.cpp build (``--coverage -O0`` on
the measured files, see :func:`coverage_build`) in its own cached directory (the
normal reference build is untouched), runs the conformance suite against it (``PORT=llama.cpp``,
``LLAMA_CONFORMANCE_BUILD`` pointing at it) one phase at a time, and after each
phase takes a gcovr snapshot, so every line is attributed to the phase that
first reached it. Phases: the golden files, the crosscheck, then the
differential test once per strategy family (``STRATEGY_FAMILIES=<name>``,
``KNOWN_EXAMPLES=0``), then the fixed known-bug examples, then the whole suite on every
derived vocab (``VOCABS=all-derived``).

Measured code: in ``src/llama-vocab.cpp`` the tokenizer sessions and tokenizers
(``llm_tokenizer_*``), ``tokenizer_st_partition``, ``tokenize``,
``token_to_piece`` and ``detokenize``; all of ``src/unicode.cpp``.

Outputs (``--out``, default ``reports``): ``coverage.json`` (top level
``lines_covered``, ``lines_total``, ``branches_covered``, ``branches_total`` (gcov's
object-code branches, less exception and no-source-line ones), ``decisions_covered``,
``decisions_total`` (gcovr's source-level if/switch outcomes), ``unreachable``
[{file, line, reason}] (a vocab or pre type no vocab has), ``uncovered`` [{file, line,
function, reason}] (every unreached line, with why: :func:`uncovered_reason`),
``uncovered_by_reason``, ``by_family`` {phase: lines first reached}) and
``coverage/index.html`` (gcovr's pages, uncovered lines in red).

    python -m harness.coverage --profile ci          # what `make coverage` runs

>>> in_scope("src/llama-vocab.cpp", "llm_tokenizer_bpe_session::tokenize(std::string const&, std::vector<int>&)")
True
>>> in_scope("src/llama-vocab.cpp", "llama_vocab::impl::load(llama_model_loader&, LLM_KV const&)")
False
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from harness.errors import HarnessError

FILES = ("src/llama-vocab.cpp", "src/unicode.cpp")
# Function names (gcovr's demangled names) measured in llama-vocab.cpp.
# Helpers only these call (whitespace escaping, GPT-2 byte decoding) count with them.
_VOCAB_FUNCS = re.compile(r"^(llm_tokenizer_\w+|naive_trie::|llama_vocab::impl::(tokenizer_st_partition|tokenize|"
                          r"token_to_piece|detokenize|_try_copy|byte_to_token|token_to_byte)\b|"
                          r"llama_vocab::(tokenize|token_to_piece|detokenize)\b|llama_(tokenize|detokenize|"
                          r"token_to_piece|escape_whitespace|unescape_whitespace|decode_text)\b)")
# Appended to the reference's own compile commands of FILES (the last -O wins): exact lines.
COVERAGE_FLAGS = "--coverage -O0"
_STAMP = "complete.json"

# Which pinned-vocab property a function needs: llama-vocab.cpp tokenizers by vocab type
# (tokenizer.ggml.model), first matching prefix wins.
_NEEDS_MODEL = (("llm_tokenizer_rwkv", "rwkv"), ("llm_tokenizer_plamo2", "plamo2"),
                ("llm_tokenizer_hybriddna", "hybriddna"), ("llm_tokenizer_whitespace", "whitespace"),
                ("llm_tokenizer_ugm", "t5"), ("llm_tokenizer_wpm", "bert"), ("llm_tokenizer_spm", "llama"),
                ("naive_trie", "t5"))
# unicode.cpp's hand-written splitters, by the regex string that selects each
# (unicode_regex_split_custom compares strings): reachable if a pinned pre-type lists it.
_SPLITTER_REGEX = {"unicode_regex_split_custom_gpt2": ("GPT2",),
                   "unicode_regex_split_custom_llama3": ("LLAMA3", "LLAMA3_I"),
                   "unicode_regex_split_custom_qwen2": ("QWEN2",),
                   "unicode_regex_split_custom_qwen35": ("QWEN35",),
                   "unicode_regex_split_custom_kimi_k2": ("KIMI_K2",),
                   "unicode_regex_split_custom_afmoe": ("AFMOE", "TINY_AYA_DIGITS"),
                   "unicode_regex_split_custom_newlines": ("NEWLINES",)}


def splitter_pre_types() -> dict[str, set[str]]:
    """unicode.cpp splitter function -> the pre-types whose regex list selects it.

    >>> "KIMI_K2" in splitter_pre_types()["unicode_regex_split_custom_kimi_k2"]
    True
    """
    from harness.tokenizer.pretokenize import REGEX_EXPRS, splitters
    out = {}
    for fn, names in _SPLITTER_REGEX.items():
        exprs = {getattr(splitters, n) for n in names}
        out[fn] = {pre for pre, rx in REGEX_EXPRS.items() if exprs & set(rx)}
    return out


def in_scope(file: str, function: str) -> bool:
    """Whether a line of ``file`` inside ``function`` is measured."""
    if file.endswith("unicode.cpp"):
        return True
    return bool(_VOCAB_FUNCS.match(function or ""))


# --- the instrumented build ------------------------------------------------------------------
def coverage_build(source_dir: Path) -> Path:
    """libllama with gcov instrumentation in the two measured files; cached by pin and flags.

    A copy of the reference build (``make reference``) in which only FILES are
    recompiled (their own compile commands plus COVERAGE_FLAGS) and libllama and the
    shim are relinked with ``--coverage``: seconds instead of a second full build,
    and every other object is byte-identical to the reference's. ``llama-tokenize``
    in the copy still loads the reference's libllama (its RUNPATH): the CLI half of the
    crosscheck is not measured, its in-process half is.
    """
    from reference import build as rb
    from reference import lock as rl
    from reference.paths import cache_dir
    base = rb.artifacts()
    commit = rl.load().commit
    key = rb.build_key(commit, "coverage-overlay:" + COVERAGE_FLAGS)
    out = cache_dir() / "build-coverage" / key
    if (out / _STAMP).is_file():
        print(f"coverage: instrumented build up to date ({out})", file=sys.stderr)
        return out
    if out.exists():
        shutil.rmtree(out)  # a half-made copy from an interrupted run
    shutil.copytree(base.build_dir, out, symlinks=True)
    (out / rb._STAMP).unlink(missing_ok=True)
    log = out / "build.log"
    commands = json.loads((base.build_dir / "compile_commands.json").read_text())
    old = str(base.build_dir)
    with open(log, "w") as fh:
        for f in FILES:
            entry = next((e for e in commands if e["file"].endswith(f)), None)
            if entry is None:
                raise HarnessError(f"{base.build_dir}/compile_commands.json has no entry for {f}: "
                                   f"rebuild the reference (`make reference`)")
            cmd = entry["command"].replace(old, str(out)) + " " + COVERAGE_FLAGS
            _run_shell(cmd, entry["directory"].replace(old, str(out)), fh, log)
        link = (out / "src" / "CMakeFiles" / "llama.dir" / "link.txt").read_text().strip()
        _run_shell(link.replace(old, str(out)) + " --coverage", str(out / "src"), fh, log)
        arts = rb.Artifacts(out)
        rb._run_logged(rb._shim_command(source_dir, arts), fh, log)
    (out / _STAMP).write_text(json.dumps({"commit": commit, "flags": COVERAGE_FLAGS, "base": old}, indent=2))
    print(f"coverage: instrumented {', '.join(FILES)} in {out}", file=sys.stderr)
    return out


def _run_shell(cmd: str, cwd: str, fh, log: Path) -> None:
    # compile_commands.json and link.txt hold shell command lines (quoted defines).
    fh.write(f"$ (cd {cwd} && {cmd})\n")
    fh.flush()
    proc = subprocess.run(cmd, shell=True, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
        raise HarnessError(f"coverage build step failed (exit {proc.returncode}) in {cwd}:\n{tail}\nlog: {log}")


def _source_dir() -> Path:
    from reference import lock, sources
    return Path(sources.make_source(lock.load(), None).tree())


# --- snapshots -------------------------------------------------------------------------------
def snapshot(build_dir: Path, source_dir: Path, out_json: Path, html: Path | None = None) -> dict:
    """gcovr over the build's .gcda files: {(file, line): (count, [branch counts], function)}."""
    filters = [f"--filter={re.escape(str(source_dir / f))}$" for f in FILES]
    # Only libllama's objects: gcov on every ggml object would take minutes per snapshot.
    # Exception-only branches (a throw's landing pads) are not tokenizer logic: excluded.
    objects = build_dir / "src" / "CMakeFiles" / "llama.dir"
    # --exclude-unreachable-branches drops the branches gcov finds on lines with no source
    # logic (a closing brace's cleanup); --decisions adds gcovr's source-level if/switch outcomes.
    cmd = [sys.executable, "-m", "gcovr", "--root", str(source_dir), *filters, "--exclude-throw-branches",
           "--exclude-unreachable-branches", "--decisions", "--json", str(out_json), str(objects)]
    if html is not None:
        html.parent.mkdir(parents=True, exist_ok=True)
        cmd += ["--html-details", str(html), "--html-title", "llama.cpp tokenizer coverage (conformance suite)"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise HarnessError(f"gcovr failed (exit {proc.returncode}): {proc.stderr[-2000:]}\n"
                           f"install it with `pip install -e '.[coverage]'` (make coverage does)")
    data = json.loads(out_json.read_text(encoding="utf-8"))
    lines = {}
    for f in data["files"]:
        name = f["file"]
        for ln in f["lines"]:
            fn = ln.get("function_name") or ""
            if ln.get("gcovr/noncode") or not in_scope(name, fn):
                continue
            key = (name, ln["line_number"])
            count, branches, _ = lines.get(key, (0, [], fn))
            lines[key] = (count + ln["count"], branches + [b["count"] for b in ln.get("branches", [])], fn)
    return lines


def decisions(snapshot_json: Path) -> dict:
    """Source-level decision outcomes (gcovr ``--decisions``) of the measured lines: each
    ``if``/``while`` counts its true and false outcome, each ``case`` label its one.

    >>> import json, tempfile
    >>> p = Path(tempfile.mkdtemp()) / "s.json"
    >>> _ = p.write_text(json.dumps({"files": [{"file": "src/unicode.cpp", "lines": [
    ...     {"line_number": 1, "function_name": "f", "gcovr/decision": {"type": "conditional", "count_true": 2, "count_false": 0}},
    ...     {"line_number": 2, "function_name": "f", "gcovr/decision": {"type": "switch", "count": 1}}]}]}))
    >>> decisions(p)
    {'decisions_covered': 2, 'decisions_total': 3}
    """
    data = json.loads(Path(snapshot_json).read_text(encoding="utf-8"))
    seen: dict = {}
    for f in data["files"]:
        for ln in f["lines"]:
            dec = ln.get("gcovr/decision")
            if not dec or ln.get("gcovr/noncode") or not in_scope(f["file"], ln.get("function_name") or ""):
                continue
            if dec["type"] == "conditional":
                outcomes = [dec["count_true"], dec["count_false"]]
            elif dec["type"] == "switch":
                outcomes = [dec["count"]]
            else:  # "uncheckable": gcovr could not tell the outcomes apart on this line
                continue
            old = seen.get((f["file"], ln["line_number"]), [0] * len(outcomes))
            seen[(f["file"], ln["line_number"])] = [a + b for a, b in zip(old, outcomes)]
    outcomes = [o for v in seen.values() for o in v]
    return {"decisions_covered": sum(1 for o in outcomes if o > 0), "decisions_total": len(outcomes)}


def summarise(lines: dict) -> dict:
    covered = {k for k, (c, _, _) in lines.items() if c > 0}
    branches = [b for _, bs, _ in lines.values() for b in bs]
    return {"lines_covered": len(covered), "lines_total": len(lines),
            "branches_covered": sum(1 for b in branches if b > 0), "branches_total": len(branches)}


_CASE = re.compile(r"^\s*case LLAMA_VOCAB_(PRE_)?TYPE_(\w+)\s*:")
_VOCAB_TYPE_MODEL = {"SPM": "llama", "BPE": "gpt2", "WPM": "bert", "UGM": "t5", "RWKV": "rwkv",
                     "PLAMO2": "plamo2", "NONE": "none"}


def case_labels(source: list[str], line: int) -> tuple[str, list[str]]:
    """The ``case LLAMA_VOCAB_[PRE_]TYPE_X:`` group a (1-based) source line sits under:
    ("pre", [X, ...]) or ("type", [...]); ("", []) when a break/return comes first.

    >>> src = ["switch (t) {", "case LLAMA_VOCAB_PRE_TYPE_A:", "case LLAMA_VOCAB_PRE_TYPE_B:", "x = 1;", "break;"]
    >>> case_labels(src, 4)
    ('pre', ['A', 'B'])
    """
    i = line - 2
    while i >= 0 and not _CASE.match(source[i]):
        text = source[i].strip()
        if text.startswith(("break;", "return", "default:")) or text.endswith("{") and "switch" in text:
            return "", []
        i -= 1
    if i < 0:
        return "", []
    kind = "pre" if _CASE.match(source[i]).group(1) else "type"
    labels = []
    while i >= 0 and _CASE.match(source[i]):
        labels.insert(0, _CASE.match(source[i]).group(2))
        i -= 1
    return kind, labels


def unreachable(lines: dict, models: set[str], pre_types: set[str],
                sources: dict[str, list[str]] | None = None) -> list[dict]:
    """Uncovered lines that need a vocab type or pre-type no pinned vocab has: by the
    function they are in (a tokenizer, a hand-written splitter) or by the ``case``
    labels of the switch they sit in (``sources``: file -> its lines)."""
    users = splitter_pre_types()
    out = []
    for (file, line), (count, _, fn) in sorted(lines.items()):
        if count:
            continue
        reason = None
        model = next((m for prefix, m in _NEEDS_MODEL if fn.startswith(prefix)), None)
        if model is not None and model not in models:
            reason = f"vocab type {model}: no pinned or derived vocab"
        splitter = next((f for f in users if fn.startswith(f + "(")), None)
        if splitter is not None and not users[splitter] & pre_types:
            reason = (f"{splitter}: used by pre-type {', '.join(sorted(users[splitter])) or '(none)'}, "
                      f"no pinned or derived vocab")
        if reason is None and sources and file in sources:
            kind, labels = case_labels(sources[file], line)
            if kind == "pre" and not set(labels) & pre_types:
                reason = f"pre-type {', '.join(labels)}: no pinned or derived vocab"
            elif kind == "type" and not {_VOCAB_TYPE_MODEL.get(x, x.lower()) for x in labels} & models:
                reason = (f"vocab type {', '.join(_VOCAB_TYPE_MODEL.get(x, x.lower()) for x in labels)}: "
                          "no pinned or derived vocab")
        if reason:
            out.append({"file": file, "line": line, "reason": reason})
    return out


from .reasons import WHY_UNREACHED, uncovered_reason, _dead  # noqa: F401  (re-exported)


def pinned_models_and_pre_types(derived: bool = False) -> tuple[set[str], set[str]]:
    """The tokenizer models and pre-types of the pinned vocabs (and of the derived ones)."""
    from harness.engine.vut import pre_type_label
    from harness.inputs.derived import expand, resolve
    from harness.tokenizer.gguf import GGUFReader
    from reference.vocabs import names
    models, pres = set(), set()
    for n in (expand(["all"]) if derived else names()):
        p = resolve(n)
        models.add(GGUFReader(p).get("tokenizer.ggml.model"))
        pres.add(pre_type_label(p))
    return models, pres


# --- phases ----------------------------------------------------------------------------------
def phases(only: list[str] | None) -> list[tuple[str, list[str], dict]]:
    """(name, pytest arguments, extra environment) in run order."""
    from harness.conformance import suite
    from harness.inputs import strategies
    sdir = Path(suite.__file__).parent
    generated = [str(sdir / "test_encode.py"), str(sdir / "test_decode.py")]
    out = [("golden", [str(sdir / "test_golden.py")], {}),
           ("crosscheck", [str(sdir / "test_crosscheck.py")], {})]
    # Strategy phases run two of the four flag combinations (plain, add_parse): every
    # add_special/parse_special path is still taken, in half the time.
    two = ["-k", "plain or add_parse"]
    for fam in strategies.FRAGMENT_FAMILIES:
        out.append((f"strategy:{fam}", [*generated, *two], {"STRATEGY_FAMILIES": fam, "KNOWN_EXAMPLES": "0"}))
    out.append(("known_examples", [str(sdir / "test_known.py")], {"KNOWN_EXAMPLES": "1"}))
    # Every derived vocab (one per pre name and per vocab type no pinned file has,
    # harness/inputs/derived), through the whole suite: the code only they reach.
    out.append(("derived", [str(sdir)], {"VOCABS": "all-derived"}))
    if only:
        out = [p for p in out if p[0] in only or p[0].split(":")[-1] in only]
    return out


def run_phase(files: list[str], env_extra: dict, build_dir: Path, profile: str, jobs: str,
              python: str, cwd: Path) -> int:
    env = {**os.environ, "PORT": "llama.cpp", "LLAMA_CONFORMANCE_BUILD": str(build_dir),
           "HYPOTHESIS_PROFILE": profile, "LLAMA_CONFORMANCE_REQUIRE_REFERENCE": "1", **env_extra}
    # Rooted in the suite's own directory with no ini file, as `llama-conformance run` runs it: the
    # checkout's conftest.py (make test's "nothing may skip") must not turn an unsupported
    # crosscheck cell into a failed phase.
    sdir = files[0] if os.path.isdir(files[0]) else os.path.dirname(files[0])
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", jobs, "--dist", "loadgroup",
           "-c", os.devnull, "--rootdir", sdir, "--confcutdir", sdir,
           "-p", "harness.conformance.plugin", "--conformance-reports", str(cwd / "reports" / ".coverage-run"),
           "--hypothesis-seed=0", *files]
    return subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL).returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="gcov coverage of llama.cpp's tokenizer under the conformance suite")
    ap.add_argument("--profile", default=os.environ.get("HYPOTHESIS_PROFILE") or "ci")
    ap.add_argument("--out", type=Path, default=Path("reports"))
    ap.add_argument("--jobs", default=os.environ.get("JOBS") or "auto")
    ap.add_argument("--phases", nargs="*", help="run only these phases (default: all)")
    ap.add_argument("--python", default=sys.executable,
                    help="the interpreter running the suite (another checkout's venv measures its strategies)")
    ap.add_argument("--suite-cwd", type=Path, default=Path.cwd(), help="where the suite runs")
    ap.add_argument("--whole-suite", action="store_true",
                    help="one phase: the whole suite as the --python checkout has it (a before/after baseline)")
    args = ap.parse_args(argv)
    source = _source_dir()
    build_dir = coverage_build(source)
    for gcda in build_dir.rglob("*.gcda"):
        gcda.unlink()  # counts start from zero on every run
    args.out.mkdir(parents=True, exist_ok=True)
    snap_dir = args.out / "coverage"
    snap_dir.mkdir(parents=True, exist_ok=True)
    if args.whole_suite:
        sdir = subprocess.run([args.python, "-c", "import harness.conformance.suite as s, os; "
                               "print(os.path.dirname(s.__file__))"], capture_output=True, text=True,
                              cwd=args.suite_cwd, check=True).stdout.strip()
        plan = [("whole_suite", [sdir], {})]
    else:
        plan = phases(args.phases)
    seen: set = set()
    by_family: dict[str, int] = {}
    lines: dict = {}
    for name, files, env in plan:
        t0 = time.perf_counter()
        rc = run_phase(files, env, build_dir, args.profile, args.jobs, args.python, args.suite_cwd)
        lines = snapshot(build_dir, source, snap_dir / "snapshot.json")
        now = {k for k, (c, _, _) in lines.items() if c > 0}
        by_family[name] = len(now - seen)
        seen |= now
        print(f"coverage: {name:32s} +{by_family[name]:5d} lines  ({len(seen)}/{len(lines)}, "
              f"{time.perf_counter() - t0:.0f} s{', suite exit ' + str(rc) if rc else ''})", file=sys.stderr)
    snapshot(build_dir, source, snap_dir / "snapshot.json", html=snap_dir / "index.html")
    with_derived = any(name == "derived" for name, _, _ in plan)
    models, pres = pinned_models_and_pre_types(derived=with_derived)
    sources = {f: (source / f).read_text(encoding="utf-8", errors="replace").splitlines() for f in FILES}
    unreach = unreachable(lines, models, pres, sources)
    why = {(u["file"], u["line"]): u["reason"] for u in unreach}
    entered = {fn for (c, _, fn) in lines.values() if c}
    report = {**summarise(lines), **decisions(snap_dir / "snapshot.json"), "profile": args.profile, "files": list(FILES), "derived": with_derived,
              "unreachable": unreach, "by_family": by_family,
              "uncovered": [{"file": f, "line": n, "function": fn,
                             "reason": why.get((f, n)) or uncovered_reason(sources.get(f, []), n, fn, fn in entered, source)}
                            for (f, n), (c, _, fn) in sorted(lines.items()) if not c]}
    report["uncovered_by_reason"] = dict(sorted(Counter(u["reason"] for u in report["uncovered"]).items(),
                                                key=lambda kv: -kv[1]))
    (args.out / "coverage.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    s = report
    print(f"coverage: lines {s['lines_covered']}/{s['lines_total']} "
          f"({100 * s['lines_covered'] / max(1, s['lines_total']):.1f} %), branches "
          f"{s['branches_covered']}/{s['branches_total']} "
          f"({100 * s['branches_covered'] / max(1, s['branches_total']):.1f} %), decisions "
          f"{s['decisions_covered']}/{s['decisions_total']} "
          f"({100 * s['decisions_covered'] / max(1, s['decisions_total']):.1f} %); "
          f"{len(report['unreachable'])} lines unreachable "
          f"with the {'pinned and derived' if with_derived else 'pinned'} vocabs; "
          f"{args.out / 'coverage.json'}, {snap_dir / 'index.html'}", file=sys.stderr)
    return 0


