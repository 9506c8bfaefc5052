"""The scoreboard without any real port library: the adapters' flag mapping, the corpus
sample, the report reader and the three renderers on synthetic results (the protocol
server the adapters use is tests/test_protocol.py).

None of this needs transformers, torch or llama-cpp-python; the real run is
``make scoreboard``.
"""

from __future__ import annotations

import json

import pytest

from harness.errors import HarnessError
from harness.scoreboard.hf import HFBackend
from harness.scoreboard.llama_cpp_python import LlamaCppPythonBackend
from harness.engine.shrink import shrink_text
from harness.reports.scoreboard import (Cell, anchor, cell_from_json, html_page, json_text, markdown,
                                        minimal_examples, window_rows)
from harness.scoreboard.results import fill_from_report, load_report, settle
from harness.scoreboard.sample import chunks, sample


# --- the adapters' flag mapping, over fake library objects -------------------------------------

class FakeHF:
    def __len__(self):
        return 5

    def __call__(self, text, **kw):
        self.kw = kw
        return {"input_ids": [1, 2]}

    def decode(self, ids, **kw):
        self.kw = kw
        return "é"


@pytest.mark.parametrize("remove, unparse, skip", [(False, False, True), (False, True, False),
                                                    (True, False, True), (True, True, True)])
def test_hf_decode_flag_mapping(remove, unparse, skip):
    tok = FakeHF()
    assert HFBackend(tok).decode([1], remove_special=remove, unparse_special=unparse) == "é".encode()
    assert tok.kw == {"skip_special_tokens": skip}


def test_hf_encode_flag_mapping():
    tok = FakeHF()
    backend = HFBackend(tok)
    assert backend.n_vocab == 5 and backend.encode("x", add_special=False, parse_special=True) == [1, 2]
    assert tok.kw == {"add_special_tokens": False, "split_special_tokens": False}


def test_llama_cpp_python_flag_mapping():
    class Llama:
        _model = None

        def n_vocab(self):
            return 9

        def tokenize(self, data, add_bos, special):
            return [len(data), add_bos, special]

        def detokenize(self, ids, special):
            return bytes([len(ids), special])

    backend = LlamaCppPythonBackend(Llama())
    assert backend.n_vocab == 9
    assert backend.encode("é", add_special=True, parse_special=False) == [2, True, False]
    assert backend.decode([1, 2], remove_special=False, unparse_special=True) == b"\x02\x01"


# --- shrinking and the corpus sample -----------------------------------------------------------

def test_the_engine_shrinker_finds_a_one_minimal_text():
    text = "lorem ipsum 7777 dolor 3333 sit"
    assert shrink_text(text, lambda t: "77" in t) == "77"
    assert shrink_text(text, lambda t: "7" in t and "3" in t) in ("73",)


class Enc:
    def __init__(self, bug: str | None):
        self.bug = bug

    def encode(self, text, *, add_special=False, parse_special=False):
        ids = [ord(c) for c in text] + [1] * add_special
        return [0 if self.bug and c == self.bug else i for c, i in zip(text, ids)] + ids[len(text):]


def test_sample_counts_and_shrinks_each_diverging_combination():
    texts = chunks("hello world. " * 40 + "x", 64)
    result = sample(Enc("x"), Enc(None), texts)
    assert result.compared == 4 * len(texts) and result.agreed == 4 * (len(texts) - 1)
    assert [e.text for e in result.examples] == ["x"] * 4
    assert result.examples[0].index == 0 and result.examples[0].port_ids == [0]
    clean = sample(Enc(None), Enc(None), texts)
    assert clean.agreed == clean.compared and clean.examples == []


# --- the report reader and the renderers on synthetic results ----------------------------------

def _div(vocab, check="encode", text="ab", add=False, parse=False):
    return {"check": check, "vocab": vocab, "add_special": add, "parse_special": parse, "text": text,
            "index": 1, "byte_offset": 1, "reference_ids": [5, 6, 7], "port_ids": [5, 8],
            "pieces": {"5": "61", "6": "62", "7": "7c"}, "repro": "python -m harness diff --vocab x"}


def _cells(vocab, check, outcomes):
    return [{"vocab": vocab, "check": check, "flags": f, "cases": 0 if o in ("unsupported", "not checked") else 9,
             "outcome": o} for f, o in zip(("plain", "parse", "add", "add_parse"), outcomes)]


