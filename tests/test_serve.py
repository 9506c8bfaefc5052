"""``python -m harness serve``: the JSON-lines port server, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.conformance.needs import require
from harness.protocol.server import handle
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
    assert out[0] == {"n_vocab": tok.n_vocab, "vocab_type": "spm", "pre_type": "DEFAULT", "batch": True}
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


# --- hostile input: every line gets exactly one answer, and the server survives ------------------
def _tiny_vocab(tmp_path) -> Path:
    from harness.tokenizer.gguf.keys import GGUFValueType as T
    from harness.tokenizer.gguf.writer import write_gguf
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "▁a", "▁b"]
    path = tmp_path / "tiny.gguf"
    write_gguf(path, {"general.architecture": (T.STRING, "bert"),
                      "tokenizer.ggml.model": (T.STRING, "bert"),
                      "tokenizer.ggml.tokens": (T.ARRAY, tokens, T.STRING),
                      "tokenizer.ggml.token_type": (T.ARRAY, [3, 2, 3, 3, 1, 1], T.INT32),
                      "tokenizer.ggml.unknown_token_id": (T.UINT32, 1)})
    return path


def run_raw(vocab: Path, data: bytes, env_extra: dict | None = None) -> tuple[int, list[dict], str]:
    """The server fed raw bytes, with a strict UTF-8 stdin (PYTHONIOENCODING) unless told otherwise."""
    import os
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", **(env_extra or {})}
    proc = subprocess.run([sys.executable, "-m", "harness", "serve", "--vocab", str(vocab)],
                          input=data, capture_output=True, timeout=120, cwd=ROOT, env=env)
    return proc.returncode, [json.loads(x) for x in proc.stdout.splitlines()], proc.stderr.decode()


INFO = json.dumps({"op": "info"}).encode()


@pytest.mark.parametrize("hostile, words", [
    (b"[" * 100_000, "nested too deeply"),                     # RecursionError, not ValueError
    (b'{"op": "encode", "text": "\xff\xfe"}', "not UTF-8"),  # strict stdin used to raise here
    (b"", "empty request line"),                              # used to get no answer: a hang
    (b"   \t", "empty request line"),
    (b'{"op": "encode", "text": "\\ud800"}', "lone surrogate"),
    (b"\x00\x01\x02", "bad JSON"),
])
def test_serve_answers_a_hostile_line_once_and_keeps_serving(tmp_path, hostile, words):
    code, out, err = run_raw(_tiny_vocab(tmp_path), INFO + b"\n" + hostile + b"\n" + INFO + b"\n")
    assert code == 0, err
    assert len(out) == 3 and out[0] == out[2] and out[0]["vocab_type"] == "wpm", out
    assert set(out[1]) == {"error"} and words in out[1]["error"], out[1]


def test_serve_answers_the_last_line_without_a_newline(tmp_path):
    code, out, err = run_raw(_tiny_vocab(tmp_path), INFO + b"\n" + INFO)
    assert code == 0 and len(out) == 2, err


def test_serve_refuses_a_line_over_the_limit_without_holding_it(tmp_path):
    import io
    from harness.protocol.server import serve
    from harness.tokenizer.serve import TokenizerBackend
    stdin = io.BytesIO(INFO + b"\n" + b"x" * 5000 + b"\n" + b"y" * 3 + b"\n" + INFO + b"\n")
    stdout = io.BytesIO()
    serve(TokenizerBackend(Tokenizer.from_gguf(_tiny_vocab(tmp_path))), stdin, stdout, limit=1000)
    out = [json.loads(x) for x in stdout.getvalue().splitlines()]
    assert len(out) == 4 and out[0] == out[3] and out[0]["vocab_type"] == "wpm"
    assert "longer than 1000 bytes" in out[1]["error"] and "bad JSON" in out[2]["error"]


def test_serve_error_messages_are_bounded(tmp_path):
    code, out, err = run_raw(_tiny_vocab(tmp_path),
                             json.dumps({"op": "encode", "text_hex": "z" * 100_000}).encode() + b"\n")
    assert code == 0 and len(out) == 1 and len(out[0]["error"]) < 2100, err


def test_batch_answers_each_request_in_order_and_info_says_so():
    import json

    class Tok:
        n_vocab = 3

        def encode(self, text, add_special=False, parse_special=False):
            return [len(text)]

        def token_to_piece(self, id, special=False):
            return b"p%d" % id

    line = json.dumps({"op": "batch", "requests": [
        {"op": "encode", "text": "abc"}, {"op": "nope"}, {"op": "piece", "id": 2}, {"op": "batch"}]})
    out = handle(Tok(), line)["responses"]
    assert out[0] == {"ids": [3]} and "unknown op 'nope'" in out[1]["error"]
    assert out[2] == {"bytes_hex": b"p2".hex()} and out[3] == {"error": "a batch cannot hold a batch"}
    assert handle(Tok(), '{"op": "batch", "requests": 5}')["error"].startswith("'requests' must be a list")
    assert handle(Tok(), '{"op": "info"}')["batch"] is True
