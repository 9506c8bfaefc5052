"""End-to-end runs of ``make fuzz-ports``: ``llama-conformance run`` with a hostile port.

A share of the fuzzer's time runs the real command line on one vocab's golden check with
:mod:`harness.fuzz.hostile` as the ``PORT`` command (``PORT_TIMEOUT=5``), and judges its exit
code and ``conformance.json`` against what the port logged.

>>> judge_e2e([{"v": "bad"}], 1, "/nonexistent")
['exception']
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from harness.fuzz.oracle import read_log


def end_to_end(rng: random.Random, work: str, kind: str, vocabs: tuple[str, ...]) -> tuple[str, list[str], dict]:
    """``llama-conformance run`` on one vocab's golden check with the hostile port as the PORT
    command; its exit code and report judged like a session's."""
    vocab = rng.choice(vocabs)
    log = os.path.join(work, f"e2e{rng.randrange(1 << 40)}")
    seed = rng.randrange(1 << 30)
    at = rng.randrange(0, 40)
    port = (f"{sys.executable} -m harness.fuzz.hostile --vocab {{vocab}} --kind {kind} --at {at} "
            f"--seed {seed} --log {log} --timeout 5")
    reports = os.path.join(work, f"r{seed}")
    env = dict(os.environ, PORT=port, PORT_TIMEOUT="5", HYPOTHESIS_PROFILE="ci")
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "run", "--no-fetch", "--jobs", "1",
                           "--report-dir", reports, "--vocabs", vocab, "--", "-k", "test_golden"],
                          env=env, capture_output=True, timeout=600)
    seconds = time.monotonic() - started
    entries = read_log(log)
    defects = judge_e2e(entries, proc.returncode, reports)
    if seconds > 5 * 2 + 60:
        defects.append("hang")
    detail = {"kind": kind, "e2e": True, "vocab": vocab, "port": port, "exit": proc.returncode,
              "seconds": round(seconds, 1), "log": entries[:60], "stdout": proc.stdout.decode(errors="replace")[-3000:],
              "tally": _e2e_totals(reports)}
    return kind, sorted(set(defects)), detail


def _e2e_totals(reports: str) -> dict:
    try:
        data = json.loads(Path(reports, "conformance.json").read_text())
    except (OSError, ValueError):
        return {}
    t = data["totals"]
    return {"port_errors": t["port_errors"], "divergences": t["divergences"], "errors": t["errors"],
            "cases": t["cases"], "messages": [e["message"][:300] for e in data["port_errors"]]}


def judge_e2e(log: list[dict], code: int, reports: str) -> list[str]:
    """An end-to-end run's defects: the exit code and report against what the port did.

    >>> judge_e2e([], 3, "/nonexistent")  # the run raised, or wrote no report
    ['exception']
    """
    t = _e2e_totals(reports)
    if code == 3 or not t or t["errors"]:
        return ["exception"]
    answers = [e for e in log if "v" in e]
    verdicts = {e["v"] for e in answers}
    if any("extra" in e for e in log):  # a line too many: the client may take it before the port logs
        return [] if code in (1, 2) else ["wrong-pass"]
    if verdicts & {"bad", "none", "eof", "error"}:
        return [] if code == 2 and t["port_errors"] else ["wrong-pass"]
    if "wrong" in verdicts:
        return [] if code in (1, 2) else ["wrong-pass"]
    planted = any(e.get("planted") for e in answers)
    if code == 2 or (code == 1 and not planted):
        return ["false-alarm"]
    return ["lost"] if planted and code != 1 else []
