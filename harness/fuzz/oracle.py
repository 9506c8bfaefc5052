"""The judge of a ``make fuzz-ports`` session: its port's log and its tally, checked.

A session is a *defect* (:data:`FAILURES`) when the engine raised (``exception``), outlived
two port timeouts plus a margin (``hang``), passed a bad or wrong answer or took garbage for a
divergence (``wrong-pass``), reported a port error that names no request (``unnamed``),
reported anything on right answers (``false-alarm``), lost the planted bug's finding or an
input from every count, or read ``pass`` with no case compared (``lost``), or left the port
or a child it forked running (``leak``); the fuzzer adds ``memory``. ``overload`` is not a
defect: the client gave up on an answer the port had not made yet (a busy machine).

>>> judge([], None, 0, 0.1, "Traceback ...", [], "encode", timeout=0.25)
['exception']
"""

from __future__ import annotations

import json
import os
import re
import time

FAILURES = ("exception", "hang", "wrong-pass", "unnamed", "false-alarm", "lost", "leak", "memory")
MARGIN = 3.0  # seconds past two timeouts before a session counts as hung


def _alive(pid: int, grace: float = 1.0) -> bool:
    """Whether ``pid`` still runs ``grace`` seconds on (a SIGKILL is delivered asynchronously)."""
    end = time.monotonic() + grace
    while _running(pid) and time.monotonic() < end:
        time.sleep(0.01)
    return _running(pid)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead: reap it if it is ours
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def read_log(path: str) -> list[dict]:
    """The hostile port's log, one dict per line ([] if it wrote none).

    >>> read_log("/nonexistent/log")
    []
    """
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except OSError:
        return []


def judge(log: list[dict], h, n_inputs: int, seconds: float, error: str, pids: list[int],
          workload: str, *, timeout: float) -> list[str]:
    """The defects of one session (see the module docstring), from the port's log and the tally;
    ``overload`` (not a defect) where the client gave up on an answer the port was still making
    (the machine too busy for the session's short timeout: the port logged no hang).

    >>> judge([], None, 0, 0.1, "Traceback ...", [], "encode", timeout=0.25)
    ['exception']
    """
    if error:
        return ["exception"]
    out = ["hang"] if seconds > 2 * timeout + MARGIN else []
    if any(_alive(p) for p in pids):
        out.append("leak")
    t = h.tally
    if _overloaded(log, t):
        return out + ["overload"]
    return sorted(set(out + _answer_defects(log, t, workload) + _count_defects(t, n_inputs)))


def _overloaded(log: list[dict], t) -> bool:
    """The client timed out on a request the port had not answered yet, and the port played
    no hang there: it was still working (or not yet scheduled) when the short deadline passed."""
    for e in t.port_errors:
        if "hung: no answer" in e["message"]:
            req = e["message"].split(" on request ", 1)[-1].split("\n")[0][:200]
            answered = any(x.get("req") == req for x in log if "v" in x)
            return not answered and not any(x.get("v") == "none" for x in log)
    return False


def _answer_defects(log: list[dict], t, workload: str) -> list[str]:
    """What the tally must show for the answers the port gave (the module docstring)."""
    out = []
    answers = [e for e in log if "v" in e]
    fatal = next((k for k, e in enumerate(answers) if e["v"] in ("bad", "none", "eof")), len(answers))
    before = answers[:fatal]
    if fatal < len(answers) and not t.port_errors:
        out.append("wrong-pass")
    if answers[fatal:fatal + 1] and answers[fatal]["v"] == "bad" and t.divergent and not t.port_errors:
        out.append("wrong-pass")
    seen = {e["v"] for e in _case_answers(before, workload)}
    if "wrong" in seen and not (t.divergent or t.port_errors):
        out.append("wrong-pass")
    if ("error" in seen and not t.port_error_cases) or ("unsupported" in seen and not t.unsupported):
        out.append("lost")
    if t.port_errors and not all(re.search(r"on request |to \{|in \w+\(|could not open|answers info|went down",
                                           e["message"]) for e in t.port_errors):
        out.append("unnamed")
    # the planted bug answered alone (a batch's divergent answer is asked again alone: a crash
    # then keeps only the port error; see the README)
    planted = any(e.get("planted") and e["op"] == "encode" and e["v"] == "same" for e in before)
    shifted = any("extra" in e for e in log)  # answers shifted: the next one is stale, unjudged
    if seen <= {"same"} and fatal == len(answers) and not shifted:
        if t.port_errors or (t.divergent and not planted):
            out.append("false-alarm")
    if planted and not t.findings:
        out.append("lost")
    return out


def _case_answers(answers: list[dict], workload: str) -> list[dict]:
    """The answers to requests that are cases: not a divergence's own pieces (asked for the
    report), not a request asked again as it was (the settle phase confirming a finding)."""
    out, asked = [], set()
    for e in answers:
        detail = e["op"] == "piece" and not workload.startswith("piece")
        again = e["op"] != "batch" and e["req"] in asked
        asked.add(e["req"])
        if e["v"] == "same" or not (detail or again):
            out.append(e)
    return out


def _count_defects(t, n_inputs: int) -> list[str]:
    """Every input in exactly one count; no pass without a case."""
    out = []
    if t.cases + t.port_error_cases + t.unsupported + t.not_checked != n_inputs:
        out.append("lost")
    if t.outcome == "pass" and not t.cases:
        out.append("lost")
    return out
