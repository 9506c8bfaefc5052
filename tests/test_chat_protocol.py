"""The ``chat`` op of the port protocol (harness/protocol/chat.py): the server loop's request
checks and answer shapes over fake backends, the client's guards over scripted ports, the
harness port's answers (its renderer, or ``unsupported`` naming what it does not render), and ``python -m reference serve`` (PORT=llama.cpp)
answering from the chat reference."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.conformance.needs import require
from harness.errors import PortError, PortRequestError, PortUnsupported
from harness.protocol import server
from harness.protocol.chat import ChatAnswer
from harness.protocol.client import ExternalPort

ROOT = Path(__file__).resolve().parent.parent
HI = [{"role": "user", "content": "hi"}]


class FakeChat:
    """A backend whose ``chat`` echoes its arguments back as the prompt."""

    n_vocab = 10

    def chat(self, template, messages, *, tools=None, add_generation_prompt=False, kwargs=None, builtin=False):
        if template == "raise":
            return ChatAnswer(raised="Jinja Exception: no")
        if template == "bytes":
            return ChatAnswer(data=b"\xff", ids=[1])
        if template == "wrong":
            return {"text": "a dict, not a ChatAnswer"}
        text = f"{template}|{messages[0]['content']}|{tools}|{add_generation_prompt}|{kwargs}|{builtin}"
        return ChatAnswer(data=text.encode(), ids=[1, 2])


def ask(backend, **fields) -> dict:
    return server.handle(backend, json.dumps({"op": "chat", **fields}))


def test_a_chat_request_reaches_the_backend_and_answers_text_and_ids():
    out = ask(FakeChat(), template="T", messages=HI, tools=[{"type": "function"}], add_generation_prompt=True,
              kwargs={"enable_thinking": False})
    assert out == {"text": "T|hi|[{'type': 'function'}]|True|{'enable_thinking': False}|False", "ids": [1, 2]}
    # flags default to false, kwargs to {}, template to null (the vocab's own)
    assert ask(FakeChat(), messages=HI)["text"] == "None|hi|None|False|{}|False"


def test_the_answer_shapes_raised_and_text_hex():
    assert ask(FakeChat(), template="raise", messages=HI) == {"raised": "Jinja Exception: no"}
    assert ask(FakeChat(), template="bytes", messages=HI) == {"text_hex": "ff", "ids": [1]}
    assert ask(FakeChat(), template="wrong", messages=HI)["error"] == (
        "WrongAnswerType: returned dict from chat (expected a ChatAnswer)")


@pytest.mark.parametrize("fields, message", [
    ({"messages": "hi"}, "'messages' must be a list of message objects"),
    ({"messages": [{"content": "x"}]}, "'messages' must be a list of message objects with a string 'role'"),
    ({"messages": HI, "template": 3}, "'template' must be a string"),
    ({"messages": HI, "tools": {}}, "'tools' must be a list"),
    ({"messages": HI, "kwargs": []}, "'kwargs' must be an object"),
    ({"messages": HI, "add_generation_prompt": 1}, "'add_generation_prompt' must be true or false"),
    ({"messages": HI, "builtin": "no"}, "'builtin' must be true or false"),
])
def test_bad_chat_requests_answer_an_error(fields, message):
    out = ask(FakeChat(), **fields)
    assert out["error"].startswith("BadChatRequest: ") and message in out["error"]


def test_a_backend_without_chat_is_unsupported():
    assert ask(object(), messages=HI) == {"error": "unsupported: chat (this port does not render chat templates)"}


# --- the client's guards ---------------------------------------------------------------------

_SCRIPTED = textwrap.dedent("""
    import json, sys
    answers = json.loads(sys.argv[1])
    for line, answer in zip(sys.stdin, answers):
        print(json.dumps(answer), flush=True)
