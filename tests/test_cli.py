"""``llama-conformance``: the installed command, its exit codes, and the CI recipe's command lines."""

from __future__ import annotations

import importlib
import re
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from harness import cli
from harness.conformance.needs import require

REPO = Path(__file__).resolve().parent.parent
SUBCOMMANDS = ("run", "diff", "serve", "fetch", "build", "pin", "bench", "scoreboard")


def test_console_script_is_installed():
    [ep] = [e for e in metadata.entry_points(group="console_scripts") if e.name == "llama-conformance"]
    assert ep.value == "harness.cli:main"


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_subcommand_has_help(command, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main([command, "--help"])
    assert exc.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_run_maps_the_environment_the_makefile_exports(monkeypatch):
    monkeypatch.setenv("PORT", "java -jar p.jar --vocab {vocab}")
    monkeypatch.setenv("VOCABS", "qwen2, llama-spm")
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "ci")
    monkeypatch.setenv("JOBS", "2")
    monkeypatch.setenv("PIN", "abc")
    args, _ = cli.parse(["run"])
    assert cli.run_env(args) == {"PORT": "java -jar p.jar --vocab {vocab}", "VOCABS": "qwen2 llama-spm",
                                 "HYPOTHESIS_PROFILE": "ci", "PIN": "abc",
                                 "LLAMA_CONFORMANCE_REQUIRE_REFERENCE": "1"}
    assert cli.pytest_argv(args)[cli.pytest_argv(args).index("-n") + 1] == "2"


