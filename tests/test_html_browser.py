"""conformance.html in a real browser: headless Chromium lays out a report with findings,
and every finding's text is drawn as token spans on both sides (``make test-slow``; the
Makefile installs Debian's ``chromium`` for it)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from harness.reports.diff import Divergence
from harness.reports.html import html_page
from harness.reports.finding import Finding

pytestmark = pytest.mark.slow


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("chromium is not installed: make test-slow installs it (apt-get install chromium)")
    return exe


def _report(tmp_path):
    findings = [
        Finding("encode", "qwen2", "QWEN2", False, False, "a\xa0b 77", Divergence(1, 1, True, (64, 4102, 65, 220, 2277),
                (64, 220, 65, 220, 22, 22)), "faulty", {64: b"a", 4102: b"\xc2\xa0", 65: b"b", 220: b" ", 2277: b"77"},
                port_pieces={64: b"a", 220: b" ", 65: b"b", 22: b"7"}, cases=12, signature=("space/non-ascii",),
                spans=(((0, 1), (1, 3), (3, 4), (4, 5), (5, 7)), ((0, 1), (1, 1), (3, 4), (4, 5), (5, 6), (6, 7)))),
        Finding("decode", "llama-spm", "n/a (llama)", False, False, "", Divergence(0, 0, True, tuple(b" Hi"), tuple(b"Hi")),
                "faulty", {}, (1, 6324), remove_special=False, unparse_special=False, signature=("normal", "drops space")),
    ]
    report = {"run": {"pin": "0c1e57098", "port": "faulty"}, "totals": {"divergences": 2},
              "cells": [{"vocab": "qwen2", "check": "encode", "flags": "plain", "cases": 9, "divergences": 1,
                         "outcome": "divergence"}], "port_errors": []}
    path = tmp_path / "conformance.html"
    path.write_text(html_page(report, findings), encoding="utf-8")
    return path


def test_chromium_draws_each_findings_token_spans(tmp_path):
    page = _report(tmp_path)
    dom = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert "llama.cpp tokenizer conformance" in dom
    # The text finding: llama.cpp's 5 tokens above the port's 6, the first divergent one marked on each.
    rows = re.findall(r"<div class=\"toks\">(.*?)</div>", dom)
    assert len(rows) == 2
    assert [r.count("class=\"tok ") for r in rows] == [5, 6]
    assert all(len(re.findall(r'class="tok[^"]*\bfirst\b', r)) == 1 for r in rows)
    shot = tmp_path / "shot.png"
    subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,900",
                    f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120)
    assert shot.stat().st_size > 20_000  # a page was laid out and painted, not a blank


def test_chromium_shows_one_section_per_cause_with_its_findings_folded(tmp_path):
    """Three causes (two diagnosed, one unexplained), five findings: one section each, the
    smallest example drawn, the others folded under it."""
    d = Divergence(1, 1, True, (64, 4102, 65), (64, 220, 65))
    nbsp = (("char_read_as_space:'\\xa0'", "U+00A0 read as a space (U+0020); llama.cpp: its own bytes", "r1"),)
    digits = (("digits_single", "digits split one by one; llama.cpp: \\p{N}{1,3}", "r2"),)
    findings = [Finding("encode", v, "QWEN2", False, p, t, d, "faulty", {}, cases=n, explanations=e,
                        spans=(((0, 1), (1, 3), (3, 4)), ((0, 1), (1, 2), (2, 3))))
                for v, p, t, n, e in (("qwen2", False, "a\xa0b", 9, nbsp), ("gpt-2", True, "\xa0\xa0b", 4, nbsp),
                                      ("qwen2", True, "x\xa0", 2, nbsp), ("gpt-2", False, "1234", 7, digits),
                                      ("qwen2", False, "zz", 1, ()))]
    report = {"run": {"pin": "0c1e57098", "port": "faulty"}, "totals": {"causes": 3}, "cells": [],
              "port_errors": []}
    page = tmp_path / "conformance.html"
    page.write_text(html_page(report, findings), encoding="utf-8")
    dom = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    sections = re.findall(r'<div class="cause" id="cause-(C\d)"><h3>(.*?)</h3>(.*?)(?=<div class="cause"|</body>)',
                          dom, re.S)
    assert [(cid, h.split(" · ")[1][:11]) for cid, h, _ in sections] == [
        ("C1", "U+00A0 read"), ("C2", "digits spli"), ("C3", "unexplained")]
    nbsp_section = sections[0][2]
    assert nbsp_section.count('<div class="finding"') == 3 and "2 more finding(s) of this cause" in nbsp_section
    assert "x\\xa0" in nbsp_section.split("<details>")[0]  # the smallest example comes first, outside the fold


def test_chromium_lays_out_the_scoreboard_closest_port_first_each_cell_linked(tmp_path):
    from harness.reports.scoreboard import html_page as board_page

    def row(name, outcomes, causes):
        return {"name": name, "language": "rust", "package": name, "version": "1",
                "causes": [{"id": f"C{i}", "title": "t", "example": {}, "vocabs": [], "checks": [], "cases": 1}
                           for i in range(causes)],
                "run": {"report": f"scoreboard/{name}/conformance.html"},
                "vocabs": {v: {"outcome": o, "checks": {"encode": o}, "causes": []} for v, o in outcomes.items()}}
    vocabs = {"llama-spm": "SPM", "qwen2": "BPE", "gpt-2": "BPE", "bert-bge": "WPM"}
    page = tmp_path / "scoreboard.html"
    page.write_text(board_page({"header": {"pin": "0c1e570", "engine": "abc1234"}, "vocabs": list(vocabs),
                                "vocab_types": vocabs,
                                "ports": [row("down", dict.fromkeys(vocabs, "error"), 0),
                                          row("far", dict.fromkeys(vocabs, "divergence"), 30),
                                          row("near", {**dict.fromkeys(vocabs, "divergence"), "qwen2": "pass"}, 2)]}),
                    encoding="utf-8")
    dom = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    grid = dom[dom.index('<table id="grid">'):]
    header = re.findall(r'<a href="#(\w+)">', grid[:grid.index("</tr>")])
    assert header == ["near", "far", "down"]
    cells = re.findall(r'<td class="([\w-]+)"[^>]*><a href="scoreboard/(\w+)/conformance.html">', grid)
    assert len(cells) == 12 and cells[:3] == [("divergence", "near"), ("divergence", "far"), ("error", "down")]
    summary = dom[dom.index('<table id="summary">'):dom.index('<table id="grid">')]
    assert "BPE (2)" in summary and "1/2 pass, 1 DIV; 0 causes" in summary
    shot = tmp_path / "board.png"
    subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,900",
                    f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120)
    assert shot.stat().st_size > 20_000
