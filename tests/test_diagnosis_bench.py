"""The diagnosis benchmark's scoring on a synthetic run (no port built, no engine run): a
hand-written conformance.json and label file for a toy vocab whose token types come from a
GGUF written here, each cause's expected bug and verdict derived in the comments; malformed
label files; ``--from-reports`` through the CLI; the README rewrite; and the run step's
arguments (a fixed seed, the label file's vocabs, a replay store of its own)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from harness import cli
from harness.errors import HarnessError
from harness.reports.diagnosis_bench import README_BEGIN, README_END, readme_block, replace_block
from harness.scoreboard import diagnosis_bench as bench
from harness.scoreboard.labels import LabelError, TokenTypes, first_bug, load_labels, matches
from harness.scoreboard.ports import Port
from harness.tokenizer.gguf import GGUFValueType as T
from harness.tokenizer.gguf.writer import write_gguf

REPO = Path(__file__).resolve().parent.parent

# Token types of the toy vocab, by id (GGUF codes): 0 unknown, 1 control, 2-3 normal, 4 byte, 5 user_defined.
TYPES = [2, 3, 1, 1, 6, 4]

LABELS = {"port": "toy", "package": "toy", "version": "1", "vocabs": ["toy"], "bugs": [
    {"id": "nbsp-split", "vocabs": ["toy"], "diagnoses": ["char_read_as_space"],
     "match": {"checks": ["encode"], "text": "\\xa0"}},
    {"id": "fullwidth-punct", "vocabs": ["toy"], "diagnoses": [],
     "match": {"checks": ["encode"], "text": "[\\p{P}--\\p{ASCII}]"}},   # V1 set difference
    {"id": "byte-piece", "vocabs": ["toy"], "diagnoses": ["byte_piece_raw"],
     "match": {"checks": ["piece"], "token_types": ["byte"]}},
    {"id": "control-decode", "vocabs": ["toy"], "diagnoses": [], "match": {"checks": ["decode"], "ids": [1]}},
    # Not on the run's vocabs: not a true bug, and it gets no cause although its match holds on every encode.
    {"id": "elsewhere", "vocabs": ["other"], "diagnoses": [], "match": {"checks": ["encode"]}},
]}


def enc(text: str, ref=(7,), port=(8,), flags="plain") -> dict:
    return {"check": "encode", "vocab": "toy", "flags": flags, "text": text,
            "reference_ids": list(ref), "port_ids": list(port)}


def ids(check: str, given) -> dict:
    return {"check": check, "vocab": "toy", "flags": "plain", "text": "", "reference_ids": list(given),
            "port_ids": list(given), "reference_bytes_hex": "61", "port_bytes_hex": "62"}


FINDINGS = [enc("a\xa0b"),            # 0: nbsp-split
            dict(enc("a\uff08b"), triggers=["\uff08"]),  # 1: fullwidth-punct (U+FF08 is punctuation, not ASCII)
            ids("piece", [4]),        # 2: byte-piece (token 4 is a byte token)
            ids("piece", [4]),        # 3: byte-piece
            ids("piece", [2]),        # 4: no bug (token 2 is normal)
            ids("decode", [2, 3]),    # 5: no bug
            enc("zz"),                # 6: no bug (the 'elsewhere' bug is not on this run's vocabs)
            ids("decode", [1, 2]),    # 7: control-decode, by ids
            enc("q\xa0", flags="add")]  # 8: nbsp-split

# (id, diagnosis, findings, the example first) -> expected (bug, verdict, mixed)
CAUSES = [("C1", "char_read_as_space", [0], ("nbsp-split", "right", [])),
          ("C2", None, [1], ("fullwidth-punct", "unexplained", [])),
          ("C3", "nfc_input", [2], ("byte-piece", "wrong", [])),          # a diagnosis not the bug's
          ("C4", "byte_piece_raw", [3, 4], ("byte-piece", "right", [])),  # finding 4 matches no bug: not mixed
          ("C5", None, [5], (None, "unexplained", [])),
          ("C6", "piece_is_decode", [6], (None, "wrong", [])),            # a diagnosis on no bug
          # two bugs in one cause: mixed (its bugs in file order)
          ("C7", None, [7, 8], ("control-decode", "unexplained", ["nbsp-split", "control-decode"]))]


def report() -> dict:
    causes = [{"id": c, "title": f"title of {c}", "diagnosis": d, "example": FINDINGS[f[0]], "findings": f,
               "cases": 2, "cells": []} for c, d, f, _ in CAUSES]
    return {"schema": 3, "run": {"wall_s": 3.5, "vocabs": "toy"}, "causes": causes, "divergences": FINDINGS,
            "cells": [{"vocab": "toy", "check": "encode", "flags": "plain", "cases": 10}]}


@pytest.fixture
def toy(tmp_path) -> dict:
    """The label file, a report dir holding the run, and the toy vocab's token types from its GGUF."""
    gguf = tmp_path / "toy.gguf"
    write_gguf(gguf, {"tokenizer.ggml.model": (T.STRING, "llama"),
                      "tokenizer.ggml.tokens": (T.ARRAY, [b"<unk>", b"<s>", b"a", b"b", b"<0x41>", b"<u>"], T.STRING),
                      "tokenizer.ggml.token_type": (T.ARRAY, TYPES, T.INT32)})
    (tmp_path / "labels").mkdir()
    (tmp_path / "labels" / "toy.json").write_text(json.dumps(LABELS))
    (tmp_path / "runs" / "toy").mkdir(parents=True)
    (tmp_path / "runs" / "toy" / "conformance.json").write_text(json.dumps(report()))
    opened = []

    def resolve(name):
        opened.append(name)
        return gguf
    return {"dir": tmp_path, "labels": load_labels(tmp_path / "labels" / "toy.json"),
            "types": TokenTypes(resolve=resolve), "opened": opened, "gguf": gguf}