def test_run_refuses_unknown_options(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.parse(["run", "--prot", "x"])
    assert exc.value.code == 2 and "pytest arguments go after --" in capsys.readouterr().err


def _cell(flags="plain", check="encode", **counts):
    return {"vocab": "v", "flags": flags, "check": check, "cases": 5, **counts}


@pytest.mark.parametrize("rc, cells, setup, allow, code", [
    (0, [_cell()], 0, False, cli.CLEAN),
    (1, [_cell(divergent=1)], 0, False, cli.DIVERGENCES),
    (1, [_cell(divergent=1), _cell("add", port_errors=1)], 0, False, cli.PORT_ERRORS),
    (1, [_cell(divergent=1), _cell("add", errors=1)], 0, False, cli.ERRORS),
    (1, [_cell(divergent=1, errors=1, not_checked=300)], 0, False, cli.ERRORS),   # one cell: diverged, then raised
    (1, [_cell(divergent=1, port_errors=1)], 0, False, cli.PORT_ERRORS),          # one cell: diverged, port error
    (1, [_cell(divergent=1)], 1, False, cli.ERRORS),            # a collection error too
    (1, [_cell()], 0, False, cli.ERRORS),                       # failed, but why?
    (2, [_cell()], 0, False, cli.ERRORS), (4, [], 0, False, cli.ERRORS), (5, [], 0, False, cli.ERRORS),
    (0, [_cell(), _cell("parse", cases=0, unsupported=3)], 0, False, cli.INCOMPLETE),
    (0, [_cell(), _cell("parse", cases=0, unsupported=3)], 0, True, cli.CLEAN),
    (0, [_cell(), _cell("parse", unsupported=3)], 0, True, cli.CLEAN),           # partial: unsupported only
    (0, [_cell(), _cell("parse", not_checked=3)], 0, True, cli.INCOMPLETE),      # partial: not checked
    (0, [_cell(cases=0, unsupported=3)], 0, True, cli.INCOMPLETE),               # nothing compared at all
    (1, [_cell(divergent=1), _cell("parse", cases=0, unsupported=3)], 0, False, cli.DIVERGENCES),
])
def test_exit_code_worst_outcome_wins(rc, cells, setup, allow, code):
    assert cli.exit_code(pytest_rc=rc, cells=cells, setup_errors=setup, allow_unsupported=allow)[0] == code


def test_a_failed_reference_check_is_an_error_and_its_unsupported_cells_do_not_count():
    crosscheck = _cell(check="crosscheck")
    assert cli.exit_code(pytest_rc=0, cells=[_cell()],
                         reference_cells=[crosscheck, dict(crosscheck, flags="add", cases=0, unsupported=1)]) \
        == (cli.CLEAN, "clean")
    assert cli.exit_code(pytest_rc=1, cells=[_cell()], reference_cells=[dict(crosscheck, divergent=1)])[0] == cli.ERRORS


# --- run, end to end, from outside the checkout (the suite comes from the installed package) --

def _run(tmp_path, *args, env_extra=None):
    import os
    env = {k: v for k, v in os.environ.items() if k not in ("PORT", "VOCABS", "PIN", "HYPOTHESIS_PROFILE")}
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "run", "--no-fetch", "--jobs", "0",
                           "--profile", "ci", "--report-dir", str(tmp_path / "r"), *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.reference
def test_run_exit_codes_end_to_end(tmp_path):
    from reference.build import artifacts
    require(artifacts)
    # A port's repository may have its own pytest set-up; the run must not pick it up.
    (tmp_path / "conftest.py").write_text("raise SystemExit('the working directory conftest.py was loaded')\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --no-such-option\n")
    sel = ["--", "-k", "test_golden"]  # the quickest test that opens the port
    code, out = _run(tmp_path, "--port", "llama.cpp", "--vocabs", "qwen2", *sel)
    assert code == 0, out[-3000:]
    assert (tmp_path / "r" / "conformance-junit.xml").is_file() and (tmp_path / "r" / "conformance.html").is_file()
    # A self-test mutant is a Python adapter of the repository's tests/ports (PYTHONPATH finds it).
    code, out = _run(tmp_path, "--port", "py:tests.ports.mutants:bos_qwen2", "--vocabs", "qwen2",
                     "--", "-k", "test_known and add and not add_parse", env_extra={"PYTHONPATH": str(REPO)})
    assert code == 1, out[-3000:]
    assert "DIVERGENCE" in out
    port = f"{shlex.quote(sys.executable)} -c 'import sys; sys.exit(7)' {{vocab}}"
    code, out = _run(tmp_path, "--port", port, "--vocabs", "qwen2", *sel)
    assert code == 2, out[-3000:]
    code, out = _run(tmp_path, "--port", "llama.cpp", "--vocabs", "no-such-vocab", *sel)
    assert code == 3, out[-3000:]
    assert "no-such-vocab" in out


def _faulty(*options: str) -> str:
    return " ".join([shlex.quote(sys.executable), shlex.quote(str(REPO / "tests" / "ports" / "faulty_port.py")),
                     "--vocab {vocab}", *options])


@pytest.mark.reference
def test_unsupported_cases_exit_4_unless_allowed_and_make_passes_the_code_on(tmp_path):
    """A port that answers unsupported to every parse_special encode and every decode, and
    is exact otherwise: incomplete (4), not clean; clean with --allow-unsupported.
    tools/conformance.sh (make conformance's variables) exits with the command's code;
    make itself exits 2 on any failure, its Error line keeping the code."""
    import json
    import os
    from reference.build import artifacts
    require(artifacts)
    port = _faulty("--refuse parse_special=true,decode")
    env = {k: v for k, v in os.environ.items() if k not in ("PORT", "VOCABS", "PIN", "ALLOW_UNSUPPORTED")}
    env["LLAMA_CONFORMANCE_REPLAY"] = str(tmp_path / "replay")

    def make(*argv, reports):
        proc = subprocess.run([*argv, "HYPOTHESIS_PROFILE=ci", "JOBS=0", f"REPORTS={tmp_path / reports}"],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        return proc.returncode, proc.stdout + proc.stderr

    code, out = make(str(REPO / "tools" / "conformance.sh"), f"PORT={port}", "VOCABS=llama-spm", reports="script")
    assert code == cli.INCOMPLETE, out[-3000:]
    assert "exit 4 (incomplete: 8 unsupported cell(s) (--allow-unsupported lets" in out
    report = json.loads((tmp_path / "script" / "conformance.json").read_text())
    assert report["totals"]["cells_by_outcome"] == {"pass": 7, "unsupported": 8}
    code, out = make("make", "--no-print-directory", "conformance", "PORT=harness", "VOCABS=no-such-vocab",
                     reports="make")
    assert code == 2 and "Error 3" in out and "llama-conformance exited 3" in out, out[-3000:]
    code, out = _run(tmp_path, "--port", port, "--vocabs", "llama-spm", "--allow-unsupported",
                     "--", "-k", "test_golden or test_decode",
                     env_extra={"LLAMA_CONFORMANCE_REPLAY": str(tmp_path / "replay")})
    assert code == cli.CLEAN, out[-3000:]
    assert "exit 0 (clean (4 unsupported cell(s) allowed by --allow-unsupported))" in out


@pytest.mark.reference
def test_the_reproduce_line_reruns_the_same_causes_from_an_empty_replay_store(tmp_path):
    import json
    import os
    from reference.build import artifacts
    require(artifacts)
    port = _faulty("--bugs digits,nbsp")
    # A fixed seed: a random one can draw a fragment pool with no NBSP (the bug then is not met
    # at all); the reproduce line carries whichever seed the run had, and that is what is checked.
    code, out = _run(tmp_path, "--port", port, "--vocabs", "llama-spm", "--seed", "1", "--",
                     "-k", "test_encode and plain",
                     env_extra={"LLAMA_CONFORMANCE_REPLAY": str(tmp_path / "store-a")})
    assert code == cli.DIVERGENCES, out[-3000:]
    [line] = re.findall(r"^reproduce: (.*)$", out, re.M)
    first = json.loads((tmp_path / "r" / "conformance.json").read_text())
    seed = first["run"]["fast_seed"]
    assert f"--seed {seed} " in line and first["run"]["hypothesis_seed"] == seed and first["run"]["reproduce"] == line

    def causes(report):
        return sorted((tuple(d["signature"]), d["text"], d["cases"]) for d in report["divergences"])

    # As printed (the installed command), from another directory and an empty replay store.
    argv = shlex.split(line)
    argv[0] = str(Path(sys.executable).parent / "llama-conformance")
    again = tmp_path / "again"
    again.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PORT", "VOCABS", "PIN", "HYPOTHESIS_PROFILE",
                                                            "CONFORMANCE_SEED")}
    env["LLAMA_CONFORMANCE_REPLAY"] = str(tmp_path / "store-b")
    proc = subprocess.run(argv, cwd=again, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == cli.DIVERGENCES, (proc.stdout + proc.stderr)[-3000:]
    second = json.loads((again / "reports" / "conformance.json").read_text())
    assert len(causes(first)) >= 2 and causes(second) == causes(first)
    assert first["totals"]["replayed_inputs"] == second["totals"]["replayed_inputs"] == 0
    # Run again on the first store: its shrunk inputs run first, counted apart.
    code, out = _run(tmp_path, *argv[2:argv.index("--")], "--", "-k", "test_encode and plain",
                     env_extra={"LLAMA_CONFORMANCE_REPLAY": str(tmp_path / "store-a")})
    third = json.loads((tmp_path / "r" / "conformance.json").read_text())
    # each distinct shrunk input once (two findings may shrink to one text)
    assert third["totals"]["replayed_inputs"] == len({d["text"] for d in first["divergences"]}) and "replay store: " in out
    assert {tuple(d["signature"]) for d in third["divergences"]} == {c[0] for c in causes(first)}


# --- docs/ci.md: every llama-conformance line the recipes run is one the CLI accepts ---------

def _ci_command_lines() -> list[str]:
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    lines = []
    for block in blocks:
        for line in block.splitlines():
            m = re.search(r"(?:run:|-|^)\s*(llama-conformance\s.*)$", line.strip())
            if m:
                lines.append(m.group(1))
    return lines


def test_ci_recipes_have_both_workflows_and_upload_the_reports():
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    assert "## GitHub Actions" in text and "## GitLab CI" in text
    assert text.count("conformance-junit.xml") >= 2 and text.count("conformance.html") >= 2
    assert "actions/cache" in text and "cache:" in text


def test_ci_command_lines_parse():
    lines = _ci_command_lines()
    commands = {shlex.split(line)[1] for line in lines}
    assert {"run", "fetch", "build"} <= commands, lines
    for line in lines:
        argv = shlex.split(line)[1:]
        args, rest = cli.parse(argv)
        if args.command == "run":
            assert "{vocab}" in args.port, line
        else:
            # a delegate: its own parser must accept the rest
            target, prefix, _ = cli.DELEGATES[args.command]
            # merge's entry is harness.cli:merge (for run's exit codes); its parser is mergecmd's
            module = importlib.import_module("harness.mergecmd" if args.command == "merge"
                                             else target.partition(":")[0])
            if hasattr(module, "parser"):
                module.parser().parse_args(prefix + rest)
            else:
                assert rest == [], (line, rest)


@pytest.mark.reference
def test_diff_says_unsupported_where_the_port_cannot_express_a_check(capsys):
    """A check the port answers unsupported is neither a port error nor a pass: diff says so."""
    from harness import diffcmd
    from reference.build import artifacts
    require(artifacts)
    code = diffcmd.main(["--vocab", "qwen2", "--text", "Hello", "--port", _faulty("--refuse decode")])
    out = capsys.readouterr().out
    assert "encode: same as llama.cpp" in out
    assert "decode of llama.cpp's ids: unsupported (not checked):" in out and "port error" not in out
    assert code == 0


@pytest.mark.reference
def test_checks_selects_suite_checks_and_the_chat_check_and_exits_with_the_worse(tmp_path):
    """make conformance CHECKS="golden chat": the suite's golden check alone (pytest -k), then
    the chat check on the vocabs that carry a template (qwen2; llama-spm has none and is said
    to be not checked), into chat.json. The harness port passes golden and answers a continued
    final assistant message unsupported: the run is incomplete (4), the worse of 0 and 4.
    An unknown check is refused before anything runs."""
    import json
    import os
    from reference.build import artifacts
    require(artifacts)
    env = {k: v for k, v in os.environ.items() if k not in ("PORT", "VOCABS", "PIN", "ALLOW_UNSUPPORTED", "CHECKS")}
    env["LLAMA_CONFORMANCE_REPLAY"] = str(tmp_path / "replay")
    proc = subprocess.run([str(REPO / "tools" / "conformance.sh"), "PORT=harness", "VOCABS=qwen2 llama-spm",
                           "CHECKS=golden chat", "CHAT_EXAMPLES=2", "HYPOTHESIS_PROFILE=ci", "JOBS=0",
                           f"REPORTS={tmp_path}"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == cli.INCOMPLETE, out[-3000:]
    assert "chat-check: not checked: llama-spm (no tokenizer.chat_template" in out
    assert "the run before it exited 0, this check 4: exit 4" in out
    report = json.loads((tmp_path / "conformance.json").read_text())
    assert {c["check"] for c in report["cells"]} == {"golden"}
    chat = json.loads((tmp_path / "chat.json").read_text())
    assert {c["vocab"] for c in chat["cases"]} == {"qwen2"} and chat["exit_code"] == cli.INCOMPLETE
    assert {c["outcome"] for c in chat["cases"]} == {"agree", "unsupported"}
    proc = subprocess.run(["make", "--no-print-directory", "conformance", "CHECKS=encode chatt"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and "unknown check(s) in CHECKS: chatt (known: golden known encode decode piece " \
        "crosscheck chat; or all)" in proc.stdout + proc.stderr
