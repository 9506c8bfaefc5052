"""The conformance engine's own tests: the diff is pure and right, reports
render, external ports fail loudly, and the suite catches every mutant with a
shrunk text of a few characters (run in process on one vocab and one flag
combination each).
"""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

# Imported here (not first inside pytester's in-process runs) so the runs reuse
# one loaded libllama and one vocab cache instead of reloading per run.
# (pytester also forgets modules first imported inside a run; numpy cannot be re-imported.)
import numpy  # noqa: F401
import regex  # noqa: F401

import harness.conformance.checks  # noqa: F401
import tests.ports.mutants  # noqa: F401
import harness.conformance.plugin  # noqa: F401
import harness.conformance.suite  # noqa: F401
import harness.conformance.wordbpe  # noqa: F401
import harness.tokenizer.gguf.writer  # noqa: F401
import harness.tokenizer.pretypes  # noqa: F401
import reference.build  # noqa: F401
import reference.cli  # noqa: F401
import reference.inproc  # noqa: F401
import reference.vocabs  # noqa: F401
from harness.conformance import strategies
from harness.conformance.diff import Divergence, first_byte_divergence, first_divergence, first_index, text_offset
from harness.conformance.diffcmd import parse_args
from harness.conformance.ports import ExternalPort, split_command
from harness.conformance.report import Finding, render_token, repro_command, summary_table, text_block
from harness.errors import PortError, PortRequestError
from needs import require

pytest_plugins = ["pytester"]
SUITE = Path(harness.conformance.suite.__file__).parent
# pytester points HOME at a temporary directory; keep the real reference cache.
from suite_run import CACHE, mutant_port, run_suite  # noqa: E402



# --- diff ------------------------------------------------------------------------------------
@given(st.lists(st.integers(0, 5), max_size=8), st.lists(st.integers(0, 5), max_size=8))
def test_first_index_is_the_first_difference(a, b):
    i = first_index(a, b)
    if a == b:
        assert i is None
    else:
        assert a[:i] == b[:i] and (i == min(len(a), len(b)) or a[i] != b[i])


@given(st.lists(st.integers(0, 9), max_size=6))
def test_equal_lists_never_diverge(ids):
    assert first_divergence(ids, list(ids), text=b"xyz", reference_pieces=[b"x"] * len(ids)) is None


def test_byte_offset_sums_common_prefix_pieces():
    d = first_divergence([10, 11, 12], [10, 11, 13], text=b"Hello world!",
                         reference_pieces=[b"Hello", b" world", b"!"])
    assert (d.index, d.byte_offset, d.offset_exact) == (2, 11, True)


def test_byte_offset_skips_tokens_that_are_not_text():
    # BOS adds no text; SPM's piece " Hello" carries a space the text lacks.
    assert text_offset(b"Hello world", [b"<s>", b" Hello", b" world"]) == (11, False)
    assert text_offset(b"Hello", [b"", b" Hello"]) == (5, True)  # empty piece (control, special=False)
    assert text_offset(b"a  <mask>", [b"a", b"<mask>"]) == (9, True)  # LSTRIP swallowed spaces
    assert text_offset(b"Hello", [b"hello"]) == (5, True)  # WPM lowercases


def test_prefix_and_empty_lists_diverge_at_the_shorter_length():
    assert first_divergence([1, 2], [1, 2, 3]).index == 2
    assert first_divergence([], [7]).index == 0
    assert first_byte_divergence(b" a", b"a").index == 0


def test_window_is_i_minus_2_to_i_plus_5():
    d = Divergence(5, 0, True, tuple(range(20)), tuple(range(100, 120)))
    assert d.window() == (tuple(range(3, 11)), tuple(range(103, 111)))
    assert Divergence(0, 0, True, (1, 2), (3,)).window() == ((1, 2), (3,))


# --- report ----------------------------------------------------------------------------------
def _finding(check="encode", text="a\xa0b", **kw):
    div = kw.pop("div", Divergence(1, 1, True, (64, 4102, 65), (64, 9238)))
    return Finding(check, "qwen2", "QWEN2", False, True, text, div, "mutant:x",
                   {64: b"a", 4102: b"\xc2\xa0", 65: b"b", 9238: b"\xc2\xa0b"}, **kw)


def test_render_token_escapes_controls_spaces_marks_and_broken_utf8():
    assert render_token(b"a b") == "'a b'"
    assert render_token(b"\n\t\x00") == r"'\n\t\u0000'"
    assert render_token(b"\xc2\xa0\xe3\x80\x80") == r"'\u00a0\u3000'"
    assert render_token(b"\xe3\x80") == r"'\xe3\x80'"  # partial UTF-8 stays bytes
    assert render_token("é".encode()) == "'é'"
    assert render_token("e\u0301".encode()) == r"'e\u0301'"  # a lone mark would hide


