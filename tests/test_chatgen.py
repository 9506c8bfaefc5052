"""The generated phase of the chat check (harness/engine/chatgen.py): Hypothesis conversations
catch chat bugs the fixed conversations miss, shrink each to a message or two with the first
divergent byte and token named; llama.cpp as a port and the harness renderer give no divergence
on a few examples, and typed content renders as llama.cpp's."""

from __future__ import annotations

import pytest

from harness import chatcheck
from harness.conformance.needs import require
from harness.engine.chatdiff import check_vocab
from harness.engine.chatgen import conversations, generate


@pytest.fixture(scope="module")
def vocab():
    """``name -> (reference, its texts)``, loaded once per vocab."""
    from reference import chat
    from reference.inproc import load_reference
    from reference.vocabs import vocab_path

    from harness.inputs.vocabtexts import vocab_texts
    require(chat.chat_library)
    loaded = {}

    def get(name):
        if name not in loaded:
            ref = require(lambda: load_reference(vocab_path(name)))
            loaded[name] = ref, vocab_texts(vocab_path(name), ref)
        return loaded[name]
    return get


def _buggy(name: str, factory: str):
    from reference.vocabs import vocab_path
    from tests.ports import chatbug
    return getattr(chatbug, factory)(str(vocab_path(name)))


# phi-3's <|end|> strips the whitespace before it when tokenized: the texts differ, the ids do not
@pytest.mark.parametrize("factory, vocab_name, ids", [("rstrip_assistant", "qwen2", "; ids differ at index "),
                                                      ("crlf", "phi-3", "; the same ids")])
def test_a_bug_the_fixed_conversations_miss_is_caught_and_shrunk(vocab, factory, vocab_name, ids):
    ref, texts = vocab(vocab_name)
    port = _buggy(vocab_name, factory)
    assert {c.outcome for c in check_vocab(vocab_name, port, ref)} == {"agree"}  # the fixed ones miss it
    cases, shrunk = generate(vocab_name, port, ref, texts, examples=30, seed=0, shrink_seconds=20)
    assert "diverge" in {c.outcome for c in cases}
    assert [s.kind for s in shrunk] == ["text differs"] and shrunk[0].shrunk
    messages, chars = shrunk[0].size()
    assert messages <= 2 and chars <= 3, shrunk[0].conversation
    assert shrunk[0].detail.startswith("text differs at byte ") and ids in shrunk[0].detail


def test_the_same_seed_draws_the_same_conversations(vocab):
    from harness.engine.chatgen import _hypothesis
    _, texts = vocab("qwen2")
    runs = [[], [], []]
    for run, seed in zip(runs, (0, 0, 1)):
        _hypothesis(conversations(texts), run.append, 8, seed, shrink=False)
    assert runs[0] == runs[1] != runs[2]


def test_the_drawn_conversations_hold_what_the_issue_asks_for(vocab):
    from harness.engine.chatgen import _hypothesis
    _, texts = vocab("qwen2")
    drawn = []
    _hypothesis(conversations(texts), drawn.append, 60, 0, shrink=False)
    messages = [m for c in drawn for m in c.messages]
    texts_of = {id(m): _text(m["content"]) for m in messages}
    assert {m["role"] for m in messages} == {"system", "user", "assistant", "tool"}
    assert any("tool_calls" in m for m in messages) and any("reasoning_content" in m for m in messages)
    assert any(c.tools for c in drawn) and any(c.kwargs for c in drawn)
    assert any(c.messages[-1]["role"] == "assistant" for c in drawn)
    assert any(any(s in texts_of[id(m)] for s in texts.specials) for m in messages if m["role"] in ("user", "system"))
    assert any(not texts_of[id(m)] for m in messages) and any(len(texts_of[id(m)]) > 1000 for m in messages)
    assert any(isinstance(m["content"], list) for m in messages)  # typed content
    calls = [t["function"]["arguments"] for m in messages for t in m.get("tool_calls", ())]
    assert any(isinstance(a, dict) for a in calls) and any(isinstance(a, str) and not a.isascii() for a in calls)


def _text(content) -> str:
    """A content's text (typed content's parts joined; None is empty)."""
    if isinstance(content, list):
        return "".join(p["text"] for p in content)
    return content or ""


def test_the_harness_port_agrees_on_generated_cases(tmp_path):
    # Every generated case agrees or is named unsupported: none diverges, none is shrunk.
    import json
    out = tmp_path / "chat.json"
    assert chatcheck.main(["--vocabs", "qwen2", "--examples", "8", "--json", str(out)]) in (0, 4)
    report = json.loads(out.read_text(encoding="utf-8"))
    assert {c["outcome"] for c in report["cases"]} <= {"agree", "unsupported"} and not report["shrunk"]


@pytest.mark.parametrize("vocab_name, content", [
    ("qwen2", [{"type": "text", "text": ""}, {"type": "text", "text": "b"}, {"type": "text", "text": "c"}]),
    ("gemma-4", [{"type": "text", "text": "\x85it's"}]),
])
def test_typed_content_renders_as_llama_cpp(vocab, vocab_name, content):
    # What the generated phase found (--examples 100, seed 0): a string-only template joins text
    # parts with no newline before the first one that is not empty (concat_content_parts), and
    # gemma-4's "content | trim" prints the list as llama.cpp prints it (apply_filter's coercion,
    # value_to_string_repr: quotes as they are, JSON for a string holding a quote).
    from harness.engine.chatdiff import Conversation, check_one
    from harness.tokenizer.facade import Tokenizer
    from harness.tokenizer.serve import TokenizerBackend
    from reference.vocabs import vocab_path
    ref, _ = vocab(vocab_name)
    port = TokenizerBackend(Tokenizer.from_gguf(vocab_path(vocab_name)))
    conv = Conversation("typed", [{"role": "system", "content": content}, {"role": "user", "content": "Hi"}])
    case, expected, got = check_one(vocab_name, port, ref, conv)
    assert case.outcome == "agree" and got == expected, case.detail


def test_llama_cpp_as_a_port_agrees_on_generated_cases(capsys):
    assert chatcheck.main(["--port", "llama.cpp", "--vocabs", "phi-3", "--examples", "8", "--seed", "3"]) == 0
    assert "(7 fixed, 8 generated, seed 3): 15 agree, 0 diverge" in capsys.readouterr().out


def test_chat_check_prints_the_shrunk_conversation_and_exits_1(capsys, vocab):
    vocab("qwen2")
    code = chatcheck.main(["--port", "py:tests.ports.chatbug:rstrip_assistant", "--vocabs", "qwen2",
                           "--examples", "30"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "qwen2 [generated, shrunk to " in out and '"role": "assistant"' in out