def test_each_cause_goes_to_its_bug_with_its_verdict(toy):
    row = bench.score_report(toy["labels"], report(), toy["types"])
    got = {a["cause"]: (a["bug"], a["verdict"], a["mixed"]) for a in row["assignment"]}
    assert got == {c: want for c, _d, _f, want in CAUSES}
    assert toy["opened"] == ["toy"]  # the GGUF is read once, and only for the token_types match


def test_the_counts_of_the_row(toy):
    row = bench.score_report(toy["labels"], report(), toy["types"], wall_s=3.5)
    # 4 true bugs (not 'elsewhere'), all found; 5 causes on them (byte-piece has 2): 1.25 per bug;
    # named: nbsp-split (C1), byte-piece (C4); wrong: C3, C6; unexplained: C2, C5, C7; unmatched: C5, C6.
    assert {k: row[k] for k in ("true_bugs", "bugs_found", "causes", "causes_per_found_bug", "named_correctly",
                                "wrong_diagnoses", "unexplained", "unmatched", "mixed", "wall_s")} == {
        "true_bugs": 4, "bugs_found": 4, "causes": 7, "causes_per_found_bug": 1.25, "named_correctly": 2,
        "wrong_diagnoses": 2, "unexplained": 3, "unmatched": 2, "mixed": 1, "wall_s": 3.5}
    assert {b["id"]: (b["causes"], b["named"]) for b in row["bugs"]} == {
        "nbsp-split": (["C1"], True), "fullwidth-punct": (["C2"], False),
        "byte-piece": (["C3", "C4"], True), "control-decode": (["C7"], False)}


