"""The scoreboard's machinery on cheap ports (not the whole board; that is ``make scoreboard``):
port discovery from port.json, a failed build as that port's ``error`` while the board goes
on, the summary of a real engine run (tests/ports/faulty_port.py declared through a
port.json in a temporary ports tree), the grid's links, drift labels, and the README table
matching the checked-in snapshot docs/scoreboard.json."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from harness.conformance.needs import require
from harness.errors import HarnessError
from harness.reports.scoreboard import README_BEGIN, html_page, markdown, readme_block, replace_block
from harness.scoreboard import fresh, run as board
from harness.scoreboard.ports import discover, select
from harness.reports.cells import cell_outcome
from harness.scoreboard.summary import port_row, vocab_entry

REPO = Path(__file__).resolve().parent.parent


def _port(root: Path, language: str, name: str, *, build: str = "exit 0", serve: str | None = None,
          bundles: str | None = None) -> Path:
    d = root / language / name
    d.mkdir(parents=True)
    (d / "build.sh").write_text(f"#!/usr/bin/env bash\n{build}\n")
    faulty = shlex.quote(str(REPO / "tests" / "ports" / "faulty_port.py"))
    (d / "serve").write_text(f"#!/usr/bin/env bash\nexec {shlex.quote(sys.executable)} {faulty} {serve or ''} \"$@\"\n")
    (d / "serve").chmod(0o755)
    (d / "port.json").write_text(json.dumps({
        "name": name, "language": language, "package": f"pkg-{name}", "version": "1.0",
        "registry": "test", "bundles_llama_cpp": bundles, "summary": "a test port",
        "build": "build.sh", "serve": "serve --vocab {vocab}"}))
    return d


def test_every_port_in_the_repository_has_a_valid_manifest():
    ports = discover(REPO / "ports")
    assert len(ports) >= 8 and len({p.language for p in ports}) >= 4
    for p in ports:
        assert (p.directory / p.build).is_file() and (p.directory / p.serve.split()[0]).is_file(), p.name
        assert (p.directory / "README.md").is_file(), p.name


def test_a_manifest_without_a_key_names_the_file_and_the_key(tmp_path):
    d = _port(tmp_path, "go", "x")
    data = json.loads((d / "port.json").read_text())
    del data["bundles_llama_cpp"]
    (d / "port.json").write_text(json.dumps(data))
    with pytest.raises(HarnessError, match=r"go/x/port.json: missing key\(s\) 'bundles_llama_cpp'"):
        discover(tmp_path)


def test_unknown_port_names_list_the_known_ones(tmp_path):
    _port(tmp_path, "go", "x")
    with pytest.raises(HarnessError, match=r"unknown port\(s\) y: .*\(x\)"):
        select(discover(tmp_path), ["y"])


def test_check_and_vocab_outcomes_never_overstate():
    full = [{"vocab": "v", "check": c, "flags": "plain", "cases": 3}
            for c in ("golden", "known", "encode", "decode", "piece")]
    ok, diverged = full[2], dict(full[2], flags="add", divergent=1)
    assert cell_outcome(ok, ok) == "pass" and cell_outcome(ok, diverged) == "divergence"
    assert cell_outcome(dict(ok, port_errors=1), ok) == "port error" and cell_outcome() == "not checked"
    # The scoreboard asks the run's own outcome function: a check that diverged and raised is an error.
    both = full + [dict(diverged, errors=1)]
    assert vocab_entry("v", both, [])["checks"]["encode"] == "error" and vocab_entry("v", both, [])["outcome"] == "error"
    assert vocab_entry("v", full, [])["outcome"] == "pass"
    refused = full[:3] + [{"vocab": "v", "check": "decode", "flags": "plain", "unsupported": 2,
                           "unsupported_reason": "no remove_special"}, full[4]]
    entry = vocab_entry("v", refused, [])
    assert entry["outcome"] == "unsupported" and entry["checks"]["decode"] == "unsupported"
    assert "no remove_special" in entry["reason"]
    why = "port p cannot load this vocab (it answers info, encode, decode and piece alike): unsupported: no t5"
    unloadable = [{"vocab": "v", "check": c["check"], "flags": "plain", "unsupported_reason": why} for c in full]
    entry = vocab_entry("v", unloadable, [])  # every cell declared, none counted: still the port's refusal
    assert (entry["outcome"], entry["reason"]) == ("unsupported", "no t5"), entry
    crashed = full[:4] + [{"vocab": "v", "check": "piece", "flags": "plain", "cases": 1, "port_errors": 1}]
    assert vocab_entry("v", crashed, [])["outcome"] == "error"
    cause = {"id": "C1", "cells": [{"vocab": "v", "check": "encode", "flags": "plain"}]}
    assert vocab_entry("v", full, [cause])["outcome"] == "divergence"
    assert vocab_entry("w", full, [cause])["outcome"] == "not checked"


@pytest.mark.reference
def test_the_board_runs_a_port_on_the_engine_and_a_failed_build_is_that_ports_error(tmp_path, monkeypatch):
    """One vocab, encode and piece only, the ci profile: a port with the digits bug, a binding
    (its cause checked against an "older" pin that is the current one: not drift), and a port
    whose build fails."""
    from reference.build import artifacts
    from reference.lock import load
    require(artifacts)
    _port(tmp_path / "ports", "python", "digits", serve="--bugs digits")
    _port(tmp_path / "ports", "c", "binding", serve="--bugs digits", bundles="the pin itself")
    _port(tmp_path / "ports", "rust", "nocargo", build="echo 'build.sh: cargo not found' >&2; exit 1")
    monkeypatch.setenv("LLAMA_CONFORMANCE_REPLAY", str(tmp_path / "replay"))
    monkeypatch.setattr(board, "OLD_PIN", load().name)
    out = tmp_path / "reports"
    code = board.main(["--ports-root", str(tmp_path / "ports"), "--out", str(out), "--vocabs", "llama-spm",
                       "--jobs", "0", "--profile", "ci", "--budget", "5s", "--docs", str(tmp_path),
                       "--keyword", "test_encode and plain or test_pieces"])
    assert code == 0
    data = json.loads((out / "scoreboard.json").read_text())
    assert data["header"]["pin"] == load().name and data["header"]["machine"] and data["header"]["generated"]
    rows = {p["name"]: p for p in data["ports"]}
    assert list(rows) == ["binding", "digits", "nocargo"]
    digits = rows["digits"]["vocabs"]["llama-spm"]
    assert digits["outcome"] == "divergence" and digits["checks"]["encode"] == "divergence"
    assert digits["checks"]["piece"] == "pass" and digits["checks"]["decode"] == "not checked"
    [cause] = rows["digits"]["causes"]
    assert cause["id"] in digits["causes"] and cause["title"] and "-m harness diff --vocab llama-spm" in cause["repro"]
    assert cause["example"]["reference_ids"] != cause["example"]["port_ids"]
    assert (out / "scoreboard" / "digits" / "conformance.html").is_file()
    assert rows["digits"]["run"]["replayed_inputs"] == 0 and any((tmp_path / "replay" / "digits").iterdir())
    assert rows["binding"]["causes"][0]["drift"]["verdict"] == "not drift"
    assert "drift" not in cause
    failed = rows["nocargo"]["vocabs"]["llama-spm"]
    assert failed["outcome"] == "error" and "cargo not found" in failed["reason"]
    assert (out / "scoreboard" / "nocargo" / "build.log").read_text().strip() == "build.sh: cargo not found"
    html = (out / "scoreboard.html").read_text()
    assert "href='scoreboard/digits/conformance.html'" in html and "nocargo" in html
    assert "cargo not found" in (out / "scoreboard.md").read_text()
    # --no-run: the same board again from what the runs left (steps.json, conformance.json).
    (out / "scoreboard.json").unlink()
    assert board.main(["--ports-root", str(tmp_path / "ports"), "--out", str(out), "--vocabs", "llama-spm",
                       "--docs", str(tmp_path), "--no-run"]) == 0
    again = {p["name"]: p for p in json.loads((out / "scoreboard.json").read_text())["ports"]}
    assert {k: p["vocabs"] for k, p in again.items()} == {k: p["vocabs"] for k, p in rows.items()}


def test_renderers_and_readme_block_round_trip():
    board_ = {"header": {"pin": "p", "generated": "d", "machine": "m"}, "vocabs": ["v"],
              "ports": [{"name": "x", "language": "go", "package": "x", "version": "1",
                         "bundles_llama_cpp": "b1 (commit c)", "causes": [], "build": {"ok": True},
                         "run": {"report": "scoreboard/x/conformance.html"},
                         "vocabs": {"v": {"outcome": "pass", "checks": {}, "causes": []}}}]}
    assert "| v | pass |" in markdown(board_)
    assert "<a href='scoreboard/x/conformance.html'>pass</a>" in html_page(board_)
    block = readme_block(board_)
    text = f"a\n{README_BEGIN}\nold\n<!-- scoreboard:end -->\nb\n"
    new = replace_block(text, block)
    assert new.startswith("a\n" + block) and new.endswith("\nb\n") and "| x | go | x 1 | b1 | 1 pass | 0 |" in new
    with pytest.raises(HarnessError, match="no scoreboard markers"):
        replace_block("nothing", block)


def test_the_readme_table_is_generated_from_the_snapshot():
    code = board.main(["--check-readme", str(REPO / "README.md"), "--docs", str(REPO / "docs")])
    assert code == 0, "README.md's scoreboard table is stale: run `make scoreboard-readme`"


def test_the_snapshot_is_as_new_as_the_engine_code_it_summarises(capsys):
    # Every row ran on engine code (ENGINE_PATHS) and port files no later commit changed.
    code = board.main(["--check-fresh", "--docs", str(REPO / "docs"), "--ports-root", str(REPO / "ports")])
    assert code == 0, f"docs/scoreboard.json is stale: {capsys.readouterr().out}"


def test_every_port_on_the_board_answers_as_its_package_called_directly():
    # Issue 31: an adapter adds nothing. Each port has a direct program, and the snapshot's
    # adapter check found every one of its answers equal to serve's.
    rows = {r["name"]: r for r in json.loads((REPO / "docs" / "scoreboard.json").read_text(encoding="utf-8"))["ports"]}
    for port in discover(REPO / "ports"):
        assert port.direct, f"{port.name}: port.json has no 'direct' program"
        check = rows[port.name].get("adapter") or {}
        assert check.get("checked"), (f"{port.name}: no adapter check on the board ({check.get('why', 'not run')}); "
                                      f"run make scoreboard PORTS={port.name} CHECKS_ONLY=1 SNAPSHOT=1")
        assert check["equal"] == check["requests"], (port.name, [d for v in check["vocabs"] for d in v["differ"]][:2])


def test_a_port_the_board_did_not_run_reads_not_checked(tmp_path):
    _port(tmp_path / "ports", "go", "later")
    [port] = discover(tmp_path / "ports")
    args = board.parse_args(["--no-run", "--out", str(tmp_path / "out")])
    row = board.run_port(port, tmp_path / "out", ["v"], args)
    assert row["vocabs"]["v"]["outcome"] == "not checked" and "not run in this board" in row["vocabs"]["v"]["reason"]


def test_a_port_error_vocab_reads_the_ports_own_message():
    # The checks ran and the port failed: the board says what the port said, not "not run".
    cells = [{"vocab": "v", "check": c, "flags": "plain", "cases": 0, "port_errors": 1}
             for c in ("golden", "known", "encode", "decode", "piece")]
    report = {"cells": cells, "causes": [], "run": {}, "errors": [],
              "port_errors": [{"vocab": "v", "check": "decode", "flags": "plain", "cases": 40,
                               "message": "port exited (code 101) on {op: decode}",
                               "stderr": "thread 'main' panicked at src/token.rs:71:\nempty token list"}]}
    row = port_row({"name": "p"}, ["v", "w"], report)
    assert row["vocabs"]["v"]["outcome"] == "error"
    assert row["vocabs"]["v"]["reason"] == ("port error: port exited (code 101) on {op: decode} "
                                            "(stderr: empty token list)")
    assert row["vocabs"]["w"]["reason"].startswith("not run")  # another vocab's error is not its reason


def _git(root: Path, *argv: str) -> str:
    import subprocess
    return subprocess.run(["git", "-C", str(root), *argv], capture_output=True, text=True, check=True).stdout.strip()


def test_a_row_goes_stale_when_engine_code_or_its_port_changes_and_not_otherwise(tmp_path):
    import shutil
    repo = tmp_path / "repo"
    _port(repo / "ports", "go", "p")
    _port(repo / "ports", "go", "q")
    for path in ("harness/engine/causes.py", "harness/scoreboard/run.py", "harness/reports/scoreboard.py"):
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text("# v1\n")
    (repo / "pyproject.toml").write_text('[project]\nname = "h"\ndependencies = ["regex>=2024"]\n'
                                         '[tool.importlinter]\nlayers = []\n')
    _git(tmp_path, "init", "-q", str(repo))
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "one", "--allow-empty")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "engine")
    engine = _git(repo, "rev-parse", "--short", "HEAD")
    ports = discover(repo / "ports")
    snapshot = {"ports": [{"name": n, "run": {"engine": engine}} for n in ("p", "q")]}

    def change(path: str) -> list[str]:
        (repo / path).write_text((repo / path).read_text() + "# more\n")
        _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", f"change {path}")
        return fresh.stale_rows(snapshot, ports, repo)

    def edit_port_json(**keys) -> list[str]:
        path = repo / "ports/go/p/port.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **keys}))
        _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "port.json")
        return fresh.stale_rows(snapshot, ports, repo)

    assert fresh.stale_rows(snapshot, ports, repo) == []
    assert change("harness/scoreboard/run.py") == [] and change("harness/reports/scoreboard.py") == []
    (repo / "ports/go/p/direct").write_text("#!/bin/sh\n")
    (repo / "ports/go/p/Chat.java").write_text("class Chat {}\n")
    _git(repo, "add", "-A")
    assert change("ports/go/p/direct") == [] and change("ports/go/p/Chat.java") == []
    assert edit_port_json(direct="direct --vocab {vocab}", chat="chat") == []
    [why] = edit_port_json(serve="serve --fast --vocab {vocab}")
    assert why.endswith("ports/go/p/port.json: serve changed")

    def edit_pyproject(old: str, new: str) -> list[str]:
        path = repo / "pyproject.toml"
        path.write_text(path.read_text().replace(old, new))
        _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "pyproject.toml")
        return [w for w in fresh.stale_rows(snapshot, ports, repo) if w.startswith("q:")]

    # The chat renderer's package and the layers contract never judge a port; the engine's do.
    assert edit_pyproject('"regex>=2024"', '"regex>=2024", "jinja2==3.1.6"') == []
    assert edit_pyproject("layers = []", 'layers = ["harness.chat"]') == []
    [why] = edit_pyproject('"regex>=2024"', '"regex>=2025"')
    assert why.endswith("pyproject.toml: dependencies changed")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x", "--allow-empty")
    for row in snapshot["ports"]:
        row["run"]["engine"] = _git(repo, "rev-parse", "--short", "HEAD")
    [why] = change("ports/go/p/build.sh")
    assert why.startswith("p: engine ") and "change ports/go/p/build.sh" in why
    assert [w.split(":")[0] for w in change("harness/engine/causes.py")] == ["p", "q"]
    dirty = {"ports": [{"name": "p", "run": {"engine": engine + "+"}}]}
    assert fresh.stale_rows(dirty, ports, repo) == ["q: not on the board", f"p: its row records engine {engine}+"]
    shutil.rmtree(repo)


def test_a_chat_column_goes_stale_when_chat_code_or_the_ports_chat_program_changes(tmp_path, capsys):
    """The chat column records its check's commit; chat code (the check, its causes, the
    harness renderer they re-render with) or the port's chat program changed since makes it
    stale, and the fix named is the checks alone (CHECKS_ONLY); engine-only code does not."""
    import shutil
    repo = tmp_path / "repo"
    _port(repo / "ports", "go", "p")
    for path in ("harness/engine/chatcauses.py", "harness/chat/render.py", "harness/scoreboard/run.py",
                 "ports/go/p/chat"):
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text("# v1\n")
    _git(tmp_path, "init", "-q", str(repo))
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "one")
    head = _git(repo, "rev-parse", "--short", "HEAD")
    ports = discover(repo / "ports")

    def change(path: str, chat: dict | None) -> list[str]:
        (repo / path).write_text((repo / path).read_text() + "# more\n")
        _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", f"change {path}")
        return fresh.stale_rows({"ports": [{"name": "p", "run": {"engine": head}, "chat": chat}]}, ports, repo)

    assert change("harness/scoreboard/run.py", {"commit": head}) == []
    assert change("ports/go/p/build.sh", None)[0].startswith("p: engine ")  # the engine row's, as before
    head = _git(repo, "rev-parse", "--short", "HEAD")
    assert change("harness/scoreboard/run.py", {"commit": head}) == []
    [why] = change("harness/chat/render.py", {"commit": head})
    assert why.startswith(f"p: chat check on {head}, and 1 later commit") and "render.py" in why
    [why] = change("ports/go/p/chat", {"commit": _git(repo, "rev-parse", "--short", "HEAD~1")})
    assert "change ports/go/p/chat" in why
    assert change("harness/engine/chatcauses.py", {"exit_code": 1}) == ["p: its chat check records no commit"]
    snapshot = repo / "docs" / "scoreboard.json"
    snapshot.parent.mkdir()
    snapshot.write_text(json.dumps({"ports": [{"name": "p", "run": {"engine": _git(repo, "rev-parse", "--short", "HEAD")},
                                               "chat": {"commit": head}}]}))
    assert fresh.check_fresh(snapshot, repo / "ports") == 1
    assert 'make scoreboard PORTS="p" CHECKS_ONLY=1 SNAPSHOT=1' in capsys.readouterr().out
    shutil.rmtree(repo)


def test_snapshot_of_some_ports_refreshes_their_rows_and_keeps_the_others(tmp_path):
    old = {"header": {"pin": "p1"}, "vocabs": ["v"],
           "ports": [{"name": "a", "run": {"engine": "e1"}}, {"name": "b", "run": {"engine": "e1"}}]}
    (tmp_path / "scoreboard.json").write_text(json.dumps(old))
    new = {"header": {"pin": "p1", "wall_s": 3.0}, "vocabs": ["v"], "ports": [{"name": "b", "run": {"engine": "e2"}},
                                                                               {"name": "c", "run": {"engine": "e2"}}]}
    out = board.merged(new, tmp_path / "scoreboard.json", ["c", "b", "a"])
    assert [(r["name"], r["run"]["engine"]) for r in out["ports"]] == [("c", "e2"), ("b", "e2"), ("a", "e1")]
    assert out["header"]["refreshed"] == ["b", "c"] and out["header"]["wall_s"] is None
    with pytest.raises(HarnessError, match="without PORTS="):
        board.merged(dict(new, header={"pin": "p2"}), tmp_path / "scoreboard.json", [])


def test_the_html_board_puts_the_closest_ports_first_and_groups_vocabs_by_type():
    def row(name, outcomes, causes):
        return {"name": name, "language": "go", "package": name, "version": "1", "causes": [{"id": f"C{i}", "title": "t", "example": {}, "vocabs": [], "checks": [], "cases": 1} for i in range(causes)],
                "run": {"report": f"scoreboard/{name}/conformance.html"},
                "vocabs": {v: {"outcome": o, "checks": {}, "causes": []} for v, o in outcomes.items()}}
    page = html_page({"header": {"pin": "p", "engine": "abc1234"}, "vocabs": ["s", "b"],
                      "vocab_types": {"s": "SPM", "b": "BPE"},
                      "ports": [row("broken", {"s": "error", "b": "error"}, 0),
                                row("many", {"s": "divergence", "b": "divergence"}, 9),
                                row("few", {"s": "divergence", "b": "unsupported"}, 1)]})
    grid = page[page.index("<table id='grid'>"):]
    assert grid.index(">few<") < grid.index(">many<") < grid.index(">broken<")
    assert "SPM (1)" in page and "0/1 pass, 1 DIV; 0 causes" in page and "engine abc1234" in page
    assert grid.index(">SPM<") < grid.index(">s<") < grid.index(">BPE<") < grid.index(">b<")  # in the vocabs' order
    assert "href='scoreboard/few/conformance.html'" in grid and "href='#few'" in grid


def test_each_cause_carries_an_upstream_note_with_the_rules_source_line(tmp_path):
    from harness.scoreboard.summary import cause_entry
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "llama-vocab.cpp").write_text(
        "int x;\nint32_t llama_vocab::impl::token_to_piece(int t) const {\n    token_to_piece(t);\n}\n")
    cause = {"id": "C1", "title": "piece drops a space", "diagnosis": "d", "cases": 3,
             "rule": "the piece is the token's bytes (src/llama-vocab.cpp, llama_vocab::impl::token_to_piece)",
             "cells": [{"vocab": "qwen2", "check": "piece"}],
             "example": {"check": "piece", "vocab": "qwen2", "unparse_special": True, "reference_ids": [220],
                         "reference_bytes_hex": "2061", "port_bytes_hex": "61"}}
    entry = cause_entry(cause, tmp_path)
    assert entry["sources"] == ["src/llama-vocab.cpp:2 (llama_vocab::impl::token_to_piece)"]
    md = markdown({"header": {"pin": "p", "llama_cpp": "0c1e57098"}, "vocabs": ["qwen2"],
                   "ports": [{"name": "x", "language": "go", "package": "pkg", "version": "2.0", "causes": [entry],
                              "build": {"ok": True}, "run": {},
                              "vocabs": {"qwen2": {"outcome": "divergence", "checks": {}, "causes": ["C1"]}}}]})
    note = next(line for line in md.splitlines() if line.startswith("- upstream note: "))
    assert note.startswith("- upstream note: pkg 2.0, with llama.cpp's ggml-vocab-qwen2.gguf: piece of ids [220]")
    assert "llama.cpp 0c1e57098 gives" in note and "src/llama-vocab.cpp:2 (llama_vocab::impl::token_to_piece)" in note


def test_the_adapter_check_finds_logic_that_is_not_the_packages(tmp_path):
    # serve and direct are the same program: every answer equal. A direct without the
    # digits bug that serve has: the answers that differ are named, with both sides.
    from harness.scoreboard.adapter import check_adapter
    from reference.vocabs import vocab_path
    from harness.reports.scoreboard import adapter_line
    d = _port(tmp_path / "ports", "python", "same", serve="--bugs digits")
    (d / "direct").write_text((d / "serve").read_text())
    (d / "direct").chmod(0o755)
    manifest = json.loads((d / "port.json").read_text())
    (d / "port.json").write_text(json.dumps(dict(manifest, direct="direct --vocab {vocab}")))
    [port] = discover(tmp_path / "ports")
    same = check_adapter(port, vocab_path, ["llama-spm"])
    assert same["checked"] and same["requests"] > 4 * 30 and same["equal"] == same["requests"]
    assert adapter_line(same).startswith(f"adapter check: serve and direct give the same {same['requests']} answers")
    (d / "direct").write_text((d / "direct").read_text().replace("--bugs digits", ""))
    differs = check_adapter(port, vocab_path, ["llama-spm"])
    [first, *_] = differs["vocabs"][0]["differ"]
    assert differs["equal"] < differs["requests"] and any(c.isdigit() for c in first["request"]["text"])
    assert first["serve"] != first["direct"] and "answers differ" in adapter_line(differs)
    import dataclasses
    assert check_adapter(dataclasses.replace(port, direct=""), vocab_path)["checked"] is False


def test_the_checks_alone_set_that_rows_checks_and_keep_the_rest(tmp_path, capsys):
    # make scoreboard PORTS=x CHECKS_ONLY=1 SNAPSHOT=1: the snapshot's row for x takes the new
    # check; its cells, causes and engine, and every other row, stay as they were.
    d = _port(tmp_path / "ports", "python", "sentencepiece")
    (d / "direct").write_text((d / "serve").read_text().replace("faulty_port.py", "faulty_port.py --bugs digits"))
    (d / "direct").chmod(0o755)
    (d / "port.json").write_text(json.dumps(dict(json.loads((d / "port.json").read_text()), direct="direct --vocab {vocab}")))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "scoreboard.json").write_text((REPO / "docs" / "scoreboard.json").read_text(encoding="utf-8"), encoding="utf-8")
    before = json.loads((docs / "scoreboard.json").read_text())
    argv = ["--checks-only", "--snapshot", "--ports", "sentencepiece", "--ports-root", str(tmp_path / "ports"),
            "--docs", str(docs), "--out", str(tmp_path / "out"), "--vocabs", "llama-spm"]
    assert board.main(argv) == 1  # serve has no digits bug, direct has: answers differ
    after = json.loads((docs / "scoreboard.json").read_text())
    [old] = [r for r in before["ports"] if r["name"] == "sentencepiece"]
    [new] = [r for r in after["ports"] if r["name"] == "sentencepiece"]
    assert new["adapter"]["checked"] and new["adapter"]["equal"] < new["adapter"]["requests"]
    assert new["chat"] is None  # no chat program: no chat check (chat_check's own test runs one)
    assert {k: v for k, v in new.items() if k not in ("adapter", "chat")} == {k: v for k, v in old.items()
                                                                             if k not in ("adapter", "chat")}
    assert [r for r in after["ports"] if r["name"] != "sentencepiece"] == [r for r in before["ports"] if r["name"] != "sentencepiece"]
    assert "answers differ" in (docs / "scoreboard.md").read_text() and "answers differ" in capsys.readouterr().err
    (d / "direct").write_text((d / "serve").read_text())
    assert board.main(argv) == 0
    [new] = [r for r in json.loads((docs / "scoreboard.json").read_text())["ports"] if r["name"] == "sentencepiece"]
    assert new["adapter"]["equal"] == new["adapter"]["requests"]
    with pytest.raises(HarnessError, match="no row for nowhere"):
        board.with_checks(docs, {"nowhere": {"adapter": {"checked": False, "why": "x"}, "chat": None}})


@pytest.mark.reference
def test_a_ports_chat_program_is_checked_and_its_disagreements_listed(tmp_path):
    # The chat program is llama.cpp's own (reference serve): every case agrees; a chat program
    # that is not there is that port's chat error, with chat-check's last line.
    from harness.reports.scoreboard import chat_lines
    from reference.build import artifacts
    require(artifacts)
    from reference.lock import load
    d = _port(tmp_path / "ports", "python", "chatty")
    (d / "chat").write_text(f"#!/usr/bin/env bash\nexec {shlex.quote(sys.executable)} -m reference serve "
                            f"--pin {load().name} \"$@\"\n")
    (d / "chat").chmod(0o755)
    manifest = json.loads((d / "port.json").read_text())
    (d / "port.json").write_text(json.dumps(dict(manifest, chat="chat --vocab {vocab}")))
    [port] = discover(tmp_path / "ports")
    (tmp_path / "out").mkdir()
    chat = board.chat_check(port, tmp_path / "out", ["qwen2", "llama-spm"])
    assert chat["exit_code"] == 0 and len(chat["cases"]) >= 7 and {c["vocab"] for c in chat["cases"]} == {"qwen2"}
    assert {c["outcome"] for c in chat["cases"]} == {"agree"}
    [line] = chat_lines(chat)
    assert f"{len(chat['cases'])} cases" in line and line.endswith(f"{len(chat['cases'])} agree")
    (d / "chat").unlink()
    gone = board.chat_check(port, tmp_path / "out", ["qwen2"])
    assert gone["exit_code"] == 3 and gone["cases"] == [] and "without cases" in gone["failure"]
    assert chat_lines(gone)[0].startswith("- chat check: **error**: chat-check exited 3")
