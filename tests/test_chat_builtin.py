"""llama.cpp's built-in chat formats in Python (harness/chat/builtin.py) against llama.cpp's own.

Every built-in name (``llama_chat_builtin_templates``) and every pinned models/templates/*.jinja
(detected, as ``llm_chat_detect_template`` does) renders the fixed conversations of
CONVERSATIONS through :func:`harness.chat.builtin.apply` and through
``reference.chat.apply_builtin`` (``llama_chat_apply_template``); a case is ``exact`` (the same
bytes), ``both refuse`` (no format, in both) or ``differ``. The harness port's ``chat`` op with
``builtin`` (llama-server's ``--no-jinja`` route) is compared with llama.cpp's text and prompt ids.
The counts are asserted, and the comparison is shown to catch an injected difference.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from harness.conformance.needs import require
from harness.errors import ChatTemplateError
from tests.support.chat import pinned_templates

SYSTEM, USER, ASSISTANT = "system", "user", "assistant"


def _msgs(*pairs) -> list[dict]:
    return [{"role": role, "content": content} for role, content in pairs]


#: (messages, add_generation_prompt) per conversation.
CONVERSATIONS = {
    "system-user": (_msgs((SYSTEM, "Be terse."), (USER, "2+2?")), True),
    "multi-turn": (_msgs((SYSTEM, "Be terse."), (USER, "Hi"), (ASSISTANT, " Hello. "), (USER, "What is 2+2?")), True),
    "consecutive-users": (_msgs((USER, "one"), (USER, "two")), True),
    "empty-content": (_msgs((USER, ""), (ASSISTANT, ""), (USER, "")), True),
    "unicode": (_msgs((SYSTEM, "\t Grüße \n"), (USER, "  Grüße 👋 日本語\t\n")), True),
    "no-gen-prompt": (_msgs((USER, "Hi"), (ASSISTANT, "Hello.")), False),
    "other-roles": (_msgs((USER, "2+2?"), ("assistant_tool_call", "add(2, 2)"), ("tool", "4"), ("function", "4"),
                          ("developer", "x")), True),
}
#: Measured at 0c1e570: 54 names x 7 conversations; 70 pinned templates x 7 conversations.
EXPECTED_NAMES = {"exact": 378}
EXPECTED_TEMPLATES = {"exact": 364, "both refuse": 126}
#: The pinned templates no built-in format matches (llama.cpp refuses them on this route).
UNKNOWN_TEMPLATES = [
    "Apertus-8B-Instruct", "Apriel-1.6-15b-Thinker-fixed", "GigaChat3-10B-A1.8B", "GigaChat3.1-10B-A1.8B", "Kimi-K3",
    "MiniMax-M1", "MiniMax-M2", "MiniMax-M3", "NVIDIA-Nemotron-Nano-v2", "Reka-Edge", "Spark2.5",
    "google-gemma-4-31B-it-interleaved", "google-gemma-4-31B-it", "muse-glimmer", "poolside-Laguna-S-2.1",
    "poolside-Laguna-XS-2.1", "poolside-Laguna-XS.2", "tencent-Hy3",
]
#: The port's chat op with builtin=true: the 5 vocab templates and 6 named ones on qwen2, x 7 conversations
#: plus a request with tools (refused), a final assistant message (continued), typed content parts
#: (joined by newlines) and an assistant tool call (dropped).
VOCAB_TEMPLATES = ("command-r", "gemma-4", "phi-3", "qwen2", "qwen35")
NAMED_ON_QWEN2 = ("chatml", "llama2-sys-bos", "gemma", "gigachat", "mistral-v7", "INVALID")
EXPECTED_PORT = {"exact": 90, "both refuse": 31}  # refused: tools (11), INVALID (10 more), gemma-4's template (10)


def _call(fn, *args):
    from harness.chat.render import ChatRaised
    try:
        return fn(*args)
    except (ChatTemplateError, ChatRaised) as e:
        return e


def outcome(reference, harness) -> str:
    """``exact``, ``both refuse`` or ``differ`` for one case (each side a rendering or its exception)."""
    refused = isinstance(reference, Exception), isinstance(harness, Exception)
    if all(refused):
        return "both refuse"
    return "exact" if not any(refused) and reference == harness else "differ"


def compare(ref_chat, templates: dict[str, str]) -> tuple[collections.Counter, list[str]]:
    """Every (label, template) x every conversation through both; (counts, the differing cases)."""
    from harness.chat import builtin
    counts, differ = collections.Counter(), []
    for label, template in templates.items():
        for name, (messages, add_ass) in CONVERSATIONS.items():
            ref = _call(ref_chat.apply_builtin, template, messages, add_ass)
            got = _call(builtin.apply, template, messages, add_ass)
            kind = outcome(ref, got)
            counts[kind] += 1
            if kind == "differ":
                differ.append(f"{label} [{name}]:\n  llama.cpp {ref!r:.300}\n  harness   {got!r:.300}")
    return counts, differ


def test_the_names_are_llama_cpps(ref_chat):
    from harness.chat import builtin
    assert builtin.names() == ref_chat.builtin_templates()
    assert set(builtin.FORMATS) == set(builtin.NAMES)


def test_every_builtin_name_renders_as_llama_cpp(ref_chat):
    from harness.chat import builtin
    counts, differ = compare(ref_chat, {name: name for name in builtin.names()})
    assert dict(counts) == EXPECTED_NAMES, "\n".join(differ)


def test_every_pinned_template_is_detected_as_llama_cpp_does(ref_chat):
    counts, differ = compare(ref_chat, {p.name: p.read_text(encoding="utf-8") for p in pinned_templates()})
    print(dict(counts))
    assert dict(counts) == EXPECTED_TEMPLATES, "\n".join(differ)


def test_the_detected_format_is_the_one_llama_cpp_renders_with(ref_chat):
    """Detection alone: llama.cpp renders each pinned template as it renders the name detected here
    (formats that render alike, granite-4.0 and -4.1, are not told apart by this), and refuses
    exactly those detected as none; ``dots1`` has no name to ask llama.cpp by."""
    from harness.chat.detect import detect
    unknown = []
    for path in pinned_templates():
        source, fmt = path.read_text(encoding="utf-8"), detect(path.read_text(encoding="utf-8"))
        for messages, add_ass in CONVERSATIONS.values():
            by_source = _call(ref_chat.apply_builtin, source, messages, add_ass)
            if fmt is None:
                assert isinstance(by_source, ChatTemplateError), path.name
            else:
                assert by_source == ref_chat.apply_builtin(fmt, messages, add_ass), (path.name, fmt)
        if fmt is None:
            unknown.append(path.stem)
    assert unknown == UNKNOWN_TEMPLATES


def test_the_comparison_catches_an_injected_difference(ref_chat, monkeypatch):
    """A format table entry with a newline missing (chatml's suffix) makes exact cases differ."""
    from harness.chat import builtin
    monkeypatch.setitem(builtin.FORMATS, "chatml", builtin.Turns({}, ("<|im_start|>{role}\n", "<|im_end|>"),
                                                                 gen="<|im_start|>assistant\n"))
    counts, differ = compare(ref_chat, {"chatml": "chatml"})
    assert counts == {"differ": len(CONVERSATIONS)}, differ
    counts, _ = compare(ref_chat, {p.name: p.read_text(encoding="utf-8") for p in pinned_templates()})
    assert counts["differ"] == 16 * len(CONVERSATIONS)  # the 16 pinned templates detected as chatml


def test_detection_rules_follow_llama_cpps_order():
    from harness.chat.detect import detect
    assert detect("mistral") == "llama2"                       # a prefix, not a name
    assert detect("<|im_start|><|im_sep|>") == "phi4"
    assert detect("<|im_start|>[INST]") == "chatml"            # the first rule that holds wins
    assert detect("[INST] ' [INST] ' + system_message") == "mistral-v1"
    assert detect('"[INST]"[AVAILABLE_TOOLS]') == "mistral-v3-tekken"
    assert detect("<|endofuserprompt|>") == "dots1" and detect("dots1") is None


def _port_case(ref_chat, port, ref, template, messages, add_ass, tools=None):
    """(outcome, detail) of one chat request with builtin=true: the port against llama.cpp (text and ids)."""
    from harness.protocol.chat import ChatAnswer
    expected = _call(lambda: ref_chat.render(template, messages, tools=tools, add_generation_prompt=add_ass,
                                             builtin=True, vocab=ref))
    got = port.chat(template, messages, tools=tools, add_generation_prompt=add_ass, builtin=True)
    if isinstance(expected, ChatTemplateError) or got.raised is not None:
        both = isinstance(expected, ChatTemplateError) and got.raised is not None
        return ("both refuse" if both else "differ"), f"llama.cpp {expected!r:.200}, port {got!r:.200}"
    same = ChatAnswer(expected.data, expected.ids) == got
    return ("exact" if same else "differ"), f"llama.cpp {expected!r:.300}\n  port {got!r:.300}"


def test_the_port_answers_chat_with_builtin_as_llama_server(ref_chat):
    from harness.tokenizer.facade import Tokenizer
    from harness.tokenizer.serve import TokenizerBackend
    from reference.inproc import load_reference
    from reference.vocabs import vocab_path
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
    extra = {"tools": (_msgs((USER, "2+2?")), True, tools),
             "prefill": (_msgs((USER, "2+2?"), (ASSISTANT, "4")), True, None),
             "typed-parts": ([{"role": USER, "content": [{"type": "text", "text": ""}, {"type": "text", "text": "a"},
                                                         {"type": "text", "text": "b"}]}], True, None),
             "tool-calls": ([{"role": USER, "content": "2+2?"}, {"role": ASSISTANT, "content": None, "tool_calls": [
                 {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}]},
                 {"role": USER, "content": "ok"}], True, None)}
    requests = [(v, None) for v in VOCAB_TEMPLATES] + [("qwen2", t) for t in NAMED_ON_QWEN2]
    counts, differ, ports = collections.Counter(), [], {}
    for vocab, template in requests:
        ref = require(lambda: load_reference(vocab_path(vocab)))
        port = ports.setdefault(vocab, TokenizerBackend(Tokenizer.from_gguf(vocab_path(vocab))))
        cases = {name: (*conv, None) for name, conv in CONVERSATIONS.items()} | extra
        for name, (messages, add_ass, tool_list) in cases.items():
            kind, detail = _port_case(ref_chat, port, ref, template, messages, add_ass, tool_list)
            counts[kind] += 1
            if kind == "differ":
                differ.append(f"{vocab} {template} [{name}]: {detail}")
    assert dict(counts) == EXPECTED_PORT, "\n".join(differ)


def test_the_pins_expected_renderings():
    """tests/test-chat-template.cpp's 36 cases (tests/data/chat-golden.json): no library needed."""
    import json

    from harness.chat import builtin
    golden = json.loads((Path(__file__).parent / "data" / "chat-golden.json").read_text(encoding="utf-8"))
    wrong = [case["name"] for case in golden["cases"]
             if builtin.apply(case["template_str"], golden["conversation"] + case["extra_conversation"], True)
             != case["expected_output"]]
    assert len(golden["cases"]) == 36 and wrong == []