def test_text_block_has_every_fact():
    block = text_block(_finding())
    for fact in ["vocab=qwen2", "pre_type=QWEN2", "parse_special=True", '"a\\xa0b"', "61 c2 a0 62",
                 "index 1", "byte 1", "4102 '\\u00a0'", "9238 '\\u00a0b'", "(end)",
                 "-m harness diff --vocab qwen2 --text-repr"]:
        assert fact in block, fact
    assert "> " in [line[:2] for line in block.splitlines()]


def test_finding_json_round_trip_and_schema():
    for f in [_finding(), _finding("decode", div=Divergence(0, 0, True, tuple(b" a"), tuple(b"a")),
                                   decoded_ids=(220, 64))]:
        obj = json.loads(json.dumps(f.to_json()))
        for key in ["vocab", "add_special", "parse_special", "text", "index", "byte_offset",
                    "reference_ids", "port_ids"]:
            assert key in obj
        assert Finding.from_json(obj) == f


def test_html_highlights_the_divergent_row_and_draws_both_segmentations():
    from harness.conformance.html_report import html_page
    f = _finding(spans=(((0, 1), (1, 3), (3, 4)), ((0, 1), (1, 4))))
    report = {"run": {"pin": "4df29be", "port": "mutant:x"}, "totals": {"divergences": 1},
              "cells": [{"vocab": "qwen2", "check": "encode", "flags": "parse", "cases": 3,
                         "divergences": 1, "outcome": "divergence"}], "port_errors": []}
    page = html_page(report, [f])
    assert "<tr class='div'><td>1</td>" in page and "4df29be" in page and "mutant:x" in page
    assert "href='#f-qwen2-encode-parse'" in page and "id='f-qwen2-encode-parse'" in page
    # llama.cpp's three tokens above the port's two, on the text's own characters; the first
    # divergent token (index 1) marked on both.
    assert page.count("class='tok first'") == 2 and page.count("class='tok t0'") == 3
    assert "<script src" not in page and "http" not in page.replace("http-equiv", "")


def _cell(vocab, check, flags, **counts):
    return dict(vocab=vocab, check=check, flags=flags, **counts)


def test_summary_table_has_a_row_per_flag_combination_and_every_outcome():
    table = summary_table([
        _cell("b", "golden", "plain", cases=46, divergences=0),
        _cell("a", "encode", "plain", cases=9, divergences=2, port_errors=1),
        _cell("a", "encode", "parse", cases=0, unsupported=0, unsupported_reason="port declares unsupported"),
        _cell("a", "encode", "add", cases=0),
        _cell("a", "encode", "add_parse", cases=5, unsupported=3, not_checked=2)])
    import re
    lines = [re.split(r" {2,}", line) for line in table.splitlines()]
    assert lines[0] == ["vocab", "flags", "golden", "encode"]
    rows = {(r[0], r[1]): r[2:] for r in lines[1:]}
    assert rows[("a", "plain")] == ["-", "9/2 !1"] and rows[("a", "parse")] == ["-", "unsupported"]
    assert rows[("a", "add")] == ["-", "not checked"] and rows[("a", "add_parse")] == ["-", "5/0 u3 ~2"]
    assert rows[("b", "plain")] == ["46/0", "-"]


@given(st.text())
def test_repro_command_round_trips_any_text(text):
    argv = shlex.split(repro_command("qwen2", text, True, True, "java -jar p.jar {vocab}",
                                     python=".venv/bin/python"))
    assert argv[:4] == [".venv/bin/python", "-m", "harness", "diff"]
    args = parse_args(argv[4:])
    assert (args.text, args.vocab, args.add_special, args.parse_special) == (text, "qwen2", True, True)
    assert args.port == "java -jar p.jar {vocab}"


# --- strategies --------------------------------------------------------------------------------
def test_strategies_all_is_checked_and_families_are_named():
    assert set(strategies.FAMILIES) <= set(strategies.__all__)
    for name in strategies.__all__:
        assert hasattr(strategies, name)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_family_makes_nonempty_text(data):
    family = data.draw(st.sampled_from(sorted(strategies.FAMILIES)))
    text = data.draw(strategies.FAMILIES[family])
    assert isinstance(text, str) and text and "\ud800" not in text


