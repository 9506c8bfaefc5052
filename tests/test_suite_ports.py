"""The suite run in process against ports: llama.cpp itself, every mutant, a port with
several bugs, unsupported flags, a crash, a broken encode, a Python adapter, a port error,
and the scheduling of each vocab's tests on one worker."""

from __future__ import annotations

import shlex
import sys
import textwrap
from pathlib import Path

import pytest

import harness.conformance.suite
import tests.ports.mutants
from harness.conformance.needs import require
from tests.support.suite import CACHE, mutant_port, run_suite

pytest_plugins = ["pytester"]
SUITE = Path(harness.conformance.suite.__file__).parent


# --- the suite, run in process -----------------------------------------------------------------
def _run_suite(pytester, monkeypatch, port, vocabs, nodes, profile="ci"):
    return run_suite(pytester, monkeypatch, port, vocabs, nodes, profile)


def _node(check: str, vocab: str, flags: str | None = None) -> str:
    """A suite node id, e.g. ``_node("encode", "qwen2", "plain")``."""
    test = {"piece": "pieces"}.get(check, check)
    params = vocab if flags is None else f"{vocab}-{flags}"
    return f"{SUITE / f'test_{test}.py'}::test_{test}[{params}]"


def _cells(report) -> dict:
    return {(c["vocab"], c["check"], c["flags"]): c for c in report["cells"]}


@pytest.mark.reference
def test_llama_cpp_port_gives_zero_divergences(pytester, monkeypatch):
    nodes = [str(SUITE / f"test_{t}.py") for t in ("golden", "known", "encode", "decode", "pieces")]
    result, report = _run_suite(pytester, monkeypatch, "llama.cpp", "qwen2 llama-spm", nodes)
    assert result.ret == 0, result.stdout.str()[-3000:]
    assert report["divergences"] == [] and report["port_errors"] == []
    cells = _cells(report)
    assert cells[("qwen2", "golden", "plain")]["cases"] > 0
    for vocab in ("qwen2", "llama-spm"):
        for flags in ("plain", "parse", "add", "add_parse"):
            for check in ("known", "encode", "decode"):
                assert cells[(vocab, check, flags)]["outcome"] == "pass"
                assert cells[(vocab, check, flags)]["cases"] >= 30
        assert cells[(vocab, "piece", "parse")]["cases"] == report["vocabs"][vocab]["piece"]["cases"] // 2


# mutant -> the catalogue variant that names its one cause (harness/diagnosis). The mutant's \s
# is [\t\n\v\f\r ], java.util.regex's: Character.isWhitespace's table (no U+00A0, U+2007,
# U+202F) fits its first cases too, but the port parts from llama.cpp on the rest of the class
# (U+2000, U+3000 ...), which that table keeps, so it is too narrow to name it.
MUTANT_DIAGNOSIS = {"ignore_merges_missing": "ignore_merges_missing", "ascii_whitespace": "whitespace_java",
                    "digit_grouping": "digits_single", "case_sensitive_contractions": "contractions_case_sensitive",
                    "bos_qwen2": "add_bos_forced", "control_split": "specials_always_parsed",
                    "lstrip_ignored": "lstrip_ignored", "nfc_input": "nfc_input",
                    "decode_drops_leading_space": "decode_strips_leading_space", "platform_unicode": "unicode_newer"}
# mutant -> the checks and flag combination where its bug shows
MUTANT_NODES = {"bos_qwen2": (("known", "encode"), "add"), "lstrip_ignored": (("known", "encode"), "parse"),
                "decode_drops_leading_space": (("decode",), "plain")}


#: make test runs each mutant (and the port with three bugs) under the ci profile (the known
#: texts and 200 + 30 generated ones catch, shrink and name every bug already), make test-slow
#: under conformance (make conformance's default budget, 20 times as many texts).
PROFILES = [pytest.param("ci", id="ci"), pytest.param("conformance", id="conformance", marks=pytest.mark.slow)]


