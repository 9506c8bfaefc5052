"""The one server loop of the port protocol (harness.protocol.server), over fake backends:
every line gets one answer, bad requests and backend exceptions are that request's
error, a vocab the library cannot load is unsupported on every request, library prints
stay off stdout, and the engine's client tells unsupported from loaded and from broken."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap

import pytest

from harness.protocol import server
from harness.errors import PortError, PortUnsupported
from harness.protocol.client import ExternalPort


class Fake:
    """A backend that records its calls: ids are code points, +1000 per flag."""

    n_vocab = 42

    def __init__(self):
        self.calls = []

    def encode(self, text, *, add_special=False, parse_special=False):
        self.calls.append(("encode", text, add_special, parse_special))
        if text == "boom":
            raise RuntimeError("library exploded")
        return [ord(c) + 1000 * add_special + 2000 * parse_special for c in text]

    def decode(self, ids, *, remove_special=False, unparse_special=False):
        self.calls.append(("decode", ids, remove_special, unparse_special))
        return bytes(i % 256 for i in ids)

    def token_to_piece(self, id, *, special=False):
        self.calls.append(("piece", id, special))
        return b"\xff" if special else b""


# --- one answer per line, errors keep serving ----------------------------------------

GOOD = [
    ({"op": "encode", "text": "ab", "add_special": True, "parse_special": False}, {"ids": [1097, 1098]}),
    ({"op": "decode", "ids": [97, 354], "remove_special": False, "unparse_special": True},
     {"bytes_hex": "6162"}),
    ({"op": "piece", "id": 3, "special": True}, {"bytes_hex": "ff"}),
    ({"op": "info"}, {"n_vocab": 42, "batch": True}),
]


@pytest.mark.parametrize("request_, expected", GOOD, ids=[g[0]["op"] for g in GOOD])
def test_valid_requests(request_, expected):
    assert server.handle(Fake(), json.dumps(request_)) == expected


def test_flags_reach_the_backend_unchanged():
    fake = Fake()
    server.handle(fake, '{"op":"encode","text":"x","add_special":false,"parse_special":true}')
    server.handle(fake, '{"op":"decode","ids":[1],"remove_special":true,"unparse_special":false}')
    assert fake.calls == [("encode", "x", False, True), ("decode", [1], True, False)]


BAD = {
    "not json": ("{op: encode", "bad JSON"),
    "not an object": ("[1, 2]", "must be a JSON object"),
    "unknown op": ('{"op": "tokenize"}', "unknown op 'tokenize'"),
    "no op": ('{"text": "a"}', "unknown op None"),
    "text not str": ('{"op":"encode","text":5,"add_special":false,"parse_special":false}', "'text' must be a string"),
    "flag not bool": ('{"op":"encode","text":"a","add_special":1,"parse_special":false}',
                      "'add_special' must be true or false"),
    "ids not list": ('{"op":"decode","ids":"1 2","remove_special":false,"unparse_special":false}',
                     "'ids' must be a list of integers"),
    "bool in ids": ('{"op":"decode","ids":[1,true],"remove_special":false,"unparse_special":false}',
                    "each id must be an integer, got True"),
    "id is bool": ('{"op":"piece","id":false,"special":false}', "'id' must be an integer"),
    "lone surrogate": ('{"op":"encode","text":"a\\ud800","add_special":false,"parse_special":false}',
                       "lone surrogate"),
    "backend raises": ('{"op":"encode","text":"boom","add_special":false,"parse_special":false}',
                       "port raised RuntimeError: library exploded"),
}


@pytest.mark.parametrize("line, message", BAD.values(), ids=BAD.keys())
def test_bad_requests_answer_an_error(line, message):
    response = server.handle(Fake(), line)
    assert list(response) == ["error"] and message in response["error"]


def _serve(lines: list[bytes], load) -> list[dict]:
    out = io.BytesIO()
    assert server.serve_or_refuse(load, io.BytesIO(b"".join(lines)), out) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_serve_answers_every_line_in_order_and_keeps_serving():
    lines = [b'{"op":"info"}\n', b"garbage\n", b"\n", b"\xff\xfe\n",
             b'{"op":"encode","text":"boom","add_special":false,"parse_special":false}\n',
             b'{"op":"encode","text":"b","add_special":false,"parse_special":false}\n']
    answers = _serve(lines, Fake)
    assert len(answers) == len(lines)
    assert answers[0] == {"n_vocab": 42, "batch": True} and answers[-1] == {"ids": [98]}
    assert all("error" in a for a in answers[1:5])
    assert "not UTF-8" in answers[3]["error"]


def test_a_vocab_that_cannot_load_is_unsupported_on_every_request():
    def load():
        raise ValueError("GGUF model with architecture mpt\nis not supported yet.")
    answers = _serve([b'{"op":"info"}\n', b'{"op":"encode"}\n'], load)
    assert answers == [{"error": "unsupported: ValueError: GGUF model with architecture mpt "
                                 "is not supported yet."}] * 2


# --- servers: exit codes and the stdout guard --------------------------------------------------

def test_server_exit_codes(tmp_path, capsys):
    assert server.run_adapter(["--vocab", str(tmp_path / "missing.gguf")], name="x",
                              check_library=lambda: None, load=lambda p: Fake()) == server.EXIT_USAGE
    assert "no such file" in capsys.readouterr().err


_FAKE_SERVER = textwrap.dedent("""
    import os, sys
    from harness.protocol.server import run_adapter
    sys.path.insert(0, {tests!r})
    from tests.test_protocol import Fake
    def load(path):
        if os.path.basename(path) == "bad.gguf":
            raise ValueError("cannot convert " + os.path.basename(path))
        print("chatty library on stdout")      # must not reach the protocol stream
        os.write(1, b"C printf on fd 1\\n")
        return Fake()
    def missing():
        raise ImportError("No module named 'nothing'")
    check = missing if os.environ.get("NO_LIB") else (lambda: None)
    sys.exit(run_adapter(None, name="fake", check_library=check, load=load))