def _decode_div(vocab, ids, remove=True, unparse=False):
    """A decode divergence as conformance.json has it: add/parse false, its own flags set."""
    return {"check": "decode", "vocab": vocab, "add_special": False, "parse_special": False,
            "remove_special": remove, "unparse_special": unparse, "text": "", "index": 1, "byte_offset": 1,
            "reference_ids": ids, "port_ids": ids, "reference_bytes_hex": b" a".hex(),
            "port_bytes_hex": b"a".hex(), "pieces": {}}


REPORT = {"schema": 3,
          "cells": (_cells("v1", "encode", ["pass", "pass", "pass", "divergence"])
                    + _cells("v1", "decode", ["pass", "pass", "divergence", "pass"])
                    + _cells("v2", "encode", ["pass"] * 4)
                    + _cells("v2", "decode", ["pass", "unsupported", "pass", "unsupported"])
                    + _cells("v5", "encode", ["pass"] * 4) + _cells("v5", "decode", ["pass"] * 4)
                    + _cells("v5", "piece", ["pass", "pass"])
                    + [{"vocab": "v1", "check": "golden", "flags": "plain", "cases": 10, "outcome": "divergence"},
                       {"vocab": "v3", "check": "golden", "flags": "plain", "cases": 0, "outcome": "port error"}]),
          "divergences": [_div("v1", "golden", "a b"), _div("v1", "encode", "ab", True, True),
                          _decode_div("v1", [5, 6, 7]), _decode_div("v1", [9])],
          "reference_checks": {"divergences": [_div("v1", "crosscheck", "zz")]},
          "port_errors": [{"vocab": "v3", "test": "t", "message": "port crashed"}],
          "vocabs": {"v1": {"golden": {"cases": 10, "divergences": 1},
                            "encode": {"cases": 500, "divergences": 1}},
                     "v2": {"golden": {"cases": 4, "divergences": 0},
                            "encode": {"cases": 800, "divergences": 0}},
                     "v3": {"encode": {"cases": 0, "divergences": 0, "port_errors": 1}},
                     "v5": {"encode": {"cases": 800, "divergences": 0}}}}


@pytest.fixture
def cells(tmp_path):
    path = tmp_path / "conformance.json"
    path.write_text(json.dumps(REPORT))
    report = load_report(path)
    out = [fill_from_report(Cell("hf", v), report) for v in ("v1", "v2", "v3")]
    out.append(settle(Cell("hf", "v4", status="unsupported", error="ValueError: mpt | not supported")))
    out.append(fill_from_report(Cell("hf", "v5"), report))
    return out


def test_report_reader_builds_cells(cells):
    v1, v2, v3, v4, v5 = cells
    assert (v1.status, v1.golden_text(), v1.generated_text()) == ("diverges", "9/10", "enc 3/4 dec 3/4")
    assert [d["text"] for d in v1.oracle] == ["zz"] and len(v1.divergences) == 4
    # Not every encode, decode and piece cell ran and passed: incomplete, not pass.
    assert (v2.status, v2.golden_text(), v2.generated_text()) == \
        ("incomplete", "4/4", "enc 4/4 dec 2/2 (2 unsupported)")
    assert v2.shortfall() == ["decode parse: unsupported", "decode add_parse: unsupported", "piece: no cell"]
    assert (v3.status, v3.error) == ("port-error", "port crashed")
    # Nothing ran for v3: its golden cell and both generated checks say so, not "4/4".
    assert (v3.golden_text(), v3.generated_text()) == ("port error", "enc not checked dec not checked")
    assert (v4.status, v4.golden_text()) == ("unsupported", "-")
    assert v5.status == "pass"
    # Decode's minimal example is the shortest id list, not the empty text every decode has.
    assert [d.get("reference_ids") if d["check"] == "decode" else d["text"] for d in minimal_examples(v1)] \
        == ["a b", "ab", [9]]