def test_families_shrink_to_the_interesting_character():
    full = settings(database=None, max_examples=1000, deadline=None)  # whatever the session's profile
    assert find(strategies.whitespace, lambda s: "\u3000" in s, settings=full) == "\u3000"
    # Contractions come one to four in a row; the shrinker may keep a minimal "'s" before it.
    found = find(strategies.contractions, lambda s: "'R" in s, settings=full)
    assert found.endswith("'Re") and set(found[:-3].split("'")) <= {"", "s"}, found
    assert len(find(strategies.latin, lambda s: any(0x300 <= ord(c) <= 0x36F for c in s), settings=full)) == 2


def test_materialise_glues_vocab_texts_and_specials():
    vt = strategies.VocabTexts(("he", "llo"), ("<s>",))
    r = strategies.Recipe(("a", strategies.VocabPiece(3), strategies.SpecialText(5, " ", "\n")), 2)
    assert strategies.materialise(r, vt) == "allo <s>\nallo <s>\n"
    assert len(strategies.materialise(strategies.Recipe(("ab",), 10**6), vt)) == strategies.MAX_CHARS
    assert len(strategies.materialise(strategies.Recipe(("x" * 50_000,), 3), vt)) == 50_000


# --- external ports ------------------------------------------------------------------------------
_FAKE = textwrap.dedent("""
    import json, sys, time
    mode = sys.argv[1]
    print("fake port starting for", sys.argv[2], file=sys.stderr, flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        if mode == "crash":
            print("boom: segfault-ish", file=sys.stderr, flush=True); sys.exit(3)
        if mode == "hang":
            time.sleep(60)
        if mode == "garbage":
            print("<html>not json", flush=True); continue
        if mode == "error":
            print(json.dumps({"error": "no"}), flush=True); continue
        if req["op"] == "encode":
            print(json.dumps({"ids": [len(req["text"]), int(req["add_special"])]}), flush=True)
        else:
            print(json.dumps({"bytes_hex": b"ok".hex()}), flush=True)
""")


@pytest.fixture
def fake_port(tmp_path):
    script = tmp_path / "fake_port.py"
    script.write_text(_FAKE)
    return lambda mode: f"{shlex.quote(sys.executable)} {script} {mode} {{vocab}}"


def test_external_port_speaks_the_protocol(fake_port):
    port = ExternalPort(fake_port("ok"), "/v/x y.gguf", n_vocab=7)
    try:
        assert port.encode("héllo", add_special=True) == [5, 1]
        assert port.decode([1, 2]) == b"ok" and port.token_to_piece(3, special=True) == b"ok"
        assert port.n_vocab == 7 and port.argv[-1] == "/v/x y.gguf"
    finally:
        port.close()


@pytest.mark.parametrize("mode,words", [("crash", "crashed (exit code 3)"), ("garbage", "garbage"),
                                        ("hang", "hung")])
def test_external_port_failures_are_port_errors_with_stderr(fake_port, mode, words):
    port = ExternalPort(fake_port(mode), "/v/x.gguf", timeout=1.5)
    with pytest.raises(PortError) as e:
        port.encode("a")
    assert words in str(e.value) and "fake port starting for /v/x.gguf" in e.value.stderr
    assert not isinstance(e.value, PortRequestError)
    with pytest.raises(PortError, match="down after an earlier error"):
        port.encode("b")
    port.close()


def test_an_error_answer_fails_one_request_and_the_port_keeps_serving(fake_port):
    port = ExternalPort(fake_port("error"), "/v/x.gguf", timeout=5)
    try:
        for text in ("a", "b"):
            with pytest.raises(PortRequestError, match="answered error 'no'"):
                port.encode(text)
        assert port.dead is None and port.proc.poll() is None
    finally:
        port.close()


def test_port_command_errors_name_the_fix():
    with pytest.raises(PortError, match="PORT is empty"):
        split_command("  ", "x.gguf")
    with pytest.raises(PortError, match="cannot start port"):
        ExternalPort("/no/such/binary {vocab}", "x.gguf")


def test_in_process_port_exception_is_a_port_error_naming_the_input():
    from harness.conformance.checks import VocabUnderTest

    class Ref:
        n_vocab = 5

        def encode(self, text, **flags):
            return [1]

    class Boom:
        def encode(self, text, **flags):
            raise KeyError("no merge")

    class OneSession:
        def port(self, vut):
            return Boom()

    vut = VocabUnderTest("v", Path("v.gguf"), "harness", Ref(), OneSession())
    with pytest.raises(PortError, match=r"raised KeyError: 'no merge' in encode\('a\\xa0'") as e:
        vut.check_encode("a\xa0", False, False)
    assert "Traceback" in e.value.stderr and "vocab v" in str(e.value)


