"""Port I/O under one deadline: hostile ports are PortErrors, never a hang or a memory blow-up.

Each port is a few lines of Python started as a real subprocess. Every call runs on a
thread joined with a generous bound, so a regression fails the test instead of hanging
the suite; the bound is a liveness check, not a speed measurement.
"""

from __future__ import annotations

import shlex
import sys
import threading

import pytest

from harness.protocol.channel import CHUNK, MAX_LINE
from harness.ports import ExternalPort
from harness.errors import PortError

BIG = "x" * 300_000  # about 300 KB of JSON: beyond the 64 KiB pipe buffer

PORTS = {
    # reads nothing, ever: a blocking write of BIG would wait forever
    "deaf": "import time; time.sleep(120)",
    # reads its request, then floods stdout without a newline
    "flood": "import sys\nsys.stdin.readline()\nwhile True: sys.stdout.buffer.write(b'x' * 65536)",
    # reads its request, never answers
    "hang": "import sys, time\nsys.stdin.readline(); time.sleep(120)",
    # reads slowly, in small pieces, then answers: must succeed despite partial writes
    "slow": ("import json, sys, time\nline = b''\n"
             "while not line.endswith(b'\\n'):\n"
             "    line += sys.stdin.buffer.read1(4096); time.sleep(0.001)\n"
             "print(json.dumps({'ids': [len(json.loads(line)['text'])]}), flush=True)\n"
             "print(json.dumps({'ids': [7]}) + '\\n' + json.dumps({'ids': [8]}), flush=True)\n"
             "sys.stdin.readline(); sys.stdin.readline()"),
}


@pytest.fixture
def port(tmp_path):
    opened = []

    def start(kind: str, **kw) -> ExternalPort:
        script = tmp_path / f"{kind}.py"
        script.write_text(PORTS[kind])
        p = ExternalPort(f"{shlex.quote(sys.executable)} {script} {{vocab}}", "v.gguf", **kw)
        opened.append(p)
        return p

    yield start
    for p in opened:
        p.close()


def call_bounded(fn, bound: float = 60.0):
    """fn() on a thread; the exception it raised (or None). Fails if it does not return."""
    box: list = []

    def run():
        try:
            fn()
            box.append(None)
        except BaseException as e:
            box.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(bound)
    assert box, f"still blocked after {bound} s: the deadline does not cover this case"
    return box[0]


def test_a_port_that_stops_reading_is_a_port_error(port):
    p = port("deaf", timeout=1.5)
    e = call_bounded(lambda: p.encode(BIG))
    assert isinstance(e, PortError), e
    assert "stopped reading its stdin" in str(e) and "1.5 s" in str(e) and "PORT_TIMEOUT" in str(e)
    assert p.proc.poll() is not None  # killed, not left blocked


def test_a_port_that_floods_stdout_is_a_port_error_with_bounded_memory(port):
    p = port("flood", timeout=30, max_line=1 << 20)
    e = call_bounded(lambda: p.encode("a"))
    assert isinstance(e, PortError), e
    assert f"longer than {1 << 20} bytes" in str(e) and "hung" not in str(e)
    assert len(p._channel._buf) <= (1 << 20) + CHUNK  # what the harness held, at most


def test_a_port_that_hangs_is_a_port_error(port):
    p = port("hang", timeout=1.5)
    e = call_bounded(lambda: p.encode("a"))
    assert isinstance(e, PortError) and "hung: no answer within 1.5 s" in str(e), e


def test_a_slow_reader_gets_the_whole_big_request_and_answers_stay_in_order(port):
    p = port("slow", timeout=60)
    assert p.encode(BIG) == [len(BIG)]
    assert p.encode("b") == [7] and p.encode("c") == [8]  # two lines in one read, kept apart


def test_the_default_answer_limit_is_64_mib():
    assert MAX_LINE == 64 * 1024 * 1024
