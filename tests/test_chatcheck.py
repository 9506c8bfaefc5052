"""The differential chat check (harness/engine/chatdiff.py, ``python -m harness chat-check``):
the harness port agrees where its renderer covers a case and is unsupported (never a pass) where
it does not, llama.cpp as a port agrees on every case, and
ports with the classic chat bugs diverge where they should."""

from __future__ import annotations

import pytest

from harness import chatcheck
from harness.conformance.needs import require
from harness.engine.chatdiff import CONVERSATIONS, check_vocab, reference_answer
from harness.protocol.chat import ChatAnswer


@pytest.fixture(scope="module")
def qwen2():
    from reference import chat
    from reference.inproc import load_reference
    from reference.vocabs import vocab_path
    require(chat.chat_library)
    return require(lambda: load_reference(vocab_path("qwen2")))


class Wrapped:
    """A port that answers llama.cpp's rendering, then ``bug(ref, answer)`` changes it."""

    def __init__(self, ref, bug):
        self.ref, self.bug = ref, bug

    def chat(self, template, messages, *, tools=None, add_generation_prompt=False, kwargs=None, builtin=False):
        from harness.engine.chatdiff import Conversation
        answer = reference_answer(self.ref, Conversation("x", messages, add_generation_prompt, tools, kwargs or {}))
        return self.bug(self.ref, answer)


def test_the_vocabs_that_carry_a_template():
    assert require(chatcheck.chat_vocabs) == ["command-r", "gemma-4", "phi-3", "qwen2", "qwen35"]


def test_the_harness_port_agrees_and_names_what_it_does_not_render(capsys):
    # the one case left: an assistant message last, continued (prefill_assistant), not ported
    assert chatcheck.main(["--vocabs", "qwen2", "--examples", "0"]) == 4
    out = capsys.readouterr().out
    assert f"{len(CONVERSATIONS) - 1} agree, 0 diverge, 0 port error, 1 unsupported; exit 4" in out
    assert "continuing a final assistant message" in out


def test_llama_cpp_as_a_port_agrees_on_every_case(capsys):
    assert chatcheck.main(["--port", "llama.cpp", "--vocabs", "qwen2", "phi-3", "--examples", "0"]) == 0
    assert f"{2 * len(CONVERSATIONS)} agree, 0 diverge, 0 port error, 0 unsupported; exit 0" in capsys.readouterr().out


def test_a_port_that_parses_message_text_as_plain_diverges_on_ids_only(qwen2):
    # the port tokenizes with parse_special false: only the conversation holding special-token
    # text differs, and in its ids (the text is the same)
    def plain(ref, answer):
        return ChatAnswer(answer.data, ref.encode(answer.data.decode(), add_special=True, parse_special=False))
    cases = check_vocab("qwen2", Wrapped(qwen2, plain), qwen2)
    diverged = {c.conversation: c.detail for c in cases if c.outcome == "diverge"}
    assert "special text in a message" in diverged and diverged["special text in a message"].startswith("ids differ")


def test_a_port_that_doubles_a_text_or_never_raises_diverges(qwen2):
    def doubled(ref, answer):
        return ChatAnswer(b"<|im_start|>" + answer.data, answer.ids)
    cases = check_vocab("qwen2", Wrapped(qwen2, doubled), qwen2)
    assert {c.outcome for c in cases} == {"diverge"} and cases[0].detail.startswith("text differs at byte 12")
    # a template that raises in llama.cpp must raise in the port too
    from harness.engine.chatdiff import compare
    assert compare(ChatAnswer(raised="Jinja Exception: x"), ChatAnswer(raised="my own words")) == ""
    assert "the port raised" in compare(ChatAnswer(b"a", [1]), ChatAnswer(raised="no"))


def test_a_port_that_answers_garbage_is_a_port_error(qwen2):
    class Garbage:
        def chat(self, *args, **kwargs):
            return {"text": "not a ChatAnswer"}
    cases = check_vocab("qwen2", Garbage(), qwen2)
    assert {c.outcome for c in cases} == {"port error"} and chatcheck.exit_code([c.outcome for c in cases]) == 2


CRASHING_PORT = r'''
import json, os, sys
# A chat port that aborts (as kherud-llama's native library does) on a user message "  lead and
# trail  \n\n" and answers every other conversation unsupported.
for line in sys.stdin:
    req = json.loads(line)
    if req.get("op") == "chat" and any(m.get("content") == "  lead and trail  \n\n" for m in req["messages"]):
        os.abort()
    print(json.dumps({"error": "unsupported: not this one"}), flush=True)
'''


def test_a_port_that_crashes_on_one_conversation_is_opened_again_for_the_others(tmp_path, capsys):
    """One outcome never hides another: the crash is that case's port error, and the
    conversations after it are still asked (each unsupported here), not 'down after an
    earlier error' (kherud-llama's chat aborted on an empty message and every later case of
    the vocab read as a port error)."""
    import json
    import sys
    script = tmp_path / "crash.py"
    script.write_text(CRASHING_PORT)
    out = tmp_path / "chat.json"
    assert chatcheck.main(["--port", f"{sys.executable} {script} --vocab {{vocab}}", "--vocabs", "qwen2",
                           "--examples", "0", "--json", str(out)]) == 2
    cases = {c["conversation"]: c for c in json.loads(out.read_text())["cases"]}
    assert cases["whitespace kept"]["outcome"] == "port error" and "crashed" in cases["whitespace kept"]["detail"]
    after = [c for name, c in cases.items() if name in ("thinking off", "tools and a tool call")]
    assert [c["outcome"] for c in after] == ["unsupported", "unsupported"], after