@pytest.mark.reference
@pytest.mark.parametrize("mutant", sorted(tests.ports.mutants.MUTANTS))
@pytest.mark.parametrize("profile", PROFILES)
def test_suite_catches_mutant_with_a_short_text(pytester, monkeypatch, profile, mutant):
    from tests.ports.mutants import mutant_vocab
    vocab = require(mutant_vocab, mutant)
    vid = Path(vocab).stem.removeprefix("ggml-vocab-") if vocab.endswith(".gguf") else vocab
    checks, flags = MUTANT_NODES.get(mutant, (("known", "encode"), "plain"))
    result, report = _run_suite(pytester, monkeypatch, mutant_port(mutant), vocab,
                                [_node(c, vid, flags) for c in checks], profile=profile)
    assert result.ret == 1, result.stdout.str()[-3000:]
    found = [d["text"] or d["reference_ids"] for d in report["divergences"]]
    causes = [(c["id"], c["diagnosis"], c["title"]) for c in report["causes"]]
    print(f"{mutant}: caught with {found!r}; causes {causes}")
    assert found and min(len(t) for t in found) <= 8, found
    assert "DIVERGENCE" in result.stdout.str() and "-m harness diff" in result.stdout.str()
    # One bug, one cause, named by the rule it breaks.
    assert [c[1] for c in causes] == [MUTANT_DIAGNOSIS[mutant]], causes
    example = report["causes"][0]["example"]
    assert len(example["text"]) <= 8 if example["text"] else len(example["reference_ids"]) <= 4, example


def _faulty(tmp_path, *options: str) -> str:
    """PORT command of tests/ports/faulty_port.py with these options."""
    script = Path(__file__).parent / "ports" / "faulty_port.py"
    return " ".join([shlex.quote(sys.executable), shlex.quote(str(script)), "--vocab {vocab}", *options])


@pytest.mark.reference
@pytest.mark.parametrize("profile", PROFILES)
def test_a_port_with_three_bugs_gets_all_three_reported_shrunk_in_one_run(pytester, monkeypatch, tmp_path, profile):
    from harness.inputs.pool import FAST_EXAMPLES
    port = _faulty(tmp_path, "--bugs digits,nbsp,decode-space")
    result, report = _run_suite(pytester, monkeypatch, port, "llama-bpe",
                                [_node("encode", "llama-bpe", "plain"), _node("decode", "llama-bpe", "plain")],
                                profile=profile)
    assert result.ret == 1
    encode = [d["text"] for d in report["divergences"] if d["check"] == "encode"]
    decode = [d for d in report["divergences"] if d["check"] == "decode"]
    print("encode findings:", encode, "decode findings:", [d["reference_ids"] for d in decode])
    assert any(any(c.isdigit() for c in t) and "\xa0" not in t for t in encode), encode
    assert any("\xa0" in t for t in encode), encode
    assert decode and all(len(d["reference_ids"]) <= 8 for d in decode)
    assert all(len(t) <= 8 for t in encode), encode
    # Three bugs, three causes, each named by the rule it breaks.
    # (On llama-bpe, digits cut apart and digits split one by one give the same ids until a
    # special token with a digit is parsed; these plain-flag tests cannot tell them apart.)
    names = sorted(c["diagnosis"] for c in report["causes"])
    assert names[:2] == ["char_read_as_space", "decode_strips_leading_space"], report["causes"]
    assert names[2:] in (["digits_encoded_apart"], ["digits_single"]), report["causes"]
    # The whole budget ran although the first example already diverged (at least the fast
    # phase's texts: 200 under ci, make test; 500 of its 4,000 under conformance, make test-slow).
    cells = _cells(report)
    assert cells[("llama-bpe", "encode", "plain")]["cases"] >= min(500, FAST_EXAMPLES[profile])
    assert cells[("llama-bpe", "decode", "plain")]["cases"] >= min(500, FAST_EXAMPLES[profile])


