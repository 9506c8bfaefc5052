"""The protocol's client side: an external port speaks the protocol, fails loudly with
its stderr, and a failed request is that request's error; in-process port exceptions too."""

from __future__ import annotations

import shlex
import sys
import textwrap
from pathlib import Path

import pytest

from harness.errors import PortError, PortRequestError
from harness.protocol.client import ExternalPort, split_command


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
    from harness.engine.vut import VocabUnderTest

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