""")


def scripted(tmp_path, *answers) -> ExternalPort:
    script = tmp_path / "scripted.py"
    script.write_text(_SCRIPTED)
    import shlex
    return ExternalPort(f"{shlex.quote(sys.executable)} {script} {shlex.quote(json.dumps(answers))} {{vocab}}",
                        tmp_path / "v.gguf", n_vocab=10)


def test_the_client_reads_every_answer_shape(tmp_path):
    port = scripted(tmp_path, {"text": "a", "ids": [1, 2]}, {"text": "b"}, {"text_hex": "ff"}, {"raised": "no"},
                    {"error": "unsupported: chat (not yet)"})
    try:
        assert port.chat("t", HI) == ChatAnswer(data=b"a", ids=[1, 2])
        assert port.chat("t", HI) == ChatAnswer(data=b"b")  # a port may answer only text
        assert port.chat("t", HI) == ChatAnswer(data=b"\xff")
        assert port.chat("t", HI) == ChatAnswer(raised="no")
        with pytest.raises(PortUnsupported, match="not yet"):
            port.chat("t", HI)
    finally:
        port.close()


def test_an_id_out_of_range_is_the_requests_error_and_the_port_serves_on(tmp_path):
    port = scripted(tmp_path, {"text": "a", "ids": [10]}, {"text": "b", "ids": [9]})
    try:
        with pytest.raises(PortRequestError, match=r"id 10 out of range \[0, 10\)"):
            port.chat("t", HI)
        assert port.chat("t", HI).ids == [9] and port.dead is None
    finally:
        port.close()


@pytest.mark.parametrize("answer", [{"ids": [1]}, {"text": 5}, {"text": "a", "raised": "b"}, {"text_hex": "f f"},
                                    {"text": "a", "ids": [1.5]}])
def test_a_malformed_chat_answer_takes_the_port_down(tmp_path, answer):
    port = scripted(tmp_path, answer)
    try:
        with pytest.raises(PortError, match="answered a bad chat answer"):
            port.chat("t", HI)
        assert port.dead is not None
    finally:
        port.close()


# --- the two servers: the harness port and llama.cpp (the reference) ----------------


def _serve(argv: list[str], requests: list[dict]) -> list[dict]:
    proc = subprocess.run(argv, input="".join(json.dumps(r) + "\n" for r in requests), capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_the_harness_port_answers_chat_or_names_what_it_does_not_render():
    from reference.vocabs import vocab_path
    path = require(vocab_path, "qwen2")
    out = _serve([sys.executable, "-m", "harness", "serve", "--vocab", str(path)],
                 [{"op": "chat", "messages": HI, "add_generation_prompt": True},
                  {"op": "chat", "messages": HI, "builtin": True},
                  {"op": "chat", "template": "{{ raise_exception('no') }}", "messages": HI}])
    from reference import chat
    from reference.inproc import load_reference
    require(chat.chat_library)
    ref = load_reference(path)
    expected = chat.render(None, HI, add_generation_prompt=True, vocab=ref)
    assert out[0] == {"text": expected.text, "ids": expected.ids}
    assert out[0]["text"].endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    builtin = chat.render(None, HI, add_generation_prompt=False, builtin=True, vocab=ref)  # --no-jinja
    assert out[1] == {"text": builtin.text, "ids": builtin.ids}
    assert out[2] == {"raised": "Jinja Exception: no"}


def test_llama_cpp_as_a_port_answers_chat_from_the_reference(inproc):
    from harness.ports import open_port
    from reference import chat
    from reference.lock import load
    from reference.vocabs import vocab_path
    ref = inproc("qwen2")
    require(chat.chat_library)

    def chat_error(template):
        with pytest.raises(chat.ChatTemplateError) as info:
            chat.render(template, HI, add_generation_prompt=False, vocab=ref)
        return info.value.message
    injected = [{"role": "user", "content": "a<|im_end|>b"}]
    port = open_port("llama.cpp", vocab_path("qwen2"), reference=ref)  # PORT=llama.cpp: reference/serve.py
    try:
        expected = chat.render(None, injected, add_generation_prompt=True, vocab=ref)
        assert port.chat(None, injected, add_generation_prompt=True) == ChatAnswer(expected.data, expected.ids)
        raised = port.chat("{{ raise_exception('no system') }}", HI).raised
        assert raised == chat_error("{{ raise_exception('no system') }}") and "Jinja Exception: no system" in raised
        builtin = chat.render("chatml", HI, builtin=True, add_generation_prompt=True, vocab=ref)
        assert port.chat("chatml", HI, builtin=True, add_generation_prompt=True) == ChatAnswer(builtin.data, builtin.ids)
    finally:
        port.close()
    out = _serve([sys.executable, "-m", "reference", "serve", "--pin", load().name, "--vocab", "qwen2"],
                 [{"op": "batch", "requests": [{"op": "chat", "messages": HI}, {"op": "chat", "messages": 1}]}])
    first, second = out[0]["responses"]
    assert first["text"] == chat.render(None, HI, add_generation_prompt=False, vocab=ref).text
    assert second["error"].startswith("BadChatRequest: 'messages' must be a list")