def test_an_unexplained_cause_that_names_its_bugs_set_counts_as_characterised(toy):
    """C2's finding diverges by itself on U+FF08, which the bug's set (non-ASCII punctuation)
    holds: the bug is characterised. With "a" among the triggers the set is not the bug's, and
    a cause with no triggers and no piece tokens is uncharacterised."""
    row = bench.score_report(toy["labels"], report(), toy["types"])
    by = {a["cause"]: (a["characterised"], a["names_set"]) for a in row["assignment"]}
    assert by["C2"] == (True, True) and by["C5"] == (False, False) and by["C7"] == (False, False)
    assert (row["named_or_characterised"], row["uncharacterised"]) == (3, 2)
    wrong = copy.deepcopy(report())
    wrong["divergences"][1] = dict(wrong["divergences"][1], triggers=["\uff08", "a"])
    row = bench.score_report(toy["labels"], wrong, toy["types"])
    assert next(a for a in row["assignment"] if a["cause"] == "C2")["names_set"] is False
    assert (row["named_or_characterised"], row["uncharacterised"]) == (2, 2)


def test_a_bug_no_cause_matches_is_a_true_bug_not_found(toy):
    r = report()
    r["causes"] = [c for c in r["causes"] if c["id"] in ("C5", "C6")]
    row = bench.score_report(toy["labels"], r, toy["types"])
    assert (row["true_bugs"], row["bugs_found"], row["causes_per_found_bug"], row["unmatched"]) == (4, 0, None, 2)


def test_the_match_keys_one_by_one(toy):
    bugs = {b.id: b for b in toy["labels"].bugs}
    both = enc("a\xa0\uff08")
    assert first_bug(toy["labels"].bugs[:2], both, toy["types"]) == "nbsp-split"  # the first in file order
    # an example showing two bugs goes to the one its cause's diagnosis names, if one does
    swapped = toy["labels"].bugs[1::-1]  # fullwidth-punct (no diagnosis) first, then nbsp-split
    assert first_bug(swapped, both, toy["types"]) == "fullwidth-punct"
    assert first_bug(swapped, both, toy["types"], "char_read_as_space") == "nbsp-split"
    assert first_bug(swapped, both, toy["types"], "a_diagnosis_of_neither") == "fullwidth-punct"
    assert not matches(bugs["nbsp-split"], ids("decode", [1]), toy["types"])      # checks
    ranged = copy.deepcopy(LABELS)
    ranged["bugs"] = [{"id": "r", "vocabs": ["toy"], "diagnoses": [],
                       "match": {"id_range": [3, 5], "flags": ["add"], "vocabs": ["toy"]}}]
    path = toy["dir"] / "labels" / "toy.json"
    path.write_text(json.dumps(ranged))
    bug = load_labels(path).bugs[0]
    assert matches(bug, enc("x", ref=[1], port=[5], flags="add"), toy["types"])   # the port's id 5 is in range
    assert not matches(bug, enc("x", ref=[1], port=[6], flags="add"), toy["types"])
    assert not matches(bug, enc("x", ref=[1], port=[5], flags="plain"), toy["types"])
    assert not matches(bug, dict(enc("x", ref=[4], port=[4], flags="add"), vocab="other"), toy["types"])
    # edits: from llama.cpp's bytes to the port's, as the engine's piece signature names them
    spaced = dict(ranged, bugs=[{"id": "s", "vocabs": ["toy"], "diagnoses": [],
                                 "match": {"checks": ["decode"], "edits": ["leading space added"]}}])
    path.write_text(json.dumps(spaced))
    bug = load_labels(path).bugs[0]
    assert matches(bug, dict(ids("decode", [1]), reference_bytes_hex="497473", port_bytes_hex="20497473"), toy["types"])
    assert not matches(bug, dict(ids("decode", [1]), reference_bytes_hex="e2", port_bytes_hex="efbfbd"), toy["types"])


def test_golden_and_known_findings_are_encode_checks(toy):
    bug = toy["labels"].bugs[0]
    assert matches(bug, dict(enc("a\xa0"), check="golden"), toy["types"])
    assert matches(bug, dict(enc("a\xa0"), check="known"), toy["types"])


