"""``python -m harness serve``: the JSON-lines port server, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from needs import require
from harness.serve import handle
from harness.tokenizer import Tokenizer

ROOT = Path(__file__).resolve().parent.parent


def spm_path():
    from reference.vocabs import vocab_path
    return require(vocab_path, "llama-spm")


def run_server(vocab: str, lines: list[str], timeout: float = 120) -> tuple[int, list[dict], str]:
    proc = subprocess.run([sys.executable, "-m", "harness", "serve", "--vocab", vocab],
                          input="".join(line + "\n" for line in lines), capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)
    return proc.returncode, [json.loads(x) for x in proc.stdout.splitlines()], proc.stderr


REQUESTS = [
    {"op": "info"},
    {"op": "encode", "text": "Hello world", "add_special": True},
    {"op": "encode", "text": "Hello<s>world", "parse_special": True},
    {"op": "encode", "text_hex": "ff41"},
    {"op": "decode", "ids": [1, 15043, 3186], "remove_special": True},
    {"op": "decode", "ids": [1, 15043], "unparse_special": True},
    {"op": "piece", "id": 1, "special": True},
    {"op": "piece", "id": 1},
    {"op": "piece", "id": 10**9},
    {"op": "decode", "ids": [1, "x"]},
    {"op": "encode", "text": "x", "add_special": 1},
    {"op": "encode"},
    {"op": "frobnicate"},
    [1, 2],
]


def test_serve_answers_in_order_and_survives_bad_requests():
    path = spm_path()
    lines = [json.dumps(r) for r in REQUESTS] + ["this is not json", json.dumps({"op": "info"})]
    code, out, err = run_server(str(path), lines)
    assert code == 0, err
    assert len(out) == len(lines)
    tok = Tokenizer.from_gguf(path)
    assert out[0] == {"n_vocab": tok.n_vocab, "vocab_type": "spm", "pre_type": "DEFAULT"}
    assert out[1] == {"ids": tok.encode("Hello world", add_special=True)}
    assert out[2] == {"ids": tok.encode("Hello<s>world", parse_special=True)}
    assert out[3] == {"ids": tok.encode(b"\xffA")}
    assert out[4] == {"bytes_hex": tok.decode([1, 15043, 3186], remove_special=True).hex()}
    assert out[5] == {"bytes_hex": b"<s> Hello".hex()}
    assert out[6] == {"bytes_hex": b"<s>".hex()} and out[7] == {"bytes_hex": ""}
    for i in range(8, 15):
        assert set(out[i]) == {"error"}, (REQUESTS[i] if i < len(REQUESTS) else lines[i], out[i])
    assert "out of range" in out[8]["error"] and "unknown op" in out[12]["error"]
    assert out[-1] == out[0]  # still serving after the garbage line


@pytest.mark.reference
def test_serve_encode_matches_llama_cpp(inproc):
    ref = inproc("llama-spm")
    texts = ["", " a  b ", "Der süße Bär", "<s>x</s>", "\t\n"]
    lines = [json.dumps({"op": "encode", "text": t, "add_special": a, "parse_special": p})
             for t in texts for a in (False, True) for p in (False, True)]
    code, out, err = run_server(str(spm_path()), lines)
    assert code == 0, err
    expected = [{"ids": ref.encode(t, a, p)} for t in texts for a in (False, True) for p in (False, True)]
    assert out == expected


def test_serve_by_pinned_name():
    spm_path()
    code, out, err = run_server("llama-spm", [json.dumps({"op": "info"})])
    assert code == 0 and out[0]["vocab_type"] == "spm", err


def test_serve_refuses_a_missing_vocab(tmp_path):
    code, out, err = run_server(str(tmp_path / "missing.gguf"), [])
    assert code == 2 and out == [] and "cannot load vocab" in err


def test_handle_without_a_subprocess():
    assert "bad JSON" in handle(None, "{")["error"]
    assert "unknown op" in handle(None, '{"op": 3}')["error"]
