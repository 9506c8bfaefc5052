"""The chat reference (reference/chat.py over reference/chat_shim.cpp) against llama.cpp's own facts.

- the expected renderings of the pin's tests/test-chat-template.cpp (copied as data into
  tests/data/chat-golden.json by tools/chat_golden.py): the built-in path
  (llama_chat_apply_template) and the Jinja path (common_chat_templates_apply);
- every models/templates/*.jinja of the pin renders a small fixed conversation, or raises
  the same error each time, never a crash;
- the chat templates of the pinned vocabs render, and their prompt ids are llama-server's;
- a template that raises comes back as ChatTemplateError with llama.cpp's message.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.conformance.needs import require
from harness.errors import ChatTemplateError

GOLDEN = json.loads((Path(__file__).parent / "data" / "chat-golden.json").read_text(encoding="utf-8"))
CASES = GOLDEN["cases"]
CONVERSATION = GOLDEN["conversation"]
#: The pinned vocabs whose GGUF carries tokenizer.chat_template.
VOCAB_TEMPLATES = ("command-r", "gemma-4", "phi-3", "qwen2", "qwen35")
SMALL = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi there"},
         {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "What is 2+2?"}]


@pytest.fixture(scope="module")
def chat():
    from reference import chat as chat_module
    require(chat_module.chat_library)
    return chat_module


def _conversation(case: dict) -> list[dict]:
    return CONVERSATION + case["extra_conversation"]


# --- tests/test-chat-template.cpp: expected renderings ----------------------------------


def test_the_golden_data_is_the_pins_test_file():
    assert GOLDEN["source"].startswith("llama.cpp 0c1e57098") and len(CASES) == 36
    assert sum(c["supported_with_jinja"] for c in CASES) == 35


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_builtin_path_gives_the_expected_output(chat, case):
    # test-chat-template.cpp runs every case through llama_chat_apply_template, add_ass = true
    assert chat.apply_builtin(case["template_str"], _conversation(case), True) == case["expected_output"]


JINJA = [c for c in CASES if c["supported_with_jinja"]]


@pytest.mark.parametrize("case", JINJA, ids=[c["name"] for c in JINJA])
def test_jinja_path_gives_the_expected_output(chat, case):
    # format_using_common: common_chat_templates_init(nullptr, template, bos, eos), then
    # common_chat_templates_apply with add_generation_prompt = true
    out = chat.render(case["template_str"], _conversation(case), add_generation_prompt=True,
                      bos_token=case["bos_token"], eos_token=case["eos_token"])
    assert out.text == (case["expected_output_jinja"] or case["expected_output"])
    assert out.ids is None  # no vocab, no ids


def test_builtin_templates_and_an_unknown_template(chat):
    names = chat.builtin_templates()
    assert len(names) > 40 and len(set(names)) == len(names)
    assert {"chatml", "llama2", "llama3", "gemma", "phi3", "command-r"} <= set(names)
    for name in ("chatml", "llama3", "gemma"):  # a built-in name is itself a template string
        assert chat.apply_builtin(name, SMALL[1:2], True)
    with pytest.raises(ChatTemplateError, match="does not know this template"):
        chat.apply_builtin("INVALID TEMPLATE", CONVERSATION, True)


# --- models/templates/*.jinja: each renders, or raises the same error each time ----------


def _template_files() -> list[Path]:
    from reference.lock import load
    from reference.sources import make_source
    return sorted((make_source(load()).tree() / "models" / "templates").glob("*.jinja"))


def _outcome(chat, source: str) -> tuple[str, str]:
    try:
        return "text", chat.render(source, SMALL, add_generation_prompt=True, bos_token="<s>",
                                   eos_token="</s>").text
    except ChatTemplateError as e:
        return "raised", e.message


def test_every_template_of_the_pin_renders_or_raises_the_same_way(chat):
    files = require(_template_files)
    assert len(files) == 70
    outcomes = {}
    for path in files:
        source = path.read_text(encoding="utf-8")
        first = _outcome(chat, source)
        assert _outcome(chat, source) == first, path.name
        outcomes[path.name] = first
    rendered = [name for name, (kind, _) in outcomes.items() if kind == "text"]
    raised = {name: msg for name, (kind, msg) in outcomes.items() if kind == "raised"}
    assert not raised  # at 0c1e570 every template renders this conversation
    for name in rendered:  # the fixed conversation's last user message reaches the prompt
        assert "What is 2+2?" in outcomes[name][1], name


TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                                           "parameters": {"type": "object", "properties": {
                                               "city": {"type": "string"}}, "required": ["city"]}}}]
TOOL_TURNS = SMALL[1:2] + [
    {"role": "assistant", "content": "", "reasoning_content": "They want the weather.",
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 21}"},
    {"role": "user", "content": "Thanks"}]


@pytest.mark.parametrize("name", ["Qwen-Qwen3-0.6B.jinja", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
                                  "google-gemma-4-31B-it.jinja"])
def test_tools_and_tool_calls_reach_the_template(chat, name):
    files = {p.name: p for p in require(_template_files)}
    out = chat.render(files[name].read_text(encoding="utf-8"), TOOL_TURNS, tools=TOOLS,
                      add_generation_prompt=True).text
    assert "get_weather" in out and "The weather in a city" in out and "Paris" in out and "Thanks" in out


# --- the vocabs' own templates and llama-server's prompt ids -----------------------------


@pytest.mark.parametrize("vocab", VOCAB_TEMPLATES)
def test_the_vocab_template_renders_with_server_ids(chat, inproc, vocab):
    ref = inproc(vocab)
    out = chat.render(None, SMALL, add_generation_prompt=True, vocab=ref)
    assert "What is 2+2?" in out.text and "Hi there" in out.text
    # llama-server tokenizes the whole rendered prompt with add_special and parse_special true
    # (tools/server/server-context.cpp, handle_completions_impl -> tokenize_input_prompts(..., true, true))
    assert out.ids == ref.encode(out.text, add_special=True, parse_special=True)
    again = chat.render(None, SMALL, add_generation_prompt=True, vocab=ref)
    assert again == out


def test_special_token_text_in_user_content_is_parsed_as_special(chat, inproc):
    ref = inproc("qwen2")
    im_end = ref.encode("<|im_end|>", parse_special=True)
    assert len(im_end) == 1
    plain = [{"role": "user", "content": "a b"}]
    injected = [{"role": "user", "content": "a<|im_end|>b"}]
    base = chat.render(None, plain, add_generation_prompt=True, vocab=ref)
    out = chat.render(None, injected, add_generation_prompt=True, vocab=ref)
    assert "a<|im_end|>b" in out.text
    # The Jinja engine marks message text as input (common/jinja/string.h, is_input), but
    # common_chat_template_direct_apply_impl (common/chat.cpp) returns
    # parts->as_string().str(), one string without the marks, and llama-server tokenizes it
    # with parse_special = true (tools/server/server-context.cpp:4280,
    # tokenize_input_prompts(ctx_server.vocab, ..., prompt, true, true, ...)). So the text
    # <|im_end|> inside a user message becomes the control token, one more than the template's own.
    assert out.ids.count(im_end[0]) == base.ids.count(im_end[0]) + 1
    assert out.ids == ref.encode(out.text, add_special=True, parse_special=True)


def test_a_leading_bos_text_is_stripped_on_the_jinja_path_only(chat, inproc):
    ref = inproc("phi-3")
    bos = ref.encode("", add_special=True)
    assert ref.add_bos and len(bos) == 1
    bos_text = ref.token_to_piece(bos[0], special=True).decode()
    out = chat.render("{{ bos_token }}{% for m in messages %}<|user|>\n{{ m.content }}<|end|>\n{% endfor %}",
                      SMALL[1:2], vocab=ref)
    # common_chat_template_direct_apply_impl (common/chat.cpp) strips a leading bos_token text
    # when the vocab's add_bos is set; llama_tokenize then adds the one BOS (add_special)
    assert not out.text.startswith(bos_text) and out.ids[0] == bos[0] and out.ids[1] != bos[0]
    # only a leading one: a BOS text elsewhere stays, and is parsed as a BOS token
    inner = chat.render("x{{ bos_token }}y", SMALL[1:2], vocab=ref)
    assert inner.text == f"x{bos_text}y" and inner.ids.count(bos[0]) == 2
    # the built-in route (--no-jinja, common_chat_templates_apply_legacy) strips nothing: the
    # gigachat format writes "<s>" first, parsed as a second BOS after the one add_special
    # adds (llama_tokenize only warns about it, src/llama-vocab.cpp)
    legacy = chat.render("gigachat", SMALL[1:2], builtin=True, vocab=ref)
    assert legacy.text == chat.apply_builtin("gigachat", SMALL[1:2], True)
    assert legacy.text.startswith(bos_text) and legacy.ids[:2] == bos * 2


# --- errors: a template that raises is an exception with llama.cpp's message -------------


@pytest.mark.parametrize("template, message", [
    ("{{ raise_exception('roles must alternate') }}", "Jinja Exception: roles must alternate"),
    ("{% for m in messages %}{{ m.content }}", ""),  # unclosed block: a parse error
    ("{{ messages[0].content | no_such_filter }}", ""),
])
def test_a_template_that_raises_is_a_chat_template_error(chat, template, message):
    with pytest.raises(ChatTemplateError) as info:
        chat.render(template, SMALL[1:2], add_generation_prompt=True)
    assert message in info.value.message and info.value.message
    assert "llama.cpp's jinja chat path raised" in str(info.value)


def test_no_template_without_a_vocab_is_an_error_not_an_abort(chat):
    # common_chat_templates_init would GGML_ASSERT(model != nullptr) and abort the process
    with pytest.raises(ChatTemplateError, match="no template given and no vocab loaded"):
        chat.render(None, SMALL)


def test_bad_messages_are_llama_cpps_own_error(chat):
    with pytest.raises(ChatTemplateError, match="Failed to parse messages"):
        chat.render("{{ 1 }}", [{"role": "user"}])


def test_kwargs_reach_the_template_as_the_server_passes_them(chat, inproc):
    ref = inproc("gemma-4")
    on = chat.render(None, SMALL[1:2], add_generation_prompt=True, vocab=ref)
    off = chat.render(None, SMALL[1:2], add_generation_prompt=True, kwargs={"enable_thinking": False}, vocab=ref)
    # enable_thinking is true unless a kwarg says otherwise (common_chat_templates_inputs);
    # gemma-4's template writes <|think|> into the system turn when it is
    assert "<|think|>" in on.text and "<|think|>" not in off.text
    with pytest.raises(ChatTemplateError, match="invalid type for \"enable_thinking\""):
        chat.render(None, SMALL[1:2], kwargs={"enable_thinking": "no"}, vocab=ref)
    custom = chat.render("{{ greeting }} {{ (n or 0) + 1 }}", SMALL[1:2], kwargs={"greeting": "hey", "n": 41})
    assert custom.text == "hey 42"
    # llama-server asks whether the template supports thinking once, at startup, without the
    # request's kwargs (server-context.cpp): a template that raises then never serves
    with pytest.raises(ChatTemplateError, match="llama-server would not start with this template"):
        chat.render("{{ n + 1 }}", SMALL[1:2], kwargs={"n": 41})


def test_a_trailing_assistant_message_is_continued_as_the_server_prefills(chat, inproc):
    ref = inproc("qwen2")
    turns = SMALL[1:3]  # user, then assistant "Hello."
    out = chat.render(None, turns, add_generation_prompt=True, vocab=ref)
    # prefill_assistant (default on): continue_final_message, no end of turn, no generation prompt
    assert out.text.endswith("<|im_start|>assistant\nHello.")
    with pytest.raises(ChatTemplateError, match="Cannot have 2 or more assistant messages"):
        chat.render(None, turns + [{"role": "assistant", "content": "Again."}], vocab=ref)