@pytest.mark.parametrize("change, message", [
    (lambda d: d["bugs"][1].pop("match"), r"bugs\[1\]: missing key 'match'"),
    (lambda d: d.pop("vocabs"), r"missing key 'vocabs'"),
    (lambda d: d["bugs"][0]["match"].update(text="[a-"), r"bugs\[0\] \(nbsp-split\)\.match\.text: '\[a-' is not a regex"),
    (lambda d: d["bugs"][0]["match"].update(texts="a"), r"bugs\[0\] \(nbsp-split\)\.match: unknown key\(s\) 'texts'"),
    (lambda d: d["bugs"][2]["match"].update(token_types=["bytes"]), r"match\.token_types: unknown value\(s\) 'bytes'"),
    (lambda d: d["bugs"][3]["match"].update(ids=["1"]), r"match\.ids must be a list of token ids"),
    (lambda d: d["bugs"][3]["match"].update(edits=["space added"]), r"match\.edits: unknown value\(s\) 'space added'"),
    (lambda d: d["bugs"][3]["match"].update(id_range=[5, 2]), r"match\.id_range must be \[lo, hi\]"),
    (lambda d: d["bugs"][3].update(match={}), r"bugs\[3\] \(control-decode\)\.match must be a non-empty object"),
    (lambda d: d["bugs"][3].update(id="nbsp-split"), r"bug id\(s\) 'nbsp-split' used twice"),
    (lambda d: d.update(port="toys"), r"key 'port' is 'toys'; it must be the file's name, 'toy'"),
])
def test_a_malformed_label_file_names_the_file_and_the_key(tmp_path, change, message):
    data = copy.deepcopy(LABELS)
    change(data)
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(data))
    with pytest.raises(LabelError, match=rf"^{tmp_path}/toy\.json: .*{message}") as e:
        load_labels(path)
    assert isinstance(e.value, HarnessError)


def test_a_label_file_that_is_not_json_names_the_file(tmp_path):
    (tmp_path / "toy.json").write_text("{")
    with pytest.raises(LabelError, match=rf"{tmp_path}/toy\.json: cannot read the label file"):
        load_labels(tmp_path / "toy.json")


def test_from_reports_through_the_cli_writes_json_and_md(toy, monkeypatch, capsys):
    monkeypatch.setattr(bench, "TokenTypes", lambda: toy["types"])
    out, d = toy["dir"] / "out", toy["dir"]
    code = cli.main(["diagnosis-bench", "--from-reports", str(d / "runs"), "--labels", str(d / "labels"),
                     "--out", str(out), "--ports", "toy"])
    assert code == 0
    result = json.loads((out / "diagnosis-bench.json").read_text())
    assert [r["port"] for r in result["ports"]] == ["toy"] and result["ports"][0]["wall_s"] == 3.5
    assert (result["total"]["bugs_found"], result["total"]["causes_per_found_bug"]) == (4, 1.25)
    md = (out / "diagnosis-bench.md").read_text()
    assert "| C7 | control-decode | (none) | unexplained (mixed: findings of nbsp-split, control-decode) |" in md
    assert "- `byte-piece`: C3, C4 (named correctly" in md
    assert "| toy | 4 | 4 | 7 | 1.25 | 2 | 3 | 2 | 3 | 2 | 2 | 1 | 0 | 3.5 |" in capsys.readouterr().out


def test_a_port_without_a_report_is_a_row_with_the_reason(toy):
    row = bench.score_dir(toy["labels"], toy["dir"] / "runs" / "missing", toy["types"])
    assert row["failure"].startswith(f"{toy['dir']}/runs/missing/conformance.json: cannot read")
    assert (row["true_bugs"], row["bugs_found"], row["causes"]) == (4, 0, 0)


def test_unknown_ports_name_the_labelled_ones(toy, capsys):
    code = bench.main(["--from-reports", "x", "--labels", str(toy["dir"] / "labels"), "--ports", "nope"])
    assert code == 2 and "no label file for port(s) nope" in capsys.readouterr().err
    assert "labelled ports: toy" in str(pytest.raises(HarnessError, bench.label_files, toy["dir"] / "labels", ["nope"]).value)