@pytest.mark.reference
def test_a_port_that_cannot_express_a_flag_gets_unsupported_and_everything_else_checked(
        pytester, monkeypatch, tmp_path):
    port = _faulty(tmp_path, "--declare parse_special=true", "--refuse remove_special=true")
    nodes = [_node("golden", "llama-bpe"), _node("encode", "llama-bpe", "plain"),
             _node("encode", "llama-bpe", "parse"), _node("known", "llama-bpe", "add_parse"),
             _node("decode", "llama-bpe", "add"), _node("decode", "llama-bpe", "parse")]
    result, report = _run_suite(pytester, monkeypatch, port, "llama-bpe", nodes)
    assert result.ret == 0, result.stdout.str()[-3000:]
    cells = _cells(report)
    assert cells[("llama-bpe", "golden", "plain")]["outcome"] == "pass"
    assert cells[("llama-bpe", "golden", "plain")]["cases"] > 0
    assert cells[("llama-bpe", "encode", "plain")]["outcome"] == "pass"
    for key in [("encode", "parse"), ("known", "add_parse")]:         # declared in info
        assert cells[("llama-bpe", *key)]["outcome"] == "unsupported", key
        assert cells[("llama-bpe", *key)]["cases"] == 0
    decode_add = cells[("llama-bpe", "decode", "add")]                  # refused per request
    assert (decode_add["outcome"], decode_add["cases"]) == ("unsupported", 0) and decode_add["unsupported"] > 0
    assert cells[("llama-bpe", "decode", "parse")]["outcome"] == "pass"
    assert report["divergences"] == [] and report["port_errors"] == []
    result.assert_outcomes(passed=3, skipped=3)
    assert "unsupported" in result.stdout.str()


@pytest.mark.reference
def test_a_vocab_the_port_cannot_load_is_unsupported_with_its_words_and_nothing_else_is_asked(
        pytester, monkeypatch, tmp_path):
    log = tmp_path / "requests"
    port = _faulty(tmp_path, "--cannot-load llama-bpe", f"--requests-log {log}")
    nodes = [_node("golden", "llama-bpe"), _node("encode", "llama-bpe", "plain"),
             _node("decode", "llama-bpe", "plain"), _node("piece", "llama-bpe", "plain")]
    result, report = _run_suite(pytester, monkeypatch, port, "llama-bpe", nodes)
    cells = _cells(report)
    for check in ("golden", "encode", "decode", "piece"):
        cell = cells[("llama-bpe", check, "plain")]
        assert (cell["outcome"], cell["cases"], cell["port_error_cases"]) == ("unsupported", 0, 0), cell
        assert "cannot load this vocab" in cell["unsupported_reason"], cell
        assert "ValueError: cannot load ggml-vocab-llama-bpe.gguf" in cell["unsupported_reason"], cell
    asked = log.read_text().split()
    assert sorted(set(asked)) == ["decode", "encode", "info", "piece"] and len(asked) <= 16, asked


@pytest.mark.reference
def test_a_port_that_refuses_each_op_in_its_own_words_is_still_asked_each_request(pytester, monkeypatch, tmp_path):
    log = tmp_path / "requests"
    port = _faulty(tmp_path, "--refuse info,decode", f"--requests-log {log}")
    nodes = [_node("encode", "llama-bpe", "plain"), _node("decode", "llama-bpe", "plain")]
    result, report = _run_suite(pytester, monkeypatch, port, "llama-bpe", nodes)
    cells = _cells(report)
    assert cells[("llama-bpe", "encode", "plain")]["outcome"] == "pass"
    decode = cells[("llama-bpe", "decode", "plain")]
    assert decode["outcome"] == "unsupported" and "cannot load" not in decode["unsupported_reason"], decode
    assert log.read_text().split().count("decode") >= decode["unsupported"] > 0