def test_decode_findings_carry_their_own_flags_ids_and_both_byte_strings(cells):
    from harness.reports.scoreboard import flags
    v1 = cells[0]
    assert v1.failing_combos(("decode",)) == [(True, False)]      # remove_special, unparse_special
    md = markdown(cells, ["hf"], ["v1"], META)
    assert "[decode] remove_special=True unparse_special=False: `ids [9]; llama.cpp bytes ' a'; port bytes 'a'`" in md
    assert "add_special=False parse_special=False" not in md.split("[decode]")[1].split("\n")[0]
    assert flags(_decode_div("v", [1], remove=False, unparse=True)) == "remove_special=False unparse_special=True"


def test_report_reader_refuses_a_report_missing_a_documented_key(tmp_path):
    bad = dict(REPORT, divergences=[{k: v for k, v in _div("v1").items() if k != "port_ids"}])
    (tmp_path / "c.json").write_text(json.dumps(bad))
    with pytest.raises(HarnessError, match="port_ids"):
        load_report(tmp_path / "c.json")
    with pytest.raises(HarnessError, match="cannot read"):
        load_report(tmp_path / "absent.json")


def test_window_rows_label_ids_with_reference_pieces():
    assert window_rows(_div("v")) == [(0, "5 'a'", "5 'a'"), (1, "6 'b'", "8"), (2, "7 '|'", "(end)")]


META = {"llama_cpp": "4df29be", "profile": "ci", "generated_at": "now"}


def test_markdown_table_and_sections(cells):
    md = markdown(cells, ["hf"], ["v1", "v2", "v3", "v4"], META)
    lines = md.splitlines()
    assert "| vocab | hf |" in lines and "|---|---|" in lines
    row = {line.split("|")[1].strip(): line for line in lines if line.startswith("| v")}
    assert "diverges" in row["v1"] and "golden 9/10" in row["v1"] and "gen enc 3/4 dec 3/4" in row["v1"]
    assert f"(#{anchor('hf', 'v1')})" in row["v1"] and "incomplete" in row["v2"]
    assert "unsupported" in row["v4"] and f"(#{anchor('hf', 'v4')})" in row["v4"]
    for v in ("v1", "v3", "v4"):
        assert f'<a id="{anchor("hf", v)}"></a>' in md
    assert "ValueError: mpt | not supported" in md  # the error, in a code block
    assert "| 2 | `7 '\\|'` | `(end)` |" in md  # a '|' piece does not break the table


def test_html_cells_link_to_their_diffs(cells):
    page = html_page(cells, ["hf"], ["v1", "v2", "v3", "v4"], META)
    for v in ("v1", "v2", "v3", "v4"):
        assert f"href='#{anchor('hf', v)}'" in page and f"id='{anchor('hf', v)}'" in page
    assert "<td class='diverges'>" in page and "<td class='unsupported'>" in page
    assert "mpt | not supported" in page and "&#x27;ab&#x27;" in page
    assert page.count("<tr class='at'>") == 3  # golden + encode + oracle diffs, divergence marked


def test_json_round_trips(cells):
    data = json.loads(json_text(cells, ["hf"], ["v1", "v2", "v3", "v4"], META))
    assert data["schema"] == 1 and data["ports"] == ["hf"]
    v1 = data["cells"][0]
    assert v1["status"] == "diverges" and v1["golden"] == {"cases": 10, "failed": 1}
    assert v1["generated"]["failing_combos"] == {"encode": [[True, True]], "decode": [[True, False]]}
    assert data["cells"][3]["error"].startswith("ValueError")
    assert [cell_from_json(c) for c in data["cells"]] == cells


def test_merge_re_renders_one_scoreboard_per_port(cells, tmp_path):
    from harness.scoreboard.run import main
    other = [Cell("lcp", c.vocab, status="pass", golden_cases=1, generated_examples=1,
                  combos={"encode": {"plain": "pass"}}) for c in cells]
    for name, group, port in (("a.json", cells, "hf"), ("b.json", other, "lcp")):
        (tmp_path / name).write_text(json_text(group, [port], ["v1", "v2", "v3", "v4"], META))
    assert main(["--merge", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--out", str(tmp_path)]) == 0
    md = (tmp_path / "scoreboard.md").read_text()
    assert "| vocab | hf | lcp |" in md and md.count("✅ pass") == 4 and md.count("🟡 incomplete") == 2  # v2: the table and its section
    assert json.loads((tmp_path / "scoreboard.json").read_text())["ports"] == ["hf", "lcp"]
