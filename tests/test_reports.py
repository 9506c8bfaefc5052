"""The reports room: the diff is pure and right, findings render as text, JSON and HTML,
the table shows every outcome, and repro commands round-trip any text."""

from __future__ import annotations

import json
import shlex

from hypothesis import given
from hypothesis import strategies as st

from harness.diffcmd import parse_args
from harness.reports.cells import summary_table
from harness.reports.diff import Divergence, first_byte_divergence, first_divergence, first_index, text_offset
from harness.reports.escape import render_token
from harness.reports.finding import Finding
from harness.reports.render import text_block
from harness.reports.repro import repro_command


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
    from harness.reports.html import html_page
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