def test_the_readme_section_is_rewritten_between_the_markers(toy, monkeypatch):
    monkeypatch.setattr(bench, "TokenTypes", lambda: toy["types"])
    d = toy["dir"]
    assert bench.main(["--from-reports", str(d / "runs"), "--labels", str(d / "labels"), "--out", str(d)]) == 0
    readme = d / "README.md"
    readme.write_text(f"before\n{README_BEGIN}\nNot run yet.\n{README_END}\nafter\n")
    assert bench.main(["--readme", str(readme), "--out", str(d)]) == 0
    text = readme.read_text()
    assert text.startswith(f"before\n{README_BEGIN}\n") and text.endswith(f"{README_END}\nafter\n")
    assert "Not run yet" not in text and "| **total** | 4 | 4 | 7 | 1.25 |" in text
    assert text == f"before\n{readme_block(json.loads((d / 'diagnosis-bench.json').read_text()))}\nafter\n"
    with pytest.raises(HarnessError, match="x.md: no diagnosis-bench markers"):
        replace_block("no markers", "block", where="x.md")


def test_the_repository_readme_has_the_markers_once():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert text.count(README_BEGIN) == 1 and text.count(README_END) == 1
    assert text.index("## Port scoreboard") < text.index(README_BEGIN) < text.index(README_END)


def test_a_run_gets_the_fixed_seed_the_labels_vocabs_an_empty_store_and_no_adapter_check(toy, monkeypatch):
    seen = {}

    def fake_build_and_run(port, pdir, opts, checks=True):
        seen.update(seed=bench.os.environ["CONFORMANCE_SEED"], store=bench.os.environ["LLAMA_CONFORMANCE_REPLAY"],
                    vocabs=opts.vocabs, keyword=opts.keyword, pdir=pdir, checks=checks)
        pdir.mkdir(parents=True)
        return {"build": {"ok": True}, "run": {"exit_code": 1, "wall_s": 2.0}, "failure": ""}
    monkeypatch.setattr(bench, "build_and_run", fake_build_and_run)
    monkeypatch.delenv("CONFORMANCE_SEED", raising=False)
    port = Port("toy", "go", "toy", "1", None, "build.sh", "serve --vocab {vocab}", toy["dir"])
    args = bench.parse_args(["--out", str(toy["dir"] / "out")])
    pdir = bench.run_port(port, toy["labels"], Path(args.out), args)
    assert seen == {"seed": "1", "store": str(pdir / "replay"), "vocabs": ["toy"],
                    "keyword": "not test_crosscheck", "pdir": toy["dir"] / "out" / "diagnosis-bench" / "toy", "checks": False}  # causes only: no adapter or chat check
    assert "CONFORMANCE_SEED" not in bench.os.environ  # restored after the run
    steps = json.loads((pdir / "steps.json").read_text())
    assert steps["run"]["report"] == "diagnosis-bench/toy/conformance.html"


def test_a_cause_on_an_adapter_effect_is_the_adapter_s_counted_apart(toy, tmp_path):
    """C6 (piece_is_decode on a text no bug matches) is unmatched and wrong; with an adapter
    effect labelled for it (the adapter answers pieces through decode), it is the adapter's:
    right by that effect's diagnoses, and out of the package's causes and wrong diagnoses."""
    labels = json.loads((toy["dir"] / "labels" / "toy.json").read_text())
    labels["adapter_effects"] = [{"id": "piece-via-decode", "vocabs": ["toy"], "diagnoses": ["piece_is_decode"],
                                  "match": {"text": "^zz$"}}]
    path = tmp_path / "more" / "toy.json"
    path.parent.mkdir()
    path.write_text(json.dumps(labels))
    row = bench.score_report(load_labels(path), report(), toy["types"])
    (c6,) = [a for a in row["assignment"] if a["cause"] == "C6"]
    assert (c6["bug"], c6["adapter"], c6["verdict"]) == (None, "piece-via-decode", "right")
    assert (row["causes"], row["adapter_causes"], row["wrong_diagnoses"], row["unmatched"]) == (6, 1, 1, 1)