# --- the plugin ------------------------------------------------------------------------------------
_PLUGIN_TESTS = """
from harness.conformance.diff import Divergence
from harness.conformance.hunt import Hunt
from harness.conformance.report import Finding

def _found(text):
    if "x" not in text:
        return None
    return Finding("encode", "v", "QWEN2", False, True, text, Divergence(1, 1, True, (1, 2), (1, 3)),
                   pieces={1: b"a", 2: b"b", 3: b"c"})

def test_a(request):
    h = Hunt("encode", "parse", _found, vocab="v", signature=lambda f: len(f.text))
    request.node.conformance_hunts = [h]
    for text in ["ab", "ax", "bx", "axx"]:
        h.case(text)
    h.finish()

def test_b(request):
    h = Hunt("encode", "plain", _found, vocab="v")
    request.node.conformance_hunts = [h]
    h.case("ab")
    h.finish()
"""


@pytest.mark.parametrize("workers", [[], ["-n", "1"]], ids=["inline", "xdist"])
def test_plugin_reports_what_workers_found(pytester, workers):
    pytester.makepyfile(test_x=_PLUGIN_TESTS)
    out = pytester.path / "r"
    args = ["-p", "harness.conformance.plugin", f"--conformance-reports={out}", *workers]
    result = (pytester.runpytest_subprocess if workers else pytester.runpytest_inprocess)(*args)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*conformance: (vocab, flags) x check*", "v * plain * 1/0*",
                                 "v * parse * 4/2*",
                                 "DIVERGENCE [[]encode[]] vocab=v pre_type=QWEN2*",
                                 "*2 distinct divergence(s) in 3 divergent case(s), 0 port error(s)*"])
    data = json.loads((out / "conformance.json").read_text(encoding="utf-8"))
    # Two signatures (text lengths 2 and 3): the first text of each, and how many cases share it.
    assert [(d["text"], d["cases"]) for d in data["divergences"]] == [("ax", 2), ("axx", 1)]
    assert data["vocabs"]["v"]["encode"]["cases"] == 5 and data["schema"] == 2
    cells = {c["flags"]: c for c in data["cells"]}
    assert (cells["parse"]["outcome"], cells["parse"]["divergent"]) == ("divergence", 3)
    assert cells["plain"]["outcome"] == "pass"
    assert "<tr class='div'><td>1</td>" in (out / "conformance.html").read_text(encoding="utf-8")


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


# mutant -> the checks and flag combination where its bug shows
MUTANT_NODES = {"bos_qwen2": (("known", "encode"), "add"), "lstrip_ignored": (("known", "encode"), "parse"),
                "decode_drops_leading_space": (("decode",), "plain")}


@pytest.mark.reference
@pytest.mark.parametrize("mutant", sorted(tests.ports.mutants.MUTANTS))
def test_suite_catches_mutant_with_a_short_text(pytester, monkeypatch, mutant):
    from tests.ports.mutants import mutant_vocab
    vocab = require(mutant_vocab, mutant)
    vid = Path(vocab).stem.removeprefix("ggml-vocab-") if vocab.endswith(".gguf") else vocab
    checks, flags = MUTANT_NODES.get(mutant, (("known", "encode"), "plain"))
    result, report = _run_suite(pytester, monkeypatch, mutant_port(mutant), vocab,
                                [_node(c, vid, flags) for c in checks], profile="conformance")
    assert result.ret == 1, result.stdout.str()[-3000:]
    found = [d["text"] or d["reference_ids"] for d in report["divergences"]]
    print(f"{mutant}: caught with {found!r}")
    assert found and min(len(t) for t in found) <= 8, found
    assert "DIVERGENCE" in result.stdout.str() and "-m harness diff" in result.stdout.str()


def _faulty(tmp_path, *options: str) -> str:
    """PORT command of tests/ports/faulty_port.py with these options."""
    script = Path(__file__).parent / "ports" / "faulty_port.py"
    return " ".join([shlex.quote(sys.executable), shlex.quote(str(script)), "--vocab {vocab}", *options])