""")


@pytest.fixture
def fake_server(tmp_path):
    script = tmp_path / "fake_server.py"
    script.write_text(_FAKE_SERVER.format(tests=str(__import__("pathlib").Path(__file__).parents[1])))
    (tmp_path / "good.gguf").write_bytes(b"")
    (tmp_path / "bad.gguf").write_bytes(b"")
    return script


def test_library_prints_go_to_stderr_not_between_answers(fake_server, tmp_path):
    proc = subprocess.run([sys.executable, str(fake_server), "--vocab", str(tmp_path / "good.gguf")],
                          input=b'{"op":"info"}\n{"op":"nope"}\n', capture_output=True, timeout=60)
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert answers[0] == {"n_vocab": 42, "batch": True} and "error" in answers[1] and len(answers) == 2
    assert b"chatty library" in proc.stderr and b"C printf" in proc.stderr


def test_missing_library_exits_3_with_the_install_hint(fake_server, tmp_path):
    proc = subprocess.run([sys.executable, str(fake_server), "--vocab", str(tmp_path / "good.gguf")],
                          input=b"", capture_output=True, timeout=60, env={**__import__("os").environ,
                                                                            "NO_LIB": "1"})
    assert proc.returncode == server.EXIT_MISSING_LIBRARY and b"build.sh" in proc.stderr


def test_the_client_tells_unsupported_from_loaded_and_from_broken(fake_server, tmp_path):
    command = f"{sys.executable} {fake_server} --vocab {{vocab}}"
    good = ExternalPort(command, tmp_path / "good.gguf")
    assert good.info()["n_vocab"] == 42
    good.close()
    bad = ExternalPort(command, tmp_path / "bad.gguf")
    with pytest.raises(PortUnsupported, match="ValueError: cannot convert bad.gguf"):
        bad.encode("a")
    bad.close()
    broken = ExternalPort(f"{sys.executable} -c 'raise SystemExit(9)' {{vocab}}", tmp_path / "good.gguf")
    with pytest.raises(PortError, match="exit code 9"):
        broken.encode("a")
