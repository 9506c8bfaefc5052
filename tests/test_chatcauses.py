"""Chat causes (harness/engine/chatcauses.py): each deliberately broken chat port of
tests/ports/chatbug.py comes out as one cause, named after its defect; the bugs the catalogue
has no entry for (rstripped assistant contents, CRLF read as LF) as one unexplained cause each;
llama.cpp as a port as none.

The pinned vocab templates hold no block followed by a newline and no ``tojson``, so the
Jinja2-defaults and tojson ports are checked on a template that has them (qwen2's vocab)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from harness import chatcheck
from harness.conformance.needs import require
from harness.engine.chatcauses import causes
from harness.engine.chatdiff import CONVERSATIONS, ChatCase, compare
from harness.protocol.chat import ChatAnswer

#: A ChatML template written with newlines after its blocks and the tools as tojson.
TEMPLATE = ("{% if tools %}<|im_start|>system\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}<|im_end|>\n"
            "{% endif %}\n{% for message in messages %}\n<|im_start|>{{ message.role }}\n{{ message.content }}"
            "<|im_end|>\n{% endfor %}\n{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


@pytest.fixture(scope="module")
def qwen2():
    from reference import chat
    from reference.inproc import load_reference
    from reference.vocabs import vocab_path
    require(chat.chat_library)
    return require(lambda: load_reference(vocab_path("qwen2")))


def _port(factory: str, vocab: str, **kw):
    from reference.vocabs import vocab_path
    from tests.ports import chatbug
    return getattr(chatbug, factory)(str(vocab_path(vocab)), **kw)


def _cases_on(template: str, port, ref) -> list[ChatCase]:
    """The fixed conversations (but the prefilled one) on ``template``: llama.cpp's answer and the port's."""
    from reference.chat import render
    out = []
    for conv in CONVERSATIONS:
        if not conv.add_generation_prompt:
            continue
        r = render(template, conv.messages, tools=conv.tools, add_generation_prompt=True, kwargs=conv.kwargs, vocab=ref)
        expected = ChatAnswer(r.data, r.ids)
        got = port.chat(template, conv.messages, tools=conv.tools, add_generation_prompt=True, kwargs=conv.kwargs)
        why = compare(expected, got)
        out.append(ChatCase("qwen2", conv.name, "diverge" if why else "agree", why, (conv, expected, got)))
    return out


@pytest.mark.parametrize("factory, title", [("jinja2_defaults", "Jinja2's whitespace defaults"),
                                            ("jinja2_tojson", "tojson as Jinja2's")])
def test_a_jinja2_default_is_one_cause_named_after_it(qwen2, factory, title):
    cases = _cases_on(TEMPLATE, _port(factory, "qwen2"), qwen2)
    vocab = replace(chatcheck.chat_vocab("qwen2"), template=TEMPLATE, tool_template="")
    found = causes(cases, {"qwen2": vocab})
    assert [c.title.split(":")[0] for c in found] == [title], [c.title for c in found]
    assert len(found[0].cases) == sum(c.outcome == "diverge" for c in cases) > 0


@pytest.mark.parametrize("factory, vocab, title", [
    ("bos_doubled", "phi-3", "BOS doubled"),
    ("bos_text_kept", "phi-3", "the rendering keeps the template's leading BOS text"),
    ("specials_plain", "qwen2", "special-token text read as plain text")])
def test_a_broken_port_is_one_cause_in_chat_check(tmp_path, capsys, factory, vocab, title):
    out = tmp_path / "chat.json"
    assert chatcheck.main(["--port", f"py:tests.ports.chatbug:{factory}", "--vocabs", vocab, "--examples", "3",
                           "--json", str(out)]) == 1
    report = json.loads(out.read_text(encoding="utf-8"))
    assert len(report["causes"]) == 1 and report["causes"][0]["title"].startswith(title)
    assert report["causes"][0]["cases"] == sum(c["outcome"] == "diverge" for c in report["cases"])
    assert "cause 1: " + title in capsys.readouterr().out


@pytest.mark.parametrize("factory, vocab", [("rstrip_assistant", "qwen2"), ("crlf", "phi-3")])
def test_a_bug_the_catalogue_lacks_is_one_unexplained_cause(factory, vocab):
    from harness.engine.chatgen import generate
    from harness.inputs.vocabtexts import vocab_texts
    from reference.inproc import load_reference
    from reference.vocabs import vocab_path
    ref = require(lambda: load_reference(vocab_path(vocab)))
    cases, _ = generate(vocab, _port(factory, vocab), ref, vocab_texts(vocab_path(vocab), ref), examples=30, seed=0,
                        shrink_seconds=1)
    found = causes(cases, {vocab: chatcheck.chat_vocab(vocab)})
    assert [c.title for c in found] == ["unexplained (chat): bytes dropped (whitespace)"]


def test_a_bug_behind_the_bos_is_named_behind_it_not_by_the_bos_bytes():
    """A port that doubles the BOS and reads CRLF as LF meets every CR with the BOS first: the
    edit at the first divergent byte is the BOS text, which said nothing of the CR. Every case
    is the BOS cause's; those with a CR are also the CR's unexplained cause, named by the edit
    the BOS leaves (two defects, two causes, no third)."""
    from harness.engine.chatgen import generate
    from harness.inputs.vocabtexts import vocab_texts
    from reference.inproc import load_reference
    from reference.vocabs import vocab_path
    ref = require(lambda: load_reference(vocab_path("phi-3")))
    cases, _ = generate("phi-3", _port("bos_doubled_crlf", "phi-3"), ref, vocab_texts(vocab_path("phi-3"), ref),
                        examples=30, seed=0, shrink_seconds=1)
    from harness.engine.chatcauses import CATALOGUE
    bos = next(v.title for v in CATALOGUE if v.name == "bos-doubled")
    found = {c.title: c for c in causes(cases, {"phi-3": chatcheck.chat_vocab("phi-3")})}
    crlf = "unexplained (chat): bytes dropped (whitespace)"
    assert set(found) == {bos, crlf}, list(found)
    assert len(found[bos].cases) == sum(c.outcome == "diverge" for c in cases)
    assert found[crlf].cases == found[crlf].with_another == found[bos].with_another != []


def test_llama_cpp_as_a_port_has_no_causes(tmp_path):
    out = tmp_path / "chat.json"
    assert chatcheck.main(["--port", "llama.cpp", "--vocabs", "phi-3", "--examples", "3", "--json", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["causes"] == []


def test_the_chat_page_shows_each_cause_with_both_renderings_and_where_they_part(tmp_path):
    """chat-check --html: a port that keeps the template's BOS text and adds BOS again (phi-3)
    gives one cause, and its section shows llama.cpp's rendering beside the port's, the first
    divergent character marked in each ('|' of '<|user|>' against 's' of '<s>'), and the
    first divergent prompt id."""
    page = tmp_path / "chat.html"
    assert chatcheck.main(["--port", "py:tests.ports.chatbug:bos_doubled", "--vocabs", "phi-3", "--examples", "3",
                           "--html", str(page)]) == 1
    text = page.read_text(encoding="utf-8")
    assert text.count("<section>") == 1 and "<h2>BOS doubled" in text
    assert "<pre>&lt;<mark>|</mark>user|&gt;\\n\n" in text and "<pre>&lt;<mark>s</mark>&gt;&lt;|user|&gt;" in text
    assert "prompt ids part at index 1: llama.cpp [1, 32010" in text and "port [1, 1, 32010" in text