@pytest.mark.reference
def test_a_port_with_three_bugs_gets_all_three_reported_shrunk_in_one_run(pytester, monkeypatch, tmp_path):
    port = _faulty(tmp_path, "--bugs digits,nbsp,decode-space")
    result, report = _run_suite(pytester, monkeypatch, port, "llama-bpe",
                                [_node("encode", "llama-bpe", "plain"), _node("decode", "llama-bpe", "plain")],
                                profile="conformance")
    assert result.ret == 1
    encode = [d["text"] for d in report["divergences"] if d["check"] == "encode"]
    decode = [d for d in report["divergences"] if d["check"] == "decode"]
    print("encode findings:", encode, "decode findings:", [d["reference_ids"] for d in decode])
    assert any(any(c.isdigit() for c in t) and "\xa0" not in t for t in encode), encode
    assert any("\xa0" in t for t in encode), encode
    assert decode and all(len(d["reference_ids"]) <= 8 for d in decode)
    assert all(len(t) <= 8 for t in encode), encode
    # The whole budget ran although the first example already diverged.
    cells = _cells(report)
    assert cells[("llama-bpe", "encode", "plain")]["cases"] >= 500
    assert cells[("llama-bpe", "decode", "plain")]["cases"] >= 500


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
def test_a_port_that_crashes_once_is_restarted_and_the_rest_runs(pytester, monkeypatch, tmp_path):
    port = _faulty(tmp_path, "--crash-after 20", f"--crash-once {tmp_path / 'crashed'}")
    nodes = [_node("golden", "llama-bpe"), _node("encode", "llama-bpe", "plain")]
    result, report = _run_suite(pytester, monkeypatch, port, "llama-bpe", nodes)
    assert result.ret == 1
    [err] = report["port_errors"]
    assert "crashed (exit code 9)" in err["message"] and "crashing on purpose" in err["message"]
    assert [r["note"].split(" after")[0] for r in report["restarts"]] == ["restart 1/3"]
    cells = _cells(report)
    golden, encode = cells[("llama-bpe", "golden", "plain")], cells[("llama-bpe", "encode", "plain")]
    assert golden["outcome"] == "port error" and golden["not_checked"] > 0 and golden["cases"] == 19
    assert encode["outcome"] == "pass" and encode["cases"] >= 30


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


def test_an_empty_profile_variable_means_the_default(monkeypatch):
    """make exports unset variables as empty strings: HYPOTHESIS_PROFILE= must not crash the suite."""
    from hypothesis import settings as hsettings

    from harness.conformance.strategies import register_profiles
    current = hsettings._current_profile
    try:
        monkeypatch.setenv("HYPOTHESIS_PROFILE", "")
        assert register_profiles() == "ci"
        monkeypatch.setenv("HYPOTHESIS_PROFILE", "nope")
        with pytest.raises(Exception, match="use one of ci, conformance, thorough"):
            register_profiles()
    finally:
        hsettings.load_profile(current)


# --- the fast random phase ----------------------------------------------------------------------
def test_fast_phase_texts_repeat_exactly_for_a_seed_and_differ_for_another():
    import random

    from harness.conformance.fastphase import fragment_pool, random_recipes
    vt = strategies.VocabTexts(("he", "llo", "wor"), ("<s>", "</s>"))

    def texts(seed, n=300):
        recipes = random_recipes(fragment_pool.__wrapped__(seed), random.Random(f"{seed}:t"))
        return [strategies.materialise(next(recipes), vt) for _ in range(n)]

    first = texts(0)
    assert first == texts(0)
    assert first != texts(1)
    assert len(set(first)) > 250  # cheap, but not a handful of texts over and over


def test_fast_phase_counts_passes_and_hands_divergences_to_the_hunt():
    from harness.conformance.fastphase import run_phase
    from harness.conformance.hunt import Hunt
    from harness.errors import PortUnsupported
    seen = []

    def run(text):
        seen.append(text)
        return _finding(text=text) if "x" in text else None

    h = Hunt("encode", "plain", run, vocab="v", signature=lambda f: "x")
    inputs = iter(["a", "xa", "b", "u", "xb"] * 100)
    answers = lambda batch: [PortUnsupported("no") if t == "u" else t for t in batch]
    used = run_phase(h, inputs, answers, lambda t, got: "x" not in t, count=500, seconds=None)
    assert used == 500 and h.tally.cases == 400 and h.tally.unsupported == 100  # 200 agree, 200 diverge
    assert h.tally.divergent == 200 and seen == ["xa", "xb"] * 100  # only divergent texts go through run
    tally = h._settle()
    assert [f.text for f in tally.findings] == ["xa"] and tally.findings[0].cases == 200


def test_budget_is_a_time_and_bad_ones_say_the_fix(monkeypatch):
    from harness.conformance.fastphase import parse_budget, time_share
    from harness.errors import HarnessError
    assert parse_budget("5m") == 300
    with pytest.raises(HarnessError, match="such as 300, 90s, 5m"):
        parse_budget("five minutes")
    monkeypatch.setenv("BUDGET", "2m")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    assert time_share(n_tests=10) == pytest.approx(120 * 2 * 0.6 / 10)