@pytest.mark.reference
def test_a_port_that_crashes_once_is_restarted_and_the_test_goes_on(pytester, monkeypatch, tmp_path):
    port = _faulty(tmp_path, "--crash-after 20", f"--crash-once {tmp_path / 'crashed'}")
    nodes = [_node("golden", "llama-bpe"), _node("encode", "llama-bpe", "plain")]
    result, report = _run_suite(pytester, monkeypatch, port, "llama-bpe", nodes)
    assert result.ret == 1
    [err] = report["port_errors"]
    assert "crashed (exit code 9)" in err["message"] and "crashing on purpose" in err["message"]
    assert [r["note"].split(" after")[0] for r in report["restarts"]] == ["restart 1 (1/3 quick in a row)"]
    assert [d["note"].split(" after")[0] for d in report["port_deaths"]] == ["crashed"]
    cells = _cells(report)
    golden, encode = cells[("llama-bpe", "golden", "plain")], cells[("llama-bpe", "encode", "plain")]
    # the crash costs its one case in the vocab's first test (its encode: the encodes run first);
    # the port is started again and the check goes on
    assert encode["outcome"] == "port error" and encode["not_checked"] == 0 and encode["cases"] > 19
    assert encode["port_error_cases"] == 1 and report["restarts"][0]["test"].endswith("test_encode[llama-bpe-plain]")
    assert golden["outcome"] == "pass" and golden["cases"] >= 30


@pytest.mark.reference
def test_a_port_whose_encode_is_always_wrong_still_gets_decode_checked(pytester, monkeypatch, tmp_path):
    port = _faulty(tmp_path, "--bugs extra-token,fffd")
    nodes = [_node("encode", "llama-bpe", "plain"), _node("decode", "llama-bpe", "plain")]
    result, report = _run_suite(pytester, monkeypatch, port, "llama-bpe", nodes)
    assert result.ret == 1
    cells = _cells(report)
    assert cells[("llama-bpe", "encode", "plain")]["divergent"] == cells[("llama-bpe", "encode", "plain")]["cases"]
    decode = [d for d in report["divergences"] if d["check"] == "decode"]
    assert decode, "U+FFFD replacement of invalid UTF-8 must be reported"
    ref, port_bytes = bytes.fromhex(decode[0]["reference_bytes_hex"]), bytes.fromhex(decode[0]["port_bytes_hex"])
    assert "\ufffd".encode() in port_bytes and "\ufffd".encode() not in ref


@pytest.mark.reference
def test_a_python_adapter_is_checked_in_process_with_its_unsupported_flags(pytester, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent.parent))  # tests.ports, from the repo root
    nodes = [_node("encode", "llama-bpe", "plain"), _node("decode", "llama-bpe", "plain"),
             _node("decode", "llama-bpe", "parse")]
    result, report = _run_suite(pytester, monkeypatch, "py:tests.ports.faulty_adapter:load", "llama-bpe", nodes,
                                profile="conformance")
    assert result.ret == 1
    cells = _cells(report)
    assert cells[("llama-bpe", "decode", "plain")]["outcome"] == "pass"
    parse = cells[("llama-bpe", "decode", "parse")]
    assert (parse["outcome"], parse["cases"]) == ("unsupported", 0) and parse["unsupported"] >= 500
    found = [d["text"] for d in report["divergences"]]
    assert found and all("\xa0" in t and len(t) <= 8 for t in found), found


@pytest.mark.reference
def test_port_error_is_reported_and_other_vocabs_continue(pytester, monkeypatch, tmp_path):
    script = tmp_path / "flaky_port.py"
    script.write_text(textwrap.dedent("""
        import json, sys
        from reference.inproc import InProcessReference
        if "qwen2" in sys.argv[1]:
            print("cannot load qwen2 here", file=sys.stderr); sys.exit(5)
        ref = InProcessReference.load(sys.argv[1])
        for line in sys.stdin:
            r = json.loads(line)
            if r["op"] == "encode":
                out = {"ids": ref.encode(r["text"], r["add_special"], r["parse_special"])}
            elif r["op"] == "decode":
                out = {"bytes_hex": ref.decode(r["ids"], r["remove_special"], r["unparse_special"]).hex()}
            elif r["op"] == "info":
                out = {"n_vocab": ref.n_vocab}
            else:
                out = {"bytes_hex": ref.token_to_piece(r["id"], r["special"]).hex()}
            print(json.dumps(out), flush=True)
    """))
    port = f"{shlex.quote(sys.executable)} {script} {{vocab}}"
    result, report = _run_suite(pytester, monkeypatch, port, "qwen2 gpt-2",
                                [_node("encode", v, f) for v in ("gpt-2", "qwen2") for f in ("plain", "add")])
    assert result.ret == 1
    result.assert_outcomes(passed=2, errors=2)
    [err] = report["port_errors"]  # one root cause, counted once although two tests hit it
    assert err["vocab"] == "qwen2" and "cannot load qwen2 here" in err["message"] and len(err["tests"]) == 2
    assert report["vocabs"]["gpt-2"]["encode"]["cases"] > 0 and report["divergences"] == []
    assert _cells(report)[("qwen2", "encode", "plain")]["outcome"] == "port error"


@pytest.mark.reference
def test_loadgroup_keeps_each_vocab_on_one_worker(pytester, monkeypatch):
    import re
    monkeypatch.setenv("LLAMA_CONFORMANCE_CACHE", str(CACHE))
    require(__import__("reference.build", fromlist=["artifacts"]).artifacts)
    monkeypatch.setenv("PORT", "llama.cpp")
    monkeypatch.setenv("VOCABS", "gpt-2 qwen2")
    result = pytester.runpytest_subprocess(str(SUITE / "test_known.py"), "-p", "harness.conformance.plugin",
                                           "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider",
                                           f"--conformance-reports={pytester.path / 'r'}")
    assert result.ret == 0, result.stdout.str()[-2000:]
    ran = re.findall(r"\[(gw\d)\] \[[ \d%]+\] PASSED \S+::test_known\[([\w.-]+)-\w+\]", result.stdout.str())
    assert len(ran) == 8, result.stdout.str()[-2000:]
    workers = {vocab: {w for w, v in ran if v == vocab} for _, vocab in ran}
    assert set(workers) == {"gpt-2", "qwen2"} and all(len(w) == 1 for w in workers.values()), workers


def test_a_vocabs_encodes_run_before_its_decodes_and_pieces(pytester, monkeypatch):
    """On its worker a vocab's checks run encodes first, so the causes they confirm (a token's
    type, a prefix space) are known to its decode and piece tests (harness.engine.causes)."""
    import re
    from harness.conformance.suite.conftest import CHECK_ORDER
    monkeypatch.setenv("LLAMA_CONFORMANCE_CACHE", str(CACHE))
    require(__import__("reference.build", fromlist=["artifacts"]).artifacts)
    monkeypatch.setenv("VOCABS", "gpt-2 qwen2")
    result = pytester.runpytest_subprocess(str(SUITE), "-p", "harness.conformance.plugin", "--collect-only",
                                           "-q", "-p", "no:cacheprovider")
    items = re.findall(r"::(test_\w+)\[(gpt-2|qwen2)\b", result.stdout.str())
    for vocab in ("gpt-2", "qwen2"):
        checks = [t for t, v in items if v == vocab]
        assert set(checks) == set(CHECK_ORDER), result.stdout.str()[-2000:]
        assert sorted(checks, key=CHECK_ORDER.index) == checks, checks


def test_an_empty_profile_variable_means_the_default(monkeypatch):
    """make exports unset variables as empty strings: HYPOTHESIS_PROFILE= must not crash the suite."""
    from hypothesis import settings as hsettings

    from harness.inputs.strategies import register_profiles
    current = hsettings._current_profile
    try:
        monkeypatch.setenv("HYPOTHESIS_PROFILE", "")
        assert register_profiles() == "ci"
        monkeypatch.setenv("HYPOTHESIS_PROFILE", "nope")
        with pytest.raises(Exception, match="use one of ci, conformance, thorough"):
            register_profiles()
    finally:
        hsettings.load_profile(current)
